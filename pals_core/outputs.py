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
    logits: np.ndarray


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def decode(task: str, kind: str, labels: Sequence[str], logits: np.ndarray) -> TaskOutputs:
    """``logits`` (n, C) of ``task`` as labels and probabilities (see the module docstring)."""
    logits = np.asarray(logits, dtype=np.float32)
    names = tuple(labels)
    if kind == "regression":
        return TaskOutputs(task, kind, (), [float(v) for v in logits[:, 0]], None, None, logits)
    if kind == "multilabel":
        probs = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        chosen = [[names[j] for j in np.flatnonzero(row > 0)] for row in logits]
        return TaskOutputs(task, kind, names, chosen, None, probs, logits)
    probs = _softmax(logits.astype(np.float64))
    top = logits.argmax(axis=-1)
    return TaskOutputs(task, kind, names, [names[k] for k in top], probs[np.arange(len(top)), top], probs, logits)
