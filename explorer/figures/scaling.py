"""All tasks on one input: what does it cost to run every task on one input as tasks are added, against T separate
fine-tuned models?"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import plotly.graph_objects as go

from pals_core.budget.recommend import Key, label
from pals_core.budget.series import ScalingPoint
from pals_core.pricing.units import GIGA

from .style import OVER_COLOR, Fig, location_dash, method_color, styled


def scaling_figure(
    series: dict[Key, list[ScalingPoint]], current: int, chosen: Key | None = None, over: Iterable[Key] = ()
) -> go.Figure:
    """All-task forward GFLOPs per input vs number of tasks, one line per design, and T separate fine-tuned models."""
    fig = Fig()
    first: list[ScalingPoint] | None = None
    over = set(over)
    for key, pts in series.items():
        first = first or pts
        name = label(key) + (" (over budget)" if key in over else "")
        fig.add_trace(
            dict(
                type="scatter",
                x=[p.tasks for p in pts],
                y=[p.flops_all_tasks / GIGA for p in pts],
                mode="lines",
                name=name,
                line=dict(
                    color=OVER_COLOR if key in over else method_color(key[0]),
                    dash=location_dash(key[1]),
                    width=4 if key == chosen else 2,
                ),
                hovertemplate=f"{name}<br>%{{x}} tasks: %{{y:,.1f}} GFLOPs<extra></extra>",
            )
        )
    if first:
        fig.add_trace(
            dict(
                type="scatter",
                x=[p.tasks for p in first],
                y=[p.flops_separate / GIGA for p in first],
                mode="lines",
                name="separate fine-tuned models",
                line=dict(color="black", dash="dash", width=3),
                hovertemplate="separate models<br>%{x} tasks: %{y:,.1f} GFLOPs<extra></extra>",
            )
        )
    fig.add_vline(x=current, line=dict(color="grey", dash="dot"), annotation_text=f"your T = {current}")
    fig.update_yaxes(rangemode="tozero")
    return styled(
        fig,
        "Running every task on one input: below the separate-models line, sharing saves compute",
        "number of tasks T",
        "forward GFLOPs per sequence, all tasks",
        label_above=True,  # "your T = …" above the plot, clear of the subtitle
    )


SAME_AS_SEPARATE = 0.005  # within 0.5 % of T separate models' FLOPs: "as much as separate models"


def scaling_groups(series: Mapping[Key, Sequence[ScalingPoint]], tasks: int) -> dict[str, list[Key]]:
    """The designs of the all-tasks plot at ``tasks`` tasks, by where they are against T separate fine-tuned models:
    ``below`` (sharing saves compute), ``same`` (within ``SAME_AS_SEPARATE``: no layer shared, almost no FLOPs of
    their own) and ``above`` (no layer shared, and their adapters add FLOPs) — what the plot's caption says."""
    out: dict[str, list[Key]] = {"below": [], "same": [], "above": []}
    for key, pts in series.items():
        p = next((q for q in pts if q.tasks == tasks), None)
        if p is None or not p.flops_separate:
            continue
        r = p.flops_all_tasks / p.flops_separate
        out["below" if r < 1 - SAME_AS_SEPARATE else "same" if r <= 1 + SAME_AS_SEPARATE else "above"].append(key)
    return out
