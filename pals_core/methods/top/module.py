"""Task-specific stacks on top of the shared BERT (Stickland & Murray 2019, Sec. 3.1 and Table 1).

``proj_attn_top``: on the final hidden states H (B, n, d)
    x = V^E H;   N_top times: x = LN(x + O · MHA(x))   (Q, K, V, O: Linear(d_s, d_s), h_s heads, LN(d_s));
    out = V^D x         (the released code, ``proj_attn_top_residual=False``: H is replaced; V^D BERT-initialised,
                         so the model is NOT the base model at initialisation)
    out = H + V^D x     (``proj_attn_top_residual=True``, the paper's text; V^D zero-initialised: out = H at init)
``proj_ffn_top``: the same with blocks x = LN(x + W2 · GELU(W1 · x)), W1: d_s → r·d_s, W2: r·d_s → d_s,
always with the residual.
``bert_layer_top``: one full layer of the trunk's family per task: a fresh layer with BERT's initialisation
(the released code, ``bert_layer_top_init="fresh"``) or a copy of the trunk's last layer (``"copy"``).
The pooler and head then read out[:, 0]. Top methods adapt no layer: the whole trunk is shared.
Parameters (exact): V^E, V^D: 2·d·d_s + d_s + d; attention block 4·(d_s² + d_s) + 2·d_s;
FFN block 2·r·d_s² + r·d_s + d_s + 2·d_s; BERT layer 4d² + 2·d·d_ff + 9d + d_ff.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from ...adapters.attention import SmallSelfAttention
from ...adapters.base import AdapterSpec, BuildContext, Mask, TaskAdapter, init_linear, reinitialise, zero_linear


class AttentionBlock(nn.Module):
    """x ← LN(x + dropout(O · MHA(x)))."""

    def __init__(self, config, width: int, heads: int, *, dropout: float, eps: float, std: float) -> None:
        super().__init__()
        self.attention = SmallSelfAttention(config, width, heads, output=True, std=std)
        self.dropout = nn.Dropout(dropout)
        self.LayerNorm = nn.LayerNorm(width, eps=eps)

    def forward(self, x: torch.Tensor, mask) -> torch.Tensor:
        return self.LayerNorm(x + self.dropout(self.attention(x, mask)))


class FeedForwardBlock(nn.Module):
    """x ← LN(x + dropout(W2 · GELU(W1 · x)))."""

    def __init__(self, width: int, inner: int, *, dropout: float, eps: float, std: float) -> None:
        super().__init__()
        self.up = init_linear(nn.Linear(width, inner), std)
        self.down = init_linear(nn.Linear(inner, width), std)
        self.dropout = nn.Dropout(dropout)
        self.LayerNorm = nn.LayerNorm(width, eps=eps)

    def forward(self, x: torch.Tensor, mask) -> torch.Tensor:
        return self.LayerNorm(x + self.dropout(self.down(F.gelu(self.up(x)))))


class ProjectedTopStack(TaskAdapter):
    """H + V^D · blocks(V^E · H) (``residual``, V^D zero-initialised), or V^D · blocks(V^E · H) replacing H (V^D
    BERT-initialised: a zero V^D would hand the pooler zeros)."""

    def __init__(self, ctx: BuildContext, blocks: list[nn.Module], *, residual: bool = True) -> None:
        super().__init__(())
        d, s = ctx.hidden, ctx.adapter.d_s
        self.residual = residual
        self.encoder = init_linear(nn.Linear(d, s), ctx.std)
        self.blocks = nn.ModuleList(blocks)
        self.decoder = zero_linear(nn.Linear(s, d)) if residual else init_linear(nn.Linear(s, d), ctx.std)

    def adapt_top(self, hidden: torch.Tensor, mask: Mask) -> torch.Tensor:
        x = self.encoder(hidden)
        for block in self.blocks:  # N_top layers in sequence (not a loop over heads or tasks)
            x = block(x, mask)
        return hidden + self.decoder(x) if self.residual else self.decoder(x)


def build_proj_attn_top(ctx: BuildContext) -> ProjectedTopStack:
    c, a = ctx.base_config, ctx.adapter
    return ProjectedTopStack(
        ctx,
        [AttentionBlock(c, a.d_s, a.heads, dropout=ctx.dropout, eps=ctx.eps, std=ctx.std) for _ in range(a.n_top)],
        residual=a.proj_attn_top_residual,
    )


def build_proj_ffn_top(ctx: BuildContext) -> ProjectedTopStack:
    a = ctx.adapter
    return ProjectedTopStack(
        ctx,
        [
            FeedForwardBlock(a.d_s, a.ffn_ratio * a.d_s, dropout=ctx.dropout, eps=ctx.eps, std=ctx.std)
            for _ in range(a.n_top)
        ],
    )


class BertLayerTop(TaskAdapter):
    """One more layer of the trunk's family for this task, run as the trunk runs its last layer: a fresh layer of
    the last layer's shape with BERT's initialisation (``bert_layer_top_init="fresh"``, the released code) or a copy
    of the trunk's last layer at construction (``"copy"``)."""

    def __init__(self, ctx: BuildContext) -> None:
        super().__init__(())
        self.layer = copy.deepcopy(ctx.family.layers[-1])
        if ctx.adapter.bert_layer_top_init == "fresh":
            reinitialise(self.layer, ctx.std)
        self._family = (ctx.family,)  # a plain reference (the trunk's weights are registered on the model)

    def adapt_top(self, hidden: torch.Tensor, mask: Mask) -> torch.Tensor:
        family = self._family[0]  # its ``current`` state: what this forward's layers read (mask, RoPE, positions)
        return family.plain_layer(self.layer, len(family.layers) - 1, hidden, family.current)


ADAPTERS = (
    AdapterSpec("proj_attn_top", build_proj_attn_top),
    AdapterSpec("proj_ffn_top", build_proj_ffn_top),
    AdapterSpec("bert_layer_top", BertLayerTop),
)
