"""Tasks as the calculator sees them: a name and its number of outputs C_t — GLUE names with their real label
counts, N anonymous binary tasks, or the records of a tasks file (``pals_core.tasks``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..kinds import DEFAULT_KIND
from ..tasks.glue_tasks import GLUE_LABELS, PAPER_TASKS, glue_name


@dataclass(frozen=True)
class Task:
    name: str
    num_labels: int  # C_t (1: one number per row)
    kind: str = DEFAULT_KIND  # the task's kind (``pals_core.kinds``): its head's FLOPs and its logits' memory

    def as_dict(self) -> dict:
        return {"name": self.name, "num_labels": self.num_labels}


def glue_task(name: str) -> Task:
    key = glue_name(name)
    if key is None:
        raise ValueError(f"unknown task {name!r} (GLUE tasks: {', '.join(GLUE_LABELS)}; your own tasks: --tasks-file)")
    return Task(key, GLUE_LABELS[key])


def parse_tasks(spec: str | int | list[str] | dict[str, int]) -> list[Task]:
    """``8`` → the paper's eight GLUE tasks; another integer N → N binary tasks;
    ``"rte,mrpc"`` or a list → those GLUE tasks; a dict → ``{name: num_labels}`` as given."""
    if isinstance(spec, dict):
        tasks = []
        for name, c in spec.items():
            if not isinstance(c, int) or isinstance(c, bool) or c < 1:
                raise ValueError(f"task {name!r}: num_labels must be a positive integer, got {c!r}")
            tasks.append(Task(str(name), c))
        if not tasks:
            raise ValueError("no tasks given")
        return tasks
    if isinstance(spec, int) and not isinstance(spec, bool):
        return _count(spec)
    if isinstance(spec, str):
        s = spec.strip()
        if s.lstrip("+-").isdigit():
            return _count(int(s))
        names = [p for p in (x.strip() for x in s.split(",")) if p]
    else:
        names = list(spec)
    if not names:
        raise ValueError("no tasks given")
    tasks = [glue_task(n) for n in names]
    seen = set()
    for t in tasks:
        if t.name in seen:
            raise ValueError(f"task {t.name!r} is listed twice")
        seen.add(t.name)
    return tasks


def _count(n: int) -> list[Task]:
    if n < 1:
        raise ValueError(f"number of tasks must be at least 1, got {n}")
    if n > 10_000:
        raise ValueError(f"number of tasks {n} is unreasonably large (at most 10000)")
    if n == len(PAPER_TASKS):
        return [glue_task(t) for t in PAPER_TASKS]
    return [Task(f"task{i + 1}", 2) for i in range(n)]


def tasks_of_records(records) -> list[Task]:
    """The calculator's tasks of ``TaskRecord``s: each name with its C_t (declared labels, or the train file's
    label column read — never the text; a kind without named labels: its own count) and its kind."""
    from ..tasks.rows import num_labels  # the rows reader: loaded for a tasks file only (pals-budget's start-up)

    tasks = [Task(r.name, num_labels(r), r.kind) for r in records]
    if not tasks:
        raise ValueError("no tasks given")
    return tasks
