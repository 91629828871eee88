"""Study workers started from the explorer (``studies.workers``, ``pals_core.supervise.workers``) with the real ``pals-study`` worker (``--model
tiny``, real GLUE rows, a real SQLite Optuna storage in tmp_path): start, stop, resume, a tampered record, and the
Studies view's form. Every status is read back from the folder on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from streamlit.testing.v1 import AppTest

from pals_core.atomic import atomic_write_json, read_json
from pals_core.supervise.children import _CHILDREN
from pals_core.supervise.roots import RUNS_ENV, workers_root
from pals_core.supervise.workers import Worker, list_workers, load_worker, stop
from pals_core.train import lock as run_lock
from studies.workers import resume, resume_argv, settings_from_form, settings_of, start

EXE = os.path.join(os.path.dirname(sys.executable), "pals-study")
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
pytestmark = pytest.mark.slow  # every test starts real pals-study workers (torch, training): seconds each


@pytest.fixture
def env(tmp_path, glue_dir, monkeypatch):
    """Workers under tmp_path, one thread each; every worker still running at the end is stopped and reaped."""
    monkeypatch.setenv(RUNS_ENV, str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_GLUE_DIR", str(glue_dir))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    yield tmp_path
    for w in list_workers():
        stop(w)
    for w in list_workers():
        _wait(w.path, lambda w: not w.alive, 60)


def _settings(steps: int = 4):
    return settings_from_form("design", tasks="rte,mrpc", model="tiny", budget=1.05, steps=steps, max_examples=16)


def _wait(path: Path, until, timeout: float = 90.0) -> Worker:
    end = time.time() + timeout
    while True:
        w = load_worker(path)
        if until(w):
            return w
        if time.time() > end:
            raise AssertionError(f"worker {w.id} stuck at {w.status}; log:\n{w.log_tail(30)}")
        time.sleep(0.25)


def _trials(url: str, name: str) -> list:
    return optuna.load_study(study_name=name, storage=url).trials


def _wait_training(w: Worker, timeout: float = 90.0) -> None:
    """Until the worker's trial is in its training loop (a progress.json past step 0 in its trial folder): the
    trainer's SIGTERM handler is installed then (before, SIGTERM ends the worker at once, exit -15)."""
    end = time.time() + timeout
    while time.time() < end:
        for p in w.path.rglob("progress.json"):
            progress = read_json(p, or_none=True) or {}
            if progress.get("status") == "running" and (progress.get("step") or 0) > 0:
                return
        assert load_worker(w.path).alive, load_worker(w.path).log_tail(30)
        time.sleep(0.25)
    raise AssertionError("no trial started")


