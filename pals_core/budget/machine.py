"""``Machine``: the machine a design trains or serves on — batch, device profile, precision, and one bound per
constraint of ``constraints.CONSTRAINTS`` (training memory, step time, serving memory; docs/design.md "Memory (bytes)",
"Time", "Recipe: add a constraint"). One declaration: each field is a flag of every CLI that adds it
(``flags.add_flags``). ``resources`` prices a design on it and checks every bound; ``constrain`` is the solver's side of
the bounds (each record's ``size``).

    memory_train, memory_infer   (``footprint.memory``)           time_step_s, time_ratio   (``footprint.timing``)
    time_ratio = step time of the design / step time of the base model with one task head (the whole model trained)
"""

from __future__ import annotations

from dataclasses import field, make_dataclass, replace
from functools import lru_cache

from ..families.registry import get_family, replay_of
from ..families.shapes import conditions_for_model
from ..footprint.constraints import CONSTRAINTS, PARAMS, Constraint, Pricing, largest_root, train_memory_poly
from ..footprint.memory import PRECISIONS, memory_infer, memory_train
from ..footprint.timing import (
    DeviceProfile,
    builtin_devices,
    design_step_poly,
    load_profile,
    local_profile_path,
    step_seconds,
)
from ..pricing.activations import Conditions
from ..pricing.config import AdapterConfig
from ..pricing.poly import Poly
from ..pricing.units import MIN_BARE_BYTES, parse_memory
from .costs import design, evaluate


def _positive_int(text) -> int:
    value = int(str(text).strip())
    if value < 1:
        raise ValueError("must be a positive integer")
    return value


def default_device() -> str:
    """``local`` once pals-calibrate has measured this machine, else ``h100``."""
    return "local" if local_profile_path().is_file() else "h100"


class _MachineMethods:
    """What a ``Machine`` does with its fields (the fields: ``MACHINE_FIELDS``)."""

    @property
    def memory_bytes(self) -> float | None:
        return parse_memory(self.memory) if self.memory is not None else None

    def limit(self, c: Constraint) -> float | None:
        """The bound set on constraint ``c`` in its figure's units (bytes, a ratio), or None when not set."""
        value = getattr(self, c.field)
        return None if value is None else c.bound(value)

    def bounds(self) -> list[tuple[Constraint, float]]:
        """The constraints set on this machine with their limits, in ``CONSTRAINTS`` order."""
        return [(c, self.limit(c)) for c in CONSTRAINTS if getattr(self, c.field) is not None]

    def profile(self) -> DeviceProfile:
        return load_profile(self.device if self.device is not None else default_device())

    def conditions(self, base: Conditions, profile: DeviceProfile | None = None) -> Conditions:
        """The model's dropout and attention, on this device's backend and precision (``profile``: this machine's,
        when the caller holds it already)."""
        return _on_device(base, (profile or self.profile()).kind, 2 if self.precision == "bf16" else 4)


MACHINE_FIELDS = [
    (
        "batch",
        int,
        field(
            default=32,
            metadata={
                "help": "B, sequences per training step (memory and time are per step)",
                "parse": _positive_int,
                "optional": False,
            },
        ),
    ),
    (
        "device",
        str | None,
        field(
            default=None,
            metadata={
                "help": "device profile for step times: h100, h200, a100, l4, t4, local (measured by pals-calibrate) or a profile "
                ".json; none = local when calibrated, else h100",
                "metavar": "NAME|JSON",
            },
        ),
    ),
    (
        "precision",
        str,
        field(
            default="fp32",
            metadata={
                "help": "fp32 (exact memory) or bf16 (mixed-precision estimate: 2-byte activations, bf16 matmul rate)",
                "choices": lambda: list(PRECISIONS),
            },
        ),
    ),
    *[(c.field, c.type, field(default=None, metadata=c.metadata())) for c in CONSTRAINTS],
]
"""The machine: batch, device profile, precision, then one optional field per constraint (``constraints.CONSTRAINTS``,
in their order): each a flag of every CLI that adds ``Machine``'s flags."""

