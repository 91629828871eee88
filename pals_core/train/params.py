"""Parameter cost of a run, from the calculator (``pals_core.budget``), checked against the module.

    total          N_total = N_base + Σ_t (adapter_t + head_t + pooler_t)      (exact convention)
    task_specific  N_total − N_base
    per_task       {t: adapter_t + head_t + pooler_t}
    trained        what the optimiser updates (the module's ``requires_grad`` parameters)

The calculator's numbers are the report; the instantiated model must hold exactly ``total`` parameters
and each task exactly its ``per_task`` count, else the run stops before training (the calculator and
the modules disagree — a bug to fix, not to train through).
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..budget import AdapterConfig, BaseModel, Budget, Task, design, solve
from ..budget.costs import Cost, evaluate


def design_cost(shape: BaseModel, tasks: Sequence[Task], adapter: AdapterConfig) -> Cost:
    return evaluate(design(shape, list(tasks), adapter), adapter.d_s)


def solve_d_s(shape: BaseModel, tasks: Sequence[Task], adapter: AdapterConfig, ratio: float) -> Optional[int]:
    """The calculator's largest d_s with N_total ≤ ratio·N_base (exact convention); None for sizeless
    methods. ``ValueError`` if even the smallest size does not fit."""
    probe = AdapterConfig.from_dict({**adapter.as_dict(), "d_s": None})
    ds = design(shape, list(tasks), probe, check_size=False)
    cost = solve(ds, Budget(ratio=ratio))
    if not cost.feasible:
        raise ValueError(f"budget {ratio:g}× does not fit method {adapter.method!r} on this model and these tasks: "
                         f"its smallest design already needs {cost.ratio:.4f}×")
    return cost.d_s


def expected_trained(cost: Cost, adapter: AdapterConfig, pooler: int) -> int:
    """Parameters the optimiser should update: all, minus the trunk's unused pooler when every task
    has its own; with ``freeze_trunk`` only the task-specific ones."""
    if adapter.freeze_trunk:
        return cost.params_task_specific
    return cost.params_total - (pooler if adapter.per_task_pooler else 0)


def run_params(model, shape: BaseModel, tasks: Sequence[Task], adapter: AdapterConfig) -> dict:
    """The ``params`` block of summary.json; raises ``RuntimeError`` if the module disagrees."""
    cost = design_cost(shape, tasks, adapter)
    names = [t.name for t in tasks]
    per_task = dict(zip(names, (int(x) for x in cost.params_per_task)))
    module_total = sum(p.numel() for p in model.parameters())
    if module_total != cost.params_total:
        raise RuntimeError(f"the model holds {module_total:,} parameters, the calculator counts {cost.params_total:,} "
                           f"for {adapter.method} d_s={adapter.d_s}")
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if getattr(model, "shared_adapter", None) is None:  # methods with modules shared by all tasks split them differently
        for t in names:
            held = sum(p.numel() for _, p in model.named_task_parameters(t))
            if held != per_task[t]:
                raise RuntimeError(f"task {t!r} holds {held:,} parameters in the model, the calculator counts {per_task[t]:,}")
        want = expected_trained(cost, adapter, shape.hidden * shape.hidden + shape.hidden)
        if trained != want:
            raise RuntimeError(f"the optimiser would train {trained:,} parameters, the calculator expects {want:,}")
    return {"total": int(cost.params_total), "task_specific": int(cost.params_task_specific), "per_task": per_task,
            "trained": int(trained), "ratio": float(cost.ratio), "d_s": adapter.d_s}
