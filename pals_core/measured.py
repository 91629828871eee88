"""What the budget bought, measured: finished runs on disk for the question's model and tasks. No maths.

A result is one ``summary.json`` written by ``pals-train``: a single run's (``average`` is a number,
``config`` holds the run's settings) or the aggregate of ``pals-train --seeds`` (docs/design.md "Baselines and repeated
runs": ``average`` = {"mean", "std", "ci95"}, with one run per seed under ``seed-<k>/``). Scores are shown on one
scale, 0–100, as the CLI prints them. The majority-class reference comes from the tasks' own rows — GLUE's files,
or a tasks file's (``pals_core.data.load.raw_splits``) — by ``pals_core.data.metrics.rows_majority``, as the profile
scores it: each kind's trivial baseline (the most frequent training label on every dev example; regression: the
training mean; multilabel: per label; tags: every word "O").

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

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .budget.recommend import Key, Score, label
from .methods.registry import get_method
from .results import DEPTH, SCALE, Run, read_summary, runs
from .results import read_or_none as _read
from .results import summary_files as _summary_files
from .supervise.roots import runs_root
from .tasks.record import TaskRecord
from .train.aggregate import compare

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SMOKE_STEPS = 100  # a run of fewer training steps is a smoke run: a check that training runs, not a measurement


def default_roots() -> tuple[Path, ...]:
    """Where finished runs are looked for when nobody says: the runs folder (``$PALS_RUNS_DIR`` or ./runs) and this
    checkout's ``benchmarks/results`` — the explorer's and ``pals-budget``'s."""
    return (runs_root(), RESULTS)


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
    location: str | None
    d_s: int | None
    model: str | None  # the run's --model (None = the embedded MiniLM)
    tasks: tuple[str, ...]
    params: int | None  # task-specific parameters (summary ``params.task_specific``)
    score: Score  # dev average, 0–100
    scores: dict  # {task: {metric: value}} (single runs: fractions; aggregates: {"mean", …})
    steps: int | None
    seed: int | None = None  # a single run's seed (an aggregate has several: None)
    seeds: tuple[int, ...] = ()  # an aggregate's seeds
    planned: tuple[int, ...] = ()  # a --seeds run still training: the seeds it will have (``seeds`` are done so far)
    per_seed: tuple[float, ...] = ()  # the dev average (0–100) of each seed run behind ``score``
    recipe: str = ""  # how it was trained, apart from design and seed (``config.recipe``, as sorted JSON)
    task_keys: tuple[str, ...] = ()  # what its tasks are (``config.task_keys``: fingerprints), in ``tasks`` order
    untrained: tuple[str, ...] = ()  # tasks no training step reached (summary ``untrained``): an untrained head's score
    design_settings: str = ""  # every other design setting (``results.design_settings``), as sorted JSON
    freeze_trunk: bool = False  # trained with the base model frozen

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


