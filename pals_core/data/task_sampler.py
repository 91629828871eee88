"""The interface every task sampler implements (``TaskSampler``) and the epoch arithmetic they share.

A sampler chooses the task of each training step: ``probabilities(step)`` and ``sample(step, rng)``; it
holds no random state (the trainer owns and checkpoints the ``numpy.random.Generator``). Model-aware
samplers (CA-MTL's MT-Uncertainty) set ``needs_model`` and implement ``candidates`` and ``select``; a
step's batch is then a list of ``(task, rows)`` parts, trained as one batch (docs/design.md "Multi-task training").
The kinds and their registry are in ``samplers.py``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

DEFAULT_EPOCH_STEPS = 2400


def num_epochs(total_steps: int, epoch_steps: int) -> int:
    """E = ⌈total_steps / epoch_steps⌉, at least 1."""
    if epoch_steps < 1:
        raise ValueError(f"epoch_steps must be at least 1, got {epoch_steps}")
    return max(1, math.ceil(total_steps / epoch_steps))


def epoch_of(step: int, epoch_steps: int) -> int:
    """e, 1-based, of a 0-based step."""
    return step // epoch_steps + 1


class TaskSampler(ABC):
    """Chooses the task of each training step."""

    name: ClassVar[str] = ""
    needs_model: ClassVar[bool] = False

    def __init__(
        self, task_sizes: dict[str, int], total_steps: int, epoch_steps: int = DEFAULT_EPOCH_STEPS, **options: Any
    ) -> None:
        """``options`` a sampler kind does not use (e.g. the α settings) are ignored."""
        if not task_sizes:
            raise ValueError("a sampler needs at least one task")
        for t, n in task_sizes.items():
            if not isinstance(n, (int, np.integer)) or n < 1:
                raise ValueError(f"task {t!r}: training set size must be a positive integer, got {n!r}")
        if total_steps < 1:
            raise ValueError(f"total_steps must be at least 1, got {total_steps}")
        self.tasks: list[str] = list(task_sizes)
        self.sizes = np.array([task_sizes[t] for t in self.tasks], dtype=np.float64)
        self.total_steps = int(total_steps)
        self.epoch_steps = int(epoch_steps)
        self.epochs = num_epochs(self.total_steps, self.epoch_steps)

    @abstractmethod
    def probabilities(self, step: int) -> np.ndarray:
        """p_i at ``step`` (0-based), in the order of ``self.tasks``; sums to 1."""

    def sample(self, step: int, rng: np.random.Generator) -> str:
        """The task trained at ``step``."""
        p = self.probabilities(step)
        return self.tasks[int(rng.choice(len(self.tasks), p=p))]

    def candidates(self, step: int, rng: np.random.Generator) -> list[str]:
        """Model-aware samplers: the tasks to draw one candidate batch from (default: every task)."""
        return list(self.tasks)

    def select(self, model: Any, batches: Sequence[tuple[str, dict]], step: int = 0) -> list[tuple[str, dict]]:
        """Model-aware samplers: the batch of ``step`` from the candidate ``(task, batch)`` pairs, as one
        ``(task, rows)`` part per task it holds (several parts = one mixed batch, one optimiser step)."""
        raise NotImplementedError(f"sampler {self.name!r} does not look at the model")

    def describe(self) -> dict:
        return {
            "kind": self.name,
            "tasks": self.tasks,
            "sizes": self.sizes.astype(int).tolist(),
            "total_steps": self.total_steps,
            "epoch_steps": self.epoch_steps,
            "epochs": self.epochs,
        }
