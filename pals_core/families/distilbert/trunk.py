"""DistilBERT: ``TransformerBlock`` (BERT's layer: q_lin, k_lin, v_lin, out_lin, sa_layer_norm, FFN lin1/lin2,
output_layer_norm) with the adapter's hooks at BERT's places; no token types, no pooler. The task head is
``DistilBertForSequenceClassification``'s: pre_classifier Linear(d, d) + ReLU + dropout, classifier Linear(d, C)
on the first token."""

from __future__ import annotations

import torch
from torch import nn

from ...adapters.base import TaskAdapter
from ...trunks.base import DenseHead, State, Trunk, classify_first_token
from ..bert.trunk import after_attention, self_attention


class DistilBertTrunk(Trunk):
    family = "distilbert"
    token_types = False

    @property
    def layers(self) -> nn.ModuleList:
        return self.model.transformer.layer

    @property
    def classifier_dropout(self) -> float:
        return self.config.seq_classif_dropout

    @property
    def span_dropout(self) -> float:
        return self.config.qa_dropout  # DistilBertForQuestionAnswering: dropout(qa_dropout) before qa_outputs

    @property
    def hidden_dropout(self) -> float:
        return self.config.dropout

    @property
    def norm_eps(self) -> float:
        return 1e-12  # DistilBERT's LayerNorms hard-code it

    def embed(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        return self.model.embeddings(input_ids)

    def hook_norms(self, i: int) -> tuple[nn.Module, nn.Module]:
        layer = self.layers[i]
        return layer.sa_layer_norm, layer.output_layer_norm

    def adapted_layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter) -> torch.Tensor:
        block = self.layers[i]
        sa, ffn = block.attention, block.ffn
        q = adapter.adapt_query(i, h, sa.q_lin(h))
        k = adapter.adapt_key(i, h, sa.k_lin(h))
        v = adapter.adapt_value(i, h, sa.v_lin(h))
        ctx = self_attention(sa, h, q, k, v, adapter.adapt_attention_mask(i, state.mask, h))
        y = adapter.adapt_attention_output(i, sa.out_lin(ctx))
        return after_attention(
            i,
            h,
            y,
            state.mask,
            adapter,
            self.hook_norms(i)[0],
            lambda a: ffn.activation(ffn.lin1(a)),
            lambda g: ffn.dropout(ffn.lin2(g)),
            self.hook_norms(i)[1],
        )

    def new_head(self, num_labels: int) -> nn.Module:
        return DenseHead(self.config.hidden_size, num_labels, nn.ReLU(), dropout_in=False)

    classify = staticmethod(classify_first_token)


TRUNK = DistilBertTrunk
