"""Second adversarial round (issue 26), the explorer and the studies: a link's number out of range is named, never
clamped; one unreadable summary.json is a row of its own, never the page's end; ``pals-study report`` and the Studies
tab read a study another program wrote (or one with mistyped trial attributes); a surplus trial is no failure.

Everything real: the page through ``streamlit.testing.v1.AppTest``, a run trained by ``pals_core.train`` (tiny
model, GLUE RTE slices), Optuna studies in SQLite files, ``pals-study`` workers."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from streamlit.testing.v1 import AppTest

from studies.cli import main as pals_study

APP = str(Path(__file__).resolve().parents[1] / "app.py")
EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")
VIEWS = ("designs", "tasks", "sizes", "scaling", "breakdown", "machine", "paper", "train", "runs", "studies")


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


def page_errors(at) -> list[str]:
    return [e.value for e in at.error] + [e.value for e in at.exception]


def show(at, view: str) -> AppTest:
    return at.segmented_control(key="view").set_value(view).run()


def address(at) -> dict:
    return {k: (v[-1] if isinstance(v, list) else v) for k, v in dict(at.query_params).items()}


# --- 1. a link's number out of range -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query,key,needle",
    [
        ({"heads": "5000"}, "heads", "adapter heads h_s 5,000 is outside the sidebar's range, 1 to 4,096"),
        ({"seq_len": "200000"}, "seq_len", "sequence length 200000 exceeds bert-base-uncased's 512 positions"),
        ({"model": "tiny", "seq_len": "513"}, "seq_len", "sequence length 513 exceeds tiny's 512 positions"),
        ({"tasks": "20000"}, "tasks", "number of tasks 20000 is unreasonably large (at most 10000)"),
        ({"budget": "1e9"}, "budget", "budget ratio 1e+09 is above the largest the calculator prices (10,000)"),
        ({"extra": "2e15"}, "extra", "extra budget 2e+15 is above the largest the calculator prices (1e+15)"),
        ({"per_task": "5e15"}, "per_task", "per-task budget 5e+15 is above the largest the calculator prices (1e+15)"),
    ],
)
def test_a_number_out_of_range_in_a_link_is_named_not_clamped(runs_dir, query, key, needle):
    at = open_at(query)
    errors = page_errors(at)
    value = query[key]
    assert [e for e in errors if f"the link's {key}={value!r} was not used" in e and needle in e], errors
    assert len(errors) == 1 and not at.exception, errors  # one line; the page still answers
    assert at.get("metric")
    # nothing was clamped: the fields hold their defaults, and the address holds what the page shows (not 1)
    assert at.sidebar.number_input(key="heads").value == 12
    assert at.sidebar.number_input(key="seq_len").value == 128
    assert address(at)["heads"] == "12" and address(at)["seq_len"] == "128"
    assert address(at).get(key) != "1"


def test_a_number_at_the_end_of_its_range_in_a_link_is_used(runs_dir):
    at = open_at({"model": "tiny", "heads": "4096", "seq_len": "512"})
    assert not [e for e in page_errors(at) if "the link's" in e] and not at.exception
    assert at.sidebar.number_input(key="heads").value == 4096
    assert at.sidebar.number_input(key="seq_len").value == 512
    assert address(at)["heads"] == "4096" and address(at)["seq_len"] == "512"


def test_the_sidebar_fields_hold_the_ranges_the_address_checks(runs_dir):
    """SIDEBAR_RANGES (what a link is checked against) is what the sidebar's number fields can hold."""
    from explorer.inputs import SIDEBAR_RANGES

    at = open_at({"tasks": "8"})  # the number-of-tasks field is drawn only for a count of tasks
    for key, (low, high) in SIDEBAR_RANGES.items():
        field = at.sidebar.number_input(key=key)
        assert (field.min, field.max) == (low, high), key


# --- 2. one unreadable summary.json --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_run(tmp_path_factory, glue_dir) -> Path:
    """One finished run: the tiny model with PALs on 8 RTE rows, 2 steps."""
    from pals_core.budget import AdapterConfig
    from pals_core.train.config import TrainConfig
    from pals_core.train.trainer import train

    out = tmp_path_factory.mktemp("trained") / "good"
    train(
        TrainConfig(
            tasks=["rte"],
            adapter=AdapterConfig(method="pals", d_s=8, heads=2),
            model="tiny",
            glue_dir=str(glue_dir),
            steps=2,
            max_train_examples=8,
            max_eval_examples=8,
            out=str(out),
        ),
        progress=False,
    )
    return out


def _bad_summary(folder: Path, kind: str) -> None:
    folder.mkdir()
    path = folder / "summary.json"
    if kind == "invalid":
        path.write_text('{"average": 0.5,')
    elif kind == "deep":
        path.write_text("[" * 100000)
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # reading it would wait for a writer for ever
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "permission":
        path.write_text('{"average": 0.5}')
        path.chmod(0)


BAD = {
    "invalid": "summary.json is not valid JSON",
    "deep": "summary.json is nested too deeply",
    "folder": "summary.json is a directory",
    "fifo": "summary.json is a FIFO (named pipe), not a regular file",
    "loop": "summary.json cannot be read",
    "permission": "summary.json cannot be read: Permission denied",
}


