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

from ...pricing.activations import INT64
from ...pricing.family import Family, Norm, Replay, activation_option, flag, integer, probability
from ...pricing.method import linear, mm
from ...pricing.shape import BaseModel

LAYER_TYPES = ("full_attention", "sliding_attention")


def read(config: dict, name: str) -> BaseModel:
    """The shape, the bias flags, the layer types, the pooling and the two activations (``hidden_activation`` in the
    GLU: option ``hidden_act``; ``classifier_activation`` in the head: ``classifier_act``). Refused (one line):
    ``head_dim`` ≠ d/h (RoPE would rotate a width the attention does not have), a layer type or pooling other than
    those above, ``global_attn_every_n_layers`` < 1, an activation the memory replay does not model."""
    layers, d, heads = config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim")
    if head_dim is not None and isinstance(d, int) and isinstance(heads, int) and heads > 0 and head_dim * heads != d:
        raise ValueError(
            f"config {name!r}: head_dim {head_dim} × {heads} heads ≠ hidden_size {d} "
            "(ModernBERT's attention uses d/h; RoPE would rotate another width)"
        )
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
    options = dict(
        mlp_bias=flag(config, name, "mlp_bias", False),
        attention_bias=flag(config, name, "attention_bias", False),
        norm_bias=flag(config, name, "norm_bias", False),
        classifier_bias=flag(config, name, "classifier_bias", False),
        local_attention=integer(config, name, "local_attention", 128, low=2),
        layer_types=tuple(types),
        classifier_pooling=pooling,
        **activation_option(config, name, "hidden_activation"),
        **activation_option(config, name, "classifier_activation", "classifier_act"),
    )
    return BaseModel(
        name=name,
        hidden=d,
        layers=layers,
        heads=heads,
        intermediate=config["intermediate_size"],
        vocab=config["vocab_size"],
        positions=config.get("max_position_embeddings", 8192),
        token_types=0,
        family="modernbert",
        options=tuple(sorted(options.items())),
    )


def norm(m: BaseModel, paper: bool) -> int:
    """LayerNorm(d, bias=norm_bias): d (+ d); 0 in the paper convention."""
    return 0 if paper else m.hidden * (2 if m.option("norm_bias", False) else 1)


def hook_norms(m: BaseModel, i: int) -> tuple[Norm | None, Norm | None]:
    """attn_norm (the identity in layer 0: no norm) and mlp_norm, LayerNorm(d, bias=norm_bias)."""
    one = Norm(m.hidden, m.option("norm_bias", False))
    return (one if i > 0 else None), one


def embeddings(m: BaseModel, paper: bool) -> int:
    return m.vocab * m.hidden + norm(m, paper)


def layer_params(m: BaseModel, i: int, paper: bool) -> int:
    d, f = m.hidden, m.intermediate
    att, mlp = m.option("attention_bias", False), m.option("mlp_bias", False)
    return (
        (norm(m, paper) if i > 0 else 0)
        + linear(d, 3 * d, bias=att, paper=paper).c
        + linear(d, d, bias=att, paper=paper).c
        + norm(m, paper)
        + linear(d, 2 * f, bias=mlp, paper=paper).c
        + linear(f, d, bias=mlp, paper=paper).c
    )


def layer_flops(m: BaseModel, i: int, n: int) -> int:
    d, f = m.hidden, m.intermediate
    return (mm(n, d, 3 * d) + mm(n, d, d) + mm(n, d, 2 * f) + mm(n, f, d)).c + 4 * n * n * d


def head_params(m: BaseModel, labels: int, paper: bool) -> int:
    d = m.hidden
    return (
        linear(d, d, bias=m.option("classifier_bias", False), paper=paper).c
        + norm(m, paper)
        + linear(d, labels, paper=paper).c
    )


def head_flops(m: BaseModel, labels: int) -> int:
    return (mm(1, m.hidden, m.hidden) + mm(1, m.hidden, labels)).c


