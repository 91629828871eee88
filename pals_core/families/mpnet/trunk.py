"""MPNet: BERT's post-norm layer (``MPNetLayer``: attention.attn q, k, v, o; attention.LayerNorm; intermediate;
output) whose eager attention adds a relative position bias to the scores: softmax(QKᵀ/√d_h + bias + mask) V. The
bias, a (B, h, n, n) tensor from the encoder's ``relative_attention_bias`` table, is computed once per forward
(``MPNetEncoder.compute_position_bias``) and read by every layer (``State.extra``). An adapted layer l is an explicit
copy of ``MPNetLayer.forward`` with the adapter's hooks at BERT's places (``adapt_attention_mask`` acts on the mask
added after the bias). The embeddings number positions from the ids (RoBERTa's rule) and read no token types; the
relative bias table is part of the embedding layer (frozen with it). Pooler: ``MPNetPooler``, shared by the tasks
as RoBERTa's (per-task poolers make ``MPNetClassificationHead`` exactly).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ...adapters.base import TaskAdapter
from ...trunks.base import State, make_mask
from ..bert.trunk import BertTrunk, after_attention


class MPNetTrunk(BertTrunk):
    """BERT's layers list and pooler; its own embeddings, position bias and adapted layer."""

    family = "mpnet"
    token_types = False

    @property
    def choice_dropout(self) -> float:
        """``MPNetForMultipleChoice``'s dropout: ``hidden_dropout_prob``."""
        return self.config.hidden_dropout_prob

    def embedding_modules(self) -> list[nn.Module]:
        return [self.model.embeddings, self.model.encoder.relative_attention_bias]

    def embed(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        return self.model.embeddings(input_ids=input_ids)

    def _prepare(self, h: torch.Tensor, attention_mask: torch.Tensor | None) -> State:
        return State(
            make_mask(self.config, h, attention_mask),
            attention_mask,
            {"position_bias": self.model.encoder.compute_position_bias(h)},
        )

    def plain_layer(self, module: nn.Module, i: int, h: torch.Tensor, state: State) -> torch.Tensor:
        return module(h, state.mask, state.extra["position_bias"])[0]

    def hook_norms(self, i: int) -> tuple[nn.Module, nn.Module]:
        layer = self.layers[i]
        return layer.attention.LayerNorm, layer.output.LayerNorm

    def adapted_layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter) -> torch.Tensor:
        layer = self.layers[i]
        attention, out = layer.attention, layer.output
        sa = attention.attn
        shape = (*h.shape[:-1], -1, sa.attention_head_size)
        q = adapter.adapt_query(i, h, sa.q(h)).view(shape).transpose(1, 2)
        k = adapter.adapt_key(i, h, sa.k(h)).view(shape).transpose(1, 2)
        v = adapter.adapt_value(i, h, sa.v(h)).view(shape).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(sa.attention_head_size)
        scores += state.extra["position_bias"]
        mask = adapter.adapt_attention_mask(i, state.mask, h)
        if mask is not None:
            scores = scores + mask
        probs = sa.dropout(nn.functional.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(*ctx.size()[:-2], sa.all_head_size)
        y = adapter.adapt_attention_output(i, attention.dropout(sa.o(ctx)))
        return after_attention(
            i,
            h,
            y,
            state.mask,
            adapter,
            self.hook_norms(i)[0],
            layer.intermediate,
            lambda g: out.dropout(out.dense(g)),
            self.hook_norms(i)[1],
        )


TRUNK = MPNetTrunk
