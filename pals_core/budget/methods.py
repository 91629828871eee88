"""The checks of a design against its method and base model (``check_config``, ``resolve_layers``, labels).

The methods themselves (``METHODS``, ``get_method``: every package's ``cost.py``) are collected a floor below, in
``pals_core.methods.registry``; this module hands them on to the calculator.
"""

from __future__ import annotations

from dataclasses import replace

from ..families.registry import get_family
from ..methods.registry import METHODS, get_method
from ..pricing.config import AdapterConfig, design_label, format_location
from ..pricing.limits import MAX_D_S, check_at_most
from ..pricing.method import Method
from ..pricing.recipe import BERT_FINE_TUNING, Recipe, setting
from ..pricing.shape import BaseModel

TRUNK_WORDS = {True: "frozen", False: "fine-tuned"}


def trunk_frozen(cfg: AdapterConfig) -> bool:
    """Whether the base model is frozen in ``cfg``: ``freeze_trunk`` as given, else its method's default
    (``Method.trunk``: how the method's authors train it). A method the calculator does not know (``separate``)
    fine-tunes."""
    if cfg.freeze_trunk is not None:
        return bool(cfg.freeze_trunk)
    method = METHODS.get(cfg.method)
    return method is not None and method.trunk == "frozen"


def resolve_trunk(cfg: AdapterConfig) -> AdapterConfig:
    """``cfg`` with ``freeze_trunk`` decided (``trunk_frozen``): what a design is priced and a run trained with."""
    if cfg.freeze_trunk is not None or cfg.method not in METHODS:
        return cfg
    return replace(cfg, freeze_trunk=trunk_frozen(cfg))


def recipe_of(method: str) -> Recipe:
    """How ``method``'s authors train it (``Method.recipe``); a method the calculator does not know (``separate``:
    one whole model fine-tuned per task) trains as BERT is fine-tuned."""
    known = METHODS.get(method)
    return known.recipe if known is not None else BERT_FINE_TUNING


def recipe_setting(method: str, name: str) -> tuple[float, str]:
    """(value, where it comes from) of the recipe setting ``name`` (``lr``, ``warmup``, ``weight_decay``) for
    ``method`` when no flag gives it: '<method>'s default (<its source>)', or the trainer's (BERT's) where the
    method's source leaves it open."""
    own = recipe_of(method)
    value, source = setting(own, name)
    if method in METHODS and source is own:
        return value, f"{method}'s default ({source.source})"
    return value, f"the trainer's default ({source.source})"


def trunk_text(cfg: AdapterConfig, model: BaseModel | None = None) -> str:
    """How the design trains the base model: 'frozen', 'fine-tuned', or 'partly frozen' (CA-MTL: its embeddings
    and layers 0..F−1 frozen, ``Method.frozen_layers``)."""
    frozen = trunk_frozen(cfg)
    words = TRUNK_WORDS[frozen]
    method = METHODS.get(cfg.method)
    if not frozen and method is not None and method.frozen_layers is not None and model is not None:
        f = method.frozen_layers(model, cfg)
        if f:
            words = "partly frozen"
    return words


def parse_methods(text: str) -> list[str]:
    """A comma-separated list of methods (``pals-study --methods``, the explorer's address ``methods``) → their names,
    each once, in order; ``ValueError`` in one line for an unknown one or an empty list."""
    names = [get_method(m.strip()).name for m in str(text).split(",") if m.strip()]
    if not names:
        raise ValueError("no method given")
    return list(dict.fromkeys(names))


def resolve_layers(location, num_layers: int) -> tuple[int, ...]:
    """'all' → every layer; 'top' → the last ⌊L/2⌋; 'bottom' → the first ⌊L/2⌋; indices or 'i,j,…'."""
    if location is None or location == "all":
        return tuple(range(num_layers))
    half = num_layers // 2
    if location in ("top", "bottom"):
        if half == 0:
            raise ValueError(
                f"location {location!r} adapts no layer of a {num_layers}-layer model ({location} = the "
                f"{'last' if location == 'top' else 'first'} ⌊L/2⌋ layers); use 'all' or layer indices"
            )
        return tuple(range(num_layers - half, num_layers)) if location == "top" else tuple(range(half))
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
            raise ValueError(
                f"layer index {i} is out of range for a model with {num_layers} layers (0..{num_layers - 1})"
            )
    if len(set(idx)) != len(idx):
        raise ValueError(f"location {location!r} lists a layer twice")
    return tuple(sorted(idx))


def label_of(cfg: AdapterConfig) -> str:
    """``pals @ top``; the method alone for designs without a location (top-of-BERT, shared)."""
    return design_label(cfg.method, format_location(cfg.location) if get_method(cfg.method).within else None)


location_label = format_location  # the label of a location (one function, in config.py)


def check_config(m: BaseModel, cfg: AdapterConfig, *, check_size: bool = True) -> tuple[Method, tuple[int, ...]]:
    """Validate a design against a base model; returns the method and the adapted layers.

    Raises ``ValueError`` naming the problem (before any weights are built). ``check_size=False``
    leaves d_s unchecked (the solver picks it)."""
    method = get_method(cfg.method)
    refusal = get_family(m.family).refusal(method.name)
    if refusal is not None:
        raise ValueError(f"method {method.name!r} does not apply to {get_family(m.family).title}: {refusal}")
    if not check_size:
        pass
    elif method.sized:
        if cfg.d_s is None:
            raise ValueError(f"method {method.name!r} needs an adapter size d_s")
        if not isinstance(cfg.d_s, int) or isinstance(cfg.d_s, bool) or cfg.d_s < 1:
            raise ValueError(f"d_s must be a positive integer, got {cfg.d_s!r}")
        check_at_most("d_s", cfg.d_s, MAX_D_S)
    elif cfg.d_s is not None:
        raise ValueError(f"method {method.name!r} has no adapter size; do not give d_s")
    if not isinstance(cfg.heads, int) or cfg.heads < 1:
        raise ValueError(f"adapter heads must be a positive integer, got {cfg.heads!r}")
    if check_size and method.attention and cfg.d_s % cfg.heads:
        raise ValueError(f"d_s = {cfg.d_s} is not divisible by the {cfg.heads} adapter heads of {method.name!r}")
    if method.top and cfg.location not in (None, "all"):
        raise ValueError(f"method {method.name!r} sits on top of BERT and takes no location")
    if not method.within and cfg.location not in (None, "all"):
        raise ValueError(f"method {method.name!r} adapts no layers and takes no location")
    layers = resolve_layers(cfg.location, m.layers) if method.within else ()
    if method.validate is not None:
        method.validate(m, cfg)
    return method, layers
