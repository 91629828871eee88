"""The shape fields of ModernBERT's published config.json files (Hugging Face hub), read through the family like any
user's config.json; tests/test_families.py builds each with ``AutoModel.from_config`` and checks the published
parameter count. Data only: no imports (``pals_core.families.shapes`` reads it at import time)."""

_MODERNBERT = dict(
    model_type="modernbert",
    vocab_size=50368,
    max_position_embeddings=8192,
    global_attn_every_n_layers=3,
    local_attention=128,
    mlp_bias=False,
    attention_bias=False,
    norm_bias=False,
    classifier_bias=False,
    classifier_pooling="mean",
)

CONFIGS: dict[str, dict] = {
    "ModernBERT-base": dict(
        _MODERNBERT, hidden_size=768, num_hidden_layers=22, num_attention_heads=12, intermediate_size=1152
    ),
    "ModernBERT-large": dict(
        _MODERNBERT, hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, intermediate_size=2624
    ),
}

ALIASES: dict[str, str] = {f"answerdotai/{name}": name for name in CONFIGS}
