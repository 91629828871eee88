"""Every adapter method the calculator prices (``METHODS``, name → ``Method``), collected from every package of
``pals_core.methods.PACKAGES`` (pure Python: no torch).

Each package's ``cost.py`` declares its ``Method`` records in ``METHODS`` (``pals_core/pricing/method.py`` says what
a record holds); the order of that list is the order of every table. This module stands above the ``cost.py`` files
it collects; the calculator (``pals_core.budget``) reads it from above.
"""

from __future__ import annotations

from ..flags import register_choices
from ..pricing.method import Method
from . import collect

METHODS: dict[str, Method] = collect("cost", "METHODS", "declared")
register_choices("method", lambda: list(METHODS))  # AdapterConfig's --method choices


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r} (methods: {', '.join(METHODS)})") from None


__all__ = ["METHODS", "get_method"]
