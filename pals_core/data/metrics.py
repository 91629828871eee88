"""Dev metrics of a task, from its record (``TaskRecord``), computed over the whole dev set (never averaged over
batches), and the dev average. Scores are fractions (0.71, not 71.0); tables multiply by 100.

Each kind scores its own predictions and names its main metric (``pals_core/kinds/<kind>/``: ``scores``,
``metrics``; e.g. accuracy / macro F1 / MCC / binary F1 of a class, Pearson / Spearman of a number, micro / macro
F1 of a label set) and its trivial baseline (``baseline``); this module runs them over a task's dev sets.

A task with several dev sets (GLUE's MNLI: matched "m" and mismatched "mm") reports each metric per set
(``accuracy_m``, ``accuracy_mm``), and its main score is their mean (as the GLUE score does).

The dev average is the unweighted mean over the run's tasks of each task's main metric (``record.metric``).
For GLUE this is the paper's Table 3: accuracy for every task, except CoLA (MCC) and STS-B (Pearson) — MRPC
and QQP count with their accuracy, not F1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..kinds import get_kind
from ..tasks.glue_tasks import GLUE_TASKS, glue_record
from ..tasks.record import TaskRecord
from .encoded import word_tags

TaskLike = TaskRecord | str  # a record, or the name of a built-in GLUE task (summaries written before records)


def record_of(task: TaskLike) -> TaskRecord:
    return task if isinstance(task, TaskRecord) else glue_record(task)


def dev_splits(record: TaskRecord) -> tuple[str, ...]:
    """The dev sets' suffixes: ``("",)``, or GLUE MNLI's ``("m", "mm")``."""
    return GLUE_TASKS[record.glue].dev_splits if record.glue in GLUE_TASKS else ("",)


def _scores(record: TaskRecord, preds: np.ndarray, labels: np.ndarray, num_labels: int) -> dict[str, float]:
    return get_kind(record.kind).scores(record, preds, labels, record.reported_metrics(num_labels), num_labels)


def task_scores(
    task: TaskLike, outputs: Mapping[str, tuple[np.ndarray, np.ndarray]], num_labels: int | None = None
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
        kind = get_kind(record.kind)
        width = first.shape[-1] if first.ndim == 2 else len(record.labels or ())
        num_labels = kind.num_outputs(range(width)) if kind.has_labels else kind.num_outputs(())
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
    scores: Mapping[str, Mapping[str, float]], records: Mapping[str, TaskRecord] | None = None
) -> float | None:
    """Unweighted mean of ``main_score`` over the tasks; None without tasks. ``records`` maps the task names to
    their records (default: the built-in GLUE task of each name)."""
    if not scores:
        return None
    return float(np.mean([main_score((records or {}).get(t, t), s) for t, s in scores.items()]))


def majority_scores(
    task: TaskLike, train_labels: np.ndarray, dev_labels: Mapping[str, np.ndarray], num_labels: int | None = None
) -> dict[str, float]:
    """The reference every design must beat: the kind's trivial baseline on every dev example (the most frequent
    training class, the training mean, each label most training rows carry, …: ``Kind.baseline``)."""
    record = record_of(task)
    kind = get_kind(record.kind)
    outputs, c = kind.baseline(np.asarray(train_labels), dev_labels, num_labels or len(record.labels or ()) or None)
    return task_scores(record, {s: (p, np.asarray(dev_labels[s])) for s, p in outputs.items()}, c)


def gold_labels(task: TaskLike, labels: Sequence[Any], names: Sequence[str]) -> Any:
    """A split's labels as read (``RawSplit.labels``: each row's label value) in the form its kind's ``scores`` and
    ``baseline`` take them, as a run's evaluation hands them over: the kind's ``label_array``, and for a kind of one
    label per word the tags with their names (``WordTags``, as ``Encoded.gold`` gives them)."""
    kind = get_kind(record_of(task).kind)
    y = kind.label_array(labels, kind.num_outputs(names))
    return word_tags(y, names) if kind.per_word else y


def rows_majority(
    task: TaskLike, train_labels: Sequence[Any], dev_labels: Mapping[str, Sequence[Any]], names: Sequence[str]
) -> dict[str, float]:
    """``majority_scores`` of the rows as read (``train_labels``, ``{dev split suffix: labels}``) with the task's
    label set ``names``: the one way the profile (``pals-tasks``, Your tasks) and the measured view's reference line
    score a task's trivial baseline, whatever its kind."""
    record = record_of(task)
    c = get_kind(record.kind).num_outputs(names)
    dev = {s: gold_labels(record, y, names) for s, y in dev_labels.items()}
    return majority_scores(record, gold_labels(record, train_labels, names), dev, c)
