"""DistilBERT (``model_type`` distilbert): BERT's layer under other names, no token types, no pooler.

Config fields: ``dim`` = d, ``n_layers`` = L, ``n_heads`` = h, ``hidden_dim`` = d_ff.
    embeddings (V + P)·d + 2d;   layer 4d² + 2·d·d_ff + 9d + d_ff (q_lin, k_lin, v_lin, out_lin, sa_layer_norm,
    lin1, lin2, output_layer_norm);   no pooler
Task head (``DistilBertForSequenceClassification``): pre_classifier Linear(d, d) + ReLU, classifier Linear(d, C)
on the first token, both per task: d² + d + d·C + C; FLOPs 2d² + 2·d·C.
"""
from __future__ import annotations

from ..shape import BaseModel
from .base import Family, activation_option, dense_head_flops, dense_head_params, embedding_tables
from .bert import layer_flops, layer_params


def read(config: dict, name: str) -> BaseModel:
    """``activation`` is the FFN's (``hidden_act`` option); ``sinusoidal_pos_embds`` only initialises the position
    table (transformers 5.23 keeps it a trained parameter): nothing to count differently."""
    options = activation_option(config, name, "activation")
    return BaseModel(name=name, hidden=config["dim"], layers=config["n_layers"], heads=config["n_heads"],
                     intermediate=config["hidden_dim"], vocab=config["vocab_size"],
                     positions=config.get("max_position_embeddings", 512), token_types=0, family="distilbert",
                     options=tuple(sorted(options.items())))


def embeddings(m: BaseModel, paper: bool) -> int:
    """(V + P)·d + 2d."""
    return embedding_tables(m, m.vocab + m.positions, paper)


DISTILBERT = Family("distilbert", "DistilBERT", ("distilbert",), read, embeddings, layer_params, layer_flops,
                    pooler=False, head_params=dense_head_params, head_flops=dense_head_flops, token_types=False)
