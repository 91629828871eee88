"""DistilBERT (``model_type`` distilbert): BERT's layer under other names, no token types, no pooler.

Config fields: ``dim`` = d, ``n_layers`` = L, ``n_heads`` = h, ``hidden_dim`` = d_ff.
    embeddings (V + P)·d + 2d;   layer 4d² + 2·d·d_ff + 9d + d_ff (q_lin, k_lin, v_lin, out_lin, sa_layer_norm,
    lin1, lin2, output_layer_norm);   no pooler
Task head (``DistilBertForSequenceClassification``): pre_classifier Linear(d, d) + ReLU, classifier Linear(d, C)
on the first token, both per task: d² + d + d·C + C; FLOPs 2d² + 2·d·C.
"""

from __future__ import annotations

from ...pricing.family import (
    Family,
    Replay,
    activation_option,
    dense_head_flops,
    dense_head_params,
    embedding_tables,
    probability,
)
from ...pricing.shape import BaseModel
from ..bert.description import layer_flops, layer_params, layer_tensors, trace_dense_head, trace_embeddings, trace_layer


def read(config: dict, name: str) -> BaseModel:
    """``activation`` is the FFN's (``hidden_act`` option); ``sinusoidal_pos_embds`` only initialises the position
    table (transformers 5.24 keeps it a trained parameter): nothing to count differently."""
    options = activation_option(config, name, "activation")
    return BaseModel(
        name=name,
        hidden=config["dim"],
        layers=config["n_layers"],
        heads=config["n_heads"],
        intermediate=config["hidden_dim"],
        vocab=config["vocab_size"],
        positions=config.get("max_position_embeddings", 512),
        token_types=0,
        family="distilbert",
        options=tuple(sorted(options.items())),
    )


def embeddings(m: BaseModel, paper: bool) -> int:
    """(V + P)·d + 2d."""
    return embedding_tables(m, m.vocab + m.positions, paper)


def conditions(config: dict) -> dict:
    """DistilBERT's names: ``dropout``, ``attention_dropout``, ``seq_classif_dropout`` (the head's)."""
    name = config.get("_name_or_path")
    return dict(
        hidden_dropout=probability(config, name, "dropout", 0.1),
        attention_dropout=probability(config, name, "attention_dropout", 0.1),
        classifier_dropout=probability(config, name, "seq_classif_dropout", 0.2),
        extra=(("qa_dropout", probability(config, name, "qa_dropout", 0.1)),),
    )


REPLAY = Replay(
    embeddings=lambda tr, m, trains: trace_embeddings(tr, m, trains, token_types=False),
    layer=lambda tr, m, i, h, trains, hooks: trace_layer(tr, m, i, h, trains, hooks, output_dropout=False),
    classify=lambda tr, m, h, pooler_trains: trace_dense_head(
        tr, m, tr.view(h, tr.batch * m.hidden), act="relu", input_dropout=0.0
    ),
    embedding_tensors=lambda m: 4,
    layer_tensors=layer_tensors,
    head_tensors=lambda m: 4,
    conditions=conditions,
    span=lambda tr, m, h: tr.linear(tr.dropout(h, tr.cond.rate("qa_dropout")), 1, True),  # dropout(qa_dropout)
)

FAMILY = Family(
    "distilbert",
    "DistilBERT",
    ("distilbert",),
    read,
    embeddings,
    layer_params,
    layer_flops,
    pooler=False,
    head_params=dense_head_params,
    head_flops=dense_head_flops,
    token_types=False,
    replay=REPLAY,
)
