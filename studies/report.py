"""Study results as tables and plotly figures, for ``pals-study report`` and the explorer's Studies tab.

Everything shown about a study is computed here (the explorer view only lays it out). Scores are on one scale
everywhere — the tables, ``trials.csv``, ``leaderboard.csv``, the figures and the page: 0–100 (each dev metric × 100,
as every score of the project is shown: ``pals_core.results.SCALE``) for a study pals-study made (its objective, a dev
average, is stored as a fraction), and as stored for a study another program made (``scale_of``).

- ``trials_frame``: one row per trial — state, dev average (with ``± ci95`` and ``seeds`` when the study repeats
  each trial over seeds: the mean over seeds and the half-width of its 95 % t-interval), design (method, location, d_s), task-specific
  parameters Σ_t (head_t + adapter_t) and the ratio N_total / N_base from the calculator, the searched
  parameters, per-task dev scores — each task's main metric, named in its column (``score intent (macro_f1)``:
  the metric its record names, as the trial recorded it, else as the study's settings hold it) —, wall time, run
  directory and retry links; a user attribute of the wrong type (a study another program wrote, an edited storage)
  is left out and named in the row's ``unread attributes``, never a reason for the report to fail;
  the step each score comes from (``scored at step``: the best or the last evaluation, as the study's ``score_at``
  says); a RUNNING trial whose worker is gone is ``stale (last heartbeat … ago)``, with what will retry it in
  ``note`` (``studies.stale``);
- ``leaderboard``: finished trials, best dev average first, with their Pareto membership;
- ``undecided_tasks``: the tasks no completed trial moved off its trivial (majority-class) baseline — they add the
  same to every trial's average and decide nothing;
- ``pareto_front``: the trials no other trial beats on both dev average (higher) and task-specific
  parameters (lower) — trial a dominates b if avg_a ≥ avg_b and params_a ≤ params_b, one strictly;
- figures: optimisation history and parameter importances (Optuna's, fANOVA), learning curves of the
  reported dev averages, and the accuracy-vs-parameters Pareto front.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import optuna
import pandas as pd
import plotly.graph_objects as go
from optuna.trial import FrozenTrial, TrialState

from pals_core.atomic import atomic_write_text
from pals_core.results import SCALE

from .errors import StudyError
from .runner import counts, load_settings
from .settings import SCORE_AT, SETTINGS_ATTR
from .stale import StaleTrial
from .storage import retry_of

AVERAGE = "dev average"
CI95 = "± ci95"  # trials repeated over seeds (settings ``seeds``): half-width of the 95 % t-interval of the mean
PARAMS = "task-specific parameters"
STEP = "scored at step"  # the evaluation step a trial's score comes from (each seed's, for a trial over seeds)
_HIDDEN_PARAMS = ("d_s_", "location_")  # per-design parameter names: summarised by the design / d_s columns
_ATTR_COLUMNS = ("design", "method", "location", "d_s", "ratio", "flops_ratio")
_INTEGERS = ("d_s", PARAMS, "seeds", "last step", "retry of", STEP)  # whole numbers: written without ".0"
FIRST = ("rank", "trial", "design", "location", "d_s", AVERAGE, CI95, "seeds", STEP)  # the leaderboard's first columns


class FigureUnavailable(Exception):
    """The figure cannot be drawn yet (too few finished trials, no parameters to compare); the message says why."""


def _multi(study: optuna.Study) -> bool:
    return len(study.directions) > 1


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _map(values) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, dict) and all(isinstance(k, str) and (x is None or values(x)) for k, x in v.items())


ATTR_TYPES: dict[str, Callable[[Any], bool]] = {
    "design": _text,
    "method": _text,
    "location": _text,
    "d_s": _integer,
    "ratio": _number,
    "flops_ratio": _number,
    "params_task_specific": _number,
    "average_ci95": _number,
    "seeds": lambda v: isinstance(v, list) and all(_integer(k) for k in v),
    "scores": _map(_number),
    "main_metrics": _map(_text),
    "last_step": _integer,
    "score_step": lambda v: _integer(v) or (isinstance(v, list) and all(x is None or _integer(x) for x in v)),
    "best_step": lambda v: _integer(v) or (isinstance(v, list) and all(x is None or _integer(x) for x in v)),
    "score_at": _text,
    "majority": _map(_number),
    "wall_time_s": _number,
    "run_dir": _text,
    "error": _text,
    "surplus": _text,
}
"""The trial user attributes the report reads, with the type each must have to be used (None is always "not
recorded"). A trial of another program, or an edited storage, may hold anything under these names."""
BAD_ATTRS = "unread attributes"  # trials_frame column: the names of a trial's attributes of the wrong type


def trial_attrs(t: FrozenTrial) -> tuple[dict, list[str]]:
    """(the trial's user attributes the report reads, each of its type or left out; the names left out)."""
    good, bad = {}, []
    for k, ok in ATTR_TYPES.items():
        v = t.user_attrs.get(k)
        if v is None or ok(v):
            good[k] = v
        else:
            bad.append(k)
    return good, bad


def _params_of(a: dict) -> int | float | None:
    """The trial's task-specific parameter count: a whole number as an ``int``."""
    v = a.get("params_task_specific")
    if v is None:
        return None
    return int(v) if float(v).is_integer() else float(v)


def study_metrics(study: optuna.Study) -> dict[str, str]:
    """task → its main metric, from the study's settings (its task records; GLUE's for GLUE names); {} for a study
    that pals-study did not create or cannot read."""
    try:
        return {r.name: r.main_metric for r in load_settings(study).records()}
    except (StudyError, ValueError, TypeError, KeyError, AttributeError):  # settings another program wrote
        return {}


def score_column(task: str, metric: str | None) -> str:
    """The column of a task's dev score: ``score rte (accuracy)``, or ``score rte`` when the metric is unknown."""
    return f"score {task} ({metric})" if metric else f"score {task}"


def scale_of(study: optuna.Study) -> float:
    """The factor a study's scores are shown with: ``SCALE`` (100) for a study pals-study made — its objective is a
    dev average, a fraction — else 1 (another program's objective, as it stored it)."""
    return SCALE if SETTINGS_ATTR in study.user_attrs else 1.0


def on_scale(value: float | None, scale: float) -> float | None:
    """``value × scale``, rounded to 10 decimals: 0.6013 shows as 60.13, not 60.129999999999995."""
    return None if value is None else round(value * scale, 10)


def score_at(study: optuna.Study) -> str | None:
    """Which evaluation the study scores (``StudySettings.score_at``), None for a study pals-study did not make."""
    try:
        return load_settings(study).score_at
    except (StudyError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _step_of(a: dict, reported: int | None) -> int | str | None:
    """The step a trial's score comes from: recorded (``score_step``; before the study recorded it, ``best_step``:
    trials were scored at their best evaluation), else the step it last reported (a pruned or running trial)."""
    step = a.get("score_step", a.get("best_step"))
    if isinstance(step, list):  # over seeds: each seed's run
        return ", ".join("—" if x is None else str(x) for x in step)
    return step if step is not None else reported


def trials_frame(study: optuna.Study, stale: dict[int, StaleTrial] | None = None) -> pd.DataFrame:
    """One row per trial, in trial order, scores × ``scale_of(study)``. A user attribute of the wrong type
    (``ATTR_TYPES``) is left out of its row and named in the row's ``unread attributes``; a trial given up as surplus
    (``--trials`` reached by other workers' trials) holds the reason in ``note``; a trial in ``stale``
    (``stale.stale_trials``) is ``stale (last heartbeat … ago)``, with what will retry it in ``note``."""
    rows = []
    metrics = study_metrics(study)
    scale = scale_of(study)
    stale = stale or {}
    for t in study.get_trials(deepcopy=False):
        a, bad = trial_attrs(t)
        reported, last = _last_reported(t)
        value = t.values[0] if t.values else last
        ci = a.get("average_ci95")
        row = {
            "trial": t.number,
            "state": stale[t.number].text() if t.number in stale else t.state.name,
            AVERAGE: on_scale(value, scale),
            CI95: on_scale(ci, scale),
            "seeds": len(a["seeds"]) if a.get("seeds") else None,
        }
        for k in _ATTR_COLUMNS:
            row[k] = a.get(k)
        row[PARAMS] = _params_of(a)
        row[STEP] = _step_of(a, reported) if value is not None else None
        for k, v in t.params.items():
            if not k.startswith(_HIDDEN_PARAMS) and k not in row:
                row[k] = v
        named = {**metrics, **(a.get("main_metrics") or {})}  # what the trial recorded wins
        for task, score in sorted((a.get("scores") or {}).items()):
            row[score_column(task, named.get(task))] = on_scale(score, scale)
        row["last step"] = a.get("last_step")
        row["wall time s"] = a.get("wall_time_s")
        row["retry of"] = retry_of(t)
        row["run_dir"] = a.get("run_dir")
        row["error"] = a.get("error")
        row["note"] = stale[t.number].fate() if t.number in stale else a.get("surplus")
        row[BAD_ATTRS] = ", ".join(bad) or None
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["trial", "state", AVERAGE, *_ATTR_COLUMNS, PARAMS])
    if df["seeds"].isna().all():  # a study without seeds: no interval columns
        df = df.drop(columns=[CI95, "seeds"])
    df = df.drop(columns=[c for c in ("note", BAD_ATTRS) if df[c].isna().all()])
    for c in _INTEGERS:  # read from the rows: a column with a gap would hold floats (6916.0) in pandas
        values = [row.get(c) for row in rows]
        if c in df and all(v is None or _integer(v) for v in values):
            df[c] = pd.array(values, dtype="Int64")
    return df


def unread_text(frame: pd.DataFrame) -> str:
    """One line naming the trials of ``trials_frame`` whose user attributes of the wrong type were left out ('' when
    none): what ``pals-study report`` prints and the Studies tab warns."""
    if BAD_ATTRS not in frame:
        return ""
    bad = frame[frame[BAD_ATTRS].notna()]
    return "user attributes of the wrong type, not shown: " + "; ".join(
        f"trial {t}: {a}" for t, a in zip(bad["trial"], bad[BAD_ATTRS])
    )


def _last_reported(t: FrozenTrial) -> tuple[int | None, float | None]:
    """(step, dev average) of a pruned (or running) trial's last report; (None, None) before its first."""
    if not t.intermediate_values:
        return None, None
    step = max(t.intermediate_values)
    return int(step), t.intermediate_values[step]


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Membership of each (dev average, parameters) point in the front: maximise the first, minimise the second."""
    out = []
    for i, (a, p) in enumerate(points):
        dominated = any((a2 >= a and p2 <= p) and (a2 > a or p2 < p) for j, (a2, p2) in enumerate(points) if j != i)
        out.append(not dominated)
    return out


def leaderboard(study: optuna.Study, top: int | None = None) -> pd.DataFrame:
    """Completed trials, best dev average first; ``pareto`` marks the accuracy-vs-parameters front. The design, its
    location, d_s, the score and its step come first; ``method`` is left out (``design`` names it)."""
    df = trials_frame(study)
    done = df[df["state"] == "COMPLETE"].copy()
    if done.empty:
        return done
    have = done[PARAMS].notna()
    done["pareto"] = False
    if have.any():  # a study of another program records no parameter count: no front
        done.loc[have, "pareto"] = pareto_front(list(zip(done.loc[have, AVERAGE], done.loc[have, PARAMS])))
    lowest_first = study.directions[0] == optuna.study.StudyDirection.MINIMIZE  # a plain Optuna study may minimise
    done = done.sort_values([AVERAGE, PARAMS], ascending=[lowest_first, True], kind="stable")
    done.insert(0, "rank", range(1, len(done) + 1))
    tasks = [c for c in done.columns if str(c).startswith("score ")]
    first = [c for c in FIRST if c in done.columns] + tasks + [PARAMS, "pareto"]
    dropped = ("state", "error", "last step", "note", "method")
    cols = first + [c for c in done.columns if c not in (*first, *dropped)]
    done = done[cols].reset_index(drop=True)
    done = done.dropna(axis=1, how="all")
    return done.head(top) if top else done


def undecided_tasks(study: optuna.Study) -> list[str]:
    """One line per task that no completed trial moved off its trivial baseline (each trial's ``majority``: the
    majority class, the training mean, … scored on the trial's own dev rows): its score is the baseline's in every
    trial, so it adds the same to every average and does not decide the study. [] before a trial recorded one."""
    done = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        a, _ = trial_attrs(t)
        if a.get("scores") and a.get("majority"):
            done.append(a)
    if not done:
        return []
    metrics = {**study_metrics(study), **(done[0].get("main_metrics") or {})}
    scale = scale_of(study)
    out = []
    for task in sorted(done[0]["scores"]):
        pairs = [(a["scores"].get(task), a["majority"].get(task)) for a in done]
        if all(s is not None and m is not None and abs(s - m) <= 1e-9 for s, m in pairs):
            what = f"{metrics.get(task) or 'score'} {pairs[0][1] * scale:.2f}"
            out.append(
                f"{task}: no trial left the majority baseline ({what} in every one of {len(done)} completed "
                f"trial{'s' if len(done) != 1 else ''}); it does not decide this study"
            )
    return out


def scoring_text(study: optuna.Study) -> str:
    """What a score is: its scale and which evaluation it comes from (the study's ``score_at``)."""
    at = score_at(study)
    scale = f"scores 0–{SCALE:g} (dev metrics × {SCALE:g})" if scale_of(study) != 1.0 else "scores as stored"
    return scale + (f"; a trial's score is {SCORE_AT[at]}, the same for every trial, at the step shown" if at else "")


def summary(study: optuna.Study, stale: dict[int, StaleTrial] | None = None) -> dict:
    """Counts by state (``runner.counts``: surplus trials apart from the pruned, stale ones from the running) and
    the best finished trial."""
    c = counts(study, stale)
    board = leaderboard(study, top=1)
    best = board.iloc[0].to_dict() if not board.empty else None
    return {"study": study.study_name, "objectives": len(study.directions), "counts": c, "best": best}


def format_table(df: pd.DataFrame, columns: Sequence[str] | None = None, max_rows: int = 20) -> str:
    if df.empty:
        return "(no completed trials yet)"
    cols = [c for c in (columns or df.columns) if c in df.columns]
    shown = df[cols].head(max_rows).copy()
    for c in shown.columns:
        if c in (PARAMS, "d_s"):
            shown[c] = shown[c].map(lambda v: "—" if pd.isna(v) else f"{int(v):,}")
        elif str(shown[c].dtype) == "Int64":
            shown[c] = shown[c].map(lambda v: "—" if pd.isna(v) else str(int(v)))
        elif shown[c].dtype.kind == "f":
            shown[c] = shown[c].map(lambda v: "—" if pd.isna(v) else f"{v:.4g}")
        else:
            shown[c] = shown[c].map(lambda v: "—" if v is None or (isinstance(v, float) and pd.isna(v)) else v)
    return shown.to_string(index=False)


# --- figures ------------------------------------------------------------------------------------


def _target(study: optuna.Study, scale: float):
    """The dev average of a trial, times ``scale`` (``scale_of``: 100 puts a ``pals-study`` study on the one 0–100
    scale); None where Optuna's own single objective serves as it is."""
    if scale == 1.0:
        return (lambda t: t.values[0]) if _multi(study) else None
    return lambda t: on_scale(t.values[0], scale)


def _axis(scale: float) -> str:
    return AVERAGE if scale == 1.0 else f"{AVERAGE} (0–{scale:g})"


def _completed(study: optuna.Study) -> list[FrozenTrial]:
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def history_figure(study: optuna.Study) -> go.Figure:
    """Dev average of each trial and the best so far (Optuna's optimisation history), on the study's scale."""
    scale = scale_of(study)
    if not _completed(study):
        raise FigureUnavailable("no completed trial yet")
    fig = optuna.visualization.plot_optimization_history(study, target=_target(study, scale), target_name=_axis(scale))
    fig.update_layout(title=f"Optimisation history — {study.study_name}")
    n = max(1, len(study.get_trials(deepcopy=False)))
    fig.update_xaxes(tickmode="linear", tick0=0, dtick=max(1, math.ceil(n / 15)), title="trial")  # whole trial numbers
    return fig


MIN_IMPORTANCE_TRIALS = 10  # fANOVA's random forest on fewer trials ranks noise


def importance_figure(study: optuna.Study) -> go.Figure:
    """fANOVA importance of the parameters every completed trial shares, for the dev average (shares of its
    variance: the same on any scale)."""
    scale = scale_of(study)
    done = _completed(study)
    if len(done) < MIN_IMPORTANCE_TRIALS:
        raise FigureUnavailable(
            f"parameter importances need at least {MIN_IMPORTANCE_TRIALS} completed trials "
            f"({len(done)} so far): fANOVA on fewer says nothing"
        )
    common = set(done[0].params)
    for t in done[1:]:
        common &= set(t.params)
    varying = [p for p in sorted(common) if len({repr(t.params[p]) for t in done}) > 1]
    if not varying:
        raise FigureUnavailable("no parameter varies across the completed trials yet")
    evaluator = optuna.importance.FanovaImportanceEvaluator(seed=0)
    fig = optuna.visualization.plot_param_importances(
        study, evaluator=evaluator, params=varying, target=_target(study, scale), target_name=_axis(scale)
    )
    fig.update_layout(title=f"Parameter importances for the {AVERAGE} — {study.study_name}")
    return fig


def learning_curves_figure(study: optuna.Study) -> go.Figure:
    """The dev average each trial reported at each evaluation step (pruned trials stop early), on the study's
    scale."""
    scale = scale_of(study)
    if _multi(study):
        raise FigureUnavailable("multi-objective trials report no intermediate values (Optuna prunes none of them)")
    trials = [t for t in study.get_trials(deepcopy=False) if t.intermediate_values]
    if not trials:
        raise FigureUnavailable("no trial has reported a dev average yet")
    fig = go.Figure()
    for t in trials:
        steps = sorted(t.intermediate_values)
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=[on_scale(t.intermediate_values[s], scale) for s in steps],
                mode="lines+markers",
                name=f"trial {t.number} ({t.state.name.lower()})",
                line={"dash": "dot" if t.state == TrialState.PRUNED else "solid"},
            )
        )
    fig.update_layout(
        title=f"Dev average during training — {study.study_name}", xaxis_title="training step", yaxis_title=_axis(scale)
    )
    steps = sorted({s for t in trials for s in t.intermediate_values})
    if len(steps) <= 15:  # the evaluation steps themselves, never a fractional step between them
        fig.update_xaxes(tickmode="array", tickvals=steps)
    return fig


def pareto_figure(study: optuna.Study) -> go.Figure:
    """Dev average (the leaderboard's, on the study's scale) against task-specific parameters: a star for a trial on
    the Pareto front, a circle for one another trial beats on both; the front joined by a dashed line. The legend
    says what the two marks mean (two entries drawn in grey, no points of their own)."""
    scale = scale_of(study)
    board = leaderboard(study)
    if board.empty or PARAMS not in board or board[PARAMS].isna().all():
        raise FigureUnavailable("no completed trial with a parameter count yet")
    board = board[board[PARAMS].notna()].copy()
    fig = go.Figure()
    label = "design" if "design" in board else None
    groups = board.groupby(label, sort=True) if label else [("trials", board)]
    for name, g in groups:
        text = [
            f"trial {r.trial}" + (f" · d_s={int(r.d_s)}" if "d_s" in g and pd.notna(r.d_s) else "")
            for r in g.itertuples()
        ]
        fig.add_trace(
            go.Scatter(
                x=g[PARAMS],
                y=g[AVERAGE],
                mode="markers",
                name=str(name),
                text=text,
                hovertemplate="%{text}<br>params %{x:,}<br>dev average %{y:"
                + (".4f" if scale == 1.0 else ".2f")
                + "}<extra></extra>",
                marker={"size": 10, "symbol": ["star" if p else "circle" for p in g["pareto"]]},
            )
        )
    for symbol, meaning in (
        ("star", "★ on the Pareto front (no trial has a higher score with fewer parameters)"),
        ("circle", "● off the front (another trial beats it on both)"),
    ):
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=meaning,
                marker={"size": 10, "symbol": symbol, "color": "grey"},
                hoverinfo="skip",
            )
        )
    front = board[board["pareto"]].sort_values(PARAMS)
    fig.add_trace(
        go.Scatter(
            x=front[PARAMS],
            y=front[AVERAGE],
            mode="lines",
            name="Pareto front",
            line={"shape": "hv", "color": "black", "dash": "dash"},
            hoverinfo="skip",
        )
    )
    fig.update_layout(
        title=f"Dev average vs task-specific parameters — {study.study_name}",
        xaxis_title="task-specific parameters Σ_t (head_t + adapter_t)",
        yaxis_title=_axis(scale),
    )
    return fig


