"""``Machine``: the machine a design trains or serves on — batch, device profile, precision, and the memory and
step-time budgets (docs/design.md §§9–10). One declaration: each field is a flag of every CLI that adds it
(``flags.add_flags``). ``resources`` prices a design on it; ``largest_size`` is the solver's side of the budgets.

    memory_train, memory_infer   (``budget.memory``)           time_step_s, time_ratio   (``budget.timing``)
    time_ratio = step time of the design / step time of the base model with one task head (the whole model trained)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Optional

from .activations import Conditions

from .models import conditions_for_model
from .memory import PRECISIONS, activation_bytes, memory_infer, memory_train
from .poly import Poly
from .timing import DeviceProfile, builtin_devices, design_step_poly, load_profile, local_profile_path, step_seconds

_MEMORY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
          "ki": 2 ** 10, "kib": 2 ** 10, "mi": 2 ** 20, "mib": 2 ** 20, "gi": 2 ** 30, "gib": 2 ** 30,
          "ti": 2 ** 40, "tib": 2 ** 40}


MIN_BARE_BYTES = 2 ** 20  # a number without a unit is bytes only from 1 MiB: "--memory 8" is a unit forgotten


def parse_memory(text) -> float:
    """Bytes from '24GB' (10⁹), '24GiB' (2³⁰), '512MB', '1.5e10' (a bare number is bytes, and must be at least
    1 MiB: '8' is refused, never read as 8 bytes). ValueError when negative or unreadable."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = _MEMORY.match(str(text))
        if not match:
            raise ValueError(f"memory {text!r} is not a size (examples: 24GB, 80GiB, 512MB)")
        value = float(match.group(1)) * _UNITS[(match.group(2) or "").lower()]
        if not match.group(2) and 0 < value < MIN_BARE_BYTES:
            raise ValueError(f"memory {str(text).strip()!r} has no unit: {str(text).strip()}GB (10⁹ bytes) or "
                             f"{str(text).strip()}GiB (2³⁰ bytes)? (a bare number is bytes, at least {MIN_BARE_BYTES:,})")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"memory must be a positive size, got {text!r}")
    return value


def _positive_int(text) -> int:
    value = int(str(text).strip())
    if value < 1:
        raise ValueError("must be a positive integer")
    return value


def _slowdown(text) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 1.0:
        raise ValueError("must be a number ≥ 1 (the step time relative to the base model)")
    return value


def _memory_text(text) -> str:
    parse_memory(text)
    return str(text).strip()


def default_device() -> str:
    """``local`` once pals-calibrate has measured this machine, else ``h100``."""
    return "local" if local_profile_path().is_file() else "h100"


@dataclass(frozen=True)
class Machine:
    batch: int = field(default=32, metadata={"help": "B, sequences per training step (memory and time are per step)",
                                             "parse": _positive_int, "optional": False})
    device: Optional[str] = field(default=None, metadata={
        "help": "device profile for step times: h100, a100, l4, t4, local (measured by pals-calibrate) or a profile "
                ".json; none = local when calibrated, else h100", "metavar": "NAME|JSON"})
    precision: str = field(default="fp32", metadata={
        "help": "fp32 (exact memory) or bf16 (mixed-precision estimate: 2-byte activations, bf16 matmul rate)",
        "choices": lambda: list(PRECISIONS)})
    memory: Optional[str] = field(default=None, metadata={
        "help": "memory budget for one training step (weights + gradients + AdamW + activations), e.g. 24GB, 80GiB "
                "(a bare number is bytes, at least 1 MiB)",
        "parse": _memory_text, "metavar": "SIZE"})
    max_slowdown: Optional[float] = field(default=None, metadata={
        "help": "time budget: step time ≤ R × the base model's, e.g. 1.2", "parse": _slowdown, "metavar": "R"})

    @property
    def memory_bytes(self) -> Optional[float]:
        return parse_memory(self.memory) if self.memory is not None else None

    def profile(self) -> DeviceProfile:
        return load_profile(self.device if self.device is not None else default_device())

    def conditions(self, base: Conditions, profile: Optional[DeviceProfile] = None) -> Conditions:
        """The model's dropout and attention, on this device's backend and precision (``profile``: this machine's,
        when the caller holds it already)."""
        return _on_device(base, (profile or self.profile()).kind, 2 if self.precision == "bf16" else 4)


@lru_cache(maxsize=256)
def _on_device(base: Conditions, backend: str, float_bytes: int) -> Conditions:
    return replace(base, backend=backend, float_bytes=float_bytes)


def _base_design(ds):
    """The base model with one task head (``shared``, nothing frozen): the reference of ``time_ratio``."""
    from .config import AdapterConfig
    from .costs import design

    return design(ds.model, ds.tasks[:1], AdapterConfig(method="shared"), convention=ds.convention, seq_len=ds.seq_len)


def base_step_seconds(ds, machine: Machine, cond: Conditions, profile: Optional[DeviceProfile] = None) -> float:
    """The base model's step time (one task head): the same for every row of a table, so computed once."""
    profile = profile or machine.profile()
    key = (ds.model, ds.tasks[0], ds.convention, ds.seq_len, machine.batch, cond, profile, machine.precision)
    if key not in _BASE_STEP:
        _BASE_STEP[key] = step_seconds(_base_design(ds), None, machine.batch, cond, profile, machine.precision)
    return _BASE_STEP[key]


