"""Multi-head self-attention in the adapter width d_s (PALs, projected attention on top).

    Attn(x) = concat_j softmax(Q_j K_jᵀ / √(d_s/h_s) + mask) V_j      (heads j = 1..h_s)

Q, K, V are ``Linear(d_s, d_s)`` with biases; PALs have no output matrix (Stickland & Murray 2019,
Sec. 3.3: "we do not use an output matrix"), the projected-attention-on-top blocks do
(``output=True``). Heads are a reshape; the attention itself is the function transformers uses for
the trunk (``config._attn_implementation``: sdpa → one ``F.scaled_dot_product_attention`` call,
eager → two matmuls), with the trunk's own attention mask — so the adapters run, and are counted,
exactly like the trunk's attention. ``dropout``: the rate on the attention probabilities in training
(PALs: ``AdapterConfig.pal_attention_dropout``, 0.1 as released; the stacks on top: none) — it forces the
unfused attention path and costs a random mask of h_s·n² per sequence, as much as the trunk's own.
Forward FLOPs on n tokens: 3·2n·d_s² (+ 2n·d_s² with O) + 4n²·d_s.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.bert.modeling_bert import eager_attention_forward

from .base import init_linear


class SmallSelfAttention(nn.Module):
    is_causal = False  # read by transformers' attention functions

    def __init__(self, config, width: int, heads: int, *, output: bool, std: float, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = dropout
        if width % heads:
            raise ValueError(f"adapter width {width} is not divisible by {heads} heads")
        self.config = config  # the trunk's transformers config: its attention implementation
        self.heads = heads
        self.scaling = (width // heads) ** -0.5
        self.query = init_linear(nn.Linear(width, width), std)
        self.key = init_linear(nn.Linear(width, width), std)
        self.value = init_linear(nn.Linear(width, width), std)
        self.output = init_linear(nn.Linear(width, width), std) if output else None

    def forward(self, x: torch.Tensor, mask: Any) -> torch.Tensor:
        """x: (B, n, d_s); mask: the trunk's attention mask as transformers built it (None = attend everywhere)."""
        b, n, _ = x.shape
        # Q, K, V in one matmul (one GEMM of width 3·d_s runs faster than three of width d_s; same FLOPs)
        weight = torch.cat((self.query.weight, self.key.weight, self.value.weight))
        bias = torch.cat((self.query.bias, self.key.bias, self.value.bias))
        q, k, v = F.linear(x, weight, bias).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attend = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager_attention_forward)
        ctx, _ = attend(self, q, k, v, mask, dropout=self.dropout if self.training else 0.0, scaling=self.scaling)
        ctx = ctx.reshape(b, n, -1)
        return self.output(ctx) if self.output is not None else ctx
