"""The learning-rate schedule: linear warm-up, then linear decay to 0 (BERT, Devlin et al. 2019, appendix A.2; the
schedule of the PALs paper's runs).

    factor(s) = s / max(1, W)                 for s < W
              = max(0, (S − s) / max(1, S − W))  otherwise

with W warm-up steps and S steps in all; the learning rate at step s is lr · factor(s). This is the same function as
``transformers.get_linear_schedule_with_warmup`` — written here because importing that one loads
``transformers.trainer_utils`` and through it all of peft (seconds at every ``pals-train`` start) — and the same
scheduler state: a checkpoint written with either resumes with the other.
"""

from __future__ import annotations

import functools

import torch


def linear_warmup_decay(step: int, *, warmup: int, total: int) -> float:
    """The factor on the learning rate at ``step`` (formula above)."""
    if step < warmup:
        return float(step) / float(max(1, warmup))
    return max(0.0, float(total - step) / float(max(1, total - warmup)))


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int, total: int) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` over :func:`linear_warmup_decay` (a ``functools.partial``, as transformers', so the saved
    scheduler state has the same form)."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, functools.partial(linear_warmup_decay, warmup=warmup, total=total)
    )
