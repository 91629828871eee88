"""Multilabel: a set of C labels per row (pure Python; the torch part is ``module.py``).

Label values: a list (JSON, Parquet, Arrow; a list of ClassLabel indices) or a string split by ``label_sep``
(default ","); a list inside the list, or a struct, is refused. The label order is as for classification. Head:
C_t = |labels| outputs; loss: binary cross-entropy with logits over the C labels; decoding: each label whose
sigmoid exceeds 0.5, i.e. whose logit is positive (the threshold the dev metrics use). Metrics: ``micro_f1``
(main by default: F1 over every (row, label) decision), ``macro_f1`` (mean of the C per-label F1). Baseline: each
label predicted when most training rows carry it. MT-Uncertainty is refused (no softmax over the labels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import labels as L
from ..base import FRACTION, Kind, TaskOutputs, check_lengths, counts_table
from ..errors import TaskDataError, TaskRecordError

DEFAULT_LABEL_SEP = ","


def _row_labels(record: Any, cols: Any, i: int, value: Any) -> list[str | None] | None:
    """A row's labels as names; None = missing."""
    column = record.label
    value = L.class_name(cols, column, i, value)

    def where() -> str:
        return cols.where(i, column)

    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        names = [L.label_text(v, where, "a multilabel row of a") for v in value]
        return None if any(n is None for n in names) else list(dict.fromkeys(names))
    if isinstance(value, dict):
        raise TaskDataError(f"{where()}: a struct label {L.short(value)} (a multilabel row is a list of labels)")
    s = str(value).strip()
    if not s:
        return None
    sep = record.label_sep or DEFAULT_LABEL_SEP
    return list(dict.fromkeys(p.strip() for p in s.split(sep) if p.strip()))


class Multilabel(Kind):
    name = "multilabel"
    metrics = {"micro_f1": FRACTION, "macro_f1": FRACTION}
    fields = ("labels", "label_sep")
    field_notes = {"label_sep": "multilabel tasks"}
    problem_type = "multi_label_classification"
    pipeline_scores = {"function_to_apply": "sigmoid", "top_k": None}
    pipeline_reading = (
        "every label with its sigmoid probability, best first: the labels above 0.5 (a logit above 0) are "
        "pals-predict's `{task}`, the probabilities its `--probs` columns"
    )
    entropy_sampling = None
    entropy_refusal = (
        "sampling mt_uncertainty ranks rows by the entropy of one softmax over a task's classes; a "
        "multilabel task has none (use annealed, proportional, sqrt, uniform or round_robin)"
    )

    def check(self, record: Any, where: str) -> None:
        L.check_label_set(record, where)
        if record.label_sep is not None and (not isinstance(record.label_sep, str) or not record.label_sep):
            raise TaskRecordError(f"{where}: 'label_sep' is a non-empty string")

    def label_names(self, record: Any, cols: Any = None) -> tuple[str, ...]:
        return L.read_label_names(record, cols, _row_labels, strings_at_once=False)

    def targets(self, record: Any, cols: Any, names: tuple[str, ...], split: str) -> list:
        return L.label_indices(record, cols, names, split, _row_labels)

    def label_array(self, labels: Sequence[Any], num_labels: int):
        """float32 (n, C) multi-hot (0 and 1)."""
        import numpy as np

        out = np.zeros((len(labels), num_labels), dtype=np.float32)
        for i, idx in enumerate(labels):
            out[i, list(idx)] = 1.0
        return out

    def scores(self, record: Any, preds: Any, labels: Any, metrics: Sequence[str], num_labels: int) -> dict:
        """F1 of thresholded predictions (logit > 0 ⇔ sigmoid > 0.5); labels (n, C) multi-hot."""
        import numpy as np
        from sklearn.metrics import f1_score

        logits, labels = np.asarray(preds), np.asarray(labels)
        preds = (logits > 0) if logits.dtype != bool else logits
        check_lengths(preds, labels)
        y = labels > 0.5
        return {m: float(f1_score(y, preds, average=m.split("_")[0], zero_division=0.0)) for m in metrics}

    def baseline(self, train_labels: Any, dev_labels: Mapping[str, Any], num_labels: int | None) -> tuple:
        import numpy as np

        keep = train_labels.mean(axis=0) > 0.5
        return {s: np.tile(keep, (len(y), 1)) for s, y in dev_labels.items()}, train_labels.shape[1]

    def distribution(self, train_y: Any, dev_ys: Mapping[str, Any], names: Sequence[str]) -> tuple[dict, dict]:
        def counts(y: Any) -> dict:
            return {name: int(c) for name, c in zip(names, y.sum(axis=0))}

        dev = {name: sum(counts(y)[name] for y in dev_ys.values()) for name in names}
        return counts(train_y), dev

    def profile_lines(self, profile: dict, table) -> list[str]:
        return counts_table(profile, table, "rows with label")

    def baseline_text(self, profile: dict) -> str:
        dist, n = profile["distribution"]["train"], profile["train_rows"]
        kept = [name for name in profile["labels"] if n and dist[name] / n > 0.5]
        return f"on every row the tags most train rows carry: {', '.join(kept) or 'none'}"

    def decode(self, task: str, names: Sequence[str], logits: Any, keep: bool = True, scale: dict | None = None):
        import numpy as np

        logits = np.asarray(logits, dtype=np.float32)
        names = tuple(names)
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        chosen = [[names[j] for j in np.flatnonzero(row > 0)] for row in logits]
        return TaskOutputs(task, self.name, names, chosen, None, probs if keep else None, logits if keep else None)


KIND = Multilabel()
