"""Seconds of one training step (forward + backward) of a task's path on a device (docs/design.md "Time"). Pure Python.

FLOPs alone miss what dominates adapters on real hardware: narrow matmuls move as many bytes as they compute,
every op costs a kernel launch (or an autograd node on CPU), dropout draws a random number per element, and
attention costs per score element — B·h·n² of them per layer, as many for PALs' twelve narrow heads as for the
trunk's. The symbolic forward of ``pricing.activations`` lists every op of the path with its shapes and which
gradients it needs; each op costs, on a ``DeviceProfile`` P,

    matmul  (M×K by K×N; forward, + dX if its input needs grad, + dW if its weight trains), each of them
            2·M·K·N / P.matmul_flops + 4·(M·K + K·N + M·N) / P.bandwidth + P.kernel_overhead_s
    elementwise (add, mul, LayerNorm, copies):  bytes · passes / P.bandwidth + kernels · P.kernel_overhead_s
    GELU, tanh, softmax:  elements · P.special_s_per_element (forward; again backward) + their memory passes
    dropout:  elements · P.rng_s_per_element + 6 passes forward, 3 backward
    attention (B·h·n² score elements E, head width d_h):
            fused kernel (sdpa without dropout):  E · (a + b·d_h) forward, E · (a' + b'·d_h) backward
            math / eager kernel (dropout on CPU, eager): 2 bmm forward + 4 backward as matmuls, softmax on E,
            the dropout on E, the q/k/v/context copies
    embeddings: gather forward; backward zero-fills each trained table (rows·d) and scatter-adds into it

``time_ratio`` = step time of the design / step time of the base model with one task head (``shared``, the whole
model trained). Profiles: datasheet figures for GPUs (``pals_core/footprint/devices/*.json``, estimates: fp32 runs
on the CUDA cores, bf16 on the tensor cores) and ``local``, measured on this machine by ``pals-calibrate``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields
from functools import cache, lru_cache
from pathlib import Path

from ..pricing.activations import Conditions, Trace
from ..pricing.poly import S_FLOAT, FloatPoly
from .memory import trace_forward

DEVICES_DIR = Path(__file__).with_name("devices")
LOCAL_ENV = "PALS_LOCAL_PROFILE"  # where pals-calibrate writes (and --device local reads) the local profile


def local_profile_path() -> Path:
    """$PALS_LOCAL_PROFILE, else ~/.cache/pals-explorer/local.json."""
    env = os.environ.get(LOCAL_ENV)
    return Path(env) if env else Path.home() / ".cache" / "pals-explorer" / "local.json"


@dataclass(frozen=True)
class DeviceProfile:
    """What one device does per second (SI units). ``kind``: cpu or cuda (decides dropout masks and kernels)."""

    name: str
    kind: str
    matmul_flops: float  # FLOP/s of fp32 matmuls
    bandwidth: float  # bytes/s of main (or GPU) memory
    kernel_overhead_s: float  # per op launched (GPU launch; CPU dispatch + autograd node)
    rng_s_per_element: float  # dropout's random draw
    special_s_per_element: float  # exp / erf / tanh per element
    flash_forward: tuple[float, float]  # (a, b): fused attention forward, seconds per score element = a + b·d_h
    flash_backward: tuple[float, float]  # the same for its backward
    matmul_flops_bf16: float | None = None  # tensor-core bf16 FLOP/s (estimate for --precision bf16)
    memory_bytes: float | None = None  # device memory (a --memory default)
    threads: int | None = None  # the thread count the profile was measured with (local)
    source: str = ""
    match: str | None = None  # a GPU's profile: the word its driver's name holds ("H100" in "NVIDIA H100 80GB HBM3")
    host: str | None = None  # a measured profile (local): the host it was measured on

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"device profile: name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.source, str):
            raise ValueError(f"device profile {self.name!r}: source must be a string, got {self.source!r}")
        if self.kind not in ("cpu", "cuda"):
            raise ValueError(f"device profile {self.name!r}: kind must be cpu or cuda, got {self.kind!r}")
        for f in ("matmul_flops", "bandwidth"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"device profile {self.name!r}: {f} must be a positive number, got {v!r}")
        for f in ("kernel_overhead_s", "rng_s_per_element", "special_s_per_element"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"device profile {self.name!r}: {f} must be a non-negative number, got {v!r}")
        for f in ("flash_forward", "flash_backward"):
            v = getattr(self, f)
            if (
                not isinstance(v, (list, tuple))
                or len(v) != 2
                or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0 for x in v
                )
            ):
                raise ValueError(f"device profile {self.name!r}: {f} must be two non-negative numbers [a, b]")
        for f in ("matmul_flops_bf16", "memory_bytes"):
            v = getattr(self, f)
            if v is not None and (
                isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0
            ):
                raise ValueError(f"device profile {self.name!r}: {f} must be a positive number or null, got {v!r}")
        for f in ("match", "host"):
            v = getattr(self, f)
            if v is not None and (not isinstance(v, str) or not v.strip()):
                raise ValueError(f"device profile {self.name!r}: {f} must be a non-empty string or null, got {v!r}")
        if self.threads is not None and (
            isinstance(self.threads, bool) or not isinstance(self.threads, int) or not 1 <= self.threads <= 100_000
        ):
            raise ValueError(
                f"device profile {self.name!r}: threads must be a positive integer or null, got {self.threads!r}"
            )

    def as_dict(self) -> dict:
        d = asdict(self)
        d["flash_forward"], d["flash_backward"] = list(self.flash_forward), list(self.flash_backward)
        return d

    @classmethod
    def from_dict(cls, d: dict, where: str = "profile") -> DeviceProfile:
        if not isinstance(d, dict):
            raise ValueError(f"device profile {where} is not a JSON object")
        known = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is not None and f.name not in ("source",)} - {
            "matmul_flops_bf16",
            "memory_bytes",
            "threads",
            "match",
            "host",
        }
        missing = sorted(k for k in required if k not in d and k != "source")
        if missing:
            raise ValueError(f"{where} is not a device profile: it lacks {', '.join(missing)}")
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"device profile {where} has unknown fields {', '.join(unknown)}")
        try:
            return cls(
                **{**d, "flash_forward": tuple(d["flash_forward"]), "flash_backward": tuple(d["flash_backward"])}
            )
        except TypeError as e:
            raise ValueError(f"device profile {where} is malformed: {e}") from None


def builtin_devices() -> list[str]:
    return sorted(_builtin_names()) + ["local"]


@lru_cache(maxsize=1)
def _builtin_names() -> frozenset[str]:
    """The built-in profiles (``devices/*.json``: package data, read once per process; listed by ``os.listdir``, not
    ``Path.glob``, whose pattern is compiled at every start-up of ``pals-budget``)."""
    return frozenset(name[: -len(".json")] for name in os.listdir(DEVICES_DIR) if name.endswith(".json"))


@cache
def _builtin_profile(name: str) -> DeviceProfile:
    """A profile this package ships (trusted package data, parsed as it is; a profile someone gives goes through
    ``atomic.read_json_file``'s checks)."""
    path = DEVICES_DIR / f"{name}.json"
    return DeviceProfile.from_dict(json.loads(path.read_bytes()), where=str(path))


def _read_profile(path: str) -> DeviceProfile:
    from ..atomic import read_json_file  # the checked reader of a file someone gives (not needed for built-ins)

    return DeviceProfile.from_dict(read_json_file(path, "device profile"), where=path)


def load_profile(spec: str | os.PathLike | DeviceProfile) -> DeviceProfile:
    """A built-in name (``h100``, ``a100``, ``l4``, ``t4``), ``local`` (pals-calibrate's) or a profile JSON path.

    A built-in profile is read once per process; a file once per version (path, mtime, size: pals-calibrate may
    rewrite ``local`` while the explorer runs, which asks for every row of every redraw)."""
    if isinstance(spec, DeviceProfile):
        return spec
    text = str(spec)
    if text == "local":
        path = local_profile_path()
        missing = f"no local device profile at {path}: run pals-calibrate first"
    elif text.lower() in _builtin_names():
        return _builtin_profile(text.lower())
    elif text.endswith(".json") or os.sep in text:
        path = Path(text)
        missing = f"device profile not found: {path}"
    else:
        raise ValueError(f"unknown device {text!r} (devices: {', '.join(builtin_devices())}; or a profile .json)")
    try:
        st = os.stat(path)
    except OSError:
        raise ValueError(missing) from None
    if not os.path.isfile(path):
        kind = "a folder" if os.path.isdir(path) else "not a regular file"
        raise ValueError(
            f"{path} is {kind}, not a device profile (a profile .json, as pals-calibrate writes; or one of "
            f"{', '.join(builtin_devices())})"
        )
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    profile = _PROFILES.get(key)
    if profile is None:
        if len(_PROFILES) >= 256:
            _PROFILES.clear()
        profile = _PROFILES[key] = _read_profile(str(path))
    return profile


_PROFILES: dict[tuple[str, int, int], DeviceProfile] = {}


# --------------------------------------------------------------------------------------------- the model


def _mm(p: DeviceProfile, m: float, k: float, n: float, flops_rate: float) -> float:
    return 2 * m * k * n / flops_rate + 4 * (m * k + k * n + m * n) / p.bandwidth + p.kernel_overhead_s


def _ops(work):
    """Every op of a trace's work in order, a recorded part's (``("block", record)``) where it was replayed."""
    for entry in work:
        if entry[0] == "block":
            yield from _ops(entry[1].work)
        else:
            yield entry


def work_seconds(tr: Trace, s, p: DeviceProfile, precision: str = "fp32"):
    """Seconds of the forward + backward the trace ``tr`` records, at adapter size ``s``: the reference, op by op.
    On ``s = poly.S_FLOAT`` the same sum as a ``FloatPoly`` in d_s (``step_poly`` derives a design's so)."""
    fb = tr.cond.float_bytes
    rate = p.matmul_flops_bf16 if (precision == "bf16" and p.matmul_flops_bf16) else p.matmul_flops
    bw, ov = p.bandwidth, p.kernel_overhead_s
    b, n = tr.batch, tr.seq_len
    total = 0.0
    for kind, *a in _ops(tr.work):
        if kind == "mm":
            rows, x_bytes, out, dx, dw = a
            k = x_bytes(s) / fb / rows
            o = out(s)
            total += _mm(p, rows, k, o, rate) * (1 + bool(dx) + bool(dw))
        elif kind == "ew":
            nbytes, fwd, bwd, grad = a
            total += nbytes(s) * (fwd + (bwd if grad else 0)) / bw + ov * (1 + (1 if grad and bwd else 0))
        elif kind == "special":
            nbytes, grad = a
            el = nbytes(s) / fb
            total += (
                el * p.special_s_per_element * (2 if grad else 1)
                + nbytes(s) * (2 + (3 if grad else 0)) / bw
                + ov * (2 if grad else 1)
            )
        elif kind == "rng":
            el = a[0](s) / fb
            total += el * p.rng_s_per_element + ov
        elif kind == "embed":
            rows_table, width, trains = a
            w = width(s)
            total += 2 * b * n * w * fb / bw + ov
            if trains:
                total += (rows_table * w * 4 + 3 * b * n * w * fb) / bw + 2 * ov
        elif kind == "attn":
            kernel, heads, width, grad, dropout = a
            dh = width(s) / heads
            scores = b * heads * n * n
            if kernel == "flash":
                af, bf = p.flash_forward
                total += scores * (af + bf * dh) + ov
                if grad:
                    ab, bb = p.flash_backward
                    total += scores * (ab + bb * dh) + ov
                continue
            bh = b * heads
            per_bmm = _mm(p, n, dh, n, rate) * bh - ov * (bh - 1)  # one batched kernel
            total += per_bmm * (2 + (4 if grad else 0))
            el_bytes = scores * fb
            total += scores * p.special_s_per_element * (2 if grad else 1) + el_bytes * (2 + (3 if grad else 0)) / bw
            total += el_bytes * (2 + (2 if grad else 0)) / bw + ov * 2  # scale (and its backward)
            if kernel == "math":  # _safe_softmax's checks for fully masked rows
                total += el_bytes * 4 / bw + 3 * ov
            if dropout > 0:
                total += scores * p.rng_s_per_element + el_bytes * (6 + (3 if grad else 0)) / bw + 3 * ov
            total += 4 * b * n * width(s) * fb * (2 + (2 if grad else 0)) / bw + 4 * ov  # q, k, v, context copies
    return total


class _Ops:
    """Part of a trace's work (one op, or one record's ops) with the fields ``work_seconds`` reads."""

    __slots__ = ("cond", "batch", "seq_len", "work")

    def __init__(self, tr: Trace, work) -> None:
        self.cond, self.batch, self.seq_len, self.work = tr.cond, tr.batch, tr.seq_len, work


def _symbolic(tr: Trace, work, p: DeviceProfile, precision: str) -> FloatPoly:
    t = work_seconds(_Ops(tr, work), S_FLOAT, p, precision)
    return t if type(t) is FloatPoly else FloatPoly(0.0, 0.0, t)  # no op: 0.0


def step_poly(tr: Trace, p: DeviceProfile, precision: str = "fp32") -> FloatPoly:
    """``work_seconds(tr, s, p, precision)`` as a polynomial in s, derived once per trace, profile and precision: each
    distinct op priced once per shape (most ops recur: in every layer, in every design), each record's sum kept on the
    record (a layer of a kind, the embeddings, the head), then summed. Equal to the op-by-op sum at every s up to
    rounding (``tests/test_fast_path.py``)."""
    pk = (p, precision)
    poly = tr.times.get(pk)
    if poly is not None:
        return poly
    ops = _OP_TIMES.get(pk)
    if ops is None:
        if len(_OP_TIMES) >= 64:
            _OP_TIMES.clear()
        ops = _OP_TIMES[pk] = {}
    elif len(ops) >= 65536:
        ops.clear()
    shape = (tr.batch, tr.seq_len, tr.cond.float_bytes)

    def total(work) -> tuple[float, float, float]:
        a = b = c = 0.0
        for entry in work:
            if entry[0] == "block":
                record = entry[1]
                t = record.times.get(pk)
                if t is None:
                    t = record.times[pk] = total(record.work)
                ta, tb, tc = t
            else:
                key = (entry, shape)
                t = ops.get(key)
                if t is None:
                    t = ops[key] = _symbolic(tr, (entry,), p, precision)
                ta, tb, tc = t.a, t.b, t.c
            a += ta
            b += tb
            c += tc
        return a, b, c

    poly = tr.times[pk] = FloatPoly(*total(tr.work))
    return poly


_OP_TIMES: dict[tuple, dict] = {}  # (profile, precision) -> {(op, shape): FloatPoly}


def design_step_poly(ds, batch: int, cond: Conditions, profile: DeviceProfile, precision: str = "fp32") -> FloatPoly:
    """The step time of ``ds``'s first task as a polynomial in d_s (``step_poly`` of its trace)."""
    return step_poly(trace_forward(ds, batch, cond), profile, precision)


def step_seconds(
    ds, s: int | None, batch: int, cond: Conditions, profile: DeviceProfile, precision: str = "fp32"
) -> float:
    """Predicted seconds of one training step (forward + backward) of ``ds``'s first task at size ``s``: its
    ``design_step_poly`` at s (the op-by-op ``work_seconds`` of its trace, up to rounding)."""
    return design_step_poly(ds, batch, cond, profile, precision)(s or 0)
