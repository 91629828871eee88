"""``pals-study`` on bad input: exit status 2, one line on stderr that names the problem, never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from studies.cli import main


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def existing_db(tmp_path):
    """A real SQLite study file holding one (empty) study named 'design'."""
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    assert main(["create", "design", "--storage", url, "--model", "tiny"]) == 0
    return url


def _cases(tmp_path, existing_db):
    missing = f"sqlite:///{tmp_path / 'nope.db'}"
    return [
        (["report", "design", "--storage", "definitely not a url"], "not a database URL"),
        (["report", "design", "--storage", "oracle2://u@h/db"], "unknown database kind"),
        (["report", "design", "--storage", f"postgresql://u@127.0.0.1:{_free_port()}/db"], "cannot open storage"),
        (["report", "design", "--storage", missing], "no SQLite study file"),
        (["report", "nosuch", "--storage", existing_db], "no study named 'nosuch'"),
        (["list", "--storage", missing], "no SQLite study file"),
        (["run", "nosuch", "--storage", existing_db], "unknown study 'nosuch'"),
        (["run", "design", "--storage", existing_db, "--trials", "0"], "--trials"),
        (["run", "design", "--storage", existing_db, "--steps", "50"], "created with steps"),
        (
            ["run", "design", "--storage", existing_db, "--study-name", "desgn"],
            "no study named 'desgn' in this storage; closest: design. Give one of them with --study-name, or add "
            "--create",
        ),
        (
            ["create", "design", "--storage", f"sqlite:///{tmp_path}/c.db", "--model", "tiny", "--max-d-s", "5"]
            + ["--methods", "pals"],
            "--max-d-s 5 leaves no design: the smallest d_s of pals within the budget ≤ 1.1× the base model is 12 "
            "(a multiple of h_s = 12); raise --max-d-s or drop it",
        ),
        (
            ["create", "design", "--storage", f"sqlite:///{tmp_path}/c.db", "--heartbeat", "2", "--grace", "2"],
            "--grace 2 must exceed the heartbeat interval (2 s)",
        ),
        (["create", "design", "--storage", f"sqlite:///{tmp_path}/a.db", "--budget", "0.5"], "below 1.0"),
        (
            ["create", "design", "--storage", f"sqlite:///{tmp_path}/a.db", "--methods", "pals,nope"],
            "unknown method 'nope'",
        ),
        (["create", "design", "--storage", f"sqlite:///{tmp_path}/a.db", "--d-s", "24"], "fix the design"),
        (["create", "design", "--storage", f"sqlite:///{tmp_path}/no/such/dir.db"], "does not exist"),
        (
            ["create", "design", "--storage", f"sqlite:///{tmp_path}/a.db", "--budget", "1.1", "--extra", "1M"],
            "conflicting budgets",
        ),
        (["create", "design", "--storage", f"sqlite:///{tmp_path}/a.db", "--tasks", "rte,foo"], "unknown task"),
        (
            ["create", "design", "--storage", f"sqlite:///{tmp_path}/a.db", "--model", str(tmp_path / "nomodel")],
            "no such folder",
        ),
        (["run", "design", "--storage", existing_db, "--glue-dir", str(tmp_path)], "GLUE files missing"),
        (["frobnicate"], "invalid choice"),
        (["run", "design", "--storage", existing_db, "--sampler-seed", "x"], "--sampler-seed 'x' is not an integer"),
        (
            ["create", "optimizer", "--storage", f"sqlite:///{tmp_path}/b.db", "--model", "tiny", "--d-s", "480"],
            "over the budget",
        ),
        (
            ["create", "design", "--storage", f"sqlite:///{tmp_path}/b.db", "--model", "tiny", "--max-len", "513"],
            "--max-len: sequence length 513 exceeds tiny's 512 positions",
        ),
    ]


@pytest.mark.slow  # ~0.5-1.3 s: make test, not make test-fast (under a minute on 2 cores)
def test_bad_input_exits_2_with_one_line(tmp_path, existing_db, capsys):
    capsys.readouterr()
    for argv, needle in _cases(tmp_path, existing_db):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2, (argv, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pals-study: error: "), (argv, err)
        assert needle in lines[0], (argv, lines[0])
    assert not os.path.exists(tmp_path / "nope.db"), "reading a missing SQLite file must not create it"
    assert main(["list", "--storage", f"sqlite:///{tmp_path}/b.db"]) == 0
    assert capsys.readouterr().out.startswith("no studies in "), (
        "a study whose fixed design does not fit the budget is never created"
    )
    assert main(["list", "--storage", existing_db]) == 0
    assert capsys.readouterr().out == "design\tdesign\t0 trials\n", "a mistyped name made no study"


@pytest.mark.slow  # a worker's start (the model code, the GLUE rows)
def test_create_makes_a_new_study_beside_others(existing_db, glue_dir, capsys):
    """``run --create`` on a name the storage does not hold makes that study (the typo refusal's way out)."""
    argv = ["run", "design", "--storage", existing_db, "--study-name", "second", "--model", "tiny", "--create"]
    assert main([*argv, "--timeout", "0.001", "--glue-dir", str(glue_dir)]) == 0
    assert "this worker ran 0" in capsys.readouterr().out
    assert main(["list", "--storage", existing_db]) == 0
    assert capsys.readouterr().out.splitlines() == ["design\tdesign\t0 trials", "second\tdesign\t0 trials"]


@pytest.mark.slow
def test_console_script_reports_storage_errors_without_traceback(tmp_path):
    """The installed entry point, as a user runs it: a refused PostgreSQL connection and an unknown study."""
    exe = os.path.join(os.path.dirname(sys.executable), "pals-study")
    for args, needle in (
        (["report", "x", "--storage", f"postgresql://me:secret@127.0.0.1:{_free_port()}/db"], "cannot open storage"),
        (["report", "x", "--storage", f"sqlite:///{tmp_path / 'missing.db'}"], "no SQLite study file"),
    ):
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, p
        assert p.stderr.count("\n") == 1 and needle in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert "secret" not in p.stderr, "passwords are masked in messages"
