"""What a budget buys before you train: the dev score of a design size that was not measured, predicted from the
sizes that were (docs/design.md "Predicted scores"). Pure Python but for the fit's t quantile (scipy, imported
inside the function that needs it: ``pals-budget`` without ``--results`` never loads it).

A *family* is everything but the size: method × location × trunk setting (frozen or fine-tuned) × every other design
setting (``results.design_settings``: each field of ``AdapterConfig`` — ``lora_alpha``, ``heads``, ``ffn_ratio``,
``adapter_gelu``, … — read off the dataclass) × recipe (the run's ``config.recipe``: model, tasks by fingerprint,
steps, batch, lr, sampling, …). Runs of different designs or recipes are never fitted together, and a question's rows
are predicted from the curves of its own design settings only. Within a family every run (every seed) is one point (size d_s, dev average 0–100), and the fit is

    score(d_s) = a + b · ln(d_s)        ordinary least squares over the runs

— the saturating curve's shape over the doubling range a study measures (each doubling of the adapter buys the same
number of points, so each parameter buys less), with two parameters, so that three sizes leave degrees of freedom to
measure how far the runs stray from it. The noise is the larger of the residual variance of that fit (seed spread
and lack of fit together, n − 2 degrees of freedom) and the spread between seeds alone (the pooled within-size
variance): a curve that happens to thread the means never claims less noise than the seeds show. A prediction is
for **one new run** at that size (what a user gets by training it once):

    mean ± t_{0.90, n−2} · s · sqrt(1 + x₀ᵀ (XᵀX)⁻¹ x₀)        the 80 % prediction interval

It carries the number of runs and of distinct sizes it rests on. Fewer than three distinct sizes: no prediction. A
size outside the measured range is *extrapolated*: shown, marked, never used to rank. Each task's main metric is
fitted the same way (``Prediction.tasks``).

Where the runs come from: the finished ``summary.json`` files under the roots, read by the one reader of results
(``pals_core.results.runs``: the explorer's search, each file read once into a ``Run``), and the trials of the
studies in an Optuna storage (their ``run_dir``'s summary); ``observed`` keeps those of the question's model and
exactly its tasks (by fingerprint, as ``pals_core.measured.same_question``),
and drops smoke runs (fewer than ``SMOKE_STEPS`` steps) and references (``shared``, ``separate``: no size).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .kinds import get_kind
from .results import SCALE, PassedOver, Run, checked, read_or_none, runs
from .study_storage import open_read_only
from .tasks import records_of_config

LEVEL = 0.80  # the interval's coverage
MIN_SIZES = 3  # distinct measured sizes a prediction needs
SMOKE_STEPS = 100  # as pals_core.measured.SMOKE_STEPS: fewer steps check that training runs, they measure nothing


@dataclass(frozen=True)
class Family:
    """What a curve is fitted over: all but the size."""

    method: str
    location: str | None
    freeze_trunk: bool
    recipe: str  # config.recipe as sorted JSON
    design: str = ""  # every other design setting (``results.design_settings``), as sorted JSON

    def label(self) -> str:
        where = f" @ {self.location}" if self.location else ""
        return f"{self.method}{where}{' (trunk frozen)' if self.freeze_trunk else ''}"


@dataclass(frozen=True)
class Observation:
    """One measured design size: its runs' dev averages (one per seed, 0–100) and each task's main metric."""

    family: Family
    d_s: int
    runs: tuple[float, ...]
    tasks: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # task → one value per run (0–100)
    source: str = ""
    config: Mapping | None = field(default=None, compare=False, repr=False)  # a run's config.json: to train the next


@dataclass(frozen=True)
class Interval:
    mean: float
    lo: float
    hi: float


@dataclass(frozen=True)
class Prediction:
    """A predicted dev average (0–100) of one new run at ``d_s``, with its 80 % interval."""

    d_s: int
    mean: float
    lo: float
    hi: float
    runs: int  # runs the fit rests on
    sizes: int  # distinct sizes among them
    d_min: int
    d_max: int
    extrapolated: bool  # d_s outside [d_min, d_max]: shown, never ranked
    tasks: Mapping[str, Interval] = field(default_factory=dict)

    def as_json(self) -> dict:
        return {
            "mean": round(self.mean, 4),
            "lo": round(self.lo, 4),
            "hi": round(self.hi, 4),
            "runs": self.runs,
            "sizes": self.sizes,
            "extrapolated": self.extrapolated,
            "measured_d_s": [self.d_min, self.d_max],
            "tasks": {
                t: {"mean": round(i.mean, 4), "lo": round(i.lo, 4), "hi": round(i.hi, 4)} for t, i in self.tasks.items()
            },
        }

    def cell(self) -> str:
        """'63.4 [61.9, 64.9]' (+ ' extrapolated'): pals-budget's predicted column."""
        return f"{self.mean:.1f} [{self.lo:.1f}, {self.hi:.1f}]" + (" extrapolated" if self.extrapolated else "")

    def text(self) -> str:
        """'63.4 [61.9, 64.9] (80 % interval of one new run), predicted from 16 runs at d_s 8–64': the answer's words
        (``recommend.reason`` writes a predicted score by its ``text``)."""
        return f"{self.cell()} ({round(LEVEL * 100)} % interval of one new run), {self.basis()}"

    @property
    def n(self) -> int:  # read as a Score's (recommend.ranking): the runs behind it
        return self.runs

    @property
    def ci95(self) -> None:  # a prediction has its 80 % interval (lo, hi), no 95 % half-width
        return None

    def basis(self) -> str:
        """'predicted from 16 runs at d_s 8–64' (', extrapolated' outside that range)."""
        out = f"predicted from {self.runs} runs at d_s {self.d_min}–{self.d_max}"
        return out + (", extrapolated: not ranked" if self.extrapolated else "")

    def overlaps(self, other: Prediction) -> bool:
        return self.lo <= other.hi and other.lo <= self.hi


