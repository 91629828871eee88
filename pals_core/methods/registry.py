"""Every adapter method the calculator prices (``METHODS``, name → ``Method``), collected from every package of
``pals_core.methods.PACKAGES`` (pure Python: no torch).

Each package's ``cost.py`` declares its ``Method`` records in ``METHODS`` (``pals_core/pricing/method.py`` says what
a record holds); the order of that list is the order of every table. This module stands above the ``cost.py`` files
it collects; the calculator (``pals_core.budget``) reads it from above.
"""

from __future__ import annotations

from ..flags import register_choices, register_default_text
from ..pricing.method import Method
from ..pricing.recipe import RECIPE_FIELDS, rate_text, setting
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


def _recipe_defaults(name: str) -> str:
    """A recipe setting's default in words (``--lr``, ``--warmup``, ``--weight-decay``): each method's own
    (``Method.recipe``, its authors' way), grouped by value."""
    by: dict[float, list[str]] = {}
    for m in METHODS.values():
        by.setdefault(setting(m.recipe, name)[0], []).append(m.name)
    text = rate_text if name == "lr" else (lambda v: f"{v:g}")  # rates as papers write them: 3e-4
    return "the method's own, as its authors train it: " + "; ".join(
        f"{text(value)} for {', '.join(names)}" for value, names in by.items()
    )


for _name in RECIPE_FIELDS:  # TrainConfig's --lr / --warmup / --weight-decay defaults in words
    register_default_text(f"recipe.{_name}", lambda name=_name: _recipe_defaults(name))


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r} (methods: {', '.join(METHODS)})") from None


__all__ = ["METHODS", "get_method"]