@pytest.mark.parametrize(
    "kind",
    [
        k
        if k != "permission"
        else pytest.param(k, marks=pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000"))
        for k in BAD
    ],
)
def test_an_unreadable_summary_is_its_own_row(runs_dir, good_run, kind):
    shutil.copytree(good_run, runs_dir / "good")
    _bad_summary(runs_dir / "bad", kind)
    at = open_at({"model": "tiny", "tasks": "rte", "methods": "pals"})
    for view in VIEWS if kind == "deep" else ("designs", "runs"):  # the page itself failed on deep nesting
        show(at, view)
        assert not at.exception, (view, [e.value for e in at.exception])
        assert not [e for e in at.error if "failed" in e.value or "Bad input" in e.value], (view, page_errors(at))
        assert at.get("metric"), view  # the question is still answered
    show(at, "runs")
    runs = next(d.value for d in at.dataframe if "run" in d.value.columns and "status" in d.value.columns)
    rows = {r["run"]: r for _, r in runs.iterrows()}
    assert rows["good"]["status"] == "finished" and rows["good"]["problem"] == ""
    assert rows["bad"]["status"] == "unreadable", rows["bad"]
    reason = rows["bad"]["problem"]
    assert reason.startswith(BAD[kind]) and "\n" not in reason and str(runs_dir) not in reason, reason
    measured = next(d.value for d in at.dataframe if "design" in d.value.columns and "folder" in d.value.columns)
    assert list(measured["folder"]) == [str(runs_dir / "good")]  # the good run is measured, for this model and task
    assert list(measured["design"]) == ["pals @ all, d_s 8"]
    warning = " ".join(w.value for w in at.warning)
    assert "unreadable" in warning and f"`{runs_dir / 'bad'}`: {reason}" in warning
    assert not [e for e in at.error if e.value.startswith("died")]  # not mistaken for a run that died


# --- 3. report and Studies tab on studies pals-study did not write -------------------------------------------------


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
    assert rows["0"]["task-specific parameters"] == "1050" and rows["0"]["score rte (accuracy)"] == "0.5"
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


# --- 4. a surplus trial is not a failure ---------------------------------------------------------------------------


def _env(glue_dir: Path) -> dict:
    return {
        **os.environ,
        "PALS_GLUE_DIR": str(glue_dir),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


@pytest.mark.slow
def test_a_trial_beyond_the_target_is_pruned_not_failed(tmp_path, glue_dir, capsys):
    """Worker 1 takes the study's only place (--trials 1) and is killed while training it: its trial stays RUNNING
    with a fresh heartbeat. Worker 2 then finds the place taken: its trial is given up untrained — PRUNED with the
    reason, counted apart, never FAIL."""
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    tiny = [
        "--model",
        "tiny",
        "--tasks",
        "rte",
        "--steps",
        "2",
        "--max-train-examples",
        "8",
        "--max-eval-examples",
        "8",
        "--max-len",
        "16",
        "--batch-size",
        "4",
    ]
    assert pals_study(["create", "design", "--storage", url, *tiny]) == 0
    study = optuna.load_study(study_name="design", storage=url)
    first = subprocess.Popen(
        [EXE, "run", "design", "--storage", url, "--trials", "1", "--out", str(tmp_path / "w1"), "--threads", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(glue_dir),
    )
    try:
        deadline = time.monotonic() + 180
        while not any(t.state == TrialState.RUNNING and "error" in t.user_attrs for t in study.get_trials()):
            assert first.poll() is None and time.monotonic() < deadline, "worker 1 never started its trial"
            time.sleep(0.02)
    finally:
        first.send_signal(signal.SIGKILL)  # mid-trial: its design is recorded, its training under way
        first.wait(timeout=60)
    assert [t.state for t in study.get_trials()] == [TrialState.RUNNING], "worker 1 finished before it was stopped"

    assert (
        pals_study(
            [
                "run",
                "design",
                "--storage",
                url,
                "--trials",
                "1",
                "--out",
                str(tmp_path / "w2"),
                "--threads",
                "1",
                "--glue-dir",
                str(glue_dir),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    trials = study.get_trials()
    states = [t.state for t in trials]
    assert TrialState.FAIL not in states, states
    assert states == [TrialState.RUNNING, TrialState.PRUNED], states
    given_up = trials[1]
    assert given_up.user_attrs["surplus"].startswith("given up untrained: the study already had 1 trials")
    assert not given_up.intermediate_values and not given_up.params  # never trained
    assert not (tmp_path / "w2").exists() or not any((tmp_path / "w2").rglob("summary.json"))
    assert "0 pruned, 0 failed, 1 running, 0 waiting, 1 surplus" in out and "this worker ran 0" in out

    from studies.runner import counts, done

    assert counts(study)["PRUNED"] == 0 and counts(study)["SURPLUS"] == 1
    assert not done(study, 1)  # a surplus trial is no place of the target: worker 1's trial still holds it
