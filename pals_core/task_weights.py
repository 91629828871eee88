"""One task's weights alone — its adapter, head and per-task pooler — in a safetensors file.

Task-specific weights are what the paper's budget buys (docs/design.md "Budgets and the solver"): a PALs-204 task on
BERT-base is ~1.8M parameters, against 110M for the shared trunk. The file holds the tensors under task-independent
names (``adapter.*``, ``head.*``, ``pooler.*``) and, in the safetensors metadata, the
``AdapterConfig``, the task name, ``num_labels`` and the base shape, so ``load_task`` can attach it to
any ``MultiTaskBert`` with the same design and trunk shape (adding the task if the model lacks it).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .atomic import atomic_write
from .budget.methods import check_config
from .pricing.config import AdapterConfig

FORMAT = "pals-explorer-task/1"
_GROUPS = {"adapters": "adapter", "heads": "head", "poolers": "pooler"}
_SHAPE_FIELDS = ("hidden", "layers", "heads", "intermediate")
# AdapterConfig fields that must agree between file and model: all but freeze_trunk (a training choice)
# and location (compared as the resolved list of adapted layers)
_DESIGN_FIELDS = tuple(f for f in AdapterConfig.__dataclass_fields__ if f not in ("freeze_trunk", "location"))


def task_tensors(model, task: str) -> dict[str, torch.Tensor]:
    """``task``'s parameters under file names (``adapter.…``, ``head.…``, ``pooler.…``)."""
    out = {}
    for name, p in model.named_task_parameters(task):
        group, _, rest = name.split(".", 2)
        out[f"{_GROUPS[group]}.{rest}"] = p
    return out


@dataclass(frozen=True)
class TaskFile:
    task: str
    num_labels: int
    config: AdapterConfig
    base: dict
    per_word: bool = False  # a tagging task's head (on every token); files written before it: False
    per_candidate: bool = False  # a multiple-choice task's head (one score a candidate); files before it: False
    span: bool = False  # an extractive-QA task's head (start and end logits on every token)


def read_task_file(path: str | os.PathLike) -> TaskFile:
    """The metadata of a task file; ``ValueError`` if it is not one."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"task file not found: {path}")
    try:
        with safe_open(path, framework="pt") as f:
            meta = f.metadata() or {}
    except Exception as e:  # safetensors raises its own error types for non-safetensors input
        raise ValueError(f"{path} is not a safetensors file: {e}") from None
    if meta.get("format") != FORMAT:
        raise ValueError(
            f"{path} is not a PALs Explorer task file (format {meta.get('format')!r}, expected {FORMAT!r})"
        )
    try:
        return TaskFile(
            meta["task"],
            int(meta["num_labels"]),
            AdapterConfig.from_dict(json.loads(meta["adapter_config"])),
            json.loads(meta["base"]),
            meta.get("per_word", "0") == "1",
            meta.get("per_candidate", "0") == "1",
            meta.get("span", "0") == "1",
        )
    except (KeyError, ValueError, TypeError) as e:
        raise ValueError(f"{path}: damaged task metadata ({e})") from None


def save_task(model, task: str, path: str | os.PathLike) -> None:
    """Write ``task``'s adapter + head (+ pooler) to ``path`` atomically (temp file + os.replace)."""
    path = os.fspath(path)
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in task_tensors(model, task).items()}
    meta = {
        "format": FORMAT,
        "task": task,
        "num_labels": str(model.tasks[task]),
        "adapter_config": json.dumps(model.config.as_dict()),
        "base": json.dumps({k: getattr(model.shape, k) for k in _SHAPE_FIELDS}),
        "per_word": "1" if task in model.per_word else "0",
        "per_candidate": "1" if task in model.per_candidate else "0",
        "span": "1" if task in model.spans else "0",
    }
    atomic_write(path, lambda tmp: save_file(tensors, tmp, metadata=meta))


def _design_differences(model, saved: AdapterConfig) -> list[str]:
    diff = [
        f"{k}: file {getattr(saved, k)!r}, model {getattr(model.config, k)!r}"
        for k in _DESIGN_FIELDS
        if getattr(saved, k) != getattr(model.config, k)
    ]
    if not diff:
        _, layers = check_config(model.shape, saved)
        if layers != model.layers:
            diff.append(f"adapted layers: file {list(layers)}, model {list(model.layers)}")
    return diff


def load_task(model, path: str | os.PathLike, task: str | None = None) -> str:
    """Attach the task stored in ``path`` to ``model`` (under ``task`` or the stored name) and return its name.

    The model must have the same design (method, d_s, location, heads, …) and trunk shape; the task is
    added if the model lacks it, its weights replaced if it has it (same num_labels)."""
    info = read_task_file(path)
    diff = _design_differences(model, info.config)
    if diff:
        raise ValueError(f"{os.fspath(path)} was saved with another design: {'; '.join(diff)}")
    shape = {k: getattr(model.shape, k) for k in _SHAPE_FIELDS}
    if info.base != shape:
        raise ValueError(f"{os.fspath(path)} was saved for a trunk of shape {info.base}, this model's is {shape}")
    name = task if task is not None else info.task
    added = name not in model.tasks
    if not added and model.tasks[name] != info.num_labels:
        raise ValueError(f"task {name!r} has {model.tasks[name]} labels in the model, {info.num_labels} in the file")
    mine = (name in model.per_word, name in model.per_candidate, name in model.spans)
    theirs = (info.per_word, info.per_candidate, info.span)
    if not added and mine != theirs:
        heads = {
            (True, False, False): "a head on every token (a tagging task)",
            (False, True, False): "a head scoring each candidate (a multiple-choice task)",
            (False, False, True): "a start and end head on every token (a span task)",
            (False, False, False): "a sentence head",
        }
        raise ValueError(f"task {name!r} has {heads[mine]} in the model, {heads[theirs]} in the file")
    if added:
        model.add_task(name, info.num_labels, per_word=info.per_word, per_candidate=info.per_candidate, span=info.span)
    try:
        _copy_into(model, name, os.fspath(path))
    except BaseException:
        if added:
            model.remove_task(name)
        raise
    return name


def _copy_into(model, name: str, path: str) -> None:
    target = task_tensors(model, name)
    with safe_open(path, framework="pt") as f:
        keys = set(f.keys())
        missing, unexpected = sorted(set(target) - keys), sorted(keys - set(target))
        if missing or unexpected:
            raise ValueError(f"{path} does not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
        values = {key: f.get_tensor(key) for key in target}
    for key, param in target.items():  # check every shape before writing anything
        if values[key].shape != param.shape:
            raise ValueError(f"{path}: {key} has shape {tuple(values[key].shape)}, the model {tuple(param.shape)}")
    with torch.no_grad():
        for key, param in target.items():
            param.copy_(values[key])
