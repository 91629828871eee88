"""The shape fields of ALBERT v2's published config.json files (Hugging Face hub: albert/albert-*-v2), read through
the family like any user's config.json. ``AutoModel.from_config`` builds albert-base-v2 with 11,683,584 parameters,
albert-large-v2 17,683,968, albert-xlarge-v2 58,724,864 and albert-xxlarge-v2 222,595,584 (tests/test_albert.py).
Data only: no imports (``pals_core.families.shapes`` reads it at import time)."""

_ALBERT_V2 = dict(
    model_type="albert",
    vocab_size=30000,
    embedding_size=128,
    max_position_embeddings=512,
    type_vocab_size=2,
    hidden_act="gelu_new",
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    classifier_dropout_prob=0.1,
    num_hidden_groups=1,
    inner_group_num=1,
)

CONFIGS: dict[str, dict] = {
    "albert-base-v2": dict(
        _ALBERT_V2, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072
    ),
    "albert-large-v2": dict(
        _ALBERT_V2, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096
    ),
    "albert-xlarge-v2": dict(
        _ALBERT_V2, hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192
    ),
    "albert-xxlarge-v2": dict(
        _ALBERT_V2, hidden_size=4096, num_hidden_layers=12, num_attention_heads=64, intermediate_size=16384
    ),
}

ALIASES: dict[str, str] = {f"albert/{name}": name for name in CONFIGS}  # the hub names (v1 has other dropout rates)