# --- the forward on symbolic tensors (memory and step time, docs/design.md "Memory (bytes)", "Time") ------------------
# As ``ModernBertEncoderLayer`` and the trunk's adapted copy run it (checked against saved_tensors_hooks by
# tests/test_memory.py): q, k, v are views of the fused Wqkv output (B, n, 3d), so whatever keeps one of them keeps
# that whole storage; RoPE keeps cos and sin (n·d_h floats per layer type, computed once per forward) and makes new
# (B, h, n, d_h) q and k; sdpa without dropout runs the fused CPU kernel (keeps q, k, the Wqkv output through v, its
# output, the log-sum-exp — and, in a sliding-window layer with n ≥ local_attention/2, the window mask it converts
# to B·n² floats at every call); the GLU keeps the Wi output (B, n, 2·d_ff: its GELU's input and the gate) and the
# GELU's output; the norms keep their input and row statistics. The mean pooling keeps the caller's int64 mask
# (B·n) and the token counts (B).


def _norm_tensors(m: BaseModel) -> int:
    return 1 + bool(m.option("norm_bias", False))


def _index(m: BaseModel, i) -> int:
    return m.layers - 1 if i == "top" else i


def conditions(config: dict) -> dict:
    """ModernBERT's rates: ``mlp_dropout`` (inside the GLU: the hidden rate), ``attention_dropout`` (on the attention
    probabilities and after Wo), ``classifier_dropout``, ``embedding_dropout`` (transformers' defaults: all 0)."""
    name = config.get("_name_or_path")
    rate = lambda field: probability(config, name, field, 0.0) or 0.0  # noqa: E731  (null: transformers' 0)
    return dict(
        hidden_dropout=rate("mlp_dropout"),
        attention_dropout=rate("attention_dropout"),
        classifier_dropout=rate("classifier_dropout"),
        extra=(("embedding_dropout", rate("embedding_dropout")),),
    )


def trace_embeddings(tr, m: BaseModel, trains: bool):
    x = tr.embedding(tr.new(tr.tokens, False, item_bytes=INT64), m.hidden, trains, m.vocab)
    return tr.dropout(tr.layer_norm(x, trains), tr.cond.rate("embedding_dropout"))


