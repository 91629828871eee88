"""The feasible design space under a budget, read from the calculator (``pals_core.budget``).

For each method × location the calculator's closed-form solver gives the largest d_s within the budget
(docs/design.md "Budgets and the solver": the positive root of T·(a·S² + b·S + c) + Σ_t head_t = limit, rounded down to
a multiple of h_s for attention methods). A design study samples d_s only in [step, d_max], so no trial
is spent on a design that does not fit. Sizeless methods (``shared``, ``lhuc``, ``bert_layer_top``) are
in the space only if they fit as they are.

A study with machine settings (``MachineBound``: ``--memory``, ``--max-slowdown``, …) takes the solver's d_s under
those budgets too — ``pals_core.budget.machine.constrain``, the same closed form ``pals-budget --memory`` uses —
priced at the study's batch and sequence length; a family whose memory and time are not modelled is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from pals_core.base_model import model_shape as _shape
from pals_core.budget.costs import Cost, design
from pals_core.budget.machine import Machine, check_supported, constrain
from pals_core.budget.solver import Budget, at_size, solve
from pals_core.budget.table import rows
from pals_core.budget.tasks import Task, parse_tasks
from pals_core.methods.registry import METHODS, get_method
from pals_core.pricing.activations import Conditions
from pals_core.pricing.config import AdapterConfig, design_label
from pals_core.pricing.shape import BaseModel

#: the tasks of a study as the calculator prices them: ``StudySettings.calc_tasks()`` (each task's real C_t), or
#: GLUE names (GLUE's label counts)
Tasks = Sequence["Task | str"]


def calc_tasks(tasks: Tasks) -> list[Task]:
    """``tasks`` as the calculator's ``Task``s: given ones as they are, GLUE names with GLUE's label counts."""
    tasks = list(tasks)
    if tasks and all(isinstance(t, Task) for t in tasks):
        return tasks
    return parse_tasks(tasks)


@dataclass(frozen=True)
class MachineBound:
    """What a study's designs are priced on besides parameters: its ``Machine`` (B = the study's batch), the
    sequence length n of its steps (``max_len``) and the model's dropout and attention (``Conditions``)."""

    machine: Machine
    seq_len: int
    conditions: Conditions

    def rows_kwargs(self) -> dict:
        """The keywords of ``pals_core.budget.rows`` that price and bound on this machine."""
        return {"machine": self.machine, "seq_len": self.seq_len, "model_conditions": self.conditions}


def check_machine(shape: BaseModel, tasks: Tasks, bound: MachineBound | None) -> None:
    """ValueError (one line) when ``bound`` sets a memory or time budget for a family whose memory and time the
    calculator does not model, or its sequence length is longer than the model takes: such a design is refused,
    never priced as another family or another length."""
    if bound is not None:
        check_supported(
            design(shape, calc_tasks(tasks), AdapterConfig(method="shared"), seq_len=bound.seq_len), bound.machine
        )


@dataclass(frozen=True)
class DesignChoice:
    """One method at one location, with the range of d_s that fits the budget."""

    method: str
    location: str | None  # None for top-of-BERT and global methods
    step: int  # d_s is a multiple of this (h_s for attention methods, else 1)
    d_max: int | None  # the largest d_s within the budget; None for sizeless methods

    @property
    def key(self) -> str:
        """``pals @ top`` — the label of the design in tables and the value of the ``design`` user attribute."""
        return design_label(self.method, self.location)

    @property
    def d_s_param(self) -> str:
        """The Optuna parameter name of this design's size: one name per method/location, because each has its
        own static range (define-by-run distributions must not change under one name)."""
        return f"d_s_{self.method}" if self.location is None else f"d_s_{self.method}_{self.location}"

    @property
    def sized(self) -> bool:
        return self.d_max is not None


def model_shape(model: str | None) -> BaseModel:
    """The shape of the trained model as the calculator sees it (the trainer's own reading of its config)."""
    return _shape(model)


def usable_methods() -> list[str]:
    """Methods the calculator prices and ``MultiTaskBert`` can build (both registries), in the calculator's order."""
    from pals_core.methods.adapters import ADAPTERS  # late: loads torch

    return [name for name in METHODS if name in ADAPTERS]


def capped(d_s: int, step: int, shape: BaseModel, max_d_s: int | None = None) -> int:
    """min(d_s, cap) rounded down to a multiple of ``step``; the cap is ``max_d_s`` or the hidden size d."""
    cap = shape.hidden if max_d_s is None else max_d_s
    return min(d_s, cap) // step * step


def feasible_designs(
    shape: BaseModel,
    tasks: Tasks,
    budget: Budget,
    methods: Iterable[str] | None = None,
    template: AdapterConfig | None = None,
    max_d_s: int | None = None,
    bound: MachineBound | None = None,
) -> list[DesignChoice]:
    """Every method × location that fits ``budget`` (and ``bound``'s memory and step-time budgets) at its smallest
    size, with its largest size (exact convention).

    d_max = min(solver's largest d_s, ``max_d_s``) rounded down to the step; ``max_d_s`` defaults to the hidden
    size d: every sized method projects d → d_s, and a projection wider than d is no bottleneck (a rank-d_s map
    from R^d has rank ≤ d), so sizes above d spend the budget on nothing. With a ``bound`` the solver's d_s is the
    largest within all the budgets (``budget.machine.constrain``)."""
    names = list(methods) if methods is not None else usable_methods()
    for name in names:
        get_method(name)  # unknown names raise ValueError
    template = template if template is not None else AdapterConfig()
    check_machine(shape, tasks, bound)
    out = []
    for cost in rows(
        shape,
        calc_tasks(tasks),
        budget=budget,
        methods=names,
        adapter=template,
        **(bound.rows_kwargs() if bound is not None else {}),
    ):
        if not cost.feasible:
            continue
        m = get_method(cost.method)
        step = template.heads if m.attention else 1
        d_max = None
        if m.sized:
            d_max = capped(cost.d_s, step, shape, max_d_s)
            if d_max < step:
                continue
        out.append(DesignChoice(cost.method, cost.location if m.within else None, step, d_max))
    return out


def cost_of(
    shape: BaseModel,
    tasks: Tasks,
    cfg: AdapterConfig,
    budget: Budget | None = None,
    bound: MachineBound | None = None,
) -> Cost:
    """The calculator's cost of one concrete design (exact convention), checked against ``budget`` — and with a
    ``bound`` priced on its machine (memory_train, time_ratio) and checked against its budgets (``binding`` names
    the first one broken)."""
    if bound is None:
        return at_size(design(shape, calc_tasks(tasks), cfg), cfg.d_s, budget)
    ds = design(shape, calc_tasks(tasks), cfg, seq_len=bound.seq_len)
    return constrain(at_size(ds, cfg.d_s, budget), ds, bound.machine, bound.conditions, solved=False)


def largest_size(
    shape: BaseModel, tasks: Tasks, cfg: AdapterConfig, budget: Budget, bound: MachineBound | None = None
) -> Cost:
    """The solver's largest d_s of ``cfg`` (its method and location) within ``budget`` and ``bound``'s budgets."""
    ds = design(
        shape, calc_tasks(tasks), cfg, check_size=False, **({"seq_len": bound.seq_len} if bound is not None else {})
    )
    cost = solve(ds, budget)
    return cost if bound is None else constrain(cost, ds, bound.machine, bound.conditions, solved=True)


def adapter_config(choice: DesignChoice, d_s: int | None, template: AdapterConfig) -> AdapterConfig:
    """The trial's design: the study's shared design settings with this choice's method, location and size."""
    return replace(template, method=choice.method, d_s=d_s, location=choice.location)
