"""PALs Explorer core: calculator (``pals_core.budget``, pure Python), adapter modules, multi-task
model and trainer (torch). Torch is imported only when a torch-side name is first used, so
``import pals_core.budget`` stays instant."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .pricing.config import AdapterConfig

_LAZY = {
    "MultiTaskBert": "pals_core.model",
    "MultiTaskModel": "pals_core.model",
}

__all__ = ["AdapterConfig", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pals_core' has no attribute {name!r}")
