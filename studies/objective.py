"""The objective: one trial = one real multi-task training run through ``pals_core.train`` (in-process).

The trial's configuration comes from its definition's ``suggest``; the fixed part from the study's settings.
At every evaluation the trainer calls back with the dev average (each task's main metric, averaged over tasks:
for GLUE paper Table 3's accuracy, CoLA MCC, STS-B Pearson; for tasks of one's own the metric their record names,
recorded per trial as ``scores`` and ``main_metrics``); single-objective trials ``report`` it and stop early when
the median pruner says so. The trial's score is the evaluation the study's ``score_at`` names — its best one (the
checkpoint pals-predict loads) or its last — recorded with its step (``score_step``) and beside each task's trivial
baseline on the same dev rows (``majority``, from ``summary.json``). The run directory is kept and recorded as the trial's ``run_dir`` user attribute, so
every trial can be inspected or resumed; a retry of a trial whose worker died resumes in the dead trial's
directory when it is on this machine. A study on a tasks file trains from this worker's copy of it
(``StudySettings.tasks_file``, checked against the study's data when the worker joined).
"""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass

import optuna

from pals_core.atomic import read_json
from pals_core.data.metrics import main_score
from pals_core.pricing.config import design_label
from pals_core.tasks import records_of_config
from pals_core.train.aggregate import seed_stats
from pals_core.train.config import TrainConfig
from pals_core.train.rundir import RunDir
from pals_core.train.seeds import SeedsPlan, run_seeds

from .definitions import Context, Definition
from .space import cost_of
from .storage import one_line, retry_of


def score_of(summary: dict, score_at: str) -> tuple[float, dict, int | None]:
    """(dev average, per-task scores, step) of one run's ``summary.json`` as the study scores it (``StudySettings
    .score_at``): ``best`` — the best evaluation (``average``, ``scores``, ``best_step``: the checkpoint pals-predict
    loads); ``final`` — the last one (``final``)."""
    if score_at == "final":
        last = summary.get("final") or {}
        return float(last["average"]), dict(last["scores"]), last.get("step")
    return float(summary["average"]), dict(summary["scores"]), summary.get("best_step")


def seed_summaries(run_dir: str, aggregate: dict) -> list[dict]:
    """The ``summary.json`` of each seed's run under a trial over seeds (``aggregate['runs'][k]['dir']``)."""
    return [read_json(os.path.join(run_dir, one["dir"], "summary.json")) for one in aggregate["runs"]]


def retried_from(trial: optuna.Trial) -> int | None:
    """The number of the trial this one retries (its worker died), or None (``RetryHeartbeatStaleTrialCallback``)."""
    for frozen in trial.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if frozen.number == trial.number:
            return retry_of(frozen)
    return None


SURPLUS_ATTR = "surplus"  # user attribute of a trial given up untrained: why (the study's --trials were taken)


class SurplusTrial(optuna.TrialPruned):
    """Two workers asked for the last trial at once: the later one gives its trial up before training. A
    ``TrialPruned``, so Optuna stores the trial PRUNED — not a failure — with the reason in its ``surplus`` user
    attribute; ``is_surplus`` keeps it out of the study's counts (``runner.counts``, ``runner.wait_for_a_place``)."""


def is_surplus(trial) -> bool:
    """Whether a (frozen) trial was given up as surplus (its ``surplus`` user attribute holds the reason)."""
    return bool(trial.user_attrs.get(SURPLUS_ATTR))


def surplus(trial: optuna.Trial, target: int) -> bool:
    """More than ``target`` trials would be under way or finished with this one: those numbered before it that
    are complete, pruned, running or waiting (failed ones are retried by a waiting copy; surplus ones gave their
    place up) already make ``target``. The check before each trial (``runner.wait_for_a_place``) reads the counts before
    Optuna creates the trial; two workers can pass it together, and this closes that gap after the fact, by trial
    number."""
    from optuna.trial import TrialState

    ahead = trial.study.get_trials(
        deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)
    )
    return sum(1 for t in ahead if t.number < trial.number and not is_surplus(t)) >= target


