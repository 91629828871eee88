"""The adapter methods: exact parameter and FLOP counts as polynomials in d_s.

Each method is one ``Method`` record whose ``params`` and ``flops`` functions list the parts a
torch module of that method holds / computes for ONE task (SPEC section 4–5). ``paper=True`` drops
every bias vector and LayerNorm parameter (the paper's "ignore terms linear in d"); LHUC's scale
vectors are weights and stay. The torch modules in ``pals_core.adapters`` are built to hold exactly
these parts, and ``tests/test_exactness.py`` enforces it to the parameter and to the FLOP.

Notation: d hidden, d_ff intermediate, S = d_s, n tokens, K adapted layers, N = n_top, f = r·S.
A linear map ``i → o`` holds ``i·o`` weights (+ ``o`` bias) and costs ``2·rows·i·o`` FLOPs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional, Sequence

from .config import AdapterConfig
from .models import BaseModel
from .poly import Poly, S


class Part(NamedTuple):
    """One named group of parameters (or FLOPs) of a task's adapter; ``layer`` None = not per layer."""

    name: str
    layer: Optional[int]
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
    return (4 * linear(d, d, paper=paper) + linear(d, f, paper=paper) + linear(f, d, paper=paper)
            + 2 * layer_norm(d, paper=paper)).c


def bert_layer_flops(m: BaseModel, n: int) -> int:
    """One BERT layer forward on n tokens: 2n·(4d² + 2·d·d_ff) + 4n²·d."""
    d, f = m.hidden, m.intermediate
    return (4 * mm(n, d, d) + mm(n, d, f) + mm(n, f, d) + attention_scores(n, d)).c


ParamFn = Callable[[BaseModel, Sequence[int], AdapterConfig, bool], list]
FlopFn = Callable[[BaseModel, Sequence[int], AdapterConfig, int], list]


@dataclass(frozen=True)
class Method:
    """A registered adapter method (peft-style registry entry)."""

    name: str
    title: str
    description: str
    paper_formula: str  # paper-convention parameters per task, as in SPEC section 4
    params: ParamFn  # (model, layers, cfg, paper) -> [Part]
    flops: FlopFn  # (model, layers, cfg, n) -> [Part], extra forward FLOPs on one task's path
    sized: bool = True  # takes d_s
    attention: bool = False  # d_s must be a multiple of the adapter heads h_s
    top: bool = False  # sits on top of BERT (takes no location, shares the whole trunk)
    within: bool = True  # modifies layers of BERT (has a location)
    # Parameters shared by all tasks but not part of the base model (CA-MTL's conditional modules):
    # counted once, whatever the number of tasks. (model, layers, cfg, paper) -> [Part]
    shared_params: Optional[ParamFn] = None
    # Base-model parameters this method keeps frozen (e.g. CA-MTL's lower half): (model, cfg, paper) -> int
    frozen_base: Optional[Callable[[BaseModel, AdapterConfig, bool], int]] = None
    # Checks of the method's own AdapterConfig fields: (model, cfg) -> None, raises ValueError
    validate: Optional[Callable[[BaseModel, AdapterConfig], None]] = None
    # Conditions the input embeddings on the task (CA-MTL): running all tasks on one input shares no layer
    conditions_input: bool = False


# --- parameter lists --------------------------------------------------------------------------

def _pals_params(m, layers, cfg, paper):
    d = m.hidden
    parts = [Part("encoder V^E", None, linear(d, S, paper=paper)), Part("decoder V^D", None, linear(S, d, paper=paper))]
    parts += [Part("attention Q,K,V", l, 3 * linear(S, S, paper=paper)) for l in layers]
    return parts


def _pals_unshared_params(m, layers, cfg, paper):
    d = m.hidden
    parts = []
    for l in layers:
        parts += [Part("encoder V^E", l, linear(d, S, paper=paper)), Part("decoder V^D", l, linear(S, d, paper=paper)),
                  Part("attention Q,K,V", l, 3 * linear(S, S, paper=paper))]
    return parts


def _low_rank_params(m, layers, cfg, paper):
    d = m.hidden
    parts = []
    for l in layers:
        parts += [Part("encoder V^E", l, linear(d, S, paper=paper)), Part("decoder V^D", l, linear(S, d, paper=paper))]
    return parts


def _houlsby_params(m, layers, cfg, paper):
    d = m.hidden
    one = linear(d, S, paper=paper) + linear(S, d, paper=paper)
    parts = []
    for l in layers:
        parts += [Part("adapter after attention", l, one), Part("adapter after FFN", l, one)]
    return parts


def _lora_params(m, layers, cfg, paper):
    d = m.hidden
    one = linear(d, S, bias=False) + linear(S, d, bias=False)
    parts = []
    for l in layers:
        parts += [Part("LoRA on Q", l, one), Part("LoRA on V", l, one)]
    return parts


