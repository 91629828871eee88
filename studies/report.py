"""Study results as tables and plotly figures, for ``pals-study report`` and the explorer's Studies tab.

Everything shown about a study is computed here (the explorer view only lays it out):

- ``trials_frame``: one row per trial — state, dev average (with ``± ci95`` and ``seeds`` when the study repeats
  each trial over seeds: the mean over seeds and the half-width of its 95 % t-interval), design (method, location, d_s), task-specific
  parameters Σ_t (head_t + adapter_t) and the ratio N_total / N_base from the calculator, the searched
  parameters, per-task dev scores — each task's main metric, named in its column (``score intent (macro_f1)``:
  the metric its record names, as the trial recorded it, else as the study's settings hold it) —, wall time, run
  directory and retry links; a user attribute of the wrong type (a study another program wrote, an edited storage)
  is left out and named in the row's ``unread attributes``, never a reason for the report to fail;
- ``leaderboard``: finished trials, best dev average first, with their Pareto membership;
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

from .errors import StudyError
from .runner import counts, load_settings
from .storage import retry_of

AVERAGE = "dev average"
CI95 = "± ci95"  # trials repeated over seeds (settings ``seeds``): half-width of the 95 % t-interval of the mean
PARAMS = "task-specific parameters"
_HIDDEN_PARAMS = ("d_s_", "location_")  # per-design parameter names: summarised by the design / d_s columns
_ATTR_COLUMNS = ("design", "method", "location", "d_s", "ratio", "flops_ratio")


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


def _params_of(a: dict) -> float | None:
    v = a.get("params_task_specific")
    return float(v) if v is not None else None


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


def trials_frame(study: optuna.Study) -> pd.DataFrame:
    """One row per trial, in trial order. A user attribute of the wrong type (``ATTR_TYPES``) is left out of its row
    and named in the row's ``unread attributes``; a trial given up as surplus (``--trials`` reached by other
    workers' trials) holds the reason in ``note``."""
    rows = []
    metrics = study_metrics(study)
    for t in study.get_trials(deepcopy=False):
        a, bad = trial_attrs(t)
        row = {
            "trial": t.number,
            "state": t.state.name,
            AVERAGE: t.values[0] if t.values else _last_reported(t),
            CI95: a.get("average_ci95"),
            "seeds": len(a["seeds"]) if a.get("seeds") else None,
        }
        for k in _ATTR_COLUMNS:
            row[k] = a.get(k)
        row[PARAMS] = _params_of(a)
        for k, v in t.params.items():
            if not k.startswith(_HIDDEN_PARAMS) and k not in row:
                row[k] = v
        named = {**metrics, **(a.get("main_metrics") or {})}  # what the trial recorded wins
        for task, score in sorted((a.get("scores") or {}).items()):
            row[score_column(task, named.get(task))] = score
        row["last step"] = a.get("last_step")
        row["wall time s"] = a.get("wall_time_s")
        row["retry of"] = retry_of(t)
        row["run_dir"] = a.get("run_dir")
        row["error"] = a.get("error")
        row["note"] = a.get("surplus")
        row[BAD_ATTRS] = ", ".join(bad) or None
        rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=["trial", "state", AVERAGE, *_ATTR_COLUMNS, PARAMS])
    df[PARAMS] = df[PARAMS].astype("Int64")
    if df["seeds"].isna().all():  # a study without seeds: no interval columns
        df = df.drop(columns=[CI95, "seeds"])
    df = df.drop(columns=[c for c in ("note", BAD_ATTRS) if df[c].isna().all()])
    if "d_s" in df:
        df["d_s"] = df["d_s"].astype("Int64")
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


