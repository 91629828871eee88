"""The two errors about a task, raised by the kinds (``check``, ``targets``) and by the records, the tasks file and
the readers above them (``pals_core.tasks``): declared here, below all of them, so each imports them at the top.
Pure Python, nothing of the project."""

from __future__ import annotations


class TaskRecordError(ValueError):
    """A task record that cannot be used: the message names the task and the field."""


class TaskDataError(ValueError):
    """A task's data cannot be used: the message names the file, and the row and column where there is one."""


__all__ = ["TaskDataError", "TaskRecordError"]
