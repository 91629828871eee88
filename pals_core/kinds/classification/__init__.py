"""Classification: one class of C per row (pure Python; the torch part is ``module.py``).

Label values: a string, an integer (or an integral float) or a ``datasets`` ClassLabel index, each a class name;
a list or a struct is refused (a list of labels is a task of kind: multilabel). The label order is declared
(``labels``), else a ClassLabel column's names, else the sorted distinct training labels (numeric order when every
label is an integer). Head: C_t = |labels| outputs; loss: cross-entropy; decoding: softmax, the arg-max class and
its probability. Metrics: ``accuracy`` (main by default), ``macro_f1`` (unweighted mean of the C per-class F1),
``mcc`` (Matthews correlation), ``f1`` (binary only: F1 of the ``positive`` label, by default the second).
Baseline: the most frequent training class on every dev row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import labels as L
from ..base import CORRELATION, FRACTION, Kind, TaskOutputs, check_lengths, counts_table
from ..errors import TaskDataError, TaskRecordError


def _row_labels(record: Any, cols: Any, i: int, value: Any) -> list[str | None] | None:
    column = record.label
    value = L.class_name(cols, column, i, value)
    hint = " (a list of labels is a task of kind: multilabel)"
    return [L.label_text(value, lambda: cols.where(i, column), "a classification", hint)]


class Classification(Kind):
    name = "classification"
    metrics = {"accuracy": FRACTION, "macro_f1": FRACTION, "mcc": CORRELATION, "f1": FRACTION}
    fields = ("labels", "positive")
    field_notes = {"positive": "binary classification (f1)"}
    problem_type = "single_label_classification"
    pipeline_scores = {"function_to_apply": "softmax", "top_k": None}
    pipeline_reading = (
        "every label with its softmax probability, best first: the first is pals-predict's `{task}` and "
        "`{task}_prob`, all of them its `--probs` columns"
    )

    def applies(self, metric: str, num_labels: int | None) -> bool:
        return not (metric == "f1" and num_labels not in (None, 2))

    def check(self, record: Any, where: str) -> None:
        L.check_label_set(record, where)
        if record.positive is not None and record.labels is not None and record.positive not in record.labels:
            raise TaskRecordError(f"{where}: positive label {record.positive!r} is not in 'labels'")
        if record.labels is not None and "f1" in (record.main_metric, *record.metrics) and len(record.labels) != 2:
            raise TaskRecordError(
                f"{where}: metric 'f1' is binary; this task has {len(record.labels)} labels (macro_f1 takes any number)"
            )

    def label_names(self, record: Any, cols: Any = None) -> tuple[str, ...]:
        return L.read_label_names(record, cols, _row_labels, strings_at_once=True)

    def check_label_names(self, record: Any, names: tuple[str, ...]) -> None:
        """The ``positive`` label among the labels read; binary ``f1`` on two labels only."""
        if record.positive is not None and record.positive not in names:
            raise TaskDataError(
                f"{record.train}, column {record.label!r}: positive label {record.positive!r} "
                f"is not a label ({', '.join(names)})"
            )
        if "f1" in record.reported_metrics(len(names)) and len(names) != 2:
            raise TaskDataError(
                f"{record.train}, column {record.label!r}: metric 'f1' is binary; this task has {len(names)} labels"
            )

    def targets(self, record: Any, cols: Any, names: tuple[str, ...], split: str) -> list:
        return [k[0] for k in L.label_indices(record, cols, names, split, _row_labels)]

    def scores(self, record: Any, preds: Any, labels: Any, metrics: Sequence[str], num_labels: int) -> dict:
        """Scores of arg-max predictions; logits (n, C) or predicted classes (n,)."""
        import numpy as np
        from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

        positive = record.positive_index(record.labels) if record.labels is not None else 1
        logits, labels = np.asarray(preds), np.asarray(labels)
        preds = logits.argmax(axis=-1) if logits.ndim == 2 else logits
        check_lengths(preds, labels)
        out: dict[str, float] = {}
        for m in metrics:
            if m == "accuracy":
                out[m] = float(accuracy_score(labels, preds))
            elif m == "f1":
                out[m] = float(f1_score(labels, preds, pos_label=positive, average="binary", zero_division=0.0))
            elif m == "macro_f1":
                ids = list(range(num_labels))
                out[m] = float(f1_score(labels, preds, labels=ids, average="macro", zero_division=0.0))
            elif m == "mcc":
                out[m] = float(matthews_corrcoef(labels, preds))  # 0.0 for a constant prediction
            else:
                raise ValueError(f"unknown classification metric {m!r}")
        return out

    def baseline(self, train_labels: Any, dev_labels: Mapping[str, Any], num_labels: int | None) -> tuple:
        import numpy as np

        c = num_labels or int(train_labels.max()) + 1
        majority = int(np.bincount(train_labels.astype(np.int64), minlength=c).argmax())
        return {s: np.full(len(y), majority) for s, y in dev_labels.items()}, c

    def distribution(self, train_y: Any, dev_ys: Mapping[str, Any], names: Sequence[str]) -> tuple[dict, dict]:
        import numpy as np

        def counts(y: Any) -> dict:
            return {name: int(c) for name, c in zip(names, np.bincount(y, minlength=len(names)))}

        dev = {name: sum(counts(y)[name] for y in dev_ys.values()) for name in names}
        return counts(train_y), dev

    def profile_lines(self, profile: dict, table) -> list[str]:
        return counts_table(profile, table, "label")

    def baseline_text(self, profile: dict) -> str:
        dist = profile["distribution"]["train"]
        return f"always {max(profile['labels'], key=lambda name: dist[name])!r}"

    def decode(self, task: str, names: Sequence[str], logits: Any, keep: bool = True, scale: dict | None = None):
        import numpy as np

        logits = np.asarray(logits, dtype=np.float32)
        names = tuple(names)
        probs = L.softmax(logits.astype(np.float64))
        top = logits.argmax(axis=-1)
        prob = probs[np.arange(len(top)), top]
        label = [names[k] for k in top]
        return TaskOutputs(task, self.name, names, label, prob, probs if keep else None, logits if keep else None)

    def columns(self, probs: bool) -> list[str]:
        return ["label", "prob", "probs"] if probs else ["label", "prob"]


KIND = Classification()
