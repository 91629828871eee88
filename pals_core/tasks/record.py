"""``TaskRecord``: one task, declared once — where its rows come from, which columns hold its text and label,
its kind, its label order and its metrics (docs: "Task records and the tasks file").

Pure Python (no torch, no transformers): the calculator prices a task from its record alone. The number of
outputs of a task's head is

    C_t = the kind's outputs for its labels (``pals_core.kinds``: |labels|, or 1 for a kind without named labels)

and the head is d·C_t + C_t, as for GLUE. Declared ``labels`` fix the class order and spare reading the file;
without them the classes are the sorted distinct training labels (numeric order when every label is an
integer), read from the label column only (``readers.read_columns``).

GLUE's tasks are records of the same kind, built in (``glue.glue_record``); their rows come from the GLUE
folder (``--glue-dir``) instead of a file of their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..kinds import DEFAULT_KIND, PACKAGES, get_kind
from ..kinds.base import is_number
from ..kinds.errors import TaskRecordError

KINDS = PACKAGES  # the registered kinds (``pals_core.kinds.PACKAGES``)


class _MetricsOfKind(Mapping):
    """{kind: the metrics a task of that kind may report}, read from each kind's package when asked."""

    def __getitem__(self, kind: str) -> tuple[str, ...]:
        if kind not in PACKAGES:
            raise KeyError(kind)
        return get_kind(kind).metrics

    def __iter__(self):
        return iter(PACKAGES)

    def __len__(self) -> int:
        return len(PACKAGES)


METRICS_OF_KIND: Mapping[str, tuple[str, ...]] = _MetricsOfKind()
DEFAULT_DEV_FRACTION = 0.1
OPTIONAL_FIELDS = (
    "labels",
    "positive",
    "range",
    "label_sep",
    "format",
    "choices",
)  # each taken by the kinds that list it (Kind.fields)
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # compiled on first use (``re``'s cache), not at every start-up


