"""Token classification in torch: the loss of a batch and what the dev metrics keep of its logits."""

from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE = -100  # a sub-token that is not a word's first, a special token, padding: no loss, no prediction


def loss(logits: torch.Tensor, labels: torch.Tensor, scale: dict | None = None) -> torch.Tensor:
    """Cross-entropy of the logits (B, n, C) on each word's first sub-token (labels (B, n), -100 elsewhere)."""
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE)


def reduce(logits: torch.Tensor) -> torch.Tensor:
    """Each token's arg-max tag, int64 (B, n)."""
    return logits.float().argmax(dim=-1)


def empty(width: int) -> torch.Tensor:
    return torch.zeros((0, width), dtype=torch.int64)


def finish(result):
    return result
