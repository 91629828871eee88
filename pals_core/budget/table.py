"""Every method × location at one budget (or one size): the rows of ``pals-budget``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..families.shapes import conditions_for_model
from ..methods.registry import METHODS, get_method
from ..pricing.activations import Conditions
from ..pricing.config import AdapterConfig, design_label
from ..pricing.shape import BaseModel
from .costs import Cost, Design, design
from .machine import Machine, constrain
from .solver import Budget, at_size, solve
from .tasks import Task

WITHIN_LOCATIONS = ("all", "top", "bottom")


def designs_for(methods: Iterable[str] | None = None, location=None) -> list[tuple[str, object]]:
    """(method, location) pairs: each within-network method at all/top/bottom (or at ``location``),
    each top or sizeless-global method once."""
    pairs = []
    for name in methods if methods is not None else METHODS:
        m = get_method(name)
        if m.within:
            for loc in [location] if location is not None else WITHIN_LOCATIONS:
                pairs.append((name, loc))
        else:
            if location is not None and location != "all":
                raise ValueError(f"method {name!r} takes no location")
            pairs.append((name, None))
    return pairs


class Rows(list):
    """The cost rows of a table (a ``list[Cost]``), and ``refused``: (design label, reason) for each design this
    model cannot have — a location with no layer of a 1-layer model, a size or budget past ``limits``, a method
    that does not grow here. A design that cannot be built is named with its reason, never priced as if it fitted,
    and never takes the rest of the table down."""

    def __init__(self, costs: Iterable[Cost] = (), refused: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(costs)
        self.refused: list[tuple[str, str]] = list(refused)


_DESIGNS: dict = {}  # (model, tasks, config, convention, n, checked) -> Design: a design does not depend on the budget


def _design(
    model: BaseModel,
    tasks: Sequence[Task],
    cfg: AdapterConfig,
    convention: str,
    seq_len: int | None,
    check_size: bool,
) -> Design:
    """``design(...)``, remembered: asking the same question at another budget re-uses every resolved design."""
    key = (model, tuple(tasks), repr(cfg), convention, seq_len, check_size)
    ds = _DESIGNS.get(key)
    if ds is None:
        if len(_DESIGNS) >= 4096:
            _DESIGNS.clear()
        ds = _DESIGNS[key] = design(model, tasks, cfg, convention=convention, seq_len=seq_len, check_size=check_size)
    return ds


def rows(
    model: BaseModel,
    tasks: Sequence[Task],
    *,
    budget: Budget | None = None,
    methods: Iterable[str] | None = None,
    location=None,
    d_s: int | None = None,
    adapter: AdapterConfig | None = None,
    seq_len: int | None = None,
    convention: str = "exact",
    machine: Machine | None = None,
    model_conditions: Conditions | None = None,
    **adapter_fields,
) -> Rows:
    """Cost rows for every design; solved within ``budget``, or evaluated at ``d_s`` if given.

    With a ``machine`` (``budget.machine.Machine``) each row also holds its training and serving memory and its step
    time on that machine, and the solver keeps d_s within the machine's memory and step-time budgets too
    (``model_conditions``: the model's dropout and attention implementation; when None, a preset's — its family's
    defaults — else BERT's).

    ``adapter`` (or ``AdapterConfig`` fields as keywords, e.g. ``heads=6``) holds the design settings every row
    shares; each row replaces its method, location and size. Sizeless methods need neither a budget nor a size.
    A design this model cannot have goes to ``.refused`` with its reason (see ``Rows``)."""
    template = replace(adapter if adapter is not None else AdapterConfig(), **adapter_fields)
    pairs = designs_for(methods, location)
    if budget is None and d_s is None:
        sized = [name for name, _ in pairs if get_method(name).sized]
        if sized:
            raise ValueError(
                f"give a budget (ratio, extra or per-task) or an adapter size d_s for {', '.join(dict.fromkeys(sized))}"
            )
    out = Rows()
    profile = None
    if machine is not None:
        profile = machine.profile()  # read once for every row
        if model_conditions is None:
            model_conditions = conditions_for_model(model.name)
    for name, loc in pairs:
        method = get_method(name)
        size = d_s if method.sized else None
        cfg = replace(template, method=name, d_s=size, location=loc)
        solved = size is None and method.sized
        try:
            ds = _design(model, tasks, cfg, convention, seq_len, not solved)
            cost = solve(ds, budget) if solved else at_size(ds, size, budget)
            if machine is not None:
                cost = constrain(cost, ds, machine, model_conditions, solved=solved, profile=profile)
            out.append(cost)
        except ValueError as e:
            out.refused.append((design_label(name, loc if method.within else None), str(e)))
    return out


def sort_rows(costs: list[Cost]) -> list[Cost]:
    """Feasible designs first, cheapest FLOP overhead first, then the most parameters used (a ``Rows`` keeps its
    ``refused``)."""
    ordered = sorted(costs, key=lambda c: (not c.feasible, c.flops_per_seq, -c.params_task_specific))
    return Rows(ordered, costs.refused) if isinstance(costs, Rows) else ordered