@dataclass
class Objective:
    """Callable handed to ``study.optimize``."""

    definition: Definition
    ctx: Context
    shape: object  # pals_core.budget.BaseModel of the trained model
    run_root: str  # <out>/<study name>
    glue_dir: str | None = None
    device: str = "auto"
    threads: int | None = None
    progress: bool = False
    keep_checkpoints: bool = True  # False: a finished trial's checkpoints are deleted (config, metrics, summary stay)
    last_trial: int | None = None  # number of the trial this worker ran last (read by the runner)
    stopped: bool = False  # the trainer was stopped by SIGTERM/SIGINT: the worker stops too
    target: int | None = None  # the study's --trials: a trial started beyond it is given up untrained
    surplus: bool = False  # the last trial was beyond the target (another worker took the last place): stop

    def run_dir(self, trial: optuna.Trial, original: int | None) -> tuple[str, bool]:
        """(directory, resume?): a retry (of trial ``original``) resumes in its directory if that is on this machine."""
        previous = trial.user_attrs.get("run_dir")
        if (
            original is not None
            and previous
            and trial.user_attrs.get("host") == socket.gethostname()
            and (RunDir(previous).has_run() or SeedsPlan.held_in(previous))  # a run, or a trial over seeds
        ):
            return previous, True
        return os.path.abspath(os.path.join(self.run_root, f"trial-{trial.number:04d}")), False

    def __call__(self, trial: optuna.Trial) -> float | tuple[float, float]:
        from pals_core.train.trainer import TrainingStopped, train  # late: loads torch

        self.last_trial = trial.number
        self.surplus = False
        if self.target is not None and surplus(trial, self.target):
            self.surplus = True
            reason = (
                f"given up untrained: the study already had {self.target} trial{'s' if self.target != 1 else ''} "
                "finished or under way "
                "(--trials), another worker took the last place"
            )
            trial.set_user_attr(SURPLUS_ATTR, reason)
            raise SurplusTrial(f"trial {trial.number} is beyond the study's --trials {self.target}: {reason}")
        s = self.ctx.settings
        plan = dict(self.definition.suggest(trial, self.ctx))
        adapter = plan.pop("adapter")
        cost = cost_of(self.shape, s.calc_tasks(), adapter, s.budget_obj(), self.ctx.bound)
        if not cost.feasible:  # the space is built from the solver, so this is a bug, not a bad trial
            raise RuntimeError(
                f"design {adapter} exceeds the study's budget ({cost.binding or 'params'}): "
                f"{cost.params_task_specific:,} extra parameters"
            )
        original = retried_from(trial)
        run_dir, resume = self.run_dir(trial, original)
        attrs = {
            "method": adapter.method,
            "location": cost.location,
            "d_s": adapter.d_s,
            "design": design_label(adapter.method, cost.location),
            "params_task_specific": cost.params_task_specific,
            "params_total": cost.params_total,
            "ratio": cost.ratio,
            "flops_ratio": cost.flops_per_seq / cost.flops_base_per_seq,
            "run_dir": run_dir,
            "host": socket.gethostname(),
            "worker": f"{socket.gethostname()}:{os.getpid()}",
            "resumed": resume,
            "retry_of": original,
            "error": None,
        }
        if cost.memory_train is not None:  # the study's machine: what this design costs on it (the calculator's)
            attrs.update(memory_train=cost.memory_train["total"], time_ratio=cost.time_ratio)
        for k, v in attrs.items():
            trial.set_user_attr(k, v)
        cfg = TrainConfig(
            tasks=list(s.tasks),
            tasks_file=s.tasks_file,
            adapter=adapter,
            model=s.model,
            glue_dir=self.glue_dir,
            out=run_dir,
            steps=s.steps,
            batch_size=s.batch_size,
            max_len=s.max_len,
            eval_every=s.eval_every,
            max_train_examples=s.max_train_examples,
            max_eval_examples=s.max_eval_examples,
            seed=s.seed,
            device=self.device,
            num_threads=self.threads,
            **self._training_fields(plan),
        )
        multi = self.definition.multi_objective

        def on_eval(step: int, scores: dict, average: float) -> None:
            trial.set_user_attr("last_step", int(step))
            if multi:  # Optuna has no intermediate values / pruning for several objectives
                return
            trial.report(float(average), int(step))
            if step < s.steps and trial.should_prune():  # the last evaluation ends a run anyway: keep it complete
                raise optuna.TrialPruned(
                    f"dev average {average:.4f} at step {step} is below the median of earlier trials"
                )

        try:
            if s.seeds:
                summary = self._train_seeds(cfg, s.seeds, resume, on_eval)
            else:
                summary = train(cfg, resume=resume, on_eval=on_eval, progress=self.progress)
        except optuna.TrialPruned:
            self._drop_checkpoints(run_dir)
            raise
        except TrainingStopped as e:
            self.stopped = True
            trial.set_user_attr("error", f"stopped: {one_line(e)}")
            raise
        except Exception as e:
            trial.set_user_attr("error", f"{type(e).__name__}: {one_line(e)}")
            raise
        self._drop_checkpoints(run_dir)
        params = summary.get("params", {})
        records = records_of_config(summary.get("config") or {})
        runs = seed_summaries(run_dir, summary) if s.seeds else [summary]
        scored = [score_of(one, s.score_at) for one in runs]  # (average, scores, step) of each seed's run
        main = [{t: float(main_score(records[t], m)) for t, m in sc.items()} for _, sc, _ in scored]
        if s.seeds:  # the mean over seeds, with the interval beside it
            stats = seed_stats([a for a, _, _ in scored])
            average = float(stats["mean"])
            scores = {
                t: {k: float(seed_stats([sc[t][k] for _, sc, _ in scored])["mean"]) for k in m}
                for t, m in scored[0][1].items()
            }
            trial.set_user_attr("seeds", list(summary["seeds"]))
            trial.set_user_attr("average_std", stats["std"])
            trial.set_user_attr("average_ci95", stats["ci95"])
            trial.set_user_attr("scores_ci95", {t: seed_stats([m[t] for m in main])["ci95"] for t in main[0]})
            trial.set_user_attr("best_step", [one.get("best_step") for one in runs])
            trial.set_user_attr("score_step", [step for _, _, step in scored])
        else:
            average, scores, step = scored[0]
            trial.set_user_attr("best_step", summary.get("best_step"))
            trial.set_user_attr("score_step", step)
        trial.set_user_attr("score_at", s.score_at)
        # each task's main metric, as its record names it (GLUE: paper Table 3's; your own tasks: the tasks file's)
        trial.set_user_attr("scores", {t: float(main_score(records[t], m)) for t, m in scores.items()})
        trial.set_user_attr("main_metrics", {t: records[t].main_metric for t in scores})
        trial.set_user_attr("metrics", {t: {k: float(v) for k, v in m.items()} for t, m in scores.items()})
        baselines = [one.get("majority") or {} for one in runs]
        if all(t in b for b in baselines for t in scores):  # each task's trivial baseline on the same dev rows
            trial.set_user_attr(
                "majority",
                {t: sum(float(main_score(records[t], b[t])) for b in baselines) / len(baselines) for t in scores},
            )
        trial.set_user_attr("wall_time_s", float(summary.get("wall_time_s", 0.0)))
        if "task_specific" in params:  # the trainer's count, checked against the instantiated module
            trial.set_user_attr("params_task_specific", int(params["task_specific"]))
        if multi:
            return average, float(params.get("task_specific", cost.params_task_specific))
        return average

    def _train_seeds(self, cfg, seeds: list[int], resume: bool, on_eval) -> dict:
        """The trial once per seed, one after another in ``<run_dir>/seed-<k>``, through ``pals-train --seeds``'s own
        seed loop (``seeds.run_seeds``: its layout, so ``pals-train --resume --out <run_dir>`` also continues it); the
        first seed's run reports to the pruner. Returns the aggregate summary (``pals_core.train.aggregate``): mean,
        sample std, 95 % t-interval."""
        from pals_core.train.params import resolve  # late: loads torch

        plan = SeedsPlan(resolve(cfg.with_(seed=seeds[0])), list(seeds))
        if not (resume and SeedsPlan.held_in(cfg.out)):
            plan.write()
        return run_seeds(plan, 1, self.progress, on_eval=on_eval, on_done=lambda one: self._drop_checkpoints(one.out))

    def _drop_checkpoints(self, run_dir: str) -> None:
        if not self.keep_checkpoints:
            shutil.rmtree(os.path.join(run_dir, "checkpoints"), ignore_errors=True)

    def _training_fields(self, plan: dict) -> dict:
        """Settings' training fields, overridden by what the trial samples (lr, warm-up, sampling, α, epochs)."""
        s = self.ctx.settings
        out = {"lr": s.lr, "warmup": s.warmup, "sampling": s.sampling}  # None: the method's own (TrainConfig)
        if s.epoch_steps is not None:
            out["epoch_steps"] = s.epoch_steps
        out.update(plan)
        return out
