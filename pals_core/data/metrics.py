"""Dev metrics of a task, from its record (``TaskRecord``), computed over the whole dev set (never averaged over
batches), and the dev average. Scores are fractions (0.71, not 71.0); tables multiply by 100.

* classification (logits (n, C) → arg-max): ``accuracy``, ``macro_f1`` (unweighted mean of the C per-class F1),
  ``mcc`` (Matthews correlation), ``f1`` (binary: F1 of the ``positive`` label, by default the second one);
* regression (one output): ``pearson``, ``spearman`` (0.0 for a constant prediction: undefined correlation);
* multilabel (logits (n, C) → label j predicted when logit_j > 0, i.e. sigmoid > 0.5): ``micro_f1`` (F1 over
  every (row, label) decision), ``macro_f1`` (mean of the C per-label F1).

A task with several dev sets (GLUE's MNLI: matched "m" and mismatched "mm") reports each metric per set
(``accuracy_m``, ``accuracy_mm``), and its main score is their mean (as the GLUE score does).

The dev average is the unweighted mean over the run's tasks of each task's main metric (``record.metric``).
For GLUE this is the paper's Table 3: accuracy for every task, except CoLA (MCC) and STS-B (Pearson) — MRPC
and QQP count with their accuracy, not F1.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence, Union

import numpy as np

from ..tasks import GLUE_TASKS, TaskRecord, glue_record

TaskLike = Union[TaskRecord, str]  # a record, or the name of a built-in GLUE task (summaries written before records)


def record_of(task: TaskLike) -> TaskRecord:
    return task if isinstance(task, TaskRecord) else glue_record(task)


def dev_splits(record: TaskRecord) -> tuple[str, ...]:
    """The dev sets' suffixes: ``("",)``, or GLUE MNLI's ``("m", "mm")``."""
    return GLUE_TASKS[record.glue].dev_splits if record.glue in GLUE_TASKS else ("",)


def _check(preds: np.ndarray, labels: np.ndarray) -> None:
    if preds.shape[0] != labels.shape[0]:
        raise ValueError(f"{preds.shape[0]} predictions for {labels.shape[0]} labels")
    if labels.shape[0] == 0:
        raise ValueError("no examples to score")


def classification_scores(
    logits: np.ndarray, labels: np.ndarray, metrics: Sequence[str], num_labels: int, positive: int = 1
) -> dict[str, float]:
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
            out[m] = float(f1_score(labels, preds, pos_label=positive, average="binary", zero_division=0.0))
        elif m == "macro_f1":
            out[m] = float(f1_score(labels, preds, labels=list(range(num_labels)), average="macro", zero_division=0.0))
        elif m == "mcc":
            out[m] = float(matthews_corrcoef(labels, preds))  # 0.0 for a constant prediction
        else:
            raise ValueError(f"unknown classification metric {m!r}")
    return out


def regression_scores(
    preds: np.ndarray, labels: np.ndarray, metrics: Sequence[str] = ("pearson", "spearman")
) -> dict[str, float]:
    """Pearson and Spearman correlation; 0.0 for a constant prediction (undefined correlation)."""
    from scipy.stats import pearsonr, spearmanr

    preds, labels = np.asarray(preds, dtype=np.float64).reshape(-1), np.asarray(labels, dtype=np.float64)
    _check(preds, labels)
    constant = np.ptp(preds) == 0 or np.ptp(labels) == 0
    fn = {"pearson": pearsonr, "spearman": spearmanr}
    return {m: 0.0 if constant else float(fn[m](preds, labels)[0]) for m in metrics}


def multilabel_scores(logits: np.ndarray, labels: np.ndarray, metrics: Sequence[str]) -> dict[str, float]:
    """F1 of thresholded predictions (logit > 0 ⇔ sigmoid > 0.5); labels (n, C) multi-hot."""
    from sklearn.metrics import f1_score

    logits, labels = np.asarray(logits), np.asarray(labels)
    preds = (logits > 0) if logits.dtype != bool else logits
    _check(preds, labels)
    y = labels > 0.5
    return {m: float(f1_score(y, preds, average=m.split("_")[0], zero_division=0.0)) for m in metrics}


def _scores(record: TaskRecord, preds: np.ndarray, labels: np.ndarray, num_labels: int) -> dict[str, float]:
    metrics = record.reported_metrics(num_labels)
    if record.regression:
        return regression_scores(preds, labels, metrics)
    if record.multilabel:
        return multilabel_scores(preds, labels, metrics)
    names = record.labels
    positive = record.positive_index(names) if names is not None else 1
    return classification_scores(preds, labels, metrics, num_labels, positive)


def task_scores(
    task: TaskLike, outputs: Mapping[str, tuple[np.ndarray, np.ndarray]], num_labels: Optional[int] = None
) -> dict[str, float]:
    """All metrics of ``task`` from ``{dev split suffix: (logits or predictions, labels)}`` — suffix "" for one
    dev set, "m" and "mm" for MNLI. ``num_labels`` (C_t) defaults to the logits' width or the declared labels."""
    record = record_of(task)
    splits = dev_splits(record)
    missing = [s for s in splits if s not in outputs]
    if missing:
        raise ValueError(f"{record.name}: no dev outputs for split(s) {missing}")
    if num_labels is None:
        first = np.asarray(outputs[splits[0]][0])
        num_labels = 1 if record.regression else (first.shape[-1] if first.ndim == 2 else len(record.labels or ()))
    if splits == ("",):
        return _scores(record, *outputs[""], num_labels)
    return {f"{m}_{s}": v for s in splits for m, v in _scores(record, *outputs[s], num_labels).items()}


