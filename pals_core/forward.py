"""One forward pass over rows: the path that evaluation (``train.evaluate``), ``predict_texts`` / ``pals-predict``
(``run_info``) and the run's dev scores all take, so a prediction equals an evaluation by construction.

Texts are tokenised as the trainer tokenised its rows (``data.load.token_ids``: truncation to the run's ``max_len``,
pairs longest-first); rows are sorted by length (stable), cut into batches of ``batch_size``, each padded to its own
longest row (``Encoded.batch``), and run through the model: one task's ``forward`` (``per_task``: the trainer's own
call, a DDP-wrapped model included), every task's ``predict_all`` (the trunk once), or — each row naming its own task —
``forward_mixed``. Each batch's logits go to its task's sink at once (``add(rows, logits)``, ``rows`` the batch's
positions in the input); the sink keeps what it needs of them (the kind's ``module.reduce`` for the metrics,
``outputs.Decoded`` for labels and probabilities) and puts them back in input order. A row's logits are the task
head's output for that row, whatever their shape: (C,) for a sentence task, (tokens, C) for a tagging one, (k,) for a
multiple-choice one (a row of k candidate sequences, batched together: ``Encoded.groups``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Protocol

import numpy as np

from .data.encoded import IGNORE, Encoded
from .data.load import token_ids
from .kinds import get_kind


class EvalInterrupted(Exception):
    """A stop was requested during a forward pass over rows."""


class Sink(Protocol):
    def add(self, rows: np.ndarray, logits) -> None:
        """One batch of a task's logits (a tensor, one entry per row of ``rows``, in that order)."""


def words_of(text) -> list[str]:
    """A per-word task's row: its list of words as given, or a text split at whitespace."""
    return [str(w) for w in text] if isinstance(text, (list, tuple)) else str(text).split()


def encode_texts(
    info,
    texts: Sequence,
    pairs: Sequence | None = None,
    paired: Sequence[bool] | None = None,
    words: Sequence[bool] | None = None,
    grouped: Sequence[bool] | None = None,
) -> Encoded:
    """Texts as the trainer's ``Encoded`` arrays (no labels), tokenised as the run's rows were (``info``: a run's
    ``tokenizer()`` and ``max_len``): row i with its second text ``pairs[i]`` where ``paired[i]`` (default: every
    row when ``pairs`` is given), alone otherwise; where ``words[i]`` (a per-word task's row), as a list of words
    (``words_of``), each word's first sub-token kept (``Encoded.starts``; no gold tags: every word's is 0); where
    ``grouped[i]`` (a row of several sequences: a multiple-choice row), ``texts[i]`` is the list of its sequences'
    first segments and ``pairs[i]`` of their second ones (None: each alone), its sequences kept together
    (``Encoded.groups``)."""
    if grouped is not None and any(grouped):
        return _grouped(info, texts, pairs, paired, words, grouped)
    n = len(texts)
    paired = [pairs is not None] * n if paired is None else list(paired)
    split = [False] * n if words is None else list(words)
    rows: list[list[int] | None] = [None] * n
    kinds: list[list[int] | None] = [None] * n
    starts: list[list[int] | None] = [None] * n
    for with_pair, as_words in ((False, False), (True, False), (False, True)):
        idx = [i for i in range(n) if paired[i] == with_pair and split[i] == as_words]
        if not idx:
            continue
        if as_words:
            out = token_ids(info.tokenizer(), info.max_len, [words_of(texts[i]) for i in idx], words=True)
        else:
            out = token_ids(
                info.tokenizer(),
                info.max_len,
                [" ".join(texts[i]) if isinstance(texts[i], (list, tuple)) else texts[i] for i in idx],
                [pairs[i] for i in idx] if with_pair else None,
            )
        for j, i in enumerate(idx):
            rows[i], kinds[i] = out["input_ids"][j], out["token_type_ids"][j]
            starts[i] = out["word_ids"][j] if as_words else [-1] * len(rows[i])
    lengths = np.fromiter((len(x) for x in rows), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.fromiter((t for row in rows for t in row), dtype=np.int32, count=int(offsets[-1]))
    types = np.fromiter((t for row in kinds for t in row), dtype=np.int8, count=int(offsets[-1]))
    if not any(split):
        return Encoded(ids, types, offsets, np.zeros(n, dtype=np.int64))
    counts = [len(words_of(texts[i])) if split[i] else 0 for i in range(n)]
    word_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    first = np.fromiter((w for row in starts for w in row), dtype=np.int64, count=int(offsets[-1]))
    return Encoded(
        ids,
        types,
        offsets,
        np.full(int(offsets[-1]), IGNORE, dtype=np.int64),
        np.zeros(int(word_offsets[-1]), dtype=np.int64),
        word_offsets,
        (),
        first,
    )


def _grouped(info, texts, pairs, paired, words, grouped) -> Encoded:
    """``encode_texts`` of rows some of which are several sequences: every sequence encoded as a row of its own, then
    the rows over them (``Encoded.groups``); per-word data, where a row has it, kept per row."""
    n = len(texts)
    paired = [pairs is not None] * n if paired is None else list(paired)
    split = [False] * n if words is None else list(words)
    a: list = []
    b: list = []
    counts = []
    for i in range(n):
        if grouped[i]:
            seconds = pairs[i] if paired[i] and pairs is not None else None
            a += list(texts[i])
            b += [None] * len(texts[i]) if seconds is None else list(seconds)
            counts.append(len(texts[i]))
        else:
            a.append(texts[i])
            b.append(pairs[i] if paired[i] else None)
            counts.append(1)
    flat_split = [w for i in range(n) for w in [split[i] and not grouped[i]] * counts[i]]
    seqs = encode_texts(info, a, b, [x is not None for x in b], flat_split)
    groups = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=groups[1:])
    if not seqs.per_word:
        return Encoded(seqs.ids, seqs.types, seqs.offsets, np.zeros(n, dtype=np.int64), groups=groups)
    word_offsets = seqs.word_offsets[groups]  # a row of several sequences has no words: its sequences add none
    return Encoded(seqs.ids, seqs.types, seqs.offsets, seqs.labels, seqs.words, word_offsets, (), seqs.starts, groups)


