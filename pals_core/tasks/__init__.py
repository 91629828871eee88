"""Tasks as records (docs: "Task records and the tasks file"): ``TaskRecord`` (``record.py``), GLUE's built-in
records (``glue_tasks.py``, the one place that knows the GLUE tasks), the tasks file (``taskfile.py``), the readers of
CSV / TSV / JSON Lines / Parquet / save_to_disk folders (``readers.py``) and checked rows (``rows.py``).

Pure Python on the ground floor: the calculator, the trainer, the studies and the explorer read records from
here (each name from the module that defines it); nothing here imports torch, transformers or the rest of the
project. This module holds the records of a run (``resolve_records``, ``records_of_config``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .glue_tasks import glue_record, parse_task_list
from .record import TaskRecord
from .taskfile import read_tasks_file, select


def resolve_records(names: Sequence[str] | str | None, tasks_file: str | None = None) -> list[TaskRecord]:
    """The records of a run: ``names`` out of ``tasks_file`` (all of its tasks when no names are given), or
    the built-in GLUE tasks of those names when there is no tasks file."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if tasks_file:
        return select(read_tasks_file(tasks_file), names)
    if not names:
        raise ValueError("no tasks given (--tasks, or --tasks-file for your own)")
    return [glue_record(n) for n in parse_task_list(list(names))]


__all__ = ["records_of_config", "resolve_records"]


def records_of_config(config: dict) -> dict[str, TaskRecord]:
    """name → record of a run's config.json (or a summary's ``config``): the records it recorded in ``data``;
    a run made before records were recorded is a GLUE run, its task names the built-in tasks'."""
    data = config.get("data") or {}
    out = {}
    for t in config.get("tasks") or []:
        rec = (data.get(t) or {}).get("record")
        out[t] = TaskRecord.from_dict(rec) if rec else glue_record(t)
    return out
