"""BERT (MiniLM included) and the RoBERTa family (RoBERTa, XLM-R, CamemBERT): the same layer, docs/design.md "Base
models, exact".

    embeddings (V + P + Y)·d + 2d;   layer 4d² + 2·d·d_ff + 9d + d_ff;   pooler d² + d
    layer FLOPs 2n·(4d² + 2·d·d_ff) + 4n²·d;   head Linear(d, C) on the pooled first token

Refused (one line): ``is_decoder`` / ``add_cross_attention`` (a causal decoder, cross-attention layers: not the
encoder the trunk runs), ``type_vocab_size`` 0 (the embeddings look up token type 0), an activation the memory replay
does not model (``hidden_act``: ``pricing.activations.ACTIVATIONS``; other activations are a memory option).
RoBERTa's P = ``max_position_embeddings`` (514: positions start after the padding index) and Y = 1.
``RobertaForSequenceClassification``'s head is dense(d, d) + tanh + out_proj(d, C) on <s>: the same maps as
the pooler (dense + tanh on the first token) followed by Linear(d, C). Here the dense is the base model's
pooler, shared by the tasks by default (``per_task_pooler`` gives each task its own, which is exactly
RoBERTa's head); ``AutoModel`` (``RobertaModel`` with its pooler) is what N_base counts.
"""

from __future__ import annotations

from dataclasses import replace

from ...pricing.activations import INT64
from ...pricing.family import Family, Replay, activation_option, embedding_tables
from ...pricing.method import bert_layer_flops, bert_layer_params
from ...pricing.shape import BaseModel


def read_bert(
    config: dict, name: str, *, family: str = "bert", positions: int = 512, token_types: int = 2, embedding=None
) -> BaseModel:
    """BERT-shaped layers (BERT, RoBERTa, ELECTRA: ``embedding`` E when it differs from d)."""
    for flag in ("is_decoder", "add_cross_attention"):
        if config.get(flag):
            raise ValueError(
                f"config {name!r}: {flag} is true (a decoder; the project prices and builds encoders only)"
            )
    types = config.get("type_vocab_size", token_types)
    if types == 0:
        raise ValueError(f"config {name!r}: type_vocab_size 0 (the embeddings look up token type 0 in an empty table)")
    options = activation_option(config, name, "hidden_act")
    return BaseModel(
        name=name,
        hidden=config["hidden_size"],
        layers=config["num_hidden_layers"],
        heads=config["num_attention_heads"],
        intermediate=config["intermediate_size"],
        vocab=config["vocab_size"],
        positions=config.get("max_position_embeddings", positions),
        token_types=types,
        family=family,
        embedding=embedding,
        options=tuple(sorted(options.items())),
    )


def read_roberta(config: dict, name: str) -> BaseModel:
    """RoBERTa numbers positions from pad + 1 (``create_position_ids_from_input_ids``): a ``pad_token_id`` other than 1
    is kept as an option, for the longest sequence P − pad − 1."""
    m = read_bert(config, name, family="roberta", positions=514, token_types=1)
    pad = config.get("pad_token_id", 1)
    if isinstance(pad, int) and not isinstance(pad, bool) and pad != 1:
        m = replace(m, options=tuple(sorted(dict(m.options, pad_token_id=pad).items())))
    return m


def embeddings(m: BaseModel, paper: bool) -> int:
    """(V + P + Y)·d + 2d."""
    return embedding_tables(m, m.vocab + m.positions + m.token_types, paper)


def layer_params(m: BaseModel, i: int, paper: bool) -> int:
    return bert_layer_params(m, paper)


def layer_flops(m: BaseModel, i: int, n: int) -> int:
    return bert_layer_flops(m, n)


# --- the forward on symbolic tensors (memory and step time, docs/design.md "Memory (bytes)", "Time") ------------------

LAYER_TENSORS = 16  # Q, K, V, O, FFN in, FFN out (weight + bias each), two LayerNorms (γ, β)


def trace_layer(tr, m: BaseModel, i, h, trains: bool, hooks, *, output_dropout: bool = True, score_bias=None):
    """``BertLayer`` as the trunk runs it (``pals_core/families/bert/trunk.py``; DistilBERT's has no dropout after the
    attention output: ``output_dropout=False``) with the adapter's hooks (identity hooks: the HF layer).
    ``score_bias``: a (B, h, n, n) tensor added to the scores before the mask (MPNet's relative position bias): the
    addition keeps nothing; when the bias requires grad the scores do."""
    c, d, f = tr.cond, m.hidden, m.intermediate
    q = hooks.adapt_query(i, h, tr.linear(h, d, trains))
    k = hooks.adapt_key(i, h, tr.linear(h, d, trains))
    v = hooks.adapt_value(i, h, tr.linear(h, d, trains))
    mask_grad = hooks.attention_mask_grad(i)
    if score_bias is not None:
        tr.elementwise(score_bias.nbytes, 3, 0, False)  # scores += bias
        mask_grad = mask_grad or score_bias.grad
    ctx = tr.attention(q, k, v, d, m.heads, c.attention_dropout, mask_grad=mask_grad)
    y = tr.linear(ctx, d, trains)
    if output_dropout:
        y = tr.dropout(y, c.hidden_dropout)
    y = hooks.adapt_attention_output(i, y)
    a = hooks.attention_norm(i, tr.add(y, h), trains)
    g = hooks.adapt_ffn_activation(i, tr.activation(tr.linear(a, f, trains), m.option("hidden_act", "gelu")))
    z = tr.add(hooks.adapt_ffn_output(i, tr.dropout(tr.linear(g, d, trains), c.hidden_dropout)), a)
    z = tr.add(z, hooks.parallel_branch(i, h))
    return hooks.adapt_layer_output(i, hooks.output_norm(i, z, trains))


