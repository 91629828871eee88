"""``--seeds 0,1,2``: the same run once per seed, and the statistics over seeds (docs/design.md "Baselines and repeated
runs").

    OUT/seeds.json          {"kind", "seeds", "separate", "template"}: what was asked (for --resume;
                            ``SeedsPlan``, read and written by ``plan.Plan`` as ``separate.json`` is)
    OUT/seed-<k>/           one ordinary run per seed (or a ``--method separate`` folder per seed)
    OUT/progress.json       the trainer's schema, summed over every run underneath
    OUT/summary.json        the aggregate (``aggregate.py``): mean, sample std and 95 % t-interval over
                            the seeds of every task metric and of the dev average, the seeds' runs, params

Every seed's run is the template with ``seed = k`` and ``out = OUT/seed-<k>``: the seed moves the
initialisation of new weights, the task sampling, the data order and dropout; the data subset
(``max_train_examples``) is seed-independent, so the seeds differ only by training randomness.
Runs go through ``jobs.run_all`` (``--jobs N`` parallel processes), so a killed multi-seed run continues
with ``--resume --out OUT`` and redoes nothing that finished. ``run_seeds`` is the one seed loop: ``pals-train
--seeds`` and a study's trial over seeds (``studies/objective.py``) both train through it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ..atomic import atomic_write_json, read_json, read_json_file
from . import separate as sep
from .aggregate import aggregate
from .config import MAX_SEED, TrainConfig
from .jobs import run_all
from .lock import RunLock
from .plan import Plan
from .rundir import SEEDS_FILE, RunDir, eta_s

if TYPE_CHECKING:
    from .trainer import OnEval


def parse_seeds(text: str) -> list[int]:
    """ "0,1,2" → [0, 1, 2]: distinct non-negative integers, in the order given."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts:
        raise ValueError("--seeds needs at least one seed, e.g. --seeds 0,1,2")
    seeds = []
    for p in parts:
        if not p.isdigit():
            raise ValueError(f"--seeds takes non-negative integers separated by commas, got {p!r}")
        seeds.append(int(p))
        if seeds[-1] > MAX_SEED:
            raise ValueError(f"--seeds takes integers from 0 to 2**63 − 1, got {p}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds repeats a seed: {text}")
    return seeds


def seed_dir(out: str | Path, seed: int) -> str:
    return str(Path(out) / f"seed-{seed}")


@dataclass
class SeedsPlan(Plan):
    """OUT/seeds.json: the template (out = OUT, seed = the first seed), the seeds, and whether each seed is a
    ``--method separate`` folder (read and written by ``plan.Plan``)."""

    FILE: ClassVar[str] = SEEDS_FILE
    KIND: ClassVar[str] = "pals-train/seeds"
    WHAT: ClassVar[str] = "multi-seed plan"

    seeds: list[int] = field(default_factory=list)
    separate: bool = False

    def seed_config(self, seed: int) -> TrainConfig:
        return replace(self.template, seed=seed, out=seed_dir(self.out, seed))

    def fields(self) -> dict:
        return {"seeds": self.seeds, "separate": self.separate}

    @classmethod
    def from_fields(cls, template: TrainConfig, d: dict) -> SeedsPlan:
        return cls(template, [int(k) for k in d["seeds"]], bool(d.get("separate")))


# ------------------------------------------------------------------------------------------ running


def _progress_writer(out: Path, leaves: Sequence[TrainConfig], started: float) -> Callable[[str], None]:
    """Writes OUT/progress.json: steps done and total summed over ``leaves`` (read from their progress.json), and the
    ETA at this invocation's own pace: (total − done) × Δt / Δsteps since its first reading (none before
    ``ETA_AFTER_S``; a resumed run stepping back to its checkpoint restarts the measurement)."""
    run = RunDir(out)
    t0: float | None = None  # when and at how many steps done the pace is measured from
    d0 = 0

    def eta(done: int, total: int, now: float) -> float | None:
        nonlocal t0, d0
        if t0 is None or done < d0:
            t0, d0 = now, done
            return None
        return eta_s(now - t0, done - d0, total - done) if now - t0 >= ETA_AFTER_S else None

    def write(status: str, error: str | None = None) -> None:
        done = 0
        for c in leaves:
            p = RunDir(c.out).read_progress() or {}
            done += int(p.get("step") or 0)
        total = sum(c.steps for c in leaves)
        now = time.monotonic()
        left = eta(min(done, total), total, now)
        run.write_progress(
            status=status,
            step=min(done, total),
            total=total,
            elapsed_s=now - started,
            eta_s=0.0 if status == "finished" else (left if status == "running" else None),
            scores={},
            average=None,
            best_average=None,
            error=error,
        )

    return write


