"""Base-model shapes: presets and Hugging Face ``config.json`` files (pure Python).

N_base = (V + P + Y)·d + 2d + L·(4d² + 2·d·d_ff + 9d + d_ff) + d² + d   (SPEC section 2)
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class BaseModel:
    """The shape of a BERT-family encoder, as far as counting needs it."""

    name: str
    hidden: int  # d
    layers: int  # L
    heads: int  # h
    intermediate: int  # d_ff
    vocab: int = 30522  # V
    positions: int = 512  # P
    token_types: int = 2  # Y

    def __post_init__(self) -> None:
        for field in ("hidden", "layers", "heads", "intermediate", "vocab", "positions", "token_types"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"model {self.name!r}: {field} must be a positive integer, got {value!r}")
        if self.hidden % self.heads:
            raise ValueError(f"model {self.name!r}: hidden size {self.hidden} is not divisible by {self.heads} heads")

    def as_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, BaseModel] = {
    m.name: m
    for m in (
        BaseModel("bert-base-uncased", hidden=768, layers=12, heads=12, intermediate=3072),
        BaseModel("bert-large-uncased", hidden=1024, layers=24, heads=16, intermediate=4096),
        BaseModel("minilm-l6-h384", hidden=384, layers=6, heads=12, intermediate=1536),
        BaseModel("bert-base-cased", hidden=768, layers=12, heads=12, intermediate=3072, vocab=28996),
        BaseModel("bert-base-multilingual-cased", hidden=768, layers=12, heads=12, intermediate=3072, vocab=119547),
        BaseModel("bert-tiny", hidden=128, layers=2, heads=2, intermediate=512),
    )
}
ALIASES = {
    "bert-base": "bert-base-uncased",
    "bert-large": "bert-large-uncased",
    "minilm": "minilm-l6-h384",
    "all-minilm-l6-v2": "minilm-l6-h384",
    "sentence-transformers/all-MiniLM-L6-v2": "minilm-l6-h384",
    "google-bert/bert-base-uncased": "bert-base-uncased",
    "google-bert/bert-large-uncased": "bert-large-uncased",
}
DEFAULT_MODEL = "bert-base-uncased"


def from_hf_config(config: dict, name: str = "custom") -> BaseModel:
    """Read the fields of a Hugging Face BERT ``config.json`` (already parsed)."""
    try:
        return BaseModel(
            name=name,
            hidden=config["hidden_size"],
            layers=config["num_hidden_layers"],
            heads=config["num_attention_heads"],
            intermediate=config["intermediate_size"],
            vocab=config["vocab_size"],
            positions=config.get("max_position_embeddings", 512),
            token_types=config.get("type_vocab_size", 2),
        )
    except KeyError as e:
        raise ValueError(f"config {name!r} lacks the field {e.args[0]!r}") from None


def load_model(spec: str) -> BaseModel:
    """A preset name, or a path to a HF ``config.json`` (or to a folder holding one)."""
    key = ALIASES.get(spec, spec)
    if key in PRESETS:
        return PRESETS[key]
    path = os.path.join(spec, "config.json") if os.path.isdir(spec) else spec
    if not (path.endswith(".json") or os.path.exists(path)):
        raise ValueError(f"unknown model preset {spec!r} (presets: {', '.join(PRESETS)}; or give a config.json path)")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except FileNotFoundError:
        raise ValueError(f"model config not found: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"model config {path} is not valid JSON: {e}") from None
    if not isinstance(config, dict):
        raise ValueError(f"model config {path} is not a JSON object")
    name = config.get("_name_or_path") or os.path.basename(os.path.dirname(os.path.abspath(path))) or "custom"
    return from_hf_config(config, name=str(name))
