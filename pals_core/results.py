"""Finished runs on disk, read without torch: the ``summary.json`` files ``pals-train`` writes (a single run's, or the
aggregate of ``pals-train --seeds``), found the way the explorer finds them. One reader, ``runs``: each ``summary.json`` read once into a ``Run``, which
holds what a run is placed by (method, location, size, model, tasks by fingerprint, recipe, its seeds' averages).
Both readers of results take ``Run``s: the explorer's "measured" (``pals_core/measured.py``: what each result shows)
and the score model (``pals_core/score_model.py``: what the measured sizes predict); ``pals-budget --results`` reads
the runs once for both.

Folders searched: each root, three levels deep (a sweep's ``<sweep>/<design>/seed-<k>/``); a seed run inside an
aggregate is represented by the aggregate, a ``--seeds`` plan still training by the seeds it has finished (two or
more), and the same summary in two places (a sweep's run and its copy under ``benchmarks/results``) is read once, at
the first root's path. A summary that cannot be read is passed over (``pals_core.measured.unreadable`` names it).

A run counts only if its numbers can be true (``problem``): the dev average and every task metric finite and inside
its metric's range (as the task's kind declares it, ``pals_core.kinds``: a fraction 0–1, a correlation −1–1; the
average inside the mean of its tasks' main-metric ranges), ``d_s`` an integer within the calculator's limits
(``pricing.limits.MAX_D_S``), ``config`` of the shape ``pals-train`` writes. One that fails is a ``PassedOver``: not
counted, named with its reason (``runs(…, passed_over)``; ``pals-budget`` on stderr, the page in a note).

A run counts once: runs are told apart by what they are (``Run.identity``: design, recipe, seeds, the tasks'
fingerprints and the run's own folder as it recorded it), not by their bytes — copies that differ in a wall time are
one run, read at the first root's path.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic import read_json_file
from .kinds import DEFAULT_KIND, PACKAGES, get_kind
from .methods.registry import METHODS
from .pricing.config import AdapterConfig
from .pricing.limits import MAX_D_S
from .pricing.method import EVERY_METHOD_READS
from .tasks.glue_tasks import GLUE_TASKS

if TYPE_CHECKING:
    from .tasks.record import TaskRecord

SCALE = 100.0  # summaries hold fractions; the page and the CLI show 0–100
DEPTH = 3  # run folders searched: <root>/<run>, a --seeds run's <root>/<run>/seed-<k>, a sweep's <root>/<sweep>/<design>/seed-<k>
SEEDS_FILE = "seeds.json"  # pals_core.train.seeds.SEEDS_FILE (that module is not imported until a plan is read)


def read_summary(path: Path) -> dict:
    """The JSON object in a ``summary.json`` (read by ``pals_core.atomic.read_json_file``: never opens a folder or a
    FIFO, nor parses past its size limit or Python's nesting depth); ``ValueError`` in one line, without the path,
    for anything else."""
    what = path.name
    try:
        data = read_json_file(path, what)
    except ValueError as e:
        raise ValueError(" ".join(str(e).replace(f" {path}", "").split())) from None
    if not isinstance(data, dict):
        raise ValueError(f"{what} holds a JSON {type(data).__name__}, not an object")
    return data


def read_or_none(path: Path) -> dict | None:
    try:
        return read_summary(path)
    except ValueError:
        return None


def summary_files(root: Path, depth: int = DEPTH) -> list[Path]:
    """Every ``summary.json`` in the folders ``depth`` levels under ``root``, shallowest first (a folder, a FIFO or a
    broken symbolic link of that name too: it is an unreadable summary)."""
    patterns = ["/".join(["*"] * n) for n in range(1, depth + 1)]
    found = {d / "summary.json" for pattern in patterns for d in root.glob(pattern) if d.is_dir()}
    return sorted(
        (f for f in found if os.path.lexists(f)), key=lambda p: (len(p.parts), str(p))
    )  # lexists: a broken link too


def run_config(summary: dict, folder: Path) -> dict | None:
    """The run's settings: its own, or (an aggregate) the first seed run's."""
    if isinstance(summary.get("config"), dict):
        return summary["config"]
    for run in summary.get("runs") or []:
        if isinstance(run, dict) and isinstance(run.get("config"), dict):
            return run["config"]
        sub = folder / str(run) if isinstance(run, str) else None
        for candidate in [sub / "summary.json", sub / "config.json"] if sub else []:
            data = read_or_none(candidate) if candidate.is_file() else None
            if data:
                return data.get("config", data)
    for seed in summary.get("seeds") or []:
        data = read_or_none(folder / f"seed-{seed}" / "config.json") or (
            read_or_none(folder / f"seed-{seed}" / "summary.json") or {}
        ).get("config")
        if data:
            return data
    return None


def seed_runs(summary: dict, folder: Path) -> list[dict]:
    """An aggregate's per-seed summaries (its ``runs`` entries, or — an entry naming a folder — that seed run's own
    summary); a single run's summary is its own one run."""
    if not isinstance(summary.get("average"), dict):
        return [summary]
    out = []
    for run in summary.get("runs") or []:
        if isinstance(run, str):
            run = read_or_none(folder / run / "summary.json") or {}
        if isinstance(run, dict):
            out.append(run)
    return out


