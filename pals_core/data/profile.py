"""What a task's data looks like before any training: its rows, its label distribution, the majority-class
reference every design must beat, and how long its texts are in the model's own tokens.

``profile_task`` reads a record's rows through the same checked path the trainer uses (``load.raw_splits``:
every row looked at, a bad one named by file, row and column), so a task that profiles is a task that trains.
Token lengths are measured WITHOUT truncation (pairs: both texts, special tokens included), which is what
choosing ``--max-len`` (pals-train) / ``--seq-len`` (pals-budget) needs: the share of rows longer than a
length is the share a run at that length would cut.

The returned dict has one fixed shape (the explorer and ``pals-tasks`` read it)::

    {"name", "kind", "train_rows", "dev_rows", "dev_source", "labels",
     "distribution": {"train": {...}, "dev": {...}},
     "majority": {"metric", "main", "scores"},
     "tokens": {"max_len", "p50", "p95", "max", "truncated"} | None}

A kind whose row is several sequences (``Kind.per_candidate``: a multiple-choice row's (context, candidate) pairs)
counts the tokens of each sequence, and adds ``sequences_per_row`` to ``tokens``.

A kind of one label per word (``Kind.per_word``) counts sub-tokens per sentence (its words tokenised one by one, each
word's start marked: ``words.words_tokenizer``), refuses a word its tokenizer reduces to nothing (``TaskDataError``
naming file, line and word, as ``pals-train`` does) and adds to ``tokens``: ``words`` (of every split), ``stride`` and
``fixed`` (the special tokens every window repeats), ``rows_windowed`` (sentences longer than ``max_len``, read in
overlapping windows: no word is lost) and ``windows_max`` (the windows the longest one takes), and what cutting at
``max_len`` instead (``pals-train --truncate``) would lose: ``words_cut`` and the sentences that lose one,
``rows_cut``. Its ``distribution`` is its own (the kind's).

A span kind (``Kind.span_head``: (question, context) rows read in windows of the context) adds to ``tokens``:
``stride``, ``context`` and ``question`` (p50 / p95 / max tokens of the context; of the question with the special
tokens every window repeats), ``windows`` (per context: p50 / p95 / max, and the ``total`` sequences the rows make —
what a pass over them costs) and ``contexts_windowed`` (contexts read in more than one window); a question leaving its
context no room at ``max_len`` is refused naming file and row, as ``pals-train`` does. Its ``distribution`` (the
kind's) gives the share of unanswerable questions and the answers' length.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kinds import get_kind
from ..kinds.errors import TaskDataError
from ..tasks.record import TaskRecord
from .glue_rows import RawSplit, check_files, choose_source
from .load import TINY, check_tokenizer, flat_sequences, label_array, load_tokenizer, raw_splits, tokenizer_path
from .metrics import main_metric_label, main_score, rows_majority
from .windows import check_stride, count_windows, default_stride, pair_tokens
from .words import check_words, read_plan, words_tokenizer

TOKEN_BATCH = 1000  # rows per tokenizer call
PROGRESS_ROWS = 5000  # a progress bar only above this many rows to tokenise
MIN_MAX_LEN = 8  # as load_tasks: a shorter max_len leaves no room for text


def check_max_len(max_len: Any) -> int:
    """``max_len`` itself, or ``ValueError`` for one that is not an integer of at least ``MIN_MAX_LEN``."""
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < MIN_MAX_LEN:
        raise ValueError(f"max_len must be an integer of at least {MIN_MAX_LEN}, got {max_len!r}")
    return max_len


# ------------------------------------------------------------------------------------ labels


# ------------------------------------------------------------------------------------ tokens


def token_lengths(splits: Sequence[RawSplit], tokenizer, *, progress: bool = False, words: bool = False) -> np.ndarray:
    """Tokens per row of ``splits`` (in order) as the model would see them untruncated: special tokens
    included, both texts of a pair (``words``: each row a list of words, tokenised word by word as a kind of one
    label per word is, each word's start marked). Batched through the (fast) tokenizer; a tqdm bar on stderr when
    ``progress`` and there are more than ``PROGRESS_ROWS`` rows."""
    tokenizer = words_tokenizer(tokenizer) if words else tokenizer
    total = sum(len(s.text_a) for s in splits)
    bar = None
    if progress and total > PROGRESS_ROWS:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc="tokenising", unit="rows", file=sys.stderr, leave=False)
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "sequence longer than the model's maximum" is the point here, not a warning
    out = []
    try:
        for s in splits:
            for i in range(0, len(s.text_a), TOKEN_BATCH):
                a = s.text_a[i : i + TOKEN_BATCH]
                b = None if s.text_b is None else s.text_b[i : i + TOKEN_BATCH]
                enc = tokenizer(
                    a,
                    b,
                    add_special_tokens=True,
                    is_split_into_words=words,
                    truncation=False,
                    return_attention_mask=False,
                    return_token_type_ids=False,
                )
                out.extend(len(ids) for ids in enc["input_ids"])
                if bar is not None:
                    bar.update(len(a))
    finally:
        hf_logging.set_verbosity(verbosity)
        if bar is not None:
            bar.close()
    return np.asarray(out, dtype=np.int64)


def token_stats(lengths: np.ndarray, max_len: int) -> dict:
    """p50 / p95 (integers, rounded up), the longest row, and the share of rows longer than ``max_len``."""
    if len(lengths) == 0:
        return {"max_len": max_len, "p50": 0, "p95": 0, "max": 0, "truncated": 0.0}
    return {
        "max_len": max_len,
        "p50": int(math.ceil(np.percentile(lengths, 50))),
        "p95": int(math.ceil(np.percentile(lengths, 95))),
        "max": int(lengths.max()),
        "truncated": float((lengths > max_len).mean()),
    }


# ------------------------------------------------------------------------------------ profiles


@dataclass
class TaskRows:
    """A task's checked rows, as ``load.raw_splits`` gives them: ``train``, the dev sets by suffix ("" — GLUE
    MNLI: "m", "mm") and the label names."""

    record: TaskRecord
    train: RawSplit
    devs: dict[str, RawSplit]
    names: tuple[str, ...]


def check_glue_files(records: Sequence[TaskRecord], glue_dir: str | None = None, source: str = "auto") -> None:
    """One ``GlueDataError`` naming every GLUE file of ``records`` that is missing (as ``load_tasks`` does)."""
    glue = [r.glue for r in records if r.glue is not None]
    if glue:
        kind, root = choose_source(glue_dir, source)
        if kind == "files":
            check_files(root, glue, True)


def read_task_rows(
    record: TaskRecord, *, glue_dir: str | None = None, glue_source: str = "auto", seed: int = 0
) -> TaskRows:
    """The task's rows, every one checked (``TaskDataError`` naming file, row and column)."""
    check_glue_files([record], glue_dir, glue_source)
    raws, names = raw_splits(record, glue_dir=glue_dir, source=glue_source, train=True, seed=seed)
    devs = {key[4:]: raw for key, raw in raws.items() if key != "train"}  # "dev" → "", "dev_m" → "m"
    return TaskRows(record, raws["train"], devs, tuple(names))


