"""The encoder families the calculator prices exactly, chosen by a config's ``model_type`` (pure Python).

Each family lives as one folder, ``pals_core/families/<f>/``, registered by one line in
``pals_core.families.PACKAGES``; this registry reads each folder's ``description`` module only (its ``Family``
record, ``base.py`` says what one holds) — never its torch ``trunk.py``. A ``model_type`` not listed is refused —
never counted as BERT.

``FAMILIES``, ``MODEL_TYPES`` and ``SUPPORTED`` are built on first use (a family's description imports ``base``
from this package, so the folders cannot be read while this module is still being imported).
"""
from __future__ import annotations

from typing import Optional

from .base import Family

_REGISTRY: Optional[tuple[dict[str, Family], dict[str, Family], str]] = None


def _registry() -> tuple[dict[str, Family], dict[str, Family], str]:
    """(FAMILIES, MODEL_TYPES, SUPPORTED): every folder's families (``pals_core.families``), in ``PACKAGES`` order."""
    global _REGISTRY
    if _REGISTRY is None:
        from ...families import descriptions

        families: dict[str, Family] = {}
        for f in descriptions():
            if f.name in families:
                raise ValueError(f"model family {f.name!r} is registered twice")
            families[f.name] = f
        types = {t: f for f in families.values() for t in f.model_types}
        _REGISTRY = (families, types, ", ".join(types))
    return _REGISTRY


def __getattr__(name: str):
    if name in ("FAMILIES", "MODEL_TYPES", "SUPPORTED"):
        return _registry()[("FAMILIES", "MODEL_TYPES", "SUPPORTED").index(name)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_family(name: str) -> Family:
    """The family of a ``BaseModel`` (its ``family`` field)."""
    families = _registry()[0]
    try:
        return families[name]
    except KeyError:
        raise ValueError(f"unknown model family {name!r} (families: {', '.join(families)})") from None


def get_family_for(model_type) -> Family:
    """The family a config's ``model_type`` names; ``ValueError`` naming the supported ones otherwise."""
    _, types, supported = _registry()
    try:
        return types[model_type]
    except (KeyError, TypeError):
        raise ValueError(f"model_type {model_type!r} is not supported (supported: {supported})") from None


__all__ = ["FAMILIES", "Family", "MODEL_TYPES", "SUPPORTED", "get_family", "get_family_for"]