@dataclass(frozen=True)
class Line:
    """score = a + b·ln(d_s), fitted by least squares, with what its 80 % prediction interval needs."""

    a: float
    b: float
    s: float  # the noise's standard deviation
    t: float  # t_{(1+LEVEL)/2, dof}
    n: int
    mean_x: float
    sxx: float

    def at(self, d_s: float, k: int = 1) -> Interval:
        """The 80 % interval of one new run at ``d_s`` (``k`` runs: of their mean)."""
        x = math.log(d_s)
        mean = self.a + self.b * x
        half = self.t * self.s * math.sqrt(1 / k + 1 / self.n + (x - self.mean_x) ** 2 / self.sxx)
        return Interval(mean, mean - half, mean + half)


def t_quantile(p: float, dof: int) -> float:
    from scipy.stats import t  # the calculator's core install stays light: loaded only when a curve is fitted

    return float(t.ppf(p, dof))


def fit_line(points: Sequence[tuple[float, float]], min_sizes: int = MIN_SIZES) -> Line | None:
    """The least-squares line of y over ln(size) through ``points`` ((size, y), one per run); None with fewer than
    ``min_sizes`` distinct sizes. The noise: the larger of the residual variance (n − 2 dof) and the pooled
    variance between runs of one size (the seeds' spread)."""
    sizes = {s for s, _ in points}
    if len(sizes) < min_sizes or len(points) < 3:
        return None
    xs = [math.log(s) for s, _ in points]
    ys = [y for _, y in points]
    n = len(points)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    dof = n - 2
    var, noise_dof = noise(sum((y - a - b * x) ** 2 for x, y in zip(xs, ys)), dof, points)
    return Line(a, b, math.sqrt(var), t_quantile((1 + LEVEL) / 2, noise_dof), n, mx, sxx)


