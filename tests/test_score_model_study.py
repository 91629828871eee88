"""``pals-study run --first-trial`` (issue 37 item 4): the next run worth measuring is the study's first trial
(Optuna ``enqueue_trial``), and a study's trials are runs the score model reads through ``--storage``."""

from __future__ import annotations

import json

import optuna
import pytest

from pals_core import score_model as sm
from studies.cli import main

ARGS = ["--model", "tiny", "--tasks", "rte,mrpc", "--budget", "1.5", "--methods", "low_rank", "--threads", "1"]
SMALL = [
    "--steps",
    "2",
    "--eval-every",
    "2",
    "--max-train-examples",
    "16",
    "--max-eval-examples",
    "8",
    "--max-len",
    "16",
]


@pytest.mark.slow
def test_the_first_trial_is_the_design_asked_and_the_storage_feeds_the_score_model(tmp_path, glue_dir, capsys):
    url = f"sqlite:///{tmp_path / 's.db'}"
    argv = ["run", "design", "--trials", "1", "--storage", url, "--out", str(tmp_path / "runs"), "--glue-dir"]
    assert main([*argv, str(glue_dir), *ARGS, *SMALL, "--first-trial", "low_rank@top:5"]) == 0, capsys.readouterr()
    [trial] = optuna.load_study(study_name="design", storage=url).get_trials()
    assert (trial.user_attrs["method"], trial.user_attrs["location"], trial.user_attrs["d_s"]) == ("low_rank", "top", 5)
    # its run is a result of the score model's --storage (a smoke run of 2 steps is kept out, as the explorer does)
    [run] = sm.storage_runs(url)
    assert run.d_s == 5 and run.folder == tmp_path / "runs" / run.folder.relative_to(tmp_path / "runs")
    assert sm.observation(run) is None  # 2 steps: a smoke run measures nothing
    assert sm.observations([], "tiny", ["rte", "mrpc"], storage=url) == []
    from pals_core.budget_cli import main as budget

    capsys.readouterr()
    assert budget(["--tasks", "rte,mrpc", "--budget", "1.1", "--method", "low_rank", "--storage", url, "--json"]) == 0
    assert {r["predicted_score"] for r in json.loads(capsys.readouterr().out)["rows"]} == {None}


@pytest.mark.parametrize(
    "bad, says",
    [
        ("low_rank", "METHOD[@LOCATION]:D_S"),
        ("lora@all:4", "not among this study's methods"),
        ("low_rank@middle:4", "no location 'middle'"),
        ("low_rank@all:100000", "is not one this study samples"),
    ],
)
def test_a_first_trial_the_study_cannot_sample_is_one_line_exit_2(tmp_path, glue_dir, capsys, bad, says):
    url = f"sqlite:///{tmp_path / 's.db'}"
    argv = ["run", "design", "--trials", "1", "--storage", url, "--out", str(tmp_path / "runs"), "--glue-dir"]
    assert main([*argv, str(glue_dir), *ARGS, *SMALL, "--first-trial", bad]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and err.strip().count("\n") == 0, err
