"""Multiple choice, the model side (pure Python: numpy and scikit-learn at most, never torch): one score per candidate.

Head: what the family's ``…ForMultipleChoice`` holds — its sequence head with one output (BERT, RoBERTa, MPNet,
ALBERT: the pooler, dropout, Linear(d, 1); DistilBERT, DeBERTa-v2, ModernBERT: their own dense head with one output;
ELECTRA: its sequence summary, Linear(d, d) + GELU + dropout, then Linear(d, 1)) — run on each of a row's k
(context, candidate) sequences (``Kind.sequences``: k), so a row costs k sequences through the task's path and its
logits are the k scores, B·k floats. Training: cross-entropy of the softmax over the k (``module.py``). Decoding: the
arg-max candidate, its softmax probability, and (``pals-predict``) its text. Metric: ``accuracy``. Baseline: the
position most often right in train, on every dev row. Export: ``AutoModelForMultipleChoice`` (hf; no transformers
pipeline serves multiple choice, so the model card calls it: ``pipeline_task`` None), peft's plain
``PeftModel`` over it (peft has no multiple-choice task type: ``peft_task_type`` None, the head in
``modules_to_save``), ONNX's [batch, 1]: one score per input row, a row's k candidates k consecutive input rows
(``output_axes``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import TaskOutputs, check_lengths
from ..labels import softmax


class ChoiceOutputs:
    """``Kind`` methods of a multiple-choice task's head and outputs (a mixin: ``class Choice(ChoiceOutputs, Kind)``)."""

    per_candidate = True
    peft_task_type: str | None = None  # peft has no multiple-choice task type: a plain PeftModel holds the head
    hf_head = "MultipleChoice"
    problem_type = ""  # transformers' ForMultipleChoice reads none
    entropy_sampling: str | None = "softmax"  # MT-Uncertainty: the entropy of the softmax over the k candidates
    pipeline_task = None  # transformers has no multiple-choice pipeline: the model card calls the model itself
    pipeline_reading = (
        "its k candidates' probabilities in the row's order (the softmax over their k scores): the highest is "
        "pals-predict's `{task}` (its position; `{task}_text` its candidate) and `{task}_prob`, and all k are "
        "`--probs`' `{task}_prob_<position>`"
    )

    # --- the head ------------------------------------------------------------------------------------

    def sequences(self, task: Any) -> int:
        """A row is k sequences: one per candidate (C_t = k)."""
        return int(task.num_labels)

    def head_params(self, family: Any, m: Any, num_labels: int, paper: bool) -> int:
        """The family's choice head: its sequence head with one output, whatever k (the same weights score every
        candidate)."""
        return family.head_params(m, 1, paper)

    def head_flops(self, family: Any, m: Any, num_labels: int, seq: int) -> int:
        """The head on one sequence (one candidate): the family's sequence head with one output."""
        return family.head_flops(m, 1)

    # [batch, 1]: one score per input row, each input row one candidate's sequence (a row's k candidates k consecutive
    # input rows, ``sequences_per_row`` in export.json); the batch axis is the inputs' own, the 1 fixed
    output_axes: tuple[str | int, ...] = ("batch", 1)

    # --- the outputs ---------------------------------------------------------------------------------

    def decode(self, task: str, names: Sequence[str], logits: Any, keep: bool = True, scale: dict | None = None):
        """``label``: the chosen candidate's position (its name); ``prob``: its softmax probability over the k."""
        import numpy as np

        names = tuple(names)
        logits = np.asarray(logits, dtype=np.float32).reshape(-1, len(names))
        probs = softmax(logits.astype(np.float64))
        top = logits.argmax(axis=-1)
        prob = probs[np.arange(len(top)), top]
        return TaskOutputs(
            task, self.name, names, [names[j] for j in top], prob, probs if keep else None, logits if keep else None
        )

    def columns(self, probs: bool) -> list[str]:
        """The chosen position, its candidate's text (``<task>_text``), its probability; ``--probs``: every
        candidate's."""
        return ["label", "text", "prob", "probs"] if probs else ["label", "text", "prob"]

    def scores(self, record: Any, preds: Any, labels: Any, metrics: Sequence[str], num_labels: int) -> dict:
        """Accuracy of the chosen candidates (logits (n, k) or chosen positions (n,))."""
        import numpy as np

        preds, labels = np.asarray(preds), np.asarray(labels)
        preds = preds.argmax(axis=-1) if preds.ndim == 2 else preds
        check_lengths(preds, labels)
        out: dict[str, float] = {}
        for m in metrics:
            if m != "accuracy":
                raise ValueError(f"unknown multiple-choice metric {m!r}")
            out[m] = float((preds == labels).mean())
        return out

    def baseline(self, train_labels: Any, dev_labels: Mapping[str, Any], num_labels: int | None) -> tuple:
        """The position most often right in train (the first on a tie), on every dev row."""
        import numpy as np

        k = num_labels or int(np.max(train_labels)) + 1
        top = int(np.bincount(np.asarray(train_labels, np.int64), minlength=k).argmax())
        return {s: np.full(len(y), top) for s, y in dev_labels.items()}, k


__all__ = ["ChoiceOutputs"]