def forward_rows(
    model,
    data: Encoded,
    sinks: dict[str, Sink],
    *,
    batch_size: int,
    device,
    row_tasks: Sequence[str] | None = None,
    per_task: bool = False,
    autocast: Callable = nullcontext,
    rank: int = 0,
    world: int = 1,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
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
                if row_tasks is not None:  # each sequence through its row's task
                    seq_tasks = [row_tasks[r] for r in rows]
                    if "groups" in b:
                        seq_tasks = [str(t) for t in np.repeat(seq_tasks, np.diff(b["groups"].numpy()))]
                    out = model.forward_mixed(ids, mask, types, tasks=seq_tasks)
                elif per_task:
                    out = {t: model(task=t, input_ids=ids, attention_mask=mask, token_type_ids=types) for t in tasks}
                else:
                    out = model.predict_all(ids, mask, types, tasks=tasks)
            if row_tasks is not None:
                groups = b.get("groups")
                if groups is not None:  # a row of several sequences: its sequences' outputs joined (its k scores)
                    out = [torch.cat(out[int(groups[j]) : int(groups[j + 1])]) for j in range(len(rows))]
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

    def __init__(self, kind: str, width: int, device, data: Encoded | None = None) -> None:
        self.module, self.width, self.device = get_kind(kind).module(), width, device
        self.outs: list = []
        self.idx: list = []
        # a per-word task's rows (``data``: their words' first sub-tokens): one tag per word, (B, max_words)
        self.data = data if data is not None and data.per_word else None
        if self.data is not None:
            self.width, self.fill = self.data.max_words, get_kind(kind).fill_index(self.data.names)

    def add(self, rows: np.ndarray, logits) -> None:
        import torch  # late: torch is loaded by the model that made ``logits``

        out = self.module.reduce(logits)
        if self.data is not None:  # each word's tag from its first sub-token, a cut word's the baseline's
            starts, gold = self.data.word_batch(rows, out.shape[1])
            out = self.module.words(out, starts.to(out.device), gold.to(out.device), self.fill)
        self.outs.append(out)
        self.idx.append(torch.from_numpy(rows).to(self.device))

    def result(self, n: int, gather: Callable | None = None) -> np.ndarray:
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


class PerWord:
    """A per-word task's sink seen through its rows' words: each row's token logits (n, C) handed on as its words'
    (``Encoded.word_logits``: a word's first sub-token's, NaN for a word cut by ``max_len``), what the kind decodes."""

    def __init__(self, sink: Sink, data: Encoded) -> None:
        self.sink, self.data = sink, data

    def add(self, rows: np.ndarray, logits) -> None:
        if hasattr(logits, "detach"):  # a torch tensor, on any device, in any float type
            logits = logits.float().cpu().numpy()
        self.sink.add(rows, self.data.word_logits(rows, logits))
