"""A task's rows, checked: texts and labels out of its files, every row looked at before any step.

Bad data never trains: a missing file or column, an empty or missing text, a missing label, a label outside
the declared ones, a dev label never seen in train, a regression target that is not a finite number or lies
outside the declared ``range``, fewer than two classes, text that is not UTF-8 — each is a ``TaskDataError``
naming the file, the row and the column. No row is skipped.

Labels become what the model trains on as the task's kind reads them (``pals_core/kinds/<kind>/``: its
``label_names`` and ``targets``, e.g. a class index, a float, a set of label indices); the texts, the files and the
dev split are the same for every kind and read here.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..kinds import get_kind
from ..kinds.errors import TaskDataError
from .readers import Columns, column_names, read_columns
from .record import TaskRecord


@dataclass
class Rows:
    """One split of a task: texts (a, and b for a pair; a kind of one label per word: each row a list of words; a
    kind whose row is several sequences: each row a list of its first segments, and of its second ones) and labels (index, float or index list), with where each row came from."""

    text_a: list[Any]
    text_b: list[str] | None
    labels: list[Any]
    source: str  # the file path, with "(dev split of …)" for a held-out part of train
    where_word: Callable[[int, int], str] | None = None  # rows of words: where row i's word j is (file, line, column)
    read_from: tuple[str, str] | None = None  # (path, sha256 of the bytes the rows were read from)

    def __len__(self) -> int:
        return len(self.labels)


def read_label_names(record: TaskRecord, cols: Columns | None = None) -> tuple[str, ...]:
    """The label order of the task's kind (() for a kind without named labels): declared, else a ClassLabel
    column's names, else the sorted distinct training labels. Reads only the label column of the training file
    (when not declared and ``cols`` is not given)."""
    kind = get_kind(record.kind)
    if cols is None and kind.has_labels and record.labels is None:
        wanted = kind.label_columns(record, record.train, lambda: column_names(record.train, record.format))
        if wanted:
            cols = read_columns(record.train, wanted, record.format)
    return kind.label_names(record, cols)


def num_labels(record: TaskRecord) -> int:
    """C_t: the outputs of the task's kind for its labels (declared, or read from the train file's label column)."""
    kind = get_kind(record.kind)
    return kind.num_outputs(read_label_names(record) if kind.has_labels else ())


def _texts(record: TaskRecord, cols: Columns) -> tuple[list[Any], list[Any] | None]:
    own = get_kind(record.kind).texts(record, cols)
    if own is not None:  # a kind that reads its rows' sequences itself (a row of several: a list of each)
        return own
    if get_kind(record.kind).per_word:  # a row's text is its list of words
        return [_words(cols, column) for column in record.text][0], None
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


def _words(cols: Columns, column: str) -> list[list[str]]:
    """A column whose every cell is a list of words (a kind of one label per word): a cell that is not a list, an
    empty list, or a word that is not text or is empty is refused, naming the file, the row (CoNLL: the line) and
    the column."""
    values = cols.values[column]
    for i, v in enumerate(values):
        if v is None:
            raise TaskDataError(f"{cols.where(i, column)}: missing text")
        if not isinstance(v, list):
            raise TaskDataError(
                f"{cols.where(i, column)}: a list of words expected, found {type(v).__name__} {str(v)[:60]!r}"
            )
        if not v:
            raise TaskDataError(f"{cols.where(i, column)}: no words")
        for j, w in enumerate(v):
            if not isinstance(w, str):
                raise TaskDataError(f"{cols.where_word(i, j, column)}: a word is text, found {type(w).__name__} {w!r}")
            if not w.strip():
                raise TaskDataError(f"{cols.where_word(i, j, column)}: empty word")
    return values


def _targets(record: TaskRecord, cols: Columns, names: tuple[str, ...], split: str) -> list[Any]:
    return get_kind(record.kind).targets(record, cols, names, split)


def _columns(record: TaskRecord, path: str) -> Columns:
    wanted = get_kind(record.kind).row_columns(record, path, lambda: column_names(path, record.format))
    cols = read_columns(path, wanted, record.format)
    if len(cols) == 0:
        raise TaskDataError(f"{path}: no rows")
    return cols


def dev_rows(n: int, fraction: float, seed: int) -> list[int]:
    """The rows of train held out as dev when a task has no dev file: ⌈fraction·n⌉ rows drawn by ``seed``
    (at least one, leaving at least one to train on), in file order."""
    k = min(max(1, math.ceil(fraction * n)), n - 1)
    return sorted(random.Random(seed).sample(range(n), k))


def read_rows(record: TaskRecord, seed: int = 0) -> tuple[Rows, Rows, tuple[str, ...]]:
    """Train and dev rows of a task of one's own, checked, and its label names (() for a kind without). Without
    a dev file, ``dev_fraction`` of train is held out, drawn by ``seed``."""
    train_cols = _columns(record, record.train)
    names = read_label_names(record, train_cols)
    get_kind(record.kind).check_label_names(record, names)
    train = Rows(
        *_texts(record, train_cols),
        _targets(record, train_cols, names, "train"),
        record.train,
        _where_word(record, train_cols),
        (record.train, train_cols.sha256),
    )
    if record.dev:
        dev_cols = _columns(record, record.dev)
        dev = Rows(
            *_texts(record, dev_cols),
            _targets(record, dev_cols, names, "dev"),
            record.dev,
            _where_word(record, dev_cols),
            (record.dev, dev_cols.sha256),
        )
    else:
        if len(train) < 2:
            raise TaskDataError(f"{record.train}: one row; a dev split needs at least two (or give 'dev')")
        held = dev_rows(len(train), record.dev_fraction, seed)
        dev, train = _split(train, held, f"{record.train} (dev: {record.dev_fraction:g} of train, seed {seed})")
    return train, dev, names


def _where_word(record: TaskRecord, cols: Columns) -> Callable[[int, int], str] | None:
    """A kind of one label per word: where row i's word j is in the file (``Columns.where_word``)."""
    if not get_kind(record.kind).per_word:
        return None
    column = record.text[0]
    return lambda i, j: cols.where_word(i, j, column)


def _split(rows: Rows, held: list[int], dev_source: str) -> tuple[Rows, Rows]:
    out = set(held)
    keep = [i for i in range(len(rows)) if i not in out]

    def take(idx: list[int], source: str) -> Rows:
        where = rows.where_word
        return Rows(
            [rows.text_a[i] for i in idx],
            None if rows.text_b is None else [rows.text_b[i] for i in idx],
            [rows.labels[i] for i in idx],
            source,
            None if where is None else (lambda i, j: where(idx[i], j)),
            rows.read_from,
        )

    return take(held, dev_source), take(keep, rows.source)
