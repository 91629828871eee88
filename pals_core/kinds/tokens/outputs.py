"""Token classification, the model side (pure Python: numpy and seqeval at most, never torch): one tag per word.

Head: the family's token head (``pricing.family.Family.token_head_params``: what ``<Family>ForTokenClassification``
holds — dropout + Linear(d, C) on every token, ModernBERT's prediction head + classifier) run on each of the n
tokens, so its FLOPs are n × the per-token count and its logits B·n·C floats. Training: cross-entropy on each word's
first sub-token (``module.py``; the rest, the special tokens and the padding carry -100). Decoding: a word's tag is
the arg-max of its first sub-token's logits (a sentence longer than ``max_len`` read in overlapping windows: the
window where the word has the most context, ``data/words.py``); a word no token predicts (one the tokenizer reduces to
nothing, or one past ``max_len`` in a run trained with ``--truncate``) gets ``fill_tag``, the baseline's tag ("O",
else the first tag), in ``pals-predict`` and in the dev scores alike. Metrics (seqeval's default
mode, as the transformers NER example): ``entity_f1`` (main), ``entity_precision``, ``entity_recall``, and
``token_accuracy`` over every word. Baseline: every word "O" (entity F1 0); a tag set without "O": its most frequent
training tag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..base import OUTPUTS_AXIS, TaskOutputs
from ..labels import softmax

OUTSIDE = "O"


def fill_index(names: Sequence[str]) -> int:
    """The tag a word without a prediction gets (no sub-token, or cut by ``--truncate``): "O", else the first tag."""
    names = tuple(names)
    return names.index(OUTSIDE) if OUTSIDE in names else 0


def _rows(values: Any) -> list:
    """Per-row tag indices out of a (n, W) array padded with -1, or a sequence of per-row sequences."""
    import numpy as np

    if isinstance(values, np.ndarray) and values.ndim == 2 and values.dtype != object:
        return [row[row >= 0] for row in values]
    return [np.asarray(row, dtype=np.int64) for row in values]


class TokenOutputs:
    """``Kind`` methods of a tagging task's head and outputs (a mixin: ``class Tokens(TokenOutputs, Kind)``)."""

    per_word = True
    peft_task_type: str | None = "TOKEN_CLS"
    hf_head = "TokenClassification"
    problem_type = ""  # transformers' ForTokenClassification reads none
    output_axes = ("batch", "sequence", OUTPUTS_AXIS)
    pipeline_task = "token-classification"
    pipeline_call_arguments = {"is_split_into_words": True}  # a row is its list of words, as pals-predict reads it
    pipeline_reading = (
        "one entity a run of words of one tag (B-/I- joined, O left out), each word tagged by its first sub-token "
        "as pals-predict tags it (`{task}`), `score` the mean of its words' probabilities; a sentence longer than "
        "the tokenizer's `model_max_length` (the run's max length) is read in the run's overlapping windows (`stride`) "
        "as pals-predict reads it — only on a word two windows share and tag differently may the two differ: the "
        "pipeline keeps the longer or better-scored of overlapping entities, pals-predict the tag of the window that "
        "gives the word the most context"
    )
    entropy_sampling: str | None = "softmax"  # MT-Uncertainty: a row's entropy is the mean of its words'

    # --- the head ------------------------------------------------------------------------------------

    def head_params(self, family: Any, m: Any, num_labels: int, paper: bool) -> int:
        """The family's token head (``Family.token_head_params``), the same weights on every token."""
        return family.token_head_params(m, num_labels, paper)

    def head_flops(self, family: Any, m: Any, num_labels: int, seq: int) -> int:
        """The token head on each of the ``seq`` tokens: seq × ``Family.token_head_flops``."""
        return seq * family.token_head_flops(m, num_labels)

    def logits_floats(self, batch: int, seq: int, num_labels: int) -> int:
        """One logits vector per token: batch · n · C."""
        return batch * seq * num_labels

    def pipeline_arguments(self, max_len: int, stride: int | None = None) -> dict[str, Any]:
        """The token-classification pipeline's settings that reproduce ``pals-predict``: each word tagged by its first
        sub-token (``aggregation_strategy="first"``; "simple" would split a word whose sub-tokens disagree), and a
        sentence longer than the exported tokenizer's ``model_max_length`` (the run's max length) read in the run's
        windows (``stride``; none when the run cut such sentences). It takes no ``max_length`` of its own; its entities
        are the run's tags grouped as transformers groups them (``entity_group`` without B-/I-; "O" words left out)."""
        return {"aggregation_strategy": "first", **({"stride": stride} if stride is not None else {})}

    # --- the outputs ---------------------------------------------------------------------------------

    def fill_index(self, names: Sequence[str]) -> int:
        return fill_index(names)

    def decode(self, task: str, names: Sequence[str], logits: Any, keep: bool = True, scale: dict | None = None):
        """``logits``: one (words, C) array per row, the logits of each word's first sub-token, a row of NaN for a
        word no token predicts (its tag: ``fill_index``, its probability NaN). ``label``: each row's list of tags;
        ``prob``: each row's array of the chosen tags' softmax probabilities."""
        import numpy as np

        names = tuple(names)
        fill = fill_index(names) if names else 0
        tags, probs_of, all_probs, all_logits = [], [], [], []
        for row in logits:
            row = np.asarray(row, dtype=np.float32).reshape(-1, len(names))
            cut = np.isnan(row).any(axis=1)
            p = softmax(np.where(cut[:, None], 0.0, row).astype(np.float64))
            top = np.where(cut, fill, row.argmax(axis=1) if len(row) else np.zeros(0, np.int64))
            chosen = p[np.arange(len(top)), top]
            chosen[cut] = np.nan
            p[cut] = np.nan
            tags.append([names[k] for k in top])
            probs_of.append(chosen)
            all_probs.append(p)
            all_logits.append(row)

        def objects(items: list) -> np.ndarray:
            out = np.empty(len(items), dtype=object)
            out[:] = items
            return out

        return TaskOutputs(
            task,
            self.name,
            names,
            tags,
            objects(probs_of),
            objects(all_probs) if keep else None,
            objects(all_logits) if keep else None,
        )

    def columns(self, probs: bool) -> list[str]:
        """The tags (a list per row; CSV/TSV: space-joined) — no per-label probability columns."""
        return ["label"]

    def joined(self, record: Any, value: list) -> str:
        """A row's tags in one CSV/TSV cell: space-joined, as the words of a CoNLL sentence."""
        return " ".join(value)

    def scores(self, record: Any, preds: Any, labels: Any, metrics: Sequence[str], num_labels: int) -> dict:
        """Entity precision / recall / F1 (seqeval, default mode) and token accuracy over every word. ``labels``: the
        gold tags per word with their names (``data.encoded.WordTags``); ``preds``: tag indices (n, W) padded with -1
        (or per-row sequences), one per gold word."""
        from seqeval.metrics import accuracy_score, f1_score, precision_score, recall_score

        labels = _unwrap(labels)
        names = tuple(labels.names)
        gold = _rows(labels.values)
        pred = _rows(preds)
        if len(pred) != len(gold):
            raise ValueError(f"{len(pred)} predictions for {len(gold)} labels")
        if not gold:
            raise ValueError("no examples to score")
        for i, (p, g) in enumerate(zip(pred, gold)):
            if len(p) != len(g):
                raise ValueError(f"row {i}: {len(p)} predicted tags for {len(g)} words")
        y_true = [[names[k] for k in row] for row in gold]
        y_pred = [[names[k] for k in row] for row in pred]
        metric = {
            "entity_f1": f1_score,
            "entity_precision": precision_score,
            "entity_recall": recall_score,
        }
        out: dict[str, float] = {}
        for m in metrics:
            if m in metric:
                out[m] = float(metric[m](y_true, y_pred, zero_division=0))
            elif m == "token_accuracy":
                out[m] = float(accuracy_score(y_true, y_pred))
            else:
                raise ValueError(f"unknown tagging metric {m!r}")
        return out

    def baseline(self, train_labels: Any, dev_labels: Mapping[str, Any], num_labels: int | None) -> tuple:
        """Every word "O" (a tag set without "O": its most frequent training tag) on every dev row."""
        import numpy as np

        train = _unwrap(train_labels)
        names = tuple(
            getattr(train, "names", ()) or next((getattr(_unwrap(y), "names", ()) for y in dev_labels.values()), ())
        )
        if OUTSIDE in names:
            tag = names.index(OUTSIDE)
        else:
            flat = np.concatenate([r for r in _rows(getattr(train, "values", train))] or [np.zeros(0, np.int64)])
            tag = int(np.bincount(flat, minlength=num_labels or 1).argmax()) if len(flat) else 0
        out = {}
        for s, y in dev_labels.items():
            rows = _rows(getattr(_unwrap(y), "values", _unwrap(y)))
            width = max((len(r) for r in rows), default=0)
            pred = np.full((len(rows), width), -1, dtype=np.int64)
            for i, r in enumerate(rows):
                pred[i, : len(r)] = tag
            out[s] = pred
        return out, num_labels or len(names)


def _unwrap(value: Any) -> Any:
    """``np.asarray`` of an object is a 0-d array holding it."""
    import numpy as np

    if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0:
        return value.item()
    return value


__all__ = ["OUTSIDE", "TokenOutputs", "fill_index"]
