"""Adding tasks to a trained run: ``pals-train --from RUN_DIR --add-tasks F --out NEW``.

A multi-task design whose tasks share nothing trained — the trunk frozen, every adapter, head and pooler a task's
own (``budget.costs.adding_tasks_refused`` is the rule) — can take a task next month without retraining the others:
the new run builds the base run's model with the new tasks beside the old, loads the base run's best checkpoint
into the trunk and the old tasks' parts, and trains only the new tasks' parts. No weight an old task reads changes,
and nothing that shapes its outputs may either: the base run's max length, windows (stride, truncate), mixed precision
(and model, so its tokenizer) are the new run's, a flag that sets another is refused (``SAME_AS_BASE``). The old tasks' outputs are then
the base run's bit for bit for the same rows, evaluation batch size and device (another batch size pads the rows
otherwise, which may change the last bits of a logit); the new summary states the old tasks' dev scores as the
extended model measures them at its end, beside the base run's (``added.base_scores``). The new run is a run like
any other (resume, predict, export): its config records every task.

Torch-free except ``load_base_weights`` and ``train_only`` (the trainer's).
"""

from __future__ import annotations

import copy
from pathlib import Path

from ..atomic import read_json_file
from ..budget.costs import adding_tasks_refused
from ..pricing.recipe import given_over
from ..tasks import records_of_config
from ..tasks.record import TaskRecord
from ..tasks.taskfile import read_tasks_file

DESIGN_FROM_BASE = "the design is the base run's (--from): leave out {flags}"
# the settings that shape an old task's outputs: the new run takes the base run's; another value is refused
SAME_AS_BASE = ("max_len", "stride", "truncate", "mixed_precision")


_BASE_CONFIGS: dict[tuple, dict] = {}  # (path, size, mtime) → the config read: a run's set-up asks ~10 times


