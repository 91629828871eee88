"""What a researcher reads about a study says what it is: one scale (0–100) in ``report``, ``trials.csv`` and the
page; whole numbers as whole numbers and empty cells empty; "1 trial", not "1 trials"; trials counted by state; the
step each score comes from and which evaluation the study scores; a task no trial moved off its majority baseline
named; the Pareto legend's marks explained; a mistyped study name refused, naming the closest studies; the page's
shell command naming the selected study and its storage; ``report`` without ``--out`` writing where its help says.

The studies are real Optuna studies in a SQLite file, holding the settings ``pals-study create`` stores and trials
with the attributes a worker records (no training here: the workers' own tests train)."""

from __future__ import annotations

import csv
import shutil
import warnings
from pathlib import Path

import optuna
import pytest
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import TrialState
from streamlit.testing.v1 import AppTest

from studies.cli import build_parser
from studies.cli import main as pals_study
from studies.runner import DEFINITION_ATTR
from studies.settings import SETTINGS_ATTR, StudySettings

MAJORITY = {"rte": 0.5271, "mrpc": 0.6838}  # each task's majority-class accuracy on its dev rows, as a trial records it


def _trial(study: optuna.Study, value: float, design: str, d_s: int | None, rte: float, params: int) -> None:
    t = study.ask()
    for k, v in {
        "design": design,
        "method": design.split(" @ ")[0],
        "location": design.split(" @ ")[1] if " @ " in design else None,
        "d_s": d_s,
        "params_task_specific": params,
        "scores": {"rte": rte, "mrpc": MAJORITY["mrpc"]},  # mrpc: at its majority class in every trial
        "main_metrics": {"rte": "accuracy", "mrpc": "accuracy"},
        "majority": MAJORITY,
        "score_at": "best",
        "score_step": 20,
        "run_dir": f"/runs/trial-{t.number:04d}",
    }.items():
        t.set_user_attr(k, v)
    t.report(value - 0.01, 10)
    t.report(value, 20)
    study.tell(t, value)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A SQLite file holding the pals-study design study ``rs5-design``: two completed trials (one of them a retry of
    a failed one, its design sizeless) — written once; each test reads its own copy (``storage_url``)."""
    path = tmp_path_factory.mktemp("words") / "studies.db"
    url = f"sqlite:///{path}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="rs5-design", storage=url, direction="maximize")
    study.set_user_attr(DEFINITION_ATTR, "design")
    study.set_user_attr(
        SETTINGS_ATTR, StudySettings(definition="design", tasks=["rte", "mrpc"], model="tiny").as_dict()
    )
    _trial(study, 0.6013, "pals @ bottom", 24, 0.5188, 9_000)
    dead = study.ask()  # a trial whose worker died …
    dead.set_user_attr("design", "lhuc @ all")
    study.tell(dead, state=TrialState.FAIL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        RetryHeartbeatStaleTrialCallback(max_retry=3)(study, study.get_trials()[-1])  # … queued again
    _trial(study, 0.6208, "lhuc @ all", None, 0.5578, 1_200)  # the retry (trial 2), its design sizeless
    return path


@pytest.fixture
def storage_url(stored, tmp_path) -> str:
    shutil.copy(stored, tmp_path / "studies.db")
    return f"sqlite:///{tmp_path / 'studies.db'}"


def test_report_one_scale_whole_numbers_steps_and_the_undecided_task(storage_url, tmp_path, capsys):
    assert pals_study(["report", "rs5-design", "--storage", storage_url, "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "study 'rs5-design': 3 trials: 2 complete, 0 pruned, 1 failed, 0 running, 0 waiting" in out
    assert "scores 0–100 (dev metrics × 100); a trial's score is its best dev evaluation" in out
    header, first, second = out.split("at the step shown\n")[1].splitlines()[:3]
    assert header.split()[:7] == ["rank", "trial", "design", "location", "d_s", "dev", "average"]
    assert first.split()[:8] == ["1", "2", "lhuc", "@", "all", "all", "—", "62.08"], first
    assert second.split()[:8] == ["2", "0", "pals", "@", "bottom", "bottom", "24", "60.13"], second
    assert "mrpc: no trial left the majority baseline (accuracy 68.38 in every one of 2 completed trials); it " in out
    assert "rte: no trial left" not in out  # rte moved
    rows = list(csv.DictReader((tmp_path / "r" / "trials.csv").open()))
    assert [r["trial"] for r in rows] == ["0", "1", "2"]
    assert [r["retry of"] for r in rows] == ["", "", "1"]  # an integer, and an empty cell where there is none
    assert [r["d_s"] for r in rows] == ["24", "", ""]
    assert [r["scored at step"] for r in rows] == ["20", "", "20"]
    assert rows[0]["dev average"] == "60.13" and rows[0]["score rte (accuracy)"] == "51.88"
    assert rows[0]["task-specific parameters"] == "9000" and rows[1]["dev average"] == ""
    assert not any(v in ("None", "nan", "NaN", "<NA>") for r in rows for v in r.values()), rows
    board = list(csv.DictReader((tmp_path / "r" / "leaderboard.csv").open()))
    assert [(r["rank"], r["trial"], r["dev average"], r["scored at step"]) for r in board] == [
        ("1", "2", "62.08", "20"),
        ("2", "0", "60.13", "20"),
    ]


def test_the_pareto_legend_says_what_a_star_and_a_circle_mean(storage_url):
    from studies.report import pareto_figure
    from studies.storage import load, open_storage

    fig = pareto_figure(load(open_storage(storage_url, create=False), "rs5-design"))
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert "★ on the Pareto front (no trial has a higher score with fewer parameters)" in legend
    assert "● off the front (another trial beats it on both)" in legend
    points = {t.name: list(t.y) for t in fig.data if t.name in ("pals @ bottom", "lhuc @ all")}
    assert points == {"pals @ bottom": [60.13], "lhuc @ all": [62.08]}  # the leaderboard's scale


def test_list_counts_trials_by_state_in_whole_words(storage_url, tmp_path, capsys):
    one = optuna.create_study(study_name="one", storage=storage_url, direction="maximize")
    one.set_user_attr(DEFINITION_ATTR, "design")
    one.tell(one.ask(), 0.5)
    capsys.readouterr()
    assert pals_study(["list", "--storage", storage_url]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "one\tdesign\t1 trial: 1 complete",
        "rs5-design\tdesign\t3 trials: 2 complete, 1 failed",
    ]


def test_a_mistyped_study_name_makes_no_study(storage_url, capsys):
    capsys.readouterr()
    code = pals_study(["run", "design", "--storage", storage_url, "--study-name", "rs5-desgn", "--model", "tiny"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0] == (
        "pals-study: error: no study named 'rs5-desgn' in this storage; closest: rs5-design. Give one of them with "
        "--study-name, or add --create to start a new study of that name"
    )
    assert optuna.get_all_study_names(storage_url) == ["rs5-design"]
    assert "--create" in _run_help()


def _run_help() -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["run"].format_help()


def test_report_without_out_writes_where_its_help_says(storage_url, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    said = " ".join(sub.choices["report"].format_help().split())
    assert "default ./studies_out/<study>/report in the current folder" in said
    assert pals_study(["report", "rs5-design", "--storage", storage_url]) == 0
    folder = tmp_path / "studies_out" / "rs5-design" / "report"
    assert f"report written to {folder}\n" in capsys.readouterr().out
    assert (folder / "trials.csv").is_file() and (folder / "leaderboard.csv").is_file()


def test_the_studies_page_names_the_study_its_storage_and_the_undecided_task(storage_url, tmp_path, monkeypatch):
    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    relative = "sqlite:///studies.db"  # the page's storage as typed: a path relative to where the app runs
    assert Path(storage_url.removeprefix("sqlite:///")) == tmp_path / "studies.db"
    at = AppTest.from_string(f"from explorer.studies_view import render\nrender({relative!r})\n", default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    commands = [c.value for c in at.code if c.value.startswith("pals-study run")]
    assert commands == [
        f"pals-study run design --storage sqlite:///{tmp_path / 'studies.db'} --study-name rs5-design --trials 12"
    ]
    assert any(w.value.startswith("Task mrpc: no trial left the majority baseline") for w in at.warning)
    board = at.dataframe[0].value
    assert list(board.columns[:6]) == ["rank", "trial", "design", "location", "d_s", "dev average"]
    assert list(board["d_s"]) == ["—", "24"] and list(board["dev average"]) == [pytest.approx(62.08), 60.13]
    assert "None" not in board.astype(str).to_numpy().ravel().tolist()
    # the form refuses a name the storage does not hold unless asked to create it: a typo makes no study
    at.text_input(key="study_start_name").set_value("rs5-desgn")
    at.selectbox(key="study_start_model").set_value("tiny random BERT (smoke study)")
    at.button(key="FormSubmitter:study_start_form-Start").click().run()
    assert [e.value for e in at.error] == [
        "Could not start the study: no study named 'rs5-desgn' in this storage; closest: rs5-design. Give one of "
        "them with the study name, or tick “Create if new” to start a new study of that name"
    ]
    assert not (tmp_path / "runs").exists() and optuna.get_all_study_names(storage_url) == ["rs5-design"]
