"""What keeps a figure legible: labels placed where they can be read (``readable_labels``) and how far apart two
colours look (``color_distance``, ``distinct``), so that no two parts drawn side by side look alike."""

from __future__ import annotations

import math
from collections.abc import Sequence


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
) -> list[str | None]:
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
    out: list[str | None] = [None] * n
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
