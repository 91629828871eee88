"""ALBERT as the calculator counts it (pure Python: imports only the calculator's pure parts, never torch).

``AlbertModel`` (transformers' ``modeling_albert``): embeddings of width E = ``embedding_size`` (word, position and
token-type tables, LayerNorm(E), dropout), ``encoder.embedding_hidden_mapping_in`` Linear(E → d) — present even
when E = d — then ONE ``AlbertLayer`` whose weights every one of the L layer applications uses
(``num_hidden_groups`` = ``inner_group_num`` = 1), the pooler Linear(d, d) + tanh on the first token.

    N_base = (V + P + Y)·E + 2E + E·d + d  +  1 · (4d² + 2·d·d_ff + 9d + d_ff)  +  d² + d
             (the shared layer counted once: it is one set of parameters, whatever L is)
    FLOPs  = 2n·E·d  +  L · (2n·(4d² + 2·d·d_ff) + 4n²·d)  +  pooler 2d²  (every application computes)

The layer is BERT's (query, key, value, dense + LayerNorm; ffn d → d_ff, activation, ffn_output d_ff → d,
full_layer_layer_norm) except that no dropout follows ``ffn_output``. An adapted layer i runs layer i's own task
adapter around the shared weights; the trainable tensors (AdamW's steps), like the parameters, are counted once.
The task head is ``AlbertForSequenceClassification``'s: dropout (``classifier_dropout_prob``) then Linear(d, C) on
the pooled output. The dropout rates are ALBERT's fields, with ALBERT's defaults (0, 0 and 0.1); the activation
defaults to ``gelu_new`` and E to 128, as ``AlbertConfig`` does.

Refused (one line): ``num_hidden_groups`` or ``inner_group_num`` other than 1 (several shared groups or several
layers per application: not modelled), CA-MTL (see ``CA_MTL_REASON``), and BERT's refusals (``read_bert``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...pricing.family import Family, Replay, embedding_tables, integer, probability
from ...pricing.method import bert_layer_flops, bert_layer_params, linear, mm
from ...pricing.shape import BaseModel
from ..bert.description import LAYER_TENSORS, read_bert, trace_embeddings, trace_pooler_head

CA_MTL_REASON = (
    "CA-MTL freezes the embeddings and encoder layers 0..F-1 and re-initialises the weights of its top "
    "adapter layers, but ALBERT's L layers run one shared set of weights: freezing the lower layers or "
    "re-initialising the top ones would freeze or re-initialise every layer"
)
DEFAULT_EMBEDDING = 128  # AlbertConfig's embedding_size
DEFAULT_ACTIVATION = "gelu_new"  # AlbertConfig's hidden_act


def read(config: dict, name: str) -> BaseModel:
    """BERT's fields and refusals (``read_bert``) with ALBERT's defaults (E = 128, ``gelu_new``); one group of one layer."""
    for field in ("num_hidden_groups", "inner_group_num"):
        value = integer(config, name, field, 1, low=1)
        if value != 1:
            raise ValueError(
                f"config {name!r}: {field} {value} is not supported (the calculator and the trunk model "
                f"ALBERT's one shared layer: num_hidden_groups = inner_group_num = 1)"
            )
    if "embedding_size" in config and config["embedding_size"] is None:
        raise ValueError(
            f"config {name!r}: embedding_size is null (give a width, or leave the field out for ALBERT's "
            f"{DEFAULT_EMBEDDING})"
        )
    e = integer(config, name, "embedding_size", DEFAULT_EMBEDDING, low=1)
    config = {**config, "hidden_act": config.get("hidden_act") or DEFAULT_ACTIVATION}
    return read_bert(config, name, family="albert", embedding=None if e == config["hidden_size"] else e)


def embedding_params(m: BaseModel, paper: bool) -> int:
    """(V + P + Y)·E + 2E (tables and LayerNorm(E)) + E·d + d (``embedding_hidden_mapping_in``, always there)."""
    return embedding_tables(m, m.vocab + m.positions + m.token_types, paper) + linear(m.width, m.hidden, paper=paper).c


def embedding_flops(m: BaseModel, n: int) -> int:
    """2n·E·d: the E → d mapping."""
    return mm(n, m.width, m.hidden).c


def layer_params(m: BaseModel, i: int, paper: bool) -> int:
    """The parameters layer i runs with: the shared layer's (``base_params`` counts them once; a copy of the last
    layer, ``bert_layer_top``, holds as many)."""
    return bert_layer_params(m, paper)


def layer_flops(m: BaseModel, i: int, n: int) -> int:
    """Every application computes: BERT's layer FLOPs."""
    return bert_layer_flops(m, n)


