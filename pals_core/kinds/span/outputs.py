"""Extractive question answering, the model side (pure Python: numpy at most, never torch).

Head: ``AutoModelForQuestionAnswering``'s — ``qa_outputs`` Linear(d, 2) on every token (ModernBERT: its prediction
head + classifier), which is the family's token head (``Family.token_head_params``) with C = 2 outputs: the start
and the end logit. So its FLOPs are n × the per-token count and its logits B·n·2 floats. Training: cross-entropy of
the start and of the end position, averaged (``module.py``, transformers' loss). Decoding: ``decoding.decode_answer``
(transformers' question-answering example). Metrics: ``f1`` (main) and ``exact_match``, as the official SQuAD
scripts compute them (``squad.py``: v1.1's when every scored question has an answer, else v2.0's). Baseline: no
answer to any question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import OUTPUTS_AXIS, TaskOutputs
from .card import decoding_code
from .decoding import Question, Window, decode_answer
from .squad import v1_scores, v2_scores

OUTPUTS = 2  # a start and an end logit per token


def _texts(gold: Any) -> list[str]:
    """A question's gold answer texts out of (text, start) pairs or texts."""
    return [a if isinstance(a, str) else a[0] for a in gold]


def squad_scores(predictions: Sequence[str], golds: Sequence[Any]) -> dict[str, float]:
    """``exact_match`` and ``f1`` (fractions) by SQuAD v1.1's script when every question has an answer, else by
    v2.0's (its ``exact`` is the exact match)."""
    texts = [_texts(g) for g in golds]
    if all(texts):
        return v1_scores(predictions, texts)
    got = v2_scores(predictions, texts)
    return {"exact_match": got["exact"], "f1": got["f1"]}


