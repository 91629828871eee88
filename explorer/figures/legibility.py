"""What keeps a figure legible: labels placed clear of every marker and of each other (``place_labels``), and how far
apart two colours look (``color_distance``, ``distinct``), so that no two parts drawn side by side look alike."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CHAR_PX = 6.0  # a character of a label at font size 11 (Source Sans measures ~5 px in Chromium)
LINE_PX = 15.0  # a label's height at font size 11
LABEL_GAP_PX = 2.0  # between two labels
RETRIES = 4  # placement passes, the labels left out of one placed first in the next
LEADER_GAPS_PX = (8, 14, 22, 32, 44, 58, 74, 92, 112, 134, 158, 184, 212)  # a moved label's distance from its marker


@dataclass(frozen=True)
class Label:
    """Where a point's label is written: its centre ``dx``, ``dy`` pixels from the point's centre (y up), joined to
    the point by a thin leader line when ``leader`` (a label moved away from a crowd)."""

    dx: float
    dy: float
    leader: bool


def label_size(text: str, char_px: float = CHAR_PX, line_px: float = LINE_PX) -> tuple[float, float]:
    """A label's width and height in pixels at font size 11 (Source Sans: ~5 px a character; 6 keeps a margin),
    its lines split at ``<br>``."""
    lines = text.split("<br>")
    return max(len(line) for line in lines) * char_px + 4.0, len(lines) * line_px


def _box_hits_circle(box: tuple[float, float, float, float], cx: float, cy: float, r: float) -> bool:
    nx, ny = min(max(cx, box[0]), box[2]), min(max(cy, box[1]), box[3])
    return (nx - cx) ** 2 + (ny - cy) ** 2 < r * r


def _boxes_meet(a: tuple[float, float, float, float], b: tuple[float, float, float, float], gap: float) -> bool:
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def _segment_near(x0: float, y0: float, x1: float, y1: float, cx: float, cy: float) -> float:
    """Distance from (cx, cy) to the segment (x0, y0)–(x1, y1)."""
    dx, dy = x1 - x0, y1 - y0
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((cx - x0) * dx + (cy - y0) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x0 + t * dx - cx, y0 + t * dy - cy)


def _segment_hits_box(seg: tuple[float, float, float, float], box: tuple[float, float, float, float]) -> bool:
    """Whether a segment crosses a box (sampled every 2 px: leaders are short, boxes at least 15 px)."""
    x0, y0, x1, y1 = seg
    n = max(2, int(math.hypot(x1 - x0, y1 - y0) / 2))
    return any(
        box[0] <= x0 + (x1 - x0) * k / n <= box[2] and box[1] <= y0 + (y1 - y0) * k / n <= box[3] for k in range(n + 1)
    )


def _candidates(w: float, h: float, r: float) -> list[tuple[float, float, bool]]:
    """Offsets of a label's centre from its point, nearest first: beside the marker (above, below, right, left,
    the diagonals), then further out along 24 directions with a leader line."""
    near = [
        (0.0, r + h / 2 + 2, False),
        (0.0, -(r + h / 2 + 2), False),
        (r + w / 2 + 3, 0.0, False),
        (-(r + w / 2 + 3), 0.0, False),
    ]
    near += [(sx * (w / 2 + 0.8 * r), sy * (h / 2 + 0.8 * r + 1), False) for sy in (1, -1) for sx in (1, -1)]
    far = []
    for gap in LEADER_GAPS_PX:
        for k in range(24):
            a = math.pi / 2 - k * math.pi / 12  # from straight up, clockwise
            ux, uy = math.cos(a), math.sin(a)
            reach = r + gap + abs(ux) * w / 2 + abs(uy) * h / 2  # the label's near edge ~gap px beyond the marker
            far.append((ux * reach, uy * reach, True))
    return near + far


def place_labels(
    fx: Sequence[float],
    fy: Sequence[float],
    texts: Sequence[str | None],
    *,
    widths: Sequence[float],
    height: float,
    radius: Sequence[float] | float = 6.0,
    first: Sequence[int] = (),
    line_px: float = LINE_PX,
    right_px: float = 0.0,
) -> list[Label | None]:
    """A place for every text (None: a point without a label, an obstacle only; lines split at ``<br>``) such that at
    each plot width in ``widths`` (pixels; the plot area's height is ``height``) no label overlaps another label or
    any marker, nor leaves the plot area, and no leader line crosses a label, another leader or another marker.
    Points are given as fractions of the
    plot area (``fx``, ``fy``: 0 at the left / bottom axis, 1 at the right / top), markers as circles of ``radius``
    pixels; ``right_px``: the margin right of the plot area labels may take too. Greedy: the ``first`` (the chosen
    design), then the most crowded points, each at its nearest free place (``_candidates``); the labels a pass leaves
    out go first in the next (``RETRIES`` passes); a label no pass places is None (the caller says so)."""
    n = len(fx)
    radii = [float(radius)] * n if isinstance(radius, (int, float)) else [float(r) for r in radius]
    sizes = [label_size(t, line_px=line_px) if t else None for t in texts]
    narrow = min(widths)

    def crowd(i: int) -> float:
        return min(
            (math.hypot((fx[i] - fx[j]) * narrow, (fy[i] - fy[j]) * height) for j in range(n) if j != i),
            default=math.inf,
        )

    order = list(dict.fromkeys([*first, *sorted((i for i in range(n) if texts[i]), key=crowd)]))
    best: list[Label | None] = []
    for _ in range(RETRIES):  # a label no place fits goes first the next time (after the chosen design's)
        out = _greedy(order, fx, fy, sizes, radii, widths, height, right_px)
        left = [i for i in order if out[i] is None]
        if not best or len(left) < sum(p is None and sizes[i] is not None for i, p in enumerate(best)):
            best = out
        if not left:
            break
        order = list(dict.fromkeys([*first, *left, *order]))
    return best


def _greedy(order, fx, fy, sizes, radii, widths, height, right_px) -> list[Label | None]:
    placed: dict[float, list[tuple[tuple, tuple | None]]] = {W: [] for W in widths}  # width → [(box, leader)]
    out: list[Label | None] = [None] * len(fx)
    for i in order:
        if sizes[i] is None:
            continue
        w, h = sizes[i]
        for dx, dy, leader in _candidates(w, h, radii[i]):
            if all(_fits(i, dx, dy, leader, w, h, W, height, fx, fy, radii, placed[W], right_px) for W in widths):
                out[i] = Label(dx, dy, leader)
                for W in widths:
                    placed[W].append(_drawn(i, dx, dy, leader, w, h, W, height, fx, fy, radii))
                break
    return out


def _drawn(i, dx, dy, leader, w, h, W, H, fx, fy, radii) -> tuple[tuple, tuple | None]:
    """The label's box and its leader segment (from the marker's edge to the box's centre) at plot width ``W``."""
    px, py = fx[i] * W, fy[i] * H
    cx, cy = px + dx, py + dy
    box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
    seg = None
    if leader:
        d = math.hypot(dx, dy)
        seg = (px + dx / d * radii[i], py + dy / d * radii[i], cx, cy)
    return box, seg


def _crosses(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    """Whether two segments cross (leader lines)."""

    def side(px, py, qx, qy, rx, ry) -> float:
        return (qx - px) * (ry - py) - (qy - py) * (rx - px)

    d1, d2 = side(*b[:2], *b[2:], *a[:2]), side(*b[:2], *b[2:], *a[2:])
    d3, d4 = side(*a[:2], *a[2:], *b[:2]), side(*a[:2], *a[2:], *b[2:])
    return d1 * d2 < 0 and d3 * d4 < 0


def _fits(i, dx, dy, leader, w, h, W, H, fx, fy, radii, placed, right_px=0.0) -> bool:
    box, seg = _drawn(i, dx, dy, leader, w, h, W, H, fx, fy, radii)
    if box[0] < 1 or box[1] < 1 or box[2] > W + right_px - 1 or box[3] > H - 1:
        return False
    px, py = fx[i] * W, fy[i] * H
    for j in range(len(fx)):
        cx, cy = fx[j] * W, fy[j] * H
        if _box_hits_circle(box, cx, cy, radii[j] + 1.5):
            return False
        touching = math.hypot(cx - px, cy - py) < radii[i] + radii[j]  # drawn over the labelled marker: it may cross
        if seg is not None and not touching and _segment_near(*seg, cx, cy) < radii[j] + 1:
            return False
    for other, other_seg in placed:
        if _boxes_meet(box, other, LABEL_GAP_PX):
            return False
        if seg is not None and _segment_hits_box(seg, other):
            return False
        if other_seg is not None and _segment_hits_box(other_seg, box):
            return False
        if seg is not None and other_seg is not None and _crosses(seg, other_seg):
            return False
    return True


def clusters(fx: Sequence[float], fy: Sequence[float], width: float, height: float, apart: float) -> list[list[int]]:
    """Points closer than ``apart`` pixels at ``width`` × ``height`` (markers drawn over each other), grouped (each
    group in the given order, groups by their first point): one label names a group, as its markers read as one."""
    n = len(fx)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if math.hypot((fx[i] - fx[j]) * width, (fy[i] - fy[j]) * height) < apart:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def group_text(names: Sequence[str]) -> str:
    """One label for designs drawn on one spot, naming each, a line each."""
    return "<br>".join(names)


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


def distinct(colors: Sequence[str], apart: float = 18.0) -> list[str]:
    """``colors`` without those closer than ``apart`` (ΔE) to an earlier one: no two look alike."""
    out: list[str] = []
    for c in colors:
        if all(color_distance(c, o) >= apart for o in out):
            out.append(c)
    return out


def label_annotation(x: float, y: float, text: str, place: Label, radius: float, **font) -> dict:
    """A plotly annotation writing ``text`` where ``place_labels`` put it, for the point at data (``x``, ``y``; a log
    axis takes log10 of x): centred at the offset, with a thin grey leader line to the marker's edge when moved."""
    common = dict(
        x=x,
        y=y,
        text=text,
        xanchor="center",
        yanchor="middle",
        font=dict(size=11, color="#444", **font),
    )
    if not place.leader:
        return dict(common, showarrow=False, xshift=place.dx, yshift=place.dy)
    return dict(
        common,
        showarrow=True,
        ax=place.dx,
        ay=-place.dy,  # plotly's pixel offsets grow downwards
        arrowhead=0,
        arrowwidth=1,
        arrowcolor="#999",
        standoff=radius,
    )