@dataclass(frozen=True)
class SharedLayerFamily(Family):
    """A family whose L layers run one layer's weights: N_base counts that layer once."""

    def base_params(self, m: BaseModel, paper: bool) -> int:
        return (
            self.embedding_params(m, paper)
            + self.layer_params(m, 0, paper)
            + self.final_params(m, paper)
            + (linear(m.hidden, m.hidden, paper=paper).c if self.pooler else 0)
        )


# --- the forward on symbolic tensors (memory and step time, docs/design.md "Memory (bytes)", "Time") ------------------


def trace_embeddings_mapped(tr, m: BaseModel, trains: bool):
    """BERT's embeddings at width E (``trace_embeddings`` projects when E ≠ d), then the E → d mapping when E = d."""
    h = trace_embeddings(tr, m, trains)
    return tr.linear(h, m.hidden, trains) if m.width == m.hidden else h


def trace_layer(tr, m: BaseModel, i, h, trains: bool, hooks):
    """``AlbertLayer`` as the trunk runs it (``pals_core/families/albert/trunk.py``), with the adapter's hooks:
    BERT's layer (``families/bert/description.py``'s ``trace_layer``) without a dropout after ``ffn_output``."""
    c, d, f = tr.cond, m.hidden, m.intermediate
    q = hooks.adapt_query(i, h, tr.linear(h, d, trains))
    k = hooks.adapt_key(i, h, tr.linear(h, d, trains))
    v = hooks.adapt_value(i, h, tr.linear(h, d, trains))
    ctx = tr.attention(q, k, v, d, m.heads, c.attention_dropout, mask_grad=hooks.attention_mask_grad(i))
    y = hooks.adapt_attention_output(i, tr.dropout(tr.linear(ctx, d, trains), c.hidden_dropout))
    a = hooks.attention_norm(i, tr.add(y, h), trains)
    g = hooks.adapt_ffn_activation(i, tr.activation(tr.linear(a, f, trains), m.option("hidden_act", "gelu")))
    z = tr.add(hooks.adapt_ffn_output(i, tr.linear(g, d, trains)), a)
    z = tr.add(z, hooks.parallel_branch(i, h))
    return hooks.adapt_layer_output(i, hooks.output_norm(i, z, trains))


def layer_tensors(m: BaseModel, i) -> int:
    """The shared layer's 16 tensors, counted at layer 0 (and for a copy on top, i = "top"); the others hold none."""
    return LAYER_TENSORS if i in (0, "top") else 0


def conditions(config: dict) -> dict:
    """ALBERT's dropout fields and defaults: ``hidden_dropout_prob`` 0, ``attention_probs_dropout_prob`` 0,
    ``classifier_dropout_prob`` 0.1 (the head's)."""
    name = config.get("_name_or_path")
    return dict(
        hidden_dropout=probability(config, name, "hidden_dropout_prob", 0.0),
        attention_dropout=probability(config, name, "attention_probs_dropout_prob", 0.0),
        classifier_dropout=probability(config, name, "classifier_dropout_prob", 0.1),
    )


REPLAY = Replay(
    embeddings=trace_embeddings_mapped,
    layer=trace_layer,
    classify=trace_pooler_head,
    embedding_tensors=lambda m: 7,  # three tables, LayerNorm γ, β, the mapping's weight and bias
    layer_tensors=layer_tensors,
    head_tensors=lambda m: 2,
    conditions=conditions,
)

FAMILY = SharedLayerFamily(
    "albert",
    "ALBERT",
    ("albert",),
    read,
    embedding_params,
    layer_params,
    layer_flops,
    embedding_flops=embedding_flops,
    refuses=(("ca_mtl", CA_MTL_REASON),),
    replay=REPLAY,
    notes="one layer's weights shared by the L layers: counted once in N_base, L times in FLOPs and activations",
)