def parse(run: Run) -> Result:
    """What the page shows of a finished run (``results.Run``: read, and placed, by the one reader of results)."""
    summary, avg = run.summary, run.summary["average"]
    if run.aggregate:
        ci = avg.get("ci95")
        n = len(summary.get("seeds") or summary.get("runs") or []) or 1
        score = Score(SCALE * avg["mean"], SCALE * ci if isinstance(ci, (int, float)) else None, n)
    else:
        score = Score(SCALE * avg, None, 1)
    try:
        within = get_method(run.method).within
    except ValueError:
        within = False  # a reference the calculator does not price (separate fine-tuned models)
    params = summary.get("params") if isinstance(summary.get("params"), dict) else {}
    ts = params.get("task_specific")
    seed = run.config.get("seed")
    return Result(
        str(run.folder),
        run.method,
        run.location if within else None,
        run.d_s,
        run.model,
        run.tasks,
        int(ts) if isinstance(ts, (int, float)) else None,
        score,
        summary.get("scores") if isinstance(summary.get("scores"), dict) else {},
        run.steps,
        seed if isinstance(seed, int) and not run.aggregate else None,
        _ints(summary.get("seeds")) if run.aggregate else (),
        _ints(summary.get("planned")) if run.aggregate else (),
        run.averages if len(run.averages) == score.n else (),
        run.recipe,
        run.task_keys,
        _untrained(summary),
        run.design,
        run.freeze_trunk,
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


def scan(roots: Iterable[Path]) -> list[Result]:
    """Every finished result under ``roots`` (three levels deep), aggregates in place of their seed runs — a
    ``--seeds`` run still training by the seeds it has finished, once it has two — each summary once (an
    identical copy under a later root is skipped): ``pals_core.results.runs``."""
    return [parse(run) for run in runs(roots)]


def same_question(
    results: Sequence[Result], train_model: str | None, trainable: bool, tasks: Sequence[str]
) -> list[Result]:
    """Results on the question's model (only a model the trainer builds can have any) and exactly its tasks:
    ``tasks`` are fingerprints (``question_keys``; a bare GLUE name stands for ``glue:<name>``), compared as a set
    with the runs' ``task_keys``, whatever the tasks were called."""
    if not trainable:
        return []
    want = sorted(k if ":" in k else f"glue:{k}" for k in tasks)
    return [r for r in results if r.model == train_model and sorted(r.task_keys) == want]


def against(r: Result, results: Sequence[Result], baseline: str) -> dict | None:
    """``r``'s dev average less the ``baseline`` method's trained alike (the same recipe; of several, the one with
    the most seeds), in points: ``aggregate.compare``'s {"diff", "low", "high", "df", "p"} — None unless both
    have two seeds or more (a single run has no spread to test against)."""
    if r.method == baseline or len(r.per_seed) < 2:
        return None
    alike = [x for x in results if x.method == baseline and x.recipe == r.recipe and len(x.per_seed) >= 2]
    if not alike:
        return None
    return compare(r.per_seed, max(alike, key=lambda x: len(x.per_seed)).per_seed)


def pooled(results: Sequence[Result]) -> list[Result]:
    """The results of one size of one design trained alike (method, location, d_s, trunk, the other design settings,
    recipe, steps) as one: its score the mean over all their seeds' dev averages with its 95 % t-interval
    (``aggregate.seed_stats``) — three ``pals-train --seed N`` runs, or an aggregate of two seeds and a third run
    beside it, are that size's mean over three seeds, never its best seed. A result whose seeds' averages are not
    known one by one stands alone."""
    from .train.aggregate import seed_stats  # late: scipy's t quantile, only where several seeds are pooled

    groups: dict[tuple, list[Result]] = {}
    alone: list[Result] = []
    for r in results:
        if len(r.per_seed) != r.score.n:
            alone.append(r)
            continue
        key = (r.method, r.location, r.d_s, r.freeze_trunk, r.design_settings, r.recipe, r.steps, r.model)
        groups.setdefault(key, []).append(r)
    out = list(alone)
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        values = [v for r in group for v in r.per_seed]
        stats = seed_stats(values)
        seeds = tuple(k for r in group for k in ((r.seed,) if r.seed is not None else r.seeds))
        score = replace(group[0].score, mean=stats["mean"], ci95=stats["ci95"], n=len(values))
        out.append(replace(group[0], score=score, seed=None, seeds=seeds, planned=(), per_seed=tuple(values)))
    return out


def best_by_design(results: Sequence[Result], design: str | None = None) -> dict[Key, Score]:
    """Per design (method @ location), the size with the most runs behind it (then the best mean; each size's score
    the mean over its seeds: ``pooled``), a measurement before a smoke run: what the recommendation reads (a smoke
    run's score is shown, labelled, and ranks nothing). With ``design`` (``results.design_settings`` of the
    question's settings), only results of those settings. References (separate models) are not designs of the
    table."""
    out: dict[Key, Score] = {}
    mine = [r for r in results if r.method not in REFERENCES and (design is None or r.design_settings == design)]
    for r in pooled(mine):
        old = out.get(r.key)
        if old is None or (not r.smoke, r.score.n, r.score.mean) > (not old.smoke, old.n, old.mean):
            out[r.key] = replace(
                r.score, d_s=r.d_s, steps=r.steps if r.smoke else None
            )  # the size measured travels with it
    return out


def majority_average(tasks: Sequence[TaskRecord | str], glue_dir: str | None = None, seed: int = 0) -> float | None:
    """The majority-class dev average (0–100) of ``tasks`` (records, or GLUE names), from their rows: GLUE's files
    (None if they are not there), or a tasks file's (the dev split a run of ``seed`` draws where there is no dev
    file). ``ValueError`` (a ``TaskDataError``) names a bad file, row or column."""
    from pals_core.data.glue_rows import missing_files, resolve_glue_dir  # late: the data path, only for a baseline
    from pals_core.data.load import raw_splits  # late: loads numpy and datasets
    from pals_core.data.metrics import dev_average, rows_majority  # late: loads numpy, scikit-learn
    from pals_core.tasks.glue_tasks import glue_record  # late: with the data path above

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
        train = splits.pop("train").labels
        dev = {key[len("dev_") :] if key.startswith("dev_") else "": s.labels for key, s in splits.items()}
        scores[r.name] = rows_majority(r, train, dev, names)
    avg = dev_average(scores, {r.name: r for r in records})
    return None if avg is None else SCALE * avg
