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

from ..method import bert_layer_flops, bert_layer_params, layer_norm, linear, mm
from ..shape import BaseModel
from .base import Family, activation_option, dense_head_flops, dense_head_params, embedding_size


def _att_types(value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.lower().split("|")
    return tuple(sorted(str(x).strip() for x in value if str(x).strip()))


def read(config: dict, name: str) -> BaseModel:
    d, heads = config["hidden_size"], config["num_attention_heads"]
    e = embedding_size(config, name, d)
    pooler = config.get("pooler_hidden_size", d)
    if pooler != d:
        raise ValueError(f"config {name!r}: pooler_hidden_size {pooler} differs from hidden_size {d} "
                         "(DeBERTa's ContextPooler then does not fit its classifier)")
    head_size = config.get("attention_head_size")
    if head_size is not None and isinstance(d, int) and isinstance(heads, int) and heads > 0 and head_size * heads != d:
        raise ValueError(f"config {name!r}: attention_head_size {head_size} × {heads} heads ≠ hidden_size {d} "
                         "(DeBERTa's attention output projection then does not fit)")
    kernel, groups = int(config.get("conv_kernel_size", 0) or 0), int(config.get("conv_groups", 1) or 1)
    if kernel > 0 and kernel % 2 == 0:
        raise ValueError(f"config {name!r}: conv_kernel_size {kernel} is even (DeBERTa's convolution would shorten "
                         "the sequence; transformers' forward fails)")
    if kernel > 0 and isinstance(d, int) and d % groups:
        raise ValueError(f"config {name!r}: conv_groups {groups} does not divide hidden_size {d}")
    norm_rel = str(config.get("norm_rel_ebd", "none") or "none").lower()
    options = dict(relative_attention=bool(config.get("relative_attention", False)),
                   position_buckets=int(config.get("position_buckets", -1) or -1),
                   max_relative_positions=int(config.get("max_relative_positions", -1) or -1),
                   pos_att_type=_att_types(config.get("pos_att_type")),
                   share_att_key=bool(config.get("share_att_key", False)),
                   position_biased_input=bool(config.get("position_biased_input", True)),
                   norm_rel_ebd="layer_norm" in [x.strip() for x in norm_rel.split("|")],
                   conv_kernel_size=kernel, conv_groups=groups,
                   **activation_option(config, name, "hidden_act"),
                   **activation_option(config, name, "pooler_hidden_act", "pooler_hidden_act"))
    if kernel > 0:
        options.update(activation_option(config, name, "conv_act", "conv_act", default="tanh"))
    return BaseModel(name=name, hidden=d, layers=config["num_hidden_layers"], heads=config["num_attention_heads"],
                     intermediate=config["intermediate_size"], vocab=config["vocab_size"],
                     positions=config.get("max_position_embeddings", 512), token_types=config.get("type_vocab_size", 0),
                     family="deberta-v2", embedding=None if e == d else e, options=tuple(sorted(options.items())))


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


def layer_flops(m: BaseModel, i: int, n: int) -> int:
    d, total = m.hidden, bert_layer_flops(m, n)
    if m.option("relative_attention", False):
        k2 = 2 * span(m)
        total += _position_projections(m) * mm(k2, d, d).c
        total += len(set(m.option("pos_att_type", ())) & {"c2p", "p2c"}) * mm(n, d, k2).c
    kernel = m.option("conv_kernel_size", 0)
    if i == 0 and kernel > 0:
        out = n + 2 * ((kernel - 1) // 2) - kernel + 1
        total += 2 * out * kernel * d * (d // m.option("conv_groups", 1))
    return total


def embedding_flops(m: BaseModel, n: int) -> int:
    return mm(n, m.width, m.hidden).c if m.width != m.hidden else 0


DEBERTA_V2 = Family("deberta-v2", "DeBERTa-v2 / v3", ("deberta-v2",), read, embeddings, layer_params, layer_flops,
                    embedding_flops=embedding_flops, pooler=False, head_params=dense_head_params,
                    head_flops=dense_head_flops,
                    refuses=(("ca_mtl", "CA-MTL's conditional attention bias is defined on BERT's attention scores, "
                                        "not on DeBERTa's disentangled ones"),), attention=("eager",))
