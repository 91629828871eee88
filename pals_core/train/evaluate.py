"""Dev-set evaluation: every task's whole dev set(s) through its own path, then its record's metrics.

Examples are batched in order of length (little padding), the outputs put back in file order, and
the metrics computed once over the whole set (``pals_core.data.metrics``), never averaged over
batches. With several processes each evaluates every ``world``-th example and the outputs are
gathered before scoring.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import torch

from ..data.encoded import Encoded
from ..data.metrics import task_scores
from ..tasks import TaskRecord


class EvalInterrupted(Exception):
    """A stop was requested during evaluation."""


def predict(
    model,
    task: str,
    data: Encoded,
    *,
    batch_size: int,
    device: torch.device,
    autocast,
    rank: int = 0,
    world: int = 1,
    gather: Optional[Callable] = None,
    should_stop: Optional[Callable[[], bool]] = None,
) -> np.ndarray:
    """Logits (n, C) of ``task`` on every example of ``data``, in ``data``'s order."""
    order = np.argsort(data.lengths, kind="stable")[rank::world]
    outs, idx = [], []
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            if should_stop is not None and should_stop():
                raise EvalInterrupted
            rows = order[start : start + batch_size]
            b = data.batch(rows)
            with autocast():
                logits = model(
                    task=task,
                    input_ids=b["input_ids"].to(device),
                    attention_mask=b["attention_mask"].to(device),
                    token_type_ids=b["token_type_ids"].to(device),
                )
            outs.append(logits.float())
            idx.append(torch.from_numpy(rows).to(device))
    width = model.tasks[task] if hasattr(model, "tasks") else outs[0].shape[-1]
    logits = torch.cat(outs) if outs else torch.zeros(0, width, device=device)
    index = torch.cat(idx) if idx else torch.zeros(0, dtype=torch.int64, device=device)
    if world > 1 and gather is not None:
        logits, index = gather(logits, index)
    result = np.zeros((len(data), logits.shape[-1]), dtype=np.float32)
    result[index.cpu().numpy()] = logits.cpu().numpy()
    return result


def evaluate(
    model,
    dev: dict[str, dict[str, Encoded]],
    records: Optional[dict[str, TaskRecord]] = None,
    *,
    batch_size: int,
    device: torch.device,
    autocast,
    rank: int = 0,
    world: int = 1,
    gather: Optional[Callable] = None,
    should_stop: Optional[Callable[[], bool]] = None,
) -> dict[str, dict[str, float]]:
    """{task: {metric: value}} over ``dev`` = {task: {split suffix: data}}, each task scored by its record
    (``records``; None: the built-in GLUE task of each name)."""
    was_training = model.training
    model.eval()
    try:
        scores = {}
        for task, splits in dev.items():
            outputs = {}
            for suffix, data in splits.items():
                logits = predict(
                    model,
                    task,
                    data,
                    batch_size=batch_size,
                    device=device,
                    autocast=autocast,
                    rank=rank,
                    world=world,
                    gather=gather,
                    should_stop=should_stop,
                )
                preds = logits[:, 0] if logits.shape[-1] == 1 else logits
                outputs[suffix] = (preds, data.labels)
            scores[task] = task_scores(
                (records or {}).get(task, task), outputs, model.tasks[task] if hasattr(model, "tasks") else None
            )
        return scores
    finally:
        model.train(was_training)