def read_tasks_rows(
    records: Sequence[TaskRecord], *, glue_dir: str | None = None, glue_source: str = "auto", seed: int = 0
) -> list[TaskRows]:
    """Every task's rows, in order; every GLUE file checked before any row is read.

    Read before the tokenizer is loaded (``profile_tasks``, ``pals-tasks``): bad data is named without
    waiting for the model, and pyarrow's threaded CSV read never runs in a process that has already imported
    torch — exiting right after such a read (an error) can abort the interpreter ("terminate called without an
    active exception", exit 134) instead of exiting 2."""
    check_glue_files(records, glue_dir, glue_source)
    return [read_task_rows(r, glue_dir=glue_dir, glue_source=glue_source, seed=seed) for r in records]


def profile_rows(
    rows: TaskRows, *, tokenizer=None, max_len: int = 128, progress: bool = False, stride: int | None = None
) -> dict:
    """The profile of rows already read (the module docstring gives its shape). ``stride``: the tokens windows of a
    sentence longer than ``max_len`` share (None: ``windows.default_stride``, as ``pals-train`` without ``--stride``)."""
    check_max_len(max_len)
    stride = default_stride(max_len) if stride is None else stride
    check_stride(stride, max_len)
    record, train, devs, names = rows.record, rows.train, rows.devs, rows.names
    kind = get_kind(record.kind)
    c = kind.num_outputs(names)
    train_y = label_array(train.labels, record.kind, c)
    dev_y = {s: label_array(raw.labels, record.kind, c) for s, raw in devs.items()}
    train_dist, dev_dist = kind.distribution(train_y, dev_y, names)
    scores = rows_majority(record, train.labels, {s: raw.labels for s, raw in devs.items()}, names)
    tokens = None
    if tokenizer is not None:
        splits = [train, *devs.values()]
        if kind.per_word:  # windows over the long sentences; what a cut at max_len would lose
            for s in splits:
                check_words(tokenizer, s.text_a, s.where_word)
            plan = read_plan(tokenizer, [words for s in splits for words in s.text_a], max_len, stride)
            tokens = token_stats(plan["tokens"], max_len)
            tokens.update(
                words=sum(len(words) for s in splits for words in s.text_a),
                stride=stride,
                fixed=plan["fixed"],
                rows_windowed=int((plan["windows"] > 1).sum()),
                windows_max=int(plan["windows"].max(initial=1)),
                words_cut=sum(plan["cut"]),
                rows_cut=sum(c > 0 for c in plan["cut"]),
            )
        elif kind.span_head:  # contexts read in windows: how many a context takes
            tokens = _span_tokens(tokenizer, splits, max_len, stride)
        else:
            rows = sum(len(s.text_a) for s in splits)
            if kind.per_candidate:  # each of a row's sequences counted (a choice row's (context, candidate) pairs)
                splits = [RawSplit(*flat_sequences(s.text_a, s.text_b)[:2], [], 0, s.source) for s in splits]
            tokens = token_stats(token_lengths(splits, tokenizer, progress=progress), max_len)
            if kind.per_candidate:
                tokens["sequences_per_row"] = sum(len(s.text_a) for s in splits) / max(rows, 1)
    return {
        "name": record.name,
        "kind": record.kind,
        "train_rows": len(train.labels),
        "dev_rows": sum(len(raw.labels) for raw in devs.values()),
        "dev_source": " + ".join(raw.source for raw in devs.values()),
        "labels": list(names),
        "distribution": {"train": train_dist, "dev": dev_dist},
        "majority": {
            "metric": main_metric_label(record),
            "main": main_score(record, scores),
            "scores": {k: float(v) for k, v in scores.items()},
        },
        "tokens": tokens,
    }