def noise(resid_ss: float, dof: int, points: Iterable[tuple[Hashable, float]]) -> tuple[float, int]:
    """A fit's noise variance s² and its degrees of freedom: the larger of the residual variance ``resid_ss / dof``
    (seed spread and lack of fit together) and the pooled variance between the runs of one design alone (``points``:
    (design, y), one per run — the size, or (method, size) — their spread is the seeds'), with that one's dof."""
    groups: dict[Hashable, list[float]] = {}
    for key, y in points:
        groups.setdefault(key, []).append(y)
    pure_ss, pure_dof = 0.0, 0
    for group in groups.values():
        if len(group) > 1:
            g = sum(group) / len(group)
            pure_ss += sum((y - g) ** 2 for y in group)
            pure_dof += len(group) - 1
    resid = resid_ss / dof
    pure = pure_ss / pure_dof if pure_dof else 0.0
    return (resid, dof) if resid >= pure or not pure_dof else (pure, pure_dof)


@dataclass(frozen=True)
class Curve:
    """A family's fitted curves: the dev average's and each task's, with the runs and sizes behind them."""

    family: Family
    line: Line
    tasks: Mapping[str, Line]
    runs: int
    sizes: tuple[int, ...]  # distinct measured sizes, ascending
    points: tuple[tuple[int, float], ...]  # (d_s, dev average) of every run: what a figure draws
    config: Mapping | None = field(default=None, compare=False, repr=False)  # one run's settings (the recipe)

    def next_config(self, d_s: int, seed: int = 0) -> dict | None:
        """The settings of a run of this family at ``d_s``: the recipe of its runs, this size, no out folder."""
        if not self.config:
            return None
        cfg = json.loads(json.dumps(self.config))
        cfg["adapter"] = {**(cfg.get("adapter") or {}), "d_s": d_s}
        cfg["seed"] = seed
        cfg.pop("out", None)
        return cfg

    def predict(self, d_s: int) -> Prediction:
        i = self.line.at(d_s)
        return Prediction(
            d_s,
            i.mean,
            i.lo,
            i.hi,
            self.runs,
            len(self.sizes),
            self.sizes[0],
            self.sizes[-1],
            not self.sizes[0] <= d_s <= self.sizes[-1],
            {t: line.at(d_s) for t, line in self.tasks.items()},
        )


def fit(observations: Sequence[Observation]) -> Curve | None:
    """One family's curve from its observations (None under three distinct sizes). ``ValueError`` if they mix
    families: recipes, methods, locations or trunk settings are never fitted together."""
    if not observations:
        return None
    family = observations[0].family
    if any(o.family != family for o in observations):
        raise ValueError("observations of different families (method, location, trunk, design or recipe) in one fit")
    points = [(o.d_s, y) for o in observations for y in o.runs if o.d_s and o.d_s > 0]
    line = fit_line(points)
    if line is None:
        return None
    tasks = {}
    names = set.intersection(*(set(o.tasks) for o in observations)) if observations else set()
    for t in sorted(names):
        tp = [(o.d_s, y) for o in observations for y in o.tasks[t] if o.d_s and o.d_s > 0]
        tl = fit_line(tp)
        if tl is not None:
            tasks[t] = tl
    config = next((o.config for o in observations if o.config), None)
    return Curve(family, line, tasks, len(points), tuple(sorted({s for s, _ in points})), tuple(points), config)


def curves(observations: Iterable[Observation]) -> dict[Family, Curve]:
    """Every family's curve that three sizes or more support."""
    by: dict[Family, list[Observation]] = {}
    for o in observations:
        by.setdefault(o.family, []).append(o)
    out = {}
    for fam, obs in by.items():
        c = fit(obs)
        if c is not None:
            out[fam] = c
    return out


# --- reading the runs ---------------------------------------------------------------------------------------------


def _main_value(task_scores, metric: str | None, in_units: Sequence[str] = ()) -> float | None:
    """A task's main metric (0–100) from one run's ``{metric: fraction}``; the mean over its fraction metrics where
    the run does not name its main one (``in_units``: its kind's metrics in the task's own units, an RMSE, which are
    no fraction and are not put on the 0–100 scale)."""
    if not isinstance(task_scores, dict) or not task_scores:
        return None
    if metric and isinstance(task_scores.get(metric), (int, float)):
        return SCALE * task_scores[metric]
    vals = [v for k, v in task_scores.items() if isinstance(v, (int, float)) and k not in in_units]
    return SCALE * sum(vals) / len(vals) if vals else None


