"""``Encoded``: one tokenised split held as flat arrays (CSR layout), and its padded batches.

Sequence i is ``ids[offsets[i]:offsets[i+1]]``. Batches are padded to their own longest sequence
(dynamic padding), which on CPU saves most of the cost of padding every batch to ``max_len``.

A task with one label per word (``Kind.per_word``) holds one label per *token* instead, in the layout of ``ids``
(a word's tag on its first sub-token, -100 on the rest, on the special tokens and, in a batch, on the padding), and
the gold tag of every word of every row — the words without a prediction included — in ``words`` (CSR,
``word_offsets``), with the tag names (``names``): what the dev scores compare predictions with (``gold``:
``WordTags``). Its sequences are not its rows: a row longer than ``max_len`` is read in several windows
(``data/windows.py``), sequence i reading row ``row_of[i]``; ``starts`` marks per token the word it is the prediction
of (a word's first sub-token in the window that reads the word with the most context), so each word with a sub-token
is predicted from exactly one token (``owned``).

An extractive-QA task (``Kind.span_head``) holds its (question, context) rows' windows as its sequences
(``data/windows.py:pair_windows``), sequence i reading row ``row_of[i]``: per window its start and end token
(``labels``, (windows, 2)), per token its character [start, stop) in the context (``chars``, (tokens, 2), -1 off the
context), and per row its context and its gold answers (``contexts``, ``answers``: what decoding and the dev scores
read; ``gold``).
A split whose rows are several sequences each (a multiple-choice row: its k (context, candidate) pairs;
``Kind.per_candidate``) holds its sequences as above and its units over them in ``groups`` (CSR: unit i is sequences
``groups[i]:groups[i+1]``, a row's k sequences one unit, batched together); its labels are one per unit. Its batches
hold every sequence of their units, in unit order, padded alike (B·k sequences for B rows), with ``groups`` (B + 1
offsets into them). Encoded beside a tagging task's rows (``forward.encode_texts``: one pass over every kind), each of
a tagging row's windows is a unit of its own and ``row_of`` maps the units to their rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

IGNORE = -100  # a token that carries no label (kinds/<kind>/module.py's loss ignores it)


@dataclass
class WordTags:
    """The gold tags of a per-word task's rows: ``values`` (n, W) tag indices padded with -1, and the tag names."""

    values: np.ndarray
    names: tuple[str, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    def __len__(self) -> int:
        return len(self.values)


def word_tags(rows: Sequence[Sequence[int]], names: Sequence[str]) -> WordTags:
    """``WordTags`` of rows of tag indices as read (one per word; the profile's baseline is scored on them)."""
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in rows]) if len(rows) else np.zeros(0, np.int64)
    values, _, _ = _padded(flat, offsets, np.arange(len(rows)), -1)
    return WordTags(values, tuple(names))


