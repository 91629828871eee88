"""Task-separable, atomic checkpoints — everything a run needs to continue bit for bit.

    checkpoints/step-00001200/
        shared.safetensors          the trunk (``bert.*``) and modules shared by all tasks
        task-<name>.safetensors     one file per task: adapter, head, pooler (``pals_core.task_weights``)
        optimizer.pt                AdamW + LR-scheduler state, torch (and CUDA) RNG states
        state.json                  step, sampler RNG, data-order positions, running loss, best, elapsed
    checkpoints/latest.json         {"step", "dir"}: the checkpoint to resume from
    checkpoints/best.json           {"step", "dir", "average", "scores"}: the best evaluated checkpoint

A checkpoint folder is written under a temporary name and moved into place with ``os.replace``;
``latest.json`` is then replaced atomically. A kill at any moment leaves the previous checkpoint
intact. Only the latest and the best checkpoints are kept; the best one loses its optimizer state
once it is no longer the latest (its weights are what is kept for).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .atomic import atomic_write_json, read_json

SHARED_FILE = "shared.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
STATE_FILE = "state.json"
FORMAT = "pals-explorer-checkpoint/1"
STEP_DIR = re.compile(r"^step-\d{8}$")  # a checkpoint folder
TEMP_DIR = re.compile(r"^\.step-\d{8}\.[A-Za-z0-9_]+$")  # one being written (``tempfile.mkdtemp``)


class CheckpointDamaged(ValueError):
    """A checkpoint file that cannot be read back (truncated, overwritten, from another design)."""


class CheckpointWriteError(ValueError):
    """A checkpoint that could not be written (a full disk, a folder made read-only): the previous one stays."""


def _write_failure(e: BaseException, step: int, root: Path) -> CheckpointWriteError:
    """One line for a failed write; torch.save reports a full disk as a RuntimeError ("unexpected pos …")."""
    reason = e.strerror if isinstance(e, OSError) and e.strerror else " ".join(str(e).split())[:160]
    try:
        free = shutil.disk_usage(root).free
    except OSError:
        free = None
    if free is not None and free < 64 << 20:
        reason = f"no space left on the device ({free / 2**20:.1f} MiB free)"
    return CheckpointWriteError(
        f"cannot write the checkpoint of step {step} in {root}: {reason}; the previous "
        "checkpoint stays (make room, then --resume)"
    )


def step_dir_name(step: int) -> str:
    return f"step-{step:08d}"


def task_file_name(task: str) -> str:
    return f"task-{task}.safetensors"


def shared_parameter_names(model) -> list[str]:
    """Parameters that belong to no single task (trunk and shared adapter modules)."""
    own = {n for t in model.tasks for n in model.task_parameter_names(t)}
    return [n for n, _ in model.named_parameters() if n not in own]


def save_model(model, folder: Path) -> None:
    """The shared weights and one file per task into ``folder`` (which must exist)."""
    params = dict(model.named_parameters())
    shared = {n: params[n].detach().to("cpu").contiguous() for n in shared_parameter_names(model)}
    save_file(shared, str(folder / SHARED_FILE), metadata={"format": FORMAT, "tasks": json.dumps(model.tasks)})
    for task in model.tasks:
        model.save_task(task, folder / task_file_name(task))


def load_shared(model, path: Path) -> None:
    """The shared weights ``save_model`` wrote to ``path`` (a checkpoint's shared.safetensors) into ``model``, every
    name and shape checked before anything is copied. ``CheckpointDamaged`` in one line naming the file for one that
    is not a safetensors file (truncated, overwritten, unreadable) or whose tensors do not fit the model (another
    design, another trunk)."""
    params = dict(model.named_parameters())
    expected = set(shared_parameter_names(model))
    try:
        with safe_open(str(path), framework="pt") as f:
            keys = set(f.keys())
            if keys != expected:
                raise CheckpointDamaged(
                    f"{path} does not fit the model: missing {sorted(expected - keys)[:5]}, "
                    f"unexpected {sorted(keys - expected)[:5]}"
                )
            for k in sorted(keys):  # every shape before anything is written (copy_ would broadcast a size of 1)
                shape = tuple(f.get_slice(k).get_shape())
                if shape != tuple(params[k].shape):
                    raise CheckpointDamaged(
                        f"{path} does not fit the model: {k} has shape {shape}, the model's {tuple(params[k].shape)} "
                        "(weights of another trunk or design)"
                    )
            with torch.no_grad():
                for k in keys:
                    params[k].copy_(f.get_tensor(k))
    except CheckpointDamaged:
        raise
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types (SafetensorError), OSError, …
        raise CheckpointDamaged(
            f"{path} cannot be read as a checkpoint's weights ({type(e).__name__}: {' '.join(str(e).split())[:160]})"
        ) from None


def load_model(model, folder: Path) -> None:
    """Load what ``save_model`` wrote into a model of the same design and tasks."""
    load_shared(model, folder / SHARED_FILE)
    for task in model.tasks:
        model.load_task(folder / task_file_name(task), task=task)


class Checkpoints:
    """Writes and finds the checkpoints of one run directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.latest_file = self.root / "latest.json"
        self.best_file = self.root / "best.json"

    def latest(self) -> Path | None:
        """The checkpoint to resume from; None before the first one. ``CheckpointDamaged`` if latest.json cannot be
        read or names no checkpoint here (a resume must never start over silently, nor prune what it lost track of)."""
        try:
            info = read_json(self.latest_file)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise CheckpointDamaged(
                f"{self.latest_file} cannot be read ({type(e).__name__}); the run cannot tell "
                "which checkpoint to continue from"
            ) from None
        name = info.get("dir") if isinstance(info, dict) else None
        if not isinstance(name, str) or not STEP_DIR.match(name) or not (self.root / name / STATE_FILE).is_file():
            raise CheckpointDamaged(f"{self.latest_file} names no checkpoint in {self.root} ({name!r})")
        return self.root / name

    def best(self) -> dict | None:
        try:
            return read_json(self.best_file)
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def save(self, step: int, model, optimizer, scheduler, state: dict, best: dict | None) -> Path:
        """Write the checkpoint of ``step`` (model, optimizer, scheduler, RNGs, ``state``) and point
        ``latest.json`` at it; ``best`` = {"step", "average", "scores"} of the best evaluation."""
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / step_dir_name(step)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=self.root))
        try:
            save_model(model, tmp)
            torch.save(
                {
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                },
                tmp / OPTIMIZER_FILE,
            )
            atomic_write_json(tmp / STATE_FILE, {"format": FORMAT, "step": step, **state})
            if final.exists():  # the same step saved again (e.g. a stop right after an evaluation)
                shutil.rmtree(final)
            os.replace(tmp, final)
        except (OSError, RuntimeError) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise _write_failure(e, step, self.root) from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            atomic_write_json(self.latest_file, {"step": step, "dir": final.name})
            if best is not None:
                atomic_write_json(self.best_file, {**best, "dir": step_dir_name(best["step"])})
        except OSError as e:  # latest.json still names the previous checkpoint (atomic): a resume continues from it
            raise _write_failure(e, step, self.root) from None
        self.prune(keep={final.name, step_dir_name(best["step"]) if best else final.name})
        return final

    def prune(self, keep: set[str]) -> None:
        """Remove every checkpoint folder not in ``keep`` (and leftover temporary folders); the
        kept best checkpoint that is not the latest drops its optimizer state. Only folders named as this
        class names them are touched (``step-NNNNNNNN``, ``.step-NNNNNNNN.*``): nothing else is deleted."""
        latest = self.latest()
        for child in self.root.iterdir():
            if not child.is_dir() or child.is_symlink():
                continue
            if TEMP_DIR.match(child.name) or (STEP_DIR.match(child.name) and child.name not in keep):
                shutil.rmtree(child, ignore_errors=True)
            elif child.name in keep and latest is not None and child.name != latest.name:
                opt = child / OPTIMIZER_FILE
                if opt.exists():
                    opt.unlink()

    def clear(self) -> None:
        """Forget every checkpoint (a new run in this folder)."""
        for f in (self.latest_file, self.best_file):
            f.unlink(missing_ok=True)
        if self.root.is_dir():
            self.prune(keep=set())

    def load(self, folder: Path, model, optimizer, scheduler) -> dict:
        """Restore model, optimizer, scheduler and RNGs from ``folder``; returns its state.json.
        ``CheckpointDamaged`` names the folder if any of its files cannot be read back."""
        try:
            return self._load(folder, model, optimizer, scheduler)
        except CheckpointDamaged:
            raise
        except Exception as e:  # noqa: BLE001 - safetensors, torch.load and json raise many kinds
            raise CheckpointDamaged(
                f"checkpoint {folder} cannot be read ({type(e).__name__}: "
                f"{' '.join(str(e).split())[:200]}); the run cannot continue from it: "
                "start a new one (another --out)"
            ) from None

    def _load(self, folder: Path, model, optimizer, scheduler) -> dict:
        load_model(model, folder)
        # read onto the CPU, whatever device the run resumes on: the RNG states must be CPU byte tensors
        # (torch.set_rng_state refuses a CUDA one), and the optimizer moves its state to each parameter's device
        blob = torch.load(folder / OPTIMIZER_FILE, map_location="cpu", weights_only=True)
        saved = [len(g["params"]) for g in blob["optimizer"]["param_groups"]]
        built = [len(g["params"]) for g in optimizer.param_groups]
        if saved != built:  # torch would say only "a different number of parameter groups" or "doesn't match the size"
            raise CheckpointDamaged(
                f"checkpoint {folder} holds optimizer state for parameter groups of {saved} tensors, this run's optimizer "
                f"has {built} (a checkpoint from an earlier pals-train, whose weight-decay groups differed, e.g. IA³ "
                "scales before they left weight decay); the run cannot continue from it: start a new one (another --out)"
            )
        optimizer.load_state_dict(blob["optimizer"])
        scheduler.load_state_dict(blob["scheduler"])
        torch.set_rng_state(blob["torch_rng"])
        if blob["cuda_rng"] and torch.cuda.is_available() and len(blob["cuda_rng"]) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(blob["cuda_rng"])
        return read_json(folder / STATE_FILE)