def trace_embeddings(tr, m: BaseModel, trains: bool, *, token_types: bool = True, positions_from_ids: bool = False):
    """Word + token-type + position lookups (each keeps its int64 ids when its table trains: the caller's token types;
    the positions a view of the (1, P) buffer, 8·P bytes — RoBERTa computes them from the ids, B·n), LayerNorm,
    dropout; ELECTRA's E → d projection when E ≠ d."""
    e = m.width
    x = tr.embedding(tr.new(tr.tokens, False, item_bytes=INT64), e, trains, m.vocab)
    if token_types:
        x = tr.add(x, tr.embedding(tr.new(tr.tokens, False, item_bytes=INT64), e, trains, m.token_types))
    positions = tr.tokens if positions_from_ids else m.positions
    x = tr.add(x, tr.embedding(tr.new(positions, False, item_bytes=INT64), e, trains, m.positions))
    h = tr.dropout(tr.layer_norm(x, trains), tr.cond.hidden_dropout)
    if e != m.hidden:  # ELECTRA's embeddings_project
        h = tr.linear(h, m.hidden, trains)
    return h


def trace_pooler_head(tr, m: BaseModel, h, pooler_trains: bool, rate: float | None = None):
    """head(dropout(tanh(dense(h[:, 0])))): the dense on the first token (a view of h) keeps h, tanh its output.
    ``rate``: the dropout's (None: the head's, ``Conditions.head_dropout``)."""
    pooled = tr.saves_output(tr.linear(tr.view(h, tr.batch * m.hidden), m.hidden, pooler_trains, rows=tr.batch))
    return tr.linear(tr.dropout(pooled, tr.cond.head_dropout if rate is None else rate), 1, True, rows=tr.batch)


def trace_hidden_rate_choice(tr, m: BaseModel, h, pooler_trains: bool):
    """``RobertaForMultipleChoice`` / ``MPNetForMultipleChoice``: the pooler head with ``hidden_dropout_prob``."""
    return trace_pooler_head(tr, m, h, pooler_trains, tr.cond.hidden_dropout)


def trace_dense_head(tr, m: BaseModel, first, *, act: str, input_dropout: float, rate: float | None = None):
    """out(dropout(act(dense(dropout_in(x₀))))) on the first token x₀ (B, d) (a view of h, or the pooled mean) — a
    head holding its own dense layer; ``act`` names its activation (``pricing.activations.ACTIVATIONS``: what it keeps);
    ``rate`` the second dropout's (None: the head's, ``Conditions.head_dropout``)."""
    x = tr.dropout(first, input_dropout)
    y = tr.activation(tr.linear(x, m.hidden, True, rows=tr.batch), act)
    return tr.linear(tr.dropout(y, tr.cond.head_dropout if rate is None else rate), 1, True, rows=tr.batch)


def embedding_tensors(m: BaseModel) -> int:
    """Word, position and token-type tables, LayerNorm γ, β."""
    return 5


def layer_tensors(m: BaseModel, i) -> int:
    return LAYER_TENSORS


BERT_REPLAY = Replay(
    embeddings=trace_embeddings,
    layer=trace_layer,
    classify=trace_pooler_head,
    embedding_tensors=embedding_tensors,
    layer_tensors=layer_tensors,
    head_tensors=lambda m: 2,
)
ROBERTA_REPLAY = Replay(
    embeddings=lambda tr, m, trains: trace_embeddings(tr, m, trains, positions_from_ids=True),
    layer=trace_layer,
    classify=trace_pooler_head,
    choose=trace_hidden_rate_choice,
    embedding_tensors=embedding_tensors,
    layer_tensors=layer_tensors,
    head_tensors=lambda m: 2,
)

BERT = Family("bert", "BERT", ("bert",), read_bert, embeddings, layer_params, layer_flops, replay=BERT_REPLAY)
ROBERTA = Family(
    "roberta",
    "RoBERTa / XLM-R / CamemBERT",
    ("roberta", "xlm-roberta", "camembert"),
    lambda c, name: read_roberta(c, name),
    embeddings,
    layer_params,
    layer_flops,
    pad_token_id=1,
    replay=ROBERTA_REPLAY,
    reserved_positions=lambda m: m.option("pad_token_id", 1) + 1,
)
FAMILIES = (BERT, ROBERTA)  # two families, one layer: registered together
