"""The torch half of each encoder family (``pals_core.budget.families`` is the pure-Python half): each family
folder's ``trunk.py`` (``pals_core/families/<f>/``), registered by the family's name on first use (``TRUNKS``).
``trunk_for(model)`` wraps a Hugging Face base model in its family's ``Trunk``; ``build_base(config)`` builds one
from a config (``AutoModel.from_config``). ``base.py`` holds the family-neutral ``Trunk``.
"""
from __future__ import annotations

import os
from typing import Optional, Union

import torch
from torch import nn

from ..budget.families import get_family_for
from .base import State, Trunk, make_mask

_TRUNKS: Optional[dict[str, type[Trunk]]] = None


def _trunks() -> dict[str, type[Trunk]]:
    """Family name → ``Trunk`` class, every folder's ``trunk.TRUNK(S)`` (read on first use: a folder's trunk imports
    this package's ``base``, so it cannot be read while this module is still being imported)."""
    global _TRUNKS
    if _TRUNKS is None:
        from ..families import trunks

        _TRUNKS = {t.family: t for t in trunks()}
    return _TRUNKS


def __getattr__(name: str):
    if name == "TRUNKS":
        return _trunks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def trunk_class(config) -> type[Trunk]:
    """The ``Trunk`` of a transformers config's ``model_type``; ``ValueError`` for an unsupported one."""
    family = get_family_for(getattr(config, "model_type", None))
    try:
        return _trunks()[family.name]
    except KeyError:
        raise ValueError(f"{family.title} is priced by the calculator but has no torch trunk yet "
                         f"(trunks: {', '.join(_trunks())})") from None


def build_base(config) -> nn.Module:
    """A randomly initialised base model of ``config`` — exactly what ``AutoModel.from_config`` builds, in float32
    whatever the config's ``dtype`` (a checkpoint's storage type): training is fp32 (docs/design.md §9), as the memory figures
    and ``from_pretrained`` (dtype float32) assume."""
    from transformers import AutoModel

    trunk_class(config)
    return AutoModel.from_config(config, dtype=torch.float32)


def load_base(path: Union[str, os.PathLike], config, **kwargs) -> nn.Module:
    """The base model of a local checkpoint folder (``AutoModel.from_pretrained``, no download)."""
    from transformers import AutoModel

    trunk_class(config)
    return AutoModel.from_pretrained(path, config=config, local_files_only=True, **kwargs)


def trunk_for(model: nn.Module) -> Trunk:
    return trunk_class(model.config)(model)


__all__ = ["State", "TRUNKS", "Trunk", "build_base", "load_base", "make_mask", "trunk_class", "trunk_for"]
