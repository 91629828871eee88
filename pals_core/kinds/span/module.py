"""Extractive question answering in torch: the loss of a batch and what the dev metrics keep of its logits."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def loss(logits: torch.Tensor, labels: torch.Tensor, scale: dict | None = None) -> torch.Tensor:
    """transformers' ``…ForQuestionAnswering`` loss: logits (B, n, 2) — each token's start and end logit — and
    labels (B, 2), each window's start and end token; the mean of the start's and the end's cross-entropy, a
    position past the window (clamped to n) ignored."""
    start, end = logits.float().unbind(dim=-1)
    ignored = start.shape[1]
    positions = labels.clamp(0, ignored)
    return (
        F.cross_entropy(start, positions[:, 0], ignore_index=ignored)
        + F.cross_entropy(end, positions[:, 1], ignore_index=ignored)
    ) / 2


def reduce(logits: torch.Tensor) -> torch.Tensor:
    """Every token's start and end logit, float32 (B, n, 2): the n-best search of the decoding reads them all."""
    return logits.float()


def empty(width: int) -> torch.Tensor:
    return torch.zeros((0, width, 2), dtype=torch.float32)


def finish(result):
    return result