Machine = make_dataclass("Machine", MACHINE_FIELDS, bases=(_MachineMethods,), frozen=True)
Machine.__module__ = __name__
Machine.__doc__ = (
    "The machine a design trains or serves on: batch, device profile, precision, and one bound per "
    "constraint (``constraints.CONSTRAINTS``: memory, max_slowdown, memory_infer, …)."
)


@lru_cache(maxsize=256)
def _on_device(base: Conditions, backend: str, float_bytes: int) -> Conditions:
    return replace(base, backend=backend, float_bytes=float_bytes)


def _base_design(ds):
    """The base model with one task head (``shared``, nothing frozen): the reference of ``time_ratio``."""
    return design(ds.model, ds.tasks[:1], AdapterConfig(method="shared"), convention=ds.convention, seq_len=ds.seq_len)


def base_step_seconds(ds, machine: Machine, cond: Conditions, profile: DeviceProfile | None = None) -> float:
    """The base model's step time (one task head): the same for every row of a table, so computed once."""
    profile = profile or machine.profile()
    key = (ds.model, ds.tasks[0], ds.convention, ds.seq_len, machine.batch, cond, profile, machine.precision)
    if key not in _BASE_STEP:
        _BASE_STEP[key] = step_seconds(_base_design(ds), None, machine.batch, cond, profile, machine.precision)
    return _BASE_STEP[key]


_BASE_STEP: dict[tuple, float] = {}


def time_ratio(ds, s: int | None, machine: Machine | None = None, model_cond: Conditions | None = None) -> float | None:
    """Predicted training-step time of ``ds`` at size ``s`` ÷ the base model's with one task head (docs/design.md
    "Time") on ``machine`` (the default machine when None): the ``time_ratio`` of a row, alone (no memory work), for a
    caller that ranks designs. None where the time model has nothing to say (a family it does not replay, no
    profile)."""
    machine = machine if machine is not None else Machine()
    try:
        profile = machine.profile()
        cond = machine.conditions(model_cond or conditions_for_model(ds.model.name), profile)
        ds = exact(ds)
        step = step_seconds(ds, s, machine.batch, cond, profile, machine.precision)
        return step / base_step_seconds(ds, machine, cond, profile)
    except ValueError:
        return None


def exact(ds):
    """The same design counted in the exact convention (memory holds every parameter), remembered per design."""
    if ds.convention == "exact":
        return ds
    key = (ds.model, ds.tasks, repr(ds.config), ds.seq_len)
    found = _EXACT.get(key)
    if found is None:
        if len(_EXACT) >= 1024:
            _EXACT.clear()
        found = _EXACT[key] = design(
            ds.model, ds.tasks, ds.config, convention="exact", seq_len=ds.seq_len, check_size=False
        )
    return found


_EXACT: dict = {}


def resources(cost, ds, machine: Machine, model_cond: Conditions, profile: DeviceProfile | None = None) -> None:
    """Fill ``cost``'s memory_train, memory_infer, time_step_s and time_ratio (at ``cost.d_s``); ``profile``: the
    machine's device profile, when the caller holds it already."""
    profile = profile or machine.profile()
    cond = machine.conditions(model_cond, profile)
    s = cost.d_s
    ds = exact(ds)
    counted = cost if cost.params_total == evaluate(ds, s).params_total else evaluate(ds, s)
    mem = memory_train(ds, s, counted, batch=machine.batch, cond=cond)
    cost.memory_train = mem.as_dict()
    cost.memory_infer = memory_infer(ds, s, counted, batch=machine.batch, cond=cond)
    cost.time_step_s = step_seconds(ds, s, machine.batch, cond, profile, machine.precision)
    cost.time_ratio = cost.time_step_s / base_step_seconds(ds, machine, cond, profile)
    cost.feasible = cost.feasible and all(c.fits(cost, limit) for c, limit in machine.bounds())


