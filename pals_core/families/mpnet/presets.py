"""The shape fields of MPNet's published config.json files (Hugging Face hub), read through the family like any
user's config.json; tests/test_families.py builds each with ``AutoModel.from_config`` and checks the published
parameter count. Data only: no imports (``pals_core.families.shapes`` reads it at import time)."""

CONFIGS: dict[str, dict] = {
    "mpnet-base": dict(
        model_type="mpnet",
        vocab_size=30527,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=514,
        relative_attention_num_buckets=32,
    ),
}

ALIASES: dict[str, str] = {
    "microsoft/mpnet-base": "mpnet-base",
    "all-mpnet-base-v2": "mpnet-base",
    "sentence-transformers/all-mpnet-base-v2": "mpnet-base",
}
