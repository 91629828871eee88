"""DeBERTa-v2 / v3: BERT's post-norm layer with disentangled attention (``DisentangledSelfAttention``): the
content scores QKᵀ plus, as the config's flags say, content→position (c2p) and position→content (p2c) scores
against the 2k relative embeddings (projected by query_proj / key_proj with ``share_att_key``, else by their own
pos_query_proj / pos_key_proj), scaled by √(d_h·(1 + #types)). An adapted layer l is an explicit copy of
``DebertaV2Layer.forward`` with the adapter's hooks at BERT's places; ``adapt_query`` / ``adapt_key`` /
``adapt_value`` act on the token projections (the relative embeddings' projections stay the base model's).
The embeddings are masked by the attention mask as DeBERTa does; layer 0 is followed by the optional
ConvLayer. No pooler; task head: ``ContextPooler`` (dropout, dense, GELU) + dropout + classifier.
The adapters' own attention reads the mask transformers builds for the config's attention implementation.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.activations import ACT2FN
from transformers.models.deberta_v2.modeling_deberta_v2 import scaled_size_sqrt

from ...adapters.base import TaskAdapter
from ...trunks.base import DenseHead, State, Trunk, make_mask
from ..bert.trunk import after_attention


class DebertaHead(DenseHead):
    """``ContextPooler`` (dropout, dense, ``pooler_hidden_act``) then dropout and the classifier."""

    def __init__(self, config, labels: int) -> None:
        super().__init__(config.hidden_size, labels, ACT2FN[config.pooler_hidden_act], dropout_in=True)
        self.pooler_dropout = nn.Dropout(config.pooler_dropout)

    def forward(self, first: torch.Tensor, dropout: nn.Module) -> torch.Tensor:
        return self.out(dropout(self.act(self.dense(self.pooler_dropout(first)))))


class DebertaV2Trunk(Trunk):
    family = "deberta-v2"

    @property
    def layers(self) -> nn.ModuleList:
        return self.model.encoder.layer

    @property
    def classifier_dropout(self) -> float:
        drop = getattr(self.config, "cls_dropout", None)
        return self.config.hidden_dropout_prob if drop is None else drop

    def embed(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is not None and self.config.type_vocab_size <= 0:
            token_type_ids = None
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        return self.model.embeddings(input_ids=input_ids, token_type_ids=token_type_ids, mask=attention_mask)

    def _prepare(self, h: torch.Tensor, attention_mask: torch.Tensor | None) -> State:
        encoder = self.model.encoder
        raw = (
            attention_mask if attention_mask is not None else torch.ones(h.shape[:2], device=h.device, dtype=torch.long)
        )
        rel = encoder.get_rel_embedding()
        if rel is not None and rel.is_leaf and rel.requires_grad:
            # the bare Parameter (no norm_rel_ebd) handed to every layer as an input: the same values through a view
            # (grad mode) or detached (no grad), so module hooks such as FlopCounterMode's tracker see a non-leaf
            rel = rel.view_as(rel) if torch.is_grad_enabled() else rel.detach()
        extra = {
            "input_mask": raw,
            "trunk_mask": encoder.get_attention_mask(raw),
            "relative_pos": encoder.get_rel_pos(h),
            "rel_embeddings": rel,
        }
        return State(make_mask(self.config, h, attention_mask), attention_mask, extra)

    def _after(self, i: int, out: torch.Tensor, state: State) -> torch.Tensor:
        conv = self.model.encoder.conv
        if i == 0 and conv is not None:  # DebertaV2Encoder: the convolution joins after layer 0, on its input
            return conv(state.extra["layer0_input"], out, state.extra["input_mask"])
        return out

    def plain_layer(self, module: nn.Module, i: int, h: torch.Tensor, state: State) -> torch.Tensor:
        e = state.extra
        out, _ = module(h, e["trunk_mask"], relative_pos=e["relative_pos"], rel_embeddings=e["rel_embeddings"])
        return out

    def layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter | None) -> torch.Tensor:
        if i == 0:
            state.extra["layer0_input"] = h
        return self._after(i, super().layer(i, h, state, adapter), state)

    def hook_norms(self, i: int) -> tuple[nn.Module, nn.Module]:
        layer = self.layers[i]
        return layer.attention.output.LayerNorm, layer.output.LayerNorm

    def adapted_layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter) -> torch.Tensor:
        layer, e = self.layers[i], state.extra
        sa, so, out = layer.attention.self, layer.attention.output, layer.output
        heads = sa.num_attention_heads
        q = sa.transpose_for_scores(adapter.adapt_query(i, h, sa.query_proj(h)), heads)
        k = sa.transpose_for_scores(adapter.adapt_key(i, h, sa.key_proj(h)), heads)
        v = sa.transpose_for_scores(adapter.adapt_value(i, h, sa.value_proj(h)), heads)
        scale_factor = 1 + ("c2p" in sa.pos_att_type) + ("p2c" in sa.pos_att_type)
        scale = scaled_size_sqrt(q, scale_factor)
        scores = torch.bmm(q, k.transpose(-1, -2) / scale.to(dtype=q.dtype))
        if sa.relative_attention:
            rel = sa.pos_dropout(e["rel_embeddings"])
            scores = scores + sa.disentangled_attention_bias(q, k, e["relative_pos"], rel, scale_factor)
        scores = scores.view(-1, heads, scores.size(-2), scores.size(-1))
        mask = adapter.adapt_attention_mask(i, e["trunk_mask"], h).bool()
        scores = scores.masked_fill(~mask, torch.finfo(q.dtype).min)
        probs = sa.dropout(nn.functional.softmax(scores, dim=-1))
        ctx = torch.bmm(probs.view(-1, probs.size(-2), probs.size(-1)), v)
        ctx = ctx.view(-1, heads, ctx.size(-2), ctx.size(-1)).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(*ctx.size()[:-2], -1)
        y = adapter.adapt_attention_output(i, so.dropout(so.dense(ctx)))
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

    def new_head(self, num_labels: int) -> nn.Module:
        return DebertaHead(self.config, num_labels)

    def classify(self, head, pooler, dropout, hidden, attention_mask) -> torch.Tensor:
        return head(hidden[:, 0], dropout)


TRUNK = DebertaV2Trunk
