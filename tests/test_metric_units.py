"""A metric in the task's own units (a regression task's RMSE and MAE) is shown as it is wherever a score is
written — ``pals-tasks``' majority reference, the explorer's runs list and run details, the predicted scores' per-task
means — and a fraction ×100: each through its kind's one formatter (``Kind.metric_text``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from pals_core.cli.tasks import main as tasks_main
from pals_core.kinds import get_kind
from pals_core.tasks.record import TaskRecord

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tasks" / "tasks.yaml"


@pytest.mark.slow  # the tokenizer counts the rows' tokens: seconds
def test_pals_tasks_writes_a_regression_tasks_majority_errors_in_its_units(tmp_path, capsys):
    """The example's reviews (stars 1–5): its majority reference's RMSE reads about 1.35 stars, not 134.6."""
    tasks = tmp_path / "tasks.yaml"  # the example's regression task alone (its rows as they are)
    reviews = yaml.safe_load(EXAMPLE.read_text())["tasks"]["reviews"]
    tasks.write_text(
        yaml.safe_dump({"tasks": {"reviews": {**reviews, "train": str(EXAMPLE.parent / reviews["train"])}}})
    )
    assert tasks_main([str(tasks), "--json"]) == 0
    scores = {p["name"]: p["majority"]["scores"] for p in json.loads(capsys.readouterr().out)["tasks"]}
    assert tasks_main([str(tasks)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "the train mean" in x)  # the reviews task's
    shown = {m: float(v) for m, v in re.findall(r"(\w+) (-?[\d.]+)", line.split(": ", 1)[1])}
    rmse, mae = scores["reviews"]["rmse"], scores["reviews"]["mae"]
    assert 0.5 < rmse < 5 and shown["rmse"] == pytest.approx(rmse, abs=0.01), line  # stars, not ×100 (134.6)
    assert shown["mae"] == pytest.approx(mae, abs=0.01), line
    assert shown["pearson"] == pytest.approx(100 * scores["reviews"]["pearson"], abs=0.1)  # a fraction: ×100


REVIEWS = TaskRecord("reviews", kind="regression", train="reviews.jsonl", label="stars").as_dict()
CONFIG = {"tasks": ["reviews"], "data": {"reviews": {"record": REVIEWS}}}
SCORES = {"reviews": {"pearson": 0.8123, "spearman": 0.8, "rmse": 1.3412, "mae": 0.9}}


def test_the_explorers_run_details_write_an_error_in_its_units_when_the_summary_names_no_kinds():
    """A summary without its tasks' kinds (``tasks``) still has their records in its config: the run's RMSE reads
    1.341, as pals-train printed it, not 134.12."""
    from explorer.runs_view import score_rows, task_kinds

    (row,) = score_rows(SCORES, (), task_kinds({"config": CONFIG, "scores": SCORES}))
    assert (row["Pearson"], row["rmse"], row["mae"]) == ("81.23", "1.341", "0.9"), row
    assert get_kind("regression").metric_text("rmse", 1.3412, digits=1) == "1.34"


def test_a_runs_main_score_without_its_metric_named_averages_its_fractions_only():
    """The predicted scores' per-task value of a run whose summary names no main metric: the mean of its fraction
    metrics on 0–100, an RMSE (in stars) not among them."""
    from pals_core.score_model import _in_units, _main_value

    units = _in_units(CONFIG)
    assert units == {"reviews": ("rmse", "mae")}
    assert _main_value(SCORES["reviews"], None, units["reviews"]) == pytest.approx(100 * (0.8123 + 0.8) / 2)
