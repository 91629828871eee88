"""A whole study end to end, as a user runs it: ``pals-study run design --trials 3`` trains three real multi-task runs
(random tiny BERT, real GLUE slices), ``pals-study report`` writes the table and figures, and the explorer's Studies
view shows the same storage."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from pals_core.budget.costs import base_params
from studies.space import model_shape

EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")
TINY = [
    "--model",
    "tiny",
    "--tasks",
    "rte,mrpc",
    "--steps",
    "8",
    "--eval-every",
    "4",
    "--max-train-examples",
    "64",
    "--max-eval-examples",
    "32",
    "--max-len",
    "32",
    "--batch-size",
    "8",
    "--budget",
    "1.05",
]


def _env(glue_dir: Path) -> dict:
    return {
        **os.environ,
        "PALS_GLUE_DIR": str(glue_dir),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


@pytest.mark.slow
def test_three_trial_study_report_and_explorer_view(tmp_path, glue_dir):
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    out = tmp_path / "runs"
    cmd = [
        EXE,
        "run",
        "design",
        "--trials",
        "3",
        "--storage",
        url,
        "--out",
        str(out),
        "--threads",
        "1",
        "--sampler-seed",
        "0",
        *TINY,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=_env(glue_dir))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "3 complete" in p.stdout or "pruned" in p.stdout, p.stdout

    study = optuna.load_study(study_name="design", storage=url)
    trials = study.get_trials()
    states = [t.state for t in trials]
    assert len(trials) == 3 and set(states) <= {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}
    assert states[0] == optuna.trial.TrialState.COMPLETE  # the pruner waits for two finished trials
    limit = 0.05 * base_params(model_shape("tiny"))  # budget 1.05: N_total − N_base ≤ 0.05 · N_base
    for t in trials:
        a = t.user_attrs
        run = Path(a["run_dir"])
        assert run.is_dir() and run.parent == out / "design" / study.user_attrs["pals_run_key"]  # keyed: see naming.py
        assert (run / "config.json").is_file()
        assert 0 < a["params_task_specific"] <= limit, (t.number, a)  # the budget holds for every sampled trial
        cfg = json.loads((run / "config.json").read_text())
        assert cfg["adapter"]["method"] == a["method"] and cfg["adapter"]["d_s"] == a["d_s"]
        assert t.intermediate_values, "every trial reports its dev average at each evaluation"
        assert set(t.intermediate_values) <= {4, 8}
        if t.state == optuna.trial.TrialState.COMPLETE:
            summary = json.loads((run / "summary.json").read_text())
            assert t.value == pytest.approx(summary["average"])  # the study scores the best evaluation (default)
            assert a["score_at"] == "best" and a["score_step"] == summary["best_step"]
            assert set(a["majority"]) == {"rte", "mrpc"} and set(summary["majority"]) == {"rte", "mrpc"}
            assert a["params_task_specific"] == summary["params"]["task_specific"]
            assert set(a["scores"]) == {"rte", "mrpc"}
            assert sorted(t.intermediate_values) == [4, 8]
        else:  # pruned at its first evaluation: the last one (step 8) never prunes a finished run
            assert sorted(t.intermediate_values) == [4]

    # a second run of the same command finds the study complete and starts nothing (--trials is the study's total)
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env(glue_dir))
    assert again.returncode == 0 and "this worker ran 0" in again.stdout, again.stdout + again.stderr[-2000:]
    assert len(optuna.load_study(study_name="design", storage=url).trials) == 3

    report_dir = tmp_path / "report"
    r = subprocess.run(
        [EXE, "report", "design", "--storage", url, "--out", str(report_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(glue_dir),
    )
    assert r.returncode == 0, r.stderr
    assert "dev average" in r.stdout and "task-specific parameters" in r.stdout
    with open(report_dir / "trials.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(row["trial"]) for row in rows] == [0, 1, 2]
    assert all(row["run_dir"] and row["design"] for row in rows)
    for name in ("history", "pareto", "learning_curves"):
        html = (report_dir / f"{name}.html").read_text()
        assert "plotly" in html.lower() and len(html) < 200_000  # plotly.js from the CDN, not inlined
    assert (report_dir / "leaderboard.csv").is_file()

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string(f"from explorer.studies_view import render\nrender({url!r})\n", default_timeout=120).run()
    assert not at.exception, at.exception
    assert at.selectbox[0].value == "design"
    complete = sum(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    board = at.dataframe[0].value
    assert len(board) == complete and board["dev average"].is_monotonic_decreasing
    best = max((t for t in trials if t.state == optuna.trial.TrialState.COMPLETE), key=lambda t: t.value)
    assert board["dev average"][0] == pytest.approx(100 * best.value)  # the page's scale is report's: 0–100
    assert {m.label: m.value for m in at.metric}["complete"] == str(complete)
    assert len(at.get("plotly_chart")) >= 3  # history, learning curves, Pareto front (importances need 2 varying)


def test_explorer_view_on_a_bad_storage_shows_one_error(tmp_path):
    """A storage file not made yet is a first visit (an invitation); a storage that cannot be one (its
    folder is not there) is one error. Neither is created by looking."""
    from streamlit.testing.v1 import AppTest

    url = f"sqlite:///{tmp_path / 'absent.db'}"
    at = AppTest.from_string(f"from explorer.studies_view import render\nrender({url!r})\n", default_timeout=60).run()
    assert not at.exception and not at.error
    assert any(i.value.startswith("**No study here yet**") for i in at.info)
    assert not (tmp_path / "absent.db").exists()
    url = f"sqlite:///{tmp_path / 'no-such-folder' / 'absent.db'}"
    at = AppTest.from_string(f"from explorer.studies_view import render\nrender({url!r})\n", default_timeout=60).run()
    assert not at.exception
    assert len(at.error) == 1 and "no SQLite study file" in at.error[0].value
    assert not (tmp_path / "no-such-folder").exists()


@pytest.mark.slow
def test_a_study_that_scores_the_final_evaluation(tmp_path, glue_dir):
    """``--score-at final``: every trial's score is its last evaluation, the step it comes from is recorded and shown,
    and each task's majority baseline on the trial's own dev rows is recorded beside its score."""
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    cmd = [EXE, "run", "design", "--trials", "1", "--storage", url, "--out", str(tmp_path / "runs"), "--threads", "1"]
    p = subprocess.run(
        [*cmd, "--score-at", "final", *TINY], capture_output=True, text=True, timeout=240, env=_env(glue_dir)
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "a trial's score is its last dev evaluation (the last step), the same for every trial" in p.stdout
    (t,) = optuna.load_study(study_name="design", storage=url).get_trials()
    summary = json.loads((Path(t.user_attrs["run_dir"]) / "summary.json").read_text())
    assert t.value == pytest.approx(summary["final"]["average"]) and t.user_attrs["score_step"] == 8
    assert t.user_attrs["scores"]["rte"] == pytest.approx(summary["final"]["scores"]["rte"]["accuracy"])
    assert t.user_attrs["majority"] == {k: pytest.approx(v["accuracy"]) for k, v in summary["majority"].items()}
    for task, m in summary["majority"].items():  # the most frequent training class's accuracy: a share of the rows
        assert 0 < m["accuracy"] < 1 and (m["accuracy"] * 32).is_integer(), (task, m)
    from studies.cli import main as pals_study

    assert pals_study(["report", "design", "--storage", url, "--out", str(tmp_path / "report")]) == 0
    with open(tmp_path / "report" / "leaderboard.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["scored at step"] == "8" and float(row["dev average"]) == pytest.approx(100 * t.value)
