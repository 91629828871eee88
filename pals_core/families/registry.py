"""The encoder families the calculator prices exactly, chosen by a config's ``model_type`` (pure Python, no torch).

Every folder of ``pals_core.families.PACKAGES`` gives its ``description`` module's ``Family`` record(s)
(``pals_core/pricing/family.py`` says what one holds) — never its torch ``trunk.py``. This module stands above the
descriptions it collects: ``FAMILIES`` (name → record), ``MODEL_TYPES`` (``model_type`` → record) and ``SUPPORTED``
are built once, at import. A ``model_type`` not listed is refused — never counted as BERT.
"""

from __future__ import annotations

from ..pricing.family import Family
from . import descriptions


def _families() -> dict[str, Family]:
    """Every folder's families, in ``PACKAGES`` order; a name given twice is an error."""
    families: dict[str, Family] = {}
    for f in descriptions():
        if f.name in families:
            raise ValueError(f"model family {f.name!r} is registered twice")
        families[f.name] = f
    return families


FAMILIES: dict[str, Family] = _families()
MODEL_TYPES: dict[str, Family] = {t: f for f in FAMILIES.values() for t in f.model_types}
SUPPORTED: str = ", ".join(MODEL_TYPES)


def get_family(name: str) -> Family:
    """The family of a ``BaseModel`` (its ``family`` field)."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown model family {name!r} (families: {', '.join(FAMILIES)})") from None


def get_family_for(model_type) -> Family:
    """The family a config's ``model_type`` names; ``ValueError`` naming the supported ones otherwise."""
    try:
        return MODEL_TYPES[model_type]
    except (KeyError, TypeError):
        raise ValueError(f"model_type {model_type!r} is not supported (supported: {SUPPORTED})") from None


def replay_of(m):
    """The family's ``Replay`` (``pals_core/families/<f>/description.py``); ``ValueError`` where the family has none."""
    replay = get_family(m.family).replay
    if replay is None:
        modelled = ", ".join(name for name, f in FAMILIES.items() if f.replay is not None)
        raise ValueError(f"memory and step time are modelled for {modelled} models, not {m.family!r}")
    return replay


__all__ = ["FAMILIES", "Family", "MODEL_TYPES", "SUPPORTED", "get_family", "get_family_for", "replay_of"]