def plans_so_far(root: Path) -> list[tuple[Path, dict]]:
    """(folder, aggregate of the seeds finished so far) for each ``--seeds`` plan under ``root`` (two levels deep)
    that has no summary of its own yet but two finished seeds or more (``seeds.aggregate_so_far``). A plan with a seed
    summary that cannot be read (a FIFO would hang the seeds' reader, deep nesting crash it) is passed over."""
    plans = sorted({f for depth in ("*", "*/*") for f in root.glob(f"{depth}/{SEEDS_FILE}")})
    out = []
    for plan in plans:
        if any(read_or_none(f) is None for f in plan.parent.glob("seed-*/summary.json")):
            continue  # a seed's summary that cannot be read (shown by ``unreadable``): never handed to the seeds' reader
        if not (plan.parent / "summary.json").is_file():
            from .train.seeds import (
                aggregate_so_far,
            )  # late: the trainer's package, only for a --seeds run still training

            agg = aggregate_so_far(plan.parent)
            if agg is not None and len(agg["runs"]) >= 2:
                out.append((plan.parent, agg))
    return out


@dataclass(frozen=True)
class Run:
    """One finished result, read once: a single run's ``summary.json``, a ``--seeds`` aggregate's, or a plan's seeds
    finished so far. What both readers of results place a run by — the explorer's "measured" (``measured.Result``)
    and the score model (``score_model.Observation``) — is read here, each in one place."""

    folder: Path
    summary: dict
    config: dict  # the run's settings (``run_config``: its own, or an aggregate's first seed run's)

    @classmethod
    def of(cls, summary: dict | None, folder: Path) -> Run | None:
        """The run, or None for what is no finished result: no settings, no dev average (an aggregate's without a
        mean). Whether its numbers can be true is ``problem``'s to say."""
        if not summary:
            return None
        config = run_config(summary, folder)
        if not config:
            return None
        avg = summary.get("average")
        if (avg.get("mean") if isinstance(avg, dict) else avg) is None:
            return None
        return cls(folder, summary, config)

    @property
    def adapter(self) -> dict:
        a = self.config.get("adapter")
        return a if isinstance(a, dict) else {}

    @property
    def method(self) -> str:
        m = self.adapter.get("method") or self.config.get("method")
        return m if isinstance(m, str) else ""

    @property
    def location(self) -> str:
        """Where its adapters sit, as text: "all" (none given), "top", "3,5"."""
        loc = self.adapter.get("location")
        return "all" if loc is None else (loc if isinstance(loc, str) else ",".join(map(str, loc)))

    @property
    def d_s(self) -> int | None:
        d = self.adapter.get("d_s")
        return d if isinstance(d, int) and not isinstance(d, bool) else None

    @property
    def freeze_trunk(self) -> bool:
        return bool(self.adapter.get("freeze_trunk"))

    @property
    def model(self) -> str | None:
        """Its ``pals-train --model`` (None = the embedded MiniLM)."""
        return self.config.get("model")

    @property
    def tasks(self) -> tuple[str, ...]:
        names = self.config.get("tasks") or []
        return tuple(names.split(",") if isinstance(names, str) else map(str, names))

    @property
    def steps(self) -> int | None:
        return next((s for s in (self.summary.get("steps"), self.config.get("steps")) if isinstance(s, int)), None)

    @property
    def aggregate(self) -> bool:
        """An aggregate over seeds (its ``average`` is {"mean", "std", "ci95"})."""
        return isinstance(self.summary.get("average"), dict)

    @cached_property
    def seed_runs(self) -> tuple[dict, ...]:
        """Its seed runs' summaries (``seed_runs``; a single run: itself)."""
        return tuple(seed_runs(self.summary, self.folder))

    @cached_property
    def averages(self) -> tuple[float, ...]:
        """The dev average (0–100) of each seed run that has one."""
        return tuple(SCALE * r["average"] for r in self.seed_runs if isinstance(r.get("average"), (int, float)))

    @cached_property
    def task_keys(self) -> tuple[str, ...]:
        """What its tasks are (``config.task_keys``: fingerprints), in ``tasks`` order."""
        from .train.config import task_keys  # late: the trainer's package, only when a run is placed

        return tuple(task_keys({**self.config, "tasks": list(self.tasks)}))

    @cached_property
    def recipe(self) -> str:
        """How it was trained, apart from design and seed (``config.recipe``), as sorted JSON: runs of one recipe
        differ only in what they adapt."""
        from .train.config import recipe  # late: the trainer's package, only when a run is placed

        return json.dumps(recipe(self.config), sort_keys=True, default=str)

    @cached_property
    def design(self) -> str:
        """Every design setting its method reads but the size and those a fitted curve holds apart (method,
        location, trunk), as sorted JSON (``design_settings``): runs of one design and one recipe differ only in their
        size and seed."""
        return design_settings({**self.adapter, "method": self.method})

    @cached_property
    def identity(self) -> str:
        """What the run is — its whole design (size included), recipe, tasks' fingerprints, seeds and its own folder
        as it recorded it (``config.out``; an aggregate: none, its seeds say it) — as JSON: copies of one run are
        one run, whatever else their bytes hold (a wall time, a path they were copied to)."""
        seeds = self.summary.get("seeds") if self.aggregate else [self.config.get("seed")]
        own = {"method": self.method, "location": self.location, "d_s": self.d_s, "trunk": self.freeze_trunk}
        out = None if self.aggregate else self.config.get("out")
        parts = [own, self.design, self.recipe, list(self.task_keys), seeds, out]
        return json.dumps(parts, sort_keys=True, default=str)


