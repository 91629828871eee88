"""The shape fields of ELECTRA's discriminators's published config.json files (Hugging Face hub), read through the family like any
user's config.json; tests/test_families.py builds each with ``AutoModel.from_config`` and checks the published
parameter count. Data only: no imports (``pals_core.families.shapes`` reads it at import time)."""

_ELECTRA = dict(model_type="electra", vocab_size=30522, type_vocab_size=2)

CONFIGS: dict[str, dict] = {
    "electra-small-discriminator": dict(
        _ELECTRA,
        embedding_size=128,
        hidden_size=256,
        num_hidden_layers=12,
        num_attention_heads=4,
        intermediate_size=1024,
    ),
    "electra-base-discriminator": dict(
        _ELECTRA,
        embedding_size=768,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "electra-large-discriminator": dict(
        _ELECTRA,
        embedding_size=1024,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
    ),
}

ALIASES: dict[str, str] = {f"google/{name}": name for name in CONFIGS}
