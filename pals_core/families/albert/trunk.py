"""ALBERT's torch half: the trunk around ``AlbertModel`` (``description.py`` is the pure-Python half).

Layer i is the one shared ``AlbertLayer`` (``encoder.albert_layer_groups[0].albert_layers[0]``) run for the i-th
time; ``layers`` lists it L times, so a plain layer is the HF layer itself and an adapted layer i is an explicit copy
of ``AlbertLayer.forward`` — BERT's layer without a dropout after ``ffn_output`` — with layer i's own adapter hooks
around the shared weights. The embeddings include the E → d ``embedding_hidden_mapping_in`` (HF runs it at the start
of the encoder). The pooler is HF's Linear(d, d) + tanh on the first token, wrapped to take the hidden states.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.albert.modeling_albert import eager_attention_forward

from ...adapters.base import TaskAdapter
from ...trunks.base import State, Trunk
from ..bert.trunk import after_attention


class AlbertPooler(nn.Module):
    """tanh(dense(H[:, 0])): ``AlbertModel``'s pooler (its ``pooler`` Linear and ``pooler_activation``)."""

    def __init__(self, dense: nn.Linear) -> None:
        super().__init__()
        self.dense = dense

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))


def self_attention(
    att: nn.Module, h: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask
) -> torch.Tensor:
    """``AlbertAttention`` after its Q, K, V projections, through the configured attention function."""
    shape = (*h.shape[:-1], -1, att.attention_head_size)
    q, k, v = (t.view(*shape).transpose(1, 2) for t in (q, k, v))
    attend = ALL_ATTENTION_FUNCTIONS.get_interface(att.config._attn_implementation, eager_attention_forward)
    ctx, _ = attend(
        att, q, k, v, mask, dropout=0.0 if not att.training else att.attention_dropout.p, scaling=att.scaling
    )
    return ctx.reshape(*h.shape[:-1], -1).contiguous()


class AlbertTrunk(Trunk):
    family = "albert"

    def __init__(self, model: nn.Module) -> None:
        super().__init__(model)
        shared = model.encoder.albert_layer_groups[0].albert_layers[0]
        self._layers = nn.ModuleList([shared] * model.config.num_hidden_layers)  # one module, L applications
        self._pooler = AlbertPooler(model.pooler) if model.pooler is not None else None

    @property
    def layers(self) -> nn.ModuleList:
        return self._layers

    def embedding_modules(self) -> list[nn.Module]:
        return [self.model.embeddings, self.model.encoder.embedding_hidden_mapping_in]

    @property
    def pooler(self) -> nn.Module | None:
        return self._pooler

    @property
    def classifier_dropout(self) -> float:
        return self.config.classifier_dropout_prob

    def embed(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        h = self.model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        return self.model.encoder.embedding_hidden_mapping_in(h)

    def hook_norms(self, i: int) -> tuple[nn.Module, nn.Module]:
        layer = self.layers[i]
        return layer.attention.LayerNorm, layer.full_layer_layer_norm  # the one shared layer's

    def adapted_layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter) -> torch.Tensor:
        """``AlbertLayer.forward`` for layer i with layer i's hooks, in the order ``TaskAdapter`` lists them."""
        layer = self.layers[i]
        att = layer.attention
        q = adapter.adapt_query(i, h, att.query(h))
        k = adapter.adapt_key(i, h, att.key(h))
        v = adapter.adapt_value(i, h, att.value(h))
        ctx = self_attention(att, h, q, k, v, adapter.adapt_attention_mask(i, state.mask, h))
        y = adapter.adapt_attention_output(i, att.output_dropout(att.dense(ctx)))
        return after_attention(
            i,
            h,
            y,
            state.mask,
            adapter,
            self.hook_norms(i)[0],
            lambda a: layer.activation(layer.ffn(a)),
            layer.ffn_output,
            self.hook_norms(i)[1],
        )


TRUNK = AlbertTrunk
