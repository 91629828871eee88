"""Counting forward FLOPs of a ``MultiTaskBert`` with ``torch.utils.flop_counter.FlopCounterMode``.

The convention is FlopCounterMode's (docs/design.md "FLOPs"): matrix multiplies only, 2 FLOPs per
multiply-add; attention's QKᵀ and AV count 2·n²·width each. FlopCounterMode has no formula for
the CPU kernel of ``F.scaled_dot_product_attention``
(``aten._scaled_dot_product_flash_attention_for_cpu``), so on CPU attention would count 0:
``register_cpu_sdpa_formulas()`` (idempotent; called by every counter here) registers torch's own
``sdpa_flop_count`` for it, and the backward formula for its backward kernel.

An instrument of the tests (the calculator's FLOPs against torch's), not part of the installed package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.flop_counter import (
    FlopCounterMode,
    flop_registry,
    register_flop_formula,
    sdpa_backward_flop_count,
    sdpa_flop_count,
)

from pals_core.families.registry import get_family

_aten = torch.ops.aten


def register_cpu_sdpa_formulas() -> None:
    """Register FLOP formulas for the CPU sdpa kernels (forward and backward) once."""
    forward = _aten._scaled_dot_product_flash_attention_for_cpu
    if forward not in flop_registry:

        @register_flop_formula(forward)
        def _sdpa_cpu(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
            return sdpa_flop_count(query_shape, key_shape, value_shape)

    backward = getattr(_aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
    if backward is not None and backward not in flop_registry:

        @register_flop_formula(backward)
        def _sdpa_cpu_backward(
            grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs
        ) -> int:
            return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def count_flops(fn: Callable[..., Any], *args, **kwargs) -> int:
    """Total FLOPs FlopCounterMode counts while ``fn(*args, **kwargs)`` runs."""
    register_cpu_sdpa_formulas()
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return counter.get_total_flops()


def _inputs(model, n: int, batch: int, task: str | None = None) -> dict[str, torch.Tensor]:
    """``batch`` rows of n tokens: (batch, n), or (batch, k, n) for a multiple-choice ``task`` (k candidates a row)."""
    get_family(model.shape.family).check_seq_len(model.shape, n)
    device = next(model.bert.parameters()).device
    k = model.tasks[task] if task in getattr(model, "per_candidate", ()) else 1
    shape = (batch, k, n) if k != 1 else (batch, n)
    ids = torch.arange(batch * k * n, device=device).view(shape) % model.shape.vocab
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}


def _counted(model, fn: Callable[[], Any]) -> int:
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return count_flops(fn)
    finally:
        model.train(was_training)


def count_forward_flops(model, task: str, n: int, *, batch: int = 1) -> int:
    """FLOPs of ``model(task=…)`` on ``batch`` rows of n tokens (a multiple-choice task's row: its k candidates'
    sequences) (eval mode, no grad). Equals the calculator's ``flops_per_seq`` for batch 1 and the first task."""
    inputs = _inputs(model, n, batch, task)
    return _counted(model, lambda: model(task=task, **inputs))


def count_predict_all_flops(model, n: int, *, batch: int = 1) -> int:
    """FLOPs of ``model.predict_all`` (every task, shared operations) — the calculator's
    ``flops_all_tasks_per_seq`` for batch 1. A multiple-choice task reads its own rows (k candidate sequences): it
    runs on them through its own ``forward``, the others share ``predict_all`` on one row."""
    own = [t for t in model.tasks if t in getattr(model, "per_candidate", ())]
    alike = [t for t in model.tasks if t not in own]
    inputs = _inputs(model, n, batch)
    shared = _counted(model, lambda: model.predict_all(**inputs, tasks=alike)) if alike else 0
    return shared + sum(count_forward_flops(model, t, n, batch=batch) for t in own)
