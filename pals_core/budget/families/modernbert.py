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
from .base import Family


def read(config: dict, name: str) -> BaseModel:
    layers = config["num_hidden_layers"]
    types = config.get("layer_types")
    if types is None:
        every = config.get("global_attn_every_n_layers", 3) or 3
        types = ["sliding_attention" if i % every else "full_attention" for i in range(layers)]
    if len(types) != layers:
        raise ValueError(f"config {name!r}: layer_types lists {len(types)} layers, num_hidden_layers is {layers}")
    pooling = config.get("classifier_pooling", "cls")
    if pooling not in ("cls", "mean"):
        raise ValueError(f"config {name!r}: classifier_pooling {pooling!r} is not cls or mean")
    options = dict(mlp_bias=bool(config.get("mlp_bias", False)), attention_bias=bool(config.get("attention_bias", False)),
                   norm_bias=bool(config.get("norm_bias", False)), classifier_bias=bool(config.get("classifier_bias", False)),
                   local_attention=int(config.get("local_attention", 128)), layer_types=tuple(types),
                   classifier_pooling=pooling)
    return BaseModel(name=name, hidden=config["hidden_size"], layers=layers, heads=config["num_attention_heads"],
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
                    refuses=(("ca_mtl", "CA-MTL's conditional layer norm needs post-norm LayerNorms with biases; "
                                        "ModernBERT's are pre-norm, bias-free, and layer 0 has none"),))
