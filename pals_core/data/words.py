"""Rows of words (a kind of one label per word, ``Kind.per_word``): tokenised as the model learned words, read in
windows, every word checked to have a sub-token.

**Word starts.** A tokenizer that marks where a word starts — byte-level BPE's "Ġ" (RoBERTa, GPT-2, ModernBERT),
SentencePiece's "▁" (ALBERT, XLM-R, DeBERTa-v2) — saw every word but a text's first one after a space in
pretraining. Given words one by one (``is_split_into_words``) it must be told to mark each one's start:
``words_tokenizer`` turns every ``ByteLevel`` pre-tokenizer's ``add_prefix_space`` on and every ``Metaspace``'s
``prepend_scheme`` to "always" (what ``add_prefix_space=True`` does for the classes that take it, and what
transformers' run_ner example asks for), and records ``add_prefix_space=True`` in the tokenizer's settings so that
``save_pretrained`` writes it (``tokenizer.json`` and ``tokenizer_config.json``) and ``AutoTokenizer`` reloads it. A
WordPiece tokenizer (BERT, ELECTRA, MPNet) marks continuations ("##") instead: it is used as it is. Training,
evaluation, ``pals-predict``, the profile and the exports all go through ``word_sequences`` / ``words_tokenizer``.

**A word's tokens.** Per token, the word it starts (``first_subtokens``: a word's first sub-token carries its tag, as
in transformers' token-classification example). A sentence longer than ``max_len`` is read in the overlapping
windows of ``windows.py`` (``stride`` tokens shared), a word's tag trains on its first sub-token in every window
that holds it, and a word is predicted from the one window that reads it with the most context; ``stride`` None cuts
the sentence at ``max_len`` instead (its later words get no prediction: "cut").

**A word with no sub-token.** A word the tokenizer reduces to nothing (BERT's normaliser drops U+200B, U+00AD, U+FFFD,
DEL and, lower-casing, a lone combining mark) can carry no tag: a training or dev file holding one is refused with
one line naming file, line and word (``check_words``: ``pals-train``, ``pals-tasks``, the explorer's profile);
``pals-predict`` tags it with the baseline's tag and counts it apart from the words cut by a max length.
"""

from __future__ import annotations

import copy
import json
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..kinds.errors import TaskDataError
from .windows import count_windows, max_context, window_positions

_WORDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer → its words tokenizer (made once)


def first_subtokens(word_ids: Sequence[int | None]) -> list[int]:
    """Per token: the index of the word it starts (the first sub-token of a word carries the word's tag, as in the
    transformers token-classification example), -1 for a special token or a later sub-token of a word."""
    out, previous = [], None
    for w in word_ids:
        out.append(w if (w is not None and w != previous) else -1)
        previous = w
    return out


def _mark_starts(node: Any) -> bool:
    """Turn on the word-start marker everywhere in a tokenizers component's JSON (in place); whether it changed."""
    changed = False
    if isinstance(node, dict):
        kind = node.get("type")
        if kind in ("ByteLevel", "RobertaProcessing") and node.get("add_prefix_space") is False:
            node["add_prefix_space"], changed = True, True
        if kind == "Metaspace" and node.get("prepend_scheme") not in (None, "always"):
            node["prepend_scheme"], changed = "always", True
        for value in node.values():
            changed = _mark_starts(value) or changed
    elif isinstance(node, list):
        for value in node:
            changed = _mark_starts(value) or changed
    return changed


def words_tokenizer(tokenizer):
    """``tokenizer`` as it reads a row of words: each word's start marked where the tokenizer marks word starts (the
    module docstring), else ``tokenizer`` itself. Made once per tokenizer (a copy: the original, which reads the
    sentence tasks' texts as they are, is left as it was)."""
    if tokenizer in _WORDS:
        return _WORDS[tokenizer]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    out = tokenizer
    if backend is not None:
        from tokenizers import Tokenizer

        spec = json.loads(backend.to_str())
        parts = [p for p in ("pre_tokenizer", "post_processor", "decoder") if spec.get(p) is not None]
        if spec.get("pre_tokenizer") is not None and _mark_starts(spec["pre_tokenizer"]):
            for p in parts:  # the offsets' trimming and the decoding told too, as add_prefix_space=True tells them
                _mark_starts(spec[p])
            marked = Tokenizer.from_str(json.dumps(spec))
            out = copy.deepcopy(tokenizer)
            for p in parts:
                setattr(out.backend_tokenizer, p, getattr(marked, p))
            out.add_prefix_space = True
            out.init_kwargs["add_prefix_space"] = True
    _WORDS[tokenizer] = out
    return out


def marks_word_starts(tokenizer) -> bool:
    """Whether ``words_tokenizer`` changes how ``tokenizer`` reads words (its word-start marker was off)."""
    return words_tokenizer(tokenizer) is not tokenizer


