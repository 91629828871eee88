"""What the budget bought, measured: finished runs on disk for the question's model and tasks. No maths.

A result is one ``summary.json`` written by ``pals-train``: a single run's (``average`` is a number,
``config`` holds the run's settings) or the aggregate of ``pals-train --seeds`` (docs/design.md §11:
``average`` = {"mean", "std", "ci95"}, with one run per seed under ``seed-<k>/``). Scores are shown on one
scale, 0–100, as the CLI prints them. The majority-class reference comes from the tasks' own rows — GLUE's files,
or a tasks file's (``pals_core.data.load.raw_splits``) — by ``pals_core.data.metrics.majority_scores``: the most
frequent training label on every dev example (regression: the training mean; multilabel: per label).

A result belongs to a question when it trained the question's model on exactly its tasks, told by what the tasks
*are* — their fingerprints (``pals_core.train.config.task_keys``: ``glue:rte``, or the sha256 of a record and its
files) — not by their names: a task renamed in a tasks file is the same task, a file edited is another.

Folders searched: the runs folder (``$PALS_RUNS_DIR``) and ``benchmarks/results`` of this checkout, three levels
deep (a sweep's ``<sweep>/<design>/seed-<k>/``); a seed run inside an aggregate is represented by the aggregate, and
a seed run whose aggregate is not written yet (a sweep still running) stands for itself. The same summary in two
places (a sweep's run and the copy it commits under ``benchmarks/results``) is one result, shown at the first root's path.

A multi-seed result is set against the ``shared`` and ``separate`` results trained alike (the same
``recipe``: model, tasks, steps, batch, lr, sampling, …) by ``pals_core.train.aggregate.compare``: the
difference of the dev averages with its 95 % Welch interval (``against``).

A ``summary.json`` that cannot be read (not JSON, nested past Python's depth, a folder or a FIFO of that name, no
permission) is no result: ``scan`` passes over it, and ``unreadable`` names it with its reason for the page to show
on its own row.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Optional, Sequence

from pals_core.atomic import read_json_file
from pals_core.budget import get_method
from pals_core.train.aggregate import compare
from pals_core.tasks import TaskRecord
from pals_core.train.config import recipe, task_keys
from pals_core.train.seeds import SEEDS_FILE, aggregate_so_far

from .calc import Key, label
from .recommend import Score

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SCALE = 100.0  # summaries hold fractions; the page and the CLI show 0–100
SMOKE_STEPS = 100  # a run of fewer training steps is a smoke run: a check that training runs, not a measurement


def score_text(fraction) -> str:
    """One run's score as the page and ``pals-train``'s closing table write it: 0–100, two decimals ('61.20'); '—'
    for anything that is not a number."""
    ok = isinstance(fraction, (int, float)) and not isinstance(fraction, bool) and fraction == fraction
    return f"{SCALE * fraction:.2f}" if ok else "—"


def smoke(steps) -> bool:
    """Whether a run of ``steps`` training steps is a smoke run (fewer than ``SMOKE_STEPS``)."""
    return isinstance(steps, int) and not isinstance(steps, bool) and 0 <= steps < SMOKE_STEPS


REFERENCES = ("separate",)  # methods the trainer runs as references beside the adapters
BASELINES = ("shared", "separate")  # the reference points a design is placed against: no adapter, T models


@dataclass(frozen=True)
class Result:
    """One measured design: a run, or the aggregate of several seeds of it."""

    path: str
    method: str
    location: Optional[str]
    d_s: Optional[int]
    model: Optional[str]  # the run's --model (None = the embedded MiniLM)
    tasks: tuple[str, ...]
    params: Optional[int]  # task-specific parameters (summary ``params.task_specific``)
    score: Score  # dev average, 0–100
    scores: dict  # {task: {metric: value}} (single runs: fractions; aggregates: {"mean", …})
    steps: Optional[int]
    seed: Optional[int] = None  # a single run's seed (an aggregate has several: None)
    seeds: tuple[int, ...] = ()  # an aggregate's seeds
    planned: tuple[int, ...] = ()  # a --seeds run still training: the seeds it will have (``seeds`` are done so far)
    per_seed: tuple[float, ...] = ()  # the dev average (0–100) of each seed run behind ``score``
    recipe: str = ""  # how it was trained, apart from design and seed (``config.recipe``, as sorted JSON)
    task_keys: tuple[str, ...] = ()  # what its tasks are (``config.task_keys``: fingerprints), in ``tasks`` order
    untrained: tuple[str, ...] = ()  # tasks no training step reached (summary ``untrained``): an untrained head's score

    @property
    def smoke(self) -> bool:
        """A smoke run (fewer than ``SMOKE_STEPS`` steps): shown apart, never ranked with the measured."""
        return smoke(self.steps)

    def note(self) -> str:
        """What a reader must know before trusting the score: a smoke run, tasks left untrained; '—' when nothing."""
        parts = [f"smoke run ({self.steps} steps)"] if self.smoke else []
        if self.untrained:
            parts.append(f"untrained: {', '.join(self.untrained)}")
        return "; ".join(parts) or "—"

    @property
    def key(self) -> Key:
        return self.method, self.location

    @property
    def design(self) -> str:
        return label(self.key) + ("" if self.d_s is None else f", d_s {self.d_s}")

    def runs_label(self) -> str:
        """'seed 0' (one run), '3 runs', or '2 of 3 seeds so far' (a --seeds run still training)."""
        if self.score.n == 1 and self.seed is not None:
            return f"seed {self.seed}"
        return f"{len(self.seeds)} of {len(self.planned)} seeds so far" if self.planned else self.score.runs()

    def seeds_label(self) -> str:
        """The seed column: '0', '0, 1, 2', or '0, 1 of 0, 1, 2' (so far); — where unknown."""
        if self.seed is not None:
            return str(self.seed)
        done = ", ".join(map(str, self.seeds)) or "—"
        return f"{done} of {', '.join(map(str, self.planned))}" if self.planned else done


@dataclass(frozen=True)
class Unreadable:
    """A ``summary.json`` that cannot be read (not JSON, nested too deeply, a folder, a FIFO, no permission, …):
    ``folder`` is its run folder, ``reason`` one line without the path."""

    folder: str
    reason: str


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


def _read(path: Path) -> Optional[dict]:
    try:
        return read_summary(path)
    except ValueError:
        return None


DEPTH = 3  # run folders searched: <root>/<run>, a --seeds run's <root>/<run>/seed-<k>, a sweep's <root>/<sweep>/<design>/seed-<k>


def _summary_files(root: Path, depth: int = DEPTH) -> list[Path]:
    """Every ``summary.json`` in the folders ``depth`` levels under ``root``, shallowest first (a folder, a FIFO or a
    broken symbolic link of that name too: it is an unreadable summary)."""
    patterns = ["/".join(["*"] * n) for n in range(1, depth + 1)]
    found = {d / "summary.json" for pattern in patterns for d in root.glob(pattern) if d.is_dir()}
    return sorted(
        (f for f in found if os.path.lexists(f)), key=lambda p: (len(p.parts), str(p))
    )  # lexists: a broken link too


def unreadable(roots: Iterable[Path], depth: int = DEPTH) -> list[Unreadable]:
    """The summaries in the run folders ``depth`` levels under ``roots`` that cannot be read, each with its reason:
    shown on their own rows, never a reason for the rest of the page to fail."""
    out = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for f in _summary_files(root, depth):
            try:
                read_summary(f)
            except ValueError as e:
                out.append(Unreadable(str(f.parent), str(e)))
    return out


def _config(summary: dict, folder: Path) -> Optional[dict]:
    """The run's settings: its own, or (an aggregate) the first seed run's."""
    if isinstance(summary.get("config"), dict):
        return summary["config"]
    for run in summary.get("runs") or []:
        if isinstance(run, dict) and isinstance(run.get("config"), dict):
            return run["config"]
        sub = folder / str(run) if isinstance(run, str) else None
        for candidate in [sub / "summary.json", sub / "config.json"] if sub else []:
            data = _read(candidate) if candidate.is_file() else None
            if data:
                return data.get("config", data)
    for seed in summary.get("seeds") or []:
        data = _read(folder / f"seed-{seed}" / "config.json") or (
            _read(folder / f"seed-{seed}" / "summary.json") or {}
        ).get("config")
        if data:
            return data
    return None


def _seed_averages(summary: dict, folder: Path) -> tuple[float, ...]:
    """An aggregate's per-seed dev averages (0–100): from its ``runs`` entries, or (an entry naming a folder)
    that seed run's own summary."""
    out = []
    for run in summary.get("runs") or []:
        if isinstance(run, str):
            run = _read(folder / run / "summary.json") or {}
        avg = run.get("average") if isinstance(run, dict) else None
        if isinstance(avg, (int, float)):
            out.append(SCALE * avg)
    return tuple(out)


