"""Seconds of one training step (forward + backward) of a task's path on a device (SPEC section 10). Pure Python.

FLOPs alone miss what dominates adapters on real hardware: narrow matmuls move as many bytes as they compute,
every op costs a kernel launch (or an autograd node on CPU), dropout draws a random number per element, and
attention costs per score element — B·h·n² of them per layer, as many for PALs' twelve narrow heads as for the
trunk's. The symbolic forward of ``budget.activations`` lists every op of the path with its shapes and which
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
model trained). Profiles: datasheet figures for GPUs (``pals_core/budget/devices/*.json``, estimates: fp32 runs
on the CUDA cores, bf16 on the tensor cores) and ``local``, measured on this machine by ``pals-calibrate``.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Optional, Union

from .activations import Conditions, Trace

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
    matmul_flops_bf16: Optional[float] = None  # tensor-core bf16 FLOP/s (estimate for --precision bf16)
    memory_bytes: Optional[float] = None  # device memory (a --memory default)
    threads: Optional[int] = None  # the thread count the profile was measured with (local)
    source: str = ""

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
            if (not isinstance(v, (list, tuple)) or len(v) != 2
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
                               for x in v)):
                raise ValueError(f"device profile {self.name!r}: {f} must be two non-negative numbers [a, b]")
        for f in ("matmul_flops_bf16", "memory_bytes"):
            v = getattr(self, f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0):
                raise ValueError(f"device profile {self.name!r}: {f} must be a positive number or null, got {v!r}")
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, int)
                                         or not 1 <= self.threads <= 100_000):
            raise ValueError(f"device profile {self.name!r}: threads must be a positive integer or null, "
                             f"got {self.threads!r}")

    def as_dict(self) -> dict:
        d = asdict(self)
        d["flash_forward"], d["flash_backward"] = list(self.flash_forward), list(self.flash_backward)
        return d

    @classmethod
    def from_dict(cls, d: dict, where: str = "profile") -> "DeviceProfile":
        if not isinstance(d, dict):
            raise ValueError(f"device profile {where} is not a JSON object")
        known = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is not None and f.name not in ("source",)} - {
            "matmul_flops_bf16", "memory_bytes", "threads"}
        missing = sorted(k for k in required if k not in d and k != "source")
        if missing:
            raise ValueError(f"device profile {where} lacks {', '.join(missing)}")
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"device profile {where} has unknown fields {', '.join(unknown)}")
        try:
            return cls(**{**d, "flash_forward": tuple(d["flash_forward"]), "flash_backward": tuple(d["flash_backward"])})
        except TypeError as e:
            raise ValueError(f"device profile {where} is malformed: {e}") from None


def builtin_devices() -> list[str]:
    return sorted(p.stem for p in DEVICES_DIR.glob("*.json")) + ["local"]


def load_profile(spec: Union[str, os.PathLike, DeviceProfile]) -> DeviceProfile:
    """A built-in name (``h100``, ``a100``, ``l4``, ``t4``), ``local`` (pals-calibrate's) or a profile JSON path."""
    if isinstance(spec, DeviceProfile):
        return spec
    text = str(spec)
    if text == "local":
        path = local_profile_path()
        if not path.is_file():
            raise ValueError(f"no local device profile at {path}: run pals-calibrate first")
    elif (DEVICES_DIR / f"{text.lower()}.json").is_file():
        path = DEVICES_DIR / f"{text.lower()}.json"
    elif text.endswith(".json") or os.sep in text:
        path = Path(text)
        if not path.is_file():
            raise ValueError(f"device profile not found: {path}")
    else:
        raise ValueError(f"unknown device {text!r} (devices: {', '.join(builtin_devices())}; or a profile .json)")
    key = (str(path.resolve()), path.stat().st_mtime_ns)
    if key not in _PROFILES:  # read once per file version (the explorer asks for every row of every redraw)
        from ..atomic import read_json_file

        _PROFILES[key] = DeviceProfile.from_dict(read_json_file(path, "device profile"), where=str(path))
    return _PROFILES[key]


_PROFILES: dict[tuple[str, int], "DeviceProfile"] = {}


# --------------------------------------------------------------------------------------------- the model

def _mm(p: DeviceProfile, m: float, k: float, n: float, flops_rate: float) -> float:
    return 2 * m * k * n / flops_rate + 4 * (m * k + k * n + m * n) / p.bandwidth + p.kernel_overhead_s


def work_seconds(tr: Trace, s: int, p: DeviceProfile, precision: str = "fp32") -> float:
    """Seconds of the forward + backward the trace ``tr`` records, at adapter size ``s``."""
    fb = tr.cond.float_bytes
    rate = p.matmul_flops_bf16 if (precision == "bf16" and p.matmul_flops_bf16) else p.matmul_flops
    bw, ov = p.bandwidth, p.kernel_overhead_s
    b, n = tr.batch, tr.seq_len
    total = 0.0
    for kind, *a in tr.work:
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
            total += el * p.special_s_per_element * (2 if grad else 1) + nbytes(s) * (2 + (3 if grad else 0)) / bw \
                + ov * (2 if grad else 1)
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


def step_seconds(ds, s: Optional[int], batch: int, cond: Conditions, profile: DeviceProfile,
                 precision: str = "fp32") -> float:
    """Predicted seconds of one training step (forward + backward) of ``ds``'s first task at size ``s``."""
    from .memory import trace_forward

    return work_seconds(trace_forward(ds, batch, cond), s or 0, profile, precision)
