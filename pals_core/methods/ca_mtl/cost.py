"""CA-MTL (Pilault, Elhattami & Pal, "Conditionally Adaptive Multi-Task Learning", ICLR 2021): exact counts.

CA-MTL conditions shared modules on a learned task embedding instead of giving every task its own
adapter. Per task it holds only the embedding e_t ∈ R^{d_z}; everything else is shared by all tasks
(counted once, ``Method.shared_params``) and the lower part of the base model is frozen
(``Method.frozen_base``). The torch modules beside this file (``module.py``) hold exactly these parts.

Notation: d hidden, d_z = ``task_embedding_dim`` (default d), L layers, K = the layers at ``location``
(default all), M = ``cond_attn_max_len``, N_b = ``cond_attn_blocks``, m = ⌈M/N_b⌉ (block size),
B = the top ``cond_adapter_layers`` layers, F = ``frozen_layers`` (default ⌊L/2⌋), S = d_s, n tokens.
``FiLM_W(x; z) = (1 + γ) ⊙ x + β`` with [γ; β] = W z + b (one ``Linear(d_z, 2·width)``, zero-initialised,
so every conditional module is the identity at initialisation and the model equals the base model).

- task embedding (per task, paper Sec. 2): e_t, d_z weights.
- shared task transformation: z = W_z e_t + b_z, ``Linear(d_z, d_z)`` (released code: ``task_transformation``).
- conditional alignment (Sec. 2.1): the input embeddings E become FiLM(E; z), ``Linear(d_z, 2d)``.
- conditional attention (Sec. 2.2, each layer in K): softmax(QKᵀ/√d_h + M(z) + mask)·V with the
  block-diagonal bias M(z) = ⊕_{b=1..N_b} FiLM(A_b; z), A_b ∈ R^{m×m} (zero-initialised), γ, β ∈ R^m
  from ``Linear(d_z, 2m)`` broadcast over the rows of A_b; the same bias for every head. The bias
  covers positions 0..N_b·m−1; a sequence longer than that gets no bias beyond it, so the parameter
  count is fixed by (M, N_b) and never depends on the sequence length.
  Weights per layer: N_b·m² + 2m·d_z (+ 2m bias).
- conditional layer norm (Sec. 2.3, both LayerNorms of each layer in K): LN(x) with the base model's
  (γ₀, β₀) replaced by ((1 + γ(z)) ⊙ γ₀, β₀ + β(z)), ``Linear(d_z, 2d)`` each; γ₀, β₀ stay base parameters.
- conditional bottleneck (Sec. 2.4, each layer in B): a serial adapter on the FFN output before the
  residual and LN2 (Houlsby's position): y + U·GELU(D·FiLM(y; z)), D: d→S, U: S→d (U zero-initialised).
- freezing (Sec. 3): the embedding layer (word/position/type embeddings and their LayerNorm) and
  layers 0..F−1 keep their pretrained weights; conditional modules inside them still train.

Parameters (exact; the paper convention drops every bias and LayerNorm vector):
  per task   d_z
  shared     (d_z² + d_z) + (2d·d_z + 2d) + Σ_{l∈K} [N_b·m² + 2m·d_z + 2m + 2·(2d·d_z + 2d)]
             + |B|·[(2d·d_z + 2d) + (d·S + S) + (S·d + d)]
  frozen     (V + P + Y)·d + 2d + F·(4d² + 2·d·d_ff + 9d + d_ff)
Forward FLOPs on one task's path (matmuls only; z-dependent maps run once per forward, rows = 1):
  2·d_z² + 4d·d_z + Σ_{l∈K} (4m·d_z + 8d·d_z) + |B|·(4d·d_z + 4n·d·S).
The elementwise FiLM / LN modulation, the block-diagonal assembly and the bias addition are 0 FLOPs.
Because the alignment changes the embeddings per task, running all tasks on one input shares
nothing: every layer runs once per task (``Method.conditions_input``).
"""
from __future__ import annotations

from ...budget.activations import ActivationHooks, Sym
from ...budget.config import AdapterConfig
from ...budget.families import get_family
from ...budget.method import Method, Part, linear, mm
from ...budget.models import BaseModel
from ...budget.poly import Poly, S


