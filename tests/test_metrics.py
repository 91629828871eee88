"""GLUE metrics over whole dev sets and the paper's dev average (Table 3)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from pals_core.data.metrics import dev_average, main_score, majority_scores, task_scores
from pals_core.kinds.regression import regression_scores
from pals_core.tasks.glue_tasks import GLUE_TASKS


def test_classification_metrics_by_hand():
    labels = np.array([1, 1, 1, 0, 0, 0, 1, 0])
    preds = np.array([1, 1, 0, 0, 0, 1, 1, 0])  # tp 3, fn 1, fp 1, tn 3
    logits = np.eye(2)[preds] * 2.0 - 1.0
    s = task_scores("mrpc", {"": (logits, labels)})
    assert s == {"f1": pytest.approx(0.75), "accuracy": pytest.approx(0.75)}
    mcc = (3 * 3 - 1 * 1) / math.sqrt(4 * 4 * 4 * 4)
    assert task_scores("cola", {"": (logits, labels)}) == {"mcc": pytest.approx(mcc)}
    assert task_scores("rte", {"": (preds, labels)}) == {"accuracy": pytest.approx(0.75)}


def test_mcc_is_over_the_whole_set_not_a_batch_mean():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 256)
    preds = np.where(rng.random(256) < 0.7, labels, 1 - labels)
    whole = task_scores("cola", {"": (preds, labels)})["mcc"]
    batches = np.mean(
        [task_scores("cola", {"": (preds[i : i + 32], labels[i : i + 32])})["mcc"] for i in range(0, 256, 32)]
    )
    assert whole != pytest.approx(batches, abs=1e-6)


def test_regression_and_constant_predictions():
    y = np.array([0.0, 1.0, 2.5, 4.0, 5.0])
    s = regression_scores(np.array([0.1, 0.9, 3.0, 3.9, 5.2]), y)
    assert s["spearman"] == pytest.approx(1.0) and 0.98 < s["pearson"] < 1.0
    assert regression_scores(np.full(5, 2.0), y) == {"pearson": 0.0, "spearman": 0.0}
    assert task_scores("stsb", {"": (np.array([[0.1], [0.9], [3.0], [3.9], [5.2]])[:, 0], y)})[
        "spearman"
    ] == pytest.approx(1.0)


def test_mnli_matched_and_mismatched():
    y = np.array([0, 1, 2, 2])
    s = task_scores("mnli", {"m": (np.array([0, 1, 2, 0]), y), "mm": (np.array([0, 0, 0, 2]), y)})
    assert s == {"accuracy_m": 0.75, "accuracy_mm": 0.5}
    assert main_score("mnli", s) == pytest.approx(0.625)
    with pytest.raises(ValueError, match="no dev outputs for split"):
        task_scores("mnli", {"m": (np.array([0]), np.array([0]))})


def test_dev_average_is_table_3():
    """Accuracy everywhere except CoLA (MCC) and STS-B (Pearson): MRPC and QQP count with accuracy."""
    scores = {
        "cola": {"mcc": 0.5},
        "stsb": {"pearson": 0.8, "spearman": 0.7},
        "mrpc": {"f1": 0.9, "accuracy": 0.8},
        "qqp": {"f1": 0.7, "accuracy": 0.9},
        "rte": {"accuracy": 0.6},
    }
    assert dev_average(scores) == pytest.approx((0.5 + 0.8 + 0.8 + 0.9 + 0.6) / 5)
    assert dev_average({}) is None
    assert set(GLUE_TASKS) == {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte"}


def test_bad_input():
    with pytest.raises(ValueError, match="3 predictions for 2 labels"):
        task_scores("rte", {"": (np.array([0, 1, 1]), np.array([0, 1]))})
    with pytest.raises(ValueError, match="unknown task 'wsc'"):
        task_scores("wsc", {"": (np.array([0]), np.array([0]))})


GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))


@pytest.mark.skipif(not (GLUE / "RTE" / "dev.tsv").is_file(), reason="PALS_GLUE_DIR is not set")
def test_majority_baselines_on_the_real_dev_sets():
    from pals_core.data.glue_rows import read_tsv
    from pals_core.tasks.glue_tasks import get_task

    def labels(task, file):
        t = get_task(task)
        return np.array(read_tsv(t, GLUE / t.folder / file).labels)

    rte = majority_scores("rte", labels("rte", "train.tsv"), {"": labels("rte", "dev.tsv")})
    assert rte["accuracy"] == pytest.approx(146 / 277)  # train majority: entailment (1249 vs 1241); dev has 146 of 277
    mrpc = majority_scores("mrpc", labels("mrpc", "train.tsv"), {"": labels("mrpc", "dev.tsv")})
    assert mrpc["accuracy"] == pytest.approx(279 / 408) and mrpc["f1"] == pytest.approx(2 * 279 / (279 + 408))
    assert majority_scores("cola", labels("cola", "train.tsv"), {"": labels("cola", "dev.tsv")}) == {"mcc": 0.0}
    assert majority_scores("stsb", labels("stsb", "train.tsv"), {"": labels("stsb", "dev.tsv")})["pearson"] == 0.0