def _percentiles(values: np.ndarray) -> dict:
    if not len(values):
        return {"p50": 0, "p95": 0, "max": 0}
    return {
        "p50": int(math.ceil(np.percentile(values, 50))),
        "p95": int(math.ceil(np.percentile(values, 95))),
        "max": int(values.max()),
    }


def _span_tokens(tokenizer, splits: Sequence[RawSplit], max_len: int, stride: int) -> dict:
    """A span task's token statistics (the module docstring): each pair untruncated (``windows.pair_tokens``), its
    windows counted as ``pair_windows`` cuts them (``count_windows``)."""
    n, fixed, windows = [], [], []
    for s in splits:
        for i in range(0, len(s.text_a), TOKEN_BATCH):
            a, b = s.text_a[i : i + TOKEN_BATCH], s.text_b[i : i + TOKEN_BATCH]
            tokens, repeated = pair_tokens(tokenizer, a, b)
            for k, (t, f) in enumerate(zip(tokens.tolist(), repeated.tolist())):
                if t > max_len and max_len - f <= stride:
                    raise TaskDataError(
                        f"{s.source}, row {i + k + 1}: its question and special tokens take {f} of the {max_len} "
                        f"tokens, leaving {max(max_len - f, 0)} to its context, not more than the stride {stride} "
                        "(a longer max length or a shorter question)"
                    )
                windows.append(count_windows(t, f, max_len, stride))
            n.extend(tokens.tolist())
            fixed.extend(repeated.tolist())
    n_, fixed_, windows_ = (np.asarray(x, dtype=np.int64) for x in (n, fixed, windows))
    out = token_stats(n_, max_len)
    out.update(
        stride=stride,
        context=_percentiles(n_ - fixed_),
        question=_percentiles(fixed_),
        windows={**_percentiles(windows_), "total": int(windows_.sum())},
        contexts_windowed=int((windows_ > 1).sum()),
    )
    return out


