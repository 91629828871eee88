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

from .style import CHOSEN_COLOR, FRONT_COLOR, Fig, location_symbol, method_color, style_legend, styled

UNUSED_FLOOR = 1e-4  # a design that spends all of the budget is drawn at 0.01 % left (log axis)
SPACE_PLOT_PX = 300.0  # the design space's plot area at its narrowest (1000 px page, legend beside it)
LABEL_CHAR_PX = 6.4  # one character of a label at font size 11
LABEL_BELOW = 0.97  # designs spending less of the budget than this are few: their names are written beside them


def design_space_figure(
    costs: Sequence[Cost], budget: Budget, chosen: Key | None = None, recommended: Key | None = None
) -> go.Figure:
    """Budget left unused (x, log, reversed: right = spends more) vs forward FLOP overhead in % (y), every design
    that fits. One trace per method (marker = location); the Pareto front (trace ``Pareto front``) joins the designs
    no other fitting design beats on both (spends more for no more compute); the chosen design is ringed (trace
    ``chosen: <design>``), the recommended one labelled. Designs over the budget are not drawn (named in the title)."""
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
    # name the designs where markers are sparse (less than LABEL_BELOW of the budget spent), alternately above and below
    sparse = sorted((c for c in feasible if used[key_of(c)] < LABEL_BELOW), key=lambda c: (used[key_of(c)], over(c)))
    spots: dict[tuple, list[Cost]] = {}  # designs drawn at (nearly) the same spot share one label
    for c in sparse:
        spots.setdefault((round(math.log10(left(c)) * 5) / 5, round(over(c) * 2) / 2), []).append(c)
    lo = min([left(c) for c in feasible] or [UNUSED_FLOOR])
    x_lo, x_hi = 0.1, math.log10(lo) - 0.3  # the x range (log10), left to right

    def side(c: Cost, text: str) -> str:
        """Where a label fits on the narrowest plot the page draws: beside an edge it is written away from it."""
        at = (x_lo - math.log10(left(c))) / (x_lo - x_hi) * SPACE_PLOT_PX  # px from the plot's left edge
        half = len(text) * LABEL_CHAR_PX / 2
        return "right" if at < half else ("left" if SPACE_PLOT_PX - at < half else "center")

    place, text = {}, {}
    for i, group in enumerate(spots.values()):
        names = [label(key_of(c)) for c in group if key_of(c) not in (chosen, recommended)]  # those have their own
        if not names:
            continue
        written = names[0] if len(names) == 1 else f"{names[0]} + {len(names) - 1} more"
        place[key_of(group[0])] = f"{'top' if i % 2 == 0 else 'bottom'} {side(group[0], written)}"
        text[key_of(group[0])] = written
    for method, cs in by_method.items():
        fig.add_trace(
            dict(
                type="scatter",
                x=[left(c) for c in cs],
                y=[over(c) for c in cs],
                mode="markers+text",
                name=method,
                legendgroup=method,
                showlegend=False,
                textfont=dict(size=11, color="#444"),
                textposition=[place.get(key_of(c), "top center") for c in cs],
                texttemplate=[text.get(key_of(c), "") for c in cs],
                marker=dict(
                    color=method_color(method),
                    size=13,
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
    for key, text in ((recommended, "recommended"), (chosen, "chosen")):
        pick = next((c for c in feasible if key_of(c) == key), None)
        if pick is None or (text == "recommended" and key == chosen):
            continue
        if text == "chosen" and key == recommended:
            text = "chosen = recommended"
        if text.startswith("chosen"):
            fig.add_trace(
                dict(
                    type="scatter",
                    x=[left(pick)],
                    y=[over(pick)],
                    mode="markers",
                    name=f"chosen: {label(key)}",
                    marker=dict(symbol="circle-open", size=28, color=CHOSEN_COLOR, line=dict(width=3)),
                    hovertemplate=f"chosen: {label(key)}<extra></extra>",
                )
            )
        toward = -1 if text.startswith("chosen") else 1
        if left(pick) > 0.5:  # at the plot's left edge: written to its right, never cut by the edge
            toward = 1
        fig.add_annotation(
            x=math.log10(left(pick)),
            y=over(pick),
            text=f"{text}: {label(key)}",
            showarrow=True,
            arrowhead=2,
            ax=50 * toward,
            ay=-45 if toward < 0 or text == "recommended" else -70,
            xanchor="left" if toward > 0 else "right",
            font=dict(size=12),
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
    fig.update_yaxes(rangemode="tozero", ticksuffix="%")
    title = "Design space<br><sup>right: spends more of the budget · lower: adds less compute</sup>"
    if bad:
        title += f"<br><sup>over budget, not drawn: {', '.join(bad[:6])}{', …' if len(bad) > 6 else ''}</sup>"
    return styled(
        fig,
        title,
        "budget left unused (log; right = more of the budget spent)",
        "forward FLOPs added, one task's path (%)",
    )