def parse(summary: dict, folder: Path) -> Optional[Result]:
    """A summary.json → a Result (None if it is not a finished run the explorer can place)."""
    config = _config(summary, folder)
    avg = summary.get("average")
    if not config or avg is None:
        return None
    if isinstance(avg, dict):
        if not isinstance(avg.get("mean"), (int, float)):
            return None
        ci = avg.get("ci95")
        n = len(summary.get("seeds") or summary.get("runs") or []) or 1
        score = Score(SCALE * avg["mean"], SCALE * ci if isinstance(ci, (int, float)) else None, n)
        per_seed = _seed_averages(summary, folder)
    elif isinstance(avg, (int, float)):
        score, per_seed = Score(SCALE * avg, None, 1), (SCALE * avg,)
    else:
        return None
    adapter = config.get("adapter") if isinstance(config.get("adapter"), dict) else {}
    method = str(adapter.get("method") or config.get("method") or "")
    if not method:
        return None
    location = adapter.get("location")
    try:
        within = get_method(method).within
    except ValueError:
        within = False  # a reference the calculator does not price (separate fine-tuned models)
    if within:
        location = (
            "all" if location is None else (location if isinstance(location, str) else ",".join(map(str, location)))
        )
    else:
        location = None
    tasks = config.get("tasks") or []
    tasks = tuple(tasks.split(",") if isinstance(tasks, str) else map(str, tasks))
    params = summary.get("params") if isinstance(summary.get("params"), dict) else {}
    ts = params.get("task_specific")
    d_s = adapter.get("d_s")
    return Result(
        str(folder),
        method,
        location,
        d_s if isinstance(d_s, int) else None,
        config.get("model"),
        tasks,
        int(ts) if isinstance(ts, (int, float)) else None,
        score,
        summary.get("scores") if isinstance(summary.get("scores"), dict) else {},
        next((s for s in (summary.get("steps"), config.get("steps")) if isinstance(s, int)), None),
        config.get("seed") if isinstance(config.get("seed"), int) and not isinstance(avg, dict) else None,
        _ints(summary.get("seeds")) if isinstance(avg, dict) else (),
        _ints(summary.get("planned")) if isinstance(avg, dict) else (),
        per_seed if len(per_seed) == score.n else (),
        json.dumps(recipe(config), sort_keys=True, default=str),
        tuple(task_keys({**config, "tasks": list(tasks)})),
        _untrained(summary),
    )


