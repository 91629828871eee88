"""LHUC (Swietojanski & Renals 2014): one scale vector r_l ∈ R^d per adapted layer.

params K·d (a weight, kept in the paper convention);   FLOPs 0 (elementwise)
"""

from __future__ import annotations

from ...pricing.activations import ActivationHooks
from ...pricing.method import Method, Part, no_parts
from ...pricing.poly import Poly


def _params(m, layers, cfg, paper):
    return [Part("scale", l, Poly(0, 0, m.hidden)) for l in layers]


class LhucActivations(ActivationHooks):
    """h ⊙ 2σ(r_l): σ keeps its output (d floats), the product keeps h and the scale 2σ(r_l)."""

    layer_local = True  # each adapted layer alike (ActivationHooks.layer_local)

    def adapt_layer_output(self, i, h):
        tr = self.trace
        sigma = tr.saves_output(tr.new(self.model.hidden, True))
        return tr.mul(h, tr.new(self.model.hidden, sigma.grad))


METHODS = (
    Method(
        "lhuc",
        "LHUC",
        "A learned scale 2·σ(r) on every unit of each adapted layer's output (Swietojanski & Renals 2014).",
        "K·d",
        _params,
        no_parts,
        sized=False,
        activations=LhucActivations,
        tensors=lambda m, layers, cfg: (1, 0),
        trunk="frozen",  # as its authors train it: the pretrained weights stay as they are
    ),
)
