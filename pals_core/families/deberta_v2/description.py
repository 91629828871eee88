"""DeBERTa-v2 / v3 (``model_type`` deberta-v2): BERT's layer with disentangled relative attention, as the config's
flags say (``DisentangledSelfAttention``, He et al. 2021, Sec. 3.1; v3: He et al. 2023).

k = ``position_buckets`` if > 0 else ``max_relative_positions`` (if < 1: ``max_position_embeddings``).
Embeddings (every lookup table and its norm):
    V·E (+ P·E if ``position_biased_input``) (+ Y·E if Y > 0) (+ E·d, no bias, if E ≠ d) + 2d (LayerNorm(d))
    + 2k·d relative embeddings (if ``relative_attention``) (+ 2d if ``norm_rel_ebd`` holds layer_norm: the encoder
    builds that LayerNorm even without ``relative_attention``, where it is never used)
Layer i: BERT's 4d² + 2·d·d_ff + 9d + d_ff, plus, unless ``share_att_key``, pos_key_proj (d² + d) if c2p and
pos_query_proj (d² + d) if p2c are in ``pos_att_type``; layer 0 also holds the optional ConvLayer
(``conv_kernel_size`` κ > 0, groups g): d·(d/g)·κ + d + 2d.
Layer FLOPs on n tokens: BERT's 2n·(4d² + 2·d·d_ff) + 4n²·d, plus (relative attention) the projections of the 2k
relative embeddings, 2·2k·d² each (two with ``share_att_key``, which reuses query_proj and key_proj; else one
per type), and the position scores 2·n·2k·d for c2p and for p2c (a bmm against all 2k relative positions before
the gather); layer 0 with the convolution adds 2·n'·κ·d·(d/g), n' = n + 2⌊(κ−1)/2⌋ − κ + 1.
No pooler; task head (``ContextPooler`` + classifier): dense Linear(d, d) + GELU, Linear(d, C), per task.
Refused (one line): ``attention_head_size`` ≠ d/h (the output projection then no longer fits), an even
``conv_kernel_size`` (the convolution shortens the sequence and transformers' forward fails), ``conv_groups`` not
dividing d, ``embedding_size`` null, an activation the memory replay does not model (``hidden_act``,
``pooler_hidden_act``, ``conv_act``), any attention implementation but eager (transformers has no other for it).
"""

from __future__ import annotations

from functools import lru_cache

from ...pricing.activations import INT64
from ...pricing.family import (
    Family,
    Replay,
    activation_option,
    bert_inference_layer,
    dense_head_flops,
    dense_head_params,
    embedding_size,
    flag,
    integer,
    probability,
)
from ...pricing.limits import MAX_LAYERS
from ...pricing.method import bert_layer_flops, bert_layer_params, layer_norm, linear, mm
from ...pricing.poly import Poly
from ...pricing.shape import BaseModel
from ..bert.description import LAYER_TENSORS, trace_dense_head

ATT_TYPES = ("c2p", "p2c")  # DebertaV2's disentangled attention terms


