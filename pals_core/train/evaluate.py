"""Dev-set evaluation: every task's whole dev set(s) through its own path, then its record's metrics.

Examples are batched in order of length (little padding), each batch's logits reduced at once to what the
metrics read (the arg-max class, the value, the label decisions: ``reduce_logits``) so a dev set's outputs never
hold n × C floats, put back in file order, and the metrics computed once over the whole set
(``pals_core.data.metrics``), never averaged over batches. With several processes each evaluates every
``world``-th example and the outputs are gathered before scoring.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import torch

from ..data.encoded import Encoded
from ..data.metrics import record_of, task_scores
from ..kinds import DEFAULT_KIND, get_kind
from ..tasks import TaskRecord


class EvalInterrupted(Exception):
    """A stop was requested during evaluation."""


def reduce_logits(kind: str, logits: torch.Tensor) -> torch.Tensor:
    """What a task's metrics read of one batch's logits (B, C), on the logits' device, as its kind keeps them
    (``pals_core/kinds/<kind>/module.py``: ``reduce``; e.g. the arg-max class, the one output, each label's decision)
    — never the (B, C) floats, so a dev set's outputs take O(n) memory (O(n·C) bytes for a label set), whatever C."""
    return get_kind(kind).module().reduce(logits)


def predict(
    model,
    task: str,
    data: Encoded,
    *,
    kind: str = DEFAULT_KIND,
    batch_size: int,
    device: torch.device,
    autocast,
    rank: int = 0,
    world: int = 1,
    gather: Optional[Callable] = None,
    should_stop: Optional[Callable[[], bool]] = None,
) -> np.ndarray:
    """``task``'s predictions on every example of ``data``, in ``data``'s order, as its metrics read them
    (``reduce_logits``: classes, values or label decisions); one batch's logits are alive at a time."""
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
            out = reduce_logits(kind, logits)
            if data.per_word:  # each word's tag from its first sub-token, a cut word's the baseline's: (B, W)
                fill = get_kind(kind).fill_index(data.names)
                out = get_kind(kind).module().words(out, b["starts"].to(device), b["words"].to(device), fill)
            outs.append(out)
            del logits
            idx.append(torch.from_numpy(rows).to(device))
    if outs:
        preds, index = torch.cat(outs), torch.cat(idx)
    else:
        width = data.max_words if data.per_word else model.tasks[task] if hasattr(model, "tasks") else 0
        preds, index = get_kind(kind).module().empty(width).to(device), torch.zeros(0, dtype=torch.int64)
        index = index.to(device)
    if world > 1 and gather is not None:
        preds, index = gather(preds, index)
    preds, index = preds.cpu().numpy(), index.cpu().numpy()
    result = np.zeros((len(data), *preds.shape[1:]), dtype=preds.dtype)
    result[index] = preds
    return get_kind(kind).module().finish(result)


def evaluate(
    model,
    dev: dict[str, dict[str, Encoded]],
    records: Optional[dict[str, TaskRecord]] = None,
    *,
    scales: Optional[dict[str, dict]] = None,
    batch_size: int,
    device: torch.device,
    autocast,
    rank: int = 0,
    world: int = 1,
    gather: Optional[Callable] = None,
    should_stop: Optional[Callable[[], bool]] = None,
) -> dict[str, dict[str, float]]:
    """{task: {metric: value}} over ``dev`` = {task: {split suffix: data}}, each task scored by its record
    (``records``; None: the built-in GLUE task of each name), its predictions in the user's units (``scales``: the
    run's target scale of each task, ``Kind.scale``)."""
    was_training = model.training
    model.eval()
    try:
        scores = {}
        for task, splits in dev.items():
            outputs = {}
            record = record_of((records or {}).get(task, task))
            for suffix, data in splits.items():
                preds = predict(
                    model,
                    task,
                    data,
                    kind=record.kind,
                    batch_size=batch_size,
                    device=device,
                    autocast=autocast,
                    rank=rank,
                    world=world,
                    gather=gather,
                    should_stop=should_stop,
                )
                outputs[suffix] = (get_kind(record.kind).unscale(preds, (scales or {}).get(task)), data.gold)
            scores[task] = task_scores(record, outputs, model.tasks[task] if hasattr(model, "tasks") else None)
        return scores
    finally:
        model.train(was_training)
