"""ELECTRA discriminators (``model_type`` electra): BERT's layers on embeddings of width E = ``embedding_size``.

    embeddings (V + P + Y)·E + 2E (+ E·d + d: ``embeddings_project`` when E ≠ d);   BERT layers;   no pooler
    embedding FLOPs 2n·E·d when E ≠ d (the projection)
Task head (``ElectraClassificationHead``): dense Linear(d, d) + GELU, out_proj Linear(d, C) on the first token,
per task: d² + d + d·C + C; FLOPs 2d² + 2·d·C. A multiple-choice task's (``ElectraForMultipleChoice``: the sequence
summary's Linear(d, d) + GELU + dropout ``summary_last_dropout``, then Linear(d, 1)): the same count with C = 1, no
dropout before the dense.
"""

from __future__ import annotations

from ...pricing.family import (
    Family,
    Replay,
    dense_head_flops,
    dense_head_params,
    embedding_size,
    embedding_tables,
    probability,
)
from ...pricing.method import linear, mm
from ...pricing.shape import BaseModel
from ..bert.description import (
    layer_flops,
    layer_params,
    layer_tensors,
    read_bert,
    trace_dense_head,
    trace_embeddings,
    trace_layer,
)


def read(config: dict, name: str) -> BaseModel:
    """BERT's fields and refusals (``read_bert``) with E = ``embedding_size``; the head's GELU is fixed (not ``hidden_act``)."""
    d = config["hidden_size"]
    e = embedding_size(config, name, d)
    return read_bert(config, name, family="electra", embedding=None if e == d else e)


def embeddings(m: BaseModel, paper: bool) -> int:
    """(V + P + Y)·E + 2E, plus E·d + d for the projection when E ≠ d."""
    project = linear(m.width, m.hidden, paper=paper).c if m.width != m.hidden else 0
    return embedding_tables(m, m.vocab + m.positions + m.token_types, paper) + project


def embedding_flops(m: BaseModel, n: int) -> int:
    return mm(n, m.width, m.hidden).c if m.width != m.hidden else 0


def conditions(config: dict) -> dict:
    """BERT's rate fields, and ``summary_last_dropout`` (0.1 by default: ElectraConfig's), the multiple-choice head's."""
    name = config.get("_name_or_path")
    return dict(
        hidden_dropout=probability(config, name, "hidden_dropout_prob", 0.1),
        attention_dropout=probability(config, name, "attention_probs_dropout_prob", 0.1),
        classifier_dropout=probability(config, name, "classifier_dropout", None),
        extra=(("summary_last_dropout", probability(config, name, "summary_last_dropout", 0.1) or 0.0),),
    )


REPLAY = Replay(
    embeddings=trace_embeddings,
    layer=trace_layer,
    classify=lambda tr, m, h, pooler_trains: trace_dense_head(
        tr, m, tr.view(h, tr.batch * m.hidden), act="gelu", input_dropout=tr.cond.head_dropout
    ),
    choose=lambda tr, m, h, pooler_trains: trace_dense_head(
        tr,
        m,
        tr.view(h, tr.batch * m.hidden),
        act="gelu",
        input_dropout=0.0,
        rate=tr.cond.rate("summary_last_dropout", 0.1),
    ),
    conditions=conditions,
    embedding_tensors=lambda m: 5 + (2 if m.width != m.hidden else 0),  # + embeddings_project's weight and bias
    layer_tensors=layer_tensors,
    head_tensors=lambda m: 4,
)

FAMILY = Family(
    "electra",
    "ELECTRA",
    ("electra",),
    read,
    embeddings,
    layer_params,
    layer_flops,
    embedding_flops=embedding_flops,
    pooler=False,
    head_params=dense_head_params,
    head_flops=dense_head_flops,
    replay=REPLAY,
)
