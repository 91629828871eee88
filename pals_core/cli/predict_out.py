"""What ``pals-predict`` writes: its prediction columns (``prediction_columns``, ``output_columns``), the input's
columns kept beside them (``kept_input_columns``), the values a format can hold (``check_writable``), words and tags
space-joined in CSV/TSV (``word_columns``, ``space_joined``), a ``.conll`` file a word a line (``conll_columns``,
``write_conll``) and the other formats (``write_table``), each written atomically. The command is ``predict.py``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..atomic import atomic_write, atomic_write_text
from ..flags import UsageError
from ..kinds import get_kind

JOINED = (".csv", ".tsv")  # one text cell a value: a list of labels, words or tags is joined


def prediction_columns(info, names: Sequence[str], probs: bool) -> dict[str, tuple[str, str, int]]:
    """The prediction columns, in order (see the module docstring), each as (task, what, label index): ``label``,
    ``text`` (``<task>_text``: the text the label stands for, a choice row's chosen candidate), ``prob`` and, with
    ``probs``, ``probs`` for every label, as the task's kind has them (``Kind.columns``); a span task's answer
    ``<task>_start`` and ``<task>_end`` (its characters in the context, -1 for no answer). Known before predicting; a
    name two tasks would both write (tasks ``a`` and ``a_prob``) is refused."""
    out: dict[str, tuple[str, str, int]] = {}

    def add(column: str, task: str, what: str, j: int = -1) -> None:
        if column in out:
            raise UsageError(
                f"tasks {out[column][0]!r} and {task!r} would both write the column {column!r}: predict them "
                "separately (--tasks)"
            )
        out[column] = (task, what, j)

    for t in names:
        for what in get_kind(info.records[t].kind).columns(probs):
            if what == "label":
                add(t, t, "label")
            elif what == "text":
                add(f"{t}_text", t, "text")
            elif what == "prob":
                add(f"{t}_prob", t, "prob")
            elif what == "spans":  # an answer's character start and end in its context
                add(f"{t}_start", t, "start")
                add(f"{t}_end", t, "end")
            else:
                for j, name in enumerate(info.labels[t]):
                    add(f"{t}_prob_{name}", t, "probs", j)
    return out


def output_columns(
    columns: dict, info, results: dict, n: int, joined: bool, meant: dict | None = None
) -> dict[str, list]:
    """The prediction columns (``columns``: ``prediction_columns``); a row a task did not predict holds None.
    ``meant``: per task, each row's texts its labels stand for (``Kind.label_texts``: a choice row's candidates)."""
    out: dict[str, list] = {}
    for column, (t, what, j) in columns.items():
        res = results[t]
        idx, o = res if isinstance(res, tuple) else (np.arange(n), res)
        values = [None] * n
        if what == "text":  # the text the predicted label stands for (the chosen candidate)
            for i, v in zip(idx, o.label):
                values[i] = meant[t][i][o.labels.index(v)]
        elif what == "label":
            kind = get_kind(info.records[t].kind)
            for i, v in zip(idx, o.label):
                values[i] = kind.joined(info.records[t], v) if (joined and isinstance(v, list)) else v
        elif what in ("start", "end"):
            for i, v in zip(idx, o.spans[:, 0 if what == "start" else 1]):
                values[i] = int(v)
        else:
            for i, v in zip(idx, o.prob if what == "prob" else o.probs[:, j]):
                values[i] = float(v)
        out[column] = values
    return out


def kept_input_columns(inputs: Sequence[str], predicted: Sequence[str]) -> dict[str, str]:
    """input column → its name in the output: its own, or — named like a prediction column — ``<name> (input)``,
    else ``<name> (input 2)``, … : the first name no other column has (an input never loses a column)."""
    taken = set(inputs) | set(predicted)
    out = {}
    for c in inputs:
        if c in predicted:
            new, k = f"{c} (input)", 2
            while new in taken:
                new, k = f"{c} (input {k})", k + 1
            taken.add(new)
            out[c] = new
        else:
            out[c] = c
    return out


def _value_kind(v) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "list"
    return "object" if isinstance(v, dict) else type(v).__name__


def check_writable(cols, names: dict[str, str], out: Path, inputs: dict[str, list] | None = None) -> None:
    """Every input column kept (``names``) can be written to ``out``'s format, checked before predicting: JSON Lines
    holds anything; a CSV, TSV or Parquet column holds one type (not strings and numbers, as a JSON Lines input
    may mix), and CSV/TSV no lists or objects (but the words and tags ``space_joined`` makes text). ``inputs``: the
    values to be written (default: the input's). ``UsageError`` naming the file, the row and the column."""
    suffix = out.suffix.lower()
    if suffix == ".jsonl":
        return
    import io

    import pyarrow as pa

    for c in names:
        values = (inputs or cols.values)[c]
        try:
            array = pa.array(values)
        except (pa.ArrowException, OverflowError) as e:
            kinds = [_value_kind(v) for v in values]
            first = next((i for i, k in enumerate(kinds) if k is not None), 0)
            for i, k in enumerate(kinds):
                if k is not None and k != kinds[first]:
                    raise UsageError(
                        f"{cols.where(i, c)}: a {k} in a column whose {cols.where(first).split(', ')[-1]} holds a "
                        f"{kinds[first]}: a {suffix} column holds one type (write .jsonl to keep each value as it is)"
                    ) from None
            raise UsageError(
                f"{cols.path}, column {c!r}: cannot be written to a {suffix} file ({' '.join(str(e).split())[:160]}); "
                "write .jsonl to keep each value as it is"
            ) from None
        try:
            write_buffer(io.BytesIO(), pa.table({c: array.slice(0, 1)}), suffix)
        except (pa.ArrowException, NotImplementedError) as e:
            raise UsageError(
                f"{cols.path}, column {c!r}: its {array.type} values cannot be written to a {suffix} file "
                f"({' '.join(str(e).split())[:160]}); write .jsonl or .parquet"
            ) from None


def word_columns(cols, info, names: Sequence[str], text: str) -> tuple[str, ...]:
    """The input's columns of one value per word: every column of a CoNLL file, and the words and the tags a
    predicted per-word task reads (its text column and its label column). CSV/TSV write them space-joined, as the
    predicted tags (``space_joined``)."""
    if cols.numbers is not None:
        return tuple(cols.values)
    found = []
    for t in names:
        if get_kind(info.records[t].kind).per_word:
            found += [c for c in (text, info.records[t].label) if c in cols.values]
    return tuple(dict.fromkeys(found))


def _one_field(v) -> bool:
    """A word or tag that stays one field once joined by spaces (a CoNLL column, a CSV cell's words): no whitespace."""
    return isinstance(v, str) and len(v.split()) == 1 and v == v.strip()


def space_joined(cols, column: str) -> list:
    """A column of words or tags (a list a row) as one text a row, the values joined by single spaces (a string or
    None stays as it is). ``UsageError`` naming the row for a value that joined would not read back as one word
    (whitespace inside, empty, not a string)."""
    out = []
    for i, v in enumerate(cols.values[column]):
        if isinstance(v, (list, tuple)) and all(_one_field(w) or type(w) is int for w in v):  # words, tags, tag ids
            out.append(" ".join(map(str, v)))
        elif v is None or isinstance(v, str):
            out.append(v)
        else:
            raise UsageError(
                f"{cols.where(i, column)}: a list whose values are not words without spaces cannot be space-joined "
                "into a .csv/.tsv cell; write .jsonl or .parquet to keep it as it is"
            )
    return out


def conll_columns(cols, info, names: Sequence[str], text: str, texts: list, task_column, out: Path) -> list:
    """What a ``.conll`` output repeats of the input before the predicted tags, as columns of per-row word lists,
    checked before predicting: every column of a CoNLL input (its words, its gold tags, …); of another input, its
    words (``words_of``: as the model reads them) and the gold tags of each predicted task whose label column it holds
    (one a word). Every predicted task tags words (``UsageError`` otherwise), and every value is one field."""
    from ..forward import words_of  # late: the data path

    rows = [t for t in names if not get_kind(info.records[t].kind).per_word]
    if rows:
        raise UsageError(
            f"--out {out}: a .conll file holds a value per word, and {', '.join(rows)} predict{'s' * (len(rows) == 1)} "
            "one per row: choose per-word tasks (--tasks), or write .csv, .tsv, .jsonl or .parquet"
        )
    if task_column is not None:
        raise UsageError(f"--out {out}: a .conll file tags every row for every task: --task-column does not apply")
    if cols.numbers is not None:  # its columns as read: one value a word, never whitespace
        return list(cols.values.values())
    words = [words_of(t) for t in texts]
    columns, named = [words], [text]
    for t in names:
        label = info.records[t].label
        if label in cols.values and label not in named:
            tags = info.labels[t]
            gold = [
                [tags[v] if type(v) is int and 0 <= v < len(tags) else v for v in row]  # integer tags: by their names
                if isinstance(row, (list, tuple))
                else words_of(row or "")
                for row in cols.values[label]
            ]
            columns.append(gold)
            named.append(label)
    for column, values in zip(named, columns):
        for i, (row, w) in enumerate(zip(values, words)):
            if len(row) != len(w):
                raise UsageError(f"{cols.where(i, column)}: {len(row)} values for {len(w)} words: one a word")
            bad = next((v for v in row if not _one_field(v)), None)
            if bad is not None:
                raise UsageError(
                    f"{cols.where(i, column)}: {bad!r} is not one word without spaces: a .conll line's columns are "
                    "separated by whitespace; write .jsonl or .parquet"
                )
    return columns


def write_conll(path: Path, columns: Sequence[list], tags: Sequence[list]) -> None:
    """A CoNLL file, atomically: a word a line — the input's columns (``conll_columns``), then each task's predicted
    tag — separated by single spaces, a blank line after each row (sentence)."""
    lines = []
    for i, words in enumerate(columns[0]):
        for j in range(len(words)):
            lines.append(" ".join([str(c[i][j]) for c in columns] + [str(t[i][j]) for t in tags]))
        lines.append("")
    atomic_write_text(path, "\n".join(lines))


def write_buffer(sink, table, suffix: str) -> None:
    """An Arrow ``table`` as CSV, TSV or Parquet to ``sink`` (a path or a file object)."""
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, sink)
        return
    import pyarrow.csv as pacsv

    delimiter = "\t" if suffix == ".tsv" else ","
    quoting = "needed" if delimiter == "," else "none"  # a TSV has no quoting (as its reader): its header neither
    options = pacsv.WriteOptions(delimiter=delimiter, quoting_style=quoting, quoting_header=quoting)
    pacsv.write_csv(table, sink, options)


def write_table(path: Path, columns: dict[str, list]) -> None:
    """``columns`` to ``path`` (the format by its extension), atomically."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        names = list(columns)
        rows = zip(*(columns[c] for c in names))
        atomic_write_text(
            path, "".join(json.dumps(dict(zip(names, r)), ensure_ascii=False, default=str) + "\n" for r in rows)
        )
        return
    import pyarrow as pa

    table = pa.Table.from_pydict(columns)
    atomic_write(path, lambda tmp: write_buffer(tmp, table, suffix))
