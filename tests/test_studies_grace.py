"""A worker killed mid-trial, and another started at once, within the dead trial's grace period: the new worker waits
the grace out, fails the dead trial, trains it again (from its checkpoint) and the study ends with exactly its trials,
none left running — real ``pals-study`` processes, a real SQLite storage, the tiny random BERT on real GLUE rows. The
study holds a short heartbeat and grace (``--heartbeat 1 --grace 20``: settings of the study, stored in it).

And what a person sees of a trial whose worker is gone, before any worker fails it: ``pals-study list``, ``report``
and the Studies page say "stale (last heartbeat … ago)" and what will retry it, never "running"."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from pals_core.cli.runs import worker_row
from pals_core.supervise.workers import Worker
from studies.cli import main as pals_study
from studies.runner import DEFINITION_ATTR
from studies.settings import SETTINGS_ATTR, StudySettings
from studies.storage import heartbeat_ages, open_storage, retry_of

EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")
GRACE_S = 20  # long enough for the second worker to start (torch and all) on a busy machine
TINY = [
    "--model",
    "tiny",
    "--tasks",
    "rte",
    "--max-train-examples",
    "32",
    "--max-eval-examples",
    "16",
    "--max-len",
    "16",
    "--batch-size",
    "4",
    "--budget",
    "1.05",
    "--heartbeat",
    "1",
    "--grace",
    str(GRACE_S),
]


def _env(glue_dir: Path) -> dict:
    return {
        **os.environ,
        "PALS_GLUE_DIR": str(glue_dir),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def _worker(url: str, out: Path, log: Path, glue_dir: Path) -> subprocess.Popen:
    cmd = [EXE, "run", "design", "--storage", url, "--trials", "1", "--out", str(out), "--threads", "1"]
    return subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=_env(glue_dir))


@pytest.mark.slow  # two worker processes, a short training and the grace waited out: ~40 s
def test_a_worker_started_within_the_grace_retries_the_dead_trial(tmp_path, glue_dir):
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    assert pals_study(["create", "design", "--storage", url, "--steps", "40", "--eval-every", "10", *TINY]) == 0
    storage = open_storage(url, create=False)
    study = optuna.load_study(study_name="design", storage=storage)
    a = _worker(url, tmp_path / "out", tmp_path / "a.log", glue_dir)
    victim = None
    try:
        deadline = time.monotonic() + 180
        while victim is None and time.monotonic() < deadline and a.poll() is None:
            running = [t for t in study.get_trials() if t.state == TrialState.RUNNING]
            if running and running[0].user_attrs.get("last_step", 0) >= 10:  # after its first evaluation + checkpoint
                victim = running[0]
                a.send_signal(signal.SIGKILL)
            time.sleep(0.05)
    finally:
        if a.poll() is None:
            a.kill()
        a.wait(timeout=30)
    assert victim is not None, "worker A never reached its first evaluation:\n" + (tmp_path / "a.log").read_text()
    age = heartbeat_ages(storage, study)[victim.number]
    assert age < GRACE_S, f"the dead trial's heartbeat is {age} s old: B would not start within the grace period"

    killed = time.monotonic()
    b = _worker(url, tmp_path / "b", tmp_path / "b.log", glue_dir)  # at once: the dead trial looks alive still
    assert b.wait(timeout=240) == 0, (tmp_path / "b.log").read_text()[-3000:]
    assert time.monotonic() - killed > GRACE_S - age  # B waited the dead trial's grace out
    log = (tmp_path / "b.log").read_text()
    assert "waiting: the study's last 1 place held by running 1 trial" in log, log[-3000:]

    trials = {t.number: t for t in study.get_trials()}
    states = [t.state for t in trials.values()]
    assert TrialState.RUNNING not in states and TrialState.WAITING not in states, states
    assert trials[victim.number].state == TrialState.FAIL  # the dead trial: failed, no place of the target …
    finished = [t for t in trials.values() if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == 1 and not any(t.user_attrs.get("surplus") for t in trials.values()), states
    retry = finished[0]  # … its retry, trained by B from the dead trial's checkpoint, is the study's one trial
    assert retry_of(retry) == victim.number and retry.params == victim.params
    assert retry.user_attrs["resumed"] is True and retry.user_attrs["run_dir"] == victim.user_attrs["run_dir"]
    assert retry.state == TrialState.COMPLETE and Path(retry.user_attrs["run_dir"], "summary.json").is_file()
    # B's progress is the study's: its one trial trained in A's folder, none under B's, and still 1 of 1
    assert not list((tmp_path / "b").rglob("summary.json"))
    row = worker_row(Worker("b", tmp_path / "b", {"trials": 1}, "finished", None, 0, False))
    assert (row.step, row.steps) == (1, 1)


def _stale_study(url: str) -> optuna.Study:
    """A pals-study design study (its settings as ``create`` stores them: heartbeat 1 s, so a grace of 2 s) with one
    complete trial and one RUNNING trial whose worker stopped: its heartbeat recorded, then silence past the grace."""
    storage = open_storage(url, heartbeat=1, grace=2, max_retry=3)
    study = optuna.create_study(study_name="design", storage=storage, direction="maximize")
    study.set_user_attr(DEFINITION_ATTR, "design")
    study.set_user_attr(SETTINGS_ATTR, StudySettings(definition="design", model="tiny", heartbeat=1).as_dict())
    done = study.ask()
    done.set_user_attr("design", "lora @ all")
    done.set_user_attr("params_task_specific", 1000)
    study.tell(done, 0.5)
    dead = study.ask()
    dead.set_user_attr("design", "pals @ all")
    storage.record_heartbeat(dead._trial_id)  # what a worker's heartbeat thread writes …
    time.sleep(3.2)  # … and then nothing: the worker is gone (the database's clock counts whole seconds)
    return study


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize")
def test_a_stale_trial_is_shown_stale_with_what_retries_it(tmp_path, capsys, monkeypatch):
    from streamlit.testing.v1 import AppTest

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    _stale_study(url)
    capsys.readouterr()

    assert pals_study(["list", "--storage", url]) == 0
    out = capsys.readouterr().out
    assert "design\tdesign\t2 trials: 1 complete, 1 stale\n" in out, out
    assert re.search(r"trial 1: stale \(last heartbeat [3-9] s ago, grace 2 s\): the next worker", out), out
    assert "fails it and trains it again" in out and "retry 1 of 3" in out

    assert pals_study(["report", "design", "--storage", url, "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "1 complete, 0 pruned, 0 failed, 0 running, 1 stale, 0 waiting" in out, out
    assert "trial 1: stale (last heartbeat" in out
    rows = list(csv.DictReader((tmp_path / "r" / "trials.csv").open()))
    assert rows[1]["state"].startswith("stale (last heartbeat") and "retry 1 of 3" in rows[1]["note"]

    monkeypatch.setenv("PALS_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_string(f"from explorer.studies_view import render\nrender({url!r})\n", default_timeout=60).run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["stale"] == "1" and metrics["running"] == "0"
    assert any(w.value.startswith("Trial 1 is stale (last heartbeat") and "retry 1 of 3" in w.value for w in at.warning)


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize")
def test_a_trial_started_when_every_place_is_taken_is_surplus_not_a_failure(tmp_path):
    """Two workers that ask for the study's last place at the same moment: the later trial is given up before it
    trains — stored PRUNED (never FAIL) with the reason, counted apart, no place of the target — while the other
    worker's trial, alive, holds the place (``run_worker`` then waits for it instead of starting another)."""
    from studies.definitions import get_definition
    from studies.objective import SURPLUS_ATTR, Objective
    from studies.runner import counts, wait_for_a_place

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    storage = open_storage(url, heartbeat=1, grace=600, max_retry=3)  # alive throughout, however slow the machine
    study = optuna.create_study(study_name="design", storage=storage, direction="maximize")
    other = study.ask()  # the other worker's trial, alive
    storage.record_heartbeat(other._trial_id)
    objective = Objective(get_definition("design"), None, None, str(tmp_path / "out"), target=1)
    study.optimize(objective, n_trials=1)
    given_up = study.get_trials()[1]
    assert objective.surplus and given_up.state == TrialState.PRUNED and not given_up.params
    assert given_up.user_attrs[SURPLUS_ATTR].startswith("given up untrained: the study already had 1 trial finished")
    assert counts(study)["PRUNED"] == 0 and counts(study)["SURPLUS"] == 1  # no place of the target
    said = []
    assert wait_for_a_place(study, 1, deadline=time.monotonic() + 0.5, log=said.append, poll_s=0.1) == "timeout"
    assert said == [
        "waiting: the study's last 1 place held by running 1 trial (0); if a worker of them died, its trial is "
        "failed here without a heartbeat and trained again"
    ]
    assert not (tmp_path / "out").exists()  # nothing trained
