"""The ``machine`` block of a run's summary.json: the calculator's predicted step time and memory beside what the
run measured (docs/design.md "Memory (bytes)", "Time").

    predicted  {device, batch, seq_len, precision, time_step_s, time_ratio, memory_train, memory_infer}
               (budget.machine; precision: bf16 where the run trains under bf16 autocast, else fp32)
    measured   {device: what measured them (the CUDA device's name, or "CPU: <model>, N thread(s)"), step_s: wall
               seconds per training step (train_time_s / steps: also the batch draw and the AdamW step, which the
               prediction leaves out), step_cpu_s, peak_memory_bytes, peak_memory_source}

The prediction is for B = ``batch_size`` sequences of n = ``max_len`` tokens (GLUE batches are padded to at most
that, so it is an upper bound on the activations). The device profile: on CUDA the built-in one whose name matches
``torch.cuda.get_device_name`` (else none), on CPU ``local`` when pals-calibrate has measured it. Peak memory: on CUDA
``torch.cuda.max_memory_allocated`` over the run (evaluation included; reset when the run starts, so a run
trained after another in one process, a study's trials, reports its own); on CPU the process's peak resident set
(``ru_maxrss``: Python, libraries and data included, so not comparable to the calculator's figure, reported as such).
"""

from __future__ import annotations

from dataclasses import replace

from pals_core.families.shapes import conditions_from_config

from ..budget.costs import design, evaluate
from ..budget.machine import Machine, resources, supported
from ..budget.tasks import Task
from ..footprint.here import builtin_for_gpu, cpu_name, is_here
from ..footprint.memory import memory_infer, memory_train
from ..footprint.timing import load_profile, local_profile_path


def gpu_profile(name: str) -> str | None:
    """The built-in profile of the CUDA device ``name`` (``torch.cuda.get_device_name``: "NVIDIA H100 80GB HBM3",
    "NVIDIA H200", …; the profile's ``match`` word, ``footprint.here.builtin_for_gpu``), or None."""
    return builtin_for_gpu(name)


def device_profile(cuda: bool) -> str | None:
    """This machine's profile: on CUDA ``gpu_profile`` of the device's name, on CPU ``local`` once pals-calibrate has
    measured it; None where there is none."""
    if cuda:
        import torch

        return gpu_profile(torch.cuda.get_device_name())
    if not local_profile_path().is_file():
        return None
    try:
        return "local" if is_here(load_profile("local")) else None  # measured on another host: not this one's
    except ValueError:
        return None


def predicted(
    shape, tasks: list[Task], adapter, hf_config: dict, batch: int, seq_len: int, cuda: bool, precision: str = "fp32"
) -> dict:
    """The calculator's figures for this run's design on this run's device at this run's ``precision`` (fp32, or bf16
    under bf16 autocast) (``None`` values where it has none)."""
    device = device_profile(cuda)
    out = {
        "device": device,
        "batch": batch,
        "seq_len": seq_len,
        "precision": precision,
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
        cond = replace(cond, backend="cuda" if cuda else "cpu", float_bytes=2 if precision == "bf16" else 4)

        out["memory_train"] = memory_train(ds, adapter.d_s, cost, batch=batch, cond=cond).as_dict()
        out["memory_infer"] = memory_infer(ds, adapter.d_s, cost, batch=batch, cond=cond)
        out["reason"] = "no device profile for this device (run pals-calibrate on a CPU)"
        return out
    resources(cost, ds, Machine(batch=batch, device=device, precision=precision), cond)
    out.update(
        time_step_s=cost.time_step_s,
        time_ratio=cost.time_ratio,
        memory_train=cost.memory_train,
        memory_infer=cost.memory_infer,
    )
    return out


def measured(train_time_s: float, train_cpu_s: float, steps: int, cuda: bool) -> dict:
    """What this run measured, and on which device (``device``: the CUDA device's name, or the CPU's model and the
    threads torch used)."""
    import torch

    out = {"step_s": train_time_s / steps if steps else None, "step_cpu_s": train_cpu_s / steps if steps else None}
    if cuda:
        out.update(
            device=torch.cuda.get_device_name(),
            peak_memory_bytes=int(torch.cuda.max_memory_allocated()),
            peak_memory_source="torch.cuda.max_memory_allocated",
        )
    else:
        import resource
        import sys

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out.update(
            device=f"CPU: {cpu_name()}, {torch.get_num_threads()} thread(s)",
            peak_memory_bytes=int(rss if sys.platform == "darwin" else rss * 1024),
            peak_memory_source="process peak resident set (ru_maxrss): not the calculator's quantity",
        )
    return out
