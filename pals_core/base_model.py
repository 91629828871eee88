"""Which base model a run trains: the embedded MiniLM (default), a local HF folder of any supported family
(BERT, RoBERTa / XLM-R / CamemBERT, DistilBERT, ELECTRA, DeBERTa-v2/v3, ModernBERT, MPNet, ALBERT; read with its own
tokenizer), or ``"tiny"``.

``"tiny"`` is a randomly initialised BERT (hidden 32, 2 layers, 2 heads, d_ff 64) with MiniLM's
vocabulary and tokenizer — for tests and smoke runs, where it learns little but runs in seconds.
"""

from __future__ import annotations

import os

from .data.load import TINY, minilm_path
from .families.bert.presets import EMBEDDED_MODEL
from .families.shapes import conditions_for_model, conditions_from_config, from_hf_config, load_model, read_config
from .pricing.shape import BaseModel


def tiny_config_dict() -> dict:
    """The HF ``BertConfig`` fields of the tiny random BERT (vocabulary: MiniLM's 30,522 tokens)."""
    return {
        "model_type": "bert",
        "vocab_size": 30522,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
    }


def model_shape(model: str | None) -> BaseModel:
    """The calculator's view of the base model (read from ``config.json``; no weights loaded)."""
    if model == TINY:
        return from_hf_config(tiny_config_dict(), name=TINY)
    if model is None:  # the embedded checkpoint, by its one name (its config.json says nreimers/MiniLM-L6-H384-uncased)
        return from_hf_config(read_config(os.path.join(minilm_path(), "config.json")), name=EMBEDDED_MODEL)
    return load_model(os.path.join(model, "config.json"))


def model_conditions(model: str | None):
    """The dropout and attention implementation the trained model's config gives it (``pricing.activations.Conditions``:
    what the calculator's memory and step time replay)."""
    if model == TINY:
        return conditions_from_config(tiny_config_dict())
    return conditions_for_model(minilm_path() if model is None else model)