def _lhuc_params(m, layers, cfg, paper):
    return [Part("scale", l, Poly(0, 0, m.hidden)) for l in layers]


def _top_stack(m, cfg, paper, block: Callable[[], list]):
    d = m.hidden
    parts = [Part("encoder V^E", None, linear(d, S, paper=paper)), Part("decoder V^D", None, linear(S, d, paper=paper))]
    for i in range(cfg.n_top):
        parts += [Part(name, i, p) for name, p in block()]
    return parts


def _proj_attn_top_params(m, layers, cfg, paper):
    return _top_stack(m, cfg, paper, lambda: [("attention Q,K,V,O", 4 * linear(S, S, paper=paper)),
                                              ("LayerNorm", layer_norm(S, paper=paper))])


def _proj_ffn_top_params(m, layers, cfg, paper):
    f = S * cfg.ffn_ratio
    return _top_stack(m, cfg, paper, lambda: [("FFN", linear(S, f, paper=paper) + linear(f, S, paper=paper)),
                                              ("LayerNorm", layer_norm(S, paper=paper))])


def _bert_layer_top_params(m, layers, cfg, paper):
    d, f = m.hidden, m.intermediate
    return [Part("attention Q,K,V,O", None, 4 * linear(d, d, paper=paper) + layer_norm(d, paper=paper)),
            Part("FFN", None, linear(d, f, paper=paper) + linear(f, d, paper=paper) + layer_norm(d, paper=paper))]


def _no_params(m, layers, cfg, paper):
    return []


# --- FLOP lists (extra forward FLOPs on one task's path, one sequence of n tokens) --------------

def _pals_flops(m, layers, cfg, n):
    d = m.hidden
    one = mm(n, d, S) + 3 * mm(n, S, S) + attention_scores(n, S) + mm(n, S, d)
    return [Part("PAL", l, one) for l in layers]


def _low_rank_flops(m, layers, cfg, n):
    d = m.hidden
    return [Part("low-rank", l, mm(n, d, S) + mm(n, S, d)) for l in layers]


def _bottleneck_pair_flops(name):
    def flops(m, layers, cfg, n):
        d = m.hidden
        return [Part(name, l, 2 * (mm(n, d, S) + mm(n, S, d))) for l in layers]
    return flops


def _proj_attn_top_flops(m, layers, cfg, n):
    d = m.hidden
    block = 4 * mm(n, S, S) + attention_scores(n, S)
    return [Part("encoder/decoder", None, mm(n, d, S) + mm(n, S, d))] + [Part("attention", i, block) for i in range(cfg.n_top)]


def _proj_ffn_top_flops(m, layers, cfg, n):
    d = m.hidden
    f = S * cfg.ffn_ratio
    block = mm(n, S, f) + mm(n, f, S)
    return [Part("encoder/decoder", None, mm(n, d, S) + mm(n, S, d))] + [Part("FFN", i, block) for i in range(cfg.n_top)]


def _bert_layer_top_flops(m, layers, cfg, n):
    return [Part("BERT layer", None, Poly(0, 0, bert_layer_flops(m, n)))]


def _no_flops(m, layers, cfg, n):
    return []


METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    METHODS[method.name] = method
    return method


register(Method(
    "shared", "Shared BERT", "All layers shared; only a head (and optionally a pooler) per task.",
    "0", _no_params, _no_flops, sized=False, within=False))
register(Method(
    "pals", "PALs", "Projected attention layers in parallel to each adapted BERT layer; V^E, V^D shared "
    "across the task's layers (Stickland & Murray 2019, Sec. 3.3).",
    "2·d·d_s + 3·K·d_s²", _pals_params, _pals_flops, attention=True))
register(Method(
    "pals_unshared", "PALs (unshared V^E/V^D)", "PALs with its own encoder and decoder per layer.",
    "K·(2·d·d_s + 3·d_s²)", _pals_unshared_params, _pals_flops, attention=True))
register(Method(
    "low_rank", "Low-rank layers", "Parallel low-rank update V^D V^E h per adapted layer (Sec. 3.2).",
    "2·K·d·d_s", _low_rank_params, _low_rank_flops))
register(Method(
    "houlsby", "Houlsby adapters", "Serial bottleneck x + U·GELU(W·x) after the attention and FFN outputs "
    "(Houlsby et al. 2019).", "4·K·d·d_s", _houlsby_params, _bottleneck_pair_flops("adapters")))
register(Method(
    "lora", "LoRA", "Rank-d_s update B·A on the query and value projections (Hu et al. 2021).",
    "4·K·d·d_s", _lora_params, _bottleneck_pair_flops("LoRA")))