SIZE_AND_OWN = ("d_s", "method", "location", "freeze_trunk")  # the size, and what a fitted curve holds apart


def read_settings(method: object) -> tuple[str, ...]:
    """The ``AdapterConfig`` settings a run of ``method`` reads besides ``SIZE_AND_OWN``: those every method reads
    (``pricing.method.EVERY_METHOD_READS``) and its own (``Method.settings``, declared in its ``cost.py``); a method
    the calculator does not know, every setting (its runs are told apart by all of them)."""
    known = METHODS.get(method) if isinstance(method, str) else None
    if known is None:
        return tuple(f.name for f in fields(AdapterConfig) if f.name not in SIZE_AND_OWN)
    return (*EVERY_METHOD_READS, *known.settings)


def design_settings(adapter: Mapping) -> str:
    """The ``AdapterConfig`` settings of ``adapter`` (a run's ``config.adapter``, or ``AdapterConfig.as_dict()``)
    that its method reads but ``SIZE_AND_OWN`` (``read_settings``), as sorted JSON: two runs of one method differ in
    design only where the method reads a setting (``--lora-alpha`` parts LoRA runs, not Houlsby runs). One a run did
    not record is its default, and a number is compared as a number (128 and 128.0 are one setting)."""
    read = set(read_settings(adapter.get("method", AdapterConfig.default("method"))))
    out = {}
    for f in fields(AdapterConfig):
        if f.name not in read:
            continue
        default = f.default if f.default is not MISSING else None
        value = adapter.get(f.name, default)
        out[f.name] = float(value) if _number(value) else value
    return json.dumps(out, sort_keys=True, default=str)


