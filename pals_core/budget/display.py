"""How the calculator's numbers are written for people: one function per displayed quantity, one rounding each.

``pals-budget``'s table, the explorer's page (its answer, metrics, tables and hover texts) and the explorer's CSV
download all write a number through these, so the same design shows the same digits everywhere: a value is rounded
once, here, and a table that keeps it as a number holds the rounded value (``ratio``), which its column then
prints with the same number of decimals (``RATIO_DIGITS``) — never a value rounded to five places printed with four.

Each ``*_text`` function is the ``f``-string of its rounded value, so ``float(ratio_text(x)) == ratio(x)`` and
``ratio_text(ratio(x)) == ratio_text(x)``. Pure Python.
"""

from __future__ import annotations

import math

from ..pricing.units import human

RATIO_DIGITS = 4  # parameters and FLOPs × the base model's: 1.4989
STEP_DIGITS = 3  # a training step's time × the base model's: 1.252
GIB_DIGITS = 2  # memory in GiB: 1.26
SHARE_DIGITS = 1  # % of the budget spent, rounded down: 99.8
GIB = 2**30


def ratio_text(x: float) -> str:
    """A ratio to the base model (total parameters, forward FLOPs): '1.4989' (four decimals, rounded half-even on
    the binary value, as ``format`` does)."""
    return f"{x:.{RATIO_DIGITS}f}"


def ratio(x: float) -> float:
    """The ratio as displayed, as a number (for a table column printed with ``RATIO_DIGITS`` decimals)."""
    return float(ratio_text(x))


def overhead_text(x: float) -> str:
    """A FLOP ratio as the overhead it adds, from the displayed ratio: 1.0023 → '+0.23%' (never a digit the ratio
    does not show)."""
    return f"{100 * (ratio(x) - 1):+.{RATIO_DIGITS - 2}f}%"


def step_ratio_text(x: float) -> str:
    """A predicted training-step time over the base model's: '1.252'."""
    return f"{x:.{STEP_DIGITS}f}"


def step_ratio(x: float) -> float:
    return float(step_ratio_text(x))


def gib_text(n_bytes: float) -> str:
    """Bytes in GiB: '1.26'."""
    return f"{n_bytes / GIB:.{GIB_DIGITS}f}"


def gib(n_bytes: float) -> float:
    return float(gib_text(n_bytes))


def share(used: float) -> float:
    """The share of the budget a design spends (``series.budget_used``: 1.0 = all of it) in %, rounded DOWN to
    ``SHARE_DIGITS`` decimals: a design that fits never shows 100.0 % unless it spends it all (99.95 % is 99.9 %).
    ``inf`` (a budget that allows nothing) stays ``inf``."""
    if not math.isfinite(used):
        return used
    scale = 10**SHARE_DIGITS
    return math.floor(used * 100 * scale + 1e-9) / scale


def share_text(used: float) -> str:
    """'99.8%' (``share``); '∞%' for a budget that allows nothing."""
    value = share(used)
    return "∞%" if math.isinf(value) else f"{value:.{SHARE_DIGITS}f}%"


def count_text(n: float) -> str:
    """A parameter count with thousands separators: '2,267,906'."""
    return f"{int(round(n)):,}"


def trained_text(cost) -> str:
    """What a design trains, as the answer, the designs table, the train form and ``pals-budget`` write it:
    'trains 2.96M of 25.66M parameters, trunk frozen' (``Cost.params_trained`` of ``Cost.params_total``;
    ``Cost.trunk``: the method's default unless ``--freeze-trunk`` / ``--train-trunk`` said otherwise)."""
    return f"trains {trained_of_total(cost)} parameters, trunk {cost.trunk}"


def trained_of_total(cost) -> str:
    """'2.95M of 25.7M': the parameters a design trains of all it holds (``pals-budget``'s "trained" column)."""
    return f"{human(cost.params_trained)} of {human(cost.params_total)}"


def params_per_task(cost) -> int:
    """The parameters one task holds, as a per-task cap counts them (``Cost.largest_task_share``): the largest
    task's own head + adapter, plus its 1/T share of modules all tasks share (CA-MTL)."""
    if not cost.params_per_task:
        return int(cost.params_adapter_per_task)
    return int(round(cost.largest_task_share))
