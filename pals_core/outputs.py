"""What a task's logits say, in its own words (numpy; no torch): the label name and its probability
(classification: softmax), the value (regression: the one output), the label set (multilabel: each label whose
sigmoid exceeds 0.5, i.e. whose logit is positive — the threshold the dev metrics use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np


@dataclass
class TaskOutputs:
    """One task's outputs over n rows. ``label``: names (classification), floats (regression) or lists of names
    (multilabel); ``prob``: the probability of the predicted label (classification; None otherwise); ``probs``:
    (n, C) — softmax (classification), sigmoid (multilabel) — or None (regression)."""

    task: str
    kind: str
    labels: tuple[str, ...]  # class names in output order; () for regression
    label: list
    prob: Optional[np.ndarray]
    probs: Optional[np.ndarray]
    logits: Optional[np.ndarray]  # (n, C); None where the caller kept the labels only (``decode(keep=False)``)


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def decode(task: str, kind: str, labels: Sequence[str], logits: np.ndarray, *, keep: bool = True) -> TaskOutputs:
    """``logits`` (n, C) of ``task`` as labels and probabilities (see the module docstring); ``keep=False``: without
    the (n, C) arrays (``logits``, ``probs``: None), what a caller streaming many batches of many labels keeps."""
    logits = np.asarray(logits, dtype=np.float32)
    names = tuple(labels)
    if kind == "regression":
        return TaskOutputs(task, kind, (), [float(v) for v in logits[:, 0]], None, None, logits)
    if kind == "multilabel":
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        chosen = [[names[j] for j in np.flatnonzero(row > 0)] for row in logits]
        return TaskOutputs(task, kind, names, chosen, None, probs if keep else None, logits if keep else None)
    probs = _softmax(logits.astype(np.float64))
    top = logits.argmax(axis=-1)
    prob = probs[np.arange(len(top)), top]
    label = [names[k] for k in top]
    return TaskOutputs(task, kind, names, label, prob, probs if keep else None, logits if keep else None)


class Decoded:
    """One task's outputs gathered batch by batch (``add(rows, logits)``: each batch decoded at once, its (B, C)
    logits then let go unless ``keep``), put back in row order by ``outputs()``: the memory of n labels, not of
    n × C floats, however many labels the task has."""

    def __init__(self, task: str, kind: str, labels: Sequence[str], width: int, *, keep: bool = True) -> None:
        self.task, self.kind, self.labels, self.width, self.keep = task, kind, tuple(labels), width, keep
        self.rows: list[np.ndarray] = []
        self.parts: list[TaskOutputs] = []

    def add(self, rows: np.ndarray, logits: np.ndarray) -> None:
        self.rows.append(np.asarray(rows, dtype=np.int64))
        self.parts.append(decode(self.task, self.kind, self.labels, logits, keep=self.keep))

    def outputs(self) -> TaskOutputs:
        """Every row's outputs, in ascending row order."""
        if not self.parts:
            return decode(self.task, self.kind, self.labels, np.zeros((0, self.width), np.float32), keep=self.keep)
        order = np.argsort(np.concatenate(self.rows), kind="stable")
        first = self.parts[0]
        label = [v for p in self.parts for v in p.label]

        def joined(name: str) -> Optional[np.ndarray]:
            if getattr(first, name) is None:
                return None
            return np.concatenate([getattr(p, name) for p in self.parts])[order]

        return TaskOutputs(
            self.task,
            self.kind,
            first.labels,
            [label[i] for i in order],
            joined("prob"),
            joined("probs"),
            joined("logits"),
        )
