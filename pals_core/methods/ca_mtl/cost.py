"""CA-MTL (Pilault, Elhattami & Pal, "Conditionally Adaptive Multi-Task Learning", ICLR 2021): exact counts.

CA-MTL conditions shared modules on a learned task embedding instead of giving every task its own
adapter. Per task it holds only the embedding e_t ∈ R^{d_z}; everything else is shared by all tasks
(counted once, ``Method.shared_params``) and the lower part of the base model is frozen
(``Method.frozen_base``). The construction is the one the authors released (CAMTL/CA-MTL;
docs/methods.md "Fidelity to the sources" lists every point). The torch modules beside this file
(``module.py``) hold exactly these parts.

Notation: d hidden, d_z = ``task_embedding_dim`` (default d), L layers, K = the layers at ``location``
(conditional attention; default all), C = the top ``cond_norm_layers`` layers (conditional LayerNorm;
default ⌊L/2⌋), B = the top ``cond_adapter_layers`` layers (the adapter layer; default 1),
F = ``frozen_layers`` (default ⌊L/2⌋ − 1: the embeddings and layers 0–4 of a 12-layer model), M =
``cond_attn_max_len``, N_b = ``cond_attn_blocks``, m = ⌈M/N_b⌉, S = d_s, n tokens.
``FiLM_W(x; c) = (1 + γ) ⊙ x + β`` with [γ; β] = W c + b (one ``Linear(d_z, 2·width)``).

- task embedding (per task, paper Sec. 2): e_t, d_z weights; shared transformation z = W_z e_t + b_z.
- conditional alignment (Sec. 2.1): the input embeddings E become FiLM(E; z), ``Linear(d_z, 2d)``.
- conditional attention (Sec. 2.2, each layer in K): softmax(QKᵀ/√d_h + M(z) + mask)·V with M(z) the
  block-diagonal matrix of the row blocks of FiLM(A; z), A ∈ R^{M×m} (released layout: one M × m matrix;
  block b holds rows b·m … min((b+1)·m, M) − 1 and as many columns, so the bias covers exactly M positions
  and the last block of a ragged split leaves m − m_last columns unused), γ, β ∈ R^m from ``Linear(d_z, 2m)``;
  the same bias for every head. Weights per layer: M·m + 2m·d_z (+ 2m bias).
- conditional layer norm (Sec. 2.3, both LayerNorms of each layer in C): gain only, as released:
  LN(x) with the gain w₀ replaced by (1 + γ(z)) ⊙ w₀ + β(z) and the bias b₀ unchanged, ``Linear(d_z, 2d)``
  each; w₀, b₀ stay base parameters.
- adapter layer (Sec. 2.4, each layer in B, re-initialised from scratch): with a its attention output
  (after the conditional LN1) and y its output (after the conditional LN2), the layer returns
  CLN₃(a + U·D·FiLM(y; T z)) — the conditional bottleneck is linear (no activation), has its own
  transformation T = ``Linear(d_z, d_z)`` of z, D: d→S, U: S→d, and a third conditional LayerNorm CLN₃
  (own gain and bias, ``Linear(d_z, 2d)`` modulating the gain).
- freezing (Sec. 3): the embedding layer and layers 0..F−1 keep their pretrained weights; conditional
  modules inside them still train.

Parameters (exact; the paper convention drops every bias and LayerNorm vector):
  per task   d_z
  shared     (d_z² + d_z) + (2d·d_z + 2d) + Σ_{l∈K} [M·m + 2m·d_z + 2m] + |C|·2·(2d·d_z + 2d)
             + |B|·[(d_z² + d_z) + (2d·d_z + 2d) + (d·S + S) + (S·d + d) + (2d·d_z + 2d) + 2d]
  frozen     (V + P + Y)·d + 2d + F·(4d² + 2·d·d_ff + 9d + d_ff)
BERT-base, the 8 GLUE tasks, S = 256: 129,235,232 in all (``tests/test_ca_mtl_budget.py``).
Forward FLOPs on one task's path (matmuls only; z-dependent maps run once per forward, rows = 1):
  2·d_z² + 4d·d_z + Σ_{l∈K} 4m·d_z + |C|·8d·d_z + |B|·(2·d_z² + 8d·d_z + 4n·d·S).
The elementwise FiLM / LN modulation, the block-diagonal assembly and the bias addition are 0 FLOPs.
Because the alignment changes the embeddings per task, running all tasks on one input shares
nothing: every layer runs once per task (``Method.conditions_input``).
"""

from __future__ import annotations

from ...families.registry import get_family
from ...pricing.activations import ActivationHooks, Sym
from ...pricing.config import AdapterConfig
from ...pricing.method import Method, Part, layer_norm, linear, mm
from ...pricing.poly import Poly, S
from ...pricing.recipe import Recipe
from ...pricing.shape import BaseModel


