"""Houlsby adapters (Houlsby et al. 2019, Sec. 2.1) — serial bottlenecks inside each adapted layer.

    adapter(x) = x + U · GELU(W · x),   W: Linear(d, d_s), U: Linear(d_s, d), both with biases

applied to the output of the attention output projection and to the output of the FFN output
projection, each before its residual + LayerNorm (after dropout, as in the reference code). U is
zero-initialised, so each adapter is the identity at initialisation.

As the authors train them (Sec. 2.1), each task also holds its own copy of each adapted layer's two LayerNorms
(``attention_norm`` LN1, ``output_norm`` LN2): a deep copy of the module the trunk hands to that hook
(``Trunk.hook_norms``), so its shape is the family's (with or without bias; ModernBERT's layer-0 identity copies
as the identity; ALBERT's shared layer gives each adapted layer its own copy), initialised from the trunk's and
trained with the adapters while the trunk's own stay frozen. With the trunk trained (``--train-trunk``) the
trunk's norms train and the tasks share them (``cost.task_norms``).
Parameters per task (exact): K·2·(2·d·d_s + d_s + d) + the copied norms (4d per layer for BERT).
Forward FLOPs per layer: 2·(2n·d·d_s + 2n·d_s·d) — a copied norm replaces the trunk's.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from ...adapters.base import AdapterSpec, BuildContext, TaskAdapter, init_linear, layer_key, zero_linear
from .cost import task_norms


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
        self.LayerNorm: nn.ModuleDict | None = (
            None  # layer → [LN1, LN2], this task's own (None: the trunk's); HF's name
        )
        if task_norms(ctx.adapter):
            self.LayerNorm = nn.ModuleDict(
                {layer_key(i): nn.ModuleList(_own(n) for n in ctx.family.hook_norms(i)) for i in self.layers}
            )

    def adapt_attention_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        return self.after_attention[layer_key(i)](y)

    def adapt_ffn_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        return self.after_ffn[layer_key(i)](y)

    def attention_norm(self, i: int, norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return (norm if self.LayerNorm is None else self.LayerNorm[layer_key(i)][0])(x)

    def output_norm(self, i: int, norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return (norm if self.LayerNorm is None else self.LayerNorm[layer_key(i)][1])(x)


def _own(norm: nn.Module) -> nn.Module:
    """A task's copy of a trunk norm: the same module and values, trainable whatever the trunk's ``requires_grad``."""
    own = copy.deepcopy(norm)
    own.requires_grad_(True)
    return own


ADAPTERS = (AdapterSpec("houlsby", HoulsbyAdapter),)
