"""A task's rows, checked: texts and labels out of its files, every row looked at before any step.

Bad data never trains: a missing file or column, an empty or missing text, a missing label, a label outside
the declared ones, a dev label never seen in train, a regression target that is not a finite number or lies
outside the declared ``range``, fewer than two classes, text that is not UTF-8 — each is a ``TaskDataError``
naming the file, the row and the column. No row is skipped.

Labels become what the model trains on:
* classification: the class index in ``labels`` (declared, else the sorted distinct training labels —
  numeric order when every label is an integer; a ``ClassLabel`` column's names when saved by ``datasets``);
* regression: a float;
* multilabel: the set of label indices (a list in JSON / Parquet / Arrow, or a string split by ``label_sep``).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .readers import Columns, TaskDataError, read_columns
from .record import DEFAULT_LABEL_SEP, TaskRecord


@dataclass
class Rows:
    """One split of a task: texts (a, and b for a pair) and labels (index, float or index list), with where
    each row came from."""

    text_a: list[str]
    text_b: Optional[list[str]]
    labels: list[Any]
    source: str  # the file path, with "(dev split of …)" for a held-out part of train

    def __len__(self) -> int:
        return len(self.labels)


_INTEGER = r"-?[0-9]+\Z"  # ASCII digits only: '²'.isdigit() and '١'.isdigit() are true, and int('²') fails
_NUMBER = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z|(?i:[+-]?(nan|inf|infinity))\Z"
"""A regression target written as text (spaces around it aside): a decimal number in ASCII, as written — float()
would also take '1_0' as 10 and Arabic-Indic digits as numbers."""


def _label_text(value: Any, where: Callable[[], str], kind: str = "a classification") -> Optional[str]:
    """A label as its name: strings as written, integers (and integral floats) as digits; None = missing. A list or a
    struct is no label of ``kind`` task (``TaskDataError`` at ``where()``): a list belongs to ``kind: multilabel``."""
    if value is None or isinstance(value, bool):
        return None if value is None else str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (list, tuple)):
        hint = " (a list of labels is a task of kind: multilabel)" if kind == "a classification" else ""
        raise TaskDataError(f"{where()}: a list label {_short(value)} in {kind} task{hint}")
    if isinstance(value, dict):
        raise TaskDataError(f"{where()}: a struct label {_short(value)} in {kind} task (a label is one value)")
    s = str(value).strip()
    return s or None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _label_set(record: TaskRecord, value: Any, where: Callable[[], str]) -> Optional[list[str]]:
    """A multilabel row's labels as names; None = missing. A list inside the list, or a struct, is refused."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        names = [_label_text(v, where, "a multilabel row of a") for v in value]
        return None if any(n is None for n in names) else list(dict.fromkeys(names))
    if isinstance(value, dict):
        raise TaskDataError(f"{where()}: a struct label {_short(value)} (a multilabel row is a list of labels)")
    s = str(value).strip()
    if not s:
        return None
    sep = record.label_sep or DEFAULT_LABEL_SEP
    return list(dict.fromkeys(p.strip() for p in s.split(sep) if p.strip()))


def _class_name(cols: Columns, column: str, i: int, value: Any) -> Any:
    """A ``ClassLabel`` column's index as its class name. -1 is what ``datasets`` writes for an unlabelled row: a
    missing label, never the last class; an index past the class names is refused."""
    names = cols.label_names.get(column)
    if names is not None and isinstance(value, list):  # a list of ClassLabel (multilabel): each item by its name
        return [_class_name(cols, column, i, v) for v in value]
    if names is None or value is None or isinstance(value, bool) or not isinstance(value, int):
        return value
    if value == -1:
        raise TaskDataError(f"{cols.where(i, column)}: missing label (ClassLabel -1: an unlabelled row)")
    if not 0 <= value < len(names):
        raise TaskDataError(
            f"{cols.where(i, column)}: ClassLabel index {value} is not one of the {len(names)} class names "
            f"(0 to {len(names) - 1})"
        )
    return names[value]


def _labels_of(record: TaskRecord, cols: Columns, i: int, value: Any) -> Optional[list[Optional[str]]]:
    """The label names of data row i (one for classification, a set for multilabel); None = missing."""
    column = record.label
    value = _class_name(cols, column, i, value)

    def where() -> str:
        return cols.where(i, column)

    return _label_set(record, value, where) if record.multilabel else [_label_text(value, where)]


def _sorted_labels(names: set[str]) -> tuple[str, ...]:
    if all(re.match(_INTEGER, n) for n in names):
        return tuple(sorted(names, key=lambda n: (int(n), n)))  # '1' and '01' are two labels: one order, always
    return tuple(sorted(names))


def read_label_names(record: TaskRecord, cols: Optional[Columns] = None) -> tuple[str, ...]:
    """The class order: declared, else a ClassLabel column's names, else the sorted distinct training labels.
    Reads only the label column of the training file (when not declared)."""
    if record.labels is not None:
        return tuple(record.labels)
    if cols is None:
        cols = read_columns(record.train, [record.label])
    if record.label in cols.label_names:
        return cols.label_names[record.label]
    seen: set[str] = set()
    column = cols.values[record.label]
    if not record.multilabel and all(type(v) is str for v in column):  # CSV, TSV: each distinct string once
        seen = {v.strip() for v in set(column)}
        if "" in seen:
            i = next(i for i, v in enumerate(column) if not v.strip())
            raise TaskDataError(f"{cols.where(i, record.label)}: missing label")
        column = ()
    for i, value in enumerate(column):
        names = _labels_of(record, cols, i, value)
        if names is None or None in names:
            raise TaskDataError(f"{cols.where(i, record.label)}: missing label")
        seen.update(names)
    if len(seen) < 2:
        raise TaskDataError(
            f"{cols.path}, column {record.label!r}: fewer than two classes "
            f"({', '.join(map(repr, sorted(seen))) or 'none'})"
        )
    return _sorted_labels(seen)


