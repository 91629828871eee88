"""The rows side of multiple choice: each row's context and k candidates, the right candidate's index checked, and
the profile's statistics (pure Python; numpy imported inside the methods, never torch).

A row is an optional context and k candidates (every row of a task the same k), its label the right candidate:

* ``text`` — the context: no column (``text: []``, each candidate read alone), one column (each (context, candidate)
  pair one sequence), or two (SWAG's ``sent1`` and ``sent2``: the second starts every candidate, so candidate j is
  the pair (sent1, sent2 + " " + ending_j), as transformers' multiple-choice example builds it). A tasks-file entry of
  this kind that gives no ``text`` reads SWAG's two (``record_defaults``). A context cell may be empty or missing
  (an empty first segment; an empty start: the candidate alone); a candidate may not.
* ``choices`` — the candidates: a list of columns (COPA's ``[choice1, choice2]``), or one column holding each row's
  list of candidates (JSON Lines, Parquet, ``save_to_disk``); by default the file's ``ending0``, ``ending1``, …
  columns, numbered from 0 without a gap (SWAG).
* ``label`` — the right candidate's index from 0 (an integer or its digits, a ClassLabel index), or, with ``labels:
  [A, B, C, D]`` naming the positions, one of those names.

The label set is the candidates' positions ("0" … "k−1", or the declared names): C_t = k, one score per candidate.
A bad value is one ``TaskDataError`` line naming the file, the row and the column: a missing, empty or non-text
candidate, a row whose list holds another number of candidates, a label outside the positions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import labels as L
from ..base import counts_table, rows_chart
from ..errors import TaskDataError, TaskRecordError

ENDING = re.compile(r"ending(0|[1-9][0-9]*)\Z")  # SWAG's candidate columns
DEFAULT_TEXT = ("sent1", "sent2")  # SWAG's context and the start every candidate continues


def ending_columns(names: Sequence[str]) -> list[str]:
    """SWAG's candidate columns among ``names``: ``ending0``, ``ending1``, … in order, from 0 without a gap."""
    found = {int(m.group(1)): n for n in names if (m := ENDING.match(n))}
    out: list[str] = []
    while len(out) in found:
        out.append(found[len(out)])
    return out


def joined(start: str, candidate: str) -> str:
    """The second segment of a candidate's pair: the start it continues, a space, the candidate (the start empty:
    the candidate alone)."""
    return f"{start} {candidate}" if start else candidate


def _candidate(where: str, value: Any) -> str:
    if value is None:
        raise TaskDataError(f"{where}: missing candidate")
    if not isinstance(value, str):
        raise TaskDataError(f"{where}: a candidate is text, found {type(value).__name__} {L.short(value)}")
    if not value.strip():
        raise TaskDataError(f"{where}: empty candidate")
    return value


def _items(cols: Any, column: str, i: int, value: Any) -> list[str]:
    """Row i's list of candidates (one column of lists)."""
    if not isinstance(value, (list, tuple)):
        what = "missing" if value is None else f"{type(value).__name__} {L.short(value)}"
        raise TaskDataError(f"{cols.where(i, column)}: a list of candidates expected, found {what}")
    return [_candidate(f"{cols.where(i, column)}, candidate {j + 1}", v) for j, v in enumerate(value)]


def _context(cols: Any, column: str) -> list[str]:
    """A context column: text, or "" where a cell is empty or missing (the context is optional)."""
    out = []
    for i, v in enumerate(cols.values[column]):
        if v is not None and not isinstance(v, str):
            raise TaskDataError(f"{cols.where(i, column)}: text expected, found {type(v).__name__} {L.short(v)}")
        out.append(v or "")
    return out