def z_dim(m: BaseModel, cfg: AdapterConfig) -> int:
    """d_z: the task embedding width (default: the hidden size d)."""
    return cfg.task_embedding_dim if cfg.task_embedding_dim is not None else m.hidden


def frozen_layers(m: BaseModel, cfg: AdapterConfig) -> int:
    """F: the encoder layers 0..F−1 (and the embedding layer when F > 0) are frozen; default ⌊L/2⌋ − 1 (the
    released setting freezes layers 0–4 of 12: every layer below the conditional-LayerNorm half but the last)."""
    return cfg.frozen_layers if cfg.frozen_layers is not None else max(m.layers // 2 - 1, 0)


def norm_layers(m: BaseModel, cfg: AdapterConfig) -> tuple[int, ...]:
    """C: the top ``cond_norm_layers`` layers (default ⌊L/2⌋), whose two LayerNorms are conditional."""
    count = cfg.cond_norm_layers if cfg.cond_norm_layers is not None else m.layers // 2
    return tuple(range(m.layers - count, m.layers))


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
        raise ValueError(
            f"cond_attn_blocks ({cfg.cond_attn_blocks}) exceeds cond_attn_max_len ({cfg.cond_attn_max_len})"
        )
    if cfg.cond_norm_layers is not None:
        c = cfg.cond_norm_layers
        if not isinstance(c, int) or isinstance(c, bool) or not 0 <= c <= m.layers:
            raise ValueError(
                f"cond_norm_layers must be an integer from 0 to {m.layers} (the model's layers), got {c!r}"
            )
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
    parts = [
        Part("task-embedding transformation", None, linear(z, z, paper=paper)),
        Part("conditional alignment", None, film(z, d, paper=paper)),
    ]
    parts += [
        Part("conditional attention", l, Poly(0, 0, cfg.cond_attn_max_len * bs) + film(z, bs, paper=paper))
        for l in layers
    ]
    parts += [Part("conditional LayerNorms", l, 2 * film(z, d, paper=paper)) for l in norm_layers(m, cfg)]
    for l in bottleneck_layers(m, cfg):
        parts += [
            Part(
                "conditional bottleneck",
                l,
                linear(z, z, paper=paper)
                + film(z, d, paper=paper)
                + linear(d, S, paper=paper)
                + linear(S, d, paper=paper),
            ),
            Part("adapter LayerNorm", l, film(z, d, paper=paper) + layer_norm(d, paper=paper)),
        ]
    return parts


def _fixed_flops(m, layers, cfg) -> int:
    """The task embedding's transformations into every conditional module's weights (the mm(1, …) parts of
    ``_flops``): computed once per forward, whatever the batch — ``_flops`` of no token."""
    return sum((p.count for p in _flops(m, layers, cfg, 0)), Poly()).c


def _flops(m, layers, cfg, n):
    d, z, bs = m.hidden, z_dim(m, cfg), block_size(cfg)
    parts = [
        Part("task-embedding transformation", None, mm(1, z, z)),
        Part("conditional alignment", None, mm(1, z, 2 * d)),
    ]
    parts += [Part("conditional attention", l, mm(1, z, 2 * bs)) for l in layers]
    parts += [Part("conditional LayerNorms", l, 2 * mm(1, z, 2 * d)) for l in norm_layers(m, cfg)]
    parts += [
        Part("adapter layer", l, mm(1, z, z) + 2 * mm(1, z, 2 * d) + mm(n, d, S) + mm(n, S, d))
        for l in bottleneck_layers(m, cfg)
    ]
    return parts


def _frozen_base(m: BaseModel, cfg: AdapterConfig, paper: bool) -> int:
    f = frozen_layers(m, cfg)
    if f == 0:
        return 0
    family = get_family(m.family)  # BERT: (V + P + Y)·d + 2d + F·(4d² + 2·d·d_ff + 9d + d_ff)
    return family.embedding_params(m, paper) + sum(family.layer_params(m, i, paper) for i in range(f))


class CaMtlActivations(ActivationHooks):
    """What CA-MTL's hooks make autograd keep. z = W_z e_t + b_z is computed once per forward and every FiLM
    generator ``Linear(d_z, 2w)`` keeps its input (z, or the adapter's T z; d_z floats, once each); (1 + γ) is kept
    where it multiplies a tensor that trains; the conditional attention bias requires grad, so the trunk's attention
    runs the math kernel; a conditional LayerNorm keeps its computed gain (d floats; its bias is the base
    parameter); the adapter layer keeps y, (1 + γ), FiLM(y), D's output and CLN₃'s input. The embeddings and
    layers 0..F−1 are frozen."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.z: Sym = self.trace.new(z_dim(self.model, self.cfg), True)
        self.trace.shared["ca_mtl.z"] = self.z  # read by every layer's FiLM generators (layer_key's promise)
        self.frozen = frozen_layers(self.model, self.cfg)
        self.conditional = set(self.layers)
        self.norms = set(norm_layers(self.model, self.cfg))
        self.bottleneck = set(bottleneck_layers(self.model, self.cfg))
        self.layers = tuple(sorted(self.conditional | self.norms | self.bottleneck))
        self.attention_out: dict = {}

    def layer_key(self, i):
        """Layers alike in their conditional parts (attention bias, LayerNorms, adapter) replay alike."""
        return i in self.conditional, i in self.norms, i in self.bottleneck

    def embeddings_train(self) -> bool:
        return self.frozen == 0

    def layer_trains(self, i) -> bool:
        return i >= self.frozen

    def _film(self, width, source=None) -> tuple[Sym, Sym]:
        """(1 + γ) (a new tensor) and β from ``Linear(d_z, 2·width)`` on z (or ``source``), which it keeps."""
        tr = self.trace
        tr.linear(self.z if source is None else source, 2 * width, True, rows=1)
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

    def _gain(self, trains: bool) -> Sym:
        """(1 + γ) ⊙ w + β: keeps (1 + γ) when w trains; a new (d,) tensor that requires grad."""
        scale, _ = self._film(self.model.hidden)
        weight = self.trace.mul(scale, Sym(scale.nbytes, trains), s_is_param=True)
        return Sym(weight.nbytes, True)

    def _norm(self, i, x, trains):
        if i not in self.norms:
            out = self.trace.layer_norm(x, trains)
        else:
            out = self.trace.layer_norm(x, trains, weight=self._gain(trains))
        if i in self.bottleneck:
            self.attention_out[i] = out
        return out

    def attention_norm(self, i, x, trains):
        return self._norm(i, x, trains)

    def output_norm(self, i, x, trains):
        if i not in self.norms:
            return self.trace.layer_norm(x, trains)
        return self.trace.layer_norm(x, trains, weight=self._gain(trains))

    def adapt_layer_output(self, i, y):
        if i not in self.bottleneck:
            return y
        tr = self.trace
        cond = tr.linear(self.z, z_dim(self.model, self.cfg), True, rows=1)  # T z
        scale, _ = self._film(self.model.hidden, cond)
        x = tr.mul(y, scale, out=y.nbytes)
        up = tr.linear(tr.linear(x, self.size, True), self.model.hidden, True)
        return tr.layer_norm(tr.add(up, self.attention_out.pop(i)), True, weight=self._gain(True))


def _tensors(m, layers, cfg):
    """AdamW state tensors: 1 per task; shared: W_z, b_z, the alignment (2), 3 per conditional-attention layer,
    4 per conditional-LayerNorm layer, 12 per adapter layer (T, FiLM, D, U, CLN₃'s generator: 2 each; its gain, bias)."""
    return 1, 4 + 3 * len(layers) + 4 * len(norm_layers(m, cfg)) + 12 * cfg.cond_adapter_layers


# Pilault et al. 2021 train CA-MTL-base at BERT's fine-tuning rate: the released command (CAMTL/CA-MTL README,
# run.py ... --num_train_epochs 10 --learning_rate 2e-5). Warm-up and weight decay stay the trainer's (BERT's).
RECIPE = Recipe(
    lr=2e-5,
    source="Pilault et al. 2021; CAMTL/CA-MTL README's training command: --learning_rate 2e-5",
)

METHODS = (
    Method(
        "ca_mtl",
        "CA-MTL",
        "Task-conditioned modules shared by all tasks (alignment, block-diagonal attention bias "
        "in every layer, gain-only conditional LayerNorm in the top half, a re-initialised adapter layer with a linear "
        "conditional bottleneck), as the authors released it; one task embedding per task; lower layers frozen "
        "(Pilault et al. 2021).",
        "d_z per task; shared: d_z² + 2d·d_z + K·(M·m + 2m·d_z) + |C|·4d·d_z + |B|·(d_z² + 4d·d_z + 2d·d_s)",
        _params,
        _flops,
        shared_params=_shared_params,
        frozen_base=_frozen_base,
        validate=validate,
        conditions_input=True,
        activations=CaMtlActivations,
        tensors=_tensors,
        frozen_layers=frozen_layers,
        trunk="fine-tuned",  # as released: fine-tuned above its frozen lower half (frozen_layers)
        fixed_flops=_fixed_flops,
        recipe=RECIPE,
    ),
)
