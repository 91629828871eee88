"""Base-model shapes: presets and Hugging Face ``config.json`` files (pure Python).

A ``BaseModel`` is the calculator's view of an encoder: its family (``pals_core.families.registry``, chosen
by the config's ``model_type``), the common shape fields and the family's own flags (``options``).
For BERT: N_base = (V + P + Y)·d + 2d + L·(4d² + 2·d·d_ff + 9d + d_ff) + d² + d   (docs/design.md "Base models, exact");
every other family's count is in its folder's ``description.py`` (``pals_core/families/<f>/``).
"""

from __future__ import annotations

import os

from ..pricing.activations import Conditions
from ..pricing.family import probability
from ..pricing.shape import BaseModel
from . import preset_configs
from .bert.presets import EMBEDDED_MODEL
from .registry import MODEL_TYPES, get_family_for

# The shape fields of the published config.json of common checkpoints (Hugging Face hub), read through their
# family like any user's config.json: each family folder's ``presets.py`` (pals_core/families/<f>/), in the order of
# ``pals_core.families.PACKAGES``; tests/test_families.py builds each with AutoModel.from_config and checks the
# published parameter count. ``ALIASES``: other names of the same checkpoints (the hub's).
PRESET_CONFIGS: dict[str, dict] = {}
ALIASES: dict[str, str] = {}


def _add_folder_presets() -> None:
    """The presets of the family folders (``pals_core/families/<f>/presets.py``: data only, read at import)."""
    configs, aliases = preset_configs()
    PRESET_CONFIGS.update(configs)
    ALIASES.update(aliases)


_add_folder_presets()
PRESETS: dict[str, BaseModel] = {
    name: get_family_for(c.get("model_type", "bert")).read(c, name) for name, c in PRESET_CONFIGS.items()
}  # each stored config read through its family
DEFAULT_MODEL = "bert-base-uncased"  # the calculator's model when none is named: the paper's BERT-base
TRAINER_DEFAULT = EMBEDDED_MODEL  # what ``pals-train`` trains when none is named (``TrainConfig.model`` None)


def trainer_model(spec: str) -> tuple[bool, str | None]:
    """Whether the model ``spec`` (a ``--model`` value: a preset, a config.json, a checkpoint folder) is one the
    trainer builds, and its ``pals-train --model`` value (None = the embedded model): what finished runs are matched
    by, and what ``pals-train`` trains for a tasks file's ``model:``."""
    if ALIASES.get(spec, spec) == EMBEDDED_MODEL:
        return True, None
    if os.path.isfile(os.path.join(spec, "config.json")):
        return True, spec.strip()
    return False, None


def from_hf_config(config: dict, name: str = "custom") -> BaseModel:
    """Read a Hugging Face ``config.json`` (already parsed) through the family its ``model_type`` names
    (no ``model_type``: BERT, as transformers' ``BertConfig``). An unsupported ``model_type`` is refused with
    a ``ValueError`` naming the supported ones — never counted as BERT. So is an attention implementation
    (``attn_implementation`` / ``_attn_implementation``; none = transformers' default) other than those its family's
    trunk runs and is priced for (``Family.attention``), and a ``pad_token_id`` (default: the family's; a family
    whose padding row is fixed: that row, ``Family.padding_idx``) outside the vocabulary (transformers cannot build
    the embeddings); the family's ``read`` refuses the options it does not model."""
    family = get_family_for(config.get("model_type", "bert"))
    attention = config.get("_attn_implementation") or config.get("attn_implementation")
    if attention is not None and attention not in family.attention:
        raise ValueError(
            f"config {name!r}: attn_implementation {attention!r} is not supported for {family.title} "
            f"(supported: {', '.join(family.attention)})"
        )
    fixed = family.padding_idx  # a family whose padding row is fixed (MPNet) does not read pad_token_id
    pad, vocab = config.get("pad_token_id", family.pad_token_id) if fixed is None else fixed, config.get("vocab_size")
    if pad is not None and (isinstance(pad, bool) or not isinstance(pad, int)):
        raise ValueError(f"config {name!r}: pad_token_id is {pad!r}; it takes an integer (or null)")
    if isinstance(pad, int) and isinstance(vocab, int) and vocab > 0 and not -vocab <= pad < vocab:
        what = (
            "pad_token_id" if fixed is None else f"{family.title}'s padding index (fixed, whatever pad_token_id says)"
        )
        raise ValueError(
            f"config {name!r}: {what} {pad} is outside the vocabulary (vocab_size {vocab}; "
            "transformers cannot build the embeddings)"
        )
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
    from ..atomic import read_json_file  # a file someone gives: not loaded at start-up (pals-budget's speed)

    config = read_json_file(path, "model config")
    if not isinstance(config, dict):
        raise ValueError(f"model config {path} is not a JSON object")
    if config.get("auto_map"):
        raise ValueError(
            f"model config {path} names custom modelling code (auto_map: "
            f"{', '.join(map(str, config['auto_map']))}): its parameters are not the family's to count"
        )
    if "model_type" not in config:
        raise ValueError(
            f"model config {path} has no model_type (transformers' AutoConfig refuses it too): "
            'add the family\'s, e.g. "model_type": "bert"'
        )
    return config


def load_model(spec: str) -> BaseModel:
    """A preset name, or a path to a HF ``config.json`` (or to a folder holding one)."""
    key = ALIASES.get(spec, spec)
    presets = PRESETS
    if key in presets:
        return presets[key]
    path = config_path(spec)
    if not (path.endswith(".json") or os.path.exists(path)):
        raise ValueError(f"unknown model preset {spec!r} (presets: {', '.join(presets)}; or give a config.json path)")
    config = read_config(path)
    name = config.get("_name_or_path") or os.path.basename(os.path.dirname(os.path.abspath(path))) or "custom"
    return from_hf_config(config, name=str(name))


def conditions_from_config(config: dict, **kw) -> Conditions:
    """The dropout probabilities and attention implementation a HF ``config.json`` (parsed) gives the model
    (docs/design.md "Memory (bytes)"): BERT's field names unless the family's ``Replay.conditions`` reads its own
    (DistilBERT, DeBERTa, ModernBERT, MPNet); ``kw`` overrides any field."""
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
            fields.update(
                hidden_dropout=probability(config, name, "hidden_dropout_prob", 0.1),
                attention_dropout=probability(config, name, "attention_probs_dropout_prob", 0.1),
                classifier_dropout=probability(config, name, "classifier_dropout", None),
            )
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
