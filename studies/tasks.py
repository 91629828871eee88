"""A study's tasks: GLUE names, or the records of the user's own tasks file (``pals-study … --tasks-file F``).

A study on a tasks file stores, in its settings, the file's absolute path and its tasks' ``data`` block
(``pals_core.data.load.describe_data``: each task's record, label names, C_t, its files' sha256 and its
fingerprint). That block is what the study *is*: the calculator prices every head from its C_t (never GLUE's
label counts), every worker that joins re-reads its own copy of the file and refuses to train when a file is not
the one the study was created on (``pals_core.train.config.data_differences`` names it), and ``pals-study
report`` shows what was trained without reading any file.

GLUE tasks — by name, or ``{glue: rte}`` in a tasks file — keep their files in each worker's ``--glue-dir``:
they are checked there (``check_files``), never hashed into the study.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pals_core.data.load import describe_data
from pals_core.tasks import resolve_records
from pals_core.tasks.record import TaskRecord
from pals_core.tasks.rows import read_rows
from pals_core.train.config import data_differences

from .errors import StudyError
from .storage import one_line


def _records(names: Sequence[str] | None, tasks_file: str) -> list[TaskRecord]:
    """``names`` (all when None) out of ``tasks_file``; a bad file or an unknown name is one line."""
    try:
        return resolve_records(list(names) if names else None, tasks_file)
    except ValueError as e:  # TaskRecordError, TaskDataError: they name the file, the task and the field
        raise StudyError(one_line(e)) from None


def study_data(records: Sequence[TaskRecord]) -> dict:
    """The ``data`` block a study stores: ``describe_data`` of its records, GLUE ones without files (each worker
    has its own GLUE folder; ``source="hub"`` describes a GLUE task by its layout alone, reading nothing)."""
    try:
        return describe_data(records, source="hub")
    except ValueError as e:
        raise StudyError(one_line(e)) from None
    except OSError as e:  # a data file that cannot be hashed (gone, unreadable)
        raise StudyError(f"{e.filename}: {e.strerror or e}" if e.filename else one_line(e)) from None


def read_study_tasks(tasks_file: str, names: Sequence[str] | None = None) -> tuple[str, list[str], dict]:
    """(absolute path, task names, data block) of a study on ``tasks_file`` (``names`` out of it; all when None)."""
    path = os.path.abspath(os.path.expanduser(tasks_file))
    records = _records(names, path)
    return path, [r.name for r in records], study_data(records)


def check_rows(records: Sequence[TaskRecord], seed: int) -> None:
    """Read and check every row of the tasks of one's own (GLUE ones are the trainer's), so that a study on a bad
    file is refused when it is created, not by every trial failing."""
    for r in records:
        if r.glue is None:
            try:
                read_rows(r, seed)
            except ValueError as e:
                raise StudyError(one_line(e)) from None


def check_same_data(settings, tasks_file: str, study_name: str) -> None:
    """Refuse (one line naming the file) a worker whose copy of the study's tasks (``tasks_file``) is not what the
    study was created on: another record, or a data file of another sha256."""
    try:
        now = study_data(_records(settings.tasks, tasks_file))
    except StudyError as e:
        raise StudyError(
            f"{e} (study {study_name!r} was created on {settings.tasks_file}: give this machine's copy "
            "with --tasks-file)"
        ) from None
    diffs = data_differences(settings.data, now)
    if diffs:
        more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
        raise StudyError(
            f"{tasks_file}: not the data study {study_name!r} was created on: {diffs[0]}{more}; "
            "restore it, or create another --study-name"
        )


def glue_names(records: Sequence[TaskRecord]) -> list[str]:
    """The GLUE tasks among ``records`` (their built-in names: what ``check_files`` looks for)."""
    return [r.glue for r in records if r.glue is not None]


def describe_tasks(settings) -> str:
    """The study's tasks in one line: names, with each one's kind, C_t and main metric when it holds a tasks file."""
    if settings.tasks_file is None:
        return ",".join(settings.tasks)
    parts = []
    for r in settings.records():
        d = settings.data[r.name]
        what = f"{r.kind}, {d['num_labels']} labels" if r.kind_of.has_labels else r.kind
        parts.append(f"{r.name} ({'glue ' + r.glue + ', ' if r.glue else ''}{what}, {r.main_metric})")
    return ", ".join(parts) + f" from {settings.tasks_file}"