def prepare(tr, m: BaseModel, trains: bool) -> None:
    """cos and sin of each layer type's RoPE, (1, n, d_h) each, computed once per forward (no grad)."""
    for kind in sorted(set(m.option("layer_types"))):
        for part in ("cos", "sin"):
            tr.shared[(part, kind)] = tr.new(tr.seq_len * (m.hidden // m.heads), False)


def _rope(tr, x, kind: str):
    """x·cos + rotate_half(x)·sin: each product keeps the (1, n, d_h) cos or sin when x requires grad."""
    cos, sin = tr.shared[("cos", kind)], tr.shared[("sin", kind)]
    rotated = tr.copy(x)  # cat(−x₂, x₁)
    return tr.add(tr.mul(x, cos), tr.mul(rotated, sin))


def trace_layer(tr, m: BaseModel, i, h, trains: bool, hooks):
    c, d, f, n = tr.cond, m.hidden, m.intermediate, tr.seq_len
    idx = _index(m, i)
    kind = m.option("layer_types")[idx]
    x = h if idx == 0 else hooks.attention_norm(i, h, trains)
    qkv = tr.linear(x, 3 * d, trains)
    q, k, v = (tr.view(qkv, tr.tokens * d) for _ in range(3))
    q, k, v = hooks.adapt_query(i, x, q), hooks.adapt_key(i, x, k), hooks.adapt_value(i, x, v)
    q, k = _rope(tr, q, kind), _rope(tr, k, kind)
    window = m.option("local_attention", 128) // 2
    mask = None
    if kind == "sliding_attention" and c.attention == "sdpa" and n >= window:
        mask = tr.new(tr.batch * n * n, False)
    ctx = tr.attention(q, k, v, d, m.heads, c.attention_dropout, packed=v.base is not None, heads_first=True, mask=mask)
    y = hooks.adapt_attention_output(i, tr.dropout(tr.linear(ctx, d, trains), c.attention_dropout))
    a = tr.add(h, y)
    wi = tr.linear(hooks.output_norm(i, a, trains), 2 * f, trains)
    act = tr.activation(tr.view(wi, tr.tokens * f), m.option("hidden_act", "gelu"))
    g = tr.mul(act, tr.view(wi, tr.tokens * f))  # act(input) ⊙ gate
    g = tr.dropout(hooks.adapt_ffn_activation(i, g), c.hidden_dropout)
    z = tr.add(a, hooks.adapt_ffn_output(i, tr.linear(g, d, trains)))
    z = tr.add(z, hooks.parallel_branch(i, h))
    return hooks.adapt_layer_output(i, z)


def finish(tr, m: BaseModel, h, trains: bool):
    """The final norm."""
    return tr.layer_norm(h, trains)


def classify(tr, m: BaseModel, h, pooler_trains: bool):
    """``ModernBertHead``: out(dropout(norm(act(dense(pooled))))), pooled = h[:, 0] (a view of h) or the mean of the
    tokens under the mask (keeps the int64 mask, B·n, and the (B, 1) token counts)."""
    b, d = tr.batch, m.hidden
    if m.option("classifier_pooling", "cls") == "mean":
        summed = tr.mul(h, tr.new(tr.tokens, False, item_bytes=INT64))
        pooled = tr.new(b * d, summed.grad)
        tr.elementwise(summed.nbytes, 1, 1, summed.grad)  # the sum over tokens
        if pooled.grad:
            tr.save(tr.new(b, False, item_bytes=INT64))  # ÷ the token counts: the divisor is kept
    else:
        pooled = tr.view(h, b * d)
    y = tr.activation(tr.linear(pooled, d, True, rows=b), m.option("classifier_act", "gelu"))
    y = tr.layer_norm(y, True, rows=b)
    return tr.linear(tr.dropout(y, tr.cond.head_dropout), 1, True, rows=b)


def tag(tr, m: BaseModel, h):
    """``ModernBertForTokenClassification``'s head on every token: out(dropout(norm(act(dense(h)))))."""
    y = tr.activation(tr.linear(h, m.hidden, True), m.option("classifier_act", "gelu"))
    y = tr.layer_norm(y, True)
    return tr.linear(tr.dropout(y, tr.cond.head_dropout), 1, True)


def _head_tensors(m: BaseModel) -> int:
    return 1 + bool(m.option("classifier_bias", False)) + _norm_tensors(m) + 2


def layer_tensors(m: BaseModel, i) -> int:
    """attn_norm (none in layer 0), Wqkv, Wo (+ biases if attention_bias), mlp_norm, Wi, Wo (+ biases if mlp_bias)."""
    att, mlp = 1 + bool(m.option("attention_bias", False)), 1 + bool(m.option("mlp_bias", False))
    return (_norm_tensors(m) if _index(m, i) > 0 else 0) + 2 * att + _norm_tensors(m) + 2 * mlp


def inference_layer(m: BaseModel, batch: int, n: int, eager: bool, adapted: bool) -> tuple[int, int]:
    """Attention: its input, the Wqkv output (3d), the rotated q and k, the context (eager: + the B·h·n² scores
    twice); GLU: its input, the normed input, the Wi output (2·d_ff), the GELU and the product (d_ff each) (adapted
    layers: + 4 (B, n, d)) — an estimate."""
    tokens, d, f = batch * n, m.hidden, m.intermediate
    attention = 7 * tokens * d + (2 * batch * m.heads * n * n if eager else 0)
    return attention, 2 * tokens * d + 4 * tokens * f + (4 * tokens * d if adapted else 0)


REPLAY = Replay(
    embeddings=trace_embeddings,
    layer=trace_layer,
    classify=classify,
    finish=finish,
    prepare=prepare,
    layer_kind=lambda m, i: (m.option("layer_types")[i], i == 0),
    embedding_tensors=lambda m: 1 + _norm_tensors(m),
    layer_tensors=layer_tensors,
    final_tensors=_norm_tensors,
    head_tensors=_head_tensors,
    tag=tag,
    span=tag,  # ModernBertForQuestionAnswering's head is its ForTokenClassification's (head, drop, classifier)
    token_head_tensors=_head_tensors,
    conditions=conditions,
    inference_layer=inference_layer,
)

FAMILY = Family(
    "modernbert",
    "ModernBERT",
    ("modernbert",),
    read,
    embeddings,
    layer_params,
    layer_flops,
    final_params=norm,
    pooler=False,
    head_params=head_params,
    head_flops=head_flops,
    token_head_params=head_params,  # ModernBertForTokenClassification: the same prediction head + classifier, per token
    token_head_flops=head_flops,
    token_types=False,
    pad_token_id=50283,
    refuses=(
        (
            "ca_mtl",
            "CA-MTL's conditional layer norm needs post-norm LayerNorms with biases; "
            "ModernBERT's are pre-norm, bias-free, and layer 0 has none",
        ),
    ),
    replay=REPLAY,
    hook_norms=hook_norms,
)
