"""Base-model shapes: presets and Hugging Face ``config.json`` files (pure Python).

A ``BaseModel`` is the calculator's view of an encoder: its family (``pals_core.budget.families``, chosen
by the config's ``model_type``), the common shape fields and the family's own flags (``options``).
For BERT: N_base = (V + P + Y)·d + 2d + L·(4d² + 2·d·d_ff + 9d + d_ff) + d² + d   (docs/design.md §2);
every other family's count is in its module under ``families/``.
"""
from __future__ import annotations

import os

from .activations import Conditions
from .shape import BaseModel  # noqa: F401  (re-exported: budget.models.BaseModel)


# The shape fields of the published config.json of common checkpoints (Hugging Face hub), read through their
# family like any user's config.json; tests/test_families.py builds each with AutoModel.from_config and checks
# the published parameter count.
_ROBERTA = dict(model_type="roberta", max_position_embeddings=514, type_vocab_size=1)
_DEBERTA_V3 = dict(model_type="deberta-v2", vocab_size=128100, max_position_embeddings=512, type_vocab_size=0,
                   relative_attention=True, position_buckets=256, max_relative_positions=-1, pos_att_type="p2c|c2p",
                   share_att_key=True, position_biased_input=False, norm_rel_ebd="layer_norm")
_MODERNBERT = dict(model_type="modernbert", vocab_size=50368, max_position_embeddings=8192, global_attn_every_n_layers=3,
                   local_attention=128, mlp_bias=False, attention_bias=False, norm_bias=False, classifier_bias=False,
                   classifier_pooling="mean")
