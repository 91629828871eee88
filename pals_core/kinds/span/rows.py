"""The rows side of extractive question answering: answers out of rows laid out as SQuAD, checked, the positions the
model trains on, and the profile's statistics (pure Python; numpy imported inside, never torch).

A row holds a question, a context and its answers (the record's ``text``: [question, context]; ``label``: the
answers column) — ``answers: {text: [...], answer_start: [...]}`` as the ``datasets`` SQuAD layout holds it (JSON
Lines, Parquet, save_to_disk), or a list of ``{text, answer_start}`` as the official SQuAD JSON holds it. An answer is
a non-empty text found in the context at its ``answer_start`` (a character index); a row with no answer is an
unanswerable question (SQuAD v2). A bad value is one ``TaskDataError`` line naming file, row and column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import labels as L
from ..errors import TaskDataError, TaskRecordError

Gold = tuple[tuple[str, int], ...]  # a question's answers: (text, character start) each; () when unanswerable
CLS = 0  # the token a window's "no answer" points at (run_qa: the [CLS] token, first in every family read here)


def _pairs(value: Any) -> list[tuple[Any, Any]] | None:
    """(text, answer_start) pairs of a cell in either layout; None for a cell of neither."""
    if isinstance(value, Mapping) and set(value) >= {"text", "answer_start"}:
        text, start = value["text"], value["answer_start"]
        if isinstance(text, (list, tuple)) and isinstance(start, (list, tuple)) and len(text) == len(start):
            return list(zip(text, start))
        return None
    if isinstance(value, (list, tuple)) and all(
        isinstance(a, Mapping) and set(a) >= {"text", "answer_start"} for a in value
    ):
        return [(a["text"], a["answer_start"]) for a in value]
    return None


def read_answers(context: Any, value: Any, where: str) -> Gold:
    """A row's answers, checked against its context (``where``: file, row and column for the error)."""
    pairs = _pairs(value)
    if pairs is None:
        raise TaskDataError(
            f"{where}: answers are {{text: [...], answer_start: [...]}} (lists of one length) or a list of "
            f"{{text, answer_start}}, found {type(value).__name__} {L.short(value)}"
        )
    out = []
    for k, (text, start) in enumerate(pairs):
        at = f"{where}, answer {k + 1}"
        if not isinstance(text, str) or not text:
            raise TaskDataError(f"{at}: the text is a non-empty string, found {L.short(text)}")
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            raise TaskDataError(f"{at}: answer_start is a character index (an integer ≥ 0), found {L.short(start)}")
        found = context[start : start + len(text)]
        if found != text:
            raise TaskDataError(
                f"{at}: {L.short(text)} is not at character {start} of the context (found {L.short(found)})"
            )
        out.append((text, start))
    return tuple(out)


def answer_tokens(offsets: Any, answer: tuple[str, int] | None) -> tuple[int, int]:
    """The (start, end) token a window trains on — run_qa's ``prepare_train_features``: the first answer's first and
    last token when the window's context holds all of it, else ``CLS`` for both (an unanswerable question, or an
    answer outside the window). ``offsets``: (tokens, 2) character [start, stop) per token, (-1, -1) off the
    context. One difference: run_qa's search for the start token runs on past the context into [SEP] (offsets
    (0, 0)) when the answer starts at the window's last context token, and labels the [SEP]; here it stops at the
    context's last token, which is the answer's start."""
    import numpy as np

    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    inside = np.flatnonzero(offsets[:, 0] >= 0)
    if answer is None or not len(inside):
        return CLS, CLS
    first, last = int(inside[0]), int(inside[-1])
    start_char, end_char = answer[1], answer[1] + len(answer[0])
    if not (offsets[first, 0] <= start_char and offsets[last, 1] >= end_char):
        return CLS, CLS
    start = first
    while start <= last and offsets[start, 0] <= start_char:
        start += 1
    end = last
    while end >= first and offsets[end, 1] >= end_char:
        end -= 1
    return start - 1, end + 1


def window_labels(offsets: Sequence[Any], rows: Sequence[int], golds: Sequence[Gold]):
    """(windows, 2) int64: each window's start and end token (``answer_tokens``) of the first answer of the question
    it reads (``rows[k]``; ``pals_core.data.windows.pair_windows``), ``CLS`` for both where the window does not hold
    the whole answer or the question has none."""
    import numpy as np

    out = np.empty((len(rows), 2), dtype=np.int64)
    for k, (window, row) in enumerate(zip(offsets, rows)):
        gold = golds[row]
        out[k] = answer_tokens(window, gold[0] if gold else None)
    return out


