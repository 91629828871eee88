"""``--method separate``: the paper's reference row — one fully fine-tuned model per task.

Stickland & Murray (2019, Table 3, "BERT-base × 8"): every task gets its own copy of the base model,
fine-tuned on that task alone, so the design costs

    N_total = Σ_t (N_base + head_t)  =  T·N_base + Σ_t head_t          (+ d² + d per task with a per-task pooler)

— each term is the calculator's count of a one-task ``shared`` model (``design_cost``), summed; nothing
is re-derived here. ``task_specific`` = N_total − N_base as for every other design (the ratio is
N_total / N_base ≈ T); ``per_task`` = each task's whole model, so Σ per_task = N_total here.

**Same training as the multi-task run would give the task.** The template is the multi-task
configuration (tasks, steps S, sampling, batch, lr, warm-up fraction, max length, example caps, seed).
Task t's model trains for

    n_t = E[steps of task t] = Σ_{s=0}^{S−1} p_t(s)

under the template's sampler (p_t(s) its per-step probabilities: N_t^α / Σ_i N_i^α for the α samplers,
annealed included; exactly ⌊S/T⌋ or ⌈S/T⌉ for ``round_robin``), rounded to integers by the largest
remainder (Hamilton) method so that Σ_t n_t = S: the separate models together take exactly the
multi-task run's steps. Samplers that look at the model (``mt_uncertainty``) have no shares known in
advance and are refused. Each model sees the same training rows as in the multi-task run (the same
``max_train_examples`` subset, which does not depend on the seed; its walk order differs, since a
task's data stream is keyed by its index among the run's tasks), the same batch size, peak learning
rate and warm-up *fraction* (of its own n_t steps), and evaluates at the same points of its share:
every max(1, round(eval_every · n_t / S)) steps. Each model keeps its own best checkpoint (by its task's
dev score): a separate model is tuned on its own, as in the paper.

The run folder ``OUT`` holds ``separate.json`` (the template and the plan: ``SeparatePlan``, read and written by
``plan.Plan`` as ``seeds.json`` is), one ordinary ``pals-train`` run per task in ``OUT/task-<name>/`` (``shared``
method, one task; resumable like any run) and, at the end, ``OUT/summary.json`` in the trainer's format
(``scores``, ``average``, ``params``, …) with ``best_step`` and ``task_steps`` per task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..base_model import model_shape
from ..data.load import raw_splits
from ..data.metrics import dev_average
from ..data.samplers import make_sampler
from ..pricing.config import AdapterConfig
from ..tasks import records_of_config
from .config import TrainConfig
from .params import design_cost, run_tasks
from .plan import Plan
from .rundir import PLAN_FILE

METHOD = "separate"
STEPS_RULE = (
    "n_t = sum over the multi-task run's steps of p_t(step) under its sampling, rounded by largest remainder "
    "so that sum_t n_t = steps"
)


def expected_steps(sampling: str, sizes: dict[str, int], steps: int, epoch_steps: int, **alpha) -> dict[str, float]:
    """E[steps of task t] = Σ_s p_t(s) over the multi-task run's ``steps`` (exact, no sampling)."""
    sampler = make_sampler(sampling, sizes, steps, epoch_steps, **alpha)
    if sampler.needs_model:
        raise ValueError(
            f"--method separate needs task shares known in advance; sampling {sampling!r} chooses "
            f"tasks by looking at the model (use annealed, proportional, sqrt, uniform, round_robin, alpha_schedule)"
        )
    total = np.zeros(len(sampler.tasks))
    for s in range(steps):
        total += sampler.probabilities(s)
    return {t: float(v) for t, v in zip(sampler.tasks, total)}


def largest_remainder(shares: dict[str, float], total: int) -> dict[str, int]:
    """Integers n_t with Σ n_t = ``total``: ⌊share_t⌋, then one more for the largest fractional parts
    (ties: task order)."""
    floors = {t: math.floor(v + 1e-9) for t, v in shares.items()}
    left = total - sum(floors.values())
    order = sorted(shares, key=lambda t: -(shares[t] - floors[t]))
    for t in order[: max(0, left)]:
        floors[t] += 1
    return floors


def train_sizes(cfg: TrainConfig) -> dict[str, int]:
    """Training examples per task as the trainer will see them (rows read, capped by max_train_examples)."""
    out = {}
    for record in cfg.records():
        raws, _ = raw_splits(record, glue_dir=cfg.glue_dir, source=cfg.glue_source, seed=cfg.seed)
        n = len(raws["train"].labels)
        out[record.name] = n if cfg.max_train_examples is None else min(n, cfg.max_train_examples)
    return out


def steps_per_task(cfg: TrainConfig, sizes: dict[str, int] | None = None) -> dict[str, int]:
    """n_t of every task of the template ``cfg`` (see the module docstring); ``ValueError`` if one gets none."""
    sizes = train_sizes(cfg) if sizes is None else sizes
    shares = expected_steps(
        cfg.sampling,
        sizes,
        cfg.steps,
        cfg.epoch_steps,
        alpha_start=cfg.alpha_start,
        alpha_end=cfg.alpha_end,
        alpha_shape=cfg.alpha_shape,
    )
    n = largest_remainder(shares, cfg.steps)
    starved = [t for t, k in n.items() if k < 1]
    if starved:
        raise ValueError(
            f"with {cfg.steps} steps task(s) {', '.join(starved)} would get no step of their own: give more --steps"
        )
    return n


