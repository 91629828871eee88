"""ModernBERT (``model_type`` modernbert, Warner et al. 2024): pre-norm layers, GLU FFN, RoPE, alternating
local / global attention, a final norm, no biases unless configured, no pooler, no token types.

Norms are LayerNorm(d) with a bias only if ``norm_bias``: d (+ d) each; the paper convention drops them.
    embeddings V·d + norm;   final norm
    layer i: attn_norm (the identity in layer 0) + Wqkv d·3d (+ 3d if ``attention_bias``) + Wo d² (+ d)
             + mlp_norm + Wi d·2d_ff (+ 2d_ff if ``mlp_bias``) + Wo d_ff·d (+ d)
    layer FLOPs 2n·(4d² + 3·d·d_ff) + 4n²·d
RoPE and the GLU product are elementwise (0 FLOPs). Local attention: layer i is local when ``layer_types[i]``
is ``sliding_attention`` (default: i mod ``global_attn_every_n_layers`` ≠ 0), attending within
``local_attention``/2 tokens each side. Under the attention implementations that run here (sdpa, eager) the
window is a mask over the full n×n scores: every score is computed and the ones outside the window are
masked, so a local layer costs the same 4n²·d as a global one — that is what FlopCounterMode counts and what
the calculator prices. (flash-attention-2 on a GPU skips the masked blocks; it is not counted here.)
Task head (``ModernBertPredictionHead`` + classifier): dense Linear(d, d) (bias if ``classifier_bias``) +
activation + norm, Linear(d, C) on the first token (``classifier_pooling`` cls) or the mean of the tokens
(mean; elementwise), per task.
"""
from __future__ import annotations

from ..method import linear, mm
from ..shape import BaseModel
from .base import Family, activation_option


LAYER_TYPES = ("full_attention", "sliding_attention")


def read(config: dict, name: str) -> BaseModel:
    """The shape, the bias flags, the layer types, the pooling and the two activations (``hidden_activation`` in the
    GLU: option ``hidden_act``; ``classifier_activation`` in the head: ``classifier_act``). Refused (one line):
    ``head_dim`` ≠ d/h (RoPE would rotate a width the attention does not have), a layer type or pooling other than
    those above, ``global_attn_every_n_layers`` < 1, an activation the memory replay does not model."""
    layers, d, heads = config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim")
    if head_dim is not None and isinstance(d, int) and isinstance(heads, int) and heads > 0 and head_dim * heads != d:
        raise ValueError(f"config {name!r}: head_dim {head_dim} × {heads} heads ≠ hidden_size {d} "
                         "(ModernBERT's attention uses d/h; RoPE would rotate another width)")
    types = config.get("layer_types")
    if types is None:
        every = config.get("global_attn_every_n_layers", 3)
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValueError(f"config {name!r}: global_attn_every_n_layers {every!r} is not a positive integer")
        types = ["sliding_attention" if i % every else "full_attention" for i in range(layers)]
    if not isinstance(types, (list, tuple)) or any(t not in LAYER_TYPES for t in types):
        raise ValueError(f"config {name!r}: layer_types {types!r} must list {' or '.join(LAYER_TYPES)} per layer")
    if len(types) != layers:
        raise ValueError(f"config {name!r}: layer_types lists {len(types)} layers, num_hidden_layers is {layers}")
    pooling = config.get("classifier_pooling", "cls")
    if pooling not in ("cls", "mean"):
        raise ValueError(f"config {name!r}: classifier_pooling {pooling!r} is not cls or mean")
    options = dict(mlp_bias=bool(config.get("mlp_bias", False)), attention_bias=bool(config.get("attention_bias", False)),
                   norm_bias=bool(config.get("norm_bias", False)), classifier_bias=bool(config.get("classifier_bias", False)),
                   local_attention=int(config.get("local_attention", 128)), layer_types=tuple(types),
                   classifier_pooling=pooling, **activation_option(config, name, "hidden_activation"),
                   **activation_option(config, name, "classifier_activation", "classifier_act"))
    return BaseModel(name=name, hidden=d, layers=layers, heads=heads,
                     intermediate=config["intermediate_size"], vocab=config["vocab_size"],
                     positions=config.get("max_position_embeddings", 8192), token_types=0, family="modernbert",
                     options=tuple(sorted(options.items())))


def norm(m: BaseModel, paper: bool) -> int:
    """LayerNorm(d, bias=norm_bias): d (+ d); 0 in the paper convention."""
    return 0 if paper else m.hidden * (2 if m.option("norm_bias", False) else 1)


def embeddings(m: BaseModel, paper: bool) -> int:
    return m.vocab * m.hidden + norm(m, paper)


def layer_params(m: BaseModel, i: int, paper: bool) -> int:
    d, f = m.hidden, m.intermediate
    att, mlp = m.option("attention_bias", False), m.option("mlp_bias", False)
    return ((norm(m, paper) if i > 0 else 0) + linear(d, 3 * d, bias=att, paper=paper).c
            + linear(d, d, bias=att, paper=paper).c + norm(m, paper)
            + linear(d, 2 * f, bias=mlp, paper=paper).c + linear(f, d, bias=mlp, paper=paper).c)


def layer_flops(m: BaseModel, i: int, n: int) -> int:
    d, f = m.hidden, m.intermediate
    return (mm(n, d, 3 * d) + mm(n, d, d) + mm(n, d, 2 * f) + mm(n, f, d)).c + 4 * n * n * d


def head_params(m: BaseModel, labels: int, paper: bool) -> int:
    d = m.hidden
    return (linear(d, d, bias=m.option("classifier_bias", False), paper=paper).c + norm(m, paper)
            + linear(d, labels, paper=paper).c)


def head_flops(m: BaseModel, labels: int) -> int:
    return (mm(1, m.hidden, m.hidden) + mm(1, m.hidden, labels)).c


MODERNBERT = Family("modernbert", "ModernBERT", ("modernbert",), read, embeddings, layer_params, layer_flops,
                    final_params=norm, pooler=False, head_params=head_params, head_flops=head_flops, token_types=False,
                    pad_token_id=50283,
                    refuses=(("ca_mtl", "CA-MTL's conditional layer norm needs post-norm LayerNorms with biases; "
                                        "ModernBERT's are pre-norm, bias-free, and layer 0 has none"),))
