"""The design space: which designs spend the budget for the least extra compute (Pareto front)?"""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go

from pals_core.budget import display
from pals_core.budget.costs import Cost, flops_ratio
from pals_core.budget.recommend import Key, key_of, label
from pals_core.budget.series import budget_used, pareto_front
from pals_core.budget.solver import Budget

from .legibility import label_annotation, place_labels
from .style import (
    CHOSEN_COLOR,
    FRONT_COLOR,
    PLOT_MARGIN_PX,
    Fig,
    figure_height,
    location_symbol,
    method_color,
    style_legend,
    styled,
)

UNUSED_FLOOR = 1e-4  # a design that spends all of the budget is drawn at 0.01 % left (log axis)
LABEL_BELOW = 0.97  # designs spending less of the budget than this are few: their names are written beside them
SPACE_MARGIN = dict(l=70, r=10, t=100, b=56)  # fixed: the labels are placed in pixels of the plot area
SPACE_PLOT_WIDTHS_PX = (290, 380, 500, 620, 740)  # its plot area (legend beside it) on a 1000 … 1600 px page
MARKER_PX, RING_PX = 13, 28  # a design's marker; the ring around the chosen one


def design_space_figure(
    costs: Sequence[Cost], budget: Budget, chosen: Key | None = None, recommended: Key | None = None
) -> go.Figure:
    """Budget left unused (x, log, reversed: right = spends more) vs forward FLOP overhead in % (y), every design
    that fits. One trace per method (marker = location); the Pareto front (trace ``Pareto front``) joins the designs
    no other fitting design beats on both (spends more for no more compute); the chosen design is ringed (trace
    ``chosen: <design>``), the recommended one labelled. Designs over the budget are not drawn (named in the title).
    Every label lies clear of every marker and of the other labels at each width the page draws the figure
    (``legibility.place_labels``: beside its marker, or moved away with a leader line)."""
    fig = Fig()
    feasible = [c for c in costs if c.feasible]
    used = {key_of(c): budget_used(c, budget) for c in feasible}

    def left(c: Cost) -> float:
        return max(UNUSED_FLOOR, 1.0 - used[key_of(c)])

    def over(c: Cost) -> float:
        return 100.0 * (flops_ratio(c) - 1.0)

    by_method: dict[str, list[Cost]] = {}
    for c in feasible:
        by_method.setdefault(c.method, []).append(c)
    style_legend(fig, by_method, {c.location for c in feasible})
    # name the designs where markers are sparse (less than LABEL_BELOW of the budget spent); those drawn at (nearly)
    # the same spot share one label; the chosen and the recommended designs say so in theirs
    sparse = sorted((c for c in feasible if used[key_of(c)] < LABEL_BELOW), key=lambda c: (used[key_of(c)], over(c)))
    spots: dict[tuple, list[Cost]] = {}
    for c in sparse:
        spots.setdefault((round(math.log10(left(c)) * 5) / 5, round(over(c) * 2) / 2), []).append(c)
    text: dict[Key, str] = {}
    for group in spots.values():
        names = [label(key_of(c)) for c in group if key_of(c) not in (chosen, recommended)]  # those have their own
        if names:
            text[key_of(group[0])] = names[0] if len(names) == 1 else f"{names[0]} + {len(names) - 1} more"
    if recommended is not None and recommended != chosen:
        text[recommended] = f"recommended: {label(recommended)}"
    if chosen is not None:
        text[chosen] = f"{'chosen = recommended' if chosen == recommended else 'chosen'}: {label(chosen)}"
    for method, cs in by_method.items():
        fig.add_trace(
            dict(
                type="scatter",
                x=[left(c) for c in cs],
                y=[over(c) for c in cs],
                mode="markers",
                name=method,
                legendgroup=method,
                showlegend=False,
                marker=dict(
                    color=method_color(method),
                    size=MARKER_PX,
                    symbol=[location_symbol(c.location) for c in cs],
                    line=dict(color="white", width=1),
                ),
                text=[label(key_of(c)) for c in cs],
                customdata=[
                    [
                        "—" if c.d_s is None else f"{c.d_s:,}",
                        display.share_text(used[key_of(c)]),
                        display.overhead_text(flops_ratio(c)),
                    ]
                    for c in cs
                ],
                hovertemplate="%{text}<br>d_s %{customdata[0]}<br>spends %{customdata[1]} of the budget"
                "<br>%{customdata[2]} FLOPs<extra></extra>",
            )
        )
    front = [feasible[i] for i in pareto_front([(used[key_of(c)], over(c)) for c in feasible])]
    front.sort(key=lambda c: used[key_of(c)])
    if front:
        fig.add_trace(
            dict(
                type="scatter",
                x=[left(c) for c in front],
                y=[over(c) for c in front],
                mode="lines",
                name="Pareto front",
                text=[label(key_of(c)) for c in front],
                line=dict(color=FRONT_COLOR, width=1.5, dash="dot"),
                hovertemplate="Pareto: %{text}<extra></extra>",
            )
        )
    pick = next((c for c in feasible if key_of(c) == chosen), None)
    if pick is not None:
        fig.add_trace(
            dict(
                type="scatter",
                x=[left(pick)],
                y=[over(pick)],
                mode="markers",
                name=f"chosen: {label(chosen)}",
                marker=dict(symbol="circle-open", size=RING_PX, color=CHOSEN_COLOR, line=dict(width=3)),
                hovertemplate=f"chosen: {label(chosen)}<extra></extra>",
            )
        )
    lo = min([left(c) for c in feasible] or [UNUSED_FLOOR])
    x_lo, x_hi = 0.1, math.log10(lo) - 0.3  # the x range (log10), left to right
    overs = [over(c) for c in feasible] or [0.0]
    y_pad = 0.08 * ((max(overs) - min(0.0, min(overs))) or 1.0)
    y_range = [min(0.0, min(overs)) - y_pad / 4, max(overs) + y_pad]
    keys = [key_of(c) for c in feasible]
    fx = [(x_lo - math.log10(left(c))) / (x_lo - x_hi) for c in feasible]
    fy = [(over(c) - y_range[0]) / (y_range[1] - y_range[0]) for c in feasible]
    radius = [(RING_PX if k == chosen else MARKER_PX) / 2 + 1 for k in keys]
    # as tall as the legend needs with these margins (``styled`` counts on PLOT_MARGIN_PX outside the plot area)
    full_height = figure_height(fig) + max(0, SPACE_MARGIN["t"] + SPACE_MARGIN["b"] - PLOT_MARGIN_PX)
    height = full_height - SPACE_MARGIN["t"] - SPACE_MARGIN["b"]
    places = place_labels(
        fx,
        fy,
        [text.get(k) for k in keys],
        widths=SPACE_PLOT_WIDTHS_PX,
        height=height,
        radius=radius,
        first=[i for i, k in enumerate(keys) if k in (chosen, recommended)],
    )
    for i, place in enumerate(places):  # each label beside its marker, or moved clear with a leader line
        if place is not None:
            c = feasible[i]
            fig.add_annotation(
                **label_annotation(math.log10(left(c)), over(c), text[keys[i]], place, radius[i]),
                bgcolor="rgba(255,255,255,0.85)",
            )
    bad = [label(key_of(c)) for c in costs if not c.feasible]
    fig.update_xaxes(
        type="log",
        autorange=False,
        range=[x_lo, x_hi],
        tickvals=[1, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 0.0003, 0.0001],
        ticktext=["100%", "30%", "10%", "3%", "1%", "0.3%", "0.1%", "0.03%", "≤0.01%"],
    )
    fig.update_yaxes(range=y_range, ticksuffix="%")
    title = "Design space<br><sup>right: spends more of the budget · lower: adds less compute</sup>"
    if bad:
        title += f"<br><sup>over budget, not drawn: {', '.join(bad[:6])}{', …' if len(bad) > 6 else ''}</sup>"
    return styled(
        fig,
        title,
        "budget left unused (log; right = more of the budget spent)",
        "forward FLOPs added, one task's path (%)",
        height=full_height,
        margin=SPACE_MARGIN,
    )
