"""The rows side of token classification: tags out of rows, checked, and their profile (pure Python; seqeval and
numpy imported inside the methods, never torch).

A row is a sentence: its ``text`` column holds a list of words and its ``label`` column one tag per word — a CoNLL
column file (``.conll``, or ``format: conll``: columns numbered from 0, by default the words in the first column and
the tags in the last; ``pals_core/tasks/readers.py``), or JSON Lines / Parquet / ``save_to_disk`` rows whose cells
are lists. A tag is a string, or an integer named by ``labels:`` (index → tag) or by the column's ClassLabel (a
``Sequence`` of ``ClassLabel``: the layout ``datasets`` uses for CoNLL-2003). Any tag set is taken: BIO / IOB2 or
plain tags (seqeval's default mode chunks them; an I- without a B- is an entity, as seqeval reads it).

The tag order is declared (``labels``), else the ClassLabel's names, else the sorted distinct training tags with
"O" first when there is one. A bad value is one ``TaskDataError`` line naming the file, the row (CoNLL: the word's
line) and the column: a cell that is not a list, a row whose words and tags differ in number, an empty tag, a tag
not in ``labels``, an integer tag out of range or without ``labels``, a dev tag never seen in train.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import labels as L
from ..errors import TaskDataError, TaskRecordError

FORMATS = ("conll",)  # the record's ``format``: read the files as this whatever their extension
OUTSIDE = "O"  # the tag of a word outside every entity


def _tags(record: Any, cols: Any, i: int, value: Any) -> list[str]:
    """Row i's tags as names. An integer is a ClassLabel index (the column's names), else an index into the
    declared ``labels``."""
    column = record.label
    if value is None:
        raise TaskDataError(f"{cols.where(i, column)}: missing label")
    if not isinstance(value, (list, tuple)):
        raise TaskDataError(
            f"{cols.where(i, column)}: a list of tags expected (one per word), found {type(value).__name__} "
            f"{L.short(value)}"
        )
    classes = cols.label_names.get(column)
    out = []
    for j, v in enumerate(value):
        where = cols.where_word(i, j, column)
        if isinstance(v, int) and not isinstance(v, bool):
            table, what = (classes, "ClassLabel") if classes is not None else (record.labels, "'labels'")
            if table is None:
                raise TaskDataError(f"{where}: integer tag {v}: name the tags with 'labels:' (index → tag)")
            if v == -1 and classes is not None:
                raise TaskDataError(f"{where}: missing tag (ClassLabel -1: an unlabelled word)")
            if not 0 <= v < len(table):
                raise TaskDataError(f"{where}: tag index {v} is out of range ({what}: 0 to {len(table) - 1})")
            out.append(table[v])
        elif isinstance(v, str):
            if not v.strip():
                raise TaskDataError(f"{where}: empty tag")
            out.append(v.strip())
        else:
            raise TaskDataError(f"{where}: a tag is a string or an integer, found {type(v).__name__} {L.short(v)}")
    return out


def _percentiles(lengths: Sequence[int]) -> dict:
    import math

    import numpy as np

    if not len(lengths):
        return {"p50": 0, "p95": 0, "max": 0}
    y = np.asarray(lengths)
    return {
        "p50": int(math.ceil(np.percentile(y, 50))),
        "p95": int(math.ceil(np.percentile(y, 95))),
        "max": int(y.max()),
    }


def entity_counts(rows_of_tags: Sequence[Sequence[str]]) -> dict[str, int]:
    """Entities per type, as seqeval chunks the tags (its default mode: ``get_entities``), most frequent first."""
    import warnings
    from collections import Counter

    from seqeval.metrics.sequence_labeling import get_entities

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "X seems not to be NE tag": plain tags are chunked as seqeval scores them
        found = Counter(kind for row in rows_of_tags for kind, _, _ in get_entities(list(row)))
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))


class TokenRows:
    """The ``Kind`` methods of a kind with one tag per word, on the rows' side (see the module's docstring)."""

    fields = ("labels", "format")
    field_notes = {"format": "tokens tasks (format: conll reads a CoNLL column file of any extension)"}
    per_word = True

    def check(self, record: Any, where: str) -> None:
        L.check_label_set(record, where)
        if len(record.text) != 1:
            raise TaskRecordError(f"{where}: 'text' is one column of words (a tagging task has no text pair)")
        if record.format is not None and record.format not in FORMATS:
            raise TaskRecordError(
                f"{where}: 'format' is {' or '.join(FORMATS)} (a CoNLL column file of another extension), "
                f"got {record.format!r}"
            )

    # --- the tag set ---------------------------------------------------------------------------------

    def label_names(self, record: Any, cols: Any = None) -> tuple[str, ...]:
        """Declared ``labels``, else the label column's ClassLabel names, else the sorted distinct training tags
        with "O" first (``cols``: the training file's tag column at least, read by ``tasks.rows``)."""
        if record.labels is not None:
            return tuple(record.labels)
        if record.label in cols.label_names:
            return cols.label_names[record.label]
        seen: set[str] = set()
        for i, value in enumerate(cols.values[record.label]):
            seen.update(_tags(record, cols, i, value))
        if len(seen) < 2:
            raise TaskDataError(
                f"{cols.path}, {cols.column(record.label)}: fewer than two tags "
                f"({', '.join(map(repr, sorted(seen))) or 'none'})"
            )
        ordered = L.sorted_labels(seen)
        return tuple(sorted(ordered, key=lambda t: t != OUTSIDE))  # "O" first, the rest in their order

    def targets(self, record: Any, cols: Any, names: tuple[str, ...], split: str) -> list:
        """Each row's tag indices in ``names``, one per word."""
        column, text = record.label, record.text[0]
        index = {n: k for k, n in enumerate(names)}
        out = []
        for i, value in enumerate(cols.values[column]):
            tags = _tags(record, cols, i, value)
            words = cols.values[text][i]
            if len(tags) != len(words):
                raise TaskDataError(
                    f"{cols.where(i, column)}: {len(tags)} tag{'s' * (len(tags) != 1)} for {len(words)} "
                    f"word{'s' * (len(words) != 1)} (column {text!r}): one tag per word"
                )
            for j, t in enumerate(tags):
                if t not in index:
                    what = (
                        "never seen in train"
                        if split == "dev" and record.labels is None
                        else f"not one of {', '.join(names)}"
                    )
                    raise TaskDataError(f"{cols.where_word(i, j, column)}: tag {t!r} {what}")
            out.append([index[t] for t in tags])
        return out

    def label_array(self, labels: Sequence[Any], num_labels: int):
        """One int64 array of tag indices per row (a 1-d object array of them: rows differ in length)."""
        import numpy as np

        out = np.empty(len(labels), dtype=object)
        for i, row in enumerate(labels):
            out[i] = np.asarray(row, dtype=np.int64)
        return out

    # --- the profile ---------------------------------------------------------------------------------

    def distribution(self, train_y: Any, dev_ys: Mapping[str, Any], names: Sequence[str]) -> tuple[dict, dict]:
        """Per split: sentences, words per sentence (p50 / p95 / max, total), entities per type as seqeval chunks
        them, and the share of words tagged "O"."""

        def stats(rows: Sequence[Any]) -> dict:
            tags = [[names[k] for k in row] for row in rows]
            words = sum(len(t) for t in tags)
            outside = sum(t == OUTSIDE for row in tags for t in row)
            return {
                "sentences": len(tags),
                "words": words,
                "words_per_sentence": _percentiles([len(t) for t in tags]),
                "entities": entity_counts(tags),
                "o_share": outside / words if words else 0.0,
            }

        return stats(list(train_y)), stats([row for y in dev_ys.values() for row in y])

    def profile_lines(self, profile: dict, table) -> list[str]:
        dist = profile["distribution"]
        types = list(dict.fromkeys([*dist["train"]["entities"], *dist["dev"]["entities"]]))
        rows = [[t, *(f"{dist[s]['entities'].get(t, 0):,}" for s in ("train", "dev"))] for t in types]
        lines = table(["entities", "train", "dev"], rows or [["(none)", "0", "0"]])
        for s in ("train", "dev"):
            d, w = dist[s], dist[s]["words_per_sentence"]
            lines.append(
                f"  {s}: {d['sentences']:,} sentences · {d['words']:,} words · words per sentence p50 {w['p50']} · "
                f"p95 {w['p95']} · max {w['max']} · 'O' on {100 * d['o_share']:.1f} % of words"
            )
        return lines

    def baseline_text(self, profile: dict) -> str:
        return "all O (entity F1 0)"

    def chart(self, profile: dict) -> dict:
        """The entities of each type (seqeval's chunks), train and dev: each type's share of its split's entities,
        the counts ``pals-tasks``' entity table prints."""
        dist = profile["distribution"]
        types = list(dict.fromkeys([*dist["train"]["entities"], *dist["dev"]["entities"]]))
        counts = {s: {t: int(dist[s]["entities"].get(t, 0)) for t in types} for s in ("train", "dev")}
        return {"counts": counts, "of": {s: sum(c.values()) for s, c in counts.items()}, "unit": "entities"}

    def distribution_text(self, profile: dict) -> str:
        """Train and dev as ``pals-tasks`` prints them (sentences, words, words per sentence, the share tagged "O");
        the entities per type are charted (``chart``)."""
        parts = []
        for s in ("train", "dev"):
            d = profile["distribution"][s]
            w = d["words_per_sentence"]
            parts.append(
                f"{s}: {d['sentences']:,} sentences · {d['words']:,} words · words per sentence p50 {w['p50']} · "
                f"p95 {w['p95']} · max {w['max']} · 'O' on {100 * d['o_share']:.1f}% of words"
            )
        text = f"**{profile['name']}** (one tag per word) — " + "; ".join(parts)
        tokens = profile.get("tokens") or {}
        if tokens.get("rows_windowed"):
            text += (
                f" · {tokens['rows_windowed']:,} sentences longer than n = {tokens['max_len']} read in overlapping "
                f"windows (stride {tokens['stride']}; the longest in {tokens['windows_max']}): no word cut"
            )
        return text
