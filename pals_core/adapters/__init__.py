"""Adapter modules, one small file per method family (SPEC section 4), wired into a shared
Hugging Face ``BertModel`` by ``pals_core.model.MultiTaskBert``.

Importing this package registers every built method in ``ADAPTERS`` (registry.py):
shared (heads only), pals, pals_unshared, low_rank, houlsby, lora, lhuc, proj_attn_top,
proj_ffn_top, bert_layer_top.
"""
from .base import Mask, TaskAdapter
from .registry import ADAPTERS, AdapterSpec, BuildContext, get_adapter, register_adapter

register_adapter("shared", lambda ctx: TaskAdapter(()))

from . import ca_mtl, houlsby, lhuc, lora, low_rank, pals, top  # noqa: E402,F401  (register their methods)

__all__ = ["ADAPTERS", "AdapterSpec", "BuildContext", "Mask", "TaskAdapter", "get_adapter", "register_adapter"]
