"""Tasks as records (docs: "Task records and the tasks file"): ``TaskRecord`` (``record.py``), GLUE's built-in
records (``glue.py``, the one place that knows GLUE), the tasks file (``taskfile.py``), the readers of
CSV / TSV / JSON Lines / Parquet / save_to_disk folders (``readers.py``) and checked rows (``rows.py``).

Pure Python on the ground floor: the calculator, the trainer, the studies and the explorer read records from
here; nothing here imports torch, transformers or the rest of the project. The readers and the rows (csv, the
sampler's random) load on first use of one of their names (``_LAZY``): the calculator's start-up needs only the
records and GLUE's.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Optional, Sequence

from .glue import GLUE_LABELS, GLUE_TASKS, PAPER_TASKS, get_task, glue_record, parse_task_list
from ..kinds.errors import TaskDataError, TaskRecordError
from .record import KINDS, METRICS_OF_KIND, TaskRecord, fingerprint
from .taskfile import read_tasks_file, select

_LAZY = {"sha256_of": "readers", "num_labels": "rows", "read_label_names": "rows"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_records(names: "Sequence[str] | str | None", tasks_file: Optional[str] = None) -> list[TaskRecord]:
    """The records of a run: ``names`` out of ``tasks_file`` (all of its tasks when no names are given), or
    the built-in GLUE tasks of those names when there is no tasks file."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if tasks_file:
        return select(read_tasks_file(tasks_file), names)
    if not names:
        raise ValueError("no tasks given (--tasks, or --tasks-file for your own)")
    return [glue_record(n) for n in parse_task_list(list(names))]


__all__ = [
    "GLUE_LABELS",
    "GLUE_TASKS",
    "KINDS",
    "METRICS_OF_KIND",
    "PAPER_TASKS",
    "TaskDataError",
    "TaskRecord",
    "TaskRecordError",
    "fingerprint",
    "get_task",
    "glue_record",
    "num_labels",
    "parse_task_list",
    "read_label_names",
    "read_tasks_file",
    "records_of_config",
    "resolve_records",
    "select",
    "sha256_of",
]


def records_of_config(config: dict) -> dict[str, TaskRecord]:
    """name → record of a run's config.json (or a summary's ``config``): the records it recorded in ``data``;
    a run made before records were recorded is a GLUE run, its task names the built-in tasks'."""
    data = config.get("data") or {}
    out = {}
    for t in config.get("tasks") or []:
        rec = (data.get(t) or {}).get("record")
        out[t] = TaskRecord.from_dict(rec) if rec else glue_record(t)
    return out
