"""Encoder families, one folder each: ``pals_core/families/<f>/`` holds one family whole (or two that share a
layer: BERT and RoBERTa), registered by one line in ``PACKAGES`` below (docs/design.md "Recipe: add a family").

A family folder holds three modules:

    description.py   pure Python (imports only ``pals_core.pricing`` and other folders' descriptions):
                     ``FAMILY`` (or ``FAMILIES``), its ``pals_core.pricing.family.Family`` record — counts,
                     FLOPs, the forward replayed on symbolic tensors, the config reader, refusals
    trunk.py         torch: ``TRUNK`` (or ``TRUNKS``), its ``pals_core.trunks.base.Trunk`` subclass
    presets.py       data only: ``CONFIGS`` (preset name → the published config.json's shape fields) and ``ALIASES``

The three collectors, which stand above the folders they read, load them by name from ``PACKAGES``: the
calculator's (``registry``: ``FAMILIES``, ``get_family_for``) only ``description`` — so pricing never imports torch —
the torch side (``trunks``: ``TRUNKS``, ``trunk_for``) ``trunk``, the presets (``models``: ``PRESETS``,
``load_model``) ``presets``. This module imports nothing of the project itself (its loaders import the folders by
name when called); the shared machinery stands a floor below the folders (``pals_core/pricing/family.py``: the
``Family`` record, ``Replay``, config-field readers; ``pals_core/trunks/base.py``: ``Trunk``, ``State``,
``DenseHead``).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

PACKAGES: tuple[str, ...] = (  # the order of the presets, of ``FAMILIES`` and of "supported: …" in refusals
    "bert",  # BERT (MiniLM) and RoBERTa / XLM-R / CamemBERT
    "distilbert",  # DistilBERT
    "electra",  # ELECTRA discriminators: factorised E → d embeddings
    "deberta_v2",  # DeBERTa-v2 / v3: disentangled relative attention
    "modernbert",  # ModernBERT: pre-norm, RoPE, local/global attention, GLU
    "mpnet",  # MPNet: BERT's layer + a relative position bias
    "albert",  # ALBERT: factorised embeddings, one layer shared by all L
)


def _each(module: str, plural: str, single: str) -> list[Any]:
    """Every package's ``module.plural`` (a tuple) or ``module.single``, flattened, in ``PACKAGES`` order."""
    out: list[Any] = []
    for package in PACKAGES:
        loaded = import_module(f"{__name__}.{package}.{module}")
        out.extend(getattr(loaded, plural, None) or (getattr(loaded, single),))
    return out


def descriptions() -> list:
    """Every folder's pure-Python ``Family`` records (``description.FAMILIES`` or ``FAMILY``); no torch."""
    return _each("description", "FAMILIES", "FAMILY")


def trunk_classes() -> list:
    """Every folder's torch ``Trunk`` classes (``trunk.TRUNKS`` or ``TRUNK``); imports torch."""
    return _each("trunk", "TRUNKS", "TRUNK")


def preset_configs() -> tuple[dict[str, dict], dict[str, str]]:
    """(preset name → stored config fields, alias → preset name) of every folder (``presets``); no imports."""
    configs: dict[str, dict] = {}
    aliases: dict[str, str] = {}
    for package in PACKAGES:
        module = import_module(f"{__name__}.{package}.presets")
        configs.update(module.CONFIGS)
        aliases.update(getattr(module, "ALIASES", {}))
    return configs, aliases


__all__ = ["PACKAGES", "descriptions", "preset_configs", "trunk_classes"]
