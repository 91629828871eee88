"""Pure functions: calculator rows → plotly figures and pandas tables. No streamlit, no maths.

Each figure answers one question a person has, and says how to read it in its title:
- ``size_curves_figure``: how many parameters per task does each method spend as d_s grows, where is the
  budget, and which size did the solver pick?
- ``design_space_figure``: which designs spend the budget for the least extra compute (Pareto front)?
- ``breakdown_figure`` / ``breakdown_compare_figure``: where do one task's parameters go?
- ``scaling_figure``: what does it cost to run all tasks on one input as tasks are added?
- ``paper_figure``: does the calculator reproduce the paper's sizes (disagreements in red)?
- ``measured_figure``: what dev score did each trained design reach for its task-specific parameters?
- ``measured_ranking_figure``: which measured design scored best, and are the differences outside the intervals?

One style everywhere: a colour per method (``method_color``: its place in the method registry, so a new
method gets its own colour with no edit here), a marker and a line dash per location (``location_symbol``),
the chosen design drawn larger with a black ring, designs over the budget grey and kept off the axes' scale.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Optional, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from pals_core.methods.registry import METHODS
from pals_core.budget.solver import Budget
from pals_core.budget.costs import Cost
from pals_core.budget.paper import PaperRow
from pals_core.budget import display
from pals_core.budget.costs import flops_ratio
from pals_core.budget.series import ScalingPoint, budget_used, pareto_front, wider_than_model
from pals_core.pricing.units import human

from .calc import Curves
from pals_core.budget.recommend import Key, key_of, label
from pals_core.measured import BASELINES

# D3 without its grey (grey means "over budget" here), then more distinct hues: one per registered method
_PALETTE = [c for c in qualitative.D3 if c != "#7F7F7F"] + [
    "#000080",
    "#8B008B",
    "#FF1493",
    "#006400",
    "#B8860B",
    "#4B0082",
]
_DASH = {"all": "solid", "top": "dash", "bottom": "dot", None: "solid"}
_SYMBOL = {"all": "circle", "top": "triangle-up", "bottom": "triangle-down", None: "diamond"}
SYMBOL_TEXT = {
    "all": "● all layers",
    "top": "▲ top",
    "bottom": "▼ bottom",
    "custom": "■ your layers",
    None: "◆ no location",
}
OK_FILL, BAD_FILL = "#e6f4ea", "#fde0dc"
FRONT_COLOR, BUDGET_COLOR, OVER_COLOR, CHOSEN_COLOR = "#222222", "#000000", "#b0b0b0", "#000000"
GIGA = 1e9
REFERENCE_COLOR = {"majority": "#7f7f7f", "separate": "#000000"}


def method_color(method: str) -> str:
    """The method's colour: its index in the method registry (``pals_core.budget.METHODS``)."""
    names = list(METHODS)
    if method in REFERENCE_COLOR:
        return REFERENCE_COLOR[method]
    i = names.index(method) if method in names else len(names) + sum(map(ord, method))
    return _PALETTE[i % len(_PALETTE)]


def location_symbol(location: Optional[str]) -> str:
    return _SYMBOL.get(location, "square")


def location_dash(location: Optional[str]) -> str:
    return _DASH.get(location, "dashdot")


class _Fig:
    """A figure as plain data (``data`` traces, ``layout``), turned into a ``go.Figure`` once, unvalidated: plotly's
    per-property validation costs ~10× the page's whole redraw budget, and these figures are built from our own
    literals. The methods mirror ``go.Figure``'s."""

    def __init__(self) -> None:
        self.data: list[dict] = []
        self.layout: dict = {}

    def add_trace(self, trace: dict) -> None:
        self.data.append(trace)

    def update_layout(self, **kw) -> None:
        _merge(self.layout, kw)

    def update_xaxes(self, **kw) -> None:
        _merge(self.layout.setdefault("xaxis", {}), kw)

    def update_yaxes(self, **kw) -> None:
        _merge(self.layout.setdefault("yaxis", {}), kw)

    def add_annotation(self, **kw) -> None:
        self.layout.setdefault("annotations", []).append(kw)

    def add_hline(self, y: float, line: dict, annotation_text: str = "", **_) -> None:
        self.layout.setdefault("shapes", []).append(
            dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=y, y1=y, line=line)
        )
        if annotation_text:
            self.add_annotation(
                text=annotation_text,
                xref="paper",
                x=1,
                xanchor="right",
                yref="y",
                y=y,
                yanchor="top",
                showarrow=False,
                font=dict(size=11, color="#555"),
            )

    def add_vline(self, x: float, line: dict, annotation_text: str = "", **_) -> None:
        self.layout.setdefault("shapes", []).append(
            dict(type="line", yref="paper", y0=0, y1=1, xref="x", x0=x, x1=x, line=line)
        )
        if annotation_text:
            self.add_annotation(
                text=annotation_text,
                yref="paper",
                y=1,
                yanchor="bottom",
                xref="x",
                x=x,
                showarrow=False,
                font=dict(size=11, color="#555"),
            )

    def figure(self) -> "Figure":
        return Figure({"data": self.data, "layout": self.layout})


