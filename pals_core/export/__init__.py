"""A trained run handed over: ONNX for every design (``onnx.py``), peft adapters and merged transformers folders for
the designs peft can express (``peft.py``), each of those task folders with a model card giving the pipeline call
that reproduces ``pals-predict`` (``cards.py``) and the base named as its checkpoint names itself (``origin.py``); the
command ``pals-export`` is ``pals_core/cli/export.py``."""

from __future__ import annotations

from ..data.words import words_tokenizer
from ..kinds import get_kind


class ExportRefused(ValueError):
    """A format that cannot express this run's design (the message gives the reason and names a format that can)."""


class ExportFailed(RuntimeError):
    """torch could not trace the design, or a written export's outputs differ from the run's (not the user's input:
    ``pals-export`` exits 1)."""


def save_tokenizer(info, folder, task: str | None = None) -> None:
    """The run's tokenizer (``info``: a ``RunInfo``) saved to ``folder`` with ``model_max_length`` = the run's max
    length, so that its defaults (``truncation=True``) give the run's rows. For a folder of one ``task`` whose rows
    are words (``Kind.per_word``): the tokenizer as it reads words (``data.words.words_tokenizer``: each word's start
    marked, ``add_prefix_space=True`` written for a byte-level BPE one), so that ``AutoTokenizer`` and the
    token-classification pipeline read them as the run did."""
    tokenizer = info.tokenizer()
    if task is not None and get_kind(info.records[task].kind).per_word:
        tokenizer = words_tokenizer(tokenizer)
    kept = tokenizer.model_max_length
    tokenizer.model_max_length = info.max_len
    try:
        tokenizer.save_pretrained(str(folder))
    finally:
        tokenizer.model_max_length = kept
