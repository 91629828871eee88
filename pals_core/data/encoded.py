"""``Encoded``: one tokenised split held as flat arrays (CSR layout), and its padded batches.

Sequence i is ``ids[offsets[i]:offsets[i+1]]``. Batches are padded to their own longest sequence
(dynamic padding), which on CPU saves most of the cost of padding every batch to ``max_len``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass
class Encoded:
    ids: np.ndarray  # int32, all token ids back to back
    types: np.ndarray  # int8, token type ids, same layout
    offsets: np.ndarray  # int64, n + 1 entries
    labels: np.ndarray  # int64 classes, or float32 scores (regression)

    def __post_init__(self) -> None:
        if len(self.offsets) != len(self.labels) + 1:
            raise ValueError("offsets must have one more entry than labels")

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def select(self, rows: Sequence[int]) -> "Encoded":
        """A new ``Encoded`` holding ``rows`` in the given order."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # token j of new sequence i sits at starts[i] + (j − offsets[i]) in the old arrays
        gather = np.repeat(self.offsets[rows] - offsets[:-1], lengths) + np.arange(offsets[-1])
        return Encoded(self.ids[gather], self.types[gather], offsets, self.labels[rows])

    def batch(self, rows: Sequence[int], pad_id: int = 0) -> dict:
        """Padded torch tensors for ``rows``: input_ids, attention_mask, token_type_ids, labels."""
        import torch

        rows = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        width = int(lengths.max()) if len(rows) else 0
        # token j of row i goes to [i, j]: gather every token once, scatter with fancy indexing
        ends = np.cumsum(lengths)
        within = np.arange(ends[-1] if len(rows) else 0) - np.repeat(ends - lengths, lengths)
        row_of = np.repeat(np.arange(len(rows)), lengths)
        source = np.repeat(starts, lengths) + within
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)
        types = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        ids[row_of, within] = self.ids[source]
        types[row_of, within] = self.types[source]
        mask[row_of, within] = 1
        return {
            "input_ids": torch.from_numpy(ids),
            "attention_mask": torch.from_numpy(mask),
            "token_type_ids": torch.from_numpy(types),
            "labels": torch.from_numpy(self.labels[rows].copy()),
        }
