"""The shape fields of DeBERTa-v3's published config.json files (Hugging Face hub), read through the family like any
user's config.json; tests/test_families.py builds each with ``AutoModel.from_config`` and checks the published
parameter count. Data only: no imports (``pals_core.families.shapes`` reads it at import time)."""

_DEBERTA_V3 = dict(
    model_type="deberta-v2",
    vocab_size=128100,
    max_position_embeddings=512,
    type_vocab_size=0,
    relative_attention=True,
    position_buckets=256,
    max_relative_positions=-1,
    pos_att_type="p2c|c2p",
    share_att_key=True,
    position_biased_input=False,
    norm_rel_ebd="layer_norm",
)

CONFIGS: dict[str, dict] = {
    "deberta-v3-small": dict(
        _DEBERTA_V3, hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072
    ),
    "deberta-v3-base": dict(
        _DEBERTA_V3, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072
    ),
    "deberta-v3-large": dict(
        _DEBERTA_V3, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096
    ),
}

ALIASES: dict[str, str] = {f"microsoft/{name}": name for name in CONFIGS}