def z_dim(m: BaseModel, cfg: AdapterConfig) -> int:
    """d_z: the task embedding width (default: the hidden size d)."""
    return cfg.task_embedding_dim if cfg.task_embedding_dim is not None else m.hidden


def frozen_layers(m: BaseModel, cfg: AdapterConfig) -> int:
    """F: the encoder layers 0..F−1 (and the embedding layer when F > 0) are frozen; default ⌊L/2⌋."""
    return cfg.frozen_layers if cfg.frozen_layers is not None else m.layers // 2


def block_size(cfg: AdapterConfig) -> int:
    """m = ⌈M / N_b⌉, the side of each block of the conditional attention bias."""
    return -(-cfg.cond_attn_max_len // cfg.cond_attn_blocks)


def bottleneck_layers(m: BaseModel, cfg: AdapterConfig) -> tuple[int, ...]:
    """B: the top ``cond_adapter_layers`` layers, which hold the conditional bottleneck."""
    return tuple(range(m.layers - cfg.cond_adapter_layers, m.layers))


def _positive(value, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def validate(m: BaseModel, cfg: AdapterConfig) -> None:
    """Raise ``ValueError`` naming the first bad CA-MTL field."""
    if cfg.task_embedding_dim is not None:
        _positive(cfg.task_embedding_dim, "task_embedding_dim")
    if cfg.frozen_layers is not None:
        f = cfg.frozen_layers
        if not isinstance(f, int) or isinstance(f, bool) or not 0 <= f <= m.layers:
            raise ValueError(f"frozen_layers must be an integer from 0 to {m.layers} (the model's layers), got {f!r}")
    _positive(cfg.cond_attn_max_len, "cond_attn_max_len")
    _positive(cfg.cond_attn_blocks, "cond_attn_blocks")
    if cfg.cond_attn_blocks > cfg.cond_attn_max_len:
        raise ValueError(f"cond_attn_blocks ({cfg.cond_attn_blocks}) exceeds cond_attn_max_len ({cfg.cond_attn_max_len})")
    _positive(cfg.cond_adapter_layers, "cond_adapter_layers")
    if cfg.cond_adapter_layers > m.layers:
        raise ValueError(f"cond_adapter_layers ({cfg.cond_adapter_layers}) exceeds the model's {m.layers} layers")


def film(z: int, width, *, paper: bool) -> Poly:
    """A FiLM generator ``Linear(d_z, 2·width)``: [γ; β] = W z + b."""
    return linear(z, Poly.of(width) * 2, paper=paper)


def _params(m, layers, cfg, paper):
    return [Part("task embedding", None, Poly(0, 0, z_dim(m, cfg)))]


def _shared_params(m, layers, cfg, paper):
    d, z, bs = m.hidden, z_dim(m, cfg), block_size(cfg)
    parts = [Part("task-embedding transformation", None, linear(z, z, paper=paper)),
             Part("conditional alignment", None, film(z, d, paper=paper))]
    for l in layers:
        parts += [Part("conditional attention", l, Poly(0, 0, cfg.cond_attn_blocks * bs * bs) + film(z, bs, paper=paper)),
                  Part("conditional LayerNorms", l, 2 * film(z, d, paper=paper))]
    for l in bottleneck_layers(m, cfg):
        parts.append(Part("conditional bottleneck", l,
                          film(z, d, paper=paper) + linear(d, S, paper=paper) + linear(S, d, paper=paper)))
    return parts


def _flops(m, layers, cfg, n):
    d, z, bs = m.hidden, z_dim(m, cfg), block_size(cfg)
    parts = [Part("task-embedding transformation", None, mm(1, z, z)),
             Part("conditional alignment", None, mm(1, z, 2 * d))]
    parts += [Part("conditional attention + LayerNorms", l, mm(1, z, 2 * bs) + 2 * mm(1, z, 2 * d)) for l in layers]
    parts += [Part("conditional bottleneck", l, mm(1, z, 2 * d) + mm(n, d, S) + mm(n, S, d)) for l in bottleneck_layers(m, cfg)]
    return parts


def _frozen_base(m: BaseModel, cfg: AdapterConfig, paper: bool) -> int:
    f = frozen_layers(m, cfg)
    if f == 0:
        return 0
    family = get_family(m.family)  # BERT: (V + P + Y)·d + 2d + F·(4d² + 2·d·d_ff + 9d + d_ff)
    return family.embedding_params(m, paper) + sum(family.layer_params(m, i, paper) for i in range(f))


class CaMtlActivations(ActivationHooks):
    """What CA-MTL's hooks make autograd keep. z = W_z e_t + b_z is computed once per forward and every FiLM
    generator ``Linear(d_z, 2w)`` keeps it (d_z floats, once); (1 + γ) is kept where it multiplies a tensor that
    trains; the conditional attention bias requires grad, so the trunk's attention runs the math kernel; the
    conditional LayerNorm keeps its computed weight and bias (d floats each); the bottleneck keeps its input y,
    the FiLM output, D's output and GELU's output. The embeddings and layers 0..F−1 are frozen."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.z: Sym = self.trace.new(z_dim(self.model, self.cfg), True)
        self.frozen = frozen_layers(self.model, self.cfg)
        self.conditional = set(self.layers)
        self.bottleneck = set(bottleneck_layers(self.model, self.cfg))
        self.layers = tuple(sorted(self.conditional | self.bottleneck))

    def embeddings_train(self) -> bool:
        return self.frozen == 0

    def layer_trains(self, i) -> bool:
        return i >= self.frozen

    def _film(self, width) -> tuple[Sym, Sym]:
        """(1 + γ) (a new tensor) and β from ``Linear(d_z, 2·width)`` on z (which it keeps)."""
        tr = self.trace
        tr.linear(self.z, 2 * width, True, rows=1)
        return tr.new(width, True), tr.new(width, True)

    def adapt_embeddings(self, h):
        scale, _ = self._film(self.model.hidden)
        return self.trace.mul(h, scale, out=h.nbytes)

    def attention_mask_grad(self, i) -> bool:
        if i not in self.conditional:
            return False
        scale, _ = self._film(block_size(self.cfg))
        self.trace.mul(scale, Sym(scale.nbytes, True), s_is_param=True)  # (1 + γ) ⊙ A: keeps (1 + γ)
        return True

    def _norm(self, i, x, trains):
        tr = self.trace
        if i not in self.conditional:
            return tr.layer_norm(x, trains)
        scale, shift = self._film(self.model.hidden)
        weight = tr.mul(scale, Sym(scale.nbytes, trains), s_is_param=True)  # (1 + γ) ⊙ γ₀
        bias = tr.new(self.model.hidden, True)  # β₀ + β
        return tr.layer_norm(x, trains, weight=Sym(weight.nbytes, True), bias=bias)

    def attention_norm(self, i, x, trains):
        return self._norm(i, x, trains)

    def output_norm(self, i, x, trains):
        return self._norm(i, x, trains)

    def adapt_ffn_output(self, i, y):
        if i not in self.bottleneck:
            return y
        tr = self.trace
        scale, _ = self._film(self.model.hidden)
        x = tr.mul(y, scale, out=y.nbytes)
        return tr.add(y, tr.linear(tr.gelu(tr.linear(x, self.size, True)), self.model.hidden, True))


def _tensors(m, layers, cfg):
    return 1, 4 + 7 * len(layers) + 6 * cfg.cond_adapter_layers


METHODS = (Method(
    "ca_mtl", "CA-MTL", "Task-conditioned modules shared by all tasks (alignment, block-diagonal attention bias, "
    "conditional LayerNorm, conditional bottleneck); one task embedding per task; lower layers frozen "
    "(Pilault et al. 2021).",
    "d_z per task; shared: d_z² + 2d·d_z + K·(N_b·m² + 2m·d_z + 4d·d_z) + |B|·(2d·d_z + 2d·d_s)",
    _params, _flops, shared_params=_shared_params, frozen_base=_frozen_base, validate=validate,
    conditions_input=True, activations=CaMtlActivations, tensors=_tensors, frozen_layers=frozen_layers),)