def _in_units(config: dict | None) -> dict[str, tuple[str, ...]]:
    """Each task's metrics in its own units (``Kind.in_units``), by the records a run's config holds."""
    try:
        return {t: get_kind(r.kind).in_units for t, r in records_of_config(config or {}).items()}
    except (ValueError, TypeError, KeyError, AttributeError):  # a config whose records cannot be read
        return {}


def _metrics(summary: dict, folder: Path) -> dict[str, str | None]:
    """Each task's main metric as the run recorded it (``summary.tasks``; an aggregate: its first seed run's)."""
    tasks = summary.get("tasks")
    if not isinstance(tasks, dict):
        for run in summary.get("runs") or []:
            d = run.get("dir") if isinstance(run, dict) else run
            sub = read_or_none(folder / str(d) / "summary.json") if isinstance(d, str) else None
            if sub and isinstance(sub.get("tasks"), dict):
                tasks = sub["tasks"]
                break
    if not isinstance(tasks, dict):
        return {}
    return {t: (v.get("metric") if isinstance(v, dict) else None) for t, v in tasks.items()}


def observation(run: Run) -> Observation | None:
    """The observation of a finished sized run (``results.Run``: read, and placed, by the one reader of results);
    None for anything else (a reference, a sizeless method, a smoke run, a seed run without a score)."""
    if run.d_s is None or run.d_s < 1:
        return None
    if run.steps is not None and run.steps < SMOKE_STEPS:
        return None
    seeds = run.seed_runs
    if not run.averages or len(run.averages) != len(seeds):
        return None
    metrics = _metrics(run.summary, run.folder)
    tasks: dict[str, tuple[float, ...]] = {}
    units = _in_units(run.config)
    for t in metrics or (seeds[0].get("scores") or {}):
        vals = [_main_value((r.get("scores") or {}).get(t), metrics.get(t), units.get(t, ())) for r in seeds]
        if all(v is not None for v in vals):
            tasks[t] = tuple(vals)
    fam = Family(run.method, run.location, run.freeze_trunk, run.recipe, run.design)
    return Observation(fam, run.d_s, run.averages, tasks, str(run.folder), run.config)


def storage_runs(url: str, passed_over: list[PassedOver] | None = None) -> list[Run]:
    """The run of every finished trial of every study in the Optuna storage ``url`` whose run folder still holds its
    ``summary.json`` (a study's trials are ordinary ``pals-train`` runs) and whose numbers can be true
    (``results.checked``; the others are added to ``passed_over``). The storage is only read
    (``study_storage.open_read_only``: no file created, no table added). ``ValueError`` in one line for a storage
    that cannot be opened."""
    try:
        import optuna
    except ImportError:
        raise ValueError("--storage needs optuna (pip install 'pals-explorer[studies]')") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_read_only(url)
    try:
        studies = optuna.get_all_study_summaries(storage, include_best_trial=False)
    except Exception as e:  # noqa: BLE001 — any driver's error is one line naming the storage
        raise ValueError(f"cannot read the study storage: {' '.join(str(e).split())[:200]}") from None
    out = []
    for s in studies:
        study = optuna.load_study(study_name=s.study_name, storage=storage)
        for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
            run_dir = trial.user_attrs.get("run_dir")
            if isinstance(run_dir, str):
                run = checked(read_or_none(Path(run_dir) / "summary.json"), Path(run_dir), passed_over)
                if run is not None:
                    out.append(run)
    return out


def same_model(run_model: str | None, question_model: str | None) -> bool:
    """Whether a run's ``--model`` is the question's (None: the embedded MiniLM; folders compared as real paths)."""
    if run_model is None or question_model is None:
        return run_model is question_model
    if run_model == question_model:
        return True
    try:
        return os.path.realpath(run_model) == os.path.realpath(question_model)
    except (OSError, ValueError):
        return False


