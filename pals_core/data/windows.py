"""A row longer than the model reads at once, read in overlapping windows (pure Python and numpy, never torch).

One windowing for every kind whose rows may outgrow ``max_len`` and must not lose what lies past it — a tagging
sentence, the context of an extractive-QA row (``pair_windows``: the context slides, the question stays). A row's tokens are three parts: a prefix every window
repeats (``[CLS]``; for a (question, context) pair ``[CLS] question [SEP]``), the content the windows slide over (a
sentence's sub-tokens; the context's) and a suffix every window repeats (``[SEP]``). The content is cut into windows
of ``room = max_len − len(prefix) − len(suffix)`` tokens, each starting ``room − stride`` tokens after the one
before, the last one reaching the end (``spans``): the windows transformers' fast tokenizers cut with
``truncation=True, max_length=max_len, stride=stride, return_overflowing_tokens=True`` (tokenizers' Rust
``Encoding::truncate``), which is what ``pipeline("token-classification", stride=stride)`` and the question-answering
example's ``doc_stride`` read. ``stride`` is the number of tokens two consecutive windows share.

Each content position is read from the window that gives it the most context (``max_context``): the largest
min(tokens left of it, tokens right of it) in the window, + 0.01 × the window's length, the first window on a tie —
BERT's ``run_squad.py:_check_is_max_context`` (Devlin et al. 2019), which the QA kind scores its answer tokens by too.

    positions = window_positions(n_tokens, (first, stop), max_len, stride)   # per window, the row's tokens it holds
    owner = max_context(spans(stop - first, room, stride))                   # per content token, its window

A caller slices whatever it holds per token (ids, token types, offsets, word ids) with ``positions[k]``.

A (question, context) pair — an extractive-QA row — is read by ``pair_windows``: its prefix ``[CLS] question [SEP]``
(RoBERTa: ``<s> question </s></s>``), the context's tokens slide, each window keeps every context token's character
[start, stop) in the context; the windows the fast tokenizers cut with ``truncation="only_second"``, ``stride`` and
``return_overflowing_tokens`` — what transformers' question-answering example reads (its ``doc_stride``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

STRIDE_SHARE = 3  # the default stride: a third of max_len (the QA example's doc_stride 128 of max_seq_length 384)


def default_stride(max_len: int) -> int:
    """The stride when none is given: ``max_len // 3`` tokens shared by consecutive windows (transformers' run_qa:
    ``--doc_stride 128`` at ``--max_seq_length 384``)."""
    return max_len // STRIDE_SHARE


def check_stride(stride: int, max_len: int) -> None:
    """``ValueError`` (one line) unless ``stride`` is an integer from 0 to max_len // 2: windows then always advance
    (``room − stride`` ≥ 1 with at most max_len // 2 special and prefix tokens)."""
    if isinstance(stride, bool) or not isinstance(stride, int) or not 0 <= stride <= max_len // 2:
        raise ValueError(f"stride must be an integer from 0 to max_len // 2 = {max_len // 2}, got {stride!r}")


def spans(length: int, room: int, stride: int) -> list[tuple[int, int]]:
    """[start, stop) of each window over ``length`` content tokens: ``room`` tokens a window, each starting
    ``room − stride`` after the one before, the last one ending at ``length`` (one window when it fits; one empty
    window for no content) — tokenizers' ``Encoding::truncate`` with a stride."""
    if room < 1 or not 0 <= stride < room:
        raise ValueError(
            f"a window of {room} content token(s) cannot share {stride} with the next: stride must be below the room"
        )
    out, start = [], 0
    while True:
        stop = min(start + room, length)
        out.append((start, stop))
        if stop >= length:
            return out
        start += room - stride


def max_context(windows: Sequence[tuple[int, int]]) -> np.ndarray:
    """Per content position (0 … the last window's stop), the index of the window that reads it with the most
    context: the largest min(left, right) + 0.01 × the window's length, the first on a tie (BERT's
    ``_check_is_max_context``)."""
    length = max((stop for _, stop in windows), default=0)
    best = np.full(length, -1, dtype=np.int64)
    score = np.full(length, -np.inf)
    for k, (start, stop) in enumerate(windows):
        pos = np.arange(start, stop)
        s = np.minimum(pos - start, stop - 1 - pos) + 0.01 * (stop - start)
        better = s > score[start:stop]
        best[start:stop][better] = k
        score[start:stop][better] = s[better]
    return best


def count_windows(n_tokens: int, fixed: int, max_len: int, stride: int) -> int:
    """The windows a row of ``n_tokens`` (``fixed`` of them repeated in every window: special tokens, a question) is
    read in at ``max_len`` — ``len(spans(...))``, 1 for a row that fits."""
    if n_tokens <= max_len:
        return 1
    return len(spans(n_tokens - fixed, max_len - fixed, stride))


def window_positions(
    n_tokens: int, content: tuple[int, int], max_len: int, stride: int
) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
    """A row of ``n_tokens`` whose content is tokens [first, stop) (the rest: prefix and suffix, repeated in every
    window), read ``max_len`` tokens at a time: (per window, the positions of the row's tokens it holds, in order;
    per window, the content span it holds, relative to ``first``). A row that fits is one window of every token."""
    first, stop = content
    if n_tokens <= max_len:
        return [np.arange(n_tokens, dtype=np.int64)], [(0, stop - first)]
    fixed = n_tokens - (stop - first)
    cut = spans(stop - first, max_len - fixed, stride)
    head, tail = np.arange(first, dtype=np.int64), np.arange(stop, n_tokens, dtype=np.int64)
    return [np.concatenate([head, np.arange(first + a, first + b, dtype=np.int64), tail]) for a, b in cut], cut


OUTSIDE = (-1, -1)  # the character offsets of a token outside the context (the question, special tokens)


def pair_stride(stride: int | None, max_len: int) -> int:
    """The stride (question, context) pairs are read with: the run's, or ``default_stride`` for a run that cuts its
    other long rows (``window_stride`` None): a context is never cut, its answer may lie anywhere."""
    return default_stride(max_len) if stride is None else stride


class NoRoom(ValueError):
    """A (question, context) pair whose question leaves its context too few tokens to step (``pair_windows``):
    ``row`` (from 0) and ``reason``."""

    def __init__(self, row: int, reason: str) -> None:
        super().__init__(f"row {row + 1}: {reason}")
        self.row, self.reason = row, reason


def pair_windows(tokenizer, questions: Sequence[str], contexts: Sequence[str], max_len: int, stride: int) -> dict:
    """The windows a model reads (question, context) pairs in: {"input_ids", "token_type_ids", "offsets", "row"}, one
    entry per window — a pair that fits in ``max_len`` tokens is one window; a longer one, its question (stripped
    on the left, as the question-answering example strips it) and special tokens repeated, its context cut into
    ``spans`` sharing ``stride`` tokens. ``offsets``: per token its character [start, stop) in the context,
    ``OUTSIDE`` off the context; ``row``: the pair it reads. ``NoRoom`` (a ``ValueError`` naming the row) for a
    question that leaves no more than ``stride`` tokens of ``max_len`` to its context (the overflow cannot step)."""
    from transformers.utils import logging as hf_logging

    out: dict[str, list] = {"input_ids": [], "token_type_ids": [], "offsets": [], "row": []}
    if not len(questions):
        return out
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "longer than the specified maximum sequence length": read in windows here
    try:
        enc = tokenizer(
            [q.lstrip() for q in questions],
            list(contexts),
            truncation=False,
            return_offsets_mapping=True,
            return_token_type_ids=True,
            return_attention_mask=False,
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    for i in range(len(questions)):
        ids, types, chars = enc["input_ids"][i], enc["token_type_ids"][i], enc["offset_mapping"][i]
        side = enc.sequence_ids(i)
        held = [k for k, s in enumerate(side) if s == 1]
        content = (held[0], held[-1] + 1) if held else (len(ids) - 1, len(ids) - 1)
        room = max_len - (len(ids) - (content[1] - content[0]))
        if len(ids) > max_len and room <= stride:
            raise NoRoom(
                i,
                f"its question and special tokens take {max_len - room} of the {max_len} tokens, leaving "
                f"{max(room, 0)} to its context, not more than the stride {stride} (a longer max length or a shorter "
                f"question)",
            )
        offsets = np.asarray([tuple(o) if s == 1 else OUTSIDE for o, s in zip(chars, side)], dtype=np.int64)
        for pos in window_positions(len(ids), content, max_len, stride)[0]:
            out["input_ids"].append([ids[p] for p in pos])
            out["token_type_ids"].append([types[p] for p in pos])
            out["offsets"].append(offsets[pos].reshape(-1, 2))
            out["row"].append(i)
    return out


def pair_tokens(tokenizer, questions: Sequence[str], contexts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per (question, context) pair, its tokens unwindowed (special tokens included) and the tokens of it every
    window repeats (the question and the special tokens): what ``count_windows`` and the profile read."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        enc = tokenizer([q.lstrip() for q in questions], list(contexts), return_attention_mask=False)
    finally:
        hf_logging.set_verbosity(verbosity)
    n = np.asarray([len(x) for x in enc["input_ids"]], dtype=np.int64)
    context = np.asarray([sum(s == 1 for s in enc.sequence_ids(i)) for i in range(len(n))], dtype=np.int64)
    return n, n - context


__all__ = [
    "OUTSIDE",
    "NoRoom",
    "check_stride",
    "count_windows",
    "default_stride",
    "max_context",
    "pair_stride",
    "pair_tokens",
    "pair_windows",
    "spans",
    "window_positions",
    "window_stride",
]


def window_stride(config: dict) -> int | None:
    """The tokens two windows of a row longer than ``max_len`` share, from a run's config (a ``TrainConfig`` as a
    dict): its ``stride``, or a third of ``max_len`` (``default_stride``); None when the run cuts such rows at
    ``max_len`` instead (``truncate``, and every run written before windows: no ``truncate`` field)."""
    if config.get("truncate", True):
        return None
    stride = config.get("stride")
    return default_stride(int(config["max_len"])) if stride is None else int(stride)
