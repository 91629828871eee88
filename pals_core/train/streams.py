"""Per-task data order: each task's training set is walked in a fresh random order every pass.

The order of pass k of task t is ``numpy.random.default_rng([seed, t, k]).permutation(N_t)``: a pure
function of (seed, task index, pass), so the stream's whole state is two integers (pass, position)
and a resumed run draws exactly the batches the uninterrupted run would have drawn. A batch that
runs past the end of a pass continues into the next one.

With several processes (``accelerate launch``), every process walks the same stream (same seed) and
takes its own slice of each global batch of ``batch_size × num_processes`` examples.
"""

from __future__ import annotations

import numpy as np


class TaskStream:
    def __init__(self, size: int, seed: int, task_index: int) -> None:
        if size < 1:
            raise ValueError("a task stream needs at least one example")
        self.size, self.seed, self.task_index = int(size), int(seed), int(task_index)
        self.epoch, self.pos = 0, 0
        self._order = self._permutation(0)

    def _permutation(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, self.task_index, epoch]).permutation(self.size)

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` row indices."""
        out = np.empty(n, dtype=np.int64)
        filled = 0
        while filled < n:
            if self.pos >= self.size:
                self.epoch, self.pos = self.epoch + 1, 0
                self._order = self._permutation(self.epoch)
            k = min(n - filled, self.size - self.pos)
            out[filled : filled + k] = self._order[self.pos : self.pos + k]
            filled, self.pos = filled + k, self.pos + k
        return out

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "pos": self.pos}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.pos = int(state["epoch"]), int(state["pos"])
        self._order = self._permutation(self.epoch)


def process_slice(rows: np.ndarray, rank: int, world: int) -> np.ndarray:
    """This process's share of a global batch (contiguous blocks of equal size)."""
    per = len(rows) // world
    return rows[rank * per : (rank + 1) * per]