PRESET_CONFIGS: dict[str, dict] = {
    "bert-base-uncased": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=30522),
    "bert-large-uncased": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, vocab_size=30522),
    "minilm-l6-h384": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536, vocab_size=30522),
    "bert-base-cased": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=28996),
    "bert-base-multilingual-cased": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                                         vocab_size=119547),
    "bert-tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512, vocab_size=30522),
    "roberta-base": dict(_ROBERTA, vocab_size=50265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "roberta-large": dict(_ROBERTA, vocab_size=50265, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                          intermediate_size=4096),
    "xlm-roberta-base": dict(_ROBERTA, model_type="xlm-roberta", vocab_size=250002, hidden_size=768, num_hidden_layers=12,
                             num_attention_heads=12, intermediate_size=3072),
    "xlm-roberta-large": dict(_ROBERTA, model_type="xlm-roberta", vocab_size=250002, hidden_size=1024, num_hidden_layers=24,
                              num_attention_heads=16, intermediate_size=4096),
    "distilbert-base-uncased": dict(model_type="distilbert", vocab_size=30522, dim=768, n_layers=6, n_heads=12, hidden_dim=3072,
                                    max_position_embeddings=512),
    "electra-small-discriminator": dict(model_type="electra", vocab_size=30522, embedding_size=128, hidden_size=256,
                                        num_hidden_layers=12, num_attention_heads=4, intermediate_size=1024, type_vocab_size=2),
    "electra-base-discriminator": dict(model_type="electra", vocab_size=30522, embedding_size=768, hidden_size=768,
                                       num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, type_vocab_size=2),
    "electra-large-discriminator": dict(model_type="electra", vocab_size=30522, embedding_size=1024, hidden_size=1024,
                                        num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, type_vocab_size=2),
    "deberta-v3-small": dict(_DEBERTA_V3, hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072),
    "deberta-v3-base": dict(_DEBERTA_V3, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "deberta-v3-large": dict(_DEBERTA_V3, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "ModernBERT-base": dict(_MODERNBERT, hidden_size=768, num_hidden_layers=22, num_attention_heads=12, intermediate_size=1152),
    "ModernBERT-large": dict(_MODERNBERT, hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, intermediate_size=2624),
    "mpnet-base": dict(model_type="mpnet", vocab_size=30527, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                       intermediate_size=3072, max_position_embeddings=514, relative_attention_num_buckets=32),
}



def _presets() -> dict[str, BaseModel]:
    """``PRESETS``: each stored config read through its family (built on first use: the families import this module)."""
    presets = globals().get("PRESETS")
    if presets is None:
        from .families import get_family_for

        presets = {name: get_family_for(c.get("model_type", "bert")).read(c, name) for name, c in PRESET_CONFIGS.items()}
        globals()["PRESETS"] = presets
    return presets


def __getattr__(name: str):
    if name == "PRESETS":
        return _presets()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

ALIASES = {
    "bert-base": "bert-base-uncased",
    "bert-large": "bert-large-uncased",
    "minilm": "minilm-l6-h384",
    "all-minilm-l6-v2": "minilm-l6-h384",
    "sentence-transformers/all-MiniLM-L6-v2": "minilm-l6-h384",
    "google-bert/bert-base-uncased": "bert-base-uncased",
    "google-bert/bert-large-uncased": "bert-large-uncased",
    "FacebookAI/roberta-base": "roberta-base",
    "FacebookAI/roberta-large": "roberta-large",
    "FacebookAI/xlm-roberta-base": "xlm-roberta-base",
    "FacebookAI/xlm-roberta-large": "xlm-roberta-large",
    "distilbert/distilbert-base-uncased": "distilbert-base-uncased",
    "google/electra-small-discriminator": "electra-small-discriminator",
    "google/electra-base-discriminator": "electra-base-discriminator",
    "google/electra-large-discriminator": "electra-large-discriminator",
    "microsoft/deberta-v3-small": "deberta-v3-small",
    "microsoft/deberta-v3-base": "deberta-v3-base",
    "microsoft/deberta-v3-large": "deberta-v3-large",
    "answerdotai/ModernBERT-base": "ModernBERT-base",
    "answerdotai/ModernBERT-large": "ModernBERT-large",
    "microsoft/mpnet-base": "mpnet-base",
    "all-mpnet-base-v2": "mpnet-base",
    "sentence-transformers/all-mpnet-base-v2": "mpnet-base",
}
DEFAULT_MODEL = "bert-base-uncased"


def from_hf_config(config: dict, name: str = "custom") -> BaseModel:
    """Read a Hugging Face ``config.json`` (already parsed) through the family its ``model_type`` names
    (no ``model_type``: BERT, as transformers' ``BertConfig``). An unsupported ``model_type`` is refused with
    a ``ValueError`` naming the supported ones — never counted as BERT. So is an attention implementation
    (``attn_implementation`` / ``_attn_implementation``; none = transformers' default) other than those its family's
    trunk runs and is priced for (``Family.attention``), and a ``pad_token_id`` (default: the family's; a family
    whose padding row is fixed: that row, ``Family.padding_idx``) outside the vocabulary (transformers cannot build
    the embeddings); the family's ``read`` refuses the options it does not model."""
    from .families import get_family_for

    family = get_family_for(config.get("model_type", "bert"))
    attention = config.get("_attn_implementation") or config.get("attn_implementation")
    if attention is not None and attention not in family.attention:
        raise ValueError(f"config {name!r}: attn_implementation {attention!r} is not supported for {family.title} "
                         f"(supported: {', '.join(family.attention)})")
    fixed = family.padding_idx  # a family whose padding row is fixed (MPNet) does not read pad_token_id
    pad, vocab = config.get("pad_token_id", family.pad_token_id) if fixed is None else fixed, config.get("vocab_size")
    if pad is not None and (isinstance(pad, bool) or not isinstance(pad, int)):
        raise ValueError(f"config {name!r}: pad_token_id is {pad!r}; it takes an integer (or null)")
    if isinstance(pad, int) and isinstance(vocab, int) and vocab > 0 and not -vocab <= pad < vocab:
        what = "pad_token_id" if fixed is None else f"{family.title}'s padding index (fixed, whatever pad_token_id says)"
        raise ValueError(f"config {name!r}: {what} {pad} is outside the vocabulary (vocab_size {vocab}; "
                         "transformers cannot build the embeddings)")
    try:
        shape = family.read(config, name)
    except KeyError as e:
        raise ValueError(f"config {name!r} lacks the field {e.args[0]!r}") from None
    conditions_from_config({**config, "_name_or_path": name})  # the dropout rates, checked for every entry point
    return shape


def config_path(spec: str) -> str:
    """``--model`` as a file: a folder means the config.json inside it."""
    return os.path.join(spec, "config.json") if os.path.isdir(spec) else spec


def read_config(path: str) -> dict:
    """A HF ``config.json`` parsed; ``ValueError`` with one line when it is missing, not a regular file, too large,
    not JSON, nested too deeply or not an object (``atomic.read_json_file``); when it names custom modelling code
    (``auto_map``: transformers would run the checkpoint's own classes, not the family's) or no ``model_type``
    (transformers' ``AutoConfig`` refuses it too)."""
    from ..atomic import read_json_file

    config = read_json_file(path, "model config")
    if not isinstance(config, dict):
        raise ValueError(f"model config {path} is not a JSON object")
    if config.get("auto_map"):
        raise ValueError(f"model config {path} names custom modelling code (auto_map: "
                         f"{', '.join(map(str, config['auto_map']))}): its parameters are not the family's to count")
    if "model_type" not in config:
        raise ValueError(f"model config {path} has no model_type (transformers' AutoConfig refuses it too): "
                         "add the family's, e.g. \"model_type\": \"bert\"")
    return config


def load_model(spec: str) -> BaseModel:
    """A preset name, or a path to a HF ``config.json`` (or to a folder holding one)."""
    key = ALIASES.get(spec, spec)
    presets = _presets()
    if key in presets:
        return presets[key]
    path = config_path(spec)
    if not (path.endswith(".json") or os.path.exists(path)):
        raise ValueError(f"unknown model preset {spec!r} (presets: {', '.join(presets)}; or give a config.json path)")
    config = read_config(path)
    name = config.get("_name_or_path") or os.path.basename(os.path.dirname(os.path.abspath(path))) or "custom"
    return from_hf_config(config, name=str(name))


def conditions_from_config(config: dict, **kw) -> Conditions:
    """The dropout probabilities and attention implementation a HF ``config.json`` (parsed) gives the model (docs/design.md §9):
    BERT's field names unless the family's ``Replay.conditions`` reads its own (DistilBERT, DeBERTa, ModernBERT, MPNet);
    ``kw`` overrides any field."""
    from .families import MODEL_TYPES
    from .families.base import probability

    impl = config.get("_attn_implementation") or config.get("attn_implementation") or "sdpa"
    fields = dict(attention=impl if impl in ("sdpa", "eager") else "sdpa")
    model_type = config.get("model_type", "bert")
    family = MODEL_TYPES.get(model_type) if isinstance(model_type, str) else None
    if family is None and "n_layers" in config:  # DistilBERT's names without a model_type
        family = MODEL_TYPES["distilbert"]
    replay = family.replay if family is not None else None
    try:
        if replay is not None and replay.conditions is not None:
            fields.update(replay.conditions(config))
        else:
            name = config.get("_name_or_path")
            fields.update(hidden_dropout=probability(config, name, "hidden_dropout_prob", 0.1),
                          attention_dropout=probability(config, name, "attention_probs_dropout_prob", 0.1),
                          classifier_dropout=probability(config, name, "classifier_dropout", None))
    except TypeError as e:  # a family's rate of a JSON type its reader does not check: bad input, one line
        raise ValueError(f"a dropout rate in the config is not a number ({e})") from None
    return Conditions(**{**fields, **kw})


def conditions_for_model(spec: str) -> Conditions:
    """The conditions of ``--model``: a preset's stored config read as a config.json (the family's defaults where it
    names no rate); a config.json (or a folder holding one): what it says; anything else: the defaults."""
    preset = PRESET_CONFIGS.get(ALIASES.get(spec, spec))
    if preset is not None:
        return conditions_from_config(preset)
    path = config_path(spec)
    if not (path.endswith(".json") and os.path.isfile(path)):
        return Conditions()
    try:
        config = read_config(path)
    except (OSError, ValueError):
        return Conditions()
    return conditions_from_config(config)