def _percentiles(values: Sequence[int]) -> dict:
    import math

    import numpy as np

    if not len(values):
        return {"p50": 0, "p95": 0, "max": 0}
    y = np.asarray(values)
    return {
        "p50": int(math.ceil(np.percentile(y, 50))),
        "p95": int(math.ceil(np.percentile(y, 95))),
        "max": int(y.max()),
    }


class SpanRows:
    """The ``Kind`` methods of extractive question answering on the rows' side (see the module's docstring)."""

    has_labels = False

    def check(self, record: Any, where: str) -> None:
        if len(record.text) != 2:
            raise TaskRecordError(f"{where}: 'text' is two columns, the question's and the context's")

    def label_names(self, record: Any, cols: Any = None) -> tuple[str, ...]:
        return ()

    def targets(self, record: Any, cols: Any, names: tuple[str, ...], split: str) -> list[Gold]:
        """Each row's answers, checked: texts found in the row's context at their ``answer_start``."""
        column, context = record.label, record.text[1]
        out = []
        for i, value in enumerate(cols.values[column]):
            text = cols.values[context][i]
            if not isinstance(text, str):
                raise TaskDataError(f"{cols.where(i, context)}: the context is a string, found {L.short(text)}")
            if value is None:
                raise TaskDataError(f"{cols.where(i, column)}: missing answers (an unanswerable question: no texts)")
            out.append(read_answers(text, value, cols.where(i, column)))
        return out

    def window_labels(self, offsets: Sequence[Any], rows: Sequence[int], golds: Sequence[Gold]):
        """Each window's start and end token (``window_labels``): what the loss trains on."""
        return window_labels(offsets, rows, golds)

    def label_array(self, labels: Sequence[Any], num_labels: int):
        """A 1-d object array of each question's answers (``Gold``)."""
        import numpy as np

        out = np.empty(len(labels), dtype=object)
        out[:] = [tuple(tuple(a) for a in row) for row in labels]
        return out

    def scale(self, train_labels: Any) -> dict:
        """Kept in the run: whether the train rows hold unanswerable questions — then "no answer" is a prediction
        (SQuAD v2 decoding), else never (v1)."""
        return {"unanswerable": any(len(row) == 0 for row in train_labels)}

    def scale_problem(self, scale: Any) -> str | None:
        if isinstance(scale, dict) and isinstance(scale.get("unanswerable"), bool):
            return None
        return "an object with unanswerable true or false"

    # --- the profile ---------------------------------------------------------------------------------

    def distribution(self, train_y: Any, dev_ys: Mapping[str, Any], names: Sequence[str]) -> tuple[dict, dict]:
        """Per split: questions, the share unanswerable, answers per question, answer length in words (p50 / p95 /
        max of every answer)."""

        def stats(rows: Sequence[Any]) -> dict:
            rows = list(rows)
            empty = sum(len(r) == 0 for r in rows)
            return {
                "questions": len(rows),
                "unanswerable": empty,
                "unanswerable_share": empty / len(rows) if rows else 0.0,
                "answers_per_question": _percentiles([len(r) for r in rows]),
                "answer_words": _percentiles([len(t.split()) for r in rows for t, _ in r]),
            }

        return stats(train_y), stats([row for y in dev_ys.values() for row in y])

    def profile_lines(self, profile: dict, table) -> list[str]:
        dist = profile["distribution"]
        lines = []
        t = profile.get("tokens") or {}
        if "windows" in t:
            c, q, w = t["context"], t["question"], t["windows"]
            lines.append(
                f"  context tokens p50 {c['p50']} · p95 {c['p95']} · max {c['max']} · question (+ special) max "
                f"{q['max']} · windows per context at n = {t['max_len']} (stride {t['stride']}): p50 {w['p50']} · "
                f"max {w['max']} · {t['contexts_windowed']:,} contexts in more than one · {w['total']:,} sequences in all"
            )
        for s in ("train", "dev"):
            d, a = dist[s], dist[s]["answer_words"]
            lines.append(
                f"  {s}: {d['questions']:,} questions · unanswerable {d['unanswerable']:,} "
                f"({100 * d['unanswerable_share']:.1f} %) · answer words p50 {a['p50']} · p95 {a['p95']} · "
                f"max {a['max']}"
            )
        return lines

    def baseline_text(self, profile: dict) -> str:
        return "no answer (exact match = the share of unanswerable questions)"

    def distribution_text(self, profile: dict) -> str:
        d = profile["distribution"]["train"]
        a = d["answer_words"]
        return (
            f"**{profile['name']}** (an answer span of the context) — train: {d['questions']:,} questions, "
            f"{100 * d['unanswerable_share']:.1f}% unanswerable; answer words p50 {a['p50']} · p95 {a['p95']} · "
            f"max {a['max']}"
        )


__all__ = ["CLS", "Gold", "SpanRows", "answer_tokens", "read_answers", "window_labels"]
