"""One forward pass over rows: the path that evaluation (``train.evaluate``), ``predict_texts`` / ``pals-predict``
(``run_info``) and the run's dev scores all take, so a prediction equals an evaluation by construction.

Texts are tokenised as the trainer tokenised its rows (``data.load.token_ids``: truncation to the run's ``max_len``,
pairs longest-first; a tagging row's words read in windows of ``max_len`` sharing the run's ``stride`` tokens, so one
row may be several sequences); sequences are sorted by length (stable), cut into batches of ``batch_size``, each
padded to its own longest sequence (``Encoded.batch``), and run through the model: one task's ``forward`` (``per_task``: the trainer's own
call, a DDP-wrapped model included), every task's ``predict_all`` (the trunk once), or — each row naming its own task —
``forward_mixed``. Each batch's logits go to its task's sink at once (``add(rows, logits)``, ``rows`` the batch's
positions in the input); the sink keeps what it needs of them (the kind's ``module.reduce`` for the metrics,
``outputs.Decoded`` for labels and probabilities) and puts them back in input order. A row's logits are the task
head's output for that row, whatever their shape: (C,) for a sentence task, (tokens, C) for a tagging one, (k,) for a
multiple-choice one (a row of k candidate sequences, batched together as one unit: ``Encoded.groups``). A sink is
handed the batch's *units*; where they are not the rows (a tagging task's windows), ``Reduced`` and ``PerWord`` put
each word's prediction back in its row (``Encoded.owned``) and ``ByRow`` maps another task's units to their rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Protocol

import numpy as np

from .data.encoded import IGNORE, Encoded
from .data.load import span_windows, token_ids
from .data.windows import pair_stride, pair_windows
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
    ``tokenizer()``, ``max_len`` and ``stride``): row i with its second text ``pairs[i]`` where ``paired[i]``
    (default: every row when ``pairs`` is given), alone otherwise; where ``words[i]`` (a per-word task's row), as a
    list of words (``words_of``) read in the run's windows, each word's predicting token kept (``Encoded.starts``; no
    gold tags: every word's is 0). Sequences are in row order, a row's windows in theirs (``Encoded.row_of``). Where
    ``grouped[i]`` (a row of several sequences: a multiple-choice row), ``texts[i]`` is the list of its sequences'
    first segments and ``pairs[i]`` of their second ones (None: each alone), its sequences one unit
    (``Encoded.groups``)."""
    if grouped is not None and any(grouped):
        return _grouped(info, texts, pairs, paired, words, grouped)
    n = len(texts)
    paired = [pairs is not None] * n if paired is None else list(paired)
    split = [False] * n if words is None else list(words)
    seqs: list[list[tuple[list[int], list[int], list[int]]]] = [[] for _ in range(n)]  # per row: (ids, types, starts)
    for with_pair, as_words in ((False, False), (True, False), (False, True)):
        idx = [i for i in range(n) if paired[i] == with_pair and split[i] == as_words]
        if not idx:
            continue
        if as_words:
            out = token_ids(
                info.tokenizer(), info.max_len, [words_of(texts[i]) for i in idx], words=True, stride=info.stride
            )
            for ids, kinds, r, starts in zip(out["input_ids"], out["token_type_ids"], out["row"], out["starts"]):
                seqs[idx[r]].append((ids, kinds, starts))
            continue
        out = token_ids(
            info.tokenizer(),
            info.max_len,
            [" ".join(texts[i]) if isinstance(texts[i], (list, tuple)) else texts[i] for i in idx],
            [pairs[i] for i in idx] if with_pair else None,
        )
        for j, i in enumerate(idx):
            seqs[i].append((out["input_ids"][j], out["token_type_ids"][j], [-1] * len(out["input_ids"][j])))
    flat = [x for row in seqs for x in row]
    lengths = np.fromiter((len(x[0]) for x in flat), dtype=np.int64, count=len(flat))
    offsets = np.zeros(len(flat) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    ids = np.fromiter((t for x in flat for t in x[0]), dtype=np.int32, count=total)
    types = np.fromiter((t for x in flat for t in x[1]), dtype=np.int8, count=total)
    if not any(split):
        return Encoded(ids, types, offsets, np.zeros(n, dtype=np.int64))
    counts = [len(words_of(texts[i])) if split[i] else 0 for i in range(n)]
    word_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    return Encoded(
        ids,
        types,
        offsets,
        np.full(total, IGNORE, dtype=np.int64),
        np.zeros(int(word_offsets[-1]), dtype=np.int64),
        word_offsets,
        (),
        np.fromiter((w for x in flat for w in x[2]), dtype=np.int64, count=total),
        np.repeat(np.arange(n, dtype=np.int64), [len(row) for row in seqs]),
    )


def _grouped(info, texts, pairs, paired, words, grouped) -> Encoded:
    """``encode_texts`` of rows some of which are several sequences: every sequence encoded as a row of its own, then
    the units over them (``Encoded.groups``: a row of several sequences one unit, every other sequence — a tagging
    row's windows each — one of its own); per-word data, where a row has it, kept per row (``row_of``: each unit's)."""
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
    firsts = np.zeros(n + 1, dtype=np.int64)  # each row's first sequence row of ``a``
    np.cumsum(counts, out=firsts[1:])
    flat_row = seqs.row_of if seqs.per_word else np.arange(len(seqs), dtype=np.int64)  # each sequence's row of ``a``
    row = np.repeat(np.arange(n, dtype=np.int64), counts)[flat_row]  # each sequence's row
    several = np.asarray(grouped, dtype=bool)[row]
    new_unit = np.ones(len(row), dtype=bool)  # a sequence starts a unit unless it continues its row's several
    new_unit[1:] = ~(several[1:] & (row[1:] == row[:-1]))
    starts = np.flatnonzero(new_unit)
    groups = np.append(starts, len(row)).astype(np.int64)
    if not seqs.per_word:
        return Encoded(seqs.ids, seqs.types, seqs.offsets, np.zeros(n, dtype=np.int64), groups=groups)
    word_offsets = seqs.word_offsets[firsts]  # a row of several sequences has no words: its sequences add none
    return Encoded(
        seqs.ids, seqs.types, seqs.offsets, seqs.labels, seqs.words, word_offsets, (), seqs.starts, row[starts], groups
    )


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
    """Every sequence of ``data`` (with several processes: every ``world``-th in order of length, from ``rank``)
    through each task of ``sinks`` — or, ``row_tasks`` given (a task per row), through its row's own task only
    (``forward_mixed``) — in batches sorted by length; each batch's logits handed to the task's sink with the
    sequences they belong to. One batch's logits are alive at a time. ``progress(k)``: k more sequences done;
    ``should_stop()``: ``EvalInterrupted``."""
    import torch  # late: the calculator's modules import this one's package without torch

    tasks = list(sinks)
    if row_tasks is not None and data.per_word:  # a row read in several windows: each window its row's task
        row_tasks = [row_tasks[r] for r in data.row_of]
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
    each label's decision) — never the logits themselves, so a dev set's outputs take O(n) memory whatever C.

    A per-word task's sequences (``data``): each word's tag is its predicting token's (``Encoded.owned``: its first
    sub-token in the window that reads it with the most context), kept as (row·W + word, tag) pairs and put in its
    row at the end: (rows, W) tags, -1 past a row's words, the kind's baseline tag (``fill_index``) for a word no
    token predicts.

    A span task's windows (``data.spans``): each window's start and end logits over its real tokens kept (on the
    CPU, float32) with its characters, and per row, its windows in order, a ``Question`` the kind decodes
    (``Kind.unscale`` with the run's scale gives the answer texts the metrics read)."""

    def __init__(self, kind: str, width: int, device, data: Encoded | None = None) -> None:
        self.kind = get_kind(kind)
        self.module, self.width, self.device = self.kind.module(), width, device
        self.outs: list = []
        self.idx: list = []
        self.windows: dict[int, object] | None = {} if data is not None and data.spans else None
        self.spans = data if self.windows is not None else None
        self.data = data if data is not None and data.per_word else None
        if self.data is not None:
            self.width, self.fill = self.data.max_words, get_kind(kind).fill_index(self.data.names)

    def add(self, rows: np.ndarray, logits) -> None:
        import torch  # late: torch is loaded by the model that made ``logits``

        if self.spans is not None:
            z = self.module.reduce(logits).cpu().numpy()
            for b, seq in enumerate(rows):
                n = int(self.spans.offsets[seq + 1] - self.spans.offsets[seq])
                self.windows[int(seq)] = self.kind.window(z[b, :n], self.spans.window_chars(int(seq)))
            return
        out = self.module.reduce(logits)
        if self.data is not None:
            b, j, row, word = (torch.from_numpy(a).to(out.device) for a in self.data.owned(rows))
            self.outs.append(out[b, j])
            self.idx.append((row * self.width + word).to(self.device))
            return
        self.outs.append(out)
        self.idx.append(torch.from_numpy(rows).to(self.device))

    def result(self, n: int, gather: Callable | None = None) -> np.ndarray:
        """The ``n`` rows' outputs in input order (``gather``: every process's rows joined first)."""
        import torch  # late: as in ``add``

        if self.spans is not None:
            if gather is not None:
                raise ValueError("a span task's dev set is evaluated in one process")
            return self.kind.questions(self.spans, self.windows)
        if self.outs:
            preds, index = torch.cat(self.outs), torch.cat(self.idx)
        else:
            preds = torch.zeros(0, dtype=torch.int64) if self.data is not None else self.module.empty(self.width)
            preds = preds.to(self.device)
            index = torch.zeros(0, dtype=torch.int64).to(self.device)
        if gather is not None:
            preds, index = gather(preds, index)
        preds, index = preds.cpu().numpy(), index.cpu().numpy()
        if self.data is not None:
            gold = self.data.gold.values
            result = np.where(gold >= 0, self.fill, -1).astype(np.int64)
            result.reshape(-1)[index] = preds
            return self.module.finish(result)
        result = np.zeros((n, *preds.shape[1:]), dtype=preds.dtype)
        result[index] = preds
        return self.module.finish(result)


class PerWord:
    """A per-word task's sink seen through its rows' words: a row's (words, C) logits — each word's predicting
    token's (``Encoded.owned``), NaN for a word no token predicts — handed on once every window of the row has been
    through the model; what the kind decodes."""

    def __init__(self, sink: Sink, data: Encoded) -> None:
        self.sink, self.data = sink, data
        self.left = data.windows.copy()  # per row, its sequences not seen yet
        self.rows: dict[int, np.ndarray] = {}  # rows some of whose sequences have been seen: their words' logits

    def _row(self, r: int, width: int) -> np.ndarray:
        if r not in self.rows:
            words = self.data.word_offsets[r + 1] - self.data.word_offsets[r]
            self.rows[r] = np.full((words, width), np.nan, np.float32)
        return self.rows[r]

    def add(self, rows: np.ndarray, logits) -> None:
        if hasattr(logits, "detach"):  # a torch tensor, on any device, in any float type
            logits = logits.float().cpu().numpy()
        width = logits.shape[-1]
        for b, j, r, w in zip(*self.data.owned(rows)):
            self._row(int(r), width)[w] = logits[b, j]
        done = []
        for r in self.data.row_of[np.asarray(rows, dtype=np.int64)]:
            self.left[r] -= 1
            if self.left[r] == 0:
                done.append(int(r))
        if done:
            for r in done:
                self._row(r, width)  # made here for a row none of whose words has a token: all NaN
            self.sink.add(np.asarray(done, dtype=np.int64), [self.rows.pop(r) for r in done])


class PerQuestion:
    """A span task's sink fed the windows of its questions (``encode_questions``): each window's start and end logits
    over its real tokens kept (``Kind.window``), a question handed on as its ``Question`` (context and windows in
    order) once every window of it has been through the model; what the kind decodes."""

    def __init__(self, sink: Sink, data: Encoded, kind: str) -> None:
        self.sink, self.data, self.kind = sink, data, get_kind(kind)
        self.left = data.windows.copy()  # per question, its windows not seen yet
        self.seen: dict[int, dict[int, object]] = {}  # questions some of whose windows have been seen

    def add(self, rows: np.ndarray, logits) -> None:
        if hasattr(logits, "detach"):  # a torch tensor, on any device, in any float type
            logits = logits.float().cpu().numpy()
        done = []
        for b, seq in enumerate(np.asarray(rows, dtype=np.int64)):
            n = int(self.data.offsets[seq + 1] - self.data.offsets[seq])
            r = int(self.data.row_of[seq])
            self.seen.setdefault(r, {})[int(seq)] = self.kind.window(logits[b, :n], self.data.window_chars(int(seq)))
            self.left[r] -= 1
            if self.left[r] == 0:
                done.append(r)
        if done:
            questions = np.empty(len(done), dtype=object)
            questions[:] = [
                self.kind.question(self.data.contexts[r], [w for _, w in sorted(self.seen.pop(r).items())])
                for r in done
            ]
            self.sink.add(np.asarray(done, dtype=np.int64), questions)


def encode_questions(info, questions: Sequence[str], contexts: Sequence[str], kind: str) -> Encoded:
    """(question, context) pairs as a span task's run read them (``windows.pair_windows`` at the run's max length
    and stride; ``load.span_windows``), with no gold answers: each window one sequence, in row order."""
    got = pair_windows(info.tokenizer(), questions, contexts, info.max_len, pair_stride(info.stride, info.max_len))
    lengths = np.fromiter((len(x) for x in got["input_ids"]), dtype=np.int64, count=len(got["input_ids"]))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.fromiter((t for x in got["input_ids"] for t in x), dtype=np.int32, count=int(offsets[-1]))
    types = np.fromiter((t for x in got["token_type_ids"] for t in x), dtype=np.int8, count=int(offsets[-1]))
    chars = np.concatenate(got["offsets"]) if got["offsets"] else np.zeros((0, 2), dtype=np.int64)
    answers = np.empty(len(questions), dtype=object)
    answers[:] = [()] * len(questions)
    return span_windows((ids, types, offsets), chars, got["row"], contexts, answers, get_kind(kind))


class ByRow:
    """A sentence task's sink fed sequences of an ``Encoded`` whose rows are not its sequences (rows of a tagging task
    beside it, read in windows): each sequence handed on as its row."""

    def __init__(self, sink: Sink, data: Encoded) -> None:
        self.sink, self.data = sink, data

    def add(self, rows: np.ndarray, logits) -> None:
        self.sink.add(self.data.row_of[np.asarray(rows, dtype=np.int64)], logits)