def main_score(task: TaskLike, scores: Mapping[str, float]) -> float:
    """The one number of ``task`` that enters the dev average: its main metric (the mean over its dev sets)."""
    record = record_of(task)
    splits = dev_splits(record)
    if splits == ("",):
        return float(scores[record.main_metric])
    return float(np.mean([scores[f"{record.main_metric}_{s}"] for s in splits]))


def main_metric_label(task: TaskLike) -> str:
    """The main metric's name as tables show it (``accuracy``; MNLI ``accuracy_m/mm mean``)."""
    record = record_of(task)
    splits = dev_splits(record)
    return record.main_metric if splits == ("",) else f"{record.main_metric}_{'/'.join(splits)} mean"


def dev_average(
    scores: Mapping[str, Mapping[str, float]], records: Optional[Mapping[str, TaskRecord]] = None
) -> Optional[float]:
    """Unweighted mean of ``main_score`` over the tasks; None without tasks. ``records`` maps the task names to
    their records (default: the built-in GLUE task of each name)."""
    if not scores:
        return None
    return float(np.mean([main_score((records or {}).get(t, t), s) for t, s in scores.items()]))


def majority_scores(
    task: TaskLike, train_labels: np.ndarray, dev_labels: Mapping[str, np.ndarray], num_labels: Optional[int] = None
) -> dict[str, float]:
    """The reference every design must beat: the most frequent training class on every dev example; regression:
    the training mean (whose correlations are 0); multilabel: each label predicted when most training rows
    carry it."""
    record = record_of(task)
    train_labels = np.asarray(train_labels)
    if record.regression:
        outputs = {s: (np.full(len(y), train_labels.mean()), np.asarray(y)) for s, y in dev_labels.items()}
        return task_scores(record, outputs, 1)
    if record.multilabel:
        keep = train_labels.mean(axis=0) > 0.5
        outputs = {s: (np.tile(keep, (len(y), 1)), np.asarray(y)) for s, y in dev_labels.items()}
        return task_scores(record, outputs, train_labels.shape[1])
    c = num_labels or len(record.labels or ()) or int(train_labels.max()) + 1
    majority = int(np.bincount(train_labels.astype(np.int64), minlength=c).argmax())
    return task_scores(record, {s: (np.full(len(y), majority), np.asarray(y)) for s, y in dev_labels.items()}, c)
