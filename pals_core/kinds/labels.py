"""Label values out of rows, shared by the kinds with named labels (pure Python): a value as a label name, a
``datasets`` ClassLabel index as its class name, the label set's order, and each row's label indices checked —
a bad value is a ``TaskDataError`` naming the file, the row and the column."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from .errors import TaskDataError, TaskRecordError

INTEGER = r"-?[0-9]+\Z"  # ASCII digits only: '²'.isdigit() and '١'.isdigit() are true, and int('²') fails

RowLabels = Callable[[Any, Any, int, Any], list[str | None] | None]
"""(record, cols, i, value) -> the label names of data row i; None = missing."""


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def label_text(value: Any, where: Callable[[], str], what: str, hint: str = "") -> str | None:
    """A label as its name: strings as written, integers (and integral floats) as digits; None = missing. A list or a
    struct is no label of ``what`` task (``TaskDataError`` at ``where()``, with ``hint`` after a list)."""
    if value is None or isinstance(value, bool):
        return None if value is None else str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (list, tuple)):
        raise TaskDataError(f"{where()}: a list label {short(value)} in {what} task{hint}")
    if isinstance(value, dict):
        raise TaskDataError(f"{where()}: a struct label {short(value)} in {what} task (a label is one value)")
    s = str(value).strip()
    return s or None


def class_name(cols: Any, column: str, i: int, value: Any) -> Any:
    """A ``ClassLabel`` column's index as its class name. -1 is what ``datasets`` writes for an unlabelled row: a
    missing label, never the last class; an index past the class names is refused."""
    names = cols.label_names.get(column)
    if names is not None and isinstance(value, list):  # a list of ClassLabel (a label set): each item by its name
        return [class_name(cols, column, i, v) for v in value]
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


def sorted_labels(names: set[str]) -> tuple[str, ...]:
    if all(re.match(INTEGER, n) for n in names):
        return tuple(sorted(names, key=lambda n: (int(n), n)))  # '1' and '01' are two labels: one order, always
    return tuple(sorted(names))


def read_label_names(record: Any, cols: Any, row_labels: RowLabels, strings_at_once: bool) -> tuple[str, ...]:
    """The label order: declared, else a ClassLabel column's names, else the sorted distinct training labels of
    ``cols``, the training file's label column (read by the caller, ``pals_core.tasks.rows.read_label_names``, when
    the labels are not declared). ``strings_at_once``: a column of strings holds one label a row (CSV, TSV: each
    distinct string looked at once)."""
    if record.labels is not None:
        return tuple(record.labels)
    if record.label in cols.label_names:
        return cols.label_names[record.label]
    seen: set[str] = set()
    column = cols.values[record.label]
    if strings_at_once and all(type(v) is str for v in column):
        seen = {v.strip() for v in set(column)}
        if "" in seen:
            i = next(i for i, v in enumerate(column) if not v.strip())
            raise TaskDataError(f"{cols.where(i, record.label)}: missing label")
        column = ()
    for i, value in enumerate(column):
        names = row_labels(record, cols, i, value)
        if names is None or None in names:
            raise TaskDataError(f"{cols.where(i, record.label)}: missing label")
        seen.update(names)
    if len(seen) < 2:
        raise TaskDataError(
            f"{cols.path}, column {record.label!r}: fewer than two classes "
            f"({', '.join(map(repr, sorted(seen))) or 'none'})"
        )
    return sorted_labels(seen)


def label_indices(record: Any, cols: Any, names: tuple[str, ...], split: str, row_labels: RowLabels) -> list[list[int]]:
    """Each row's label indices in ``names``: a missing label, or one outside the label set, is refused."""
    column = record.label
    index = {n: k for k, n in enumerate(names)}
    out = []
    for i, v in enumerate(cols.values[column]):
        got = row_labels(record, cols, i, v)
        if got is None or None in got:
            raise TaskDataError(f"{cols.where(i, column)}: missing label")
        unknown = [n for n in got if n not in index]
        if unknown:
            what = (
                "never seen in train" if split == "dev" and record.labels is None else f"not one of {', '.join(names)}"
            )
            raise TaskDataError(f"{cols.where(i, column)}: label {unknown[0]!r} {what}")
        out.append([index[n] for n in got])
    return out


def check_label_set(record: Any, where: str) -> None:
    """Declared ``labels``: each once, at least two."""
    if record.labels is not None:
        if len(set(record.labels)) != len(record.labels):
            raise TaskRecordError(f"{where}: 'labels' lists a label twice")
        if len(record.labels) < 2:
            raise TaskRecordError(f"{where}: 'labels' needs at least two labels, got {list(record.labels)!r}")


def softmax(x):
    import numpy as np

    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)
