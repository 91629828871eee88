"""One forward pass over rows: the path that evaluation (``train.evaluate``), ``predict_texts`` / ``pals-predict``
(``run_info``) and the run's dev scores all take, so a prediction equals an evaluation by construction.

Texts are tokenised as the trainer tokenised its rows (``data.load.token_ids``: truncation to the run's ``max_len``,
pairs longest-first); rows are sorted by length (stable), cut into batches of ``batch_size``, each padded to its own
longest row (``Encoded.batch``), and run through the model: one task's ``forward`` (``per_task``: the trainer's own
call, a DDP-wrapped model included), every task's ``predict_all`` (the trunk once), or — each row naming its own task —
``forward_mixed``. Each batch's logits go to its task's sink at once (``add(rows, logits)``, ``rows`` the batch's
positions in the input); the sink keeps what it needs of them (the kind's ``module.reduce`` for the metrics,
``outputs.Decoded`` for labels and probabilities) and puts them back in input order. A row's logits are the task
head's output for that row, whatever their shape: (C,) for a sentence task, (tokens, C) for a tagging one.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Callable, Optional, Protocol, Sequence

import numpy as np

from .data.encoded import Encoded
from .data.load import token_ids
from .kinds import get_kind


class EvalInterrupted(Exception):
    """A stop was requested during a forward pass over rows."""


class Sink(Protocol):
    def add(self, rows: np.ndarray, logits) -> None:
        """One batch of a task's logits (a tensor, one entry per row of ``rows``, in that order)."""


def encode_texts(
    info, texts: Sequence[str], pairs: Optional[Sequence[str]] = None, paired: Optional[Sequence[bool]] = None
) -> Encoded:
    """Texts as the trainer's ``Encoded`` arrays (no labels), tokenised as the run's rows were (``info``: a run's
    ``tokenizer()`` and ``max_len``): row i with its second text ``pairs[i]`` where ``paired[i]`` (default: every
    row when ``pairs`` is given), alone otherwise."""
    n = len(texts)
    paired = [pairs is not None] * n if paired is None else list(paired)
    rows: list[Optional[list[int]]] = [None] * n
    kinds: list[Optional[list[int]]] = [None] * n
    for with_pair in (False, True):
        idx = [i for i in range(n) if paired[i] == with_pair]
        if not idx:
            continue
        out = token_ids(
            info.tokenizer(), info.max_len, [texts[i] for i in idx], [pairs[i] for i in idx] if with_pair else None
        )
        for j, i in enumerate(idx):
            rows[i], kinds[i] = out["input_ids"][j], out["token_type_ids"][j]
    lengths = np.fromiter((len(x) for x in rows), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.fromiter((t for row in rows for t in row), dtype=np.int32, count=int(offsets[-1]))
    types = np.fromiter((t for row in kinds for t in row), dtype=np.int8, count=int(offsets[-1]))
    return Encoded(ids, types, offsets, np.zeros(n, dtype=np.int64))


def forward_rows(
    model,
    data: Encoded,
    sinks: dict[str, Sink],
    *,
    batch_size: int,
    device,
    row_tasks: Optional[Sequence[str]] = None,
    per_task: bool = False,
    autocast: Callable = nullcontext,
    rank: int = 0,
    world: int = 1,
    should_stop: Optional[Callable[[], bool]] = None,
    progress: Optional[Callable[[int], None]] = None,
) -> None:
    """Every row of ``data`` (with several processes: every ``world``-th in order of length, from ``rank``) through
    each task of ``sinks`` — or, ``row_tasks`` given, through its own task ``row_tasks[i]`` only (``forward_mixed``) —
    in batches sorted by length; each batch's logits handed to the task's sink with the rows they belong to. One
    batch's logits are alive at a time. ``progress(k)``: k more rows done; ``should_stop()``: ``EvalInterrupted``."""
    import torch  # late: the calculator's modules import this one's package without torch

    tasks = list(sinks)
    order = np.argsort(data.lengths, kind="stable")[rank::world]
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            if should_stop is not None and should_stop():
                raise EvalInterrupted
            rows = order[start : start + batch_size]
            b = data.batch(rows)
            ids, mask, types = (b[k].to(device) for k in ("input_ids", "attention_mask", "token_type_ids"))
            with autocast():
                if row_tasks is not None:
                    out = model.forward_mixed(ids, mask, types, tasks=[row_tasks[r] for r in rows])
                elif per_task:
                    out = {t: model(task=t, input_ids=ids, attention_mask=mask, token_type_ids=types) for t in tasks}
                else:
                    out = model.predict_all(ids, mask, types, tasks=tasks)
            if row_tasks is not None:
                for t in {row_tasks[r] for r in rows}:
                    mine = [j for j, r in enumerate(rows) if row_tasks[r] == t]
                    sinks[t].add(rows[mine], torch.stack([out[j] for j in mine]))
            else:
                for t in tasks:
                    sinks[t].add(rows, out[t])
            del out
            if progress is not None:
                progress(len(rows))


class Reduced:
    """A task's outputs as its metrics read them, gathered batch by batch on the logits' device: each batch reduced
    at once by the task's kind (``pals_core/kinds/<kind>/module.py``: ``reduce``; e.g. the arg-max class, the value,
    each label's decision) — never the logits themselves, so a dev set's outputs take O(n) memory whatever C."""

    def __init__(self, kind: str, width: int, device) -> None:
        self.module, self.width, self.device = get_kind(kind).module(), width, device
        self.outs: list = []
        self.idx: list = []

    def add(self, rows: np.ndarray, logits) -> None:
        import torch  # late: torch is loaded by the model that made ``logits``

        self.outs.append(self.module.reduce(logits))
        self.idx.append(torch.from_numpy(rows).to(self.device))

    def result(self, n: int, gather: Optional[Callable] = None) -> np.ndarray:
        """The ``n`` rows' outputs in input order (``gather``: every process's rows joined first)."""
        import torch  # late: as in ``add``

        if self.outs:
            preds, index = torch.cat(self.outs), torch.cat(self.idx)
        else:
            preds = self.module.empty(self.width).to(self.device)
            index = torch.zeros(0, dtype=torch.int64).to(self.device)
        if gather is not None:
            preds, index = gather(preds, index)
        preds, index = preds.cpu().numpy(), index.cpu().numpy()
        result = np.zeros((n, *preds.shape[1:]), dtype=preds.dtype)
        result[index] = preds
        return self.module.finish(result)