def _att_types(value, name: str) -> tuple[str, ...]:
    """``pos_att_type``: a list of "c2p" / "p2c", or a "c2p|p2c" string (transformers splits it); anything else
    (a number, another term) is refused."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.lower().split("|")
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise ValueError(f"config {name!r}: pos_att_type is {value!r}; it lists c2p and/or p2c")
    terms = tuple(sorted(x.strip() for x in value if x.strip()))
    unknown = [t for t in terms if t not in ATT_TYPES]
    if unknown:
        raise ValueError(f"config {name!r}: pos_att_type names {unknown[0]!r}; it lists c2p and/or p2c")
    return terms


def read(config: dict, name: str) -> BaseModel:
    d, heads = config["hidden_size"], config["num_attention_heads"]
    e = embedding_size(config, name, d)
    pooler = config.get("pooler_hidden_size", d)
    if pooler != d:
        raise ValueError(
            f"config {name!r}: pooler_hidden_size {pooler} differs from hidden_size {d} "
            "(DeBERTa's ContextPooler then does not fit its classifier)"
        )
    head_size = config.get("attention_head_size")
    if head_size is not None and isinstance(d, int) and isinstance(heads, int) and heads > 0 and head_size * heads != d:
        raise ValueError(
            f"config {name!r}: attention_head_size {head_size} × {heads} heads ≠ hidden_size {d} "
            "(DeBERTa's attention output projection then does not fit)"
        )
    kernel = integer(config, name, "conv_kernel_size", 0, low=0, high=MAX_LAYERS)
    groups = integer(config, name, "conv_groups", 1, low=1)
    if kernel > 0 and kernel % 2 == 0:
        raise ValueError(
            f"config {name!r}: conv_kernel_size {kernel} is even (DeBERTa's convolution would shorten "
            "the sequence; transformers' forward fails)"
        )
    if kernel > 0 and isinstance(d, int) and d % groups:
        raise ValueError(f"config {name!r}: conv_groups {groups} does not divide hidden_size {d}")
    norm_rel = config.get("norm_rel_ebd", "none") or "none"
    if not isinstance(norm_rel, str):
        raise ValueError(f"config {name!r}: norm_rel_ebd is {norm_rel!r}; it takes a string (layer_norm or none)")
    norm_rel = norm_rel.lower()
    options = dict(
        relative_attention=flag(config, name, "relative_attention", False),
        position_buckets=integer(config, name, "position_buckets", -1, low=-1) or -1,
        max_relative_positions=integer(config, name, "max_relative_positions", -1, low=-1) or -1,
        pos_att_type=_att_types(config.get("pos_att_type"), name),
        share_att_key=flag(config, name, "share_att_key", False),
        position_biased_input=flag(config, name, "position_biased_input", True),
        norm_rel_ebd="layer_norm" in [x.strip() for x in norm_rel.split("|")],
        conv_kernel_size=kernel,
        conv_groups=groups,
        **activation_option(config, name, "hidden_act"),
        **activation_option(config, name, "pooler_hidden_act", "pooler_hidden_act"),
    )
    if kernel > 0:
        options.update(activation_option(config, name, "conv_act", "conv_act", default="tanh"))
    return BaseModel(
        name=name,
        hidden=d,
        layers=config["num_hidden_layers"],
        heads=config["num_attention_heads"],
        intermediate=config["intermediate_size"],
        vocab=config["vocab_size"],
        positions=config.get("max_position_embeddings", 512),
        token_types=config.get("type_vocab_size", 0),
        family="deberta-v2",
        embedding=None if e == d else e,
        options=tuple(sorted(options.items())),
    )


def span(m: BaseModel) -> int:
    """k, the relative span: 2k relative embeddings."""
    if m.option("position_buckets", -1) > 0:
        return m.option("position_buckets")
    r = m.option("max_relative_positions", -1)
    return r if r >= 1 else m.positions


def embeddings(m: BaseModel, paper: bool) -> int:
    d, e = m.hidden, m.width
    rows = m.vocab + (m.positions if m.option("position_biased_input", True) else 0) + m.token_types
    total = rows * e + (linear(e, d, bias=False).c if e != d else 0) + layer_norm(d, paper=paper).c
    if m.option("relative_attention", False):
        total += 2 * span(m) * d
    return total + (layer_norm(d, paper=paper).c if m.option("norm_rel_ebd", False) else 0)


def _position_projections(m: BaseModel) -> int:
    """How many Linear(d, d) map the relative embeddings per layer (forward)."""
    if not m.option("relative_attention", False):
        return 0
    return 2 if m.option("share_att_key", False) else len(set(m.option("pos_att_type", ())) & {"c2p", "p2c"})


def layer_params(m: BaseModel, i: int, paper: bool) -> int:
    d = m.hidden
    total = bert_layer_params(m, paper)
    if m.option("relative_attention", False) and not m.option("share_att_key", False):
        total += _position_projections(m) * linear(d, d, paper=paper).c
    kernel = m.option("conv_kernel_size", 0)
    if i == 0 and kernel > 0:
        groups = m.option("conv_groups", 1)
        total += d * (d // groups) * kernel + (0 if paper else d) + layer_norm(d, paper=paper).c
    return total


def fixed_flops(m: BaseModel, i: int) -> int:
    """The relative embeddings' projections of layer i (2k × d by d each): computed once per forward, whatever the
    batch (``Family.fixed_flops``)."""
    if not m.option("relative_attention", False):
        return 0
    return _position_projections(m) * mm(2 * span(m), m.hidden, m.hidden).c


def layer_flops(m: BaseModel, i: int, n: int) -> int:
    d, total = m.hidden, bert_layer_flops(m, n)
    if m.option("relative_attention", False):
        k2 = 2 * span(m)
        total += fixed_flops(m, i)
        total += len(set(m.option("pos_att_type", ())) & {"c2p", "p2c"}) * mm(n, d, k2).c
    kernel = m.option("conv_kernel_size", 0)
    if i == 0 and kernel > 0:
        out = n + 2 * ((kernel - 1) // 2) - kernel + 1
        total += 2 * out * kernel * d * (d // m.option("conv_groups", 1))
    return total


def embedding_flops(m: BaseModel, n: int) -> int:
    return mm(n, m.width, m.hidden).c if m.width != m.hidden else 0


# --- the forward on symbolic tensors (memory and step time, docs/design.md "Memory (bytes)", "Time") ------------------
# As ``DebertaV2Embeddings``, ``DebertaV2Encoder``, ``DisentangledSelfAttention``, ``ConvLayer`` and the trunk's
# ``DebertaHead`` run in transformers (checked against saved_tensors_hooks by tests/test_memory.py):
# - embeddings: the lookups keep their int64 ids (positions: a view of the (1, P) buffer), the projection its input,
#   the LayerNorm its input and row statistics, the product with the attention mask (as floats, B·n) the mask;
# - once per forward: the relative embeddings, through their LayerNorm (``norm_rel_ebd``: 2·2k row statistics kept);
# - per layer: Q, K, V and the projected relative embeddings become contiguous per-head copies (``repeat``-ed over
#   the batch: B·2k·d each); QKᵀ keeps q and kᵀ/√(d_h·f) (and the 4-byte √ tensor its division keeps); c2p keeps q,
#   the position keys, the (B·h, n, 2k) scores it gathers from and the n² int64 index, p2c the same with k; the
#   score mask (B·n² bools) is kept by masked_fill, the softmax its output, the dropout its mask, the context
#   product the dropped probabilities and v; then BERT's output, FFN and LayerNorms. The relative embeddings are
#   dropped (``pos_dropout``, the hidden rate) in every layer: a 2k·d mask each.


def _types(m: BaseModel) -> tuple[str, ...]:
    return tuple(t for t in ("c2p", "p2c") if t in m.option("pos_att_type", ()))


def _relative(m: BaseModel) -> bool:
    return bool(m.option("relative_attention", False)) and bool(_types(m))


def conditions(config: dict) -> dict:
    """DeBERTa's rates (``cls_dropout`` the head's, ``pooler_dropout`` before ContextPooler's dense); its attention is its
    own (no sdpa), and transformers runs the adapters' attention eager for it."""
    name = config.get("_name_or_path")
    return dict(
        hidden_dropout=probability(config, name, "hidden_dropout_prob", 0.1),
        attention_dropout=probability(config, name, "attention_probs_dropout_prob", 0.1),
        classifier_dropout=probability(config, name, "cls_dropout", None),
        attention="eager",
        extra=(("pooler_dropout", probability(config, name, "pooler_dropout", 0.0) or 0.0),),
    )


