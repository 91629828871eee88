"""The code an hf export's card gives for a span task: transformers 5 has no question-answering pipeline, so the
card shows the question-answering example's decoding (``decoding.py``) written out — tokenise (question, context)
in overlapping windows (``truncation="only_second"``, the run's ``max_len`` and stride, offsets kept), run
``AutoModelForQuestionAnswering``, pick the answer. Pure Python: a string."""

from __future__ import annotations

from .decoding import MAX_ANSWER_TOKENS, N_BEST, NULL_THRESHOLD

HF_LOAD = """from transformers import AutoModelForQuestionAnswering, AutoTokenizer

folder = {folder!r}  # this folder: change it if you move it
tokenizer = AutoTokenizer.from_pretrained(folder)
model = AutoModelForQuestionAnswering.from_pretrained(folder).eval()
"""

_CODE = '''import numpy as np
import torch
{load}


def answer(question, context, max_len={max_len}, stride={stride}, unanswerable={unanswerable}, n_best={n_best},
           max_answer_length={longest}, null_threshold={null}):
    """(text, character start, character end, probability) as transformers' question-answering example decodes."""
    enc = tokenizer(question.lstrip(), context, truncation="only_second", max_length=max_len, stride=stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True, padding=True, return_tensors="pt")
    inputs = {{k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}}
    with torch.no_grad():
        out = model(**inputs)
    null, found = None, []
    for w in range(len(enc["input_ids"])):
        n = int(enc["attention_mask"][w].sum())
        starts, ends = out.start_logits[w, :n].numpy(), out.end_logits[w, :n].numpy()
        offsets = [o if s == 1 else None for o, s in zip(enc["offset_mapping"][w].tolist(), enc.sequence_ids(w))]
        if null is None or null[0] > starts[0] + ends[0]:
            null = (starts[0] + ends[0], -1, -1, starts[0], ends[0])
        for s in np.argsort(starts)[-1 : -n_best - 1 : -1]:
            for e in np.argsort(ends)[-1 : -n_best - 1 : -1]:
                if offsets[s] is None or offsets[e] is None or e < s or e - s + 1 > max_answer_length:
                    continue
                found.append((starts[s] + ends[e], offsets[s][0], offsets[e][1], starts[s], ends[e]))
    if unanswerable:
        found.append(null)
    ranked = sorted(found, key=lambda c: c[0], reverse=True)[:n_best]
    if unanswerable and not any(c[1] < 0 for c in ranked):
        ranked.append(null)
    texts = [context[c[1]:c[2]] if c[1] >= 0 else "" for c in ranked]
    if not ranked or (len(ranked) == 1 and texts[0] == ""):
        ranked.insert(0, (0.0, -1, -1, 0.0, 0.0))
        texts.insert(0, "empty")
    scores = np.array([c[0] for c in ranked])
    probs = np.exp(scores - scores.max())
    probs = probs / probs.sum()
    pick = 0
    if unanswerable:
        pick = next(i for i, t in enumerate(texts) if t != "")
        if null[0] - ranked[pick][3] - ranked[pick][4] > null_threshold:
            pick = next(i for i, c in enumerate(ranked) if c[1] < 0 and texts[i] == "")
    return texts[pick], int(ranked[pick][1]), int(ranked[pick][2]), float(probs[pick])
'''


def decoding_code(folder: str, max_len: int, stride: int, unanswerable: bool, load: str | None = None) -> str:
    """The card's Python: ``answer(question, context)`` on the export at ``folder`` with the run's ``max_len``,
    stride and whether "no answer" is a prediction (the run's ``scale``); ``pals-predict``'s answers. ``load``: the
    lines that make ``tokenizer`` and ``model`` (default ``HF_LOAD``: a merged ``AutoModelForQuestionAnswering``
    folder; a peft card loads its adapter)."""
    return _CODE.format(
        load=(HF_LOAD if load is None else load).format(folder=folder).rstrip("\n"),
        max_len=max_len,
        stride=stride,
        unanswerable=bool(unanswerable),
        n_best=N_BEST,
        longest=MAX_ANSWER_TOKENS,
        null=NULL_THRESHOLD,
    )


__all__ = ["HF_LOAD", "decoding_code"]
