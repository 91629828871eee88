"""BERT (MiniLM), RoBERTa / XLM-R / CamemBERT and ELECTRA: the trunks of ``BertLayer``-shaped layers.

An adapted layer l is an explicit copy of ``BertLayer.forward`` built from the same submodules, with the
adapter's hooks at the places docs/design.md "Adapter methods (per task)" names (``pals_core.adapters.base``
documents each):

    a_l     = attention_norm(h_l + adapt_attention_output(O · MH(adapt_query(Q h_l), adapt_key(K h_l),
                                                            adapt_value(V h_l); adapt_attention_mask(mask))))
    h_{l+1} = adapt_layer_output(output_norm(adapt_ffn_output(W_out adapt_ffn_activation(GELU(W_in a_l)))
                                             + a_l + parallel_branch(h_l)))

RoBERTa's layer is BERT's (``RobertaLayer``); its embeddings number positions after the padding index and
have one token type, so the trunk passes no token_type_ids. ELECTRA projects its embeddings E → d
(``embeddings_project``) and has no pooler: its head is ``ElectraClassificationHead`` (dense + GELU + out_proj).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.bert.modeling_bert import eager_attention_forward

from ...adapters.base import Mask, TaskAdapter
from ...trunks.base import State, Trunk


def self_attention(
    sa: nn.Module, h: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Mask
) -> torch.Tensor:
    """BertSelfAttention after its Q, K, V projections, through the configured attention function."""
    shape = (*h.shape[:-1], -1, sa.attention_head_size)
    q, k, v = (t.view(*shape).transpose(1, 2) for t in (q, k, v))
    attend = ALL_ATTENTION_FUNCTIONS.get_interface(sa.config._attn_implementation, eager_attention_forward)
    ctx, _ = attend(sa, q, k, v, mask, dropout=0.0 if not sa.training else sa.dropout.p, scaling=sa.scaling)
    return ctx.reshape(*h.shape[:-1], -1).contiguous()


def after_attention(
    i: int,
    h: torch.Tensor,
    y: torch.Tensor,
    mask: Mask,
    adapter: TaskAdapter,
    attention_norm: nn.Module,
    ffn_in: Callable,
    ffn_out: Callable,
    output_norm: nn.Module,
) -> torch.Tensor:
    """The rest of a post-norm layer once its attention output ``y`` is adapted (BERT's, DistilBERT's, DeBERTa's,
    MPNet's): a = attention_norm(y + h); h_{l+1} = adapt_layer_output(output_norm(adapt_ffn_output(ffn_out(
    adapt_ffn_activation(ffn_in(a)))) + a + parallel_branch(h))). ``ffn_in`` is W_in and its activation,
    ``ffn_out`` W_out and its dropout."""
    a = adapter.attention_norm(i, attention_norm, y + h)
    g = adapter.adapt_ffn_activation(i, ffn_in(a))
    z = adapter.adapt_ffn_output(i, ffn_out(g)) + a
    ts = adapter.parallel_branch(i, h, mask)
    if ts is not None:
        z = z + ts
    return adapter.adapt_layer_output(i, adapter.output_norm(i, output_norm, z))


def adapted_bert_layer(layer: nn.Module, i: int, h: torch.Tensor, mask: Mask, adapter: TaskAdapter) -> torch.Tensor:
    """BertLayer.forward for layer i with the adapter's hooks, in the order ``TaskAdapter`` lists them."""
    sa, so, out = layer.attention.self, layer.attention.output, layer.output
    q = adapter.adapt_query(i, h, sa.query(h))
    k = adapter.adapt_key(i, h, sa.key(h))
    v = adapter.adapt_value(i, h, sa.value(h))
    ctx = self_attention(sa, h, q, k, v, adapter.adapt_attention_mask(i, mask, h))
    y = adapter.adapt_attention_output(i, so.dropout(so.dense(ctx)))
    return after_attention(
        i, h, y, mask, adapter, so.LayerNorm, layer.intermediate, lambda g: out.dropout(out.dense(g)), out.LayerNorm
    )


class BertTrunk(Trunk):
    family = "bert"

    @property
    def layers(self) -> nn.ModuleList:
        return self.model.encoder.layer

    @property
    def pooler(self) -> nn.Module | None:
        return self.model.pooler

    def embed(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        return self.model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)

    def adapted_layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter) -> torch.Tensor:
        return adapted_bert_layer(self.layers[i], i, h, state.mask, adapter)

    def hook_norms(self, i: int) -> tuple[nn.Module, nn.Module]:
        layer = self.layers[i]
        return layer.attention.output.LayerNorm, layer.output.LayerNorm


class RobertaTrunk(BertTrunk):
    family = "roberta"

    @property
    def choice_dropout(self) -> float:
        """``RobertaForMultipleChoice``'s dropout: ``hidden_dropout_prob`` (``classifier_dropout`` not read)."""
        return self.config.hidden_dropout_prob

    def embed(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        if self.config.type_vocab_size <= 1:  # one token type: segment ids of a BERT tokenizer do not apply
            token_type_ids = None
        return self.model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)


TRUNKS = (BertTrunk, RobertaTrunk)
