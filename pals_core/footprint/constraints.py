"""The machine constraints: each one record, read by everything that offers, prices or solves a bound (docs/design.md
"Recipe: add a constraint").

A ``Constraint`` says what a person gives (its ``Machine`` field, which is its flag ``--<field>``, the explorer's
sidebar field and address key and the study setting of the same name, with its help and parser), which figure of a
row it bounds (``figure``: ``memory_train``'s total, ``memory_infer``, ``time_ratio``) and how the solver turns the
bound into an adapter size (``size``: the figure is a polynomial in d_s — ``memory`` and ``timing`` derive it once
per model and method — so the largest d_s within the bound is a root, in closed form). ``CONSTRAINTS`` is the list:

- ``machine.Machine`` has one optional field per record (its flag in ``pals-budget`` and ``pals-study``, by
  ``flags.add_flags``), ``machine.resources`` checks every record's figure, ``machine.constrain`` lowers d_s to the
  smallest of their sizes and names the record that binds (``Cost.binding`` = ``Constraint.name``);
- ``pals-budget`` writes each given bound in its header (``text``) and ``--json`` ``machine`` block (``json``);
- the explorer's sidebar draws a text field per record (``label``, ``help``; ``explorer.inputs.bound_key``), its
  address carries the record's ``field`` as a query key, both read by the ``Machine`` flag's parser (the record's
  ``parse``: ``explorer.inputs.parse_bound``), and the rows are solved within them (``explorer.calc.table``);
- ``studies.settings`` stores and checks them as ``Machine`` fields (``pals-study --<field>``), ``studies.runner``
  describes them (``text``, ``needs``), the explorer's study form draws a field per record.

The parameter budget (``solver.Budget``: ``--budget``, ``--extra``, ``--per-task``) is the solver's first bound and
binds as ``PARAMS``; it has its own reader (``Budget.parse``) since its three forms are one bound.

Adding a constraint is adding a record here (and a test): see docs/design.md "Recipe: add a constraint".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..pricing.activations import Conditions
from ..pricing.poly import Poly
from ..pricing.units import parse_memory
from .memory import activation_bytes, inference_activation_bytes, trainable_tensors
from .timing import DeviceProfile, design_step_poly

PARAMS = "params"
"""The binding name of the parameter budget (``solver.Budget``): the solver's own size, before any machine bound."""


class Pricing:
    """What a constraint's figure is priced on: the design in the exact convention (memory holds every parameter),
    the machine's batch, precision and device profile, the model's conditions on that device, and the base model's
    step seconds (``time_ratio``'s denominator; a callable, computed only by a constraint that needs it).

    Plain classes, here and for ``Constraint`` (not dataclasses): ``pals-budget`` imports this module at every
    start-up, and a dataclass is built by ``exec`` at import (about a millisecond each; benchmarks/bench_budget.py)."""

    __slots__ = ("ds", "batch", "precision", "cond", "profile", "base_step")

    def __init__(
        self,
        ds: Any,
        batch: int,
        precision: str,
        cond: Conditions,
        profile: DeviceProfile | None,
        base_step: Callable[[], float],
    ) -> None:
        self.ds, self.batch, self.precision, self.cond, self.profile, self.base_step = (
            ds,
            batch,
            precision,
            cond,
            profile,
            base_step,
        )


class Constraint:
    """One machine bound, declared once.

    ``name`` is what ``Cost.binding`` and the table's ``binds`` column say when it sets d_s; ``field`` is its
    ``Machine`` field (flag ``--field-name``, the explorer's sidebar field ``machine_<field>`` and address key
    ``<field>``, the study setting); ``label`` the explorer's field label; ``parse`` checks what a person typed and
    gives the stored value (``ValueError`` in one line); ``bound`` reads the stored value as the limit on ``figure`` (a
    row's figure, in the same units); ``size`` gives the largest real d_s whose figure is within a limit (−inf when
    none, +inf when the figure does not grow with d_s); ``text`` writes the bound (headers, study descriptions);
    ``needs`` says what a row needs of it (a fixed design that breaks it); ``type`` is the ``Machine`` field's type;
    ``tolerance`` (relative) lets a figure up to bound × (1 + tolerance) fit (float step times)."""

    __slots__ = (
        "name",
        "field",
        "help",
        "metavar",
        "label",
        "parse",
        "bound",
        "figure",
        "size",
        "text",
        "needs",
        "type",
        "tolerance",
    )

    def __init__(
        self,
        *,
        name: str,
        field: str,
        help: str,
        metavar: str,
        label: str,
        parse: Callable[[Any], Any],
        bound: Callable[[Any], float],
        figure: Callable[[Any], float | None],
        size: Callable[[Pricing, float], float],
        text: Callable[[Any], str],
        needs: Callable[[Any], str],
        type: Any = str | None,
        tolerance: float = 0.0,
    ) -> None:
        self.name, self.field, self.help, self.metavar, self.label = name, field, help, metavar, label
        self.parse, self.bound, self.figure, self.size, self.text, self.needs = parse, bound, figure, size, text, needs
        self.type, self.tolerance = type, tolerance

    def __repr__(self) -> str:
        return f"Constraint({self.name!r}, field={self.field!r})"

    def metadata(self) -> dict:
        """The ``Machine`` field's metadata (``flags``: help, parser, metavar)."""
        return {"help": self.help, "parse": self.parse, "metavar": self.metavar}

    def fits(self, cost, limit: float) -> bool:
        """The row's figure is within ``limit`` (a figure not priced fits nothing)."""
        value = self.figure(cost)
        return value is not None and value <= limit * (1 + self.tolerance)

    def json(self, value: Any) -> Any:
        """The bound as ``pals-budget --json`` writes it in its ``machine`` block (bytes for a size)."""
        return None if value is None else self.bound(value)


