"""How a method's authors train it (the ``Recipe`` of a ``Method``): the trainer settings their source sets, with the
source. Pure Python.

A recipe is part of the design: a user who changes nothing trains a method as its authors did. ``pals-train``'s
``--lr``, ``--warmup`` and ``--weight-decay`` default to the run's method's own (``TrainConfig`` resolves them once,
as ``resolve_trunk`` resolves the trunk); a setting the method's source leaves open is BERT's fine-tuning recipe
(``BERT_FINE_TUNING``), the trainer's own, as Stickland & Murray (2019, Sec. 4) train PALs and every baseline.
Each method's ``cost.py`` declares its recipe beside its trunk and cites where the numbers come from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RECIPE_FIELDS = ("lr", "warmup", "weight_decay")
"""The ``TrainConfig`` settings a recipe may set: peak learning rate, linear warm-up (a fraction of the steps) and
AdamW weight decay."""


@dataclass(frozen=True)
class Recipe:
    """The settings a method's source trains it with; ``None`` where the source leaves one to the trainer (BERT's)."""

    lr: float | None
    source: str  # where the numbers come from: paper (section / table), released code
    warmup: float | None = None
    weight_decay: float | None = None

    def __post_init__(self) -> None:
        for name in RECIPE_FIELDS:
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
                raise ValueError(f"recipe {name} must be a finite number or None, got {v!r}")
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError("a recipe names its source")


BERT_FINE_TUNING = Recipe(
    lr=2e-5,
    warmup=0.1,
    weight_decay=0.01,
    source="BERT's fine-tuning recipe as Stickland & Murray 2019 (Sec. 4) train PALs and every baseline: AdamW lr "
    "2e-5, 10 % linear warm-up then linear decay, weight decay 0.01 (Devlin et al. 2019)",
)
"""The trainer's own recipe: whole-model fine-tuning at BERT's rate (the PALs paper's), and every setting a
method's source leaves open."""


def setting(recipe: Recipe, name: str) -> tuple[float, Recipe]:
    """(the value of setting ``name`` in ``recipe``, the recipe it comes from): ``BERT_FINE_TUNING`` where ``recipe``
    leaves it open."""
    value = getattr(recipe, name)
    return (value, recipe) if value is not None else (getattr(BERT_FINE_TUNING, name), BERT_FINE_TUNING)


def rate_text(lr: float) -> str:
    """A learning rate as papers write it: '5e-4', '2e-5', '3e-3' (one significant digit where that is exact, else
    ``g``: '1.5e-4')."""
    mantissa, _, exponent = f"{lr:.0e}".partition("e")
    if float(f"{mantissa}e{exponent}") != lr:
        return f"{lr:g}"
    return f"{mantissa}e{int(exponent)}"


def given_over(saved: dict, given: dict) -> dict:
    """A saved run configuration (``TrainConfig.as_dict``) with the settings ``given`` by flags laid over it: a recipe
    setting given anew comes from its flag, so the saved one's source (``lr_source``, …) is dropped with it."""
    out = {**saved, **given}
    for name in RECIPE_FIELDS:
        if name in given and f"{name}_source" not in given:
            out.pop(f"{name}_source", None)
    return out
