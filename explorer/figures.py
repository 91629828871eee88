"""Pure functions: calculator rows → plotly figures and pandas tables. No streamlit, no maths.

Each figure answers one question a person has:
- ``size_curves_figure``: how many parameters per task does each method spend as d_s grows, where
  is the budget, and which size did the solver pick?
- ``design_space_figure``: at this budget, which designs buy the most task-specific parameters for
  the least extra compute (Pareto front)?
- ``breakdown_figure``: where do one task's parameters go (the paper's Table 1 as a picture)?
- ``scaling_figure``: what does it cost to run all tasks on one input as tasks are added?
- ``paper_figure``: does the calculator reproduce the paper's sizes (disagreements in red)?
- ``runs_figure``: what dev score did each trained design reach for its task-specific parameters?
"""
from __future__ import annotations

from typing import Iterable, Optional, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from pals_core.budget import METHODS, Cost, PaperRow
from pals_core.budget.series import ScalingPoint, flops_ratio, pareto_front
from pals_core.budget.units import human

from .calc import Curves, Key, key_of, label

_PALETTE = qualitative.D3 + qualitative.Set2
_DASH = {None: "solid", "all": "solid", "top": "dash", "bottom": "dot"}
_SYMBOL = {None: "diamond", "all": "circle", "top": "triangle-up", "bottom": "triangle-down"}
OK_FILL, BAD_FILL = "#e6f4ea", "#fde0dc"
FRONT_COLOR = "#222222"


def method_color(method: str) -> str:
    names = list(METHODS)
    i = names.index(method) if method in names else len(names) + sum(map(ord, method))
    return _PALETTE[i % len(_PALETTE)]


def _layout(fig: go.Figure, title: str, x: str, y: str, **kw) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0, xanchor="left"), xaxis_title=x, yaxis_title=y,
                      legend=dict(font=dict(size=11)), margin=dict(l=10, r=10, t=50, b=10),
                      hovermode="closest", height=480, **kw)
    return fig


def size_curves_figure(curves: Curves) -> go.Figure:
    """Per-task parameters vs d_s, one curve per design; the budget line; the chosen sizes marked.

    Traces: ``<design>`` (the curve, or a flat line for sizeless methods), ``chosen: <design>``
    (one marker at the solved / fixed d_s; symbol x when it does not fit) and ``budget``."""
    fig = go.Figure()
    xs = [p.d_s for c in curves.curves for p in c.points] or [1, 64]
    x0, x1 = min(xs), max(xs)
    for c in curves.curves:
        name, color = label(c.key), method_color(c.key[0])
        line = dict(color=color, dash=_DASH.get(c.key[1], "dashdot"), width=2)
        if c.points:
            fig.add_trace(go.Scatter(x=[p.d_s for p in c.points], y=[p.params_per_task for p in c.points], mode="lines",
                                     name=name, legendgroup=name, line=line,
                                     hovertemplate=f"{name}<br>d_s %{{x}}<br>%{{y:,.0f}} params/task<extra></extra>"))
        else:
            fig.add_trace(go.Scatter(x=[x0, x1], y=[c.flat, c.flat], mode="lines", name=f"{name} (no d_s)",
                                     legendgroup=name, line=dict(color=color, dash="longdashdot", width=1.5),
                                     hovertemplate=f"{name}: %{{y:,.0f}} params/task<extra></extra>"))
        if c.marked_d_s is not None:
            fig.add_trace(go.Scatter(
                x=[c.marked_d_s], y=[c.marked_params], mode="markers", name=f"chosen: {name}", legendgroup=name,
                showlegend=False, marker=dict(color=color, size=11, symbol="circle" if c.feasible else "x",
                                              line=dict(color="white", width=1.5)),
                hovertemplate=f"{name}<br>chosen d_s = %{{x}}<br>%{{y:,.0f}} params/task"
                              f"{'' if c.feasible else ' (over budget)'}<extra></extra>"))
    if curves.limit is not None:
        what = "largest task" if curves.view == "max" else "mean per task"
        fig.add_trace(go.Scatter(x=[x0, x1], y=[curves.limit, curves.limit], mode="lines", name="budget",
                                 line=dict(color="black", dash="dash", width=2),
                                 hovertemplate=f"budget: %{{y:,.0f}} params/task ({what})<extra></extra>"))
        fig.update_yaxes(range=[0, 2.0 * curves.limit])
    fig.update_xaxes(range=[0, x1])
    ylab = "params of the largest task" if curves.view == "max" else "task-specific params per task (mean)"
    return _layout(fig, "Parameters per task vs adapter size d_s (● = the chosen size)", "adapter size d_s", ylab)


