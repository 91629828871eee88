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
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic import read_json_file

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
        """The run, or None for what is no finished result: no settings, no method, no dev average (a number, or an
        aggregate's {"mean": number})."""
        if not summary:
            return None
        config = run_config(summary, folder)
        if not config:
            return None
        avg = summary.get("average")
        mean = avg.get("mean") if isinstance(avg, dict) else avg
        if not isinstance(mean, (int, float)) or isinstance(mean, bool):
            return None
        run = cls(folder, summary, config)
        return run if run.method else None

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


def runs(roots: Iterable[Path]) -> list[Run]:
    """Every finished result under ``roots`` (``DEPTH`` levels deep), aggregates in place of their seed runs, each
    summary once (an identical copy under a later root is skipped), each ``summary.json`` read once."""
    seen: set[Path] = set()
    contents: set[str] = set()
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
            content = json.dumps(summary, sort_keys=True)
            if content not in contents:  # the first root's copy is the one kept
                contents.add(content)
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