class SpanOutputs:
    """``Kind`` methods of an extractive-QA task's head and outputs (a mixin: ``class Span(SpanOutputs, Kind)``)."""

    span_head = True  # AutoModelForQuestionAnswering's head: the model builds it with Trunk.new_span_head
    entropy_sampling: str | None = "start_end"  # MT-Uncertainty: a window's start and end distributions' entropies
    peft_task_type: str | None = "QUESTION_ANS"
    hf_head = "QuestionAnswering"
    problem_type = ""  # transformers' ForQuestionAnswering reads none

    # --- the head ------------------------------------------------------------------------------------

    def num_outputs(self, names: Sequence[str]) -> int:
        return OUTPUTS

    def head_params(self, family: Any, m: Any, num_labels: int, paper: bool) -> int:
        """The family's token head with 2 outputs (``qa_outputs``), the same weights on every token."""
        return family.token_head_params(m, OUTPUTS, paper)

    def head_flops(self, family: Any, m: Any, num_labels: int, seq: int) -> int:
        """The head on each of the ``seq`` tokens: seq × ``Family.token_head_flops`` with 2 outputs."""
        return seq * family.token_head_flops(m, OUTPUTS)

    def logits_floats(self, batch: int, seq: int, num_labels: int) -> int:
        """A start and an end logit per token: batch · n · 2."""
        return batch * seq * OUTPUTS

    output_axes = ("batch", "sequence", OUTPUTS_AXIS)  # each token's start and end logit

    def export_refusal(self, fmt: str) -> str | None:
        """The hf and peft exports are written (``AutoModelForQuestionAnswering``, peft ``QUESTION_ANS``; the card
        gives the decoding); the ONNX graph is not yet: refused in one line rather than written untested."""
        return None

    output_names = ("start", "end")  # the head's two outputs (an exported config's id2label)
    pipeline_task = "question-answering"  # the hub's pipeline tag; the card gives the decoding (``card_code``)
    pipeline_reading = (
        "`answer(question, context)`: the answer text, its character start and end in the context and its "
        "probability — pals-predict's `{task}`, `{task}_start`, `{task}_end` and `{task}_prob`"
    )

    def card_code(self, folder: str, max_len: int, stride: int, scale: dict | None, load: str | None = None) -> str:
        """The export card's Python that reproduces ``pals-predict``'s answers (``card.decoding_code``; transformers
        5 has no question-answering pipeline): the export at ``folder``, the run's ``max_len``, stride and ``scale``;
        ``load``: the lines making ``tokenizer`` and ``model`` (None: a merged folder's)."""
        return decoding_code(folder, max_len, stride, bool((scale or {}).get("unanswerable", False)), load)

    # --- the outputs ---------------------------------------------------------------------------------

    def window(self, logits: Any, chars: Any) -> Window:
        """One window's ``decoding.Window``: its (tokens, 2) start and end logits over its real tokens and their
        characters in the context."""
        import numpy as np

        z = np.asarray(logits)
        return Window(z[:, 0], z[:, 1], np.asarray(chars, dtype=np.int64).reshape(-1, 2))

    def window_logits(self, questions: Any):
        """Every start and end logit of ``questions`` (``decode``'s kept ``Question``s), joined in one float array."""
        import numpy as np

        parts = [np.stack([w.start_logits, w.end_logits], -1).reshape(-1) for q in questions for w in q.windows]
        return np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)

    def question(self, context: str, windows: Sequence[Window]) -> Question:
        """What decoding one question reads: its context and its windows, in order."""
        return Question(context, tuple(windows))

    def questions(self, data: Any, windows: Mapping[int, Window]):
        """Per row of ``data`` (an ``Encoded`` of windows) its ``Question``: its context and its windows, in order
        (``windows``: each sequence's ``Window``); a 1-d object array, what ``unscale`` decodes."""
        import numpy as np

        per_row: list[list] = [[] for _ in range(data.rows)]
        for seq in range(len(data)):
            per_row[int(data.row_of[seq])].append(windows[seq])
        out = np.empty(data.rows, dtype=object)
        out[:] = [self.question(c, w) for c, w in zip(data.contexts, per_row)]
        return out

    def unscale(self, preds: Any, scale: dict | None) -> Any:
        """The dev metrics' predictions: each question (``questions``) decoded to its answer text, "no answer" a
        prediction where the run's ``scale`` says the train rows hold unanswerable questions."""
        return self.decode("", (), preds, keep=False, scale=scale).label

    def decode(self, task: str, names: Sequence[str], logits: Any, keep: bool = True, scale: dict | None = None):
        """``logits``: one ``decoding.Question`` per row (its context and its windows' start/end logits and offsets).
        ``label``: each row's answer text ("" for no answer); ``prob``: its probability among the n-best; ``spans``:
        its character [start, end) in the context (-1, -1 for none). ``scale``: the run's (``scale``) — whether
        "no answer" may be predicted."""
        import numpy as np

        unanswerable = bool((scale or {}).get("unanswerable", False))
        answers = [decode_answer(q.context, q.windows, unanswerable) for q in logits]
        kept = None
        if keep:
            kept = np.empty(len(answers), dtype=object)
            kept[:] = [q if isinstance(q, Question) else Question(*q) for q in logits]
        return TaskOutputs(
            task,
            self.name,
            (),
            [a.text for a in answers],
            np.array([a.prob for a in answers], dtype=np.float64),
            None,
            kept,
            spans=np.array([(a.start, a.end) for a in answers], dtype=np.int64).reshape(-1, 2),
        )

    def columns(self, probs: bool) -> list[str]:
        """The answer text (``<task>``), its probability (``<task>_prob``) and its character start and end."""
        return ["label", "prob", "spans"]

    def scores(self, record: Any, preds: Any, labels: Any, metrics: Sequence[str], num_labels: int) -> dict:
        """The official SQuAD scores (``squad_scores``) of the predicted answer texts against each question's gold
        answers."""
        got = squad_scores(list(preds), list(labels))
        out = {}
        for m in metrics:
            if m not in got:
                raise ValueError(f"unknown question-answering metric {m!r}")
            out[m] = float(got[m])
        return out

    def baseline(self, train_labels: Any, dev_labels: Mapping[str, Any], num_labels: int | None) -> tuple:
        """No answer ("") to every dev question."""
        return {s: [""] * len(y) for s, y in dev_labels.items()}, OUTPUTS


__all__ = ["OUTPUTS", "SpanOutputs", "squad_scores"]
