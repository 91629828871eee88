"""(IA)³ (Liu et al. 2022, Sec. 3.3) on each adapted BERT layer l:

    K ← l_k ⊙ (W_k h + b_k),   V ← l_v ⊙ (W_v h + b_v),   FFN(a) = W_out (l_ff ⊙ GELU(W_in a)) + b_out

(``adapt_key``, ``adapt_value``, ``adapt_ffn_activation``). The vectors of the K adapted layers are stored as
(K, d), (K, d) and (K, d_ff) tensors ``key_scales``, ``value_scales``, ``ffn_scales`` (row k = k-th adapted
layer), all initialised to 1, so the model equals the base model at initialisation, bit for bit.
Parameters per task: K·(2d + d_ff) (weights: exact = paper). No matmul FLOPs (elementwise products).
No weight decay on the scales (``NO_DECAY``): decay pulls a parameter toward 0, and these are the identity at 1.
"""

from __future__ import annotations

import torch
from torch import nn

from ...adapters.base import AdapterSpec, BuildContext, TaskAdapter


class Ia3Adapter(TaskAdapter):
    NO_DECAY = ("key_scales", "value_scales", "ffn_scales")

    def __init__(self, ctx: BuildContext) -> None:
        super().__init__(ctx.layers)
        k, d, f = len(self.layers), ctx.hidden, ctx.intermediate
        self.key_scales = nn.Parameter(torch.ones(k, d))
        self.value_scales = nn.Parameter(torch.ones(k, d))
        self.ffn_scales = nn.Parameter(torch.ones(k, f))
        self._row = {layer: r for r, layer in enumerate(self.layers)}

    def adapt_key(self, i: int, h: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return k * self.key_scales[self._row[i]]

    def adapt_value(self, i: int, h: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return v * self.value_scales[self._row[i]]

    def adapt_ffn_activation(self, i: int, g: torch.Tensor) -> torch.Tensor:
        return g * self.ffn_scales[self._row[i]]


ADAPTERS = (AdapterSpec("ia3", Ia3Adapter),)
