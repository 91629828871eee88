"""Multiple choice in torch: the loss of a batch and what the dev metrics keep of its logits (B, k), one score per
candidate (the family's choice head on each candidate sequence, ``MultiTaskModel``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def loss(logits: torch.Tensor, labels: torch.Tensor, scale: dict | None = None) -> torch.Tensor:
    """Cross-entropy of the candidates' scores (B, k) and the right candidates' indices (B,): softmax over the k, as
    ``…ForMultipleChoice`` trains."""
    return F.cross_entropy(logits.float(), labels)


def reduce(logits: torch.Tensor) -> torch.Tensor:
    """The chosen candidate's index, int64 (B,)."""
    return logits.float().argmax(dim=-1)


def empty(width: int) -> torch.Tensor:
    return torch.zeros(0, dtype=torch.int64)


def finish(result):
    return result