def trace_embeddings(tr, m: BaseModel, trains: bool):
    e, d = m.width, m.hidden
    x = tr.embedding(tr.new(tr.tokens, False, item_bytes=INT64), e, trains, m.vocab)
    if m.option("position_biased_input", True):
        x = tr.add(x, tr.embedding(tr.new(m.positions, False, item_bytes=INT64), e, trains, m.positions))
    if m.token_types > 0:
        x = tr.add(x, tr.embedding(tr.new(tr.tokens, False, item_bytes=INT64), e, trains, m.token_types))
    if e != d:
        x = tr.linear(x, d, trains)
    x = tr.mul(tr.layer_norm(x, trains), tr.new(tr.tokens, False))  # ⊙ the mask as floats (B, n, 1)
    return tr.dropout(x, tr.cond.hidden_dropout)


def prepare(tr, m: BaseModel, trains: bool) -> None:
    """The relative embeddings every layer reads (the (2k, d) table, or its LayerNorm's output) — computed whenever
    ``relative_attention`` is on, even with no c2p / p2c to read them."""
    if not m.option("relative_attention", False):
        return
    k2 = 2 * span(m)
    rel = tr.param(k2 * m.hidden, trains)
    tr.shared["rel"] = tr.layer_norm(rel, trains, rows=k2) if m.option("norm_rel_ebd", False) else rel