def largest_root(a: float, b: float, c: float, limit: float) -> float:
    """The largest s ≥ 0 with a·s² + b·s + c ≤ limit (an increasing quadratic); −inf if s = 0 does not fit."""
    c -= limit
    if c > 0:
        return -math.inf
    if a <= 0 and b <= 0:
        return math.inf
    if abs(a) < 1e-300:
        return -c / b
    disc = b * b - 4 * a * c
    return (-b + math.sqrt(max(disc, 0.0))) / (2 * a)


def train_memory_poly(p: Pricing) -> Poly:
    """memory_train.total as a polynomial in d_s: weights 4·N_total, gradients 4·N_trained, AdamW 8·N_trained + 4 per
    tensor (their number does not depend on d_s), activations."""
    ds = p.ds
    n_total = ds.extra + ds.n_base
    return n_total * 16 + (4 * trainable_tensors(ds) - 12 * ds.frozen) + activation_bytes(ds, p.batch, p.cond)


def infer_memory_poly(p: Pricing) -> Poly:
    """memory_infer as a polynomial in d_s: every weight at the activations' precision, plus the inference
    activations (``memory.inference_activation_bytes``: they do not depend on d_s)."""
    ds = p.ds
    return (ds.extra + ds.n_base) * p.cond.float_bytes + inference_activation_bytes(ds, p.batch, p.cond)


def _memory_text(text) -> str:
    parse_memory(text)
    return str(text).strip()


def _slowdown(text) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError("is not a number (the step time relative to the base model, e.g. 1.2)") from None
    if not math.isfinite(value) or value < 1.0:
        raise ValueError("must be a number ≥ 1 (the step time relative to the base model)")
    return value


def _gb(n: float | None) -> str:
    return f"{(n or 0) / 1e9:.4g} GB"


CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint(
        name="memory",
        field="memory",
        metavar="SIZE",
        label="Training memory ≤ (e.g. 24GB, 80GiB)",
        help="memory budget for one training step (weights + gradients + AdamW + activations), e.g. 24GB, 80GiB "
        "(a bare number is bytes, at least 1 MiB)",
        parse=_memory_text,
        bound=parse_memory,
        figure=lambda c: (c.memory_train or {}).get("total"),
        size=lambda p, limit: train_memory_poly(p).largest_root_below(limit),
        text=lambda v: f"memory ≤ {v}",
        needs=lambda c: f"{_gb((c.memory_train or {}).get('total'))} of training memory",
    ),
    Constraint(
        name="time",
        field="max_slowdown",
        metavar="R",
        label="Step time ≤ R × the base model's",
        help="time budget: step time ≤ R × the base model's, e.g. 1.2",
        parse=_slowdown,
        bound=float,
        figure=lambda c: c.time_ratio,
        size=lambda p, limit: largest_root(
            *design_step_poly(p.ds, p.batch, p.cond, p.profile, p.precision).coefficients, limit * p.base_step()
        ),
        text=lambda v: f"step ≤ {v:g}× base",
        needs=lambda c: f"{c.time_ratio or 0:.3f}× the base model's step time",
        type=float | None,
        tolerance=1e-12,
    ),
    Constraint(
        name="memory_infer",
        field="memory_infer",
        metavar="SIZE",
        label="Serving memory ≤ (e.g. 2GB)",
        help="serving memory budget: every task's predictions on one batch (weights at the precision + the inference "
        "activations, the rows' memory_infer), e.g. 2GB, 1.5GiB",
        parse=_memory_text,
        bound=parse_memory,
        figure=lambda c: c.memory_infer,
        size=lambda p, limit: infer_memory_poly(p).largest_root_below(limit),
        text=lambda v: f"serving ≤ {v}",
        needs=lambda c: f"{_gb(c.memory_infer)} of serving memory",
    ),
)
"""Every machine constraint, in the order of their flags (and of the ``Machine`` fields)."""

BY_FIELD = {c.field: c for c in CONSTRAINTS}
BY_NAME = {c.name: c for c in CONSTRAINTS}


def get_constraint(field: str) -> Constraint:
    """The record whose ``Machine`` field is ``field``; ``ValueError`` naming the known ones."""
    try:
        return BY_FIELD[field]
    except KeyError:
        raise ValueError(f"unknown constraint {field!r} (constraints: {', '.join(BY_FIELD)})") from None


__all__ = [
    "CONSTRAINTS",
    "Constraint",
    "PARAMS",
    "Pricing",
    "get_constraint",
    "largest_root",
    "train_memory_poly",
    "infer_memory_poly",
]
