"""An answer out of a question's start and end logits, as transformers' question-answering example decodes them
(``examples/pytorch/question-answering/utils_qa.py:postprocess_qa_predictions``; pure Python and numpy).

A question is read in one or more windows of its context (``pals_core/data/windows.py``); per window, every token's
start and end logit and its character offsets in the context ((-1, -1) for a token outside it: the question, the
special tokens). For each window: the ``n_best`` highest start logits and the ``n_best`` highest end logits
(``np.argsort``, highest first); each (start, end) pair is a candidate when both tokens lie in the context, end ≥
start and the answer spans at most ``max_answer_length`` tokens; its score is start logit + end logit, its text the
context from the start token's first character to the end token's last. With unanswerable questions (SQuAD v2) the
"no answer" candidate scores the first token's start + end logit, the lowest such score over the windows. The
candidates sorted by score (highest first, stable), the first ``n_best`` kept (and "no answer" added back when it
fell off); their softmax over the scores is each one's probability. SQuAD v1 answers the best candidate (an empty
answer scored 0 when there is none); v2 answers "" when the no-answer score exceeds the best non-empty candidate's by
more than ``null_threshold`` (``null_score_diff_threshold``, 0), else that candidate. When no candidate qualifies,
run_qa answers its placeholder, the text "empty" scored 0 (``EMPTY``; character start and end -1), and so do we.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

N_BEST = 20  # candidates kept per side and in the end (run_qa's --n_best_size)
MAX_ANSWER_TOKENS = 30  # run_qa's --max_answer_length
NULL_THRESHOLD = 0.0  # run_qa's --null_score_diff_threshold
OUTSIDE = (-1, -1)  # the offsets of a token outside the context
EMPTY = "empty"  # run_qa's answer when no candidate qualifies (and no "no answer" either)


@dataclass(frozen=True)
class Window:
    """One window of a question: per token (the window's real tokens, padding excluded) its start and end logits and
    its character [start, stop) in the context, ``OUTSIDE`` for a token off the context."""

    start_logits: np.ndarray
    end_logits: np.ndarray
    offsets: np.ndarray  # (tokens, 2) int


@dataclass(frozen=True)
class Question:
    """What decoding a question needs: its context and the windows it was read in (``decode``'s logits of a row)."""

    context: str
    windows: tuple[Window, ...]


@dataclass(frozen=True)
class Answer:
    """A decoded answer: its text, its character [start, end) in the context ((-1, -1) for "" — no answer — and for
    ``EMPTY``), its probability among the n-best (softmax over their scores) and its score (start + end logit)."""

    text: str
    start: int
    end: int
    prob: float
    score: float


def decode_answer(
    context: str,
    windows: Sequence[Window],
    unanswerable: bool = False,
    n_best: int = N_BEST,
    max_answer_length: int = MAX_ANSWER_TOKENS,
    null_threshold: float = NULL_THRESHOLD,
) -> Answer:
    """The answer of one question (see the module's docstring). ``unanswerable``: SQuAD v2 (an empty answer may win)."""
    import numpy as np

    null_score = null = None
    candidates: list[tuple] = []  # (score, char start, char end, start logit, end logit); start -1: no answer
    for w in windows:
        starts, ends = np.asarray(w.start_logits), np.asarray(w.end_logits)  # their dtype: the sums as run_qa's
        offsets = np.asarray(w.offsets, dtype=np.int64).reshape(-1, 2)
        if len(starts) == 0:
            continue
        score = starts[0] + ends[0]
        if null_score is None or null_score > score:
            null_score, null = score, (score, -1, -1, starts[0], ends[0])
        inside = offsets[:, 0] >= 0
        for s in np.argsort(starts)[-1 : -n_best - 1 : -1]:
            for e in np.argsort(ends)[-1 : -n_best - 1 : -1]:
                if not inside[s] or not inside[e] or e < s or e - s + 1 > max_answer_length:
                    continue
                candidates.append((starts[s] + ends[e], int(offsets[s, 0]), int(offsets[e, 1]), starts[s], ends[e]))
    allowed = unanswerable and null_score is not None
    if allowed:
        candidates.append(null)
    ranked = sorted(candidates, key=lambda c: c[0], reverse=True)[:n_best]
    if allowed and not any(c[1] < 0 for c in ranked):
        ranked.append(null)
    texts = [context[c[1] : c[2]] if c[1] >= 0 else "" for c in ranked]
    if not ranked or (len(ranked) == 1 and texts[0] == ""):
        ranked.insert(
            0, (0.0, -1, -1, 0.0, 0.0)
        )  # run_qa's placeholder when no span qualifies: the text "empty", scored 0
        texts.insert(0, EMPTY)
    scores = np.array([c[0] for c in ranked])
    probs = np.exp(scores - np.max(scores))
    probs = probs / probs.sum()
    pick = 0
    if allowed:
        pick = next(i for i, t in enumerate(texts) if t != "")  # the best non-empty candidate
        if null_score - ranked[pick][3] - ranked[pick][4] > null_threshold:
            pick = next(i for i, c in enumerate(ranked) if c[1] < 0 and texts[i] == "")
    score, a, b = ranked[pick][:3]
    return Answer(texts[pick], int(a), int(b), float(probs[pick]), float(score))


__all__ = ["EMPTY", "MAX_ANSWER_TOKENS", "N_BEST", "NULL_THRESHOLD", "Answer", "Question", "Window", "decode_answer"]