def num_labels(record: TaskRecord) -> int:
    """C_t: 1 for regression, else the number of labels (declared, or read from the train file's label column)."""
    if record.regression:
        return 1
    return len(read_label_names(record))


def _texts(record: TaskRecord, cols: Columns) -> tuple[list[str], Optional[list[str]]]:
    out = []
    for column in record.text:
        values = cols.values[column]
        for i, v in enumerate(values):
            if v is None:
                raise TaskDataError(f"{cols.where(i, column)}: missing text")
            if not isinstance(v, str):
                raise TaskDataError(f"{cols.where(i, column)}: text expected, found {type(v).__name__} {v!r}")
            if not v.strip():
                raise TaskDataError(f"{cols.where(i, column)}: empty text")
        out.append(values)
    return out[0], (out[1] if len(out) > 1 else None)


def _targets(record: TaskRecord, cols: Columns, names: Optional[tuple[str, ...]], split: str) -> list[Any]:
    column = record.label
    values = cols.values[column]
    if record.regression:
        out = []
        for i, v in enumerate(values):
            v = _class_name(cols, column, i, v)
            try:
                if isinstance(v, str) and v.strip() and not re.match(_NUMBER, v.strip()):
                    raise ValueError(v)
                x = float(v) if not isinstance(v, bool) and v is not None and str(v).strip() else None
            except (TypeError, ValueError):
                raise TaskDataError(f"{cols.where(i, column)}: target {_short(v)} is not a number") from None
            if x is None:
                raise TaskDataError(f"{cols.where(i, column)}: missing label")
            if not math.isfinite(x):
                raise TaskDataError(f"{cols.where(i, column)}: target {v!r} is not finite")
            if record.range is not None and not record.range[0] <= x <= record.range[1]:
                raise TaskDataError(
                    f"{cols.where(i, column)}: target {x:g} is outside the declared range "
                    f"[{record.range[0]:g}, {record.range[1]:g}]"
                )
            out.append(x)
        return out
    index = {n: k for k, n in enumerate(names)}
    out = []
    for i, v in enumerate(values):
        got = _labels_of(record, cols, i, v)
        if got is None or None in got:
            raise TaskDataError(f"{cols.where(i, column)}: missing label")
        unknown = [n for n in got if n not in index]
        if unknown:
            what = (
                "never seen in train" if split == "dev" and record.labels is None else f"not one of {', '.join(names)}"
            )
            raise TaskDataError(f"{cols.where(i, column)}: label {unknown[0]!r} {what}")
        out.append([index[n] for n in got] if record.multilabel else index[got[0]])
    return out


def _columns(record: TaskRecord, path: str) -> Columns:
    cols = read_columns(path, [*record.text, record.label])
    if len(cols) == 0:
        raise TaskDataError(f"{path}: no rows")
    return cols


def dev_rows(n: int, fraction: float, seed: int) -> list[int]:
    """The rows of train held out as dev when a task has no dev file: ⌈fraction·n⌉ rows drawn by ``seed``
    (at least one, leaving at least one to train on), in file order."""
    k = min(max(1, math.ceil(fraction * n)), n - 1)
    return sorted(random.Random(seed).sample(range(n), k))


def read_rows(record: TaskRecord, seed: int = 0) -> tuple[Rows, Rows, tuple[str, ...]]:
    """Train and dev rows of a task of one's own, checked, and its label names (() for regression). Without
    a dev file, ``dev_fraction`` of train is held out, drawn by ``seed``."""
    train_cols = _columns(record, record.train)
    names = () if record.regression else read_label_names(record, train_cols)
    if record.positive is not None and record.positive not in names:
        raise TaskDataError(
            f"{record.train}, column {record.label!r}: positive label {record.positive!r} "
            f"is not a label ({', '.join(names)})"
        )
    if "f1" in record.reported_metrics(len(names)) and len(names) != 2:
        raise TaskDataError(
            f"{record.train}, column {record.label!r}: metric 'f1' is binary; this task has {len(names)} labels"
        )
    train = Rows(*_texts(record, train_cols), _targets(record, train_cols, names, "train"), record.train)
    if record.dev:
        dev_cols = _columns(record, record.dev)
        dev = Rows(*_texts(record, dev_cols), _targets(record, dev_cols, names, "dev"), record.dev)
    else:
        if len(train) < 2:
            raise TaskDataError(f"{record.train}: one row; a dev split needs at least two (or give 'dev')")
        held = dev_rows(len(train), record.dev_fraction, seed)
        dev, train = _split(train, held, f"{record.train} (dev: {record.dev_fraction:g} of train, seed {seed})")
    return train, dev, names


def _split(rows: Rows, held: list[int], dev_source: str) -> tuple[Rows, Rows]:
    out = set(held)
    keep = [i for i in range(len(rows)) if i not in out]

    def take(idx: list[int], source: str) -> Rows:
        return Rows(
            [rows.text_a[i] for i in idx],
            None if rows.text_b is None else [rows.text_b[i] for i in idx],
            [rows.labels[i] for i in idx],
            source,
        )

    return take(held, dev_source), take(keep, rows.source)