_BASE_STEP: dict[tuple, float] = {}


def time_ratio(ds, s: Optional[int], machine: Optional["Machine"] = None,
               model_cond: Optional[Conditions] = None) -> Optional[float]:
    """Predicted training-step time of ``ds`` at size ``s`` ÷ the base model's with one task head (docs/design.md §10)
    on ``machine`` (the default machine when None): the ``time_ratio`` of a row, alone (no memory work), for a caller
    that ranks designs. None where the time model has nothing to say (a family it does not replay, no profile)."""
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
    from .costs import design

    key = (ds.model, ds.tasks, repr(ds.config), ds.seq_len)
    found = _EXACT.get(key)
    if found is None:
        if len(_EXACT) >= 1024:
            _EXACT.clear()
        found = _EXACT[key] = design(ds.model, ds.tasks, ds.config, convention="exact", seq_len=ds.seq_len,
                                     check_size=False)
    return found


_EXACT: dict = {}


def resources(cost, ds, machine: Machine, model_cond: Conditions, profile: Optional[DeviceProfile] = None) -> None:
    """Fill ``cost``'s memory_train, memory_infer, time_step_s and time_ratio (at ``cost.d_s``); ``profile``: the
    machine's device profile, when the caller holds it already."""
    from .costs import evaluate

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
    fits = True
    if machine.memory is not None:
        fits = fits and mem.total <= machine.memory_bytes
    if machine.max_slowdown is not None:
        fits = fits and cost.time_ratio <= machine.max_slowdown * (1 + 1e-12)
    cost.feasible = cost.feasible and fits


def memory_poly(ds, machine: Machine, cond: Conditions) -> Poly:
    """memory_train.total as a polynomial in d_s: weights 4·N_total, gradients 4·N_trained, AdamW 8·N_trained + 4 per
    tensor (their number does not depend on d_s), activations."""
    from .memory import trainable_tensors

    ds = exact(ds)
    n_total = ds.extra + ds.n_base
    return n_total * 16 + (4 * trainable_tensors(ds) - 12 * ds.frozen) + activation_bytes(ds, machine.batch, cond)


def time_poly(ds, machine: Machine, cond: Conditions, profile: Optional[DeviceProfile] = None) -> tuple[float, float, float]:
    """(a, b, c) with step seconds = a·s² + b·s + c: every op's cost is at most quadratic in d_s, so the time model
    run on d_s itself gives them (``timing.design_step_poly``)."""
    return design_step_poly(ds, machine.batch, cond, profile or machine.profile(), machine.precision).coefficients


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


def supported(ds) -> bool:
    """The design's family has a ``Replay`` (``budget.families``): its memory and step time are modelled."""
    from .families import get_family

    return get_family(getattr(ds.model, "family", "bert")).replay is not None


def check_supported(ds, machine: Machine) -> None:
    if not supported(ds) and (machine.memory is not None or machine.max_slowdown is not None):
        from .memory import replay_of

        try:
            replay_of(ds.model)
        except ValueError as e:
            raise ValueError(f"{e}: drop --memory / --max-slowdown") from None


def constrain(cost, ds, machine: Machine, model_cond: Conditions, *, solved: bool,
              profile: Optional[DeviceProfile] = None):
    """Fill ``cost``'s machine figures; for a ``solved`` sized design, lower d_s to what the memory and time budgets
    allow too (closed form: both are quadratics in d_s) and say which constraint binds. ``profile``: the machine's
    device profile, when the caller holds it (a table reads it once for all its rows)."""
    from .costs import evaluate

    check_supported(ds, machine)
    if not supported(ds):
        return cost
    profile = profile or machine.profile()
    cond = machine.conditions(model_cond, profile)
    sizes = {}
    if solved and ds.method.sized and cost.d_s is not None:
        sizes["params"] = cost.d_s
        if machine.memory is not None:
            sizes["memory"] = memory_poly(ds, machine, cond).largest_root_below(machine.memory_bytes)
        if machine.max_slowdown is not None:
            limit = machine.max_slowdown * base_step_seconds(ds, machine, cond, profile)
            sizes["time"] = largest_root(*time_poly(ds, machine, cond, profile), limit)
    if len(sizes) > 1:
        binding = min(sizes, key=lambda k: sizes[k])
        step = ds.step
        s = sizes[binding]
        s = cost.d_s if binding == "params" else (max(step, int(s // step) * step) if s >= step else step)
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
        cost.binding = "params"
    elif cost.memory_train is not None:
        broken = [k for k, bad in (("params", cost.slack is not None and cost.slack < 0),
                                   ("memory", machine.memory is not None and cost.memory_train["total"] > machine.memory_bytes),
                                   ("time", machine.max_slowdown is not None and cost.time_ratio > machine.max_slowdown))
                  if bad]
        cost.binding = broken[0] if broken else None
    return cost


__all__ = ["constrain", "Machine", "parse_memory", "resources", "builtin_devices", "largest_root", "memory_poly", "time_poly",
           "base_step_seconds", "default_device"]
