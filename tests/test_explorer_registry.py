"""The run registry with the real trainer (``--model tiny``, real GLUE rows): launch, watch, a crash,
a kill, cancel, resume. The folder on disk is the truth: every status here is read back from it."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from explorer import registry
from pals_core.budget import AdapterConfig
from pals_core.train.config import TrainConfig


def _wait(run_dir: Path, until, timeout: float = 90.0) -> registry.Run:
    end = time.time() + timeout
    while True:
        run = registry.load_run(run_dir)
        if until(run):
            return run
        if time.time() > end:
            raise AssertionError(f"run {run.id} stuck at {run.status}; log:\n{run.log_tail(20)}")
        time.sleep(0.25)


def _spec(glue_dir, **kw) -> TrainConfig:
    base = dict(tasks=["rte", "mrpc"], adapter=AdapterConfig(method="pals", d_s=24, location="top"), model="tiny",
                glue_dir=str(glue_dir), steps=40, batch_size=8, eval_every=10, max_train_examples=64, max_eval_examples=32,
                max_len=64, num_threads=1)
    base.update(kw)
    return TrainConfig(**base)


def test_atomic_json_and_tolerant_reads(tmp_path):
    registry.write_json_atomic(tmp_path / "a.json", {"x": 1})
    assert registry.read_json(tmp_path / "a.json") == {"x": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]  # no temp file left behind
    (tmp_path / "half.json").write_text('{"status": "runn')
    assert registry.read_json(tmp_path / "half.json") is None
    assert registry.read_json(tmp_path / "missing.json") is None


def test_run_names_are_checked(tmp_path):
    spec = TrainConfig(tasks=["rte"], adapter=AdapterConfig(method="pals", d_s=24))
    assert registry.new_run_id(spec, "my-run_1.2") == "my-run_1.2"
    for bad in ("../x", "a b", "/abs", ".hidden"):
        with pytest.raises(ValueError, match="run name"):
            registry.new_run_id(spec, bad)
    assert registry.new_run_id(spec).split("-")[2] == "pals"


def test_runs_dir_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(registry.RUNS_ENV, str(tmp_path / "elsewhere"))
    assert registry.runs_root() == tmp_path / "elsewhere"
    monkeypatch.delenv(registry.RUNS_ENV)
    assert registry.runs_root() == Path("runs")


@pytest.mark.slow
def test_a_run_the_trainer_refuses_shows_its_error_and_log(tmp_path):
    empty = tmp_path / "no-glue"
    empty.mkdir()
    run = registry.launch(_spec(empty), root=tmp_path / "runs", name="bad-data")
    launch = json.loads((run.path / "launch.json").read_text())
    assert launch["argv"][1:3] == ["-m", "pals_core.train.cli"] and launch["pid"] == run.pid
    done = _wait(run.path, lambda r: not r.alive, timeout=60)
    assert done.status == "died" and done.exit_code == 2
    assert "exit status 2" in done.error
    assert "GLUE" in done.log_tail() and "Traceback" not in done.log_tail()


@pytest.mark.slow
def test_restart_kill_resume_cancel(tmp_path, glue_dir):
    root = tmp_path / "runs"
    # 0. launched by another process that then exits (a server restart): the folder alone tells the status
    spec = _spec(glue_dir, steps=200)
    code = (f"from explorer import registry; from pals_core.train.config import TrainConfig; "
            f"registry.launch(TrainConfig.from_dict({spec.as_dict()!r}), root={str(root)!r}, name='life')")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    run = registry.load_run(root / "life")
    assert run.alive and os.getpgid(run.pid) == run.pid  # its own session: cancel reaches the whole group
    assert [r.id for r in registry.list_runs(root)] == ["life"]
    # 1. killed hard while training: progress still says "running", the pid is gone → died
    _wait(run.path, lambda r: r.status == "running" and (r.progress or {}).get("step", 0) >= 12)
    os.killpg(run.pid, signal.SIGKILL)
    died = _wait(run.path, lambda r: not r.alive, timeout=20)
    assert died.status == "died" and json.loads((run.path / "progress.json").read_text())["status"] == "running"
    assert died.exit_code is None and "without writing a final status" in died.error  # not our child: no exit code
    # 2. resume: a new process in the same folder, with --resume; the stale progress is not trusted
    resumed = registry.resume(died)
    assert resumed.status == "starting" and resumed.progress is None
    assert resumed.launch["argv"][-1] == "--resume" and resumed.pid != died.pid
    assert resumed.launch["history"][0]["status"] == "died"
    # it continues from the checkpoint written at step 10, not from step 0
    running = _wait(run.path, lambda r: r.status == "running" and (r.progress or {}).get("step", 0) > 0)
    assert running.progress["step"] >= 10, running.progress
    # 3. cancel: SIGTERM to the group → the trainer checkpoints and writes "stopped"
    assert registry.cancel(running)
    stopped = _wait(run.path, lambda r: not r.alive, timeout=30)
    assert stopped.status == "stopped" and stopped.cancelled
    assert json.loads((run.path / "progress.json").read_text())["status"] == "stopped"  # the trainer's own word
    assert stopped.exit_code == 143  # our child this time: its exit status is known (SIGTERM → 143)
    assert stopped.row()["status"] == "stopped" and registry.cancel(stopped) is False
