"""Extractive question answering (SQuAD v1.1 and v2.0): the answer is a span of a context (pure Python; the torch
part is ``module.py``).

The rows side — answers read from rows laid out as SQuAD and checked against their context, the positions a window
trains on, the profile's statistics — is ``rows.py:SpanRows``. The outputs side (the start/end head on every token,
its count, decoding an answer as transformers' question-answering example does, the official SQuAD scores, the
no-answer baseline, the export's axes and task type) is ``outputs.py:SpanOutputs``, with ``decoding.py`` and
``squad.py``.
"""

from __future__ import annotations

from ..base import FRACTION, Kind
from .outputs import SpanOutputs
from .rows import SpanRows


class Span(SpanRows, SpanOutputs, Kind):
    name = "span"
    metrics = {"f1": FRACTION, "exact_match": FRACTION}
    record_defaults = {"text": ("question", "context"), "label": "answers"}  # SQuAD's columns
    text_columns = (2, 2)  # a question and its context
    text_help = "two columns, the question's and the context's"


KIND = Span()
