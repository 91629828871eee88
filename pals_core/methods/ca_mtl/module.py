"""CA-MTL (Pilault, Elhattami & Pal, ICLR 2021) as its authors released it (CAMTL/CA-MTL): task-conditioned
modules shared by all tasks.

Each task holds one embedding e_t ∈ R^{d_z} (``adapters.<task>.embedding``, N(0, std²) with std =
``initializer_range``, 0.02 for BERT, as released); every other CA-MTL weight lives once in
``shared_adapter`` (``CaMtlShared``) and is conditioned on z = W_z e_t + b_z, computed once per forward
(rows = 1). With FiLM(x; c) = (1 + γ) ⊙ x + β, [γ; β] = W c + b:

- conditional alignment (Sec. 2.1): E ← FiLM(E; z) on the embedding output (``adapt_embeddings``).
- conditional attention (Sec. 2.2), layers K (``location``, default all): the scores of every head get the
  block-diagonal bias whose blocks are the row blocks of FiLM(A; z), A ∈ R^{M×m} zero-initialised, γ, β ∈ R^m
  scaling the columns; block b is rows b·m … min((b+1)·m, M) − 1 of A and as many of its columns; the bias
  covers positions < M, is cropped to shorter sequences and zero-padded for longer ones (``adapt_attention_mask``).
- conditional layer norm (Sec. 2.3), both LayerNorms of the top ``cond_norm_layers`` layers (default ⌊L/2⌋):
  gain only — the base gain w₀ becomes (1 + γ(z)) ⊙ w₀ + β(z), the bias b₀ stays (``attention_norm``,
  ``output_norm``).
- adapter layer (Sec. 2.4), the top ``cond_adapter_layers`` layers, re-initialised from scratch when the
  shared module is built: with a its attention output and y its output, the layer returns
  CLN₃(a + U · D · FiLM(y; T z)) (``adapt_layer_output``): a linear bottleneck (no activation) D: d→d_s,
  U: d_s→d with its own transformation T: Linear(d_z, d_z) of z, a residual to the attention output, and a
  third conditional LayerNorm with its own gain (1) and bias (0).
- freezing (Sec. 3): the trunk's embedding layer and layers 0..F−1 get ``requires_grad = False`` when the
  shared module is built (F = ``frozen_layers``, default ⌊L/2⌋ − 1).

Initialisation (as the released model's ``init_weights``, inferred): every new ``Linear`` N(0, std²) with zero
bias, the attention blocks A zero, CLN₃'s gain 1 and bias 0. So the model does NOT equal the base model at
initialisation: the top layer is new and the generators are not zero. What holds instead is tested: with the
generators zeroed every layer below the adapter layer computes exactly the base model's layer.

Counts (exact, ``cost.py`` beside this file): per task d_z; shared (d_z² + d_z) + (2d·d_z + 2d)
+ Σ_{l∈K} [M·m + 2m·d_z + 2m] + |C|·2·(2d·d_z + 2d) + |B|·[(d_z² + d_z) + 2·(2d·d_z + 2d) + 2·d·d_s + d_s + 3d].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...adapters.base import AdapterSpec, BuildContext, TaskAdapter, init_linear, layer_key, reinitialise
from ...families.shapes import from_hf_config
from . import cost as spec


def film(gen: nn.Linear, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(γ, β), each of shape (width,), from the generator ``Linear(d_z, 2·width)`` applied to z (1, d_z)."""
    gamma, beta = gen(z).squeeze(0).chunk(2)
    return gamma, beta


class ConditionalAttentionBias(nn.Module):
    """M(z) = blockdiag of the row blocks of (1 + γ) ⊙ A + β, A: (M, m); γ, β ∈ R^m scale/shift the columns."""

    def __init__(self, z_dim: int, length: int, size: int, std: float) -> None:
        super().__init__()
        self.size = size
        self.blocks = nn.Parameter(torch.zeros(length, size))
        self.film = init_linear(nn.Linear(z_dim, 2 * size), std)

    def forward(self, z: torch.Tensor, n: int) -> torch.Tensor:
        """The (n, n) bias for a sequence of n tokens."""
        gamma, beta = film(self.film, z)
        full = (1 + gamma) * self.blocks + beta
        bias = torch.block_diag(*(rows[:, : rows.shape[0]] for rows in full.split(self.size)))
        # zeros past the matrix's M rows and columns, then the first n: no Python branch on n, so a traced graph
        # (ONNX) computes the bias of any sequence length, shorter or longer than M, as the module does
        return F.pad(bias, (0, n, 0, n))[:n, :n]


