"""Studies another program wrote (or with mistyped trial attributes, or edited settings): ``pals-study report`` and the
Studies tab read what they can and name the rest, never a traceback. Optuna studies in a SQLite file; the page through
``streamlit.testing.v1.AppTest``."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from streamlit.testing.v1 import AppTest

from studies.cli import main as pals_study

APP = str(Path(__file__).resolve().parents[1] / "app.py")
EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    d = tmp_path / "runs"
    d.mkdir()
    monkeypatch.setenv("PALS_RUNS_DIR", str(d))
    monkeypatch.setenv("PALS_STUDY_STORAGE", f"sqlite:///{tmp_path / 'studies.db'}")
    return d


def open_at(query: dict) -> AppTest:
    """The page opened at ``?key=value&…`` (a link)."""
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def show(at, view: str) -> AppTest:
    return at.segmented_control(key="view").set_value(view).run()


@pytest.fixture(scope="module")
def foreign_studies(tmp_path_factory) -> str:
    """A SQLite storage holding: ``plain`` (Optuna's own, minimising x), ``typed`` (a pals-study design study with
    trials whose user attributes are of the wrong types, beside one good trial) and ``edited`` (pals-study settings
    no pals-study wrote). Written once for the module: the tests only read it."""
    url = f"sqlite:///{tmp_path_factory.mktemp('foreign') / 'studies.db'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    plain = optuna.create_study(study_name="plain", storage=url)
    plain.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    assert (
        pals_study(
            [
                "create",
                "design",
                "--study-name",
                "typed",
                "--storage",
                url,
                "--model",
                "tiny",
                "--tasks",
                "rte",
                "--steps",
                "2",
            ]
        )
        == 0
    )
    typed = optuna.load_study(study_name="typed", storage=url)
    good = typed.ask()
    for k, v in {
        "design": "pals @ all",
        "method": "pals",
        "location": "all",
        "d_s": 8,
        "ratio": 1.01,
        "params_task_specific": 1050,
        "scores": {"rte": 0.5},
        "main_metrics": {"rte": "accuracy"},
    }.items():
        good.set_user_attr(k, v)
    typed.tell(good, 0.5)
    for i, attrs in enumerate(
        (
            {"scores": "abc", "ratio": [1, 2], "params_task_specific": "abc"},
            {"seeds": 7, "main_metrics": 5, "d_s": "x", "design": ["pals"], "average_ci95": "wide"},
        )
    ):
        t = typed.ask()
        for k, v in attrs.items():
            t.set_user_attr(k, v)
        typed.tell(t, 0.6 + i / 10)
    edited = optuna.create_study(study_name="edited", storage=url, direction="maximize")
    edited.set_user_attr("pals_definition", "design")
    edited.set_user_attr("pals_settings", {"definition": "design", "tasks": 5, "steps": "many"})
    edited.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    return url


def test_report_on_a_plain_optuna_study(foreign_studies, tmp_path, capsys):
    rc = pals_study(["report", "plain", "--storage", foreign_studies, "--out", str(tmp_path / "plain")])
    out, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in out + err, err
    assert "not created by pals-study" in out and "3 complete, 0 pruned, 0 failed" in out
    board = list(csv.DictReader((tmp_path / "plain" / "leaderboard.csv").open()))
    lowest = min(optuna.load_study(study_name="plain", storage=foreign_studies).trials, key=lambda t: t.value)
    assert len(board) == 3 and board[0]["rank"] == "1" and board[0]["trial"] == str(lowest.number)  # it minimises
    assert board[0]["pareto"] == "False"  # no parameter count: no front


def test_report_on_mistyped_trial_attributes_marks_them(foreign_studies, tmp_path, capsys):
    rc = pals_study(["report", "typed", "--storage", foreign_studies, "--out", str(tmp_path / "typed")])
    out, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in out + err, err
    line = next(l for l in out.splitlines() if l.startswith("user attributes of the wrong type, not shown"))
    assert "trial 1: ratio, params_task_specific, scores" in line
    assert "trial 2: design, d_s, average_ci95, seeds, main_metrics" in line
    rows = {r["trial"]: r for r in csv.DictReader((tmp_path / "typed" / "trials.csv").open())}
    assert rows["0"]["task-specific parameters"] == "1050"
    assert rows["0"]["score rte (accuracy)"] == "50.0"  # a pals-study study: scores on the one scale, 0–100
    assert rows["0"]["unread attributes"] == ""
    assert rows["1"]["task-specific parameters"] == "" and rows["1"]["unread attributes"].startswith("ratio")


def test_report_on_settings_no_pals_study_wrote(foreign_studies, tmp_path, capsys):
    rc = pals_study(["report", "edited", "--storage", foreign_studies, "--out", str(tmp_path / "edited")])
    out, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in out + err, err
    assert "study settings not shown: study 'edited'" in out and "2 complete" in out


@pytest.mark.slow  # the installed script in a process of its own; test_report_on_a_plain_optuna_study in every run
def test_the_console_script_reports_a_plain_study_without_traceback(foreign_studies, tmp_path):
    p = subprocess.run(
        [EXE, "report", "plain", "--storage", foreign_studies, "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize(
    "name,rows,needle",
    [
        ("plain", 3, "holds no PALs settings"),
        ("typed", 3, "trial 1: ratio, params_task_specific, scores"),
        ("edited", 2, "settings cannot be read"),
    ],
)
def test_the_studies_tab_shows_the_rows_it_can_read(foreign_studies, runs_dir, monkeypatch, name, rows, needle):
    monkeypatch.setenv("PALS_STUDY_STORAGE", foreign_studies)
    at = show(open_at({}), "studies")
    at = at.selectbox(key="studies_view_study").set_value(name).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]
    board = next(d.value for d in at.dataframe if "rank" in d.value.columns)
    assert len(board) == rows
    assert needle in " ".join([m.value for m in at.markdown] + [w.value for w in at.warning])