def of_design(question: Mapping | None, method: str, design: str) -> bool:
    """Whether a run of ``method`` with design settings ``design`` (``design_settings``) was trained with the
    question's settings ``question`` (``AdapterConfig.as_dict()`` of the question; None: any) — compared on the
    settings ``method`` reads, so a question's ``lora_alpha`` leaves its Houlsby rows' runs in place."""
    return question is None or design == design_settings({**question, "method": method})


# --- whether a run's numbers can be true ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PassedOver:
    """A finished run whose numbers cannot be true (``problem``): not counted; ``reason`` one line naming the field."""

    folder: str
    reason: str


TOLERANCE = 1e-9  # a fraction written as 1.0000000000000002 is still 1


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _shown(v) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, float) else f"{v:g}"
    return text if len(text) <= 40 else text[:37] + "…"


def _value_problem(what: str, v, bounds: tuple[float, float] | None) -> str | None:
    """Why ``v`` cannot be ``what`` (not a number, not finite, outside ``bounds``), or None."""
    if not _number(v):
        return f"{what} {_shown(v)} is not a number"
    if not math.isfinite(v):
        return f"{what} {_shown(v)} is not finite"
    if bounds is not None and not bounds[0] - TOLERANCE <= v <= bounds[1] + TOLERANCE:
        lo, hi = bounds
        return f"{what} {v:g} is outside its range [{lo:g}, {hi:g}]"
    return None


def _spread_problem(what: str, v) -> str | None:
    """A standard deviation or a ci95: none (one seed), or a finite number ≥ 0."""
    return None if v is None else _value_problem(what, v, (0.0, math.inf))


def _metric_bounds(kind, metric: str) -> tuple[float, float] | None:
    """The range of ``metric`` as ``kind`` declares it; a metric of one of several dev sets (GLUE MNLI's
    ``accuracy_m``) is its metric's; one the kind does not report, the kind that declares it (a run recorded before
    its tasks' kinds were)."""
    splits = {s for t in GLUE_TASKS.values() for s in t.dev_splits if s}
    base, _, split = metric.rpartition("_")
    names = [metric, base] if split in splits else [metric]
    for k in [kind, *(get_kind(p) for p in PACKAGES)]:
        for name in names:
            bounds = k.metric_range(name) if k is not None else None
            if bounds is not None:
                return bounds
    return None


def _task_kind(summary: dict, config: dict, task: str):
    """(kind, main metric) of ``task`` as the run recorded them (``summary.tasks``, ``config.data.<task>.record``),
    else GLUE's built-in task of that name, else the default kind; ``ValueError`` for a kind this checkout lacks."""
    info = summary.get("tasks") if isinstance(summary.get("tasks"), dict) else {}
    info = info.get(task) if isinstance(info.get(task), dict) else {}
    record = ((config.get("data") or {}).get(task) or {}).get("record") or {}
    glue = GLUE_TASKS.get(task)
    name = info.get("kind") or record.get("kind") or (glue.kind if glue else DEFAULT_KIND)
    metric = info.get("metric") or record.get("metric") or (glue.main if glue else None)
    kind = get_kind(str(name))
    return kind, metric if isinstance(metric, str) else kind.default_metric


