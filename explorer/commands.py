"""A chosen design → a ``pals-train`` run: its argument list, and the same as shell commands.

``TrainSpec.argv(out)`` is what the launcher hands to ``subprocess.Popen`` (a list, never a shell
string); ``command``/``accelerate_command``/``torchrun_command`` are what a person would type,
quoted with ``shlex.join``. Flags follow the trainer's CLI (``pals_core/train/cli.py``).
"""
from __future__ import annotations

import shlex
import sys
from dataclasses import asdict, dataclass, field
from typing import Optional

from pals_core.budget import get_method, glue_task

TRAIN_MODULE = "pals_core.train.cli"
MODEL_TINY = "tiny"  # a random tiny BERT, for smoke runs
MODEL_DEFAULT = ""  # the trainer's default: the embedded pretrained MiniLM


@dataclass(frozen=True)
class TrainSpec:
    """One training run. ``d_s`` or ``budget`` (a ratio the trainer solves) for sized methods."""

    method: str
    tasks: tuple[str, ...]
    d_s: Optional[int] = None
    budget: Optional[float] = None
    location: Optional[str] = None
    heads: int = 12
    model: str = MODEL_DEFAULT
    glue_dir: str = ""
    steps: int = 200
    batch_size: int = 16
    lr: float = 2e-5
    max_len: int = 128
    eval_every: int = 50
    max_train_examples: Optional[int] = None
    max_eval_examples: Optional[int] = None
    seed: int = 0
    freeze_trunk: bool = False
    per_task_pooler: bool = False
    threads: Optional[int] = None  # torch CPU threads; None = torch's default
    extra: tuple[str, ...] = field(default=())  # further flags, passed as they are

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first field the trainer would refuse."""
        method = get_method(self.method)
        if not self.tasks:
            raise ValueError("choose at least one GLUE task to train on")
        for t in self.tasks:
            glue_task(t)
        if method.sized:
            if (self.d_s is None) == (self.budget is None):
                raise ValueError(f"method {method.name!r} needs either an adapter size d_s or a budget ratio")
            if self.d_s is not None and self.d_s < 1:
                raise ValueError(f"d_s must be a positive integer, got {self.d_s}")
            if self.d_s is not None and method.attention and self.d_s % self.heads:
                raise ValueError(f"d_s = {self.d_s} is not divisible by the {self.heads} adapter heads of {method.name!r}")
            if self.budget is not None and self.budget < 1.0:
                raise ValueError(f"budget ratio must be at least 1.0, got {self.budget}")
        elif self.d_s is not None or self.budget is not None:
            raise ValueError(f"method {method.name!r} has no adapter size; give neither d_s nor a budget")
        if self.location is not None and not method.within:
            raise ValueError(f"method {method.name!r} takes no location")
        for what, value in (("steps", self.steps), ("batch size", self.batch_size), ("max length", self.max_len),
                            ("eval every", self.eval_every), ("adapter heads", self.heads)):
            if value < 1:
                raise ValueError(f"{what} must be a positive integer, got {value}")
        for what, value in (("max train examples", self.max_train_examples), ("max eval examples", self.max_eval_examples),
                            ("CPU threads", self.threads)):
            if value is not None and value < 1:
                raise ValueError(f"{what} must be a positive integer (or empty for all), got {value}")
        if not self.lr > 0:
            raise ValueError(f"learning rate must be positive, got {self.lr}")

    def check_with_trainer(self, out: str) -> None:
        """Parse the flags with the trainer's own parser and checks (``pals_core.train.cli``; no torch,
        nothing written). Raises ``ValueError`` with the trainer's message."""
        try:
            from pals_core.train.cli import UsageError, build_parser, config_from_args
        except ImportError:  # the trainer is not installed: the run reports its own errors
            return
        try:
            cfg, _ = config_from_args(vars(build_parser().parse_args(self.args(out))))
            cfg.validate()
        except (UsageError, TypeError) as e:
            raise ValueError(str(e)) from None

    def args(self, out: str, *, resume: bool = False) -> list[str]:
        """The trainer's flags for this run, writing to ``out``."""
        a = ["--method", self.method]
        if self.d_s is not None:
            a += ["--d-s", str(self.d_s)]
        if self.budget is not None:
            a += ["--budget", f"{self.budget:g}"]
        a += ["--tasks", ",".join(self.tasks)]
        if self.location is not None:
            a += ["--location", self.location]
        a += ["--heads", str(self.heads)]
        if self.model:
            a += ["--model", self.model]
        if self.glue_dir:
            a += ["--glue-dir", self.glue_dir]
        a += ["--steps", str(self.steps), "--batch-size", str(self.batch_size), "--lr", f"{self.lr:g}",
              "--max-len", str(self.max_len), "--eval-every", str(self.eval_every)]
        if self.max_train_examples is not None:
            a += ["--max-train-examples", str(self.max_train_examples)]
        if self.max_eval_examples is not None:
            a += ["--max-eval-examples", str(self.max_eval_examples)]
        if self.threads is not None:
            a += ["--threads", str(self.threads)]
        a += ["--seed", str(self.seed), "--out", out]
        if self.freeze_trunk:
            a.append("--freeze-trunk")
        if self.per_task_pooler:
            a.append("--per-task-pooler")
        a += list(self.extra)
        if resume:
            a.append("--resume")
        return a

    def argv(self, out: str, *, resume: bool = False) -> list[str]:
        """What the launcher runs: this Python, ``-m pals_core.train.cli``, the flags."""
        return [sys.executable, "-m", TRAIN_MODULE, *self.args(out, resume=resume)]

    def command(self, out: str) -> str:
        return shlex.join(["pals-train", *self.args(out)])

    def accelerate_command(self, out: str, gpus: int) -> str:
        return shlex.join(["accelerate", "launch", "--num_processes", str(gpus), "-m", TRAIN_MODULE, *self.args(out)])

    def torchrun_command(self, out: str, gpus: int) -> str:
        return shlex.join(["torchrun", "--standalone", "--nproc_per_node", str(gpus), "-m", TRAIN_MODULE, *self.args(out)])

    def as_dict(self) -> dict:
        d = asdict(self)
        d["tasks"] = list(self.tasks)
        d["extra"] = list(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainSpec":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known["tasks"] = tuple(known.get("tasks", ()))
        known["extra"] = tuple(known.get("extra", ()))
        return cls(**known)
