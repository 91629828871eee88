"""Houlsby adapters (Houlsby et al. 2019, Sec. 2.1): two bottlenecks x + U·GELU(W·x) per adapted layer,
W: d→d_s, U: d_s→d (with biases).

    params K·2·(2·d·S + S + d)   (paper: 4·K·d·S);   FLOPs per adapted layer 2·(2n·d·S + 2n·S·d)
"""
from __future__ import annotations

from ...budget.method import Method, Part, linear, mm
from ...budget.poly import S


def _params(m, layers, cfg, paper):
    d = m.hidden
    one = linear(d, S, paper=paper) + linear(S, d, paper=paper)
    parts = []
    for l in layers:
        parts += [Part("adapter after attention", l, one), Part("adapter after FFN", l, one)]
    return parts


def _flops(m, layers, cfg, n):
    d = m.hidden
    return [Part("adapters", l, 2 * (mm(n, d, S) + mm(n, S, d))) for l in layers]


METHODS = (
    Method("houlsby", "Houlsby adapters", "Serial bottleneck x + U·GELU(W·x) after the attention and FFN outputs "
           "(Houlsby et al. 2019).", "4·K·d·d_s", _params, _flops),
)