def design_space_figure(costs: Sequence[Cost], chosen: Optional[Key] = None) -> go.Figure:
    """Extra parameters (x, log) vs forward FLOPs × base (y) of every design at this budget.

    One trace per method (symbol = location: ● all, ▲ top, ▼ bottom, ◆ none); designs over budget
    are grey crosses (trace ``over budget``); the chosen design is a red star. The Pareto front (trace ``Pareto front``) joins the
    feasible designs that no other feasible one beats: more task-specific parameters (capacity)
    for no more compute."""
    fig = go.Figure()
    feasible = [c for c in costs if c.feasible]
    by_method: dict[str, list[Cost]] = {}
    for c in feasible:
        by_method.setdefault(c.method, []).append(c)
    for method, cs in by_method.items():
        fig.add_trace(go.Scatter(
            x=[c.params_task_specific for c in cs], y=[flops_ratio(c) for c in cs], mode="markers", name=method,
            marker=dict(color=method_color(method), size=12, symbol=[_SYMBOL.get(c.location, "square") for c in cs],
                        line=dict(color="white", width=1)),
            text=[label(key_of(c)) for c in cs], customdata=[[c.d_s if c.d_s is not None else "—"] for c in cs],
            hovertemplate="%{text}<br>d_s %{customdata[0]}<br>%{x:,} extra params<br>%{y:.4f}× FLOPs<extra></extra>"))
    bad = [c for c in costs if not c.feasible]
    if bad:
        fig.add_trace(go.Scatter(
            x=[c.params_task_specific for c in bad], y=[flops_ratio(c) for c in bad], mode="markers", name="over budget",
            marker=dict(color="#aaaaaa", size=9, symbol="x"), text=[label(key_of(c)) for c in bad],
            hovertemplate="%{text} (over budget)<br>%{x:,} extra params<br>%{y:.4f}× FLOPs<extra></extra>"))
    front = [feasible[i] for i in pareto_front([(c.params_task_specific, flops_ratio(c)) for c in feasible])]
    front.sort(key=lambda c: c.params_task_specific)
    if front:
        fig.add_trace(go.Scatter(
            x=[c.params_task_specific for c in front], y=[flops_ratio(c) for c in front], mode="lines+markers",
            name="Pareto front", text=[label(key_of(c)) for c in front],
            line=dict(color=FRONT_COLOR, width=2), marker=dict(size=20, color="rgba(0,0,0,0)", line=dict(color=FRONT_COLOR, width=2)),
            hovertemplate="Pareto: %{text}<extra></extra>"))
    pick = next((c for c in costs if key_of(c) == chosen), None)
    if pick is not None:
        fig.add_trace(go.Scatter(
            x=[pick.params_task_specific], y=[flops_ratio(pick)], mode="markers", name=f"chosen: {label(chosen)}",
            marker=dict(symbol="star-open", size=24, color="#d62728", line=dict(width=2)),
            hovertemplate=f"chosen: {label(chosen)}<extra></extra>"))
    fig.update_xaxes(type="log")
    return _layout(fig, "Design space: parameters bought vs compute added",
                   "task-specific parameters, all tasks (log)", "forward FLOPs × base model (one task)")


def breakdown_frame(parts: Iterable[dict], top: bool = False) -> pd.DataFrame:
    """The ``breakdown`` rows with a readable place: 'layer 3', 'shared by layers' (PALs' V^E, V^D),
    'top block 0' / 'in/out projections' / 'top layer' (methods on top of BERT), 'shared by all tasks'
    (CA-MTL's conditional modules, counted once), 'task head', 'pooler'."""
    out = []
    for p in parts:
        if p.get("shared"):
            place = "shared by all tasks"
        elif p["part"] in ("task head", "pooler"):
            place = p["part"]
        elif p["layer"] is None and top:
            place = "in/out projections" if p["part"].startswith(("encoder", "decoder")) else "top layer"
        elif p["layer"] is None:
            place = "shared by layers"
        else:
            place = f"{'top block' if top else 'layer'} {p['layer']}"
        out.append({"place": place, "part": p["part"], "params": int(p["params"])})
    return pd.DataFrame(out, columns=["place", "part", "params"])


