"""Method name → torch builder (``ADAPTERS``), collected from every package of ``pals_core.methods.PACKAGES``.

The calculator's registry (``registry``: ``METHODS``) says what a method costs; this one says how to build it:
each package's ``module.py`` declares its ``AdapterSpec`` builders in ``ADAPTERS``. A method is usable in
``MultiTaskBert`` when it is in both. This module stands above the modules it collects; importing it imports
every ``module.py`` (and so torch).
"""

from __future__ import annotations

from ..adapters.base import AdapterSpec
from . import collect

ADAPTERS: dict[str, AdapterSpec] = collect("module", "ADAPTERS", "built")


def get_adapter(name: str) -> AdapterSpec:
    try:
        return ADAPTERS[name]
    except KeyError:
        raise ValueError(f"method {name!r} has no torch modules yet (built: {', '.join(ADAPTERS)})") from None


__all__ = ["ADAPTERS", "get_adapter"]
