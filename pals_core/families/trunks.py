"""The torch half of each encoder family, collected (``pals_core.families.registry`` is the pure-Python half):
each family folder's ``trunk.py`` (``pals_core/families/<f>/``), by the family's name (``TRUNKS``).
``trunk_for(model)`` wraps a Hugging Face base model in its family's ``Trunk``; ``build_base(config)`` builds one
from a config (``AutoModel.from_config``). The family-neutral ``Trunk`` machinery is ``pals_core.trunks``, a floor
below the folders' trunks that use it. Importing this module imports torch.
"""

from __future__ import annotations

import os

import torch
from torch import nn

from ..trunks.base import Trunk
from . import trunk_classes
from .registry import get_family_for

TRUNKS: dict[str, type[Trunk]] = {t.family: t for t in trunk_classes()}


def trunk_class(config) -> type[Trunk]:
    """The ``Trunk`` of a transformers config's ``model_type``; ``ValueError`` for an unsupported one."""
    family = get_family_for(getattr(config, "model_type", None))
    try:
        return TRUNKS[family.name]
    except KeyError:
        raise ValueError(
            f"{family.title} is priced by the calculator but has no torch trunk yet (trunks: {', '.join(TRUNKS)})"
        ) from None


def build_base(config) -> nn.Module:
    """A randomly initialised base model of ``config`` — exactly what ``AutoModel.from_config`` builds, in float32
    whatever the config's ``dtype`` (a checkpoint's storage type): training is fp32 (docs/design.md "Memory (bytes)"),
    as the memory figures and ``from_pretrained`` (dtype float32) assume."""
    from transformers import AutoModel

    trunk_class(config)
    return AutoModel.from_config(config, dtype=torch.float32)


def load_base(path: str | os.PathLike, config, **kwargs) -> nn.Module:
    """The base model of a local checkpoint folder (``AutoModel.from_pretrained``, no download)."""
    from transformers import AutoModel

    trunk_class(config)
    return AutoModel.from_pretrained(path, config=config, local_files_only=True, **kwargs)


def trunk_for(model: nn.Module) -> Trunk:
    return trunk_class(model.config)(model)


__all__ = ["TRUNKS", "build_base", "load_base", "trunk_class", "trunk_for"]