def pricing(ds, machine: Machine, cond: Conditions, profile: DeviceProfile | None = None) -> Pricing:
    """What the constraints' ``size`` reads: the design (exact convention) on ``machine`` under ``cond``."""
    profile = profile or machine.profile()
    ds = exact(ds)
    return Pricing(
        ds, machine.batch, machine.precision, cond, profile, lambda: base_step_seconds(ds, machine, cond, profile)
    )


def memory_poly(ds, machine: Machine, cond: Conditions) -> Poly:
    """memory_train.total as a polynomial in d_s (``constraints.train_memory_poly``)."""
    return train_memory_poly(Pricing(exact(ds), machine.batch, machine.precision, cond, None, lambda: 0.0))


def time_poly(
    ds, machine: Machine, cond: Conditions, profile: DeviceProfile | None = None
) -> tuple[float, float, float]:
    """(a, b, c) with step seconds = a·s² + b·s + c: every op's cost is at most quadratic in d_s, so the time model
    run on d_s itself gives them (``timing.design_step_poly``)."""
    return design_step_poly(ds, machine.batch, cond, profile or machine.profile(), machine.precision).coefficients


def supported(ds) -> bool:
    """The design's family has a ``Replay`` (``pals_core.families.registry``): its memory and step time are modelled."""
    return get_family(getattr(ds.model, "family", "bert")).replay is not None


def check_supported(ds, machine: Machine) -> None:
    given = [c for c, _ in machine.bounds()]
    if not supported(ds) and given:
        try:
            replay_of(ds.model)
        except ValueError as e:
            raise ValueError(f"{e}: drop {' / '.join('--' + c.field.replace('_', '-') for c in given)}") from None


def constrain(
    cost, ds, machine: Machine, model_cond: Conditions, *, solved: bool, profile: DeviceProfile | None = None
):
    """Fill ``cost``'s machine figures; for a ``solved`` sized design, lower d_s to what the memory and time budgets
    allow too (closed form: both are quadratics in d_s) and say which constraint binds. ``profile``: the machine's
    device profile, when the caller holds it (a table reads it once for all its rows)."""
    check_supported(ds, machine)
    if not supported(ds):
        return cost
    profile = profile or machine.profile()
    cond = machine.conditions(model_cond, profile)
    sizes = {}
    if solved and ds.method.sized and cost.d_s is not None:
        sizes[PARAMS] = cost.d_s
        bounds = machine.bounds()
        if bounds:
            priced = pricing(ds, machine, cond, profile)
            for c, limit in bounds:
                sizes[c.name] = c.size(priced, limit)
    if len(sizes) > 1:
        binding = min(sizes, key=lambda k: sizes[k])
        step = ds.step
        s = sizes[binding]
        s = cost.d_s if binding == PARAMS else (max(step, int(s // step) * step) if s >= step else step)
        limit = None if cost.slack is None else cost.params_task_specific + cost.slack
        new = evaluate(ds, s, unconstrained=cost.d_s_unconstrained)
        new.slack = None if limit is None else limit - new.params_task_specific
        new.feasible = cost.feasible
        while True:  # confirm in exact arithmetic (float roots): step down while a budget is broken
            resources(new, ds, machine, model_cond, profile)
            if new.feasible or new.d_s <= step:
                break
            new = evaluate(ds, new.d_s - step, unconstrained=cost.d_s_unconstrained)
            new.slack = None if limit is None else limit - new.params_task_specific
            new.feasible = cost.feasible
        new.binding = binding
        return new
    resources(cost, ds, machine, model_cond, profile)
    if solved and ds.method.sized:
        cost.binding = PARAMS
    elif cost.memory_train is not None:
        broken = ([PARAMS] if cost.slack is not None and cost.slack < 0 else []) + [
            c.name for c, limit in machine.bounds() if not c.fits(cost, limit)
        ]
        cost.binding = broken[0] if broken else None
    return cost


__all__ = [
    "constrain",
    "Machine",
    "MIN_BARE_BYTES",
    "parse_memory",
    "pricing",
    "resources",
    "builtin_devices",
    "largest_root",
    "memory_poly",
    "time_poly",
    "base_step_seconds",
    "default_device",
]