@dataclass(frozen=True)
class TaskRecord:
    """One task. Paths are absolute once read from a tasks file (``taskfile.read_tasks_file``)."""

    name: str
    kind: str = DEFAULT_KIND
    train: str | None = None  # a file or a save_to_disk folder; None for a built-in GLUE task
    dev: str | None = None  # None: dev_fraction of train, split by the run's seed
    text: tuple[str, ...] = ("text",)  # one column, or two for a pair
    label: str = "label"
    labels: tuple[str, ...] | None = None  # label order (a kind with named labels); None = read from train
    metric: str | None = None  # the main metric (the task's entry in the dev average); None = the kind's default
    metrics: tuple[str, ...] = ()  # metrics reported; () = every metric of the kind that applies
    positive: str | None = None  # binary f1: the positive label (default: the second label)
    range: tuple[float, float] | None = None  # a numeric target must lie in [low, high] (the kind's field)
    label_sep: str | None = None  # a label set written as one string: the separator (default ",")
    format: str | None = None  # the files' format whatever their extension ("conll"; the kind's field)
    choices: tuple[str, ...] | None = None  # a row's candidates: their columns, or one column of lists (the kind's)
    dev_fraction: float = DEFAULT_DEV_FRACTION
    glue: str | None = None  # a built-in GLUE task: its rows come from the GLUE folder

    def __post_init__(self) -> None:
        for name in ("text", "labels", "metrics", "range", "choices"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        for name in ("text", "choices"):
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, (getattr(self, name),))

    # --- what the calculator and the trainer read ---------------------------------------------------

    @property
    def kind_of(self):
        """This task's ``Kind`` (``pals_core.kinds``): everything that depends on what its label is."""
        return get_kind(self.kind)

    @property
    def pair(self) -> bool:
        return len(self.text) == 2

    @property
    def main_metric(self) -> str:
        return self.metric or get_kind(self.kind).default_metric

    def reported_metrics(self, num_labels: int | None = None) -> tuple[str, ...]:
        """The metrics scored on dev: the declared ones, else every metric of the kind that applies (``f1``
        only for two classes); the main metric always among them, first when not declared."""
        if self.metrics:
            names = list(self.metrics)
        else:
            kind = get_kind(self.kind)
            applies = [m for m in kind.metrics if kind.applies(m, num_labels)]
            names = [self.main_metric] + [m for m in applies if m != self.main_metric]
        if self.main_metric not in names:
            names.insert(0, self.main_metric)
        return tuple(names)

    def positive_index(self, labels: tuple[str, ...]) -> int:
        """Binary f1's positive class: the ``positive`` label, else the second label."""
        return labels.index(self.positive) if self.positive is not None else 1

    # --- (de)serialisation ----------------------------------------------------------------------------

    def as_dict(self) -> dict:
        d = asdict(self)
        for k in ("text", "labels", "metrics", "range", "choices"):
            if d[k] is not None:
                d[k] = list(d[k])
        for k in ("format", "choices"):  # added after runs were recorded: a record without one is as it was
            if d[k] is None:  # (its fingerprint)
                del d[k]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TaskRecord:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise TaskRecordError(f"task record: unknown field(s) {', '.join(unknown)}")
        return cls(**d)

    def definition(self) -> dict:
        """The record without where its files lie: what must match for two runs to be on the same task."""
        d = self.as_dict()
        d.pop("train"), d.pop("dev")
        return d

    def with_(self, **changes: Any) -> TaskRecord:
        return replace(self, **changes)

    # --- checks ---------------------------------------------------------------------------------------

    def check(self) -> TaskRecord:
        """Raise ``TaskRecordError`` naming the task and the field for a record that cannot be used."""
        where = f"task {self.name!r}"
        if not isinstance(self.name, str) or not re.match(NAME_RE, self.name):
            raise TaskRecordError(
                f"task name {self.name!r}: letters, digits, '_', '.', '-' (at most 64, starting with a letter or digit)"
            )
        if self.kind not in KINDS:
            raise TaskRecordError(f"{where}: unknown kind {self.kind!r} ({', '.join(KINDS)})")
        if self.glue is None and not self.train:
            raise TaskRecordError(f"{where}: no 'train' file (or {{glue: <name>}} for a built-in GLUE task)")
        low, high = get_kind(self.kind).text_columns
        if not low <= len(self.text) <= high or not all(isinstance(c, str) and c for c in self.text):
            raise TaskRecordError(f"{where}: 'text' is {get_kind(self.kind).text_help}, got {list(self.text)!r}")
        if not isinstance(self.label, str) or not self.label:
            raise TaskRecordError(f"{where}: 'label' is a column name, got {self.label!r}")
        if len(set(self.text)) != len(self.text):
            raise TaskRecordError(f"{where}: 'text' names column {self.text[0]!r} twice (a pair is two columns)")
        if self.label in self.text:
            raise TaskRecordError(f"{where}: column {self.label!r} is both text and label")
        allowed = METRICS_OF_KIND[self.kind]
        for m in (self.main_metric, *self.metrics):
            if m not in allowed:
                raise TaskRecordError(f"{where}: unknown metric {m!r} for a {self.kind} task ({', '.join(allowed)})")
        kind = get_kind(self.kind)
        for name in OPTIONAL_FIELDS:
            if getattr(self, name) is not None and name not in kind.fields:
                owner = next((k for k in map(get_kind, KINDS) if name in k.field_notes), None)
                if owner is None:
                    raise TaskRecordError(f"{where}: a {self.kind} task takes no {name!r}")
                raise TaskRecordError(f"{where}: {name!r} is for {owner.field_notes[name]}")
        kind.check(self, where)
        if not is_number(self.dev_fraction) or not 0 < self.dev_fraction < 1:
            raise TaskRecordError(f"{where}: dev_fraction is a number between 0 and 1, got {self.dev_fraction!r}")
        return self


def fingerprint(record: TaskRecord, file_hashes: dict[str, str | None]) -> str:
    """What a task *is*: a built-in GLUE task is ``glue:<name>``; a task of one's own is the sha256 of its
    definition and its files' sha256 (its name and where the files lie do not count)."""
    if record.glue is not None:
        return f"glue:{record.glue}"
    import hashlib  # only a task of one's own is hashed: kept off the calculator's start-up (pals-budget)
    import json

    d = record.definition()
    d.pop("name")
    blob = json.dumps({"record": d, "files": file_hashes}, sort_keys=True)
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()[:16]


__all__ = ["KINDS", "METRICS_OF_KIND", "TaskRecord", "fingerprint"]
