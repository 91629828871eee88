"""Method name → torch builder (``ADAPTERS``), found from the one list ``pals_core.methods.PACKAGES``.

The calculator's registry (``pals_core.budget.METHODS``) says what a method costs; this one says how
to build it: each package's ``module.py`` declares its ``AdapterSpec`` builders in ``ADAPTERS``. A
method is usable in ``MultiTaskBert`` when it is in both. Importing this module imports every
``module.py`` (and so torch).
"""
from __future__ import annotations

from importlib import import_module

from ..methods import PACKAGES
from .base import AdapterSpec


def _load() -> dict[str, AdapterSpec]:
    found: dict[str, AdapterSpec] = {}
    for package in PACKAGES:
        for spec in import_module(f"pals_core.methods.{package}.module").ADAPTERS:
            if spec.name in found:
                raise ValueError(f"method {spec.name!r} is built twice (pals_core/methods/{package}/module.py)")
            found[spec.name] = spec
    return found


ADAPTERS: dict[str, AdapterSpec] = _load()


def get_adapter(name: str) -> AdapterSpec:
    try:
        return ADAPTERS[name]
    except KeyError:
        raise ValueError(f"method {name!r} has no torch modules yet (built: {', '.join(ADAPTERS)})") from None