def _heads(tr, x, heads: int, rows: int):
    """``transpose_for_scores``: (…, rows, d) → (·h, rows, d_h), a copy unless the permute is trivial."""
    return tr.copy(x) if heads > 1 and rows > 1 else x


@lru_cache(maxsize=64)
def _layout(m: BaseModel) -> tuple:
    """(relative attention, its types, 2k, share_att_key, FFN activation, conv kernel): what a layer's replay reads."""
    relative = bool(m.option("relative_attention", False))
    return (
        relative,
        _types(m) if relative else (),
        2 * span(m) if relative else 0,
        bool(m.option("share_att_key", False)),
        m.option("hidden_act", "gelu"),
        m.option("conv_kernel_size", 0),
    )


def trace_layer(tr, m: BaseModel, i, h, trains: bool, hooks):
    c, d, heads, b, n = tr.cond, m.hidden, m.heads, tr.batch, tr.seq_len
    relative, types, k2, shared_key, act, kernel = _layout(m)
    q = _heads(tr, hooks.adapt_query(i, h, tr.linear(h, d, trains)), heads, n)
    k = _heads(tr, hooks.adapt_key(i, h, tr.linear(h, d, trains)), heads, n)
    v = _heads(tr, hooks.adapt_value(i, h, tr.linear(h, d, trains)), heads, n)
    rows = b * heads * n
    scores = tr.bmm(q, tr.divide_by_tensor(k), rows, n)
    if relative:  # the relative embeddings are dropped and (shared keys) projected even when no type reads them
        rel = tr.dropout(tr.shared["rel"], c.hidden_dropout)

        def project():
            return tr.copy(_heads(tr, tr.linear(rel, d, trains, rows=k2), heads, k2), times=b)

        pos_query = project() if (shared_key or "p2c" in types) else None
        pos_key = project() if (shared_key or "c2p" in types) else None
        for kind in types:
            content, position = (q, pos_key) if kind == "c2p" else (k, pos_query)
            index = tr.new(n * n, False, item_bytes=INT64)  # clamp(±relative_pos + k): (1, 1, n, n)
            att = tr.gather(tr.bmm(content, position, rows, k2), index, rows * n)
            scores = tr.add(scores, tr.divide_by_tensor(att))
    scores = tr.masked_fill(scores, tr.new(b * n * n, False, item_bytes=1))  # ~mask.bool(): (B, 1, n, n)
    probs = tr.dropout(tr.saves_output(scores), c.attention_dropout)
    ctx = _heads(tr, tr.bmm(probs, v, rows, d // heads), heads, n)
    y = hooks.adapt_attention_output(i, tr.dropout(tr.linear(ctx, d, trains), c.hidden_dropout))
    a = hooks.attention_norm(i, tr.add(y, h), trains)
    g = tr.linear(a, m.intermediate, trains)
    g = hooks.adapt_ffn_activation(i, tr.activation(g, act))
    z = tr.add(hooks.adapt_ffn_output(i, tr.dropout(tr.linear(g, d, trains), c.hidden_dropout)), a)
    z = tr.add(z, hooks.parallel_branch(i, h))
    out = hooks.adapt_layer_output(i, hooks.output_norm(i, z, trains))
    if i == 0 and kernel > 0:
        out = _conv(tr, m, h, out, trains)
    return out


def _conv(tr, m: BaseModel, h0, out, trains: bool):
    """``ConvLayer`` after layer 0 on its input h0: LN(out + act(dropout(conv(h0) masked))) ⊙ mask."""
    d, kernel = m.hidden, m.option("conv_kernel_size", 0)
    x = tr.copy(h0)  # permute(0, 2, 1).contiguous()
    length = tr.seq_len + 2 * ((kernel - 1) // 2) - kernel + 1
    rows = tr.batch * length
    unfolded = tr.new(rows * kernel * (d // m.option("conv_groups", 1)), False)  # the im2col view the conv multiplies
    tr.log("mm", rows, unfolded.nbytes, Poly(0, 0, d), x.grad, trains)
    if trains:
        tr.save(x)
    y = tr.copy(tr.new(rows * d, x.grad or trains))  # permute back, contiguous
    y = tr.masked_fill(y, tr.new(tr.tokens, False, item_bytes=1))  # (1 − mask).bool()
    y = tr.dropout(y, tr.cond.hidden_dropout)
    y = tr.activation(y, m.option("conv_act", "tanh"))
    normed = tr.layer_norm(tr.add(out, y), trains)
    return tr.mul(normed, tr.new(tr.tokens, False), out=normed.nbytes)


def classify(tr, m: BaseModel, h, pooler_trains: bool):
    """``DebertaHead``: out(dropout(act(dense(pooler_dropout(h[:, 0])))))."""
    return trace_dense_head(
        tr,
        m,
        tr.view(h, tr.batch * m.hidden),
        act=m.option("pooler_hidden_act", "gelu"),
        input_dropout=tr.cond.rate("pooler_dropout"),
    )


def idle_params(m: BaseModel) -> int:
    """Parameters the model holds but no forward reads unless c2p or p2c is on with ``relative_attention``: the 2k·d
    relative table (``relative_attention`` with no c2p / p2c) and the relative LayerNorm's 2d (``norm_rel_ebd``, built even
    without ``relative_attention``). They keep requires_grad (counted as trained) but never get a gradient, so torch
    holds neither a gradient nor AdamW state for them."""
    if _relative(m):
        return 0
    table = 2 * span(m) * m.hidden if m.option("relative_attention", False) else 0
    return table + (2 * m.hidden if m.option("norm_rel_ebd", False) else 0)


def embedding_tensors(m: BaseModel) -> int:
    """Word (+ position) (+ token-type) tables (+ the bias-free projection), LayerNorm γ, β (+ the relative table
    and its LayerNorm where the layers read them)."""
    count = 1 + bool(m.option("position_biased_input", True)) + (m.token_types > 0) + (m.width != m.hidden) + 2
    if _relative(m):
        count += 1 + (2 if m.option("norm_rel_ebd", False) else 0)
    return count


def layer_tensors(m: BaseModel, i) -> int:
    """BERT's 16 (+ weight and bias of each own position projection) (+ the convolution's 4 in layer 0)."""
    count = LAYER_TENSORS + (2 * _position_projections(m) if not m.option("share_att_key", False) else 0)
    return count + (4 if i == 0 and m.option("conv_kernel_size", 0) > 0 else 0)


def inference_layer(m: BaseModel, batch: int, n: int, eager: bool, adapted: bool) -> tuple[int, int]:
    """BERT's eager working set plus, per relative type, the (B·h, n, 2k) scores before the gather, the repeated
    (B, 2k, d) position projection and one more B·h·n² score tensor (an estimate)."""
    attention, ffn = bert_inference_layer(m, batch, n, True, adapted)
    if m.option("relative_attention", False):
        k2 = 2 * span(m)
        attention += len(_types(m)) * (batch * m.heads * n * k2 + batch * k2 * m.hidden + batch * m.heads * n * n)
    return attention, ffn


REPLAY = Replay(
    embeddings=trace_embeddings,
    layer=trace_layer,
    classify=classify,
    prepare=prepare,
    embedding_tensors=embedding_tensors,
    layer_tensors=layer_tensors,
    head_tensors=lambda m: 4,
    conditions=conditions,
    inference_layer=inference_layer,
    layer_kind=lambda m, i: i == 0 and m.option("conv_kernel_size", 0) > 0,
    idle_params=idle_params,
)

FAMILY = Family(
    "deberta-v2",
    "DeBERTa-v2 / v3",
    ("deberta-v2",),
    read,
    embeddings,
    layer_params,
    layer_flops,
    embedding_flops=embedding_flops,
    pooler=False,
    head_params=dense_head_params,
    head_flops=dense_head_flops,
    fixed_flops=fixed_flops,
    refuses=(
        (
            "ca_mtl",
            "CA-MTL's conditional attention bias is defined on BERT's attention scores, "
            "not on DeBERTa's disentangled ones",
        ),
    ),
    attention=("eager",),
    replay=REPLAY,
)