def _last_reported(t: FrozenTrial) -> float | None:
    """A pruned (or running) trial's last reported dev average."""
    if not t.intermediate_values:
        return None
    return t.intermediate_values[max(t.intermediate_values)]


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Membership of each (dev average, parameters) point in the front: maximise the first, minimise the second."""
    out = []
    for i, (a, p) in enumerate(points):
        dominated = any((a2 >= a and p2 <= p) and (a2 > a or p2 < p) for j, (a2, p2) in enumerate(points) if j != i)
        out.append(not dominated)
    return out


def leaderboard(study: optuna.Study, top: int | None = None) -> pd.DataFrame:
    """Completed trials, best dev average first; ``pareto`` marks the accuracy-vs-parameters front."""
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
    first = ["rank", "trial", AVERAGE] + [c for c in (CI95, "seeds") if c in done.columns] + [PARAMS, "pareto"]
    cols = first + [c for c in done.columns if c not in (*first, "state", "error", "last step", "note")]
    done = done[cols].reset_index(drop=True)
    done = done.dropna(axis=1, how="all")
    return done.head(top) if top else done


def summary(study: optuna.Study) -> dict:
    """Counts by state (``runner.counts``: surplus trials apart from the pruned) and the best finished trial."""
    c = counts(study)
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
        elif shown[c].dtype.kind == "f":
            shown[c] = shown[c].map(lambda v: "—" if pd.isna(v) else f"{v:.4g}")
        else:
            shown[c] = shown[c].map(lambda v: "—" if v is None or (isinstance(v, float) and pd.isna(v)) else v)
    return shown.to_string(index=False)


# --- figures ------------------------------------------------------------------------------------


def _target(study: optuna.Study, scale: float = 1.0):
    """The dev average of a trial, times ``scale`` (100 puts a ``pals-study`` study on the explorer's 0–100 scale);
    None where Optuna's own single objective serves as it is."""
    if scale == 1.0:
        return (lambda t: t.values[0]) if _multi(study) else None
    return lambda t: t.values[0] * scale


def _axis(scale: float) -> str:
    return AVERAGE if scale == 1.0 else f"{AVERAGE} (0–{scale:g})"


def _completed(study: optuna.Study) -> list[FrozenTrial]:
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def history_figure(study: optuna.Study, scale: float = 1.0) -> go.Figure:
    """Dev average of each trial (× ``scale``) and the best so far (Optuna's optimisation history)."""
    if not _completed(study):
        raise FigureUnavailable("no completed trial yet")
    fig = optuna.visualization.plot_optimization_history(study, target=_target(study, scale), target_name=_axis(scale))
    fig.update_layout(title=f"Optimisation history — {study.study_name}")
    n = max(1, len(study.get_trials(deepcopy=False)))
    fig.update_xaxes(tickmode="linear", tick0=0, dtick=max(1, math.ceil(n / 15)), title="trial")  # whole trial numbers
    return fig


MIN_IMPORTANCE_TRIALS = 10  # fANOVA's random forest on fewer trials ranks noise


def importance_figure(study: optuna.Study, scale: float = 1.0) -> go.Figure:
    """fANOVA importance of the parameters every completed trial shares, for the dev average (shares of its
    variance: the same on any scale)."""
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


def learning_curves_figure(study: optuna.Study, scale: float = 1.0) -> go.Figure:
    """The dev average (× ``scale``) each trial reported at each evaluation step (pruned trials stop early)."""
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
                y=[t.intermediate_values[s] * scale for s in steps],
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


def pareto_figure(study: optuna.Study, scale: float = 1.0) -> go.Figure:
    """Dev average (× ``scale``) against task-specific parameters; the Pareto-optimal trials joined by a line."""
    board = leaderboard(study)
    if board.empty or PARAMS not in board or board[PARAMS].isna().all():
        raise FigureUnavailable("no completed trial with a parameter count yet")
    board = board[board[PARAMS].notna()].copy()
    board[AVERAGE] = board[AVERAGE] * scale
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


def figures(study: optuna.Study, scale: float = 1.0) -> tuple[dict[str, go.Figure], dict[str, str]]:
    """(figures that can be drawn, {name: why not} for the others); scores × ``scale`` (the explorer passes 100 for a
    ``pals-study`` study, whose objective is a fraction)."""
    out, missing = {}, {}
    for name, fn in FIGURES.items():
        try:
            out[name] = fn(study, scale)
        except FigureUnavailable as e:
            missing[name] = str(e)
        except (RuntimeError, ValueError) as e:  # Optuna refuses (e.g. importances of constant targets)
            missing[name] = f"not available: {e}"
    return out, missing


# --- files ---------------------------------------------------------------------------------------


def write_report(study: optuna.Study, out_dir: str, *, plotlyjs: str = "cdn") -> dict[str, str]:
    """Write ``trials.csv``, ``leaderboard.csv`` and one HTML file per drawable figure into ``out_dir``.

    ``plotlyjs="cdn"`` keeps each HTML file small (plotly.js is fetched when opened); ``"inline"`` embeds it
    (about 4.5 MB per file) for viewing offline. Returns {name: path}, plus {name: "skipped: why"}."""
    os.makedirs(out_dir, exist_ok=True)
    written: dict[str, str] = {}
    for name, df in (("trials", trials_frame(study)), ("leaderboard", leaderboard(study))):
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
