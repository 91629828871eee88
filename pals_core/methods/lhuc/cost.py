"""LHUC (Swietojanski & Renals 2014): one scale vector r_l ∈ R^d per adapted layer.

    params K·d (a weight, kept in the paper convention);   FLOPs 0 (elementwise)
"""
from __future__ import annotations

from ...budget.method import Method, Part, no_parts
from ...budget.poly import Poly


def _params(m, layers, cfg, paper):
    return [Part("scale", l, Poly(0, 0, m.hidden)) for l in layers]


METHODS = (
    Method("lhuc", "LHUC", "A learned scale 2·σ(r) on every unit of each adapted layer's output "
           "(Swietojanski & Renals 2014).", "K·d", _params, no_parts, sized=False),
)
