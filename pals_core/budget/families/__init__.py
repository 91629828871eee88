"""The encoder families the calculator prices exactly, chosen by a config's ``model_type`` (pure Python).

Each module holds one ``Family`` record (``base.py`` says what it holds); ``FAMILIES`` below is the one
place a family is registered, and its torch mirror lives in ``pals_core/trunks/<family>.py`` (registered
there by the same name). A ``model_type`` not listed here is refused — never counted as BERT.
"""
from __future__ import annotations

from .base import Family
from .bert import BERT, ROBERTA
from .deberta_v2 import DEBERTA_V2
from .distilbert import DISTILBERT
from .electra import ELECTRA
from .modernbert import MODERNBERT
from .mpnet import MPNET

FAMILIES: dict[str, Family] = {f.name: f for f in (BERT, ROBERTA, DISTILBERT, ELECTRA, DEBERTA_V2, MODERNBERT,
                                                        MPNET)}
MODEL_TYPES: dict[str, Family] = {t: f for f in FAMILIES.values() for t in f.model_types}
SUPPORTED = ", ".join(MODEL_TYPES)


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


__all__ = ["FAMILIES", "Family", "MODEL_TYPES", "SUPPORTED", "get_family", "get_family_for"]
