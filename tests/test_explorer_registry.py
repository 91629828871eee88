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

from pals_core.atomic import atomic_write_json, read_json
from pals_core.pricing.config import AdapterConfig
from pals_core.supervise import runs as supervise_runs
from pals_core.supervise.roots import RUNS_ENV, runs_root
from pals_core.supervise.runs import Run, cancel, list_runs, load_run, new_run_id, resume
from pals_core.train import lock
from pals_core.train.config import TrainConfig


def _wait(run_dir: Path, until, timeout: float = 90.0) -> Run:
    end = time.time() + timeout
    while True:
        run = load_run(run_dir)
        if until(run):
            return run
        if time.time() > end:
            raise AssertionError(f"run {run.id} stuck at {run.status}; log:\n{run.log_tail(20)}")
        time.sleep(0.25)


def _spec(glue_dir, **kw) -> TrainConfig:
    base = dict(
        tasks=["rte", "mrpc"],
        adapter=AdapterConfig(method="pals", d_s=24, location="top"),
        model="tiny",
        glue_dir=str(glue_dir),
        steps=40,
        batch_size=8,
        eval_every=10,
        max_train_examples=64,
        max_eval_examples=32,
        max_len=64,
        num_threads=1,
    )
    base.update(kw)
    return TrainConfig(**base)


def test_atomic_json_and_tolerant_reads(tmp_path):
    atomic_write_json(tmp_path / "a.json", {"x": 1})
    assert read_json(tmp_path / "a.json", or_none=True) == {"x": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]  # no temp file left behind
    (tmp_path / "half.json").write_text('{"status": "runn')
    (tmp_path / "list.json").write_text("[1, 2]")
    for name in ("half.json", "missing.json", "list.json"):  # a file another process writes: absent is a state
        assert read_json(tmp_path / name, or_none=True) is None
    with pytest.raises(ValueError):  # a file the program needs: its problem is an error
        read_json(tmp_path / "half.json")
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "missing.json")


def test_run_names_are_checked(tmp_path):
    spec = TrainConfig(tasks=["rte"], adapter=AdapterConfig(method="pals", d_s=24))
    assert new_run_id(spec, "my-run_1.2") == "my-run_1.2"
    for bad in ("../x", "a b", "/abs", ".hidden"):
        with pytest.raises(ValueError, match="run name"):
            new_run_id(spec, bad)
    assert new_run_id(spec).split("-")[2] == "pals"


def test_runs_dir_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(RUNS_ENV, str(tmp_path / "elsewhere"))
    assert runs_root() == tmp_path / "elsewhere"
    monkeypatch.delenv(RUNS_ENV)
    assert runs_root() == Path("runs")


@pytest.mark.slow
def test_a_run_the_trainer_refuses_shows_its_error_and_log(tmp_path):
    empty = tmp_path / "no-glue"
    empty.mkdir()
    run = supervise_runs.launch(_spec(empty), root=tmp_path / "runs", name="bad-data")
    launch = json.loads((run.path / "launch.json").read_text())
    assert launch["argv"][1:3] == ["-m", "pals_core.cli.train"] and launch["pid"] == run.pid
    done = _wait(run.path, lambda r: not r.alive, timeout=60)
    assert done.status == "died" and done.exit_code == 2
    assert "exit status 2" in done.error
    assert "GLUE" in done.log_tail() and "Traceback" not in done.log_tail()