ETA_AFTER_S = 30.0  # the pace of the first half minute (processes starting, data loading) says little


PROGRESS_EVERY_S = 2.0  # OUT/progress.json (and ``on_change``) while leaves run: reading 27 runs' files every 0.5 s
# cost a sweep's parent process 6 % of a core


def run_leaves(
    out: Path,
    leaves: list[TrainConfig],
    jobs: int,
    progress: bool,
    on_change: Callable[[], None] | None = None,
    on_eval: OnEval | None = None,
    on_done: Callable[[TrainConfig], None] | None = None,
) -> dict[str, dict]:
    """``run_all`` with OUT/progress.json kept up to date (status stopped / failed on the way out);
    ``on_change`` is called as runs progress (e.g. to copy finished summaries away), ``on_eval`` at the first run's
    evaluations (``jobs`` 1), ``on_done(leaf)`` as each run finishes. The caller holds OUT's run lock throughout
    (``lock.RunLock``), as a trainer holds its own folder's: the explorer sees a live process behind
    OUT/progress.json (not a stale "running"), and a second orchestrator on the same OUT is refused (``RunBusy``).
    An exception raised by ``on_eval`` (a pruned trial) stops OUT, as it stops the run it was called from."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with RunLock(out):
        return _run_leaves_locked(out, leaves, jobs, progress, on_change, on_eval, on_done)


def _run_leaves_locked(
    out: Path,
    leaves: list[TrainConfig],
    jobs: int,
    progress: bool,
    on_change: Callable[[], None] | None,
    on_eval: OnEval | None,
    on_done: Callable[[TrainConfig], None] | None,
) -> dict[str, dict]:
    from .trainer import TrainingStopped  # late: loads torch

    write = _progress_writer(out, leaves, time.monotonic())
    raised_in_on_eval = [False]

    def evaluated(step: int, scores: dict, average: float) -> None:
        try:
            on_eval(step, scores, average)
        except BaseException:
            raised_in_on_eval[0] = True
            raise

    last = [float("-inf")]

    def changed() -> None:  # run_all calls this at every poll: read the leaves' files at most every PROGRESS_EVERY_S
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        write("running")
        if on_change is not None:
            on_change()

    write("running")
    try:
        results = run_all(
            leaves,
            jobs=jobs,
            progress=progress,
            on_change=changed,
            on_eval=None if on_eval is None else evaluated,
            on_done=on_done,
        )
    except (TrainingStopped, KeyboardInterrupt):
        write("stopped")
        raise
    except BaseException as e:
        write("stopped" if raised_in_on_eval[0] else "failed", error=f"{type(e).__name__}: {e}")
        raise
    write("finished")
    return results


def run_separate(plan: sep.SeparatePlan, jobs: int = 1, progress: bool = True) -> dict:
    """Train (or resume) every task's model of ``plan`` and write OUT/summary.json."""
    results = run_leaves(plan.out, plan.configs(), jobs, progress)
    summary = sep.summarise(plan, results)
    atomic_write_json(plan.out / "summary.json", summary)
    return summary


def seed_leaves(plan: SeedsPlan) -> tuple[list[TrainConfig], dict[int, sep.SeparatePlan]]:
    """The ordinary runs ``plan`` consists of (one per seed, or one per seed and task with ``separate``), and
    the seeds' separate plans (written to OUT/seed-<k>/ when new)."""
    leaves: list[TrainConfig] = []
    plans: dict[int, sep.SeparatePlan] = {}
    for k in plan.seeds:
        cfg = plan.seed_config(k)
        if plan.separate:
            if sep.SeparatePlan.held_in(cfg.out):  # resumed: machine-local settings come from this invocation
                p = sep.SeparatePlan.read(cfg.out, local=cfg)
            else:
                p = _new_separate_plan(plan, cfg)
            plans[k] = p
            leaves += p.configs()
        else:
            leaves.append(cfg)
    return leaves, plans


