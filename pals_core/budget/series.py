"""Series for the explorer's plots, read off the calculator (pure Python, no new cost formulas).

- ``per_task_view``: the quantity a budget caps, per task. A global budget (ratio B or extra E)
  caps Σ_t (head_t + adapter_t) ≤ E (E = (B − 1)·N_base), i.e. the mean per task ≤ E / T; a
  per-task cap p caps max_t (head_t + adapter_t) ≤ p (docs/design.md "Budgets and the solver").
- ``size_curve``: that quantity over d_s for one design, the curve the solver inverts.
- ``task_scaling``: FLOPs to run all T tasks on one input (shared operations, docs/design.md "FLOPs")
  against T separate fine-tuned models, Σ_t (trunk + pooler + head_t), for T = 1…T_max.
- ``pareto_front``: the designs no other design beats on both axes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..pricing.config import AdapterConfig
from .costs import Cost, Design, design, evaluate, forward_flops
from .solver import Budget, limits
from .tasks import Task


def per_task_view(ds: Design, budget: Budget | None) -> str:
    """'mean' for global budgets (and none), 'max' for a per-task cap."""
    return "max" if (budget is not None and budget.per_task is not None) else "mean"


def per_task_limit(ds: Design, budget: Budget | None) -> float | None:
    """The budget line on the per-task axis: E / T for a global budget, p for a per-task cap."""
    limit, per_task = limits(ds, budget)
    if per_task is not None:
        return float(per_task)
    if limit is not None:
        return limit / len(ds.tasks)
    return None


def per_task_params(cost: Cost, view: str = "mean") -> float:
    """Task-specific parameters per task: Σ_t (head_t + adapter_t) / T, or the largest task's.

    Modules shared by all tasks (CA-MTL) count by their 1/T share, as the solver counts them."""
    t = len(cost.params_per_task)
    if view == "max":
        return cost.largest_task_share
    return cost.params_task_specific / t


def budget_used(cost: Cost, budget: Budget) -> float:
    """The share of the budget a design spends: (N_total − N_base) / E under a global budget (E = (B − 1)·N_base
    for a ratio), the largest task's share / p under a per-task cap (docs/design.md "Budgets and the solver"). 1.0 = all
    of it."""
    if budget.per_task is not None:
        return cost.largest_task_share / budget.per_task
    limit = budget.extra_limit(cost.params_total - cost.params_task_specific)
    return cost.params_task_specific / limit if limit else float("inf")


def sizes_up_to(ds: Design, d_max: int, points: int = 120) -> list[int]:
    """Valid sizes (multiples of the step: h_s for attention methods) from one step to ``d_max``,
    thinned to about ``points`` values."""
    step = ds.step
    top = max(step, (d_max // step) * step)
    stride = step * max(1, -(-top // (step * points)))
    out = list(range(step, top + 1, stride))
    if out[-1] != top:
        out.append(top)
    return out


@dataclass(frozen=True)
class SizePoint:
    d_s: int
    params_per_task: float
    feasible: bool


def size_curve(ds: Design, sizes: Iterable[int], budget: Budget | None = None) -> list[SizePoint]:
    """Per-task parameters (see ``per_task_view``) of ``ds`` at each size, and whether it fits."""
    view = per_task_view(ds, budget)
    limit, per_task = limits(ds, budget)
    out = []
    for s in sizes:
        c = evaluate(ds, s, limit=limit, per_task_limit=per_task)
        out.append(SizePoint(s, per_task_params(c, view), c.feasible))
    return out


def wider_than_model(cost: Cost, hidden: int) -> bool:
    """Whether a sized design's d_s exceeds the model's width d: a bottleneck, projection or rank wider than what it
    adapts (the budget allows it, the design makes no sense: CA-MTL at 1.5× on a 384-wide MiniLM solves d_s = 10,760)."""
    return cost.d_s is not None and cost.d_s > hidden


@dataclass(frozen=True)
class ScalingPoint:
    tasks: int
    flops_all_tasks: int  # every task on one input, sharing the layers below the lowest adapter
    flops_separate: int  # T separate fine-tuned models: Σ_t (trunk + pooler + head_t)


def padded_tasks(tasks: Sequence[Task], count: int) -> list[Task]:
    """The first ``count`` of ``tasks``, padded with binary tasks ``task<i>`` beyond the given ones."""
    out = list(tasks[:count])
    names = {t.name for t in out}
    i = 1
    while len(out) < count:
        name = f"task{i}"
        i += 1
        if name not in names:
            out.append(Task(name, 2))
    return out


def task_scaling(ds: Design, s: int | None, counts: Iterable[int]) -> list[ScalingPoint]:
    """All-task forward FLOPs per sequence of design ``ds`` at size ``s`` for each task count."""
    plain_cfg = AdapterConfig(method="shared", heads=ds.config.heads)
    plain: dict[int, int] = {}  # num_labels -> one plain model's forward FLOPs

    def alone(task: Task) -> int:
        if task.num_labels not in plain:
            one = design(ds.model, [task], plain_cfg, convention=ds.convention, seq_len=ds.seq_len)
            plain[task.num_labels] = forward_flops(one, 0)[1]
        return plain[task.num_labels]

    out = []
    for t in counts:
        tasks = padded_tasks(ds.tasks, t)
        # FLOPs depend on the tasks only through their heads: the same design with T tasks
        _, _, all_tasks = forward_flops(replace(ds, tasks=tuple(tasks)), s or 0)
        out.append(ScalingPoint(t, all_tasks, sum(alone(task) for task in tasks)))
    return out


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points (x, y) not dominated when x is to be maximised and y minimised.

    In the explorer x = task-specific parameters used within the budget (capacity) and
    y = FLOP overhead: a point is dominated if another has x' ≥ x and y' ≤ y, one strictly.
    Ties (equal points) are all kept."""
    front = []
    for i, (x, y) in enumerate(points):
        dominated = any((x2 >= x and y2 <= y) and (x2 > x or y2 < y) for j, (x2, y2) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return front