@pytest.mark.slow
def test_restart_kill_resume_cancel(tmp_path, glue_dir):
    root = tmp_path / "runs"
    # 0. launched by another process that then exits (a server restart): the folder alone tells the status
    spec = _spec(glue_dir, steps=200)
    code = (
        f"from pals_core.supervise.runs import launch; from pals_core.train.config import TrainConfig; "
        f"launch(TrainConfig.from_dict({spec.as_dict()!r}), root={str(root)!r}, name='life')"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    run = load_run(root / "life")
    assert run.alive and os.getpgid(run.pid) == run.pid  # its own session: cancel reaches the whole group
    assert [r.id for r in list_runs(root)] == ["life"]
    # 1. killed hard while training: progress still says "running", the pid is gone → died
    _wait(run.path, lambda r: r.status == "running" and (r.progress or {}).get("step", 0) >= 12)
    os.killpg(run.pid, signal.SIGKILL)
    died = _wait(run.path, lambda r: not r.alive, timeout=20)
    assert died.status == "died" and json.loads((run.path / "progress.json").read_text())["status"] == "running"
    assert died.exit_code is None  # not our child: no exit code
    assert died.stale and died.error.startswith('stale: progress.json still says "running"')
    # 2. resume: a new process in the same folder, with --resume; the stale progress is not trusted
    resumed = resume(died)
    assert resumed.status == "starting" and resumed.progress is None
    assert resumed.launch["argv"][-1] == "--resume" and resumed.pid != died.pid
    assert resumed.launch["history"][0]["status"] == "died"
    # it continues from the checkpoint written at step 10, not from step 0
    running = _wait(run.path, lambda r: r.status == "running" and (r.progress or {}).get("step", 0) > 0)
    assert running.progress["step"] >= 10, running.progress
    # 3. cancel: SIGTERM to the group → the trainer checkpoints and writes "stopped"
    assert cancel(running)
    stopped = _wait(run.path, lambda r: not r.alive, timeout=30)
    assert stopped.status == "stopped" and stopped.cancelled
    assert json.loads((run.path / "progress.json").read_text())["status"] == "stopped"  # the trainer's own word
    assert stopped.exit_code == 143  # our child this time: its exit status is known (SIGTERM → 143)
    assert stopped.row()["status"] == "stopped" and not cancel(stopped)


# ------------------------------------------------------------------ nothing run or signalled on a folder's word


def _zombie_or_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


@pytest.mark.slow
def test_the_registry_owns_its_childs_exit_status(tmp_path):
    """The cause of the flaky exit code: a dropped Popen is reaped by the next Popen anywhere in the process."""
    empty = tmp_path / "no-glue"
    empty.mkdir()
    run = supervise_runs.launch(_spec(empty), root=tmp_path / "runs", name="quick")
    end = time.time() + 60
    while not _zombie_or_gone(run.pid):  # the child exits; nobody in this process has looked yet
        assert time.time() < end
        time.sleep(0.1)
    subprocess.run(["true"], check=True)  # another Popen: subprocess's clean-up of dropped Popens runs here
    done = load_run(run.path)
    assert done.exit_code == 2 and done.status == "died" and not done.alive
    assert json.loads((run.path / "exit.json").read_text())["exit_code"] == 2  # kept for a server restart


def _config(glue_dir, out) -> dict:
    from pals_core.pricing.config import AdapterConfig
    from pals_core.train.config import TrainConfig

    cfg = TrainConfig(
        tasks=["rte"],
        adapter=AdapterConfig(method="pals", d_s=8, heads=2),
        model="tiny",
        glue_dir=str(glue_dir),
        out=str(out),
        steps=4,
        batch_size=4,
        max_len=32,
        eval_every=2,
        max_train_examples=16,
        max_eval_examples=8,
        num_threads=1,
    )
    cfg.validate()
    return cfg.as_dict()


@pytest.mark.slow
def test_resume_runs_only_the_trainer_rebuilt_from_config_json(tmp_path):
    pwned = tmp_path / "pwned"
    run_dir = tmp_path / "runs" / "copied"
    run_dir.mkdir(parents=True)
    (run_dir / "launch.json").write_text(
        json.dumps(
            {"id": "copied", "pid": 999999, "pid_start": 1, "started": 1.0, "argv": ["/bin/sh", "-c", f"touch {pwned}"]}
        )
    )
    with pytest.raises(ValueError, match="neither a config.json nor readable launch settings"):
        resume(load_run(run_dir))
    launch = json.loads((run_dir / "launch.json").read_text())
    (run_dir / "launch.json").write_text(
        json.dumps({**launch, "config": {"tasks": ["rte"], "adapter": {"method": "pals"}, "steps": "1;sh"}})
    )
    with pytest.raises(ValueError, match="neither a config.json nor readable launch settings"):
        resume(load_run(run_dir))  # launch settings that do not validate are not used
    (run_dir / "launch.json").write_text(json.dumps(launch))
    (run_dir / "config.json").write_text(json.dumps({"tasks": ["rte"], "adapter": {"method": "pals"}, "steps": "1;sh"}))
    with pytest.raises(ValueError, match="not a pals-train configuration"):
        resume(load_run(run_dir))
    empty = tmp_path / "no-glue"
    empty.mkdir()
    (run_dir / "config.json").write_text(json.dumps(_config(empty, "/somewhere/else")))
    (run_dir / "progress.json").write_text(json.dumps({"status": "failed", "step": 0}))
    resumed = resume(load_run(run_dir))
    argv = resumed.launch["argv"]
    import sys as _sys

    assert argv[:3] == [_sys.executable, "-m", "pals_core.cli.train"] and argv[-1] == "--resume"
    assert argv[argv.index("--out") + 1] == str(run_dir.resolve()) and argv.count("--out") == 1
    done = _wait(run_dir, lambda r: not r.alive, timeout=60)
    assert done.exit_code == 2 and "GLUE" in done.log_tail()  # the trainer ran, and refused the empty GLUE folder
    assert not pwned.exists()
    assert resumed.launch["history"][0]["argv"] == ["/bin/sh", "-c", f"touch {pwned}"]  # kept as a record only


def test_cancel_signals_only_a_process_proven_to_train_the_run(tmp_path):
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        start = lock.start_time(bystander.pid)
        cases = {
            "progress-pid": {"progress.json": {"status": "running", "step": 3, "pid": bystander.pid}},
            "init": {"progress.json": {"status": "running", "pid": 1}},
            "launch-pid": {
                "launch.json": {"pid": bystander.pid, "pid_start": start, "started": 1.0, "argv": ["sleep", "60"]},
                "progress.json": {"status": "running", "pid": bystander.pid},
            },
            "launch-forged-argv": {
                "launch.json": {
                    "pid": bystander.pid,
                    "pid_start": start,
                    "started": 1.0,
                    "argv": [sys.executable, "-m", "pals_core.cli.train", "--out", "."],
                }
            },
        }
        for name, files in cases.items():
            d = tmp_path / name
            d.mkdir()
            for f, body in files.items():
                (d / f).write_text(json.dumps(body))
            run = load_run(d)
            assert not run.alive and run.owner is None, name
            assert run.status == "died" and not cancel(run), name
            assert not (d / "cancel.json").exists()
        assert load_run(tmp_path / "progress-pid").stale
        assert "stale" in load_run(tmp_path / "progress-pid").error
        assert bystander.poll() is None  # untouched
    finally:
        bystander.kill()
        bystander.wait()


def test_malformed_files_never_break_the_runs_list(tmp_path):
    bad = {
        "a": '{"status": "running", "step": "x", "total": [], "scores": 5, "pid": "abc", "eta_s": "soon"}',
        "b": "[",
        "c": '{"status": "finished", "average": {"x": 1}, "params": 3, "scores": [1]}',
        "d": "[" * 100000,
    }
    for name, text in bad.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / ("summary.json" if name == "c" else "progress.json")).write_text(text)
    (tmp_path / "c" / "config.json").write_text('{"adapter": {"method": ["x"], "d_s": {"a": 1}}, "tasks": 3}')
    runs = list_runs(tmp_path)
    assert sorted(r.id for r in runs) == ["a", "b", "c", "d"]
    for r in runs:
        row = r.row()
        assert all(v is None or isinstance(v, (str, int, float)) for v in row.values()), row
