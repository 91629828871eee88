"""Exact match and F1 as the official SQuAD evaluation scripts compute them (pure Python).

``normalize_answer``: lower case, drop every ``string.punctuation`` character, replace the articles a / an / the
(whole words) by a space, collapse whitespace — both scripts alike. A prediction's exact match and F1 are the best
over the question's gold answers (``metric_max_over_ground_truths``).

* SQuAD v1.1 (``evaluate-v1.1.py``): every question has answers; F1 of bag-of-words overlap of the normalised
  tokens, 0 when none is shared (an empty prediction scores 0). ``v1_scores``.
* SQuAD v2.0 (``evaluate-v2.0.py``): a gold answer that normalises to "" is dropped, and a question left without one
  is unanswerable — its only right answer is "" (``[""]``); when either side has no tokens, F1 = exact = whether both
  have none. ``na_probs`` (each question's no-answer probability, default 0) over ``na_prob_thresh`` (default 1.0)
  turns the prediction into "no answer" (``apply_no_ans_threshold``); the ``HasAns_`` / ``NoAns_`` scores split the
  questions by whether they have an answer, and ``best_exact`` / ``best_f1`` (with their thresholds) are the scores
  at the best such threshold (``find_best_thresh``). ``v2_scores``.

Scores here are fractions (the scripts print ×100).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace (both official scripts)."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def _tokens(s: str) -> list[str]:
    return normalize_answer(s).split() if s else []


def exact_v1(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_v1(prediction: str, gold: str) -> float:
    """v1.1's ``f1_score``: harmonic mean of token precision and recall; 0 when no token is shared."""
    pred, true = normalize_answer(prediction).split(), normalize_answer(gold).split()
    same = sum((Counter(pred) & Counter(true)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(true)
    return 2 * precision * recall / (precision + recall)


def exact_v2(gold: str, prediction: str) -> float:
    return float(normalize_answer(gold) == normalize_answer(prediction))


def f1_v2(gold: str, prediction: str) -> float:
    """v2.0's ``compute_f1``: as v1.1's, but when either side has no tokens, 1 if both have none, else 0."""
    true, pred = _tokens(gold), _tokens(prediction)
    if not true or not pred:
        return float(true == pred)
    same = sum((Counter(true) & Counter(pred)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(true)
    return 2 * precision * recall / (precision + recall)


def _check(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> None:
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} questions")
    if not golds:
        raise ValueError("no examples to score")


def v1_scores(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> dict[str, float]:
    """``exact_match`` and ``f1`` as SQuAD v1.1's script: the mean over questions of the best over their answers."""
    _check(predictions, golds)
    for i, g in enumerate(golds):
        if not g:
            raise ValueError(f"question {i + 1} has no gold answer (SQuAD v1.1 scores answerable questions only)")
    em = sum(max(exact_v1(p, a) for a in g) for p, g in zip(predictions, golds))
    f1 = sum(max(f1_v1(p, a) for a in g) for p, g in zip(predictions, golds))
    return {"exact_match": em / len(golds), "f1": f1 / len(golds)}


def _best(scores: list[float], preds: Sequence[str], na: Sequence[float], has: Sequence[bool]) -> tuple[float, float]:
    """v2.0's ``find_best_thresh``: the questions by rising no-answer probability; below a threshold a question keeps
    its score, above it counts as "no answer" (right for the unanswerable); the best total and its threshold."""
    current = best = sum(not h for h in has)
    thresh = 0.0
    for i in sorted(range(len(na)), key=lambda k: na[k]):
        diff = scores[i] if has[i] else (-1 if preds[i] else 0)
        current += diff
        if current > best:
            best, thresh = current, na[i]
    return best / len(scores), float(thresh)


def v2_scores(
    predictions: Sequence[str],
    golds: Sequence[Sequence[str]],
    na_probs: Sequence[float] | None = None,
    na_prob_thresh: float = 1.0,
) -> dict[str, float]:
    """SQuAD v2.0's script: ``exact`` and ``f1`` after the no-answer threshold, the same over the questions with an
    answer (``HasAns_``) and without (``NoAns_``; absent when there are none), and ``best_exact`` / ``best_f1`` with
    their thresholds. A question's gold answers are its texts; none (or only empty ones) means unanswerable."""
    _check(predictions, golds)
    na = [0.0] * len(golds) if na_probs is None else [float(v) for v in na_probs]
    if len(na) != len(golds):
        raise ValueError(f"{len(na)} no-answer probabilities for {len(golds)} questions")
    has = [bool(g) for g in golds]  # qid_to_has_ans: the record's answers, before normalising
    exact, f1 = [], []
    for p, g in zip(predictions, golds):
        gold = [a for a in g if normalize_answer(a)] or [""]
        exact.append(max(exact_v2(a, p) for a in gold))
        f1.append(max(f1_v2(a, p) for a in gold))
    cut = [v > na_prob_thresh for v in na]
    exact_t = [float(not h) if c else s for s, c, h in zip(exact, cut, has)]
    f1_t = [float(not h) if c else s for s, c, h in zip(f1, cut, has)]
    n = len(golds)
    out = {"exact": sum(exact_t) / n, "f1": sum(f1_t) / n, "total": n}
    for name, keep in (("HasAns", True), ("NoAns", False)):
        idx = [i for i in range(n) if has[i] == keep]
        if idx:
            out[f"{name}_exact"] = sum(exact_t[i] for i in idx) / len(idx)
            out[f"{name}_f1"] = sum(f1_t[i] for i in idx) / len(idx)
            out[f"{name}_total"] = len(idx)
    out["best_exact"], out["best_exact_thresh"] = _best(exact, predictions, na, has)
    out["best_f1"], out["best_f1_thresh"] = _best(f1, predictions, na, has)
    return out


__all__ = ["normalize_answer", "v1_scores", "v2_scores"]
