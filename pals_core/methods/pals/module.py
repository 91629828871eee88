"""Projected attention layers (PALs), Stickland & Murray 2019, Sec. 3.3 — in parallel to BERT layers.

    h_{l+1} = LN2(a_l + FFN(a_l) + TS_l(h_l)),   TS_l(h) = GELU(V^D · Attn_l(V^E · h))

(the released code, AsaCooperStickland/Bert-n-Pals; ``adapter_gelu=False`` drops the GELU: the paper's text),
with dropout ``pal_attention_dropout`` (0.1, as released) on the attention probabilities in training.

V^E: Linear(d, d_s), V^D: Linear(d_s, d) (with biases) — ONE pair per task shared across the task's
adapted layers (``pals``), or one pair per layer (``pals_unshared``); Attn_l: h_s-head
self-attention in d_s with Q, K, V and no output matrix (``SmallSelfAttention``).
V^D is zero-initialised and GELU(0) = 0, so the model equals the base model at initialisation (either form).
Parameters per task (exact): pals 2·d·d_s + d_s + d + K·(3·d_s² + 3·d_s);
pals_unshared K·(2·d·d_s + d_s + d + 3·d_s² + 3·d_s).
Forward FLOPs per adapted layer: 2n·d·d_s + 6n·d_s² + 4n²·d_s + 2n·d_s·d.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...adapters.attention import SmallSelfAttention
from ...adapters.base import AdapterSpec, BuildContext, Mask, TaskAdapter, init_linear, layer_key, zero_linear


class PalsAdapter(TaskAdapter):
    def __init__(self, ctx: BuildContext, *, shared_projections: bool) -> None:
        super().__init__(ctx.layers)
        d, s, std = ctx.hidden, ctx.adapter.d_s, ctx.std
        self.shared_projections = shared_projections
        self.gelu = ctx.adapter.adapter_gelu
        if shared_projections:
            self.encoder = init_linear(nn.Linear(d, s), std)
            self.decoder = zero_linear(nn.Linear(s, d))
        else:
            self.encoders = nn.ModuleDict({layer_key(i): init_linear(nn.Linear(d, s), std) for i in self.layers})
            self.decoders = nn.ModuleDict({layer_key(i): zero_linear(nn.Linear(s, d)) for i in self.layers})
        self.attention = nn.ModuleDict(
            {
                layer_key(i): SmallSelfAttention(
                    ctx.base_config,
                    s,
                    ctx.adapter.heads,
                    output=False,
                    std=std,
                    dropout=ctx.adapter.pal_attention_dropout,
                )
                for i in self.layers
            }
        )

    def parallel_branch(self, i: int, h: torch.Tensor, mask: Mask) -> torch.Tensor:
        key = layer_key(i)
        if self.shared_projections:
            encoder, decoder = self.encoder, self.decoder
        else:
            encoder, decoder = self.encoders[key], self.decoders[key]
        out = decoder(self.attention[key](encoder(h), mask))
        return F.gelu(out) if self.gelu else out


ADAPTERS = (
    AdapterSpec("pals", lambda ctx: PalsAdapter(ctx, shared_projections=True)),
    AdapterSpec("pals_unshared", lambda ctx: PalsAdapter(ctx, shared_projections=False)),
)
