"""BERT (MiniLM included) and the RoBERTa family (RoBERTa, XLM-R, CamemBERT): the same layer, SPEC §2.

    embeddings (V + P + Y)·d + 2d;   layer 4d² + 2·d·d_ff + 9d + d_ff;   pooler d² + d
    layer FLOPs 2n·(4d² + 2·d·d_ff) + 4n²·d;   head Linear(d, C) on the pooled first token

Refused (one line): ``is_decoder`` / ``add_cross_attention`` (a causal decoder, cross-attention layers: not the
encoder the trunk runs), ``type_vocab_size`` 0 (the embeddings look up token type 0), an activation the memory replay
does not model (``hidden_act``: ``budget.activations.ACTIVATIONS``; other activations are a memory option).
RoBERTa's P = ``max_position_embeddings`` (514: positions start after the padding index) and Y = 1.
``RobertaForSequenceClassification``'s head is dense(d, d) + tanh + out_proj(d, C) on <s>: the same maps as
the pooler (dense + tanh on the first token) followed by Linear(d, C). Here the dense is the base model's
pooler, shared by the tasks by default (``per_task_pooler`` gives each task its own, which is exactly
RoBERTa's head); ``AutoModel`` (``RobertaModel`` with its pooler) is what N_base counts.
"""
from __future__ import annotations

from ..method import bert_layer_flops, bert_layer_params
from ..shape import BaseModel
from .base import Family, activation_option, embedding_tables


def read_bert(config: dict, name: str, *, family: str = "bert", positions: int = 512, token_types: int = 2,
              embedding=None) -> BaseModel:
    """BERT-shaped layers (BERT, RoBERTa, ELECTRA: ``embedding`` E when it differs from d)."""
    for flag in ("is_decoder", "add_cross_attention"):
        if config.get(flag):
            raise ValueError(f"config {name!r}: {flag} is true (a decoder; the project prices and builds encoders only)")
    types = config.get("type_vocab_size", token_types)
    if types == 0:
        raise ValueError(f"config {name!r}: type_vocab_size 0 (the embeddings look up token type 0 in an empty table)")
    options = activation_option(config, name, "hidden_act")
    return BaseModel(name=name, hidden=config["hidden_size"], layers=config["num_hidden_layers"],
                     heads=config["num_attention_heads"], intermediate=config["intermediate_size"],
                     vocab=config["vocab_size"], positions=config.get("max_position_embeddings", positions),
                     token_types=types, family=family, embedding=embedding, options=tuple(sorted(options.items())))


def embeddings(m: BaseModel, paper: bool) -> int:
    """(V + P + Y)·d + 2d."""
    return embedding_tables(m, m.vocab + m.positions + m.token_types, paper)


def layer_params(m: BaseModel, i: int, paper: bool) -> int:
    return bert_layer_params(m, paper)


def layer_flops(m: BaseModel, i: int, n: int) -> int:
    return bert_layer_flops(m, n)


BERT = Family("bert", "BERT", ("bert",), read_bert, embeddings, layer_params, layer_flops)
ROBERTA = Family("roberta", "RoBERTa / XLM-R / CamemBERT", ("roberta", "xlm-roberta", "camembert"),
                 lambda c, name: read_bert(c, name, family="roberta", positions=514, token_types=1),
                 embeddings, layer_params, layer_flops, pad_token_id=1)
