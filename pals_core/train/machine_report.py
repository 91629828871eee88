"""The ``machine`` block of a run's summary.json: the calculator's predicted step time and memory beside what the
run measured (docs/design.md §§9–10).

    predicted  {device, batch, seq_len, time_step_s, time_ratio, memory_train, memory_infer}   (budget.machine)
    measured   {step_s: wall seconds per training step (train_time_s / steps: also the batch draw and the AdamW
               step, which the prediction leaves out), step_cpu_s, peak_memory_bytes, peak_memory_source}

The prediction is for B = ``batch_size`` sequences of n = ``max_len`` tokens (GLUE batches are padded to at most
that, so it is an upper bound on the activations). The device profile: on CUDA the built-in one whose name matches
``torch.cuda.get_device_name`` (else none), on CPU ``local`` when pals-calibrate has measured it. Peak memory: on CUDA
``torch.cuda.max_memory_allocated`` over the run (evaluation included); on CPU the process's peak resident set
(``ru_maxrss``: Python, libraries and data included, so not comparable to the calculator's figure, reported as such).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..budget import Task, design, evaluate
from pals_core.families.models import conditions_from_config
from ..budget.machine import Machine, resources, supported
from ..footprint.timing import local_profile_path

GPU_PROFILES = {"h100": "h100", "a100": "a100", "l4": "l4", "t4": "t4"}


def _device_profile(cuda: bool) -> Optional[str]:
    if cuda:
        import torch

        name = torch.cuda.get_device_name().lower()
        return next((p for key, p in GPU_PROFILES.items() if key in name), None)
    return "local" if local_profile_path().is_file() else None


def predicted(shape, tasks: list[Task], adapter, hf_config: dict, batch: int, seq_len: int, cuda: bool) -> dict:
    """The calculator's figures for this run's design on this run's device (``None`` values where it has none)."""
    device = _device_profile(cuda)
    out = {
        "device": device,
        "batch": batch,
        "seq_len": seq_len,
        "time_step_s": None,
        "time_ratio": None,
        "memory_train": None,
        "memory_infer": None,
    }
    ds = design(shape, tasks, adapter, seq_len=seq_len)
    if not supported(ds):
        out["reason"] = f"memory and time are not modelled for the {shape.family} family"
        return out
    cost = evaluate(ds, adapter.d_s)
    cond = conditions_from_config(hf_config)
    if device is None:  # memory needs no profile: price it on the run's backend
        cond = replace(cond, backend="cuda" if cuda else "cpu")
        from ..footprint.memory import memory_infer, memory_train

        out["memory_train"] = memory_train(ds, adapter.d_s, cost, batch=batch, cond=cond).as_dict()
        out["memory_infer"] = memory_infer(ds, adapter.d_s, cost, batch=batch, cond=cond)
        out["reason"] = "no device profile for this device (run pals-calibrate on a CPU)"
        return out
    resources(cost, ds, Machine(batch=batch, device=device), cond)
    out.update(
        time_step_s=cost.time_step_s,
        time_ratio=cost.time_ratio,
        memory_train=cost.memory_train,
        memory_infer=cost.memory_infer,
    )
    return out


def measured(train_time_s: float, train_cpu_s: float, steps: int, cuda: bool) -> dict:
    out = {"step_s": train_time_s / steps if steps else None, "step_cpu_s": train_cpu_s / steps if steps else None}
    if cuda:
        import torch

        out.update(
            peak_memory_bytes=int(torch.cuda.max_memory_allocated()),
            peak_memory_source="torch.cuda.max_memory_allocated",
        )
    else:
        import resource
        import sys

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out.update(
            peak_memory_bytes=int(rss if sys.platform == "darwin" else rss * 1024),
            peak_memory_source="process peak resident set (ru_maxrss): not the calculator's quantity",
        )
    return out
