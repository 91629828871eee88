"""CA-MTL (Pilault, Elhattami & Pal, ICLR 2021): task-conditioned modules shared by all tasks.

Each task holds one embedding e_t ∈ R^{d_z} (``adapters.<task>.embedding``); every other CA-MTL
weight lives once in ``shared_adapter`` (``CaMtlShared``) and is conditioned on
z = W_z e_t + b_z, computed once per forward (rows = 1). With
FiLM(x; z) = (1 + γ) ⊙ x + β, [γ; β] = W z + b (W, b zero-initialised: identity at initialisation):

- conditional alignment (Sec. 2.1): E ← FiLM(E; z) on the embedding output (``adapt_embeddings``).
- conditional attention (Sec. 2.2), layers K (``location``): the scores of every head get the
  block-diagonal bias ⊕_b FiLM(A_b; z), A_b ∈ R^{m×m} zero-initialised, γ, β ∈ R^m shared by the rows
  of a block; the bias covers positions < N_b·m, is cropped to shorter sequences and zero-padded for
  longer ones (``adapt_attention_mask``).
- conditional layer norm (Sec. 2.3), both LayerNorms of the layers K: the base γ₀, β₀ become
  (1 + γ(z)) ⊙ γ₀ and β₀ + β(z) (``attention_norm``, ``output_norm``).
- conditional bottleneck (Sec. 2.4), the top ``cond_adapter_layers`` layers: the FFN output y becomes
  y + U · GELU(D · FiLM(y; z)) before the residual and LN2, D: d→d_s, U: d_s→d (U zero-initialised;
  ``adapt_ffn_output``).
- freezing (Sec. 3): the trunk's embedding layer and layers 0..F−1 get ``requires_grad = False`` when
  the shared module is built (F = ``frozen_layers``, default ⌊L/2⌋).

Counts (exact, ``cost.py`` beside this file): per task d_z; shared (d_z² + d_z) + (2d·d_z + 2d)
+ Σ_{l∈K} [N_b·m² + 2m·d_z + 2m + 2·(2d·d_z + 2d)] + |B|·[2d·d_z + 2d + 2·d·d_s + d_s + d].
Forward FLOPs: 2·d_z² + 4d·d_z + Σ_{l∈K}(4m·d_z + 8d·d_z) + |B|·(4d·d_z + 4n·d·d_s).
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ...adapters.base import AdapterSpec, BuildContext, TaskAdapter, init_linear, layer_key, zero_linear
from ...budget.models import from_hf_config
from . import cost as spec


def film(gen: nn.Linear, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(γ, β), each of shape (width,), from the generator ``Linear(d_z, 2·width)`` applied to z (1, d_z)."""
    gamma, beta = gen(z).squeeze(0).chunk(2)
    return gamma, beta


class ConditionalAttentionBias(nn.Module):
    """M(z) = ⊕_{b=1..N_b} ((1 + γ) ⊙ A_b + β), A: (N_b, m, m); γ, β ∈ R^m scale/shift the columns."""

    def __init__(self, z_dim: int, blocks: int, size: int) -> None:
        super().__init__()
        self.blocks = nn.Parameter(torch.zeros(blocks, size, size))
        self.film = zero_linear(nn.Linear(z_dim, 2 * size))

    def forward(self, z: torch.Tensor, n: int) -> torch.Tensor:
        """The (n, n) bias for a sequence of n tokens."""
        gamma, beta = film(self.film, z)
        bias = torch.block_diag(*((1 + gamma) * self.blocks + beta))
        width = bias.shape[0]
        if n <= width:
            return bias[:n, :n]
        return F.pad(bias, (0, n - width, 0, n - width))


class ConditionalBottleneck(nn.Module):
    """y + U · GELU(D · FiLM(y; z))."""

    def __init__(self, z_dim: int, d: int, s: int, std: float) -> None:
        super().__init__()
        self.film = zero_linear(nn.Linear(z_dim, 2 * d))
        self.down = init_linear(nn.Linear(d, s), std)
        self.up = zero_linear(nn.Linear(s, d))

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        gamma, beta = film(self.film, z)
        return y + self.up(F.gelu(self.down((1 + gamma) * y + beta)))