def _gather(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(new offsets, index into the old flat arrays) of ``rows``, in the given order."""
    lengths = np.diff(offsets)[rows]
    new = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    # item j of new row i sits at starts[i] + (j − new[i]) in the old arrays
    return new, np.repeat(offsets[rows] - new[:-1], lengths) + np.arange(new[-1])


def _padded(values: np.ndarray, offsets: np.ndarray, rows: np.ndarray, fill: int, width: int | None = None):
    """Rows of a CSR array as an int64 (len(rows), width) matrix padded with ``fill``; also (row of, within) per
    item (gathering every item once, scattered with fancy indexing)."""
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts
    width = (int(lengths.max()) if len(rows) else 0) if width is None else width
    ends = np.cumsum(lengths)
    within = np.arange(ends[-1] if len(rows) else 0) - np.repeat(ends - lengths, lengths)
    row_of = np.repeat(np.arange(len(rows)), lengths)
    out = np.full((len(rows), width), fill, dtype=np.int64)
    out[row_of, within] = values[np.repeat(starts, lengths) + within]
    return out, row_of, within


@dataclass
class Encoded:
    ids: np.ndarray  # int32, all token ids back to back
    types: np.ndarray  # int8, token type ids, same layout
    offsets: np.ndarray  # int64, n + 1 entries
    labels: np.ndarray  # int64 classes, float32 scores (regression), …; per word: int64 per token, layout of ids
    words: np.ndarray | None = None  # per word: int64 gold tag of every word, CSR by word_offsets
    word_offsets: np.ndarray | None = None
    names: tuple[str, ...] = ()  # per word: the tag names
    starts: np.ndarray | None = None  # per word: int64 per token, the word it is the prediction of, else -1
    row_of: np.ndarray | None = None  # per word: int64 per unit, the row it reads (None: unit i is row i)
    groups: np.ndarray | None = None  # units of several sequences: int64, unit i = sequences groups[i]:groups[i+1]
    chars: np.ndarray | None = None  # span: int64 (tokens, 2), each token's characters in its row's context
    contexts: np.ndarray | None = None  # span: object, each row's context
    answers: np.ndarray | None = None  # span: object, each row's gold answers ((text, start), …)

    def __post_init__(self) -> None:
        if self.groups is not None and self.groups[-1] != len(self.offsets) - 1:
            raise ValueError("groups must end at the number of sequences")
        if self.chars is not None and (
            len(self.chars) != self.offsets[-1]
            or self.row_of is None
            or len(self.row_of) != len(self.labels)
            or self.contexts is None
            or self.answers is None
            or len(self.contexts) != len(self.answers)
        ):
            raise ValueError("span windows need each token's characters, each window's row, each row's context")
        if self.words is None and len(self) != len(self.labels):
            raise ValueError("offsets (groups) must have one more entry than labels")
        if self.words is not None and (
            len(self.labels) != self.offsets[-1]
            or self.word_offsets is None
            or (self.row_of is None and len(self.word_offsets) != len(self) + 1)
            or self.starts is None
            or len(self.starts) != len(self.labels)
        ):
            raise ValueError("per-word labels need one label per token and word offsets of one entry per row + 1")
        if self.words is not None and self.row_of is None:
            self.row_of = np.arange(len(self), dtype=np.int64)
        if self.words is not None and len(self.row_of) != len(self):
            raise ValueError("per-word units need the row each one reads")

    def __len__(self) -> int:
        """Units (what batches index): the rows, per word every window of every row (a sequence each), a row of
        several sequences one unit (``groups``)."""
        return len(self.offsets if self.groups is None else self.groups) - 1

    @property
    def rows(self) -> int:
        """Rows (examples, sentences, questions): what a cap counts, what the dev scores score."""
        if self.spans:
            return len(self.contexts)
        return len(self.word_offsets) - 1 if self.per_word else len(self)

    @property
    def spans(self) -> bool:
        """An extractive-QA task's windows (``chars``)."""
        return self.chars is not None

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per unit (a unit of several sequences: its longest, the width it pads to)."""
        lengths = np.diff(self.offsets)
        if self.groups is None:
            return lengths
        out = np.zeros(len(self), dtype=np.int64)
        full = np.diff(self.groups) > 0
        if len(lengths):
            out[full] = np.maximum.reduceat(lengths, self.groups[:-1][full])
        return out

    def sequences_of(self, units: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """The sequences of ``units`` in unit order, and the offsets of each unit's among them (one a unit when the
        units are single sequences)."""
        units = np.asarray(units, dtype=np.int64)
        if self.groups is None:
            return units, np.arange(len(units) + 1, dtype=np.int64)
        return _gather(self.groups, units)[::-1]

    @property
    def per_word(self) -> bool:
        return self.words is not None

    @property
    def max_words(self) -> int:
        return int(np.diff(self.word_offsets).max()) if self.per_word and len(self) else 0

    @property
    def cut_words(self) -> int:
        """Per word: the words no token predicts (cut by ``max_len`` when the rows are cut, not windowed; a word the
        tokenizer reduces to nothing): scored as tagged with the baseline's tag."""
        return int(len(self.words) - (self.starts >= 0).sum()) if self.per_word else 0

    @property
    def windows(self) -> np.ndarray:
        """Per row, the sequences that read it (1 for a row that fits in ``max_len``)."""
        if not self.per_word and not self.spans:
            return np.ones(len(self), dtype=np.int64)
        return np.bincount(self.row_of, minlength=self.rows)

    @property
    def gold(self):
        """What the dev metrics compare predictions with: the labels, per word ``WordTags`` (every word), a span
        task's gold answers per row."""
        if self.spans:
            return self.answers
        if not self.per_word:
            return self.labels
        values, _, _ = _padded(self.words, self.word_offsets, np.arange(self.rows), -1)
        return WordTags(values, tuple(self.names))

    def select(self, rows: Sequence[int]) -> Encoded:
        """A new ``Encoded`` holding ``rows`` in the given order (per word: each with every sequence that reads it,
        in their order)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.groups is not None:
            if self.per_word:
                raise ValueError("a selection of rows of several sequences holds no per-word labels")
            seqs, groups = self.sequences_of(rows)
            offsets, gather = _gather(self.offsets, seqs)
            return Encoded(self.ids[gather], self.types[gather], offsets, self.labels[rows], groups=groups)
        if self.spans:
            new_row = np.full(self.rows, -1, dtype=np.int64)
            new_row[rows] = np.arange(len(rows))
            kept = np.flatnonzero(new_row[self.row_of] >= 0)
            seqs = kept[np.argsort(new_row[self.row_of[kept]], kind="stable")]
            offsets, gather = _gather(self.offsets, seqs)
            return Encoded(
                self.ids[gather],
                self.types[gather],
                offsets,
                self.labels[seqs],
                row_of=new_row[self.row_of[seqs]],
                chars=self.chars[gather],
                contexts=self.contexts[rows],
                answers=self.answers[rows],
            )
        if not self.per_word:
            offsets, gather = _gather(self.offsets, rows)
            return Encoded(self.ids[gather], self.types[gather], offsets, self.labels[rows])
        new_row = np.full(self.rows, -1, dtype=np.int64)
        new_row[rows] = np.arange(len(rows))
        kept = np.flatnonzero(new_row[self.row_of] >= 0)
        seqs = kept[np.argsort(new_row[self.row_of[kept]], kind="stable")]
        offsets, gather = _gather(self.offsets, seqs)
        word_offsets, words = _gather(self.word_offsets, rows)
        return Encoded(
            self.ids[gather],
            self.types[gather],
            offsets,
            self.labels[gather],
            self.words[words],
            word_offsets,
            self.names,
            self.starts[gather],
            new_row[self.row_of[seqs]],
        )

    def owned(self, units: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per word: the tokens of units ``units`` (a batch, in its order; a tagging row's unit is one sequence) that
        predict a word — (position in the batch, token position in its sequence, the row, the word in that row),
        one entry per such token."""
        units = np.asarray(units, dtype=np.int64)
        seqs, groups = self.sequences_of(units)
        starts, _, _ = _padded(self.starts, self.offsets, seqs, -1)
        s, j = np.nonzero(starts >= 0)
        b = np.repeat(np.arange(len(units)), np.diff(groups))[s]
        return b, j, self.row_of[units[b]], starts[s, j]

    def window_chars(self, seq: int) -> np.ndarray:
        """Span: sequence ``seq``'s (tokens, 2) characters in its row's context (-1 off the context)."""
        return self.chars[self.offsets[seq] : self.offsets[seq + 1]]

    def batch(self, rows: Sequence[int], pad_id: int = 0) -> dict:
        """Padded torch tensors for units ``rows``: input_ids, attention_mask, token_type_ids, labels (per word:
        (B, n), -100 on padding) and, per word, ``starts`` (B, n): the word each token predicts, else -1, and
        ``words``: the gold tags of the row each sequence reads (B, ``max_words``), -1 on padding. Units of several
        sequences: every sequence of the units, in unit order (S, n), labels one a unit (B,), and ``groups`` (B + 1):
        where each unit's sequences start."""
        import torch

        rows = np.asarray(rows, dtype=np.int64)
        seqs, groups = self.sequences_of(rows)
        ids, row_of, within = _padded(self.ids, self.offsets, seqs, pad_id)
        types, _, _ = _padded(self.types, self.offsets, seqs, 0)
        mask = np.zeros(ids.shape, dtype=np.int64)
        mask[row_of, within] = 1
        out = {
            "input_ids": torch.from_numpy(ids),
            "attention_mask": torch.from_numpy(mask),
            "token_type_ids": torch.from_numpy(types),
        }
        if self.per_word:  # ``words``: the gold tags of the row each sequence reads
            read = np.repeat(self.row_of[rows], np.diff(groups))
            out["labels"] = torch.from_numpy(_padded(self.labels, self.offsets, seqs, IGNORE)[0])
            out["starts"] = torch.from_numpy(_padded(self.starts, self.offsets, seqs, -1)[0])
            out["words"] = torch.from_numpy(_padded(self.words, self.word_offsets, read, -1, self.max_words)[0])
        else:
            out["labels"] = torch.from_numpy(self.labels[rows].copy())
        if self.groups is not None:
            out["groups"] = torch.from_numpy(groups)
        return out
