"""``pals-study run --first-trial``: the next run worth measuring is the study's first trial
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
    from pals_core.cli.budget import main as budget

    capsys.readouterr()
    assert budget(["--tasks", "rte,mrpc", "--budget", "1.1", "--method", "low_rank", "--storage", url, "--json"]) == 0
    assert {r["predicted_score"] for r in json.loads(capsys.readouterr().out)["rows"]} == {None}


@pytest.mark.parametrize(
    "bad, says",
    [
        ("low_rank", "low_rank takes a size: low_rank@all:D_S"),
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


@pytest.mark.parametrize(
    "bad",
    ["", ":", "low_rank@all:", "@all:4", "low_rank:²", "low_rank:٣٢", "low_rank:4.0", "low_rank:+4", "low_rank:1e3"],
)
def test_a_malformed_first_trial_is_refused_naming_the_flag_before_any_work(tmp_path, glue_dir, capsys, bad):
    """Refused by the flag's name, in one line, before the storage is opened (no study file is created)."""
    db = tmp_path / "s.db"
    argv = ["run", "design", "--trials", "1", "--storage", f"sqlite:///{db}", "--out", str(tmp_path / "runs")]
    assert main([*argv, "--glue-dir", str(glue_dir), *ARGS, *SMALL, "--first-trial", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pals-study: error: --first-trial") and err.count("\n") == 1 and "Traceback" not in err
    assert not db.exists()


def _done_study(tmp_path, glue_dir, methods="low_rank,lhuc"):
    """A design study that already holds its one finished trial."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    args = [*ARGS[:-4], "--methods", methods, *SMALL]
    assert main(["create", "design", "--storage", url, *args]) == 0
    study = optuna.load_study(study_name="design", storage=url)
    study.add_trial(optuna.trial.create_trial(values=[0.5] * len(study.directions)))
    argv = ["run", "design", "--trials", "1", "--storage", url, "--out", str(tmp_path / "runs"), "--glue-dir"]
    return [*argv, str(glue_dir), *args, "--threads", "1"], url


def test_a_first_trial_is_checked_even_when_the_study_holds_its_trials(tmp_path, glue_dir, capsys):
    argv, url = _done_study(tmp_path, glue_dir)
    capsys.readouterr()
    for bad, says in (
        ("low_rank@all:x", "METHOD[@LOCATION]:D_S"),
        ("lora@all:4", "not among this study's methods"),
        ("low_rank@all:100000", "is not one this study samples"),
        ("lhuc@all:4", "lhuc has no adapter size"),
    ):
        assert main([*argv, "--first-trial", bad]) == 2, bad
        err = capsys.readouterr().err
        assert err.startswith("pals-study: error: --first-trial") and says in err and err.count("\n") == 1, err
        assert "None" not in err and "Traceback" not in err
    assert len(optuna.load_study(study_name="design", storage=url).trials) == 1  # nothing queued


def test_a_sizeless_first_trial_takes_no_size(tmp_path, glue_dir, capsys):
    """``lhuc@all`` is a whole design: accepted (the study is done, so nothing is queued); ``low_rank@all`` lacks the
    size its method takes."""
    argv, url = _done_study(tmp_path, glue_dir)
    assert main([*argv, "--first-trial", "lhuc@all"]) == 0
    assert "already holds 1 finished trial " in capsys.readouterr().out
    assert main([*argv, "--first-trial", "low_rank@all"]) == 2
    assert "low_rank takes a size" in capsys.readouterr().err
