"""LoRA (Hu et al. 2021) on the query and value projections of each adapted layer.

    Q h = W_q h + b_q + (α / d_s) · B_q A_q h      (the same for V)

A: Linear(d, d_s, bias=False) (Kaiming-uniform, as ``nn.Linear`` and peft), B: Linear(d_s, d,
bias=False) zero-initialised; α = ``AdapterConfig.lora_alpha`` or d_s (scale 1).
Parameters per task: K·2·2·d·d_s (no biases, so exact = paper). Forward FLOPs per layer: 2·(2n·d·d_s + 2n·d_s·d).
"""

from __future__ import annotations

import torch
from torch import nn

from ...adapters.base import AdapterSpec, BuildContext, TaskAdapter, layer_key, zero_linear


class LowRankUpdate(nn.Module):
    """(α / d_s) · B A x."""

    def __init__(self, d: int, s: int, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.A = nn.Linear(d, s, bias=False)
        self.B = zero_linear(nn.Linear(s, d, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        update = self.B(self.A(x))
        return update if self.scale == 1.0 else update * self.scale


class LoraAdapter(TaskAdapter):
    def __init__(self, ctx: BuildContext) -> None:
        super().__init__(ctx.layers)
        d, s = ctx.hidden, ctx.adapter.d_s
        alpha = ctx.adapter.lora_alpha if ctx.adapter.lora_alpha is not None else s
        scale = float(alpha) / s
        self.query = nn.ModuleDict({layer_key(i): LowRankUpdate(d, s, scale) for i in self.layers})
        self.value = nn.ModuleDict({layer_key(i): LowRankUpdate(d, s, scale) for i in self.layers})

    def adapt_query(self, i: int, h: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        return q + self.query[layer_key(i)](h)

    def adapt_value(self, i: int, h: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return v + self.value[layer_key(i)](h)


ADAPTERS = (AdapterSpec("lora", LoraAdapter),)
