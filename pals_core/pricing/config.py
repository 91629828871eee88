"""``AdapterConfig``: one design — which adapter, where, how large. Pure Python.

The same dataclass drives the calculator (``pals_core.budget``) and the torch modules
(``pals_core.MultiTaskBert``), so a design chosen in one is the design built by the other.
"""

# No ``from __future__ import annotations`` here: the fields' types are evaluated once, at import, from this
# module's bytecode, instead of ``typing.get_type_hints`` compiling each of their strings when a CLI builds its flags
# (``flags``: about half a millisecond of every ``pals-budget``; benchmarks/bench_budget.py).
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..flags import to_argv

Location = str | Sequence[int] | None
NAMED_LOCATIONS = ("all", "top", "bottom")


def parse_location(text: Any) -> Location:
    """'all' | 'top' | 'bottom' as they are; '3' or '0,2,5' (or a sequence of ints) → a tuple of layer indices.
    Range checks need the model (``resolve_layers``)."""
    if text is None:
        return None
    if isinstance(text, str):
        word = text.strip()
        if word in NAMED_LOCATIONS:
            return word
        parts = [p.strip() for p in word.split(",") if p.strip()]
        if not parts or not all(p.lstrip("-").isdigit() for p in parts):
            raise ValueError(f"location {text!r} is not all, top, bottom or a list of layer indices such as 0,2,5")
        return tuple(int(p) for p in parts)
    if isinstance(text, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) for i in text):
        return tuple(text)
    raise ValueError(f"location {text!r} is not all, top, bottom or a list of layer indices")


def format_location(location: Location) -> str:
    """The label of a location: 'all', 'top', 'bottom' or '0,2,5' (None = all)."""
    if location is None:
        return "all"
    if isinstance(location, str):
        return location
    return ",".join(str(i) for i in location)


@dataclass
class AdapterConfig:
    method: str = field(default="pals", metadata={"help": "Adapter method", "choices": "method", "always": True})
    d_s: int | None = field(
        default=None,
        metadata={
            "help": "Adapter size d_s (bottleneck / rank / projected width). None for the sizeless methods (shared, lhuc, ia3, bert_layer_top)."
        },
    )
    location: Location = field(
        default=None,
        metadata={
            "help": "Adapted layers: all, top (last ⌊L/2⌋), bottom (first ⌊L/2⌋) or 0-based indices i,j,…; "
            "none = all. Top-of-BERT methods take none.",
            "parse": parse_location,
            "format": format_location,
            "metavar": "LAYERS",
        },
    )
    heads: int = field(
        default=12,
        metadata={"help": "h_s, attention heads inside the adapter (PALs, proj_attn_top); d_s must divide by it."},
    )
    n_top: int = field(
        default=6, metadata={"help": "N_top, layers in the proj_attn_top / proj_ffn_top stack (paper: 6)."}
    )
    ffn_ratio: int = field(
        default=2, metadata={"help": "r, inner FFN width f = r·d_s for proj_ffn_top (paper: f = 408 at d_s = 204)."}
    )
    per_task_pooler: bool = field(
        default=False, metadata={"help": "Give every task its own pooler (+d² + d per task)."}
    )
    lora_alpha: float | None = field(
        default=None, metadata={"help": "LoRA scale α (update scaled by α/d_s); None = d_s, i.e. scale 1."}
    )
    freeze_trunk: bool | None = field(
        default=None,
        metadata={
            "help": "--freeze-trunk: train only the task-specific weights (adapters, heads, per-task poolers); "
            "--train-trunk: fine-tune the base model too (CA-MTL: above its frozen layers).",
            "negative": "--train-trunk",
            "default_text": "trunk",  # each method's own: methods/registry.py registers the words
        },
    )
    # --- the released PALs code (AsaCooperStickland/Bert-n-Pals, which produced the paper's Table 3) ----------------
    adapter_gelu: bool = field(
        default=True,
        metadata={
            "help": "PALs: TS(h) = GELU(V^D·Attn(V^E·h)); low_rank: V^D·GELU(V^E·h) — the released code (True); "
            "False = the paper's text, no activation."
        },
    )
    pal_attention_dropout: float = field(
        default=0.1,
        metadata={
            "help": "PALs: dropout on the PAL attention probabilities in training (released code: 0.1; 0 = none)."
        },
    )
    proj_attn_top_residual: bool = field(
        default=False,
        metadata={
            "help": "proj_attn_top: H + V^D·stack(V^E·H) (True, V^D zero-initialised: the base model at initialisation) "
            "or V^D·stack(V^E·H) replacing H (False, the released code; V^D BERT-initialised)."
        },
    )
    bert_layer_top_init: str = field(
        default="fresh",
        metadata={
            "help": "bert_layer_top: a fresh randomly initialised layer (the released code) or a copy of the trunk's last "
            "layer.",
            "choices": lambda: ("fresh", "copy"),
        },
    )
    # --- CA-MTL (Pilault et al., ICLR 2021), as the authors released it; method `ca_mtl` only (pals_core/methods/ca_mtl)
    # `location` picks the layers with conditional attention (released: all).
    task_embedding_dim: int | None = field(
        default=None,
        metadata={
            "help": "CA-MTL: d_z, width of each task's embedding z_t and of the shared transformation z_t → W_z z_t + b_z "
            "that every conditional module reads. None = the hidden size d (the released CA-MTL code)."
        },
    )
    frozen_layers: int | None = field(
        default=None,
        metadata={
            "help": "CA-MTL: F, the base model's embedding layer and encoder layers 0..F−1 are frozen. None = ⌊L/2⌋ − 1 "
            "(the released setting: layers 0–4 of 12); 0 = nothing frozen."
        },
    )
    cond_norm_layers: int | None = field(
        default=None,
        metadata={
            "help": "CA-MTL: how many of the top layers get the conditional LayerNorm (gain-only, both LayerNorms). "
            "None = ⌊L/2⌋ (the released code: the top half)."
        },
    )
    cond_attn_max_len: int = field(
        default=128,
        metadata={
            "help": "CA-MTL: M, the positions the block-diagonal conditional attention bias covers (an M × m matrix, "
            "block size m = ⌈M/N_b⌉, as released; positions ≥ M get no bias)."
        },
    )
    cond_attn_blocks: int = field(
        default=6,
        metadata={
            "help": "CA-MTL: N_b, blocks of the block-diagonal conditional attention bias (M·m weights per layer)."
        },
    )
    cond_adapter_layers: int = field(
        default=1,
        metadata={
            "help": "CA-MTL: how many of the top layers are re-initialised adapter layers with the conditional "
            "bottleneck of width d_s and a third conditional LayerNorm (released: the top layer)."
        },
    )

    def __post_init__(self) -> None:
        if isinstance(self.location, (str, list, tuple)):
            self.location = parse_location(self.location)

    @classmethod
    def default(cls, name: str) -> Any:
        """The declared default of one field (the one place it is written)."""
        return next(f.default for f in fields(cls) if f.name == name)

    def to_argv(self) -> list[str]:
        """Flags (``--d-s 204 --location top …``) that give this design on any of the three CLIs."""
        return to_argv(self)

    def as_dict(self) -> dict:
        d = asdict(self)
        if isinstance(d["location"], tuple):
            d["location"] = list(d["location"])
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "AdapterConfig":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def design_label(method: str, location: str | None) -> str:
    """``pals @ top``; the method alone where there is no location."""
    return method if location is None else f"{method} @ {location}"
