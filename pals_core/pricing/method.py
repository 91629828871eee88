"""What one adapter method is to the calculator (the ``Method`` record) and the counts its ``cost.py`` is written in.

Each method's ``pals_core/methods/<name>/cost.py`` builds its ``Method`` from these: ``params`` and
``flops`` list the parts a torch module of that method holds / computes for ONE task (docs/design.md
"Adapter methods (per task)", "FLOPs"). ``paper=True`` drops every bias vector and LayerNorm parameter (the paper's
"ignore terms linear in d"); scale vectors (LHUC, IA³) are weights and stay. The torch modules beside each
``cost.py`` are built to hold exactly these parts, and ``tests/test_exactness.py`` enforces it to the
parameter and to the FLOP.

Notation: d hidden, d_ff intermediate, S = d_s, n tokens, K adapted layers, N = n_top, f = r·S.
A linear map ``i → o`` holds ``i·o`` weights (+ ``o`` bias) and costs ``2·rows·i·o`` FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .config import AdapterConfig
from .poly import Poly
from .recipe import BERT_FINE_TUNING, Recipe
from .shape import BaseModel


class Part(NamedTuple):
    """One named group of parameters (or FLOPs) of a task's adapter; ``layer`` None = not per layer."""

    name: str
    layer: int | None
    count: Poly


def linear(i, o, *, bias: bool = True, paper: bool = False) -> Poly:
    """Parameters of ``nn.Linear(i, o)``: i·o (+ o)."""
    return Poly.of(i) * o + (0 if (paper or not bias) else Poly.of(o))


def layer_norm(width, *, paper: bool = False) -> Poly:
    """Parameters of ``nn.LayerNorm(width)``: 2·width (γ and β), none in the paper convention."""
    return Poly(0, 0, 0) if paper else Poly.of(width) * 2


def mm(rows: int, i, o) -> Poly:
    """Forward FLOPs of a ``rows × i`` by ``i × o`` matrix product: 2·rows·i·o."""
    return Poly.of(i) * o * (2 * rows)


def attention_scores(n: int, width) -> Poly:
    """QKᵀ and AV over n tokens, summed over heads: 2·n²·width each, 4·n²·width together."""
    return Poly.of(width) * (4 * n * n)


def bert_layer_params(m: BaseModel, paper: bool) -> int:
    """One BERT layer: 4d² + 2·d·d_ff (+ 9d + d_ff biases and LayerNorms)."""
    d, f = m.hidden, m.intermediate
    return (
        4 * linear(d, d, paper=paper)
        + linear(d, f, paper=paper)
        + linear(f, d, paper=paper)
        + 2 * layer_norm(d, paper=paper)
    ).c


def bert_layer_flops(m: BaseModel, n: int) -> int:
    """One BERT layer forward on n tokens: 2n·(4d² + 2·d·d_ff) + 4n²·d."""
    d, f = m.hidden, m.intermediate
    return (4 * mm(n, d, d) + mm(n, d, f) + mm(n, f, d) + attention_scores(n, d)).c


def no_parts(*_) -> list:
    """The ``params`` / ``flops`` of a method that adds none (``shared``; the FLOPs of elementwise scales)."""
    return []


ParamFn = Callable[[BaseModel, Sequence[int], AdapterConfig, bool], list]
FlopFn = Callable[[BaseModel, Sequence[int], AdapterConfig, int], list]


@dataclass(frozen=True)
class Method:
    """One adapter method as the calculator prices it (a peft-style registry entry, ``pals_core.methods.registry.METHODS``)."""

    name: str
    title: str
    description: str
    paper_formula: str  # paper-convention parameters per task, as in docs/design.md "Adapter methods (per task)"
    params: ParamFn  # (model, layers, cfg, paper) -> [Part]
    flops: FlopFn  # (model, layers, cfg, n) -> [Part], extra forward FLOPs on one task's path
    sized: bool = True  # takes d_s
    attention: bool = False  # d_s must be a multiple of the adapter heads h_s
    top: bool = False  # sits on top of BERT (takes no location, shares the whole trunk)
    within: bool = True  # modifies layers of BERT (has a location)
    # Parameters shared by all tasks but not part of the base model (CA-MTL's conditional modules):
    # counted once, whatever the number of tasks. (model, layers, cfg, paper) -> [Part]
    shared_params: ParamFn | None = None
    # Base-model parameters this method keeps frozen (e.g. CA-MTL's lower half): (model, cfg, paper) -> int
    frozen_base: Callable[[BaseModel, AdapterConfig, bool], int] | None = None
    # Checks of the method's own AdapterConfig fields: (model, cfg) -> None, raises ValueError
    validate: Callable[[BaseModel, AdapterConfig], None] | None = None
    # Conditions the input embeddings on the task (CA-MTL): running all tasks on one input shares no layer
    conditions_input: bool = False
    # Memory (docs/design.md "Memory (bytes)"): the symbolic twin of the method's TaskAdapter
    # (``pricing.activations.ActivationHooks`` subclass: what its hooks make autograd save); None = identity hooks
    activations: Callable[..., Any] | None = None
    # (model, layers, cfg) -> (parameter tensors per task, tensors shared by all tasks): AdamW keeps a step per tensor
    tensors: Callable[[BaseModel, Sequence[int], AdapterConfig], tuple[int, int]] | None = None
    # (model, cfg) -> F: base layers 0..F−1 and the embeddings frozen by the method itself (CA-MTL)
    frozen_layers: Callable[[BaseModel, AdapterConfig], int] | None = None
    # How the method's authors train the base model, the default of ``AdapterConfig.freeze_trunk``: "fine-tuned"
    # (every base parameter trains, but those ``frozen_layers`` keeps) or "frozen" (only the task-specific parts —
    # adapters, heads, per-task poolers — train); ``--freeze-trunk`` / ``--train-trunk`` override it.
    trunk: str = "fine-tuned"
    # (model, layers, cfg) -> the FLOPs of ``flops`` computed once per forward whatever the batch (CA-MTL's
    # task-conditioned weights; a copy of a DeBERTa layer's relative-position projections): a forward of k sequences
    # (a multiple-choice row) costs k · flops − (k − 1) · fixed_flops; None: none
    fixed_flops: Callable[[BaseModel, Sequence[int], AdapterConfig], int] | None = None
    # How the method's authors train it (``pricing.recipe``): the learning rate, warm-up and weight decay its source
    # sets, the defaults of ``pals-train``'s --lr / --warmup / --weight-decay for this method, and the source cited
    recipe: Recipe = BERT_FINE_TUNING
