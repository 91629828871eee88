"""Low-rank layers, Stickland & Murray 2019, Sec. 3.2 — a parallel rank-d_s update per adapted layer.

    h_{l+1} = LN2(a_l + FFN(a_l) + V^D_l GELU(V^E_l h_l))

(the released code, AsaCooperStickland/Bert-n-Pals; ``adapter_gelu=False``: V^D_l V^E_l h_l, the paper's text).

V^E_l: Linear(d, d_s), V^D_l: Linear(d_s, d), both with biases; V^D_l zero-initialised.
Parameters per task (exact): K·(2·d·d_s + d_s + d). Forward FLOPs per layer: 2n·d·d_s + 2n·d_s·d.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...adapters.base import AdapterSpec, BuildContext, Mask, TaskAdapter, init_linear, layer_key, zero_linear


class LowRankAdapter(TaskAdapter):
    def __init__(self, ctx: BuildContext) -> None:
        super().__init__(ctx.layers)
        d, s, std = ctx.hidden, ctx.adapter.d_s, ctx.std
        self.encoders = nn.ModuleDict({layer_key(i): init_linear(nn.Linear(d, s), std) for i in self.layers})
        self.decoders = nn.ModuleDict({layer_key(i): zero_linear(nn.Linear(s, d)) for i in self.layers})
        self.gelu = ctx.adapter.adapter_gelu

    def parallel_branch(self, i: int, h: torch.Tensor, mask: Mask) -> torch.Tensor:
        key = layer_key(i)
        code = self.encoders[key](h)
        return self.decoders[key](F.gelu(code) if self.gelu else code)


ADAPTERS = (AdapterSpec("low_rank", LowRankAdapter),)