def with_storage(found: Sequence[Run], storage: str | None, passed_over: list[PassedOver] | None = None) -> list[Run]:
    """``found`` (``results.runs``) and, with ``storage``, the runs of its studies' trials not among them (the same
    folder, or the same run by ``Run.identity``); trials whose numbers cannot be true are added to ``passed_over``."""
    out = list(found)
    if storage:
        seen = {r.folder.resolve() for r in out} | {r.identity for r in out}
        for run in storage_runs(storage, passed_over):
            if run.folder.resolve() not in seen and run.identity not in seen:
                seen |= {run.folder.resolve(), run.identity}
                out.append(run)
    return out


def observed(
    found: Iterable[Run], model: str | None, keys: Sequence[str], design: str | None = None
) -> list[Observation]:
    """The observations of the sized runs among ``found`` that trained ``model`` (a ``pals-train --model`` value;
    None = the embedded MiniLM) on exactly the tasks ``keys`` (fingerprints; a bare GLUE name stands for
    ``glue:<name>``) — with ``design`` (``results.design_settings`` of the question's settings), only those of
    that design."""
    want = sorted(k if ":" in k else f"glue:{k}" for k in keys)
    out = []
    for run in found:
        obs = observation(run)
        if obs is not None and same_model(run.model, model) and sorted(run.task_keys) == want:
            if design is None or obs.family.design == design:
                out.append(obs)
    return out


def observations(
    roots: Iterable[Path],
    model: str | None,
    keys: Sequence[str],
    storage: str | None = None,
    passed_over: list[PassedOver] | None = None,
) -> list[Observation]:
    """The sized, finished runs under ``roots`` (and, with ``storage``, the trials of its studies) that trained
    ``model`` on exactly the tasks ``keys`` (``observed``); runs whose numbers cannot be true are added to
    ``passed_over``."""
    return observed(with_storage(runs(roots, passed_over), storage, passed_over), model, keys)


def predictions_for(
    curves_: Mapping[Family, Curve], method: str, location: str | None, d_s: int | None
) -> list[tuple[Family, Prediction]]:
    """Every family of this method and location (each trunk setting and recipe) with its prediction at ``d_s``."""
    if d_s is None:
        return []
    loc = location or "all"
    return [(f, c.predict(d_s)) for f, c in curves_.items() if f.method == method and (f.location or "all") == loc]


def best_prediction(
    curves_: Mapping[Family, Curve], method: str, location: str | None, d_s: int | None, freeze_trunk: bool
) -> Prediction | None:
    """The prediction for this design (method, location, trunk setting) at ``d_s`` from the family with the most
    runs behind it (several recipes: each is a separate curve, never mixed)."""
    cands = [
        (curves_[f].runs, p)
        for f, p in predictions_for(curves_, method, location, d_s)
        if f.freeze_trunk == bool(freeze_trunk)
    ]
    return max(cands, key=lambda x: x[0])[1] if cands else None


# --- the question's side (pals-budget --results, the explorer) ---------------------------------------------------


def question_curves(
    found: Sequence[Run],
    storage: str | None,
    model: str | None,
    keys: Sequence[str],
    design: str | None = None,
    passed_over: list[PassedOver] | None = None,
) -> dict[Family, Curve]:
    """The curves of the runs of ``model`` on exactly the tasks ``keys`` among ``found`` (``results.runs``, read once
    by the caller: ``pals-budget`` places the same runs for its measured scores) and in ``storage``, of the
    question's ``design`` settings (``results.design_settings``; None: any). ``ValueError`` in one line for a
    storage that cannot be read; its trials whose numbers cannot be true are added to ``passed_over``."""
    return curves(observed(with_storage(found, storage, passed_over), model, keys, design))


def row_prediction(curves_: Mapping[Family, Curve], cost) -> Prediction | None:
    """The prediction for a calculator row (``Cost``: method, location, d_s, and the trunk it trains with), or None."""
    return best_prediction(curves_, cost.method, cost.location, cost.d_s, cost.trunk == "frozen")