class CaMtlShared(nn.Module):
    """Every CA-MTL module shared by all tasks (``model.shared_adapter``)."""

    def __init__(self, ctx: BuildContext) -> None:
        super().__init__()
        cfg, shape = ctx.adapter, from_hf_config(ctx.base_config.to_dict())
        d, z, std = ctx.hidden, spec.z_dim(shape, cfg), ctx.std
        self.z_dim = z
        self.conditional_layers: tuple[int, ...] = tuple(ctx.layers)
        self.bottleneck_layers: tuple[int, ...] = spec.bottleneck_layers(shape, cfg)
        self.frozen_layers = spec.frozen_layers(shape, cfg)
        self.transform = init_linear(nn.Linear(z, z), std)
        self.alignment = zero_linear(nn.Linear(z, 2 * d))
        size = spec.block_size(cfg)
        self.attention = nn.ModuleDict({layer_key(i): ConditionalAttentionBias(z, cfg.cond_attn_blocks, size)
                                        for i in self.conditional_layers})
        self.norm_attention = nn.ModuleDict({layer_key(i): zero_linear(nn.Linear(z, 2 * d)) for i in self.conditional_layers})
        self.norm_output = nn.ModuleDict({layer_key(i): zero_linear(nn.Linear(z, 2 * d)) for i in self.conditional_layers})
        self.bottleneck = nn.ModuleDict({layer_key(i): ConditionalBottleneck(z, d, cfg.d_s, std)
                                         for i in self.bottleneck_layers})
        freeze_lower(ctx.family, self.frozen_layers)


def freeze_lower(trunk, count: int) -> None:
    """Freeze the trunk's embedding layer and encoder layers 0..count−1 (nothing when count = 0);
    ``trunk`` is the family's torch half (``pals_core.trunks.Trunk``)."""
    if count == 0:
        return
    for module in trunk.embedding_modules():
        module.requires_grad_(False)
    for layer in trunk.layers[:count]:
        layer.requires_grad_(False)


class CaMtlAdapter(TaskAdapter):
    """One task's part of CA-MTL: its embedding e_t, reading the shared modules through hooks."""

    def __init__(self, ctx: BuildContext) -> None:
        if not isinstance(ctx.shared, CaMtlShared):
            raise ValueError("ca_mtl task adapters need the shared CA-MTL module (model.shared_adapter)")
        shared = ctx.shared
        super().__init__(sorted(set(shared.conditional_layers) | set(shared.bottleneck_layers)))
        # e_t ~ N(0, 1) like nn.Embedding, stored as one row (1, d_z) so the transformation is a matmul with rows = 1
        self.embedding = nn.Parameter(torch.randn(1, shared.z_dim))
        self._shared = (shared,)  # a plain reference: the shared weights are registered once, on the model
        self._z: Optional[torch.Tensor] = None

    @property
    def shared(self) -> CaMtlShared:
        return self._shared[0]

    def task_condition(self) -> torch.Tensor:
        """z = W_z e_t + b_z, shape (1, d_z)."""
        return self.shared.transform(self.embedding)

    def _condition(self) -> torch.Tensor:
        if self._z is None:  # a forward that skipped adapt_embeddings (never in MultiTaskBert)
            self._z = self.task_condition()
        return self._z

    def adapt_embeddings(self, h: torch.Tensor) -> torch.Tensor:
        self._z = self.task_condition()  # once per forward: every later hook of this forward reads it
        gamma, beta = film(self.shared.alignment, self._z)
        return (1 + gamma) * h + beta

    def adapt_attention_mask(self, i: int, mask: Optional[torch.Tensor], h: torch.Tensor) -> Optional[torch.Tensor]:
        if i not in self.shared.conditional_layers:
            return mask
        n = h.shape[1]
        bias = self.shared.attention[layer_key(i)](self._condition(), n).to(h.dtype)[None, None]
        if mask is None:
            return bias
        if mask.dtype == torch.bool:
            mask = torch.zeros(mask.shape, dtype=h.dtype, device=h.device).masked_fill(~mask, torch.finfo(h.dtype).min)
        return mask + bias

    def _conditional_norm(self, gens: nn.ModuleDict, i: int, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        if i not in self.shared.conditional_layers:
            return norm(x)
        gamma, beta = film(gens[layer_key(i)], self._condition())
        return F.layer_norm(x, norm.normalized_shape, (1 + gamma) * norm.weight, norm.bias + beta, norm.eps)

    def attention_norm(self, i: int, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        return self._conditional_norm(self.shared.norm_attention, i, norm, x)

    def output_norm(self, i: int, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        return self._conditional_norm(self.shared.norm_output, i, norm, x)

    def adapt_ffn_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        if i not in self.shared.bottleneck_layers:
            return y
        return self.shared.bottleneck[layer_key(i)](self._condition(), y)


ADAPTERS = (AdapterSpec("ca_mtl", CaMtlAdapter, build_shared=CaMtlShared),)