class ChoiceRows:
    """The ``Kind`` methods of multiple choice on the rows' side (see the module's docstring)."""

    fields = ("labels", "choices")
    field_notes = {"choices": "choice tasks (the candidates: a list of columns, or one column of lists)"}
    own_texts = True
    text_columns = (0, 2)
    text_help = "the context: no column ([]), one, or two (SWAG's sent1, sent2: the second starts every candidate)"
    record_defaults = {"text": DEFAULT_TEXT}

    def check(self, record: Any, where: str) -> None:
        L.check_label_set(record, where)
        choices = record.choices
        if choices is None:
            return
        if not choices or not all(isinstance(c, str) and c for c in choices):
            raise TaskRecordError(
                f"{where}: 'choices' is a list of candidate columns or one column of lists, got {list(choices)!r}"
            )
        if len(set(choices)) != len(choices):
            raise TaskRecordError(f"{where}: 'choices' names a column twice")
        clash = next((c for c in choices if c in record.text or c == record.label), None)
        if clash is not None:
            what = "the label" if clash == record.label else "context"
            raise TaskRecordError(f"{where}: column {clash!r} is both a candidate and {what}")
        if len(choices) > 1 and record.labels is not None and len(record.labels) != len(choices):
            raise TaskRecordError(
                f"{where}: {len(record.labels)} 'labels' for {len(choices)} candidate columns (one name a candidate)"
            )

    # --- the columns ---------------------------------------------------------------------------------

    def _listed(self, record: Any) -> str | None:
        """The column holding each row's list of candidates (``choices`` names one column), else None."""
        return record.choices[0] if record.choices is not None and len(record.choices) == 1 else None

    def candidate_columns(self, record: Any, path: str, names: Callable[[], Sequence[str]]) -> list[str]:
        """The columns holding the candidates: declared (``choices``), else SWAG's ``ending0``, ``ending1``, … of the
        file (``names()``: its columns)."""
        if record.choices is not None:
            return list(record.choices)
        have = list(names())
        found = ending_columns(have)
        if len(found) < 2:
            raise TaskDataError(
                f"{path}: no candidate columns ending0, ending1, … (it has {', '.join(map(repr, have))}): "
                "name them with 'choices' (a list of columns, or one column of lists)"
            )
        return found

    def row_columns(self, record: Any, path: str, names: Callable[[], Sequence[str]]) -> list[str] | None:
        """The context, the candidates and the label; without ``choices``, every column (SWAG's ``ending0…`` found
        among them as the rows are read: the file read once)."""
        if record.choices is None:
            return None
        return [*record.text, *record.choices, record.label]

    def _present(self, cols: Any, columns: Sequence[str]) -> None:
        """``columns`` are in the file read whole (``row_columns`` None): else one line naming them."""
        lacking = [c for c in columns if c not in cols.values]
        if lacking:
            raise TaskDataError(
                f"{cols.path}: no column {', '.join(map(repr, lacking))} (it has {', '.join(map(repr, cols.values))})"
            )

    def label_columns(self, record: Any, path: str, names: Callable[[], Sequence[str]]) -> list[str]:
        """What the positions are counted on: the candidate columns (none when ``choices`` lists them)."""
        if record.choices is not None and len(record.choices) > 1:
            return []
        return self.candidate_columns(record, path, names)

    # --- the label set ---------------------------------------------------------------------------------

    def label_names(self, record: Any, cols: Any = None) -> tuple[str, ...]:
        """The candidates' positions: the declared ``labels``, else "0" … "k−1" — k the candidate columns, or the
        candidates every row of the list column holds."""
        if record.labels is not None:
            return tuple(record.labels)
        listed = self._listed(record)
        if listed is not None:
            k = None
            for i, value in enumerate(cols.values[listed]):
                n = len(_items(cols, listed, i, value))
                if k is None:
                    k = n
                elif n != k:
                    raise TaskDataError(
                        f"{cols.where(i, listed)}: {n} candidates, the first row {k} (every row one candidate a position)"
                    )
            k = k or 0
        elif record.choices is not None:
            k = len(record.choices)
        else:
            k = len(self.candidate_columns(record, cols.path, lambda: list(cols.values)))
        if k < 2:
            where = f"{cols.path}, {cols.column(listed)}" if listed is not None else f"task {record.name!r}"
            raise TaskDataError(f"{where}: fewer than two candidates a row")
        return tuple(str(j) for j in range(k))

    def label_texts(self, record: Any, cols: Any) -> list[list[str]]:
        """Each row's candidates as written (checked: text, not empty)."""
        listed = self._listed(record)
        if listed is not None:
            return [_items(cols, listed, i, v) for i, v in enumerate(cols.values[listed])]
        out: list[list[str]] = [[] for _ in range(len(cols))]
        for c in self.candidate_columns(record, cols.path, lambda: list(cols.values)):
            for i, v in enumerate(cols.values[c]):
                out[i].append(_candidate(cols.where(i, c), v))
        return out

    def texts(self, record: Any, cols: Any) -> tuple[list[list[str]], list[list[str]] | None]:
        """Each row's k sequences: (first segments, second segments or None) — no context: the candidates alone;
        one column: (context, candidate); two: (context, start + " " + candidate)."""
        self._present(cols, record.text)
        cands = self.label_texts(record, cols)
        if not record.text:
            return cands, None
        context = _context(cols, record.text[0])
        firsts = [[context[i]] * len(row) for i, row in enumerate(cands)]
        if len(record.text) == 1:
            return firsts, cands
        start = _context(cols, record.text[1])
        return firsts, [[joined(start[i], c) for c in row] for i, row in enumerate(cands)]

    def targets(self, record: Any, cols: Any, names: tuple[str, ...], split: str) -> list:
        """Each row's right candidate as its position in ``names``; every row holds one candidate a position."""
        k = len(names)
        listed = self._listed(record)
        if listed is None:  # candidate columns: every row holds one a column
            columns = self.candidate_columns(record, cols.path, lambda: list(cols.values))
            if len(columns) != k:
                raise TaskDataError(
                    f"{cols.path}: {len(columns)} candidate columns ({', '.join(columns)}) for {k} 'labels' "
                    "(one name a candidate)"
                )
        for i, row in enumerate(self.label_texts(record, cols)):
            if len(row) != k:
                raise TaskDataError(
                    f"{cols.where(i, listed)}: {len(row)} candidates, the task has {k} "
                    f"({'its labels name' if record.labels is not None else 'the first row has'} {k})"
                )
        index = {n: j for j, n in enumerate(names)}
        allowed = f"one of {', '.join(names)}" if record.labels is not None else f"an index from 0 to {k - 1}"
        out = []
        column = record.label
        self._present(cols, (*record.text, column))
        for i, value in enumerate(cols.values[column]):
            value = L.class_name(cols, column, i, value)
            text = L.label_text(value, lambda i=i: cols.where(i, column), "a choice")
            if text is None:
                raise TaskDataError(f"{cols.where(i, column)}: missing label")
            if text not in index:
                raise TaskDataError(f"{cols.where(i, column)}: label {text!r} is not a candidate ({allowed})")
            out.append(index[text])
        return out

    # --- the profile ---------------------------------------------------------------------------------

    def distribution(self, train_y: Any, dev_ys: Mapping[str, Any], names: Sequence[str]) -> tuple[dict, dict]:
        """How often each position holds the right candidate, train and dev."""
        import numpy as np

        def counts(y: Any) -> dict:
            return {name: int(c) for name, c in zip(names, np.bincount(np.asarray(y, np.int64), minlength=len(names)))}

        dev = {name: sum(counts(y)[name] for y in dev_ys.values()) for name in names}
        return counts(train_y), dev

    def profile_lines(self, profile: dict, table) -> list[str]:
        lines = counts_table(profile, table, "right candidate")
        lines.append(f"  {len(profile['labels'])} candidates a row, each (context, candidate) pair one sequence")
        return lines

    def baseline_text(self, profile: dict) -> str:
        dist = profile["distribution"]["train"]
        return f"always candidate {max(profile['labels'], key=lambda name: dist[name])!r}"

    def chart(self, profile: dict) -> dict:
        """The rows whose right candidate is each position, train and dev (``distribution_text`` beside it)."""
        return rows_chart(profile)

    def distribution_text(self, profile: dict) -> str:
        """The candidates a row and the tokens of each (context, candidate) pair; the right positions are charted."""
        k = len(profile["labels"])
        text = f"**{profile['name']}** ({k} candidates a row, each (context, candidate) pair one sequence)"
        tokens = profile.get("tokens") or {}
        if "p50" in tokens:
            text += (
                f" · tokens per (context, candidate) pair p50 {tokens['p50']} · p95 {tokens['p95']} · "
                f"max {tokens['max']}"
            )
        return text
