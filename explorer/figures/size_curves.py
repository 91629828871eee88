"""Parameters per task vs adapter size d_s: how many parameters per task does each method spend as d_s grows, where is
the budget, and which size did the solver pick?"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from pals_core.budget.recommend import Key, label
from pals_core.pricing.units import human

from ..calc import Curves
from .style import BUDGET_COLOR, CHOSEN_COLOR, OVER_COLOR, Fig, location_dash, location_symbol, method_color, styled


def _log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Ticks 1, 2, 5 × 10^k between lo and hi, written as people read counts (10k, 2M)."""
    vals = []
    for k in range(int(math.floor(math.log10(max(lo, 1e-12)))), int(math.ceil(math.log10(max(hi, 1e-12)))) + 1):
        for m in (1, 2, 5):
            v = m * 10**k
            if lo <= v <= hi:
                vals.append(v)
    return vals, [human(v) for v in vals]


def size_curves_figure(curves: Curves, chosen: Key | None = None) -> go.Figure:
    """Per-task parameters (log) vs d_s, one curve per design; the budget line; each design's solved size.

    Traces: ``<design>`` (the curve; a flat line ``<design> (no d_s)`` for sizeless methods), ``chosen: <design>``
    (a marker at the solved / fixed d_s; an x when it does not fit) and ``budget``. Designs over the budget are grey
    and dotted and do not set the axes; the chosen design is drawn thick with a ringed marker."""
    fig = Fig()
    feasible_sizes = [c.marked_d_s for c in curves.curves if c.feasible and c.marked_d_s is not None]
    all_x = [p.d_s for c in curves.curves for p in c.points] or [1, 64]
    x1 = max(all_x) if not feasible_sizes else min(max(all_x), max(feasible_sizes) * 1.6)
    y_seen = [c.marked_params for c in curves.curves if c.feasible and c.marked_params > 0]
    y_seen += [curves.limit] if curves.limit else []
    y_lo = min([p.params_per_task for c in curves.curves for p in c.points if p.params_per_task > 0] + y_seen or [1.0])
    y_hi = max(y_seen or [y_lo * 10]) * 3
    above = []
    if curves.limit is not None:  # first, so that every marker is drawn above it
        what = "largest task" if curves.view == "max" else "mean per task"
        fig.add_trace(
            dict(
                type="scatter",
                x=[0, x1],
                y=[curves.limit, curves.limit],
                mode="lines",
                name="budget",
                line=dict(color=BUDGET_COLOR, dash="dash", width=2),
                hovertemplate=f"budget: %{{y:,.0f}} params/task ({what})<extra></extra>",
            )
        )
    for c in curves.curves:
        name, is_chosen = label(c.key), c.key == chosen
        color = method_color(c.key[0]) if c.feasible else OVER_COLOR
        width = 4 if is_chosen else 2
        shown = name + ("" if c.feasible else " (over budget)")
        if c.points:
            fig.add_trace(
                dict(
                    type="scatter",
                    x=[p.d_s for p in c.points],
                    y=[p.params_per_task for p in c.points],
                    mode="lines",
                    name=shown,
                    legendgroup=name,
                    line=dict(color=color, width=width, dash=location_dash(c.key[1]) if c.feasible else "dot"),
                    hovertemplate=f"{name}<br>d_s %{{x}}<br>%{{y:,.0f}} params/task<extra></extra>",
                )
            )
        else:
            fig.add_trace(
                dict(
                    type="scatter",
                    x=[0, x1],
                    y=[c.flat, c.flat],
                    mode="lines",
                    name=f"{shown} (no d_s)",
                    legendgroup=name,
                    line=dict(color=color, dash="longdashdot", width=width),
                    hovertemplate=f"{name}: %{{y:,.0f}} params/task<extra></extra>",
                )
            )
            if c.flat and c.flat > y_hi:
                above.append(f"{name} {human(c.flat)}")
        if c.marked_d_s is not None:
            fig.add_trace(
                dict(
                    type="scatter",
                    x=[c.marked_d_s],
                    y=[c.marked_params],
                    mode="markers",
                    name=f"chosen: {name}",
                    legendgroup=name,
                    showlegend=False,
                    marker=dict(
                        color=color,
                        size=16 if is_chosen else 12,
                        symbol=location_symbol(c.key[1]) if c.feasible else "x",
                        line=dict(color=CHOSEN_COLOR if is_chosen else "white", width=2.5 if is_chosen else 1),
                    ),
                    hovertemplate=f"{name}<br>solved d_s = %{{x}}<br>%{{y:,.0f}} params/task"
                    f"{'' if c.feasible else ' (over budget)'}<extra></extra>",
                )
            )
    notes = []
    if above:
        notes.append("↑ above the chart: " + ", ".join(above))
    same = coinciding(curves)
    if same:
        notes.append("drawn on top of each other (within 2 %): " + "; ".join(" ≈ ".join(g) for g in same))
    if notes:
        fig.add_annotation(
            text=" · ".join(notes),
            xref="paper",
            yref="paper",
            x=0,
            y=1.0,
            xanchor="left",
            yanchor="bottom",
            showarrow=False,
            font=dict(size=11, color="#555"),
        )
    vals, texts = _log_ticks(y_lo / 1.5, y_hi)
    fig.update_yaxes(type="log", range=[math.log10(y_lo / 1.5), math.log10(y_hi)], tickvals=vals, ticktext=texts)
    fig.update_xaxes(range=[0, x1])
    ylab = "params of the largest task (log)" if curves.view == "max" else "task-specific params per task (log)"
    return styled(
        fig,
        "Parameters per task vs adapter size d_s: each curve meets the budget line at its solved size",
        "adapter size d_s",
        ylab,
    )


def coinciding(curves: Curves, within: float = 0.02) -> list[list[str]]:
    """Groups of sized curves that lie on top of each other (every drawn point within ``within``): named in the
    figure so that no line hides another unsaid (e.g. Houlsby and LoRA both cost 4·K·d·d_s)."""
    groups: list[list] = []
    for c in curves.curves:
        if not c.points:
            continue
        for g in groups:
            ref = g[0]
            half = len(ref.points) // 2  # compared where the curves are drawn large (biases matter at tiny d_s)
            if [p.d_s for p in ref.points] == [p.d_s for p in c.points] and all(
                abs(a.params_per_task - b.params_per_task) <= within * max(a.params_per_task, 1)
                for a, b in zip(ref.points[half:], c.points[half:])
            ):
                g.append(c)
                break
        else:
            groups.append([c])
    return [[label(c.key) for c in g] for g in groups if len(g) > 1]
