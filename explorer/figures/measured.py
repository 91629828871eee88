"""Measured results: what dev score did each trained design reach for its task-specific parameters
(``measured_figure``), and which scored best, with the differences read against their intervals
(``measured_ranking_figure``)?"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from pals_core.budget.recommend import Key
from pals_core.measured import BASELINES

from .style import REFERENCE_COLOR, TOP_LABEL_PX, Fig, location_symbol, method_color, style_legend, styled


def measured_figure(results: Sequence, majority: float | None = None, chosen: Key | None = None) -> go.Figure:
    """Measured trade-off: dev average (0–100; mean ± 95 % interval where there are seeds) vs task-specific
    parameters (log), one colour per method, a marker per location; references: the majority class (a line),
    ``shared`` (no adapter) and ``separate`` (one fine-tuned model per task), labelled."""
    fig = Fig()
    by_method: dict[str, list] = {}
    for r in results:
        if r.params:
            by_method.setdefault(r.method, []).append(r)
    style_legend(fig, by_method, {r.location for rs in by_method.values() for r in rs})
    for method, rs in by_method.items():
        ref = method in BASELINES
        fig.add_trace(
            dict(
                type="scatter",
                x=[r.params for r in rs],
                y=[r.score.mean for r in rs],
                mode="markers+text" if ref else "markers",
                name=method,
                legendgroup=method,
                showlegend=False,
                text=[method] * len(rs) if ref else None,
                textposition="top center",
                error_y=dict(type="data", array=[r.score.ci95 or 0 for r in rs], visible=any(r.score.ci95 for r in rs)),
                marker=dict(
                    color=method_color(method),
                    size=[18 if r.key == chosen else 12 for r in rs],
                    symbol=[location_symbol(r.location) for r in rs],
                    line=dict(color=["black" if r.key == chosen else "white" for r in rs], width=2),
                ),
                customdata=[[r.design, r.score.text(), r.steps or "—", r.path] for r in rs],
                hovertemplate="%{customdata[0]}<br>dev avg %{customdata[1]}<br>%{x:,} task-specific params"
                "<br>%{customdata[2]} steps<br>%{customdata[3]}<extra></extra>",
            )
        )
    if majority is not None:
        fig.add_hline(
            y=majority,
            line=dict(color=REFERENCE_COLOR["majority"], dash="dash"),
            annotation_text=f"majority class {majority:.1f}",
            annotation_position="bottom right",
        )
    fig.update_xaxes(type="log")
    ys = [r.score.mean for rs in by_method.values() for r in rs] + ([majority] if majority is not None else [])
    if ys:
        fig.update_yaxes(range=[max(-100.0, min(ys) - 5), min(100.0, max(ys) + 5)])
    return styled(
        fig,
        "Measured: dev score vs task-specific parameters (higher and further left is better)",
        "task-specific parameters (log)",
        "dev average, 0–100 (paper Table 3 metric)",
    )


RANKING_TITLE = "Measured designs ranked: dev average with 95 % intervals (bars that overlap: no clear winner)"


def measured_ranking_figure(
    results: Sequence, majority: float | None = None, chosen: Key | None = None, title: str = RANKING_TITLE
) -> go.Figure:
    """Measured results ranked: one row per result (best on top), its dev average (0–100) with the 95 % t-interval over
    seeds as a bar where it was repeated, the majority class as a dashed line. Designs the trade-off plot draws on
    one spot (the same budget) are read apart here."""
    fig = Fig()
    ranked = sorted(results, key=lambda r: r.score.mean)  # plotly draws the first category at the bottom
    rows, count = [], {}
    for r in ranked:
        name = f"{r.design} · {r.runs_label()}"
        count[name] = count.get(name, 0) + 1
        rows.append(name if count[name] == 1 else f"{name} ({count[name]})")  # two results of one design: two rows
    fig.add_trace(
        dict(
            type="scatter",
            x=[r.score.mean for r in ranked],
            y=rows,
            mode="markers+text",
            showlegend=False,
            text=[r.score.value() for r in ranked],
            cliponaxis=False,
            textposition=["top right" if r.score.ci95 else "middle right" for r in ranked],  # clear of a bar
            error_x=dict(
                type="data", array=[r.score.ci95 or 0 for r in ranked], visible=any(r.score.ci95 for r in ranked)
            ),
            marker=dict(
                color=[method_color(r.method) for r in ranked],
                symbol=[location_symbol(r.location) for r in ranked],
                size=[16 if r.key == chosen else 11 for r in ranked],
                line=dict(color=["black" if r.key == chosen else "white" for r in ranked], width=2),
            ),
            customdata=[[r.path, r.steps or "—"] for r in ranked],
            hovertemplate="%{y}<br>dev avg %{text}<br>%{customdata[1]} steps<br>%{customdata[0]}<extra></extra>",
        )
    )
    if majority is not None:
        fig.add_vline(
            x=majority,
            line=dict(color=REFERENCE_COLOR["majority"], dash="dash"),
            annotation_text=f"majority class {majority:.1f}",
        )
    xs = [v for r in ranked for v in (r.score.mean - (r.score.ci95 or 0), r.score.mean + (r.score.ci95 or 0))]
    xs += [majority] if majority is not None else []
    if xs:
        span = max(xs) - min(xs) or 1.0
        fig.update_xaxes(range=[min(xs) - 0.05 * span, max(xs) + 0.15 * span])  # room for the labels on the right
    fig.update_yaxes(type="category", automargin=True)
    return styled(
        fig,
        title,
        "dev average, 0–100 (paper Table 3 metric)",
        "",
        height=140 + 34 * len(rows) + (TOP_LABEL_PX if majority is not None else 0),
        label_above=majority is not None,
    )