register(Method(
    "lhuc", "LHUC", "A learned scale 2·σ(r) on every unit of each adapted layer's output (Swietojanski & Renals 2014).",
    "K·d", _lhuc_params, _no_flops, sized=False))
register(Method(
    "proj_attn_top", "Projected attention on top", "V^E, N_top attention layers of width d_s, V^D, on the "
    "final hidden states, with a residual (Sec. 3.1).", "2·d·d_s + 4·N_top·d_s²",
    _proj_attn_top_params, _proj_attn_top_flops, attention=True, top=True, within=False))
register(Method(
    "proj_ffn_top", "Projected FFN on top", "As projected attention on top, with FFN blocks d_s→f→d_s.",
    "2·d·d_s + 2·N_top·d_s·f", _proj_ffn_top_params, _proj_ffn_top_flops, top=True, within=False))
register(Method(
    "bert_layer_top", "BERT layer on top", "One full BERT layer per task on top of the shared encoder.",
    "4·d² + 2·d·d_ff", _bert_layer_top_params, _bert_layer_top_flops, sized=False, top=True, within=False))

from . import ca_mtl as _ca_mtl  # noqa: E402,F401  registers `ca_mtl` (after the names it imports from here)


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r} (methods: {', '.join(METHODS)})") from None


def resolve_layers(location, num_layers: int) -> tuple[int, ...]:
    """'all' → every layer; 'top' → the last ⌊L/2⌋; 'bottom' → the first ⌊L/2⌋; indices or 'i,j,…'."""
    if location is None or location == "all":
        return tuple(range(num_layers))
    half = num_layers // 2
    if location == "top":
        return tuple(range(num_layers - half, num_layers))
    if location == "bottom":
        return tuple(range(half))
    if isinstance(location, str):
        try:
            location = [int(x) for x in location.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"location {location!r} is not all, top, bottom or a list of layer indices") from None
    try:
        idx = [int(i) for i in location]
    except (TypeError, ValueError):
        raise ValueError(f"location {location!r} is not all, top, bottom or a list of layer indices") from None
    if not idx:
        raise ValueError("location lists no layers")
    for i in idx:
        if not 0 <= i < num_layers:
            raise ValueError(f"layer index {i} is out of range for a model with {num_layers} layers (0..{num_layers - 1})")
    if len(set(idx)) != len(idx):
        raise ValueError(f"location {location!r} lists a layer twice")
    return tuple(sorted(idx))


def location_label(location) -> str:
    if location is None:
        return "all"
    if isinstance(location, str):
        return location
    return ",".join(str(i) for i in location)


def check_config(m: BaseModel, cfg: AdapterConfig, *, check_size: bool = True) -> tuple[Method, tuple[int, ...]]:
    """Validate a design against a base model; returns the method and the adapted layers.

    Raises ``ValueError`` naming the problem (before any weights are built). ``check_size=False``
    leaves d_s unchecked (the solver picks it)."""
    method = get_method(cfg.method)
    if not check_size:
        pass
    elif method.sized:
        if cfg.d_s is None:
            raise ValueError(f"method {method.name!r} needs an adapter size d_s")
        if not isinstance(cfg.d_s, int) or isinstance(cfg.d_s, bool) or cfg.d_s < 1:
            raise ValueError(f"d_s must be a positive integer, got {cfg.d_s!r}")
    elif cfg.d_s is not None:
        raise ValueError(f"method {method.name!r} has no adapter size; do not give d_s")
    if not isinstance(cfg.heads, int) or cfg.heads < 1:
        raise ValueError(f"adapter heads must be a positive integer, got {cfg.heads!r}")
    if check_size and method.attention and cfg.d_s % cfg.heads:
        raise ValueError(f"d_s = {cfg.d_s} is not divisible by the {cfg.heads} adapter heads of {method.name!r}")
    if method.top:
        if cfg.location not in (None, "all"):
            raise ValueError(f"method {method.name!r} sits on top of BERT and takes no location")
        if method.sized and (not isinstance(cfg.n_top, int) or cfg.n_top < 1):
            raise ValueError(f"n_top must be a positive integer, got {cfg.n_top!r}")
        if method.name == "proj_ffn_top" and (not isinstance(cfg.ffn_ratio, int) or cfg.ffn_ratio < 1):
            raise ValueError(f"ffn_ratio must be a positive integer, got {cfg.ffn_ratio!r}")
        return method, ()
    if not method.within:
        if cfg.location not in (None, "all"):
            raise ValueError(f"method {method.name!r} adapts no layers and takes no location")
        return method, ()
    layers = resolve_layers(cfg.location, m.layers)
    if method.validate is not None:
        method.validate(m, cfg)
    return method, layers
