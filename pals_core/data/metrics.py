"""GLUE dev metrics (SPEC section 7) and the paper's dev average, computed over the whole dev set.

* CoLA: Matthews correlation (``mcc``)
* SST-2, QNLI, RTE: ``accuracy``
* MNLI: ``accuracy_m`` (matched dev) and ``accuracy_mm`` (mismatched dev)
* MRPC, QQP: ``f1`` (positive class = paraphrase / duplicate) and ``accuracy``
* STS-B: ``pearson`` and ``spearman``

Scores are fractions (0.71, not 71.0); tables multiply by 100.

The dev average follows the paper's Table 3 (Stickland & Murray 2019): accuracy for every task,
except CoLA (MCC) and STS-B (Pearson) — so MRPC and QQP count with their **accuracy**, not F1.
MNLI counts once, with the mean of its matched and mismatched accuracies (as the GLUE score does).
The average is the unweighted mean over the tasks of the run: ``main_score`` per task.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

METRICS: dict[str, tuple[str, ...]] = {
    "cola": ("mcc",),
    "sst2": ("accuracy",),
    "mrpc": ("f1", "accuracy"),
    "stsb": ("pearson", "spearman"),
    "qqp": ("f1", "accuracy"),
    "mnli": ("accuracy_m", "accuracy_mm"),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
}
"""The metrics reported per task."""

MAIN_METRIC: dict[str, str] = {
    "cola": "mcc", "sst2": "accuracy", "mrpc": "accuracy", "stsb": "pearson", "qqp": "accuracy",
    "mnli": "accuracy_m/mm mean", "qnli": "accuracy", "rte": "accuracy",
}
"""What enters the paper's dev average (Table 3)."""


def _check(preds: np.ndarray, labels: np.ndarray) -> None:
    if preds.shape[0] != labels.shape[0]:
        raise ValueError(f"{preds.shape[0]} predictions for {labels.shape[0]} labels")
    if labels.shape[0] == 0:
        raise ValueError("no examples to score")


def classification_scores(logits: np.ndarray, labels: np.ndarray, metrics: tuple[str, ...]) -> dict[str, float]:
    """Scores of arg-max predictions; logits (n, C) or predicted classes (n,)."""
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

    logits, labels = np.asarray(logits), np.asarray(labels)
    preds = logits.argmax(axis=-1) if logits.ndim == 2 else logits
    _check(preds, labels)
    out: dict[str, float] = {}
    for m in metrics:
        if m == "accuracy":
            out[m] = float(accuracy_score(labels, preds))
        elif m == "f1":
            out[m] = float(f1_score(labels, preds, pos_label=1, zero_division=0.0))
        elif m == "mcc":
            out[m] = float(matthews_corrcoef(labels, preds))  # 0.0 for a constant prediction
        else:
            raise ValueError(f"unknown classification metric {m!r}")
    return out


def regression_scores(preds: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Pearson and Spearman correlation; 0.0 for a constant prediction (undefined correlation)."""
    from scipy.stats import pearsonr, spearmanr

    preds, labels = np.asarray(preds, dtype=np.float64).reshape(-1), np.asarray(labels, dtype=np.float64)
    _check(preds, labels)
    if np.ptp(preds) == 0 or np.ptp(labels) == 0:
        return {"pearson": 0.0, "spearman": 0.0}
    return {"pearson": float(pearsonr(preds, labels)[0]), "spearman": float(spearmanr(preds, labels)[0])}


def task_scores(task: str, outputs: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """All metrics of ``task`` from ``{dev split suffix: (logits or predictions, labels)}`` — suffix
    "" for one dev set, "m" and "mm" for MNLI."""
    if task not in METRICS:
        raise ValueError(f"no metrics for task {task!r}")
    if task == "mnli":
        missing = [s for s in ("m", "mm") if s not in outputs]
        if missing:
            raise ValueError(f"mnli needs the matched and mismatched dev outputs, lacking {missing}")
        return {f"accuracy_{s}": classification_scores(*outputs[s], ("accuracy",))["accuracy"] for s in ("m", "mm")}
    if "" not in outputs:
        raise ValueError(f"{task}: no dev outputs")
    logits, labels = outputs[""]
    if task == "stsb":
        return regression_scores(logits, labels)
    return classification_scores(logits, labels, METRICS[task])


def main_score(task: str, scores: Mapping[str, float]) -> float:
    """The one number of ``task`` that enters the dev average (paper's Table 3)."""
    if task == "mnli":
        return (scores["accuracy_m"] + scores["accuracy_mm"]) / 2.0
    return float(scores[MAIN_METRIC[task]])


def dev_average(scores: Mapping[str, Mapping[str, float]]) -> Optional[float]:
    """Unweighted mean of ``main_score`` over the tasks; None without tasks."""
    if not scores:
        return None
    return float(np.mean([main_score(t, s) for t, s in scores.items()]))


def majority_scores(task: str, train_labels: np.ndarray, dev_labels: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The majority-class baseline: predict the most frequent training class on every dev example
    (STS-B: the training mean, whose correlations are 0)."""
    train_labels = np.asarray(train_labels)
    if task == "stsb":
        return regression_scores(np.full(len(dev_labels[""]), train_labels.mean()), dev_labels[""])
    majority = int(np.bincount(train_labels.astype(np.int64)).argmax())
    return task_scores(task, {s: (np.full(len(y), majority), np.asarray(y)) for s, y in dev_labels.items()})
