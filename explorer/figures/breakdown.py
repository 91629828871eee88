"""Where one task's parameters go: the breakdown's rows with a readable place (a table), one stacked bar per place
(``breakdown_figure``) or per fitting design (``breakdown_compare_figure``), and one colour per part, the same in every
breakdown chart (``part_colors``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from .legibility import color_distance, distinct
from .style import Fig, styled


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


_PART_PALETTE = distinct(
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


def breakdown_figure(frame: pd.DataFrame, title: str, colors: Mapping[str, str] | None = None) -> go.Figure:
    """Stacked bars: one bar per place (layer, shared, head), one colour per part."""
    colors = colors or part_colors([frame])
    fig = Fig()
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
    return styled(fig, title, "", "parameters (one task)")


def breakdown_compare_figure(
    frames: dict[str, pd.DataFrame], colors: Mapping[str, str] | None = None, chosen: str | None = None
) -> go.Figure:
    """One stacked bar per fitting design (the paper's Table 1 as a picture), one colour per part (one task)."""
    colors = colors or part_colors(frames.values())
    fig = Fig()
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
    return styled(
        fig,
        "Every fitting design: one task's parameters by part (bold: the chosen design)",
        "parameters (one task)",
        "",
        height=max(360, 80 + 26 * len(designs)),
    )