def ranked(costs: Sequence, curves_: Mapping[Family, Curve]) -> dict:
    """``recommend.candidates``' ``predicted`` (the page's answer and ``pals-budget``'s alike): each row's prediction
    at its own d_s where it lies inside the measured sizes (an extrapolated one ranks nothing), by (method,
    location)."""
    out = {}
    for c in costs:
        p = row_prediction(curves_, c)
        if p is not None and not p.extrapolated:
            out[(c.method, c.location)] = p
    return out


# --- the hold-out check (benchmarks/accuracy_model.py) -----------------------------------------------------------


def _held_out(observations_: Iterable[Observation]) -> Iterator[tuple[Family, int, Curve, list[float]]]:
    """Each measured size of each family held out in turn: (family, d_s, the curve fitted on the family's other
    sizes — when they are three or more —, the held-out size's runs)."""
    by: dict[Family, list[Observation]] = {}
    for o in observations_:
        by.setdefault(o.family, []).append(o)
    for fam, obs in by.items():
        for d in sorted({o.d_s for o in obs}):
            curve = fit([o for o in obs if o.d_s != d])
            if curve is not None:
                yield fam, d, curve, [y for o in obs if o.d_s == d for y in o.runs]


def holdout(observations_: Iterable[Observation]) -> list[dict]:
    """Each measured size of each family held out in turn (``_held_out``): the curve fitted on the family's other
    sizes predicts each held-out run. One dict per held-out run: family, d_s, the run's dev average, the prediction
    (mean, lo, hi) and whether d_s lay outside the sizes fitted (extrapolated)."""
    out = []
    for fam, d, curve, ys in _held_out(observations_):
        p = curve.predict(d)
        for y in ys:
            out.append(
                {
                    "family": fam.label(),
                    "d_s": d,
                    "measured": round(y, 4),
                    "mean": round(p.mean, 4),
                    "lo": round(p.lo, 4),
                    "hi": round(p.hi, 4),
                    "inside": p.lo <= y <= p.hi,
                    "extrapolated": p.extrapolated,
                }
            )
    return out


def holdout_sizes(observations_: Iterable[Observation]) -> list[dict]:
    """As ``holdout``, one dict per held-out size: its measured dev average (the mean over its runs, as a ``--seeds``
    result reports it) against the predicted mean and the 80 % interval of the mean of that many runs."""
    out = []
    for fam, d, curve, ys in _held_out(observations_):
        y = sum(ys) / len(ys)
        i = curve.line.at(d, k=len(ys))
        out.append(
            {
                "family": fam.label(),
                "d_s": d,
                "runs": len(ys),
                "measured": round(y, 4),
                "mean": round(i.mean, 4),
                "lo": round(i.lo, 4),
                "hi": round(i.hi, 4),
                "inside": i.lo <= y <= i.hi,
                "extrapolated": not curve.sizes[0] <= d <= curve.sizes[-1],
            }
        )
    return out


def holdout_summary(points: Sequence[dict]) -> dict:
    """``mae`` (points of dev average), ``coverage80`` (share inside the 80 % interval) and ``points`` (held-out
    runs); None for the first two without points."""
    n = len(points)
    return {
        "mae": round(sum(abs(p["measured"] - p["mean"]) for p in points) / n, 4) if n else None,
        "coverage80": round(sum(p["inside"] for p in points) / n, 4) if n else None,
        "points": n,
    }


# --- one setting for a page's ranking, and the next run worth measuring ---------------------------------------------


def main_setting(curves_: Mapping[Family, Curve]) -> dict[Family, Curve]:
    """The curves of the one trunk setting and recipe with the most runs behind them: a ranking compares predictions
    trained alike, never one recipe's against another's."""
    if not curves_:
        return {}
    runs: dict[tuple[bool, str], int] = {}
    for f, c in curves_.items():
        runs[(f.freeze_trunk, f.recipe)] = runs.get((f.freeze_trunk, f.recipe), 0) + c.runs
    best = max(runs, key=lambda k: (runs[k], k[1]))
    return {f: c for f, c in curves_.items() if (f.freeze_trunk, f.recipe) == best}


