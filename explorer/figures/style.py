"""One style for every figure of the page, and the plain-data figure they are built as.

A colour per method (``method_color``: its place in the method registry, so a new method gets its own colour with no
edit here), a marker and a line dash per location (``location_symbol``, ``location_dash``), the chosen design drawn
larger with a black ring, designs over the budget grey and kept off the axes' scale. ``Fig`` holds a figure's traces
and layout as plain data; ``styled`` gives it the common look (title, axes, a legend tall enough to show every entry)
and turns it into a ``Figure`` once.
"""

from __future__ import annotations

from collections.abc import Iterable

import plotly.graph_objects as go
from plotly.colors import qualitative

from pals_core.methods.registry import METHODS

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
FRONT_COLOR, BUDGET_COLOR, OVER_COLOR, CHOSEN_COLOR = "#222222", "#000000", "#b0b0b0", "#000000"
REFERENCE_COLOR = {"majority": "#7f7f7f", "separate": "#000000"}


def method_color(method: str) -> str:
    """The method's colour: its index in the method registry (``pals_core.budget.METHODS``)."""
    names = list(METHODS)
    if method in REFERENCE_COLOR:
        return REFERENCE_COLOR[method]
    i = names.index(method) if method in names else len(names) + sum(map(ord, method))
    return _PALETTE[i % len(_PALETTE)]


def location_symbol(location: str | None) -> str:
    return _SYMBOL.get(location, "square")


def location_dash(location: str | None) -> str:
    return _DASH.get(location, "dashdot")


class Fig:
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

    def figure(self) -> Figure:
        return Figure({"data": self.data, "layout": self.layout})


class Figure(go.Figure):
    """A ``go.Figure`` that holds its traces and layout as plain data, handed to ``st.plotly_chart`` as they are
    (``to_dict``). Reading them as plotly objects: ``full()`` (built unvalidated, once)."""

    def __init__(self, spec: dict) -> None:  # noqa: D107 — plotly's own __init__ (a template copy, ~10 ms) is skipped:
        self._spec = spec  # everything this object is used for goes through to_dict() or full()
        self._full: go.Figure | None = None

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


def legend_height(fig: Fig) -> int:
    """The height (px) the figure's legend needs to show every entry at once: one line per trace in the legend and
    the gap between groups. A figure shorter than this scrolls its legend (entries out of sight)."""
    shown = [t for t in fig.data if t.get("showlegend", True) is not False and t.get("name")]
    groups = {t.get("legendgroup") or id(t) for t in shown}
    return len(shown) * LEGEND_ENTRY_PX + len(groups) * LEGEND_GAP_PX


TOP_LABEL_PX = 22  # a label written above the plot area (a vertical reference line's): its own line under the title


def figure_height(fig: Fig, height: int = 480) -> int:
    """The figure's height: ``height``, or taller where its legend needs it (``legend_height``)."""
    return max(height, legend_height(fig) + PLOT_MARGIN_PX)


def styled(
    fig: Fig,
    title: str,
    x: str,
    y: str,
    *,
    height: int = 480,
    label_above: bool = False,
    margin: dict | None = None,
    **kw,
) -> go.Figure:
    """Every figure's look; tall enough that its legend shows every entry without a scroll box. ``label_above``: a
    label sits just above the plot area (``add_vline``'s): the title is pinned to the top and the margin grows by
    a line, so that the label never runs into the title's subtitle. ``margin``: fixed margins (with the axes'
    automargin off), for a figure that places its labels in pixels of a plot area it must know."""
    height = figure_height(fig, height)
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
        margin=margin or dict(l=10, r=10, t=top, b=10),
        hovermode="closest",
        height=height,
        plot_bgcolor="white",
        paper_bgcolor="white",
        **kw,
    )
    if margin is not None:
        fig.update_xaxes(automargin=False)
        fig.update_yaxes(automargin=False)
    return fig.figure()


def style_legend(fig: Fig, methods: Iterable[str], locations: Iterable[str | None]) -> None:
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