def _config_problem(config: dict) -> str | None:
    """Why ``config`` is not the settings ``pals-train`` writes, in the fields a run is placed by; or None."""
    tasks = config.get("tasks")
    if not (isinstance(tasks, str) and tasks.strip()) and not (
        isinstance(tasks, list) and tasks and all(isinstance(t, str) and t for t in tasks)
    ):
        return f"config.tasks {_shown(tasks)} is not a list of task names"
    data = config.get("data")
    if data is not None and not isinstance(data, dict):
        return f"config.data {_shown(data)} is not an object"
    for t, d in (data or {}).items():
        if d is not None and not isinstance(d, dict):
            return f"config.data.{t} {_shown(d)} is not an object"
        for key in ("fingerprint", "record"):
            v = (d or {}).get(key)
            if v is not None and not isinstance(v, str if key == "fingerprint" else dict):
                return f"config.data.{t}.{key} {_shown(v)} is not {'a text' if key == 'fingerprint' else 'an object'}"
    adapter = config.get("adapter")
    if not isinstance(adapter, dict):
        return f"config.adapter {_shown(adapter)} is not an object"
    method = adapter.get("method")
    if not isinstance(method, str) or not method:
        return f"config.adapter.method {_shown(method)} is not a method's name"
    d_s = adapter.get("d_s")
    if d_s is not None and (not isinstance(d_s, int) or isinstance(d_s, bool) or not 1 <= d_s <= MAX_D_S):
        return f"config.adapter.d_s {_shown(d_s)} is not an integer from 1 to {MAX_D_S:,} (the calculator's limit)"
    loc = adapter.get("location")
    if not (loc is None or isinstance(loc, str) or (isinstance(loc, list) and all(type(i) is int for i in loc))):
        return f"config.adapter.location {_shown(loc)} is not all, top, bottom or a list of layers"
    if adapter.get("freeze_trunk") not in (None, True, False):
        return f"config.adapter.freeze_trunk {_shown(adapter.get('freeze_trunk'))} is not true or false"
    if config.get("model") is not None and not isinstance(config.get("model"), str):
        return f"config.model {_shown(config.get('model'))} is not a model's name"
    for key in ("steps", "seed"):
        v = config.get(key)
        if v is not None and (type(v) is not int or v < 0):
            return f"config.{key} {_shown(v)} is not a count"
    return None


def _scores_problem(where: str, scores, kinds: Mapping, aggregate: bool) -> str | None:
    """Why a run's ``scores`` ({task: {metric: fraction}}; an aggregate's {task: {metric: {mean, std, ci95}}})
    cannot be true, or None."""
    if scores is None:
        return None
    if not isinstance(scores, dict):
        return f"{where} {_shown(scores)} is not an object"
    for task, metrics in scores.items():
        if not isinstance(metrics, dict):
            return f"{where}.{task} {_shown(metrics)} is not an object"
        for metric, v in metrics.items():
            bounds = _metric_bounds(kinds.get(task), str(metric))
            if bounds is None:
                return f"{where}.{task}.{metric}: no task kind reports a metric of that name"
            name = f"{where}.{task}.{metric}"
            if aggregate:
                if not isinstance(v, dict):
                    return f"{name} {_shown(v)} is not a mean over seeds"
                why = _value_problem(f"{name}.mean", v.get("mean"), bounds) or next(
                    (w for k in ("std", "ci95") if (w := _spread_problem(f"{name}.{k}", v.get(k)))), None
                )
            else:
                why = _value_problem(name, v, bounds)
            if why:
                return why
    return None