def recipe_text(family: Family) -> str:
    """'300 steps × batch 16, lr 0.001, uniform sampling, max_len 64, trunk frozen' — how the runs were trained."""
    try:
        r = json.loads(family.recipe)
    except ValueError:
        r = {}
    parts = []
    if r.get("steps") is not None:
        parts.append(f"{r['steps']} steps × batch {r.get('batch_size', '?')}")
    if r.get("lr") is not None:
        parts.append(f"lr {r['lr']:g}" if isinstance(r["lr"], (int, float)) else f"lr {r['lr']}")
    if r.get("sampling"):
        parts.append(f"{r['sampling']} sampling")
    if r.get("max_len") is not None:
        parts.append(f"max_len {r['max_len']}")
    parts.append("trunk frozen" if family.freeze_trunk else "trunk fine-tuned")
    return ", ".join(parts)


@dataclass(frozen=True)
class Option:
    """A design at the budget, as the answer ranks it: its measured score (mean, ci95) or its prediction."""

    label: str
    d_s: int | None
    predicted: Prediction | None = None
    measured_mean: float | None = None
    measured_ci95: float | None = None

    def interval(self) -> tuple[float, float] | None:
        if self.measured_mean is not None:
            half = self.measured_ci95 or 0.0
            return self.measured_mean - half, self.measured_mean + half
        if self.predicted is not None:
            return self.predicted.lo, self.predicted.hi
        return None

    def value(self) -> float | None:
        """What ranks it: the measured mean, else an interpolated prediction's mean (an extrapolated one ranks nothing)."""
        if self.measured_mean is not None:
            return self.measured_mean
        if self.predicted is not None and not self.predicted.extrapolated:
            return self.predicted.mean
        return None


@dataclass(frozen=True)
class NextRun:
    option: Option
    why: str


def next_run(options: Sequence[Option]) -> NextRun | None:
    """The one design and size whose measurement would most change the decision at this budget: among the designs not
    measured at their size whose predicted 80 % interval overlaps the leader's interval or lies above it (the
    leader's own, if it is only predicted), the one with the highest upper bound — the design that could still turn out first. None when
    no unmeasured design has a prediction, or the leader's measured interval is clear of every prediction."""
    ranked = [o for o in options if o.value() is not None]
    if not ranked:  # every prediction at this budget is an extrapolation: measure the one that could reach highest
        guesses = [o for o in options if o.measured_mean is None and o.predicted is not None]
        if not guesses:
            return None
        best = max(guesses, key=lambda o: o.predicted.hi)
        return NextRun(
            best,
            f"no design at this budget lies inside the measured sizes, and this one's extrapolated interval "
            f"({best.predicted.cell()}) reaches highest: one run turns the guess into a measurement",
        )
    leader = max(ranked, key=lambda o: o.value())
    lo, hi = leader.interval()
    open_ = [
        o for o in options if o.measured_mean is None and o.predicted is not None and lo <= o.predicted.hi
    ]  # could tie or beat the leader: its interval overlaps the leader's or lies above it (an extrapolation, unranked)
    if not open_:
        return None
    best = max(open_, key=lambda o: o.predicted.hi)
    p = best.predicted
    if best is leader:
        why = f"it leads on prediction alone ({p.cell()}); one run at d_s {best.d_s} tells whether the lead is real"
    else:
        lead = (
            f"{leader.label}'s measured {leader.measured_mean:.1f}"
            if leader.measured_mean is not None
            else f"{leader.label}'s predicted {leader.predicted.cell()}"
        )
        why = (
            f"its 80 % interval ({p.cell()}) {'overlaps' if p.lo <= hi else 'lies above'} {lead} and reaches "
            "highest: it is the design that could still turn out first"
        )
    return NextRun(best, why)
