"""Houlsby adapters (Houlsby et al. 2019, Sec. 2.1) — serial bottlenecks inside each adapted layer.

    adapter(x) = x + U · GELU(W · x),   W: Linear(d, d_s), U: Linear(d_s, d), both with biases

applied to the output of the attention output projection and to the output of the FFN output
projection, each before its residual + LayerNorm (after dropout, as in the reference code). U is
zero-initialised, so each adapter is the identity at initialisation.
Parameters per task (exact): K·2·(2·d·d_s + d_s + d). Forward FLOPs per layer: 2·(2n·d·d_s + 2n·d_s·d).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...adapters.base import AdapterSpec, BuildContext, TaskAdapter, init_linear, layer_key, zero_linear


class Bottleneck(nn.Module):
    """x + U · GELU(W · x)."""

    def __init__(self, d: int, s: int, std: float) -> None:
        super().__init__()
        self.down = init_linear(nn.Linear(d, s), std)
        self.up = zero_linear(nn.Linear(s, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.up(F.gelu(self.down(x)))


class HoulsbyAdapter(TaskAdapter):
    def __init__(self, ctx: BuildContext) -> None:
        super().__init__(ctx.layers)
        d, s, std = ctx.hidden, ctx.adapter.d_s, ctx.std
        self.after_attention = nn.ModuleDict({layer_key(i): Bottleneck(d, s, std) for i in self.layers})
        self.after_ffn = nn.ModuleDict({layer_key(i): Bottleneck(d, s, std) for i in self.layers})

    def adapt_attention_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        return self.after_attention[layer_key(i)](y)

    def adapt_ffn_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        return self.after_ffn[layer_key(i)](y)


ADAPTERS = (AdapterSpec("houlsby", HoulsbyAdapter),)