def problem(run: Run) -> str | None:
    """Why ``run``'s numbers cannot be true, in one line naming the field, or None: ``config`` of the right shape
    (``_config_problem``), the dev average finite and inside the mean of its tasks' main-metric ranges (an
    aggregate's mean; its std and ci95 none or finite ≥ 0), every seed run's average and every task metric finite
    and inside its metric's range, the parameter count and the steps counts."""
    summary, config = run.summary, run.config
    why = _config_problem(config)
    if why:
        return why
    try:
        kinds = {t: _task_kind(summary, config, t) for t in run.tasks}
    except ValueError as e:
        return " ".join(str(e).split())
    mains = [_metric_bounds(kind, metric) or kind.metric_range(kind.default_metric) for kind, metric in kinds.values()]
    bounds = (sum(b[0] for b in mains) / len(mains), sum(b[1] for b in mains) / len(mains))
    by_kind = {t: k for t, (k, _) in kinds.items()}
    avg = summary.get("average")
    if run.aggregate:
        why = _value_problem("average.mean", avg.get("mean"), bounds) or next(
            (w for k in ("std", "ci95") if (w := _spread_problem(f"average.{k}", avg.get(k)))), None
        )
        why = why or _scores_problem("scores", summary.get("scores"), by_kind, aggregate=True)
        for i, seed in enumerate(run.seed_runs):
            if why:
                break
            why = _value_problem(f"runs[{i}].average", seed.get("average"), bounds) or _scores_problem(
                f"runs[{i}].scores", seed.get("scores"), by_kind, aggregate=False
            )
    else:
        why = _value_problem("average", avg, bounds) or _scores_problem(
            "scores", summary.get("scores"), by_kind, aggregate=False
        )
    if why:
        return why
    params = summary.get("params")
    if params is not None and not isinstance(params, dict):
        return f"params {_shown(params)} is not an object"
    ts = (params or {}).get("task_specific")
    if ts is not None:
        why = _value_problem("params.task_specific", ts, (0.0, math.inf))
        if why or ts != int(ts):
            return why or f"params.task_specific {ts:g} is not a count"
    steps = summary.get("steps")
    if steps is not None and (type(steps) is not int or steps < 0):
        return f"steps {_shown(steps)} is not a count"
    return None


def checked(summary: dict | None, folder: Path, passed_over: list[PassedOver] | None = None) -> Run | None:
    """The finished run of ``summary`` (``Run.of``) if its numbers can be true (``problem``); else None, and — when
    it is a finished run whose numbers cannot be true — a ``PassedOver`` added to ``passed_over``."""
    run = Run.of(summary, folder)
    why = problem(run) if run is not None else None
    if why is not None and passed_over is not None:
        passed_over.append(PassedOver(str(folder), why))
    return run if why is None else None


def runs(roots: Iterable[Path], passed_over: list[PassedOver] | None = None) -> list[Run]:
    """Every finished result under ``roots`` (``DEPTH`` levels deep) whose numbers can be true, aggregates in place
    of their seed runs, each run once (``Run.identity``: a copy under a later root, or beside it, is skipped), each
    ``summary.json`` read once. A run whose numbers cannot be true is added to ``passed_over`` (each once)."""
    seen: set[Path] = set()
    identities: set[str] = set()
    out: list[Run] = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for folder, found in [*plans_so_far(root), *((f.parent, f) for f in summary_files(root))]:
            resolved = folder.resolve()
            if resolved in seen or any(p in seen for p in resolved.parents):
                continue  # a run inside an aggregate already read (a seed, a separate seed's task): not read
            summary = read_or_none(found) if isinstance(found, Path) else found
            run = Run.of(summary, folder)
            if run is None:
                continue
            seen.add(resolved)
            why = problem(run)
            if why is not None:
                if passed_over is not None:
                    passed_over.append(PassedOver(str(folder), why))
            elif run.identity not in identities:  # the first root's copy is the one kept
                identities.add(run.identity)
                out.append(run)
    return out


def question_keys(records: Sequence[TaskRecord], glue_dir: str | None = None) -> list[str]:
    """The question's tasks as what they are: the fingerprint the trainer records for each (``describe_data``:
    ``glue:<name>`` for GLUE's, the sha256 of the record and its files' contents for one's own)."""
    if all(r.glue is not None for r in records):
        return [f"glue:{r.glue}" for r in records]
    from .data.load import describe_data  # late: loads numpy and datasets (a file's fingerprint)

    data = describe_data(list(records), glue_dir=glue_dir)
    return [data[r.name]["fingerprint"] for r in records]