def word_sequences(tokenizer, max_len: int, rows: Sequence[Sequence[str]], stride: int | None) -> dict:
    """The sequences a model reads for rows of words: {"input_ids", "token_type_ids", "row", "firsts", "starts"}, one
    entry per sequence — a row that fits in ``max_len`` tokens is one, a longer one one per window (``stride``: the
    tokens consecutive windows share) or, ``stride`` None, one cut at ``max_len``. ``row``: the row it reads;
    ``firsts``: per token, the word it starts, else -1 (where the word's tag trains); ``starts``: the same, kept only
    in the window that reads the word with the most context (where the word is predicted from; every word with a
    sub-token has exactly one)."""
    from transformers.utils import logging as hf_logging

    tok = words_tokenizer(tokenizer)
    words = [list(r) for r in rows]
    out: dict[str, list] = {"input_ids": [], "token_type_ids": [], "row": [], "firsts": [], "starts": []}
    if not words:
        return out
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "longer than the specified maximum sequence length": read in windows here
    try:
        enc = tok(
            words,
            is_split_into_words=True,
            truncation=stride is None,
            max_length=max_len if stride is None else None,
            return_token_type_ids=True,
            return_attention_mask=False,
        )
    finally:
        hf_logging.set_verbosity(verbosity)
    for i in range(len(words)):
        ids, types = enc["input_ids"][i], enc["token_type_ids"][i]
        word_ids = enc.word_ids(i)
        firsts = np.asarray(first_subtokens(word_ids), dtype=np.int64)
        held = [k for k, w in enumerate(word_ids) if w is not None]
        content = (held[0], held[-1] + 1) if held else (0, 0)
        if stride is None:
            positions, owner = [np.arange(len(ids))], None
        else:
            positions, cut = window_positions(len(ids), content, max_len, stride)
            owner = max_context(cut) if len(positions) > 1 else None
        for k, pos in enumerate(positions):
            f = firsts[pos]
            s = f.copy()
            if owner is not None:
                inside = (pos >= content[0]) & (pos < content[1])
                mine = np.zeros(len(pos), dtype=bool)
                mine[inside] = owner[pos[inside] - content[0]] == k
                s[~mine] = -1
            out["input_ids"].append([ids[p] for p in pos])
            out["token_type_ids"].append([types[p] for p in pos])
            out["row"].append(i)
            out["firsts"].append(f.tolist())
            out["starts"].append(s.tolist())
    return out


def read_plan(tokenizer, rows: Sequence[Sequence[str]], max_len: int, stride: int, batch: int = 1000) -> dict:
    """How rows of words are read at ``max_len`` (the profile's figures): per row "tokens" (untruncated, special tokens
    included), "windows" (read in windows sharing ``stride`` tokens; 1 when it fits) and "cut" (the words a cut at
    ``max_len`` — ``--truncate`` — would leave without a sub-token); "fixed": the special tokens every window repeats."""
    from transformers.utils import logging as hf_logging

    tok = words_tokenizer(tokenizer)
    fixed = tok.num_special_tokens_to_add(pair=False)
    tokens, windows, cut = [], [], []
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "longer than the specified maximum sequence length" is the point here
    try:
        for start in range(0, len(rows), batch):
            part = [list(r) for r in rows[start : start + batch]]
            enc = tok(part, is_split_into_words=True, return_attention_mask=False, return_token_type_ids=False)
            for i in range(len(part)):
                word_ids = enc.word_ids(i)
                n = len(word_ids)
                held = [k for k, w in enumerate(word_ids) if w is not None]
                prefix = held[0] if held else 0
                room = max_len - fixed  # the content a cut keeps: tokens [prefix, prefix + room)
                kept = {w for k, w in enumerate(word_ids) if w is not None and k < prefix + room}
                tokens.append(n)
                windows.append(count_windows(n, fixed, max_len, stride))
                cut.append(len({w for w in word_ids if w is not None} - kept))
    finally:
        hf_logging.set_verbosity(verbosity)
    return {
        "tokens": np.asarray(tokens, np.int64),
        "windows": np.asarray(windows, np.int64),
        "cut": cut,
        "fixed": fixed,
    }


def empty_words(tokenizer, rows: Iterable[Sequence[str]]) -> list[tuple[int, int]]:
    """(row, word) of every word ``tokenizer`` (as it reads words) reduces to nothing: no sub-token, so no tag."""
    rows = [list(r) for r in rows]
    distinct = sorted({w for r in rows for w in r})
    if not distinct:
        return []
    tok = words_tokenizer(tokenizer)
    ids = tok([[w] for w in distinct], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    empty = {w for w, got in zip(distinct, ids) if not got}
    return [(i, j) for i, r in enumerate(rows) for j, w in enumerate(r) if w in empty] if empty else []


def check_words(tokenizer, rows: Sequence[Sequence[str]], where) -> None:
    """``TaskDataError`` naming the first word ``tokenizer`` reduces to nothing (``where(i, j)``: its file, line /
    row and column), its characters and what to do; nothing when every word keeps a sub-token."""
    found = empty_words(tokenizer, rows)
    if found:
        i, j = found[0]
        word = rows[i][j]
        codes = " ".join(f"U+{ord(c):04X}" for c in word)
        more = f" ({len(found) - 1} more in this file)" if len(found) > 1 else ""
        place = where(i, j) if where is not None else f"row {i + 1}, word {j + 1}"
        raise TaskDataError(
            f"{place}: word {word!r} ({codes}) has no sub-token in the model's tokenizer (it reduces the word "
            f"to nothing, so no tag can be learned or predicted for it): remove or replace it{more}"
        )


__all__ = [
    "check_words",
    "empty_words",
    "first_subtokens",
    "marks_word_starts",
    "read_plan",
    "word_sequences",
    "words_tokenizer",
]
