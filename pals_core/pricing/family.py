"""What a family of encoders is to the calculator: the ``Family`` record (pure Python, no torch).

A family is one architecture that several ``model_type`` values may share (RoBERTa, XLM-R, CamemBERT).
Its record says, from a ``BaseModel`` alone, how many parameters and forward FLOPs each part of the base
model holds — the embeddings, each layer i (layers may differ: ModernBERT's layer 0 has no attention norm,
DeBERTa's layer 0 carries the optional convolution), what follows the last layer, the pooler, the task
head its ``…ForSequenceClassification`` puts on top — how a ``config.json`` maps onto a ``BaseModel``, and
which methods cannot apply to it (one line each) — and its ``Replay``: its forward replayed op by op on symbolic
tensors (``pricing.activations``), which gives the bytes autograd saves (memory, docs/design.md "Memory (bytes)") and
the work of every op (time, docs/design.md "Time"). The record lives in its family's folder,
``pals_core/families/<f>/description.py``, beside its torch mirror ``trunk.py``; ``tests/test_exactness.py`` holds both
to the parameter and to the FLOP, ``tests/test_memory.py`` to the saved byte.

Counting conventions (docs/design.md "Two counting conventions"): ``paper=True`` drops every bias vector and every
LayerNorm parameter. FLOPs: matmuls only, 2 per multiply-add (FlopCounterMode's convention, docs/design.md "FLOPs").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .activations import check_activation
from .limits import MAX_WIDTH
from .method import layer_norm, linear, mm
from .shape import BaseModel


class Norm(NamedTuple):
    """A LayerNorm of a layer as the calculator counts it: its width and whether it holds a bias beside its gain."""

    width: int
    bias: bool = True

    def params(self, paper: bool) -> int:
        """width (+ width): 0 in the paper convention (docs/design.md "Two counting conventions" drops every LayerNorm
        parameter)."""
        return 0 if paper else self.width * (2 if self.bias else 1)

    @property
    def tensors(self) -> int:
        """Parameter tensors (AdamW keeps a step per tensor): the gain (+ the bias)."""
        return 2 if self.bias else 1


def post_norms(m: BaseModel, i: int) -> tuple[Norm | None, Norm | None]:
    """The norms at the ``attention_norm`` and ``output_norm`` hooks of layer i: LN1 and LN2, LayerNorm(d) with bias
    (BERT, RoBERTa, ELECTRA, MPNet, DistilBERT, ALBERT's shared layer, DeBERTa-v2)."""
    return Norm(m.hidden), Norm(m.hidden)


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
    parameters (``pricing.activations.ACTIVATIONS``)."""
    value = check_activation(config.get(field, default), field, f"config {name!r}")
    return {} if value == default else {option: value}


_MISSING = object()


def _where(name: str | None) -> str:
    return f"config {name!r}" if name else "config"


def flag(config: dict, name: str, field: str, default: bool) -> bool:
    """A boolean field as transformers needs it: JSON true or false (absent or null: ``default``). A string
    ("false", "yes") or a number is refused — Python's truth of "false" is True, and a bias priced from it is not
    the model transformers builds."""
    value = config.get(field, _MISSING)
    if value is _MISSING or value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"{_where(name)}: {field} is {value!r}; it takes true or false")
    return value


def integer(
    config: dict, name: str, field: str, default: int, *, low: int | None = None, high: int | None = None
) -> int:
    """An integer field as transformers needs it: a JSON integer (absent or null: ``default``) within [low, high]
    (``high`` defaults to the calculator's ``limits.MAX_WIDTH``). A string ("64"), a float or a bool is refused."""
    value = config.get(field, _MISSING)
    if value is _MISSING or value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{_where(name)}: {field} is {value!r}; it takes an integer")
    high = MAX_WIDTH if high is None else high
    if (low is not None and value < low) or value > high:
        bounds = f"from {low:,} to {high:,}" if low is not None else f"at most {high:,}"
        raise ValueError(f"{_where(name)}: {field} {value:,} is out of range ({bounds})")
    return value


def probability(config: dict, name: str, field: str, default: float | None) -> float | None:
    """A dropout rate as transformers needs it: a JSON number in [0, 1) (absent: ``default``; null: None, for
    the fields where transformers reads None as "the other rate"). A string ("0.1"), NaN or 2.0 is refused."""
    import math

    value = config.get(field, _MISSING)
    if value is _MISSING:
        return default
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{_where(name)}: {field} is {value!r}, not a number (a dropout rate is in [0, 1))")
    if not math.isfinite(value) or not 0 <= value < 1:
        raise ValueError(f"{_where(name)}: {field} {value!r} is not a probability in [0, 1)")
    return float(value)


def embedding_size(config: dict, name: str, hidden: int) -> int:
    """E = ``embedding_size`` (d when absent); null is refused: transformers cannot build a table of width None."""
    e = config.get("embedding_size", hidden)
    if e is None:
        raise ValueError(
            f"config {name!r}: embedding_size is null (give a width, or leave the field out for hidden_size)"
        )
    return e


def embedding_tables(m: BaseModel, rows: int, paper: bool, *, norm_width: int | None = None) -> int:
    """``rows`` lookup rows of width E and the embedding LayerNorm (width E unless given)."""
    return rows * m.width + layer_norm(norm_width if norm_width is not None else m.width, paper=paper).c


def no_prepare(tr, m: BaseModel, trains: bool) -> None:
    """Nothing computed once per forward besides the embeddings."""


def trace_token_head(tr, m: BaseModel, h):
    """A tagging task's head on every token, dropout + Linear(d, C): the Linear keeps the dropped-out states (B·n·d)."""
    return tr.linear(tr.dropout(h, tr.cond.head_dropout), 1, True)


def trace_span_head(tr, m: BaseModel, h):
    """An extractive-QA task's head on every token, ``qa_outputs`` Linear(d, 2) on the last hidden states as they are
    (no dropout: BERT, RoBERTa, ELECTRA, DeBERTa, MPNet, ALBERT's ``…ForQuestionAnswering``): the Linear keeps h."""
    return tr.linear(h, 1, True)


def keep(tr, m: BaseModel, h, trains: bool):
    """Nothing after the last layer."""
    return h


def no_tensors(m: BaseModel) -> int:
    return 0


def bert_inference_layer(m: BaseModel, batch: int, n: int, eager: bool, adapted: bool) -> tuple[int, int]:
    """Elements live at the peak of one BERT layer in inference mode: attention (its input, q, k, v, the context;
    eager: + the B·h·n² scores twice) and FFN (its input, the attention output, two (B, n, d_ff) tensors; adapted
    layers keep q, k, v, the context and y alive to their end: 4 (B, n, d) more)."""
    tokens = batch * n
    attention = 5 * tokens * m.hidden + (2 * batch * m.heads * n * n if eager else 0)
    ffn = 2 * tokens * m.hidden + 2 * tokens * m.intermediate + (4 * tokens * m.hidden if adapted else 0)
    return attention, ffn


@dataclass(frozen=True)
class Replay:
    """A family's forward replayed on symbolic tensors (``pricing.activations.Trace``), op by op as its torch trunk
    (``pals_core/families/<f>/trunk.py``) and the Hugging Face modules it wraps run it; ``footprint.memory`` runs it.

    ``layer(tr, m, i, h, trains, hooks)`` replays layer i with an adapter's ``ActivationHooks`` at the trunk's hook
    places; i = "top" is a copy of the last layer run on top of the trunk (``bert_layer_top``). The tensor counts
    are the trainable parameter tensors (AdamW keeps a ``step`` per tensor). ``conditions`` reads the dropout
    rates and the attention implementation from a ``config.json`` (None: BERT's field names)."""

    embeddings: Callable[..., Any]  # (tr, m, trains) -> Sym (B, n, d)
    layer: Callable[..., Any]  # (tr, m, i, h, trains, hooks) -> Sym
    classify: Callable[..., Any]  # (tr, m, h, pooler_trains) -> Sym: one task's logits
    embedding_tensors: Callable[[BaseModel], int]
    layer_tensors: Callable[[BaseModel, Any], int]  # (m, i or "top")
    head_tensors: Callable[[BaseModel], int]  # one task's head (a pooler the base model holds is not in it)
    prepare: Callable[..., None] = no_prepare  # (tr, m, trains): tensors computed once per forward
    finish: Callable[..., Any] = keep  # (tr, m, h, trains) -> Sym: after the last layer
    final_tensors: Callable[[BaseModel], int] = no_tensors
    conditions: Callable[[dict], dict] | None = None  # config.json -> ``Conditions`` fields
    inference_layer: Callable[..., tuple[int, int]] = bert_inference_layer  # (m, B, n, eager, adapted) -> elements
    layer_kind: Callable[[BaseModel, int], Any] = lambda m, i: None  # layers of one kind replay alike (a cache key)
    idle_params: Callable[[BaseModel], int] = (
        no_tensors  # trainable parameters no forward reaches: no gradient, no AdamW state
    )
    tag: Callable[..., Any] = trace_token_head  # (tr, m, h) -> Sym: a tagging task's head on every token
    # (tr, m, h, pooler_trains) -> Sym: a multiple-choice task's head on each candidate's sequence (what the family's
    # ``…ForMultipleChoice`` holds); None: ``classify`` (the same head, one output)
    choose: Callable[..., Any] | None = None
    token_head_tensors: Callable[[BaseModel], int] = lambda m: 2  # its weight and bias (Linear(d, C))
    span: Callable[..., Any] = trace_span_head  # (tr, m, h) -> Sym: an extractive-QA task's head on every token


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
    # one tagging task's head, the same weights on every token (what ``<Family>ForTokenClassification`` holds;
    # dropout + Linear(d, C) by default): its parameters and its FLOPs on one token
    token_head_params: Callable[[BaseModel, int, bool], int] = linear_head_params
    token_head_flops: Callable[[BaseModel, int], int] = linear_head_flops
    # (model, layer i) -> the FLOPs of ``layer_flops`` that layer i computes once per forward whatever the batch
    # (DeBERTa's relative-position projections): a forward of k sequences (a multiple-choice row) costs
    # k · layer_flops − (k − 1) · fixed_flops
    fixed_flops: Callable[[BaseModel, int], int] = no_count
    token_types: bool = True  # the trunk reads token_type_ids
    refuses: tuple[tuple[str, str], ...] = ()  # (method, one-line reason) for methods that cannot apply
    attention: tuple[str, ...] = ("sdpa", "eager")  # the attention implementations its trunk runs (and is priced for)
    pad_token_id: int = 0  # transformers' default for its configs (the embeddings' padding row)
    padding_idx: int | None = None  # the embeddings' padding row when fixed whatever pad_token_id says (MPNet: 1)
    notes: str = ""  # what the family's counts assume, for the documentation
    replay: Replay | None = None  # its forward on symbolic tensors (memory and step time); None = not modelled
    reserved_positions: Callable[[BaseModel], int] = no_count  # position rows no token can use (RoBERTa: pad + 1)
    # (model, layer i) -> the norms the trunk hands to layer i's ``attention_norm`` and ``output_norm`` hooks (None:
    # no norm there, ModernBERT's layer 0); what a per-task copy of them holds (Houlsby's LayerNorms)
    hook_norms: Callable[[BaseModel, int], tuple[Norm | None, Norm | None]] = post_norms

    def refusal(self, method: str) -> str | None:
        """Why ``method`` cannot apply to this family (None = it can)."""
        return dict(self.refuses).get(method)

    def base_params(self, m: BaseModel, paper: bool) -> int:
        """N_base = embeddings + Σ_i layer_i + final + pooler: ``sum(p.numel())`` of ``AutoModel.from_config``."""
        return (
            self.embedding_params(m, paper)
            + sum(self.layer_params(m, i, paper) for i in range(m.layers))
            + self.final_params(m, paper)
            + (pooler_params(m, paper) if self.pooler else 0)
        )

    def max_tokens(self, m: BaseModel) -> int:
        """The longest sequence the model takes: P = ``max_position_embeddings`` less the rows no token can use
        (RoBERTa numbers positions from pad + 1). The declared limit also for the families whose positions are
        relative or rotary (DeBERTa-v3, ModernBERT): what the model was built for."""
        return m.positions - self.reserved_positions(m)

    def check_seq_len(self, m: BaseModel, n: int) -> None:
        """``ValueError`` (one line) unless 1 ≤ n ≤ ``max_tokens(m)``."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"sequence length must be a positive integer, got {n!r}")
        if n > self.max_tokens(m):
            raise ValueError(
                f"sequence length {n} exceeds {m.name}'s {self.max_tokens(m)} positions "
                f"(max_position_embeddings {m.positions})"
            )

    def pooler_flops(self, m: BaseModel) -> int:
        """2d² when the family has a pooler (it runs on the first token), else 0."""
        return mm(1, m.hidden, m.hidden).c if self.pooler else 0
