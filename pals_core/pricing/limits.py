"""The largest values the calculator prices, each named once (pure Python).

Beyond them a number is not a design but a typo or an attack on the page (a budget ratio of 10⁹ overflows a table
column; a config with 10⁵ layers takes minutes): inputs past a limit are refused with the limit in the message.

    MAX_RATIO     10,000 ×      a budget ratio B (N_total ≤ B·N_base)
    MAX_COUNT     10¹⁵          an absolute budget (extra, per-task cap) or a parameter count
    MAX_D_S       1,048,576     an adapter size d_s (2²⁰), given or solved
    MAX_LAYERS    1,024         L, a model's layers
    MAX_WIDTH     1,048,576     d, d_ff, vocabulary, positions (2²⁰)
"""

from __future__ import annotations

MAX_RATIO = 10_000.0
MAX_COUNT = 1e15
MAX_D_S = 2**20
MAX_LAYERS = 1024
MAX_WIDTH = 2**20


def check_at_most(what: str, value: float, limit: float) -> None:
    """``ValueError`` naming ``what`` and ``limit`` if ``value`` exceeds it."""
    if value > limit:
        shown = f"{limit:,.0f}" if float(limit).is_integer() and limit < 1e12 else f"{limit:.0e}"
        raise ValueError(f"{what} {value:,.6g} is above the largest the calculator prices ({shown})")