def _untrained(summary: dict) -> tuple[str, ...]:
    """The tasks no training step reached (``summary.json``'s ``untrained``; an aggregate: any seed run's, read from
    its folder)."""
    names = summary.get("untrained")
    if isinstance(names, list):
        return tuple(str(n) for n in names)
    out: list[str] = []
    for run in summary.get("runs") or []:
        folder = run.get("dir") if isinstance(run, dict) else None
        data = (
            _read(Path(folder) / "summary.json")
            if isinstance(folder, str) and os.path.isfile(os.path.join(folder, "summary.json"))
            else None
        )
        names = (data or {}).get("untrained")
        out += [str(n) for n in names] if isinstance(names, list) else []
    return tuple(dict.fromkeys(out))


def _ints(value) -> tuple[int, ...]:
    return tuple(value) if isinstance(value, list) and all(isinstance(v, int) for v in value) else ()


def _so_far(root: Path) -> list[tuple[Path, dict]]:
    """(folder, aggregate of the seeds finished so far) for each ``--seeds`` plan under ``root`` (two levels deep)
    that has no summary of its own yet but two finished seeds or more (``seeds.aggregate_so_far``). A plan with a seed
    summary that cannot be read (a FIFO would hang the seeds' reader, deep nesting crash it) is passed over."""
    out = []
    for plan in sorted({f for depth in ("*", "*/*") for f in root.glob(f"{depth}/{SEEDS_FILE}")}):
        if any(_read(f) is None for f in plan.parent.glob("seed-*/summary.json")):
            continue  # a seed's summary that cannot be read (shown by ``unreadable``): never handed to the seeds' reader
        if not (plan.parent / "summary.json").is_file():
            agg = aggregate_so_far(plan.parent)
            if agg is not None and len(agg["runs"]) >= 2:
                out.append((plan.parent, agg))
    return out


def scan(roots: Iterable[Path]) -> list[Result]:
    """Every finished result under ``roots`` (three levels deep), aggregates in place of their seed runs — a
    ``--seeds`` run still training by the seeds it has finished, once it has two — each summary once (an
    identical copy under a later root is skipped)."""
    out: list[Result] = []
    seen: set[Path] = set()
    contents: set[str] = (
        set()
    )  # a summary copied elsewhere (a sweep's run and its copy under benchmarks/results) is one result
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for folder, summary in [*_so_far(root), *((f.parent, _read(f)) for f in _summary_files(root))]:
            resolved = folder.resolve()
            if resolved in seen or any(p in seen for p in resolved.parents):
                continue  # a run inside an aggregate already read (a seed, a separate seed's task)
            r = parse(summary, folder) if summary else None
            if r is None:
                continue
            seen.add(resolved)
            content = json.dumps(summary, sort_keys=True)
            if content not in contents:  # the first root's copy is the one shown
                contents.add(content)
                out.append(r)
    return out


