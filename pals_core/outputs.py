"""What a task's logits say, in its own words (numpy; no torch), as its kind decodes them
(``pals_core/kinds/<kind>/``: ``decode``; e.g. a class name and its softmax probability, a number, the set of labels
whose sigmoid exceeds 0.5 — the threshold the dev metrics use): ``TaskOutputs`` (``pals_core.kinds.base``), gathered
batch by batch here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .kinds import get_kind
from .kinds.base import TaskOutputs


def decode(
    task: str, kind: str, labels: Sequence[str], logits: np.ndarray, *, keep: bool = True, scale: dict | None = None
) -> TaskOutputs:
    """``logits`` (n, C) of ``task`` as its kind's values and probabilities; ``keep=False``: without the (n, C)
    arrays (``logits``, ``probs``: None), what a caller streaming many batches of many labels keeps. ``scale``: the
    run's target scale of the task (``Kind.scale``), None when it has none."""
    return get_kind(kind).decode(task, labels, logits, keep, scale)


class Decoded:
    """One task's outputs gathered batch by batch (``add(rows, logits)``: each batch decoded at once, its (B, C)
    logits then let go unless ``keep``), put back in row order by ``outputs()``: the memory of n labels, not of
    n × C floats, however many labels the task has."""

    def __init__(
        self,
        task: str,
        kind: str,
        labels: Sequence[str],
        width: int,
        *,
        keep: bool = True,
        scale: dict | None = None,
    ) -> None:
        self.task, self.kind, self.labels, self.width, self.keep = task, kind, tuple(labels), width, keep
        self.scale = scale
        self.rows: list[np.ndarray] = []
        self.parts: list[TaskOutputs] = []

    def add(self, rows: np.ndarray, logits) -> None:
        """One batch's logits (an array or a tensor; a ``forward.Sink``), decoded at once."""
        if hasattr(logits, "detach"):  # a torch tensor, on any device, in any float type
            logits = logits.float().cpu().numpy()
        self.rows.append(np.asarray(rows, dtype=np.int64))
        self.parts.append(decode(self.task, self.kind, self.labels, logits, keep=self.keep, scale=self.scale))

    def outputs(self) -> TaskOutputs:
        """Every row's outputs, in ascending row order."""
        if not self.parts:
            return decode(
                self.task,
                self.kind,
                self.labels,
                np.zeros((0, self.width), np.float32),
                keep=self.keep,
                scale=self.scale,
            )
        order = np.argsort(np.concatenate(self.rows), kind="stable")
        first = self.parts[0]
        label = [v for p in self.parts for v in p.label]

        def joined(name: str) -> np.ndarray | None:
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
            spans=joined("spans"),
        )
