"""The calculator calls the page makes, given validated ``Inputs``. No formulas of its own: every
number is read from ``pals_core.budget`` (rows, design, breakdown, series). Pure Python; the page
wraps these functions in ``st.cache_data``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pals_core.budget.costs import Cost, Design, breakdown, design
from pals_core.budget.recommend import Key, key_of, step_slowdowns
from pals_core.budget.series import (
    ScalingPoint,
    SizePoint,
    per_task_limit,
    per_task_params,
    per_task_view,
    size_curve,
    sizes_up_to,
    task_scaling,
)
from pals_core.budget.solver import at_size, solve
from pals_core.budget.table import Rows, rows, sort_rows
from pals_core.budget.tasks import Task
from pals_core.methods.registry import get_method
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.shape import BaseModel

from .inputs import Inputs


def table(inp: Inputs, machine=None) -> list[Cost]:
    """Every chosen method × location at the budget (or at the fixed d_s), feasible first.

    Within-network methods go to ``inp.location`` (or all, top and bottom); the others take none. With the
    question's machine bounds (``Inputs.bounds``) the rows are solved on ``machine`` (the page's: device, batch,
    precision; None = the default) within them too, as ``pals-budget`` solves them (``Cost.binding`` names the
    constraint that sets d_s)."""
    within = [m for m in inp.methods if get_method(m).within]
    others = [m for m in inp.methods if not get_method(m).within]
    bound = inp.machine(machine)
    common = dict(
        budget=inp.budget,
        heads=inp.heads,
        seq_len=inp.seq_len,
        convention=inp.convention,
        per_task_pooler=inp.per_task_pooler,
        n_top=inp.n_top,
        ffn_ratio=inp.ffn_ratio,
        **({"machine": bound, "model_conditions": inp.conditions} if bound is not None else {}),
    )
    out = Rows()
    for methods, location in ((within, inp.location), (others, None)):
        if methods:
            part = rows(inp.model, inp.tasks, methods=methods, location=location, d_s=inp.d_s, **common)
            if not part and part.refused:  # the question itself cannot be answered (a layer out of range, …)
                label, reason = part.refused[0]
                raise ValueError(reason if len({r for _, r in part.refused}) == 1 else f"{label}: {reason}")
            out += part
            out.refused += part.refused  # designs this model cannot have, each with its reason (shown on the page)
    return sort_rows(out)


def slowdowns(inp: Inputs, costs: Sequence[Cost], machine=None) -> dict[Key, float]:
    """The calculator's predicted training-step time ratio (``budget.machine.time_ratio`` on ``machine``, the page's
    one machine: ``machine_view.page_machine``; None = the default machine) of each row, under the question's model
    conditions, where the time model covers the model."""
    return step_slowdowns(lambda key: design_of(inp, key), machine, inp.conditions)(costs)


def config_for(inp: Inputs, key: Key, d_s: int | None = None, freeze_trunk: bool | None = None) -> AdapterConfig:
    """The design of a table row (``freeze_trunk`` None: its method's own, ``Method.trunk``)."""
    method, location = key
    return AdapterConfig(
        freeze_trunk=freeze_trunk,
        method=method,
        d_s=d_s if get_method(method).sized else None,
        location=location,
        heads=inp.heads,
        n_top=inp.n_top,
        ffn_ratio=inp.ffn_ratio,
        per_task_pooler=inp.per_task_pooler,
    )


def question_design(inp: Inputs) -> dict:
    """The question's design settings (``AdapterConfig.as_dict()``; method, location, size and trunk are each row's):
    what a measured score or a fitted curve must have been trained with to stand for a row of this page, compared on
    the settings the run's method reads (``results.of_design``)."""
    return config_for(inp, ("pals", "all")).as_dict()


def design_of(inp: Inputs, key: Key) -> Design:
    """The calculator's design for one table row (its d_s left open)."""
    return design(
        inp.model, inp.tasks, config_for(inp, key), convention=inp.convention, seq_len=inp.seq_len, check_size=False
    )


@dataclass(frozen=True)
class Curve:
    """Per-task parameters of one design over d_s (``points``; empty for sizeless methods, whose
    cost is the constant ``flat``), and the row's own size (solved, or the fixed d_s)."""

    key: Key
    points: tuple[SizePoint, ...]
    flat: float | None
    marked_d_s: int | None
    marked_params: float
    feasible: bool


@dataclass(frozen=True)
class Curves:
    curves: tuple[Curve, ...]
    limit: float | None  # the budget line, per task
    view: str  # "mean" (Σ/T under a global budget) or "max" (largest task under a per-task cap)


def curves(inp: Inputs, costs: list[Cost], points: int = 80) -> Curves:
    """One curve per table row, over d_s up to about 1.5× the largest chosen size."""
    sized = [c.d_s for c in costs if c.d_s is not None]
    d_max = max(64, int(1.5 * max(sized))) if sized else 64
    out, limit, view = [], None, "mean"
    for c in costs:
        ds = design_of(inp, key_of(c))
        limit, view = per_task_limit(ds, inp.budget), per_task_view(ds, inp.budget)
        marked = per_task_params(c, view)
        if ds.method.sized:
            pts = tuple(size_curve(ds, sizes_up_to(ds, d_max, points), inp.budget))
            out.append(Curve(key_of(c), pts, None, c.d_s, marked, c.feasible))
        else:
            out.append(Curve(key_of(c), (), marked, None, marked, c.feasible))
    return Curves(tuple(out), limit, view)


def breakdown_rows(inp: Inputs, cost: Cost) -> list[dict]:
    """Where one task's parameters go in this row's design (``pals_core.budget.breakdown``)."""
    return breakdown(design_of(inp, key_of(cost)), cost.d_s)


def task_counts(t: int, at_least: int = 16, points: int = 40) -> list[int]:
    """Task counts to draw: 1…max(2T, 16) (the trend past your T), thinned to about ``points`` values, always with T."""
    top = max(2 * t, at_least)
    if top <= points:
        return list(range(1, top + 1))
    stride = -(-top // points)
    return sorted(set(range(1, top + 1, stride)) | {t, top})


def scaling(inp: Inputs, costs: list[Cost]) -> dict[Key, list[ScalingPoint]]:
    """All-task FLOPs per input against the number of tasks, each row at its own size."""
    counts = task_counts(len(inp.tasks))
    return {key_of(c): task_scaling(design_of(inp, key_of(c)), c.d_s, counts) for c in costs}


def at_location(costs: list[Cost], location: str | None) -> list[Cost]:
    """One row per method: within-network methods at ``location``, the others as they are (plots with one line
    per method)."""
    return [c for c in costs if c.location is None or c.location == location]


def on_model(
    inp: Inputs,
    key: Key,
    model: BaseModel,
    tasks: Sequence[Task],
    d_s: int | None = None,
    freeze_trunk: bool | None = None,
) -> Cost:
    """The same design on another model and tasks, counted as the trainer counts (exact convention): the largest
    d_s within the question's budget, or the cost at ``d_s`` if given (checked against the budget); ``freeze_trunk``
    None: the method's own trunk."""
    method = get_method(key[0])
    cfg = config_for(inp, key, d_s, freeze_trunk)
    ds = design(model, list(tasks), cfg, convention="exact", seq_len=inp.seq_len, check_size=d_s is not None)
    if method.sized and d_s is None:
        return solve(ds, inp.budget)
    return at_size(ds, d_s if method.sized else None, inp.budget)
