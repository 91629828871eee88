"""Dev-set evaluation: every task's whole dev set(s) through its own path, then its record's metrics.

Examples are batched in order of length (little padding), each batch's logits reduced at once to what the
metrics read (the arg-max class, the value, the label decisions: ``forward.Reduced``) so a dev set's outputs never
hold n × C floats, put back in file order, and the metrics computed once over the whole set
(``pals_core.data.metrics``), never averaged over batches. With several processes each evaluates every
``world``-th example and the outputs are gathered before scoring.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ..data.encoded import Encoded
from ..data.metrics import record_of, task_scores
from ..forward import Reduced, forward_rows
from ..kinds import DEFAULT_KIND, get_kind
from ..tasks.record import TaskRecord


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
    gather: Callable | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> np.ndarray:
    """``task``'s predictions on every example of ``data``, in ``data``'s order, as its metrics read them
    (``forward.Reduced``: classes, values or label decisions), through the one forward path over rows
    (``forward.forward_rows``, the task's own ``forward``); one batch's logits are alive at a time."""
    sink = Reduced(kind, model.tasks[task] if hasattr(model, "tasks") else 0, device, data)
    forward_rows(
        model,
        data,
        {task: sink},
        batch_size=batch_size,
        device=device,
        per_task=True,
        autocast=autocast,
        rank=rank,
        world=world,
        should_stop=should_stop,
    )
    return sink.result(len(data), gather if world > 1 else None)


def evaluate(
    model,
    dev: dict[str, dict[str, Encoded]],
    records: dict[str, TaskRecord] | None = None,
    *,
    scales: dict[str, dict] | None = None,
    batch_size: int,
    device: torch.device,
    autocast,
    rank: int = 0,
    world: int = 1,
    gather: Callable | None = None,
    should_stop: Callable[[], bool] | None = None,
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
