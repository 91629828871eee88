"""The torch side every method's module is built from: ``TaskAdapter`` and its hooks, ``BuildContext``,
``AdapterSpec`` and init helpers (``base``), the small multi-head attention in d_s (``attention``), and
the registry of builders (``registry``: ``ADAPTERS``, ``get_adapter``), found from
``pals_core.methods.PACKAGES``. The methods' modules live in ``pals_core/methods/<name>/module.py``;
``pals_core.model.MultiTaskBert`` wires them into a shared Hugging Face ``BertModel``.

``ADAPTERS`` and ``get_adapter`` are read from ``registry`` when first used: the registry imports every
method's module, and those import this package.
"""
from __future__ import annotations

from typing import Any

from .base import AdapterSpec, BuildContext, Mask, TaskAdapter

__all__ = ["ADAPTERS", "AdapterSpec", "BuildContext", "Mask", "TaskAdapter", "get_adapter"]


def __getattr__(name: str) -> Any:
    if name in ("ADAPTERS", "get_adapter"):
        from . import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'pals_core.adapters' has no attribute {name!r}")
