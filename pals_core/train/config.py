"""``TrainConfig``: everything one multi-task training run depends on (paper Section 4 defaults).

Defaults are the paper's: 60,000 steps of single-task batches of 32, max length 128, AdamW
lr 2e-5 (β 0.9/0.999, weight decay 0.01, none on biases/LayerNorm), 10 % linear warm-up then linear
decay to zero, gradient clipping at 1.0, annealed task sampling with 2400-step epochs.

``budget`` (a ratio B: N_total ≤ B·N_base) replaces ``adapter.d_s`` by the calculator's solution
(``pals_core.budget.solve``, exact convention, for this model and these tasks); see ``resolve``.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Optional

from ..budget.config import AdapterConfig
from ..data.glue import GLUE_DIR_ENV
from ..data.samplers import ALPHA_SHAPES, SAMPLERS
from ..data.tasks import parse_task_list

DEVICES = ("auto", "cpu", "cuda")
MIXED_PRECISION = ("auto", "no", "bf16", "fp16")
GLUE_SOURCES = ("auto", "files", "hub")
TINY = "tiny"

# fields that may differ between a run and its resumption (they do not change the numbers)
RESUME_FREE = ("out", "device", "glue_dir", "cache_dir", "num_threads", "glue_source")


@dataclass
class TrainConfig:
    tasks: list[str]
    adapter: AdapterConfig
    model: Optional[str] = None  # local HF BERT folder; None = embedded MiniLM; "tiny" = random tiny BERT
    glue_dir: Optional[str] = field(default_factory=lambda: os.environ.get(GLUE_DIR_ENV) or None)
    out: str = "runs/pals-train"
    steps: int = 60000
    batch_size: int = 32
    max_len: int = 128
    lr: float = 2e-5
    weight_decay: float = 0.01
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-6  # BERT's Adam ε
    warmup: float = 0.1  # fraction of steps
    grad_clip: Optional[float] = 1.0  # max global gradient norm; None = off
    sampling: str = "annealed"  # round_robin, uniform, proportional, sqrt, annealed, alpha_schedule, …
    alpha_start: float = 1.0  # alpha_schedule only
    alpha_end: float = 0.2
    alpha_shape: str = "linear"
    epoch_steps: int = 2400
    eval_every: int = 1000
    save_every: Optional[int] = None  # checkpoint period in steps; None = at every evaluation
    eval_batch_size: int = 128
    max_train_examples: Optional[int] = None  # per task: a fixed random subset of this size
    max_eval_examples: Optional[int] = None
    seed: int = 0
    device: str = "auto"  # auto (CUDA when present), cpu, cuda
    mixed_precision: str = "auto"  # auto = bf16 autocast on a CUDA device that has it, else none
    budget: Optional[float] = None  # ratio; d_s from the calculator's solver
    glue_source: str = "auto"  # auto, files (glue_dir), hub (nyu-mll/glue)
    cache_dir: Optional[str] = None  # tokenisation cache; None = $PALS_CACHE_DIR or the datasets cache
    num_threads: Optional[int] = None  # torch CPU threads; None = torch's default

    def __post_init__(self) -> None:
        if isinstance(self.tasks, str):
            self.tasks = [t for t in self.tasks.split(",") if t.strip()]
        self.tasks = list(self.tasks)
        if isinstance(self.adapter, dict):
            self.adapter = AdapterConfig.from_dict(self.adapter)
        self.adam_betas = tuple(self.adam_betas)

    # --- (de)serialisation --------------------------------------------------------------------------

    def as_dict(self) -> dict:
        d = asdict(self)
        d["adapter"] = self.adapter.as_dict()
        d["adam_betas"] = list(self.adam_betas)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig field(s): {', '.join(unknown)}")
        return cls(**d)

    # --- checks -------------------------------------------------------------------------------------

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field (before any file or weight is touched)."""
        if not isinstance(self.adapter, AdapterConfig):
            raise ValueError(f"adapter must be an AdapterConfig, got {type(self.adapter).__name__}")
        self.tasks = parse_task_list(self.tasks)
        for name in ("steps", "batch_size", "max_len", "epoch_steps", "eval_every", "eval_batch_size"):
            _positive_int(name, getattr(self, name))
        for name in ("save_every", "max_train_examples", "max_eval_examples", "num_threads"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        if self.max_len < 8 or self.max_len > 512:
            raise ValueError(f"max_len must be between 8 and 512, got {self.max_len}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        _finite("lr", self.lr, low=0.0, strict=True)
        _finite("weight_decay", self.weight_decay, low=0.0)
        _finite("warmup", self.warmup, low=0.0)
        if self.warmup > 1:
            raise ValueError(f"warmup is a fraction of the steps (0 … 1), got {self.warmup}")
        _finite("adam_eps", self.adam_eps, low=0.0, strict=True)
        if len(self.adam_betas) != 2 or not all(0 <= b < 1 for b in self.adam_betas):
            raise ValueError(f"adam_betas must be two numbers in [0, 1), got {self.adam_betas}")
        if self.grad_clip is not None:
            _finite("grad_clip", self.grad_clip, low=0.0, strict=True)
        if self.sampling not in SAMPLERS:
            raise ValueError(f"unknown sampling {self.sampling!r} ({', '.join(SAMPLERS)})")
        if self.alpha_shape not in ALPHA_SHAPES:
            raise ValueError(f"unknown alpha shape {self.alpha_shape!r} ({', '.join(ALPHA_SHAPES)})")
        _finite("alpha_start", self.alpha_start)
        _finite("alpha_end", self.alpha_end)
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r} ({', '.join(DEVICES)}; pick GPUs with CUDA_VISIBLE_DEVICES)")
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"unknown mixed precision {self.mixed_precision!r} ({', '.join(MIXED_PRECISION)})")
        if self.glue_source not in GLUE_SOURCES:
            raise ValueError(f"unknown GLUE source {self.glue_source!r} ({', '.join(GLUE_SOURCES)})")
        if self.budget is not None:
            _finite("budget", self.budget, low=1.0)
        if not self.out:
            raise ValueError("out (the run directory) must be given")
        if self.model is not None and self.model != TINY and not os.path.isfile(os.path.join(self.model, "config.json")):
            raise ValueError(f"no BERT checkpoint at {self.model!r} (a folder with config.json; or 'tiny', or none for MiniLM)")

    def resumable_view(self) -> dict:
        """The fields that must match for ``--resume`` to continue this run."""
        d = self.as_dict()
        for k in RESUME_FREE:
            d.pop(k, None)
        return d

    def with_(self, **changes: Any) -> "TrainConfig":
        return replace(self, **changes)


def _positive_int(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _finite(name: str, value: Any, *, low: Optional[float] = None, strict: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if low is not None and (value < low or (strict and value == low)):
        raise ValueError(f"{name} must be {'above' if strict else 'at least'} {low:g}, got {value!r}")