def _bystander() -> subprocess.Popen:
    """An unrelated process that must never be signalled."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)


def test_start_runs_the_study_and_keeps_the_exit_status(env):
    url = f"sqlite:///{env / 'studies.db'}"
    w = start(_settings(), url, "smoke", 1, threads=1)
    argv = json.loads((w.path / "worker.json").read_text())["argv"]
    assert argv[:5] == [sys.executable, "-m", "studies.cli", "run", "design"] and "--storage" in argv
    assert argv[argv.index("--out") + 1] == str(w.path) and w.path.parent == workers_root().resolve()
    done = _wait(w.path, lambda w: not w.alive)
    assert (done.status, done.exit_code) == ("finished", 0), done.log_tail(30)
    assert sum(t.state in FINISHED for t in _trials(url, "smoke")) == 1
    # a server restart: the Popen is gone, exit.json still knows the status
    _CHILDREN.pop(w.owner, None)
    again = load_worker(w.path)
    assert (again.status, again.exit_code, again.alive) == ("finished", 0, False)
    assert [x.id for x in list_workers()] == [w.id]


def test_stop_then_resume_rebuilds_the_argv(env):
    url = f"sqlite:///{env / 'studies.db'}"
    bystander = _bystander()
    try:
        w = start(_settings(steps=400), url, "stopme", 1, threads=1)
        first_argv = json.loads((w.path / "worker.json").read_text())["argv"]
        _wait_training(w)
        pid = w.owner
        assert stop(w)
        stopped = _wait(w.path, lambda w: not w.alive, 60)
        assert (stopped.status, stopped.exit_code) == ("stopped", 130), stopped.log_tail(30)
        with pytest.raises(ProcessLookupError):  # reaped by our Popen: gone
            os.kill(pid, 0)
        assert bystander.poll() is None  # nothing unrelated signalled
        assert not stop(stopped)  # nothing to stop: no signal at all
        # resume: the argument list comes from the stored settings, the same as the first launch
        record = json.loads((w.path / "worker.json").read_text())
        record["argv"] = [sys.executable, "-c", "raise SystemExit(7)"]  # a record, never run
        atomic_write_json(w.path / "worker.json", record)
        assert resume_argv(load_worker(w.path)) == first_argv
        resumed = resume(stopped)
        assert resumed.alive and run_lock.cmdline(resumed.owner) == first_argv
        history = json.loads((w.path / "worker.json").read_text())["history"]
        assert history[-1]["exit_code"] == 130 and history[-1]["status"] == "stopped"
        assert stop(resumed)
        again = _wait(w.path, lambda w: not w.alive, 60)
        # stopped at once (before its trainer's loop: default SIGTERM, -15) or after a step (130): recorded either way
        assert again.status == "stopped" and again.exit_code in (130, -15) and bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_tampered_record_is_never_run_or_signalled(env):
    url = f"sqlite:///{env / 'studies.db'}"
    root = workers_root()
    bystander = _bystander()
    marker = env / "pwned"
    try:
        folder = root / "forged"
        folder.mkdir(parents=True)
        # the bystander's own pid, start time and command line: still not a study worker on this folder
        record = {
            "id": "forged",
            "pid": bystander.pid,
            "pid_start": run_lock.start_time(bystander.pid),
            "argv": run_lock.cmdline(bystander.pid),
            "started": time.time(),
            "storage": url,
            "study_name": "forged",
            "trials": 1,
            "settings": _settings().as_dict(),
        }
        atomic_write_json(folder / "worker.json", record)
        w = load_worker(folder)
        assert w.owner is None and not w.alive
        assert not stop(w)
        # a foreign argv that would write a file: resume runs the study's entry point from the settings instead
        record["argv"] = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
        atomic_write_json(folder / "worker.json", record)
        argv = resume_argv(load_worker(folder))
        assert argv[1:4] == ["-m", "studies.cli", "run"] and str(marker) not in " ".join(argv)
        done = _wait(resume(load_worker(folder)).path, lambda w: not w.alive)
        assert done.exit_code == 0 and not marker.exists(), done.log_tail(30)
        assert bystander.poll() is None
        # settings that do not validate, or a storage that is not a URL: nothing starts
        for bad in (
            {"settings": {"definition": "design", "steps": -3}},
            {"storage": "; rm -rf /"},
            {"study_name": "\x00"},
            {"trials": "1; reboot"},
        ):
            atomic_write_json(folder / "worker.json", {**record, **bad})
            with pytest.raises(ValueError):
                resume(load_worker(folder))
        assert json.loads((folder / "worker.json").read_text())["pid"] == bystander.pid  # nothing was started
    finally:
        bystander.kill()
        bystander.wait()


def test_the_studies_view_starts_a_study_from_its_form(env):
    url = f"sqlite:///{env / 'studies.db'}"
    at = AppTest.from_string(
        f"import sys\nfrom explorer import studies_view\nstudies_view.render({url!r})\n", default_timeout=60
    ).run()
    assert not at.exception
    at.text_input(key="study_start_name").set_value("from-the-page")
    at.selectbox(key="study_start_model").set_value("tiny random BERT (smoke study)")
    at.number_input(key="study_start_steps").set_value(4)
    at.number_input(key="study_start_trials").set_value(1)
    at.number_input(key="study_start_examples").set_value(16)
    at.number_input(key="study_start_budget").set_value(1.05)
    at.text_input(key="study_start_memory").set_value("24GiB")  # a machine budget, stored with the study
    at.selectbox(key="study_start_device").set_value("t4")
    at.button[0].click()  # the form's Start
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Started worker" in s.value for s in at.success)
    workers = list_workers()
    assert len(workers) == 1 and workers[0].get("study_name") == "from-the-page"
    assert settings_of(workers[0]).machine == {
        "device": "t4",
        "precision": "fp32",
        "memory": "24GiB",
        "max_slowdown": None,
        "memory_infer": None,
    }
    assert any(workers[0].id in m.value and "from-the-page" in m.value for m in at.markdown)
    done = _wait(workers[0].path, lambda w: not w.alive)
    assert done.exit_code == 0, done.log_tail(30)
    at.run()  # reload: the worker and its status read back from disk; the study now listed
    assert any(f"**{done.status}**" in m.value for m in at.markdown)
    assert at.selectbox(key="studies_view_study").value == "from-the-page"