def profile_task(
    record: TaskRecord,
    *,
    tokenizer=None,
    max_len: int = 128,
    glue_dir: str | None = None,
    glue_source: str = "auto",
    seed: int = 0,
    progress: bool = False,
    stride: int | None = None,
) -> dict:
    """One task's profile (the module docstring gives its shape). ``tokenizer`` None: no token statistics
    (``tokens`` is None). ``seed`` draws the dev rows of a task without a dev file, as a run of that seed
    would. Raises ``TaskDataError`` (a ``ValueError``) naming file, row and column for bad data."""
    check_max_len(max_len)
    rows = read_task_rows(record, glue_dir=glue_dir, glue_source=glue_source, seed=seed)
    return profile_rows(rows, tokenizer=tokenizer, max_len=max_len, progress=progress, stride=stride)


def tokenizer_of(model: str | None):
    """The tokenizer of ``model`` (a local HF folder, "tiny", or None = the embedded MiniLM); ``ValueError``
    in one line for a model that is not there or has no tokenizer."""
    from pathlib import Path

    if model not in (None, TINY) and not Path(model).expanduser().is_dir():
        raise ValueError(f"model {model!r}: not a local model folder (or 'tiny'; none = the embedded MiniLM)")
    model = model if model in (None, TINY) else str(Path(model).expanduser())
    path = tokenizer_path(model)
    check_tokenizer(model)
    try:
        return load_tokenizer(path)
    except (OSError, ValueError, TypeError, KeyError) as e:
        first = next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
        raise ValueError(
            f"model {model!r}: its tokenizer could not be read from {path} ({first.rstrip(':')})"
        ) from None


def profile_tasks(
    records: Sequence[TaskRecord],
    *,
    model: str | None = None,
    max_len: int = 128,
    glue_dir: str | None = None,
    glue_source: str = "auto",
    seed: int = 0,
    progress: bool = False,
    stride: int | None = None,
) -> list[dict]:
    """``profile_task`` of every record, in order, with ``model``'s tokenizer (loaded once, after every task's
    rows are read and checked: see ``read_tasks_rows``)."""
    check_max_len(max_len)
    rows = read_tasks_rows(records, glue_dir=glue_dir, glue_source=glue_source, seed=seed)
    tokenizer = tokenizer_of(model)
    return [profile_rows(r, tokenizer=tokenizer, max_len=max_len, progress=progress, stride=stride) for r in rows]


def windows_at(profile: dict, max_len: int, stride: int | None = None) -> int | None:
    """The windows a tagging task's longest sentence is read in at ``max_len``, consecutive windows sharing
    ``stride`` tokens (None: ``windows.default_stride``, what a run at that length takes without ``--stride``); None
    for a task of another kind or without token counts."""
    t = profile.get("tokens") or {}
    if "fixed" not in t:
        return None
    return count_windows(t["max"], t["fixed"], max_len, default_stride(max_len) if stride is None else stride)


def longest_windows(profile: dict, max_len: int, stride: int | None = None) -> str | None:
    """What a suggested length means for a tagging task's longest sentence, the sentence ``pals-tasks`` and the
    explorer's train form both print: "<task>: its longest sentence (T tokens) is read in K overlapping windows of
    ``max_len`` (stride S)", or "… fits in one window of ``max_len``"; None for a task of another kind. ``stride``:
    the user's ``--stride`` where it is valid at ``max_len``, else the default."""
    if stride is not None:
        try:
            check_stride(stride, max_len)
        except ValueError:
            stride = None
    stride = default_stride(max_len) if stride is None else stride
    k = windows_at(profile, max_len, stride)
    if k is None:
        return None
    how = (
        f"is read in {k} overlapping windows of {max_len} (stride {stride})"
        if k > 1
        else f"fits in one window of {max_len}"
    )
    return f"{profile['name']}: its longest sentence ({profile['tokens']['max']} tokens) {how}"


__all__ = [
    "TaskRows",
    "check_glue_files",
    "check_max_len",
    "longest_windows",
    "profile_rows",
    "profile_task",
    "profile_tasks",
    "read_task_rows",
    "read_tasks_rows",
    "token_lengths",
    "token_stats",
    "tokenizer_of",
    "windows_at",
]
