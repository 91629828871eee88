"""ModernBERT: pre-norm layers (``ModernBertEncoderLayer``), RoPE, alternating local / global attention, a final
norm, no pooler, no token types. An adapted layer l is an explicit copy of the HF layer's forward with the
adapter's hooks at these places (pre-norm: the norms act on the input of their sublayer, the residual stream
carries the rest):

    x       = attention_norm(h_l)                  (the identity in layer 0)
    q, k, v = adapt_query(Wq x), adapt_key(Wk x), adapt_value(Wv x)     (the three thirds of Wqkv x, before RoPE)
    a       = h_l + adapt_attention_output(Wo · MH(RoPE(q), RoPE(k), v; adapt_attention_mask(mask of the layer's type)))
    z       = adapt_ffn_output(Wo' adapt_ffn_activation(act(W_in x') ⊙ gate)),   x' = output_norm(a)   (GLU)
    h_{l+1} = adapt_layer_output(a + z + parallel_branch(h_l))

Local layers attend within ``local_attention``/2 tokens each side through a sliding-window mask over the full
n × n scores (sdpa / eager), so they cost the FLOPs of a global layer (``pals_core/families/modernbert/description.py``).
The adapters' own attention (PALs, top stacks) reads the global mask. Task head: ``ModernBertPredictionHead``
(dense, activation, norm) + classifier on the first token or the mean of the tokens (``classifier_pooling``).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.activations import ACT2FN
from transformers.masking_utils import create_bidirectional_mask, create_bidirectional_sliding_window_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.modernbert.modeling_modernbert import apply_rotary_pos_emb, eager_attention_forward

from ...adapters.base import TaskAdapter
from ...trunks.base import State, Trunk


class ModernBertHead(nn.Module):
    """``ModernBertPredictionHead`` + classifier: out(drop(norm(act(dense(pooled)))))."""

    def __init__(self, config, labels: int) -> None:
        super().__init__()
        d = config.hidden_size
        self.dense = nn.Linear(d, d, bias=config.classifier_bias)
        self.act = ACT2FN[config.classifier_activation]
        self.norm = nn.LayerNorm(d, eps=config.norm_eps, bias=config.norm_bias)
        self.out = nn.Linear(d, labels)

    def forward(self, pooled: torch.Tensor, dropout: nn.Module) -> torch.Tensor:
        return self.out(dropout(self.norm(self.act(self.dense(pooled)))))


class ModernBertTrunk(Trunk):
    family = "modernbert"
    token_types = False

    @property
    def layers(self) -> nn.ModuleList:
        return self.model.layers

    @property
    def classifier_dropout(self) -> float:
        return self.config.classifier_dropout

    @property
    def hidden_dropout(self) -> float:
        return self.config.mlp_dropout

    @property
    def norm_eps(self) -> float:
        return self.config.norm_eps

    def embed(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor:
        return self.model.embeddings(input_ids=input_ids)

    def _prepare(self, h: torch.Tensor, attention_mask: torch.Tensor | None) -> State:
        kwargs = {"config": self.config, "inputs_embeds": h, "attention_mask": attention_mask}
        masks = {
            "full_attention": create_bidirectional_mask(**kwargs),
            "sliding_attention": create_bidirectional_sliding_window_mask(**kwargs),
        }
        positions = torch.arange(h.shape[1], device=h.device).unsqueeze(0)
        rope = {t: self.model.rotary_emb(h, positions, t) for t in set(self.config.layer_types)}
        return State(masks["full_attention"], attention_mask, {"masks": masks, "rope": rope})

    def plain_layer(self, module: nn.Module, i: int, h: torch.Tensor, state: State) -> torch.Tensor:
        kind = module.attention_type
        return module(h, attention_mask=state.extra["masks"][kind], position_embeddings=state.extra["rope"][kind])

    def hook_norms(self, i: int) -> tuple[nn.Module, nn.Module]:
        layer = self.layers[i]
        return layer.attn_norm, layer.mlp_norm  # attn_norm: the identity in layer 0

    def adapted_layer(self, i: int, h: torch.Tensor, state: State, adapter: TaskAdapter) -> torch.Tensor:
        layer = self.layers[i]
        attn, mlp, kind = layer.attn, layer.mlp, layer.attention_type
        x = adapter.attention_norm(i, self.hook_norms(i)[0], h)
        q, k, v = attn.Wqkv(x).chunk(3, dim=-1)
        q, k, v = adapter.adapt_query(i, x, q), adapter.adapt_key(i, x, k), adapter.adapt_value(i, x, v)
        shape = (*x.shape[:-1], -1, attn.head_dim)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        cos, sin = state.extra["rope"][kind]
        q, k = apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)
        attend = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager_attention_forward)
        mask = adapter.adapt_attention_mask(i, state.extra["masks"][kind], h)
        ctx, _ = attend(
            attn,
            q,
            k,
            v,
            mask,
            dropout=attn.attention_dropout if attn.training else 0.0,
            scaling=attn.head_dim**-0.5,
            sliding_window=attn.sliding_window,
            deterministic=attn.deterministic_flash_attn,
        )
        y = adapter.adapt_attention_output(i, attn.out_drop(attn.Wo(ctx.reshape(*x.shape[:-1], -1).contiguous())))
        a = h + y
        xin, gate = mlp.Wi(adapter.output_norm(i, self.hook_norms(i)[1], a)).chunk(2, dim=-1)
        g = adapter.adapt_ffn_activation(i, mlp.act(xin) * gate)
        z = a + adapter.adapt_ffn_output(i, mlp.Wo(mlp.drop(g)))
        ts = adapter.parallel_branch(i, h, state.mask)
        if ts is not None:
            z = z + ts
        return adapter.adapt_layer_output(i, z)

    def finish(self, h: torch.Tensor) -> torch.Tensor:
        return self.model.final_norm(h)

    def new_head(self, num_labels: int) -> nn.Module:
        return ModernBertHead(self.config, num_labels)

    def new_token_head(self, num_labels: int) -> nn.Module:
        return ModernBertHead(self.config, num_labels)  # ModernBertForTokenClassification: head, drop, classifier

    @property
    def span_dropout(self) -> float:
        return self.config.classifier_dropout  # ModernBertForQuestionAnswering: head, drop, classifier

    def tag(self, head: nn.Module, dropout: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
        return head(hidden, dropout)

    def classify(self, head, pooler, dropout, hidden, attention_mask) -> torch.Tensor:
        if self.config.classifier_pooling == "mean":
            if attention_mask is None:
                attention_mask = torch.ones(hidden.shape[:2], device=hidden.device, dtype=torch.bool)
            pooled = (hidden * attention_mask.unsqueeze(-1)).sum(dim=1) / attention_mask.sum(dim=1, keepdim=True)
        else:
            pooled = hidden[:, 0]
        return head(pooled, dropout)


TRUNK = ModernBertTrunk