def question_keys(records: Sequence[TaskRecord], glue_dir: Optional[str] = None) -> list[str]:
    """The question's tasks as what they are: the fingerprint the trainer records for each (``describe_data``:
    ``glue:<name>`` for GLUE's, the sha256 of the record and its files' contents for one's own)."""
    if all(r.glue is not None for r in records):
        return [f"glue:{r.glue}" for r in records]
    from pals_core.data.load import describe_data

    data = describe_data(list(records), glue_dir=glue_dir)
    return [data[r.name]["fingerprint"] for r in records]


def same_question(
    results: Sequence[Result], train_model: Optional[str], trainable: bool, tasks: Sequence[str]
) -> list[Result]:
    """Results on the question's model (only a model the trainer builds can have any) and exactly its tasks:
    ``tasks`` are fingerprints (``question_keys``; a bare GLUE name stands for ``glue:<name>``), compared as a set
    with the runs' ``task_keys``, whatever the tasks were called."""
    if not trainable:
        return []
    want = sorted(k if ":" in k else f"glue:{k}" for k in tasks)
    return [r for r in results if r.model == train_model and sorted(r.task_keys) == want]


def against(r: Result, results: Sequence[Result], baseline: str) -> Optional[dict]:
    """``r``'s dev average less the ``baseline`` method's trained alike (the same recipe; of several, the one with
    the most seeds), in points: ``aggregate.compare``'s {"diff", "low", "high", "df", "p"} — None unless both
    have two seeds or more (a single run has no spread to test against)."""
    if r.method == baseline or len(r.per_seed) < 2:
        return None
    alike = [x for x in results if x.method == baseline and x.recipe == r.recipe and len(x.per_seed) >= 2]
    if not alike:
        return None
    return compare(r.per_seed, max(alike, key=lambda x: len(x.per_seed)).per_seed)


def best_by_design(results: Sequence[Result]) -> dict[Key, Score]:
    """Per design (method @ location), the result with the most runs behind it (then the best mean), a measurement
    before a smoke run: what the recommendation reads (a smoke run's score is shown, labelled, and ranks nothing).
    References (separate models) are not designs of the table."""
    out: dict[Key, Score] = {}
    for r in results:
        if r.method in REFERENCES:
            continue
        old = out.get(r.key)
        if old is None or (not r.smoke, r.score.n, r.score.mean) > (not old.smoke, old.n, old.mean):
            out[r.key] = replace(
                r.score, d_s=r.d_s, steps=r.steps if r.smoke else None
            )  # the size measured travels with it
    return out


def majority_average(
    tasks: Sequence["TaskRecord | str"], glue_dir: Optional[str] = None, seed: int = 0
) -> Optional[float]:
    """The majority-class dev average (0–100) of ``tasks`` (records, or GLUE names), from their rows: GLUE's files
    (None if they are not there), or a tasks file's (the dev split a run of ``seed`` draws where there is no dev
    file). ``ValueError`` (a ``TaskDataError``) names a bad file, row or column."""
    from pals_core.data.glue import missing_files, resolve_glue_dir
    from pals_core.data.load import label_array, raw_splits
    from pals_core.data.metrics import dev_average, majority_scores
    from pals_core.tasks import glue_record

    records = [t if isinstance(t, TaskRecord) else glue_record(t) for t in tasks]
    if not records:
        return None
    glue = [r.glue for r in records if r.glue is not None]
    path = resolve_glue_dir(glue_dir or None) if glue else None
    if glue and (path is None or missing_files(path, glue)):
        return None
    scores = {}
    for r in records:
        splits, names = raw_splits(
            r, glue_dir=str(path) if r.glue else None, source="files" if r.glue else "auto", seed=seed
        )
        c = r.kind_of.num_outputs(names)
        train = label_array(splits.pop("train").labels, r.kind, c)
        dev = {
            key[len("dev_") :] if key.startswith("dev_") else "": label_array(s.labels, r.kind, c)
            for key, s in splits.items()
        }
        scores[r.name] = majority_scores(r, train, dev, c)
    avg = dev_average(scores, {r.name: r for r in records})
    return None if avg is None else SCALE * avg
