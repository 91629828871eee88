"""Multilabel in torch: the loss of a batch and what the dev metrics keep of its logits."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def loss(logits: torch.Tensor, labels: torch.Tensor, scale: dict | None = None) -> torch.Tensor:
    """Binary cross-entropy with logits over the C labels; labels (B, C) multi-hot."""
    return F.binary_cross_entropy_with_logits(logits.float(), labels.float())


def reduce(logits: torch.Tensor) -> torch.Tensor:
    """Each label's decision, logit > 0, uint8 (B, C)."""
    return (logits > 0).to(torch.uint8)


def empty(width: int) -> torch.Tensor:
    return torch.zeros((0, width), dtype=torch.uint8)


def finish(result):
    return result.astype(bool)
