"""Studies never write outside their folders, never change a storage they only read, and never run more trials than
asked. Real Optuna storages (SQLite), real training where a trial must run."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from studies import naming
from studies.cli import main
from studies.errors import StudyError
from studies.objective import surplus

EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")
TINY = [
    "--model",
    "tiny",
    "--tasks",
    "rte,mrpc",
    "--steps",
    "4",
    "--eval-every",
    "4",
    "--max-train-examples",
    "32",
    "--max-eval-examples",
    "16",
    "--max-len",
    "32",
    "--batch-size",
    "4",
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


def cli(argv, capsys) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, [line for line in out.err.splitlines() if line.strip()]


def tables(db: Path) -> list[str]:
    with sqlite3.connect(db) as c:
        return sorted(r[0] for r in c.execute("select name from sqlite_master where type='table'"))


# ------------------------------------------------------------------------------------ names are not paths


@pytest.mark.parametrize(
    "name", ["../../escaped_run", "/abs/olute", "..", ".", "a/b", "x\\y", "ünï côde", "-x", ".hidden"]
)
def test_a_study_name_maps_to_one_folder_under_out(tmp_path, name):
    folder = naming.folder_name(name)
    assert "/" not in folder and "\\" not in folder and not folder.startswith(".") and folder not in ("", "..")
    root = Path(naming.trial_root(str(tmp_path), name, "0123abcd"))
    assert root.parent.parent == tmp_path.resolve() and root.name == "0123abcd"
    assert Path(naming.report_folder(str(tmp_path), name)).parent.parent == tmp_path
    assert naming.folder_name(name + "x") != folder  # distinct names, distinct folders
    assert naming.folder_name("design") == "design"


def test_empty_names_and_malformed_keys_are_refused():
    for bad in ("", "   ", "a\nb"):
        with pytest.raises(StudyError):
            naming.check_study_name(bad)
    with pytest.raises(StudyError, match="malformed pals_run_key"):
        naming.trial_root("out", "design", "../../x")


def test_an_empty_study_name_exits_2(tmp_path, capsys):
    rc, _, err = cli(
        ["create", "design", "--study-name", "", "--storage", f"sqlite:///{tmp_path / 's.db'}", *TINY], capsys
    )
    assert rc == 2 and len(err) == 1 and "study name is empty" in err[0]
    assert not (tmp_path / "s.db").exists()


@pytest.mark.slow
def test_trials_stay_under_out_and_a_recreated_study_does_not_collide(tmp_path, glue_dir):
    out = tmp_path / "out"
    for storage in ("first.db", "second.db"):  # the same name in a new storage, the old trial folders still there
        url = f"sqlite:///{tmp_path / storage}"
        p = subprocess.run(
            [
                EXE,
                "run",
                "design",
                "--study-name",
                "../../escaped_run",
                "--trials",
                "1",
                "--storage",
                url,
                "--out",
                str(out),
                "--threads",
                "1",
                "--sampler-seed",
                "0",
                *TINY,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env=_env(glue_dir),
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stderr[-2000:]
        study = optuna.load_study(study_name="../../escaped_run", storage=url)
        (trial,) = study.get_trials()
        assert trial.state in (TrialState.COMPLETE, TrialState.PRUNED), trial.user_attrs.get("error")
        run_dir = Path(trial.user_attrs["run_dir"])
        assert run_dir.parent == out / naming.folder_name("../../escaped_run") / study.user_attrs[naming.RUN_KEY_ATTR]
    assert not (tmp_path.parent.parent / "escaped_run").exists()
    assert len(list((out / naming.folder_name("../../escaped_run")).iterdir())) == 2  # one keyed folder per storage


# --------------------------------------------------------------------------------------- reading is read-only


def test_list_report_and_the_studies_tab_leave_a_foreign_database_alone(tmp_path, capsys):
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as c:
        c.execute("create table mine (x integer)")
    url = f"sqlite:///{db}"
    rc, out, err = cli(["list", "--storage", url], capsys)
    assert rc == 0 and "holds no studies" in out and not err
    rc, _, err = cli(["report", "design", "--storage", url], capsys)
    assert rc == 2 and len(err) == 1 and "holds no studies" in err[0]
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string(f"from explorer.studies_view import render\nrender({url!r})\n", default_timeout=60).run()
    assert not at.exception and not at.error
    assert any("No study in this storage" in i.value for i in at.info)
    assert tables(db) == ["mine"]


def test_list_on_an_optuna_database_without_studies_says_so(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    optuna.storages.RDBStorage(url)  # Optuna's tables, no study
    before = tables(tmp_path / "empty.db")
    rc, out, _ = cli(["list", "--storage", url], capsys)
    assert rc == 0 and "no studies in" in out
    assert tables(tmp_path / "empty.db") == before


def test_report_to_a_folder_that_cannot_be_written_exits_2(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 's.db'}"
    optuna.create_study(storage=url, study_name="plain")
    rc, _, err = cli(["report", "plain", "--storage", url, "--out", "/proc/forbidden"], capsys)
    assert rc == 2 and len(err) == 1 and "/proc/forbidden" in err[0] and "Traceback" not in err[0]


def test_a_missing_mysql_driver_names_a_mysql_driver(tmp_path, capsys):
    import importlib.util

    if importlib.util.find_spec("MySQLdb") is not None:
        pytest.skip("mysqlclient is installed here")
    rc, _, err = cli(["list", "--storage", "mysql://u:secret@127.0.0.1:1/db"], capsys)
    assert rc == 2 and len(err) == 1 and "driver missing" in err[0]
    assert "MySQL" in err[0] and "psycopg" not in err[0] and "secret" not in err[0]


# --------------------------------------------------------------------------------------- --trials is exact


def test_a_trial_beyond_the_target_is_given_up(tmp_path):
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 's.db'}", study_name="s")
    done = study.ask()
    study.tell(done, 1.0)
    failed = study.ask()
    study.tell(failed, state=TrialState.FAIL)
    a, b = study.ask(), study.ask()  # two workers passed the "not done yet" check together, target 2
    assert not surplus(a, 2) and surplus(b, 2)
    assert not surplus(b, 3)
