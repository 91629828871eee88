"""``BaseModel``: the calculator's view of an encoder's shape (pure Python). Presets and config.json reading are in
``pals_core/families/shapes.py``; each family's counts in its folder's ``description.py`` (``pals_core/families/<f>/``) (both read
this module, which reads neither)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .limits import MAX_LAYERS, MAX_WIDTH, check_at_most


@dataclass(frozen=True)
class BaseModel:
    """The shape of an encoder, as far as counting needs it (fields of families without them keep their defaults:
    ``token_types`` 0 = no token-type embeddings; ``positions`` 0 = no absolute position embeddings)."""

    name: str
    hidden: int  # d
    layers: int  # L
    heads: int  # h
    intermediate: int  # d_ff
    vocab: int = 30522  # V
    positions: int = 512  # P
    token_types: int = 2  # Y
    family: str = "bert"  # a key of pals_core.families.registry.FAMILIES
    embedding: int | None = None  # E, the width of the embedding tables when it differs from d (ELECTRA, DeBERTa)
    options: tuple = ()  # the family's own config flags, sorted (name, value) pairs (see its module)

    def __post_init__(self) -> None:
        for field in ("hidden", "layers", "heads", "intermediate", "vocab"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"model {self.name!r}: {field} must be a positive integer, got {value!r}")
        for field in ("positions", "token_types"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"model {self.name!r}: {field} must be a non-negative integer, got {value!r}")
        if self.embedding is not None and (
            not isinstance(self.embedding, int) or isinstance(self.embedding, bool) or self.embedding < 1
        ):
            raise ValueError(f"model {self.name!r}: embedding size must be a positive integer, got {self.embedding!r}")
        check_at_most(f"model {self.name!r}: layers", self.layers, MAX_LAYERS)
        for field in ("hidden", "heads", "intermediate", "vocab", "positions", "token_types", "embedding"):
            if getattr(self, field) is None:
                continue
            check_at_most(f"model {self.name!r}: {field}", getattr(self, field), MAX_WIDTH)
        if self.hidden % self.heads:
            raise ValueError(f"model {self.name!r}: hidden size {self.hidden} is not divisible by {self.heads} heads")

    def as_dict(self) -> dict:
        out = asdict(self)
        out["options"] = dict(self.options)
        return out

    @property
    def width(self) -> int:
        """E: the width of the embedding tables (d unless the family projects them)."""
        return self.embedding if self.embedding is not None else self.hidden

    def option(self, key: str, default: Any = None) -> Any:
        """A family flag read from the config (``options``)."""
        for k, v in self.options:
            if k == key:
                return v
        return default