def base_config(from_run: str) -> dict:
    """The base run's config.json, refusing (``ValueError``, one line) a folder that holds no finished run. Read once
    per change of the file in a process (a copy each time: the caller may change it)."""
    root = Path(from_run)
    config_file, summary = root / "config.json", root / "summary.json"
    if not config_file.is_file():
        raise ValueError(
            f"--from {from_run}: no pals-train run there (no config.json; a --seeds or separate folder: "
            "give one of its runs)"
        )
    if not summary.is_file():
        raise ValueError(f"--from {from_run}: the run has not finished (no summary.json): finish it first (--resume)")
    st = config_file.stat()
    key = (str(config_file.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _BASE_CONFIGS:
        config = read_json_file(config_file, "the base run's config")
        if not isinstance(config, dict) or "adapter" not in config or "tasks" not in config:
            raise ValueError(f"--from {from_run}: {config_file} is not a pals-train configuration")
        _BASE_CONFIGS[key] = config
    return copy.deepcopy(_BASE_CONFIGS[key])


def base_summary(from_run: str) -> dict:
    """The base run's summary.json (its old tasks' dev scores are the new run's for them)."""
    summary = read_json_file(Path(from_run) / "summary.json", "the base run's summary")
    if not isinstance(summary, dict) or not isinstance(summary.get("scores"), dict):
        raise ValueError(f"--from {from_run}: summary.json holds no dev scores")
    return summary


def added_records(add_tasks: str | None, base: dict) -> list[TaskRecord]:
    """The records of ``--add-tasks`` (every task of the file), refusing an empty file or a name the base run has."""
    if not add_tasks:
        raise ValueError("--from needs --add-tasks FILE: the tasks file of the tasks to add")
    new = list(read_tasks_file(add_tasks).values())
    clash = [r.name for r in new if r.name in (base.get("tasks") or [])]
    if clash:
        raise ValueError(
            f"--add-tasks {add_tasks}: {', '.join(clash)} {'is' if len(clash) == 1 else 'are'} already "
            "a task of the base run (name the new task otherwise)"
        )
    if not new:
        raise ValueError(f"--add-tasks {add_tasks}: the file declares no task")
    return new


def extended_records(from_run: str, add_tasks: str | None) -> list[TaskRecord]:
    """The base run's records (its order) followed by the added tasks' records."""
    base = base_config(from_run)
    return [*records_of_config(base).values(), *added_records(add_tasks, base)]


def added_task_names(cfg) -> list[str]:
    """The tasks a run trains: the added ones when it extends another run, else all its tasks."""
    if not cfg.from_run:
        return list(cfg.tasks)
    base = set(base_config(cfg.from_run).get("tasks") or [])
    return [t for t in cfg.tasks if t not in base]


def extension_config(from_run: str, given: dict) -> dict:
    """The ``TrainConfig`` fields of a run extending ``from_run``: the base run's settings (design, model, max length,
    optimiser, sampling, seed) with what ``given`` sets for this run (steps, lr, out, evaluation, …); its tasks are
    filled in by ``TrainConfig.validate``. The design, the budget and the task list come from the base run alone."""
    refused = [f"--{k.replace('_', '-')}" for k in ("tasks", "tasks_file") if k in given]
    if refused:
        raise ValueError(f"--from takes its tasks from the base run and --add-tasks: leave out {', '.join(refused)}")
    base = base_config(from_run)
    changed = [
        f"--{k.replace('_', '-')} {given[k]} (the base run's: {base.get(k)})"
        for k in SAME_AS_BASE
        if k in given and k in base and given[k] != base[k]
    ]
    if changed:
        raise ValueError(
            f"--from {from_run}: {', '.join(changed)} would change the outputs of the base run's tasks; "
            "added tasks take the base run's setting (leave the flag out)"
        )
    out = {k: v for k, v in base.items() if k not in ("data", "budget")}
    out.setdefault("truncate", True)  # a base run written before windows cut its long tagging rows: so does this one
    out = given_over(out, given)
    out.update(tasks=[], tasks_file=None, from_run=str(from_run), budget=None, data=None)
    return out


def base_data(cfg) -> dict:
    """The ``data`` entries of the base run's tasks as it recorded them (records and files' sha256)."""
    return dict(base_config(cfg.from_run).get("data") or {})


def check_base_precision(from_run: str, precision: str) -> None:
    """``ValueError`` when this machine would compute the base run's tasks in another precision than the base run did
    (``mixed_precision`` auto: bf16 on a CUDA device with it, else none): its ``summary.json``'s record, or an explicit
    ``mixed_precision`` of its config (a run made before the record, with auto: not known, not refused)."""
    was = base_summary(from_run).get("mixed_precision")
    if was is None and base_config(from_run).get("mixed_precision") != "auto":
        was = base_config(from_run).get("mixed_precision")
    if was is not None and was != precision:
        raise ValueError(
            f"--from {from_run}: the base run computed in mixed precision {was!r}, this run would in {precision!r} "
            "(another device, or --device / --mixed-precision): the base run's tasks' outputs would change; run it "
            "where the base run ran, or with --device and --mixed-precision that give the same"
        )


def check_design(design) -> None:
    """``ValueError`` with the reason when tasks cannot be added to this design without changing the others."""
    reason = adding_tasks_refused(design)
    if reason:
        raise ValueError(f"--from: tasks cannot be added later to this run: {reason}")


def with_base_tasks(summary: dict, from_run: str, measured: dict, dev_examples: dict) -> dict:
    """A run's summary with the base run's tasks put back: their dev scores as this run's model measured them
    (``measured``, on ``dev_examples`` rows each), their training examples and task entries as the base run's summary
    has them, and ``added`` saying what this run trained: its tasks, their own average, the base run, and the base
    run's own scores of its tasks (``base_scores``; equal to the measured ones when the evaluation ran as the base
    run's did). The caller recomputes ``average`` over every task."""
    base, old = base_summary(from_run), base_config(from_run).get("tasks") or []
    added = list(summary["scores"])
    summary["scores"] = {**{t: measured[t] for t in old if t in measured}, **summary["scores"]}
    for key in ("train_examples", "tasks"):
        summary[key] = {**{t: v for t, v in (base.get(key) or {}).items() if t in old}, **(summary.get(key) or {})}
    summary["dev_examples"] = {**{t: dev_examples[t] for t in old if t in dev_examples}, **summary["dev_examples"]}
    summary["added"] = {
        "from_run": str(Path(from_run).resolve()),
        "tasks": added,
        "average": summary["average"],
        "base_best_step": base.get("best_step"),
        "base_scores": {t: base["scores"][t] for t in old if t in base["scores"]},
    }
    return summary


# --- torch: the trainer's ------------------------------------------------------------------------------------


def load_base_weights(model, from_run: str) -> int:
    """Load the base run's best checkpoint into ``model``'s trunk and the base run's tasks' parts; the added tasks
    keep their fresh initialisation. Returns the step loaded."""
    from ..checkpoint import SHARED_FILE, Checkpoints, load_shared, task_file_name  # late: loads torch

    root = Path(from_run) / "checkpoints"
    best = Checkpoints(root).best()
    if not best:
        raise ValueError(f"--from {from_run}: no evaluated checkpoint (checkpoints/best.json)")
    folder = root / best["dir"]
    try:
        load_shared(model, folder / SHARED_FILE)
    except ValueError as e:
        raise ValueError(f"--from {from_run}: {e}") from None
    for task in base_config(from_run)["tasks"]:
        model.load_task(folder / task_file_name(task), task=task)
    return int(best["step"])


def train_only(model, tasks: list[str]) -> None:
    """Freeze every parameter but the named tasks' own (adapter, head, pooler)."""
    keep = {id(p) for t in tasks for _, p in model.named_task_parameters(t)}
    for p in model.parameters():
        p.requires_grad_(id(p) in keep)