FIGURES = {
    "history": history_figure,
    "importances": importance_figure,
    "learning_curves": learning_curves_figure,
    "pareto": pareto_figure,
}


def figures(study: optuna.Study) -> tuple[dict[str, go.Figure], dict[str, str]]:
    """(figures that can be drawn, {name: why not} for the others); scores on the study's scale (``scale_of``), as
    in its tables."""
    out, missing = {}, {}
    for name, fn in FIGURES.items():
        try:
            out[name] = fn(study)
        except FigureUnavailable as e:
            missing[name] = str(e)
        except (RuntimeError, ValueError) as e:  # Optuna refuses (e.g. importances of constant targets)
            missing[name] = f"not available: {e}"
    return out, missing


# --- files ---------------------------------------------------------------------------------------


def write_report(
    study: optuna.Study, out_dir: str, *, plotlyjs: str = "cdn", stale: dict[int, StaleTrial] | None = None
) -> dict[str, str]:
    """Write ``trials.csv`` (``stale``: its trials marked so), ``leaderboard.csv`` and one HTML file per drawable
    figure into ``out_dir`` (scores on the study's scale; whole numbers as integers, missing values as empty cells).

    ``plotlyjs="cdn"`` keeps each HTML file small (plotly.js is fetched when opened); ``"inline"`` embeds it
    (about 4.5 MB per file) for viewing offline. Returns {name: path}, plus {name: "skipped: why"}."""
    os.makedirs(out_dir, exist_ok=True)
    written: dict[str, str] = {}
    for name, df in (("trials", trials_frame(study, stale)), ("leaderboard", leaderboard(study))):
        path = os.path.join(out_dir, f"{name}.csv")
        atomic_write_text(path, df.to_csv(index=False))
        written[name] = path
    figs, missing = figures(study)
    include = True if plotlyjs == "inline" else "cdn"
    for name, fig in figs.items():
        path = os.path.join(out_dir, f"{name}.html")
        atomic_write_text(path, fig.to_html(include_plotlyjs=include, full_html=True))
        written[name] = path
    for name, why in missing.items():
        written[name] = f"skipped: {why}"
    return written