def conditional_gain(gen: nn.Linear, z: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The gain-only conditional LayerNorm's gain (1 + γ(z)) ⊙ w₀ + β(z) (the bias b₀ is not modulated)."""
    gamma, beta = film(gen, z)
    return (1 + gamma) * weight + beta


class ConditionalBottleneck(nn.Module):
    """U · D · FiLM(y; T z): linear, its own transformation T of z."""

    def __init__(self, z_dim: int, d: int, s: int, std: float) -> None:
        super().__init__()
        self.transform = init_linear(nn.Linear(z_dim, z_dim), std)
        self.film = init_linear(nn.Linear(z_dim, 2 * d), std)
        self.down = init_linear(nn.Linear(d, s), std)
        self.up = init_linear(nn.Linear(s, d), std)

    def forward(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        gamma, beta = film(self.film, self.transform(z))
        return self.up(self.down((1 + gamma) * y + beta))


class AdapterNorm(nn.Module):
    """CLN₃: a LayerNorm with its own gain and bias whose gain is modulated by z (gain only)."""

    def __init__(self, z_dim: int, d: int, eps: float, std: float) -> None:
        super().__init__()
        self.LayerNorm = nn.LayerNorm(
            d, eps=eps
        )  # its gain (1) and bias (0): LayerNorm parameters to the paper convention
        self.film = init_linear(nn.Linear(z_dim, 2 * d), std)

    def forward(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        norm = self.LayerNorm
        return F.layer_norm(x, norm.normalized_shape, conditional_gain(self.film, z, norm.weight), norm.bias, norm.eps)


class CaMtlShared(nn.Module):
    """Every CA-MTL module shared by all tasks (``model.shared_adapter``)."""

    def __init__(self, ctx: BuildContext) -> None:
        super().__init__()
        cfg, shape = ctx.adapter, from_hf_config(ctx.base_config.to_dict())
        d, z, std = ctx.hidden, spec.z_dim(shape, cfg), ctx.std
        eps = ctx.eps
        self.z_dim = z
        self.conditional_layers: tuple[int, ...] = tuple(ctx.layers)
        self.norm_layers: tuple[int, ...] = spec.norm_layers(shape, cfg)
        self.bottleneck_layers: tuple[int, ...] = spec.bottleneck_layers(shape, cfg)
        self.frozen_layers = spec.frozen_layers(shape, cfg)
        self.transform = init_linear(nn.Linear(z, z), std)
        self.alignment = init_linear(nn.Linear(z, 2 * d), std)
        size = spec.block_size(cfg)
        self.attention = nn.ModuleDict(
            {
                layer_key(i): ConditionalAttentionBias(z, cfg.cond_attn_max_len, size, std)
                for i in self.conditional_layers
            }
        )
        self.norm_attention = nn.ModuleDict(
            {layer_key(i): init_linear(nn.Linear(z, 2 * d), std) for i in self.norm_layers}
        )
        self.norm_output = nn.ModuleDict(
            {layer_key(i): init_linear(nn.Linear(z, 2 * d), std) for i in self.norm_layers}
        )
        self.bottleneck = nn.ModuleDict(
            {layer_key(i): ConditionalBottleneck(z, d, cfg.d_s, std) for i in self.bottleneck_layers}
        )
        self.adapter_norm = nn.ModuleDict({layer_key(i): AdapterNorm(z, d, eps, std) for i in self.bottleneck_layers})
        for i in self.bottleneck_layers:  # the released adapter layer starts from scratch, not from the checkpoint
            reinitialise(ctx.family.layers[i], std)
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
        super().__init__(
            sorted(set(shared.conditional_layers) | set(shared.norm_layers) | set(shared.bottleneck_layers))
        )
        # e_t ~ N(0, std²) (the released nn.Embedding under BERT's init), one row (1, d_z): the transformation is a
        # matmul with rows = 1
        self.embedding = nn.Parameter(torch.randn(1, shared.z_dim) * ctx.std)
        self._shared = (shared,)  # a plain reference: the shared weights are registered once, on the model
        self._z: torch.Tensor | None = None
        self._attention_out: dict[int, torch.Tensor] = {}

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

    def adapt_attention_mask(self, i: int, mask: torch.Tensor | None, h: torch.Tensor) -> torch.Tensor | None:
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
        if i not in self.shared.norm_layers:
            return norm(x)
        gain = conditional_gain(gens[layer_key(i)], self._condition(), norm.weight)
        return F.layer_norm(x, norm.normalized_shape, gain, norm.bias, norm.eps)

    def attention_norm(self, i: int, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        a = self._conditional_norm(self.shared.norm_attention, i, norm, x)
        if i in self.shared.bottleneck_layers:
            self._attention_out[i] = a  # the adapter layer's residual (read by adapt_layer_output)
        return a

    def output_norm(self, i: int, norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
        return self._conditional_norm(self.shared.norm_output, i, norm, x)

    def adapt_layer_output(self, i: int, y: torch.Tensor) -> torch.Tensor:
        if i not in self.shared.bottleneck_layers:
            return y
        key, z = layer_key(i), self._condition()
        a = self._attention_out.pop(i)
        return self.shared.adapter_norm[key](z, a + self.shared.bottleneck[key](z, y))


ADAPTERS = (AdapterSpec("ca_mtl", CaMtlAdapter, build_shared=CaMtlShared),)