def write_finished_separate(plans: dict[int, sep.SeparatePlan]) -> list[int]:
    """Seed k's separate summary (OUT/seed-<k>/summary.json) as soon as every task's run of it has finished (its
    summary.json is on disk), not only at the end of all seeds: a sweep still running shows the seeds it has.
    Returns the seeds written now."""
    written = []
    for k, p in plans.items():
        if (p.out / "summary.json").is_file():
            continue
        files = {p.task_dir(t): Path(p.task_dir(t)) / "summary.json" for t in p.template.tasks}
        if all(f.is_file() for f in files.values()):
            atomic_write_json(p.out / "summary.json", sep.summarise(p, {d: read_json(f) for d, f in files.items()}))
            written.append(k)
    return written


def finish_seeds(plan: SeedsPlan, plans: dict[int, sep.SeparatePlan], results: dict[str, dict]) -> dict:
    """The seeds' summaries (separate ones written to OUT/seed-<k>/summary.json) and the aggregate OUT/summary.json."""
    summaries = []
    for k in plan.seeds:
        if plan.separate:
            s = sep.summarise(plans[k], results)
            atomic_write_json(plans[k].out / "summary.json", s)
        else:
            s = results[seed_dir(plan.out, k)]
        summaries.append(s)
    agg = aggregate(plan.seeds, summaries, [Path(seed_dir(plan.out, k)).name for k in plan.seeds])
    if plan.separate:
        agg["method"] = sep.METHOD
    atomic_write_json(plan.out / "summary.json", agg)
    return agg


def aggregate_so_far(out: str | Path) -> dict | None:
    """The aggregate of the seeds of OUT's plan that have finished so far — a ``--seeds`` run or a sweep still
    training, or one stopped before it wrote OUT/summary.json — read from their summaries, with ``"planned"``: the
    plan's seeds. None without a plan or a finished seed; the file system only (trains and writes nothing)."""
    try:
        d = SeedsPlan.read_dict(out)  # guarded: a FIFO or deep nesting here never hangs a page
        planned = [int(k) for k in d["seeds"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    done = []
    for k in planned:
        try:
            s = read_json_file(Path(seed_dir(out, k)) / "summary.json", "seed summary")
        except (OSError, ValueError):
            continue
        if isinstance(s, dict) and isinstance(s.get("average"), (int, float)):
            done.append((k, s))
    if not done:
        return None
    try:
        agg = aggregate([k for k, _ in done], [s for _, s in done], [f"seed-{k}" for k, _ in done])
    except (ValueError, KeyError, TypeError):  # seeds that disagree (not one design): no aggregate to show
        return None
    if d.get("separate"):
        agg["method"] = sep.METHOD
    return {**agg, "planned": planned}


def run_seeds(
    plan: SeedsPlan,
    jobs: int = 1,
    progress: bool = True,
    on_eval: OnEval | None = None,
    on_done: Callable[[TrainConfig], None] | None = None,
) -> dict:
    """The seed loop — ``pals-train --seeds`` and the studies' trials over seeds: train (or resume) every seed's run
    of ``plan`` (``jobs`` at a time) and write the aggregate OUT/summary.json, which it returns. ``on_eval`` is
    called at the evaluations of the first seed's run (in this process: ``jobs`` 1; a study's pruner), ``on_done``
    with each run as it finishes (a study drops its checkpoints)."""
    leaves, plans = seed_leaves(plan)
    results = run_leaves(
        plan.out,
        leaves,
        jobs,
        progress,
        on_change=lambda: write_finished_separate(plans),
        on_eval=on_eval,
        on_done=on_done,
    )
    return finish_seeds(plan, plans, results)


def _new_separate_plan(plan: SeedsPlan, cfg: TrainConfig) -> sep.SeparatePlan:
    """Seed k's separate plan in OUT/seed-<k>/ (its steps per task do not depend on the seed)."""
    p = sep.make_plan(cfg)
    p.write()
    return p
