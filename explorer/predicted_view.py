"""Predicted scores on the page: what the sizes between the measured ones would buy, and the one run worth
measuring next. The maths is ``pals_core.score_model``'s; here: reading the question's curves (cached), the figure
(measured points, fitted curve and its 80 % band, the budget's size), and the next-run card with its launch button.

How good the predictions are is measured by ``benchmarks/accuracy_model.py`` (each measured size held out in turn);
``HOLDOUT`` reads its committed result so the page quotes what was reached, not what was hoped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from pals_core import score_model as sm
from pals_core.budget.recommend import label
from pals_core.measured import default_roots
from pals_core.supervise.runs import launch
from pals_core.train.config import TrainConfig

from . import icons
from .figures.style import Fig, location_dash, method_color, styled
from .inputs import files_stamp

ROOT = Path(__file__).resolve().parents[1]
HOLDOUT = ROOT / "benchmarks" / "results" / "accuracy_model.json"


def holdout_text(path: Path = HOLDOUT) -> str:
    """What the committed hold-out check reached (``benchmarks/accuracy_model.py``): the held-out sizes inside the
    measured range (what the page ranks; all sizes where none is inside), single runs beside them, and the verdict
    against the goal — or a sentence saying the check has not been run."""
    try:
        r = json.loads(path.read_text())
        inner = r.get("interpolated") or {}
        s = inner if inner.get("points") else r
        runs = r.get("per_run") or {}
        runs = runs.get("interpolated") if (runs.get("interpolated") or {}).get("points") and s is inner else runs
        goal = r.get("goal") or {}
        met = s["mae"] <= goal.get("mae", 1.0) and s["coverage80"] >= goal.get("coverage80", 0.75)
        return (
            f"checked by holding out each measured size of the committed study in turn: MAE {s['mae']:.1f} points "
            f"on {s['points']} held-out sizes"
            + (" inside the measured range" if s is inner else "")
            + f", {s['coverage80']:.0%} of them inside their 80 % interval"
            + (
                f" ({runs['coverage80']:.0%} of {runs['points']} single runs inside theirs)"
                if runs.get("points")
                else ""
            )
            + f"; the goal, MAE ≤ {goal.get('mae', 1.0):g} and ≥ {goal.get('coverage80', 0.75):.0%} inside, is "
            + ("met" if met else "**not met**: read a prediction as a rough guide, its interval as the honest part")
            + "; BENCHMARKS.md)"
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "not yet checked against held-out runs (benchmarks/accuracy_model.py)"


def curve_label(f: sm.Family) -> str:
    return f"{f.method} @ {f.location}" if f.location else f.method


def predicted_figure(curves: Mapping[sm.Family, sm.Curve], budget_sizes: Mapping[sm.Family, int | None] = {}) -> object:
    """Dev average (0–100) against d_s (log): each family's measured runs (points), its fitted curve (solid inside
    the measured sizes, dotted outside: extrapolated) with the 80 % band of one new run, and the size the budget
    buys (a vertical line per method, labelled)."""
    fig = Fig()
    ys: list[float] = []
    for f, c in curves.items():
        color = method_color(f.method)
        name = curve_label(f)
        lo_d, hi_d = c.sizes[0], c.sizes[-1]
        at = budget_sizes.get(f)
        left = min(lo_d / 2, at or lo_d)
        right = max(hi_d * 2, at or hi_d)
        grid = [left * (right / left) ** (i / 60) for i in range(61)]
        preds = [c.line.at(d) for d in grid]  # the curve between sizes too (a design's d_s is an integer)
        inside = [lo_d <= d <= hi_d for d in grid]
        fig.add_trace(
            dict(
                type="scatter",
                x=grid + grid[::-1],
                y=[p.hi for p in preds] + [p.lo for p in preds[::-1]],
                fill="toself",
                fillcolor=_alpha(color, 0.15),
                line=dict(width=0),
                hoverinfo="skip",
                name=f"{name}: 80 % band",
                legendgroup=name,
                showlegend=False,
            )
        )
        for part, dash in ((True, location_dash(f.location)), (False, "dot")):
            xs = [d if ok == part else None for d, ok in zip(grid, inside)]
            fig.add_trace(
                dict(
                    type="scatter",
                    x=xs,
                    y=[p.mean for p in preds],
                    mode="lines",
                    line=dict(color=color, dash=dash, width=2),
                    name=name if part else f"{name} (extrapolated)",
                    legendgroup=name,
                    showlegend=part,
                    connectgaps=False,
                    hovertemplate="d_s %{x:.0f}: predicted %{y:.1f}<extra>" + name + "</extra>",
                )
            )
        fig.add_trace(
            dict(
                type="scatter",
                x=[d for d, _ in c.points],
                y=[y for _, y in c.points],
                mode="markers",
                marker=dict(color=color, size=8, line=dict(color="white", width=1)),
                name=f"{name}: measured runs",
                legendgroup=name,
                showlegend=False,
                hovertemplate="d_s %{x}: measured %{y:.2f}<extra>" + name + "</extra>",
            )
        )
        ys += [y for _, y in c.points] + [p.lo for p in preds] + [p.hi for p in preds]
        if at:
            p = c.predict(at)
            fig.add_vline(x=at, line=dict(color=color, dash="dash", width=1))
            fig.add_annotation(  # on a log axis an annotation's x is log10 of the value
                text=f"budget: {name} d_s {at}",
                xref="x",
                x=math.log10(at),
                yref="paper",
                y=1,
                yanchor="bottom",
                showarrow=False,
                font=dict(size=11, color=color),
            )
            fig.add_trace(
                dict(
                    type="scatter",
                    x=[at],
                    y=[p.mean],
                    error_y=dict(type="data", symmetric=False, array=[p.hi - p.mean], arrayminus=[p.mean - p.lo]),
                    mode="markers",
                    marker=dict(color=color, size=13, symbol="star", line=dict(color="black", width=1)),
                    name=f"{name} at the budget",
                    legendgroup=name,
                    showlegend=False,
                    hovertemplate=f"{name}, d_s {at}: {p.cell()}<extra>{p.basis()}</extra>",
                )
            )
    fig.update_xaxes(type="log")
    if ys:
        fig.update_yaxes(range=[min(ys) - 1, max(ys) + 1])
    return styled(
        fig,
        "Predicted: dev average vs adapter size, fitted to the measured runs (band: 80 % of one new run; dotted: "
        "extrapolated; dashed line: the size the budget buys)",
        "adapter size d_s (log)",
        "dev average, 0–100",
    )


def _alpha(hex_color: str, a: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{a})"


def options(picks: Sequence, curves: Mapping[sm.Family, sm.Curve]) -> list[sm.Option]:
    """The answer's candidates (``recommend.Pick``) as the next-run rule reads them: each with its prediction at its
    size, extrapolated ones included (they rank nothing, but may be the run worth making)."""
    out = []
    for p in picks:
        m = p.measured
        out.append(
            sm.Option(
                label(p.key),
                p.cost.d_s,
                predicted=sm.row_prediction(curves, p.cost),
                measured_mean=m.mean if m is not None else None,
                measured_ci95=m.ci95 if m is not None else None,
            )
        )
    return out


def family_of(curves: Mapping[sm.Family, sm.Curve], method: str, location: str | None) -> sm.Family | None:
    return next((f for f in curves if f.method == method and (f.location or "all") == (location or "all")), None)


def render(inp, picks: Sequence, curves: Mapping[sm.Family, sm.Curve]) -> None:
    """Below the answer: the next run worth measuring (with a launch button) and the predicted-score figure."""
    import streamlit as st

    if not curves:
        return
    fam0 = next(iter(curves))
    settings = sm.recipe_text(fam0)
    nxt = sm.next_run(options(picks, curves))
    if nxt is not None:
        pick = next(p for p in picks if p.cost.d_s == nxt.option.d_s and _label(p) == nxt.option.label)
        fam = family_of(curves, pick.cost.method, pick.cost.location)
        st.info(
            f"**Next run worth measuring:** {nxt.option.label} at d_s = {nxt.option.d_s} — {nxt.why}. "
            f"Trained as the runs behind the curves were ({settings}), it joins them and narrows the band.",
            icon=icons.NEXT_RUN,
        )
        cfg = curves[fam].next_config(nxt.option.d_s) if fam is not None else None
        cols = st.columns([1, 3])
        if cfg is not None and cols[0].button("Launch this run", key="launch_next_run"):
            _launch(cfg)
        location = f"@{pick.cost.location}" if pick.cost.location else ""
        size = "" if nxt.option.d_s is None else f":{nxt.option.d_s}"  # a sizeless method's design has no size
        cols[1].caption(
            f"Or as a study's first trial: `pals-study run design --first-trial {pick.cost.method}{location}{size} …`"
        )
    at = {
        f: next(
            (p.cost.d_s for p in picks if p.cost.method == f.method and (p.cost.location or "all") == f.location), None
        )
        for f in curves
    }
    with st.expander(f"Predicted scores: {len(curves)} method(s) fitted from measured runs ({settings})"):
        st.plotly_chart(predicted_figure(curves, at), key="predicted_figure", width="stretch")
        st.caption(
            "Each curve is score = a + b·ln(d_s) fitted to one method's runs of one recipe "
            "(docs/design.md 'Predicted scores'); "
            "the band holds 80 % of single new runs if the curve's form holds — "
            + holdout_text()
            + ". A size outside the measured ones is extrapolated: shown dotted, never ranked."
        )


def _label(pick) -> str:
    return label(pick.key)


def _launch(cfg: dict) -> None:
    import streamlit as st

    try:
        run = launch(TrainConfig.from_dict(cfg))
    except (ValueError, OSError, TypeError) as e:
        st.error(f"Could not launch: {' '.join(str(e).split())}")
    else:
        st.session_state["last_launched"] = run.id
        st.success(f"Launched run **{run.id}** (pid {run.pid}); its progress is in Runs & measured.")


def question_curves(inp, keys_of, found, design: str | None = None) -> dict:
    """The curves of the question's model and tasks (``keys_of(records, stamp)``: the page's cached fingerprints;
    ``found(roots)``: the page's runs, read once for its measured scores too) and its ``design`` settings
    (``calc.question_design``), of the one recipe and trunk setting with the most runs (``score_model.main_setting``);
    {} when there are none."""
    if inp is None or not inp.trainable or not inp.records:
        return {}
    try:
        keys = keys_of(inp.records, files_stamp(inp.records))
    except (OSError, ValueError):
        return {}
    roots = tuple(map(str, default_roots()))  # the explorer's measured results' roots
    return sm.main_setting(sm.question_curves(found(roots), None, inp.train_model, keys, design))
