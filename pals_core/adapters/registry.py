"""Method name → torch builder (``ADAPTERS``), found from the one list ``pals_core.methods.PACKAGES``.

The calculator's registry (``pals_core.budget.METHODS``) says what a method costs; this one says how
to build it: each package's ``module.py`` declares its ``AdapterSpec`` builders in ``ADAPTERS``. A
method is usable in ``MultiTaskBert`` when it is in both. Importing this module imports every
``module.py`` (and so torch).
"""
from __future__ import annotations

from ..methods import collect
from .base import AdapterSpec


ADAPTERS: dict[str, AdapterSpec] = collect("module", "ADAPTERS", "built")


def get_adapter(name: str) -> AdapterSpec:
    try:
        return ADAPTERS[name]
    except KeyError:
        raise ValueError(f"method {name!r} has no torch modules yet (built: {', '.join(ADAPTERS)})") from None
