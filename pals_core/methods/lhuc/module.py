"""LHUC, learning hidden unit contributions (Swietojanski & Renals 2014), as in Stickland & Murray 2019 Sec. 4.

    h_{l+1} ← 2·σ(r_l) ⊙ h_{l+1},   r_l ∈ R^d initialised to 0 (scale 2·σ(0) = 1: the identity)

One scale vector per adapted layer, stored as one (K, d) tensor ``scales`` (row k = k-th adapted
layer). Parameters per task: K·d (a weight, kept in the paper convention). No matmul FLOPs.
Weight decay applies to r_l like any weight: it pulls r_l toward 0, i.e. the scale toward 1 (the identity) —
unlike IA³'s scales, which are the identity at 1 and are kept out of decay.
"""

from __future__ import annotations

import torch
from torch import nn

from ...adapters.base import AdapterSpec, BuildContext, TaskAdapter


class LhucAdapter(TaskAdapter):
    def __init__(self, ctx: BuildContext) -> None:
        super().__init__(ctx.layers)
        self.scales = nn.Parameter(torch.zeros(len(self.layers), ctx.hidden))
        self._row = {layer: k for k, layer in enumerate(self.layers)}

    def adapt_layer_output(self, i: int, h: torch.Tensor) -> torch.Tensor:
        return h * (2.0 * torch.sigmoid(self.scales[self._row[i]]))


ADAPTERS = (AdapterSpec("lhuc", LhucAdapter),)
