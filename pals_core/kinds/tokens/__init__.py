"""Token classification (named entities, parts of speech, …): one tag per word, any tag set, BIO/IOB2 or plain tags
(pure Python; the torch part is ``module.py``). The head and outputs are ``outputs.TokenOutputs``.

Label values (this minimal reader; the rows side brings CoNLL files and ClassLabel sequences): a list of tags per row,
one per word of the row's ``text`` (a list of words). The tag order is declared (``labels``), else the sorted distinct
training tags with "O" first when present.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .. import labels as L
from ..base import Kind
from .outputs import OUTSIDE, TokenOutputs


def _row_tags(record: Any, cols: Any, i: int, value: Any) -> Optional[list[Optional[str]]]:
    value = L.class_name(cols, record.label, i, value)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise L.data_error(
            f"{cols.where(i, record.label)}: tags expected as a list, one per word, found {L.short(value)}"
        )
    return [L.label_text(v, lambda: cols.where(i, record.label), "a tagging row of a") for v in value]


class Tokens(TokenOutputs, Kind):
    name = "tokens"
    metrics = ("entity_f1", "entity_precision", "entity_recall", "token_accuracy")
    fields = ("labels",)

    def check(self, record: Any, where: str) -> None:
        L.check_label_set(record, where)

    def label_names(self, record: Any, cols: Any = None) -> tuple[str, ...]:
        names = L.read_label_names(record, cols, _row_tags, strings_at_once=False)
        if record.labels is None and OUTSIDE in names:
            names = (OUTSIDE, *(n for n in names if n != OUTSIDE))
        return names

    def targets(self, record: Any, cols: Any, names: tuple[str, ...], split: str) -> list:
        return L.label_indices(record, cols, names, split, _row_tags)

    def label_array(self, labels: Sequence[Any], num_labels: int):
        """Each row's tag indices, int64, one array per row (the words of a row are aligned to sub-tokens by
        ``data.load.encode``)."""
        import numpy as np

        out = np.empty(len(labels), dtype=object)
        out[:] = [np.asarray(row, dtype=np.int64) for row in labels]
        return out


KIND = Tokens()
