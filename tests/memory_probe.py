"""Measuring what a ``MultiTaskBert`` really holds, to check the calculator's memory figures (docs/design.md "Memory
(bytes)").

- ``saved_activation_bytes``: the bytes autograd saves in one training-mode forward of one task — every tensor
  handed to ``torch.autograd.graph.saved_tensors_hooks``, each storage counted once, parameters excluded.
- ``optimizer_state_bytes``: the bytes of every tensor in ``torch.optim.AdamW``'s state after one step on each task.
- ``inference_peak_bytes``: the peak of live tensor bytes (a ``TorchDispatchMode`` that follows every output
  storage until it is freed) during ``predict_all`` under ``torch.inference_mode``.
- ``cuda_step_peak_bytes``: ``torch.cuda.max_memory_allocated`` over one training step on a CUDA device.

An instrument of the tests and of ``benchmarks/gpu_check.py``, ``bench_time.py`` (they put ``tests/`` on their path),
not part of the installed package.
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


def batch_inputs(model, batch: int, n: int, device=None, task: str | None = None) -> dict[str, torch.Tensor]:
    """B fresh rows of n tokens, no padding: input_ids, attention_mask of ones, token_type_ids of zeros; a
    multiple-choice ``task``'s rows (B, k, n): its k candidates' sequences."""
    device = device if device is not None else next(model.parameters()).device
    g = torch.Generator().manual_seed(0)
    k = model.tasks[task] if task in getattr(model, "per_candidate", ()) else 1
    shape = (batch, k, n) if k != 1 else (batch, n)
    ids = torch.randint(0, model.base_config.vocab_size, shape, generator=g).to(device)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}


def saved_activation_bytes(model, task: str, batch: int, n: int, *, train: bool = True) -> int:
    """Bytes autograd saves for backward in ``model(task=…)`` (train mode; ``train=False``: eval mode with grad),
    each storage once, parameters excluded."""
    inputs = batch_inputs(model, batch, n, task=task)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept: dict[int, torch.Tensor] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            kept.setdefault(ptr, t)  # holding it keeps the storage (and its address) alive
        return t

    was = model.training
    model.train(train)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(task=task, **inputs)
    finally:
        model.train(was)
    return sum(t.untyped_storage().nbytes() for t in kept.values())


def optimizer_state_bytes(model, batch: int = 2, n: int = 4) -> int:
    """Bytes of AdamW's state after one step on each task (the trainer's optimiser, every trainable parameter)."""
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    model.train()
    for task in model.tasks:
        opt.zero_grad(set_to_none=True)
        model(task=task, **batch_inputs(model, batch, n, task=task)).float().pow(2).mean().backward()
        opt.step()
    total = 0
    for state in opt.state.values():
        for value in state.values():
            if torch.is_tensor(value):
                total += value.untyped_storage().nbytes()
    return total


class LiveBytes(TorchDispatchMode):
    """Follows every storage an op outputs until it is freed; ``peak`` = the most bytes alive at once. ``model``:
    its parameters' storages are not counted (a view of a weight, e.g. ``Linear``'s transpose, is the weight)."""

    def __init__(self, model=None) -> None:
        super().__init__()
        self.live: dict[int, int] = {}
        self.now = self.peak = 0
        self.weights = {p.untyped_storage().data_ptr() for p in model.parameters()} if model is not None else set()

    def _freed(self, key: int) -> None:
        self.now -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key and key not in self.live and key not in self.weights:
                    self.live[key] = storage.nbytes()
                    self.now += storage.nbytes()
                    weakref.finalize(t, self._freed, key)
        self.peak = max(self.peak, self.now)
        return out


def inference_peak_bytes(model, batch: int, n: int, tasks: list[str] | None = None) -> int:
    """Peak live activation bytes of ``predict_all`` in inference mode (weights not included)."""
    inputs = batch_inputs(model, batch, n)
    was = model.training
    model.eval()
    try:
        with torch.inference_mode(), LiveBytes() as live:
            model.predict_all(**inputs, tasks=tasks)
    finally:
        model.train(was)
    return live.peak


def cuda_step_peak_bytes(model, task: str, batch: int, n: int) -> int:
    """``torch.cuda.max_memory_allocated`` over one AdamW training step of ``task`` (model on a CUDA device),
    after a first step has created the optimiser state: weights + gradients + state + the step's activations."""
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    inputs = batch_inputs(model, batch, n)
    model.train()
    for first in (True, False):
        if not first:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        opt.zero_grad(set_to_none=True)
        model(task=task, **inputs).float().pow(2).mean().backward()
        opt.step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()