def _part_totals(frame: pd.DataFrame, by: str) -> dict[str, dict[str, int]]:
    """{part: {<by value>: params}}, in first-seen order."""
    out: dict[str, dict[str, int]] = {}
    for r in frame.to_dict("records"):
        cell = out.setdefault(r["part"], {})
        cell[r[by]] = cell.get(r[by], 0) + int(r["params"])
    return out


def breakdown_figure(frame: pd.DataFrame, title: str) -> go.Figure:
    """Stacked bars: one bar per place (layer, shared, head), one colour per part."""
    fig = go.Figure()
    for i, (part, by_place) in enumerate(_part_totals(frame, "place").items()):
        fig.add_trace(go.Bar(x=list(by_place), y=list(by_place.values()), name=part, marker_color=_PALETTE[i % len(_PALETTE)],
                             hovertemplate=f"{part}<br>%{{x}}: %{{y:,}} params<extra></extra>"))
    fig.update_layout(barmode="stack")
    return _layout(fig, title, "", "parameters (one task)")


def breakdown_compare_figure(frames: dict[str, pd.DataFrame]) -> go.Figure:
    """The paper's Table 1 as a picture: one stacked bar per design, one colour per part (one task)."""
    fig = go.Figure()
    totals = {d: {p: sum(v.values()) for p, v in _part_totals(f, "place").items()} for d, f in frames.items()}
    parts = list(dict.fromkeys(p for t in totals.values() for p in t))
    designs = list(frames)
    for i, part in enumerate(parts):
        ys = [int(t.get(part, 0)) for t in totals.values()]
        fig.add_trace(go.Bar(y=designs, x=ys, orientation="h", name=part, marker_color=_PALETTE[i % len(_PALETTE)],
                             hovertemplate=f"%{{y}}<br>{part}: %{{x:,}} params<extra></extra>"))
    fig.update_layout(barmode="stack")
    fig.update_yaxes(autorange="reversed")
    fig = _layout(fig, "Every design at this budget: one task's parameters by part", "parameters (one task)", "")
    fig.update_layout(height=max(360, 60 + 24 * len(designs)))
    return fig


def scaling_figure(series: dict[Key, list[ScalingPoint]], current: int) -> go.Figure:
    """All-task forward FLOPs per input vs number of tasks, and T separate fine-tuned models."""
    fig = go.Figure()
    first: Optional[list[ScalingPoint]] = None
    for key, pts in series.items():
        first = first or pts
        name = label(key)
        fig.add_trace(go.Scatter(x=[p.tasks for p in pts], y=[p.flops_all_tasks for p in pts], mode="lines", name=name,
                                 line=dict(color=method_color(key[0]), dash=_DASH.get(key[1], "dashdot")),
                                 hovertemplate=f"{name}<br>%{{x}} tasks: %{{y:.4s}}FLOPs<extra></extra>"))
    if first:
        fig.add_trace(go.Scatter(x=[p.tasks for p in first], y=[p.flops_separate for p in first], mode="lines",
                                 name="separate fine-tuned models", line=dict(color="black", dash="dash", width=3),
                                 hovertemplate="separate models<br>%{x} tasks: %{y:.4s}FLOPs<extra></extra>"))
    fig.add_vline(x=current, line=dict(color="grey", dash="dot"), annotation_text=f"T = {current}")
    fig.update_yaxes(tickformat="~s", rangemode="tozero")
    return _layout(fig, "FLOPs to run every task on one input (layers below the lowest adapter run once)",
                   "number of tasks T", "forward FLOPs per sequence, all tasks")