@dataclass
class SeparatePlan(Plan):
    """OUT/separate.json: the template — the multi-task configuration (method shared, every task), resolved — and
    each task's steps, evaluation interval and training examples (read and written by ``plan.Plan``)."""

    FILE: ClassVar[str] = PLAN_FILE
    KIND: ClassVar[str] = "pals-train/separate"
    WHAT: ClassVar[str] = "separate-models plan"

    steps: dict[str, int] = field(default_factory=dict)
    eval_every: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    def task_dir(self, task: str) -> str:
        return str(self.out / f"task-{task}")

    def configs(self) -> list[TrainConfig]:
        """One single-task ``shared`` run per task."""
        c = self.template
        out = []
        for t in c.tasks:
            save = None if c.save_every is None else max(1, round(c.save_every * self.steps[t] / c.steps))
            out.append(
                replace(
                    c,
                    tasks=[t],
                    steps=self.steps[t],
                    eval_every=self.eval_every[t],
                    save_every=save,
                    out=self.task_dir(t),
                    budget=None,
                    adapter=replace(c.adapter, method="shared", d_s=None),
                )
            )
        return out

    def fields(self) -> dict:
        return {
            "steps_per_task": self.steps,
            "eval_every_per_task": self.eval_every,
            "train_examples": self.sizes,
            "rule": STEPS_RULE,
        }

    @classmethod
    def from_fields(cls, template: TrainConfig, d: dict) -> SeparatePlan:
        return cls(
            template,
            {k: int(v) for k, v in d["steps_per_task"].items()},
            {k: int(v) for k, v in d["eval_every_per_task"].items()},
            {k: int(v) for k, v in d["train_examples"].items()},
        )


def check_template(cfg: TrainConfig) -> TrainConfig:
    """The template as a ``shared`` multi-task configuration (what ``--method separate`` mirrors)."""
    if cfg.adapter.method != "shared":
        cfg = replace(cfg, adapter=replace(cfg.adapter, method="shared", d_s=None))
    if cfg.adapter.freeze_trunk:
        raise ValueError("--method separate fine-tunes whole models: --freeze-trunk does not apply")
    if cfg.budget is not None:
        raise ValueError(
            f"--method separate trains one whole model per task (T × N_base, the paper's reference row): "
            f"the budget {cfg.budget.describe()} does not apply; drop it"
        )
    return cfg


def make_plan(template: TrainConfig) -> SeparatePlan:
    """The plan for ``template`` (resolved, validated); reads the training files to count examples."""
    from .params import resolve  # late: loads torch

    template = resolve(check_template(template))
    sizes = train_sizes(template)
    steps = steps_per_task(template, sizes)
    every = {t: max(1, round(template.eval_every * n / template.steps)) for t, n in steps.items()}
    return SeparatePlan(template, steps, every, sizes)


def separate_params(template: TrainConfig) -> dict:
    """The ``params`` block: the calculator's one-task ``shared`` model per task, summed."""
    shape = model_shape(template.model)
    adapter = AdapterConfig.from_dict({**template.adapter.as_dict(), "method": "shared", "d_s": None})
    costs = {t.name: design_cost(shape, [t], adapter) for t in run_tasks(template)}
    base = {c.params_total - c.params_task_specific for c in costs.values()}
    (n_base,) = base
    total = sum(c.params_total for c in costs.values())
    return {
        "total": int(total),
        "task_specific": int(total - n_base),
        "per_task": {t: int(c.params_total) for t, c in costs.items()},
        "trained": int(sum(c.params_trained for c in costs.values())),
        "ratio": total / n_base,
        "d_s": None,
        "base": int(n_base),
        "models": len(costs),
    }


def summarise(plan: SeparatePlan, results: dict[str, dict]) -> dict:
    """OUT/summary.json from the per-task runs' summaries (``results``: task dir → summary)."""
    c = plan.template
    subs = {t: results[plan.task_dir(t)] for t in c.tasks}
    params = separate_params(c)
    for t, s in subs.items():
        if s["params"]["total"] != params["per_task"][t]:
            raise RuntimeError(
                f"task {t}: its model holds {s['params']['total']:,} parameters, the calculator counts "
                f"{params['per_task'][t]:,}"
            )
    params["trained"] = int(sum(s["params"]["trained"] for s in subs.values()))
    scores = {t: s["scores"][t] for t, s in subs.items()}
    final_scores = {t: (s.get("final") or {}).get("scores", {}).get(t) for t, s in subs.items()}
    config = {
        **c.as_dict(),
        "adapter": {**c.adapter.as_dict(), "method": METHOD, "d_s": None},
        "steps_per_task": plan.steps,
        "eval_every_per_task": plan.eval_every,
        "steps_rule": STEPS_RULE,
    }
    return {
        "config": config,
        "method": METHOD,
        "scores": scores,
        "average": dev_average(scores, records_of_config(config)),
        "best_step": {t: s["best_step"] for t, s in subs.items()},
        "params": params,
        "steps": int(sum(s["steps"] for s in subs.values())),
        "task_steps": {t: int(s["steps"]) for t, s in subs.items()},
        "final": {
            "average": dev_average(final_scores, records_of_config(config)) if all(final_scores.values()) else None,
            "scores": final_scores,
        },
        "runs": {t: Path(plan.task_dir(t)).name for t in c.tasks},
        "wall_time_s": round(sum(float(s["wall_time_s"]) for s in subs.values()), 3),
        "train_time_s": round(sum(float(s.get("train_time_s", 0.0)) for s in subs.values()), 3),
        "train_cpu_s": round(sum(float(s.get("train_cpu_s", 0.0)) for s in subs.values()), 3),
        "eval_time_s": round(sum(float(s.get("eval_time_s", 0.0)) for s in subs.values()), 3),
        "train_examples": plan.sizes,
    }
