"""LHUC (Swietojanski & Renals 2014): one scale vector r_l ∈ R^d per adapted layer.

params K·d (a weight, kept in the paper convention);   FLOPs 0 (elementwise)
"""

from __future__ import annotations

from ...pricing.activations import ActivationHooks
from ...pricing.method import Method, Part, no_parts
from ...pricing.poly import Poly
from ...pricing.recipe import Recipe


def _params(m, layers, cfg, paper):
    return [Part("scale", l, Poly(0, 0, m.hidden)) for l in layers]


class LhucActivations(ActivationHooks):
    """h ⊙ 2σ(r_l): σ keeps its output (d floats), the product keeps h and the scale 2σ(r_l)."""

    layer_local = True  # each adapted layer alike (ActivationHooks.layer_local)

    def adapt_layer_output(self, i, h):
        tr = self.trace
        sigma = tr.saves_output(tr.new(self.model.hidden, True))
        return tr.mul(h, tr.new(self.model.hidden, sigma.grad))


# Swietojanski & Renals 2014 adapt speech DNNs with SGD: their source gives no rate for an encoder trained with
# AdamW. LHUC's parameters are per-unit scale vectors on a frozen trunk, the kind (IA)³ trains, so it takes (IA)³'s
# encoder rate (Liu et al. 2022: 3e-3); warm-up and weight decay stay the trainer's (BERT's).
RECIPE = Recipe(
    lr=3e-3,
    source="no encoder rate in Swietojanski & Renals 2014 (speech, SGD): (IA)³'s rate for the same kind of "
    "parameter, a per-unit scale vector on a frozen trunk (Liu et al. 2022: 3e-3)",
)

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
        recipe=RECIPE,
    ),
)
