"""The study definitions: each is a search space (``suggest``) and the objective directions.

- ``design``: method × location × d_s inside the budget, maximise the dev average (paper Table 3's average).
- ``design-pareto``: the same space, two objectives — maximise the dev average, minimise the task-specific
  parameters Σ_t (head_t + adapter_t) — whose solutions form a Pareto front.
- ``alpha-schedule``: the task-sampling schedule p_i ∝ N_i^α (paper Section 4): α start, α end, the shape of the
  schedule between them, and the epoch length over which α steps; the design is fixed.
- ``optimizer``: learning rate (log scale) and warm-up fraction; the design is fixed.

Optuna's define-by-run spaces must keep one distribution per parameter name, so the size of each design has its
own name (``d_s_pals_top``), and its range [step, d_max] is fixed for the study by the calculator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna

from pals_core.data.samplers import ALPHA_SHAPES  # the shapes the trainer's α schedule knows

from .space import DesignChoice, adapter_config

LR_RANGE = (1e-5, 1e-3)
WARMUP_RANGE = (0.0, 0.3)
ALPHA_RANGE = (0.0, 1.0)


@dataclass
class Context:
    """What a definition needs to sample a trial: the study's settings and its feasible designs."""

    settings: Any  # StudySettings
    designs: list[DesignChoice]
    fixed_adapter: Any | None = None  # AdapterConfig, for studies that do not search the design
    bound: Any | None = None  # space.MachineBound: the machine every trial's design must fit (None: none set)


@dataclass(frozen=True)
class Definition:
    name: str
    title: str
    directions: tuple[str, ...]
    searches_design: bool
    suggest: Callable[[optuna.Trial, Context], dict]  # → TrainConfig fields: adapter, lr, warmup, sampling, …
    defaults: dict = field(default_factory=dict)  # StudySettings defaults of this definition

    @property
    def multi_objective(self) -> bool:
        return len(self.directions) > 1


def suggest_design(trial: optuna.Trial, ctx: Context) -> DesignChoice:
    """Method, then its location, then its d_s within [step, d_max] in steps of h_s (attention) or 1."""
    methods = list(dict.fromkeys(c.method for c in ctx.designs))
    method = trial.suggest_categorical("method", methods)
    here = [c for c in ctx.designs if c.method == method]
    if here[0].location is not None:
        location = trial.suggest_categorical(f"location_{method}", [c.location for c in here])
        choice = next(c for c in here if c.location == location)
    else:
        choice = here[0]
    return choice


def _design(trial: optuna.Trial, ctx: Context) -> dict:
    choice = suggest_design(trial, ctx)
    d_s = trial.suggest_int(choice.d_s_param, choice.step, choice.d_max, step=choice.step) if choice.sized else None
    return {"adapter": adapter_config(choice, d_s, ctx.settings.template())}


def _alpha_schedule(trial: optuna.Trial, ctx: Context) -> dict:
    steps = ctx.settings.steps
    return {
        "adapter": ctx.fixed_adapter,
        "sampling": "alpha_schedule",
        "alpha_start": trial.suggest_float("alpha_start", *ALPHA_RANGE),
        "alpha_end": trial.suggest_float("alpha_end", *ALPHA_RANGE),
        "alpha_shape": trial.suggest_categorical("alpha_shape", ALPHA_SHAPES),
        "epoch_steps": trial.suggest_int("epoch_steps", max(1, steps // 10), steps, log=True),
    }


def _optimizer(trial: optuna.Trial, ctx: Context) -> dict:
    return {
        "adapter": ctx.fixed_adapter,
        "lr": trial.suggest_float("lr", *LR_RANGE, log=True),
        "warmup": trial.suggest_float("warmup", *WARMUP_RANGE),
    }


DEFINITIONS: dict[str, Definition] = {
    d.name: d
    for d in (
        Definition(
            "design", "Adapter method × location × size within the budget (dev average)", ("maximize",), True, _design
        ),
        Definition(
            "design-pareto",
            "Adapter design: dev average vs task-specific parameters (Pareto front)",
            ("maximize", "minimize"),
            True,
            _design,
        ),
        # p_i ∝ N_i^α only differs between tasks of different sizes: no cap on training rows by default
        Definition(
            "alpha-schedule",
            "Task-sampling schedule: α start, α end, shape, epoch length",
            ("maximize",),
            False,
            _alpha_schedule,
            {"max_train_examples": None},
        ),
        Definition("optimizer", "Learning rate and warm-up", ("maximize",), False, _optimizer),
    )
}


def get_definition(name: str) -> Definition:
    try:
        return DEFINITIONS[name]
    except KeyError:
        raise ValueError(f"unknown study {name!r} (studies: {', '.join(DEFINITIONS)})") from None
