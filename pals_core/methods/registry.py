"""Every adapter method the calculator prices (``METHODS``, name → ``Method``), collected from every package of
``pals_core.methods.PACKAGES`` (pure Python: no torch).

Each package's ``cost.py`` declares its ``Method`` records in ``METHODS`` (``pals_core/pricing/method.py`` says what
a record holds); the order of that list is the order of every table. This module stands above the ``cost.py`` files
it collects; the calculator (``pals_core.budget``) reads it from above.
"""

from __future__ import annotations

from ..flags import register_choices, register_default_text
from ..pricing.method import Method
from . import collect

METHODS: dict[str, Method] = collect("cost", "METHODS", "declared")
register_choices("method", lambda: list(METHODS))  # AdapterConfig's --method choices


def _trunk_defaults() -> str:
    """``--freeze-trunk``'s default in words: each method's own (``Method.trunk``, its authors' way)."""
    by: dict[str, list[str]] = {}
    for m in METHODS.values():
        by.setdefault(m.trunk, []).append(m.name)
    return "the method's, as its authors train it: " + "; ".join(
        f"{trunk} for {', '.join(names)}" for trunk, names in by.items()
    )


register_default_text("trunk", _trunk_defaults)  # AdapterConfig's --freeze-trunk default in words


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r} (methods: {', '.join(METHODS)})") from None


__all__ = ["METHODS", "get_method"]
