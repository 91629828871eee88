"""The calculator's name for the family registry (``pals_core.families.registry``, one floor below): ``FAMILIES``,
``MODEL_TYPES``, ``SUPPORTED``, ``get_family``, ``get_family_for`` and the ``Family`` record."""

from ...families.registry import FAMILIES, MODEL_TYPES, SUPPORTED, Family, get_family, get_family_for

__all__ = ["FAMILIES", "Family", "MODEL_TYPES", "SUPPORTED", "get_family", "get_family_for"]