class Figure(go.Figure):
    """A ``go.Figure`` that holds its traces and layout as plain data, handed to ``st.plotly_chart`` as they are
    (``to_dict``). Reading them as plotly objects: ``full()`` (built unvalidated, once)."""

    def __init__(self, spec: dict) -> None:  # noqa: D107 — plotly's own __init__ (a template copy, ~10 ms) is skipped:
        self._spec = spec  # everything this object is used for goes through to_dict() or full()
        self._full: Optional[go.Figure] = None

    def __repr__(self) -> str:
        return f"Figure({len(self._spec['data'])} traces: {self._spec['layout'].get('title', {}).get('text', '')!r})"

    def to_dict(self) -> dict:
        return {"data": self._spec["data"], "layout": self._spec["layout"]}

    def to_plotly_json(self) -> dict:
        return self.to_dict()

    def full(self) -> go.Figure:
        if self._full is None:
            self._full = go.Figure(self._spec, _validate=False)
        return self._full


def _merge(into: dict, kw: dict) -> None:
    for k, v in kw.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v


_AXIS = dict(gridcolor="#e8e8e8", zerolinecolor="#cccccc", linecolor="#cccccc")


TITLE_CHARS = 60  # a title longer than this is cut in a figure 1000 px wide: its part after ': ' becomes a subtitle
LEGEND_ENTRY_PX = 20  # one legend line at font size 11 (plotly: ~19 px), with the gap between groups kept at 2 px
LEGEND_GAP_PX = 2
PLOT_MARGIN_PX = 120  # the figure's height outside its plot area: title and margins (70), x-axis ticks and title (50)


def legend_height(fig: _Fig) -> int:
    """The height (px) the figure's legend needs to show every entry at once: one line per trace in the legend and
    the gap between groups. A figure shorter than this scrolls its legend (entries out of sight)."""
    shown = [t for t in fig.data if t.get("showlegend", True) is not False and t.get("name")]
    groups = {t.get("legendgroup") or id(t) for t in shown}
    return len(shown) * LEGEND_ENTRY_PX + len(groups) * LEGEND_GAP_PX


TOP_LABEL_PX = 22  # a label written above the plot area (a vertical reference line's): its own line under the title


def _layout(fig: _Fig, title: str, x: str, y: str, *, height: int = 480, label_above: bool = False, **kw) -> go.Figure:
    """Every figure's look; tall enough that its legend shows every entry without a scroll box. ``label_above``: a
    label sits just above the plot area (``add_vline``'s): the title is pinned to the top and the margin grows by
    a line, so that the label never runs into the title's subtitle."""
    height = max(height, legend_height(fig) + PLOT_MARGIN_PX)
    if "<br>" not in title and len(title) > TITLE_CHARS and ": " in title:  # a long title is not cut at 1000 px
        head, tail = title.split(": ", 1)
        title = f"{head}<br><sup>{tail[0].upper()}{tail[1:]}</sup>"
    top = 60 + (2 * TOP_LABEL_PX if label_above else 0)
    pinned = dict(y=1, yref="container", yanchor="top", pad=dict(t=22)) if label_above else {}
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15), **pinned),
        xaxis=dict(title=dict(text=x), **_AXIS),
        yaxis=dict(title=dict(text=y), **_AXIS),
        legend=dict(font=dict(size=11), groupclick="togglegroup", tracegroupgap=LEGEND_GAP_PX),
        margin=dict(l=10, r=10, t=top, b=10),
        hovermode="closest",
        height=height,
        plot_bgcolor="white",
        paper_bgcolor="white",
        **kw,
    )
    return fig.figure()


