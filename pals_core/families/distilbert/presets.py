"""The shape fields of DistilBERT's published config.json files (Hugging Face hub), read through the family like any
user's config.json; tests/test_families.py builds each with ``AutoModel.from_config`` and checks the published
parameter count. Data only: no imports (``pals_core.families.shapes`` reads it at import time)."""

CONFIGS: dict[str, dict] = {
    "distilbert-base-uncased": dict(
        model_type="distilbert",
        vocab_size=30522,
        dim=768,
        n_layers=6,
        n_heads=12,
        hidden_dim=3072,
        max_position_embeddings=512,
    ),
}

ALIASES: dict[str, str] = {"distilbert/distilbert-base-uncased": "distilbert-base-uncased"}
