"""What a family of encoders is to the calculator: the ``Family`` record (pure Python, no torch).

A family is one architecture that several ``model_type`` values may share (RoBERTa, XLM-R, CamemBERT).
Its record says, from a ``BaseModel`` alone, how many parameters and forward FLOPs each part of the base
model holds — the embeddings, each layer i (layers may differ: ModernBERT's layer 0 has no attention norm,
DeBERTa's layer 0 carries the optional convolution), what follows the last layer, the pooler, the task
head its ``…ForSequenceClassification`` puts on top — how a ``config.json`` maps onto a ``BaseModel``, and
which methods cannot apply to it (one line each). Its torch mirror is ``pals_core/trunks/<family>.py``;
``tests/test_exactness.py`` holds both to the parameter and to the FLOP.

Counting conventions (SPEC §3): ``paper=True`` drops every bias vector and every LayerNorm parameter.
FLOPs: matmuls only, 2 per multiply-add (FlopCounterMode's convention, SPEC §5).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..method import layer_norm, linear, mm
from ..shape import BaseModel


def no_count(*_) -> int:
    """A part the family does not have."""
    return 0


def linear_head_params(m: BaseModel, labels: int, paper: bool) -> int:
    """Linear(d, C) on the shared pooler's output: d·C + C."""
    return linear(m.hidden, labels, paper=paper).c


def linear_head_flops(m: BaseModel, labels: int) -> int:
    """2·d·C."""
    return mm(1, m.hidden, labels).c


def dense_head_params(m: BaseModel, labels: int, paper: bool) -> int:
    """A per-task dense layer then Linear(d, C) (families whose base model holds no pooler): d² + d + d·C + C."""
    return (linear(m.hidden, m.hidden, paper=paper) + linear(m.hidden, labels, paper=paper)).c


def dense_head_flops(m: BaseModel, labels: int) -> int:
    """2d² + 2·d·C."""
    return (mm(1, m.hidden, m.hidden) + mm(1, m.hidden, labels)).c


def pooler_params(m: BaseModel, paper: bool) -> int:
    """BERT's pooler Linear(d, d) (+ tanh): d² + d."""
    return linear(m.hidden, m.hidden, paper=paper).c


def activation_option(config: dict, name: str, field: str, option: str = "hidden_act", default: str = "gelu") -> dict:
    """The activation ``config[field]`` names, as the ``option`` of a ``BaseModel`` when it is not ``default`` ({}
    otherwise); refused (``ValueError``, one line) when the memory replay does not know what it keeps or it holds
    parameters (``budget.activations.ACTIVATIONS``)."""
    from ..activations import check_activation

    value = check_activation(config.get(field, default), field, f"config {name!r}")
    return {} if value == default else {option: value}


def embedding_size(config: dict, name: str, hidden: int) -> int:
    """E = ``embedding_size`` (d when absent); null is refused: transformers cannot build a table of width None."""
    e = config.get("embedding_size", hidden)
    if e is None:
        raise ValueError(f"config {name!r}: embedding_size is null (give a width, or leave the field out for hidden_size)")
    return e


def embedding_tables(m: BaseModel, rows: int, paper: bool, *, norm_width: Optional[int] = None) -> int:
    """``rows`` lookup rows of width E and the embedding LayerNorm (width E unless given)."""
    return rows * m.width + layer_norm(norm_width if norm_width is not None else m.width, paper=paper).c


@dataclass(frozen=True)
class Family:
    """One encoder architecture as the calculator counts it (see the module docstring)."""

    name: str
    title: str
    model_types: tuple[str, ...]  # the config.json ``model_type`` values it covers
    read: Callable[[dict, str], BaseModel]  # (config.json dict, name) -> BaseModel; KeyError = a field is missing
    embedding_params: Callable[[BaseModel, bool], int]  # every embedding table, its norm, its projection
    layer_params: Callable[[BaseModel, int, bool], int]  # (model, layer i, paper)
    layer_flops: Callable[[BaseModel, int, int], int]  # (model, layer i, n tokens)
    embedding_flops: Callable[[BaseModel, int], int] = no_count  # (model, n): e.g. ELECTRA's E→d projection
    final_params: Callable[[BaseModel, bool], int] = no_count  # after the last layer (ModernBERT's final norm)
    pooler: bool = True  # the base model holds a pooler Linear(d, d) + tanh, shared by the tasks by default
    head_params: Callable[[BaseModel, int, bool], int] = linear_head_params  # one task's head (C labels)
    head_flops: Callable[[BaseModel, int], int] = linear_head_flops
    token_types: bool = True  # the trunk reads token_type_ids
    refuses: tuple[tuple[str, str], ...] = ()  # (method, one-line reason) for methods that cannot apply
    attention: tuple[str, ...] = ("sdpa", "eager")  # the attention implementations its trunk runs (and is priced for)
    pad_token_id: int = 0  # transformers' default for its configs (the embeddings' padding row)
    notes: str = ""  # what the family's counts assume, for the documentation

    def refusal(self, method: str) -> Optional[str]:
        """Why ``method`` cannot apply to this family (None = it can)."""
        return dict(self.refuses).get(method)

    def base_params(self, m: BaseModel, paper: bool) -> int:
        """N_base = embeddings + Σ_i layer_i + final + pooler: ``sum(p.numel())`` of ``AutoModel.from_config``."""
        return (self.embedding_params(m, paper) + sum(self.layer_params(m, i, paper) for i in range(m.layers))
                + self.final_params(m, paper) + (pooler_params(m, paper) if self.pooler else 0))

    def pooler_flops(self, m: BaseModel) -> int:
        """2d² when the family has a pooler (it runs on the first token), else 0."""
        return mm(1, m.hidden, m.hidden).c if self.pooler else 0