def _log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Ticks 1, 2, 5 × 10^k between lo and hi, written as people read counts (10k, 2M)."""
    vals = []
    for k in range(int(math.floor(math.log10(max(lo, 1e-12)))), int(math.ceil(math.log10(max(hi, 1e-12)))) + 1):
        for m in (1, 2, 5):
            v = m * 10**k
            if lo <= v <= hi:
                vals.append(v)
    return vals, [human(v) for v in vals]


# --- parameters per task vs d_s ------------------------------------------------------------------


def size_curves_figure(curves: Curves, chosen: Optional[Key] = None) -> go.Figure:
    """Per-task parameters (log) vs d_s, one curve per design; the budget line; each design's solved size.

    Traces: ``<design>`` (the curve; a flat line ``<design> (no d_s)`` for sizeless methods), ``chosen: <design>``
    (a marker at the solved / fixed d_s; an x when it does not fit) and ``budget``. Designs over the budget are grey
    and dotted and do not set the axes; the chosen design is drawn thick with a ringed marker."""
    fig = _Fig()
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
    return _layout(
        fig,
        "Parameters per task vs adapter size d_s: each curve meets the budget line at its solved size",
        "adapter size d_s",
        ylab,
    )


def _style_legend(fig: _Fig, methods: Iterable[str], locations: Iterable[Optional[str]]) -> None:
    """Legend entries that say what colour and marker mean: a square of each method's colour (clicking it hides
    the method's points) and a grey marker of each location's symbol."""
    for method in methods:
        fig.add_trace(
            dict(
                type="scatter",
                x=[None],
                y=[None],
                mode="markers",
                name=method,
                legendgroup=method,
                marker=dict(color=method_color(method), size=11, symbol="square"),
            )
        )
    for loc in sorted(
        set(locations),
        key=lambda l: ("all", "top", "bottom", None).index(l) if l in ("all", "top", "bottom", None) else 4,
    ):
        text = SYMBOL_TEXT.get(loc, SYMBOL_TEXT["custom"])
        fig.add_trace(
            dict(
                type="scatter",
                x=[None],
                y=[None],
                mode="markers",
                name=text,
                legendgroup="locations",
                marker=dict(color="#666666", size=11, symbol=location_symbol(loc)),
            )
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


# --- labels that can be read --------------------------------------------------------------------------


def readable_labels(
    points: Sequence[tuple[float, float]],
    texts: Sequence[str],
    *,
    first: Sequence[int] = (),
    width: float = 520.0,
    height: float = 260.0,
    x_log: bool = False,
    char_px: float = 6.4,
    line_px: float = 15.0,
    marker_px: float = 6.0,
) -> list[Optional[str]]:
    """Where each point's text is written (a plotly ``textposition``: above the marker, shifted left or right at the
    plot's edges so that it stays on the figure), or None: not written, read on hover. No two written labels
    overlap and none covers another marker (but the ``first``'s: the chosen design is always named). Greedy:
    ``first``, then the most isolated points first. Sizes in pixels of a plot area of ``width`` × ``height`` (the
    smallest the page draws it: a label readable there is readable wider); ``x_log``: the x axis is logarithmic."""
    n = len(points)
    if n == 0:
        return []
    xs = [math.log10(max(x, 1e-12)) if x_log else float(x) for x, _ in points]
    ys = [float(y) for _, y in points]

    def scaled(values: list[float], px: float) -> list[float]:
        lo, hi = min(values), max(values)
        return [(v - lo) / ((hi - lo) or 1.0) * px for v in values]

    px, py = scaled(xs, width), scaled(ys, height)
    nearest = [
        min((math.hypot(px[i] - px[j], py[i] - py[j]) for j in range(n) if j != i), default=math.inf) for i in range(n)
    ]
    order = list(dict.fromkeys([*first, *sorted(range(n), key=lambda i: -nearest[i])]))
    boxes: list[tuple[float, float, float, float]] = []
    out: list[Optional[str]] = [None] * n
    for i in order:
        w = len(texts[i]) * char_px
        if px[i] - w / 2 < 0:
            place, left = "top right", px[i] - marker_px / 2
        elif px[i] + w / 2 > width:
            place, left = "top left", px[i] + marker_px / 2 - w
        else:
            place, left = "top center", px[i] - w / 2
        box = (left, py[i] + marker_px, left + w, py[i] + marker_px + line_px)  # y up: above the marker
        if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in boxes):
            continue
        if i not in first and any(
            j != i and box[0] - marker_px < px[j] < box[2] + marker_px and box[1] - marker_px < py[j] < box[3]
            for j in range(n)
        ):
            continue  # the chosen design's label is written even over a marker
        boxes.append(box)
        out[i] = place
    return out


# --- the design space ---------------------------------------------------------------------------

UNUSED_FLOOR = 1e-4  # a design that spends all of the budget is drawn at 0.01 % left (log axis)
SPACE_PLOT_PX = 300.0  # the design space's plot area at its narrowest (1000 px page, legend beside it)
LABEL_CHAR_PX = 6.4  # one character of a label at font size 11
LABEL_BELOW = 0.97  # designs spending less of the budget than this are few: their names are written beside them


def design_space_figure(
    costs: Sequence[Cost], budget: Budget, chosen: Optional[Key] = None, recommended: Optional[Key] = None
) -> go.Figure:
    """Budget left unused (x, log, reversed: right = spends more) vs forward FLOP overhead in % (y), every design
    that fits. One trace per method (marker = location); the Pareto front (trace ``Pareto front``) joins the designs
    no other fitting design beats on both (spends more for no more compute); the chosen design is ringed (trace
    ``chosen: <design>``), the recommended one labelled. Designs over the budget are not drawn (named in the title)."""
    fig = _Fig()
    feasible = [c for c in costs if c.feasible]
    used = {key_of(c): budget_used(c, budget) for c in feasible}

    def left(c: Cost) -> float:
        return max(UNUSED_FLOOR, 1.0 - used[key_of(c)])

    def over(c: Cost) -> float:
        return 100.0 * (flops_ratio(c) - 1.0)

    by_method: dict[str, list[Cost]] = {}
    for c in feasible:
        by_method.setdefault(c.method, []).append(c)
    _style_legend(fig, by_method, {c.location for c in feasible})
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
    return _layout(
        fig,
        title,
        "budget left unused (log; right = more of the budget spent)",
        "forward FLOPs added, one task's path (%)",
    )


# --- where the parameters go ----------------------------------------------------------------------


def breakdown_frame(parts: Iterable[dict], top: bool = False) -> pd.DataFrame:
    """The ``breakdown`` rows with a readable place (``breakdown_places``) as a table."""
    return pd.DataFrame(breakdown_places(parts, top), columns=["place", "part", "params"])


def breakdown_places(parts: Iterable[dict], top: bool = False) -> list[dict]:
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
    return out


def _records(frame) -> list[dict]:
    return frame.to_dict("records") if isinstance(frame, pd.DataFrame) else list(frame)


def _part_totals(frame, by: str) -> dict[str, dict[str, int]]:
    """{part: {<by value>: params}}, in first-seen order (``frame``: a breakdown table or its rows)."""
    out: dict[str, dict[str, int]] = {}
    for r in _records(frame):
        cell = out.setdefault(r["part"], {})
        cell[r[by]] = cell.get(r[by], 0) + int(r["params"])
    return out


def _lab(color: str) -> tuple[float, float, float]:
    """A '#rrggbb' or 'rgb(r,g,b)' colour in CIE L*a*b* (D65): distances there are what eyes tell apart."""
    if color.startswith("#"):
        rgb = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    else:
        rgb = [float(v) / 255 for v in color[color.index("(") + 1 : color.index(")")].split(",")[:3]]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047
    y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def color_distance(a: str, b: str) -> float:
    """How far apart two colours look (CIE76 ΔE: about 10 is 'clearly different', under 5 hard to tell)."""
    return math.dist(_lab(a), _lab(b))


def _distinct(colors: Sequence[str], apart: float = 18.0) -> list[str]:
    """``colors`` without those closer than ``apart`` (ΔE) to an earlier one: no two look alike."""
    out: list[str] = []
    for c in colors:
        if all(color_distance(c, o) >= apart for o in out):
            out.append(c)
    return out


_PART_PALETTE = _distinct(
    qualitative.Safe + qualitative.Alphabet + qualitative.Dark24
)  # parts take the farthest free one
NEIGHBOUR_WEIGHT = (
    1.6  # a part's colour keeps this much farther from its neighbours' (stacked with it) than from others'
)


def part_colors(frames: Iterable) -> dict[str, str]:
    """One colour per part name, the same in every breakdown chart, none repeated. Parts that share a bar (one
    design's parts, stacked) are its neighbours: each part, in first-seen order, takes the free palette colour
    farthest from every colour taken, its neighbours' counted nearer (``NEIGHBOUR_WEIGHT``), so that no two parts
    stacked together look alike (LoRA on V beside encoder V^E were two teals) and no two parts anywhere share a hue."""
    bars = [list(dict.fromkeys(r["part"] for r in _records(f))) for f in frames]
    names = list(dict.fromkeys(p for bar in bars for p in bar))
    neighbours: dict[str, set[str]] = {p: set() for p in names}
    for bar in bars:
        for p in bar:
            neighbours[p].update(q for q in bar if q != p)
    out: dict[str, str] = {}
    for p in names:
        free = [c for c in _PART_PALETTE if c not in out.values()] or list(_PART_PALETTE)

        def spread(c: str) -> float:  # the nearest colour taken, a neighbour's counted NEIGHBOUR_WEIGHT times nearer
            return min(
                (
                    color_distance(c, t) / (NEIGHBOUR_WEIGHT if q in neighbours[p] else 1.0)  # noqa: B023 (used at once)
                    for q, t in out.items()
                ),
                default=math.inf,
            )

        out[p] = max(free, key=spread)  # ties: the palette's order
    return out


def breakdown_figure(frame: pd.DataFrame, title: str, colors: Optional[Mapping[str, str]] = None) -> go.Figure:
    """Stacked bars: one bar per place (layer, shared, head), one colour per part."""
    colors = colors or part_colors([frame])
    fig = _Fig()
    for part, by_place in _part_totals(frame, "place").items():
        fig.add_trace(
            dict(
                type="bar",
                x=list(by_place),
                y=list(by_place.values()),
                name=part,
                marker=dict(color=colors[part]),
                hovertemplate=f"{part}<br>%{{x}}: %{{y:,}} params<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack")
    return _layout(fig, title, "", "parameters (one task)")


def breakdown_compare_figure(
    frames: dict[str, pd.DataFrame], colors: Optional[Mapping[str, str]] = None, chosen: Optional[str] = None
) -> go.Figure:
    """One stacked bar per fitting design (the paper's Table 1 as a picture), one colour per part (one task)."""
    colors = colors or part_colors(frames.values())
    fig = _Fig()
    totals = {d: {p: sum(v.values()) for p, v in _part_totals(f, "place").items()} for d, f in frames.items()}
    designs = list(frames)
    for part in colors:
        ys = [int(totals[d].get(part, 0)) for d in designs]
        if not any(ys):
            continue
        fig.add_trace(
            dict(
                type="bar",
                y=designs,
                x=ys,
                orientation="h",
                name=part,
                marker=dict(color=colors[part]),
                hovertemplate=f"%{{y}}<br>{part}: %{{x:,}} params<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(
        autorange="reversed", ticktext=[f"<b>{d}</b>" if d == chosen else d for d in designs], tickvals=designs
    )
    return _layout(
        fig,
        "Every fitting design: one task's parameters by part (bold: the chosen design)",
        "parameters (one task)",
        "",
        height=max(360, 80 + 26 * len(designs)),
    )


# --- all tasks on one input ------------------------------------------------------------------------


def scaling_figure(
    series: dict[Key, list[ScalingPoint]], current: int, chosen: Optional[Key] = None, over: Iterable[Key] = ()
) -> go.Figure:
    """All-task forward GFLOPs per input vs number of tasks, one line per design, and T separate fine-tuned models."""
    fig = _Fig()
    first: Optional[list[ScalingPoint]] = None
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
    return _layout(
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


# --- the paper check ---------------------------------------------------------------------------------


def paper_frame(rows: Sequence[PaperRow]) -> pd.DataFrame:
    out = []
    for r in rows:
        fmt = (lambda v: f"{v:.2f}×") if r.quantity == "ratio" else (lambda v: f"{v:.0f}")
        out.append(
            {
                "configuration": r.label,
                "budget": r.budget,
                "compares": r.quantity,
                "paper": fmt(r.paper),
                "calculator": fmt(r.ours),
                "task-specific params": human(r.params_task_specific),
                "× BERT": f"{r.ratio:.3f}",
                "reproduces": "yes" if r.reproduces else f"NO: {r.difference}",
            }
        )
    return pd.DataFrame(out)


def paper_figure(rows: Sequence[PaperRow]) -> go.Figure:
    """The paper-reproduction table; rows that disagree with the paper are filled red."""
    frame = paper_frame(rows)
    fills = [OK_FILL if r.reproduces else BAD_FILL for r in rows]
    fig = go.Figure(
        go.Table(
            columnwidth=[3, 1.2, 1, 1, 1.2, 1.4, 1, 2.6],
            header=dict(values=[f"<b>{c}</b>" for c in frame.columns], fill_color="#eeeeee", align="left"),
            cells=dict(
                values=[frame[c].tolist() for c in frame.columns],
                fill_color=[fills] * len(frame.columns),
                align="left",
                height=28,
                font=dict(size=13),
            ),
        )
    )
    fig.update_layout(
        margin=dict(l=0, r=0, t=40, b=0),
        height=90 + 30 * len(rows),
        title=dict(
            text="Stickland & Murray (2019), BERT-base, 8 GLUE tasks, paper convention, h_s = 12", x=0, xanchor="left"
        ),
    )
    return fig


# --- tables --------------------------------------------------------------------------------------


def _dash(value) -> object:
    return "—" if value is None else value


TABLE_FORMATS = {
    "% of budget used": f"%.{display.SHARE_DIGITS}f",
    "total × base": f"%.{display.RATIO_DIGITS}f",
    "FLOPs × base": f"%.{display.RATIO_DIGITS}f",
    "GFLOPs / input, all tasks": "%.2f",
    "train step GFLOPs": "%.2f",
}
"""The design table's number columns and how they are written (the page's column formats and the CSV): each value
is rounded once (``pals_core.budget.display``) and printed with exactly its decimals."""


def table_frame(
    costs: Sequence[Cost],
    budget: Optional[Budget] = None,
    rank: Optional[Mapping[Key, int]] = None,
    measured: Optional[Mapping[Key, str]] = None,
    first_fit: Optional[Mapping[Key, str]] = None,
    hidden: Optional[int] = None,
) -> pd.DataFrame:
    """The design table: one row per design, in the given order. Units: parameters as counts, FLOPs in GFLOPs,
    shares in % (rounded down, as the answer says them), ratios to four decimals, scores 0–100; '—' where a value
    does not apply. Every number is rounded once, by ``pals_core.budget.display`` (pals-budget prints the same
    digits). The columns a person compares come first — what it is, whether it fits, what it spends and what it
    scored — so the measured score is in view without scrolling sideways; method and location (already in the
    design's name) come last. ``hidden`` (the model's d): a d_s wider than the model is flagged in its cell
    ("10,760 > d = 384"). "add tasks later": whether a new task can be trained onto a run of this design without
    retraining or changing the others (``budget.costs.adding_tasks_refused``: trunk frozen, nothing shared trains)."""
    out = []
    for c in costs:
        k = key_of(c)
        row = {
            "rank": str((rank or {}).get(k, "—")),
            "design": label(k),
            "d_s": "—"
            if c.d_s is None
            else (f"{c.d_s:,} > d = {hidden:,}" if hidden is not None and wider_than_model(c, hidden) else str(c.d_s)),
            "fits": "yes" if c.feasible else "no",
        }
        if first_fit is not None:
            row["fits from"] = first_fit.get(k, "—")
        if budget is not None:
            row["% of budget used"] = display.share(budget_used(c, budget))
        row.update(
            {
                "measured dev avg": (measured or {}).get(k, "—"),
                "total × base": display.ratio(c.ratio),
                "FLOPs × base": display.ratio(flops_ratio(c)),
                "params / task": display.params_per_task(c),
                "task-specific (all tasks)": c.params_task_specific,
                "trained": c.params_trained,  # what the optimiser updates, of params_total (the trunk as trained)
                "trunk": c.trunk,
                "GFLOPs / input, all tasks": round(c.flops_all_tasks_per_seq / GIGA, 2),
                "train step GFLOPs": round(c.flops_train_step_per_seq / GIGA, 2),
                # whether a task can join a trained run later without changing the others (pals-train --from)
                "add tasks later": "yes" if c.adds_tasks_later else "no",
                "method": c.method,
                "location": c.location or "—",
            }
        )
        out.append(row)
    return pd.DataFrame(out)


def table_csv(frame: pd.DataFrame) -> str:
    """The design table as CSV, every number written with the digits the page shows (``TABLE_FORMATS``); counts
    without separators, so that a spreadsheet reads them as numbers."""
    out = frame.copy()
    for column, fmt in TABLE_FORMATS.items():
        if column in out.columns:
            out[column] = [
                fmt % v if isinstance(v, (int, float)) and math.isfinite(v) else ("∞" if v == math.inf else "—")
                for v in out[column]
            ]
    return out.to_csv(index=False)


def runs_frame(runs: Sequence[dict]) -> pd.DataFrame:
    """Runs (dicts from ``registry.Run.row``) as a table: scores 0–100 (``measured.score_text``), counts with
    thousands separators, '—' where a value is missing; ``note`` says what a score is not — a smoke run (fewer than
    ``measured.SMOKE_STEPS`` steps) or one with tasks no step trained (``untrained``)."""
    from pals_core.measured import score_text, smoke

    cols = [
        "run",
        "status",
        "note",
        "method",
        "location",
        "d_s",
        "tasks",
        "steps",
        "dev average",
        "task-specific params",
        "wall time (s)",
    ]
    out = []
    for r in runs:
        row = {k: r.get(k) for k in cols}
        params, wall = row["task-specific params"], row["wall time (s)"]
        row["dev average"] = score_text(row["dev average"])
        row["task-specific params"] = f"{int(params):,}" if isinstance(params, (int, float)) else "—"
        row["wall time (s)"] = f"{wall:,.0f}" if isinstance(wall, (int, float)) else "—"
        notes = [f"smoke run ({row['steps']} steps)"] if smoke(row["steps"]) and r.get("status") == "finished" else []
        notes += [f"untrained: {r['untrained']}"] if r.get("untrained") else []
        row["note"] = "; ".join(notes) or "—"
        for k in ("location", "d_s", "tasks", "method", "steps"):
            row[k] = "—" if row[k] in (None, "") else (f"{row[k]:,}" if isinstance(row[k], int) else str(row[k]))
        out.append(row)
    return pd.DataFrame(out, columns=cols).rename(columns={"dev average": "dev average (0–100)"})


# --- measured --------------------------------------------------------------------------------------


def measured_figure(results: Sequence, majority: Optional[float] = None, chosen: Optional[Key] = None) -> go.Figure:
    """Measured trade-off: dev average (0–100; mean ± 95 % interval where there are seeds) vs task-specific
    parameters (log), one colour per method, a marker per location; references: the majority class (a line),
    ``shared`` (no adapter) and ``separate`` (one fine-tuned model per task), labelled."""
    fig = _Fig()
    by_method: dict[str, list] = {}
    for r in results:
        if r.params:
            by_method.setdefault(r.method, []).append(r)
    _style_legend(fig, by_method, {r.location for rs in by_method.values() for r in rs})
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
    return _layout(
        fig,
        "Measured: dev score vs task-specific parameters (higher and further left is better)",
        "task-specific parameters (log)",
        "dev average, 0–100 (paper Table 3 metric)",
    )


RANKING_TITLE = "Measured designs ranked: dev average with 95 % intervals (bars that overlap: no clear winner)"


def measured_ranking_figure(
    results: Sequence, majority: Optional[float] = None, chosen: Optional[Key] = None, title: str = RANKING_TITLE
) -> go.Figure:
    """Measured results ranked: one row per result (best on top), its dev average (0–100) with the 95 % t-interval over
    seeds as a bar where it was repeated, the majority class as a dashed line. Designs the trade-off plot draws on
    one spot (the same budget) are read apart here."""
    fig = _Fig()
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
    return _layout(
        fig,
        title,
        "dev average, 0–100 (paper Table 3 metric)",
        "",
        height=140 + 34 * len(rows) + (TOP_LABEL_PX if majority is not None else 0),
        label_above=majority is not None,
    )
