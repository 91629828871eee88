"""The encoder loop over ``bert.encoder.layer[i]`` with one task's adapter wired in.

Layers the adapter does not touch run as the plain ``transformers`` ``BertLayer`` (its attention
implementation, sdpa by default). An adapted layer l runs an explicit copy of BertLayer.forward built
from the same submodules, with the adapter's hooks, named by where they act, at the places SPEC
section 4 names (``pals_core.adapters.base`` documents each):

    a_l     = attention_norm(h_l + adapt_attention_output(O · MH(adapt_query(Q h_l), adapt_key(K h_l),
                                                            adapt_value(V h_l); adapt_attention_mask(mask))))
    h_{l+1} = adapt_layer_output(output_norm(adapt_ffn_output(W_out adapt_ffn_activation(GELU(W_in a_l)))
                                             + a_l + parallel_branch(h_l)))

With every hook at its identity this computes exactly what BertLayer computes (same ops, same order).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import nn
from transformers.masking_utils import create_bidirectional_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.bert.modeling_bert import eager_attention_forward

from .adapters.base import Mask, TaskAdapter


def make_mask(config, embeddings: torch.Tensor, attention_mask: Optional[torch.Tensor]) -> Mask:
    """The attention mask as ``BertModel`` builds it for its attention implementation; adapters use it too."""
    return create_bidirectional_mask(config=config, inputs_embeds=embeddings, attention_mask=attention_mask)


def self_attention(layer: nn.Module, h: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   mask: Mask) -> torch.Tensor:
    """BertSelfAttention after its Q, K, V projections, through the configured attention function."""
    sa = layer.attention.self
    shape = (*h.shape[:-1], -1, sa.attention_head_size)
    q, k, v = (t.view(*shape).transpose(1, 2) for t in (q, k, v))
    attend = ALL_ATTENTION_FUNCTIONS.get_interface(sa.config._attn_implementation, eager_attention_forward)
    ctx, _ = attend(sa, q, k, v, mask, dropout=0.0 if not sa.training else sa.dropout.p, scaling=sa.scaling)
    return ctx.reshape(*h.shape[:-1], -1).contiguous()


def adapted_layer(layer: nn.Module, i: int, h: torch.Tensor, mask: Mask, adapter: TaskAdapter) -> torch.Tensor:
    """BertLayer.forward for layer i with the adapter's hooks, in the order ``TaskAdapter`` lists them."""
    sa, so, out = layer.attention.self, layer.attention.output, layer.output
    q = adapter.adapt_query(i, h, sa.query(h))
    k = adapter.adapt_key(i, h, sa.key(h))
    v = adapter.adapt_value(i, h, sa.value(h))
    ctx = self_attention(layer, h, q, k, v, adapter.adapt_attention_mask(i, mask, h))
    y = adapter.adapt_attention_output(i, so.dropout(so.dense(ctx)))
    a = adapter.attention_norm(i, so.LayerNorm, y + h)
    g = adapter.adapt_ffn_activation(i, layer.intermediate(a))
    z = adapter.adapt_ffn_output(i, out.dropout(out.dense(g))) + a
    ts = adapter.parallel_branch(i, h, mask)
    if ts is not None:
        z = z + ts
    return adapter.adapt_layer_output(i, adapter.output_norm(i, out.LayerNorm, z))


def run_layers(layers: nn.ModuleList, start: int, stop: int, h: torch.Tensor, mask: Mask,
               adapter: Optional[TaskAdapter]) -> torch.Tensor:
    """Layers start … stop−1; ``adapter`` None = the plain trunk."""
    adapted = adapter.layers if adapter is not None else ()
    for i in range(start, stop):
        if i in adapted:
            h = adapted_layer(layers[i], i, h, mask, adapter)
        else:
            h = layers[i](h, mask)
    return h
