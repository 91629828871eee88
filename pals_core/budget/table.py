"""Every method × location at one budget (or one size): the rows of ``pals-budget``."""
from __future__ import annotations

from typing import Iterable, Optional, Sequence

from .config import AdapterConfig
from .costs import DEFAULT_SEQ_LEN, Cost, design
from .methods import METHODS, get_method
from .models import BaseModel
from .solver import Budget, at_size, solve
from .tasks import Task

WITHIN_LOCATIONS = ("all", "top", "bottom")


def designs_for(methods: Optional[Iterable[str]] = None, location=None) -> list[tuple[str, object]]:
    """(method, location) pairs: each within-network method at all/top/bottom (or at ``location``),
    each top or sizeless-global method once."""
    pairs = []
    for name in (methods if methods is not None else METHODS):
        m = get_method(name)
        if m.within:
            for loc in ([location] if location is not None else WITHIN_LOCATIONS):
                pairs.append((name, loc))
        else:
            if location is not None and location != "all":
                raise ValueError(f"method {name!r} takes no location")
            pairs.append((name, None))
    return pairs


def rows(model: BaseModel, tasks: Sequence[Task], *, budget: Optional[Budget] = None, methods: Optional[Iterable[str]] = None,
         location=None, d_s: Optional[int] = None, heads: int = 12, seq_len: int = DEFAULT_SEQ_LEN,
         convention: str = "exact", per_task_pooler: bool = False, n_top: int = 6, ffn_ratio: int = 2) -> list[Cost]:
    """Cost rows for every design; solved within ``budget``, or evaluated at ``d_s`` if given."""
    if budget is None and d_s is None:
        raise ValueError("give a budget (ratio, extra or per-task) or an adapter size d_s")
    out = []
    for name, loc in designs_for(methods, location):
        method = get_method(name)
        size = d_s if method.sized else None
        cfg = AdapterConfig(method=name, d_s=size, location=loc, heads=heads, n_top=n_top, ffn_ratio=ffn_ratio,
                            per_task_pooler=per_task_pooler)
        if size is None and method.sized:
            ds = design(model, tasks, cfg, convention=convention, seq_len=seq_len, check_size=False)
            out.append(solve(ds, budget))
        else:
            ds = design(model, tasks, cfg, convention=convention, seq_len=seq_len)
            out.append(at_size(ds, size, budget))
    return out


def sort_rows(costs: list[Cost]) -> list[Cost]:
    """Feasible designs first, cheapest FLOP overhead first, then the most parameters used."""
    return sorted(costs, key=lambda c: (not c.feasible, c.flops_per_seq, -c.params_task_specific))