def paper_frame(rows: Sequence[PaperRow]) -> pd.DataFrame:
    out = []
    for r in rows:
        fmt = (lambda v: f"{v:.2f}×") if r.quantity == "ratio" else (lambda v: f"{v:.0f}")
        out.append({"configuration": r.label, "budget": r.budget, "compares": r.quantity, "paper": fmt(r.paper),
                    "calculator": fmt(r.ours), "task-specific params": human(r.params_task_specific),
                    "× BERT": f"{r.ratio:.3f}", "reproduces": "yes" if r.reproduces else f"NO: {r.difference}"})
    return pd.DataFrame(out)


def paper_figure(rows: Sequence[PaperRow]) -> go.Figure:
    """The paper-reproduction table; rows that disagree with the paper are filled red."""
    frame = paper_frame(rows)
    fills = [OK_FILL if r.reproduces else BAD_FILL for r in rows]
    fig = go.Figure(go.Table(
        columnwidth=[3, 1.2, 1, 1, 1.2, 1.4, 1, 2.6],
        header=dict(values=[f"<b>{c}</b>" for c in frame.columns], fill_color="#eeeeee", align="left"),
        cells=dict(values=[frame[c].tolist() for c in frame.columns], fill_color=[fills] * len(frame.columns),
                   align="left", height=28, font=dict(size=13))))
    fig.update_layout(margin=dict(l=0, r=0, t=40, b=0), height=90 + 30 * len(rows),
                      title=dict(text="Stickland & Murray (2019), BERT-base, 8 GLUE tasks, paper convention, h_s = 12",
                                 x=0, xanchor="left"))
    return fig


def table_frame(costs: Sequence[Cost]) -> pd.DataFrame:
    """The main table: one row per design, in the given order (feasible first)."""
    out = []
    for c in costs:
        out.append({
            "design": label(key_of(c)), "method": c.method, "location": c.location or "—",
            "d_s": "—" if c.d_s is None else str(c.d_s), "fits": bool(c.feasible),
            "params / task": max(c.params_per_task) if c.params_per_task else c.params_adapter_per_task,
            "task-specific (all tasks)": c.params_task_specific,
            "× base": round(c.ratio, 5),
            "FLOPs × base": round(flops_ratio(c), 5),
            "all-task FLOPs / input": c.flops_all_tasks_per_seq,
            "train step FLOPs": c.flops_train_step_per_seq,
            "real optimum d_s": None if c.d_s_unconstrained is None else round(c.d_s_unconstrained, 1),
        })
    return pd.DataFrame(out)


def runs_frame(runs: Sequence[dict]) -> pd.DataFrame:
    """Finished runs (dicts from ``registry.Run.row``) as a table."""
    cols = ["run", "status", "method", "location", "d_s", "tasks", "steps", "dev average", "task-specific params",
            "wall time (s)"]
    return pd.DataFrame([{k: r.get(k) for k in cols} for r in runs], columns=cols)


def runs_figure(runs: Sequence[dict]) -> go.Figure:
    """Measured trade-off: dev average (y) vs task-specific parameters (x) of each finished run."""
    fig = go.Figure()
    by_method: dict[str, list[dict]] = {}
    for r in runs:
        if r.get("dev average") is not None and r.get("task-specific params"):
            by_method.setdefault(str(r.get("method")), []).append(r)
    for method, rs in by_method.items():
        fig.add_trace(go.Scatter(
            x=[r["task-specific params"] for r in rs], y=[r["dev average"] for r in rs], mode="markers", name=method,
            marker=dict(color=method_color(method), size=12), text=[r["run"] for r in rs],
            customdata=[[r.get("d_s") if r.get("d_s") is not None else "—", r.get("tasks")] for r in rs],
            hovertemplate="%{text}<br>d_s %{customdata[0]} · %{customdata[1]}<br>%{x:,} params · dev avg %{y:.4f}<extra></extra>"))
    fig.update_xaxes(type="log")
    ys = [r["dev average"] for rs in by_method.values() for r in rs]
    fig.update_yaxes(range=[min([0.0, *ys]) - 0.05, 1.0])  # scores are fractions (MCC, Pearson may dip below 0)
    return _layout(fig, "Measured: dev score vs task-specific parameters", "task-specific parameters (log)",
                   "dev average (paper Table 3 metric)")
