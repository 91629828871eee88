"""``pals-runs list|cancel|resume`` (``pals_core.supervise``) on the folders the explorer writes: a real tiny
``pals-train`` launched as the explorer launches it, listed, cancelled, resumed by the real console script, ending
with the summary of an uninterrupted run; SIGKILL only after the grace period, for a process that ignores SIGTERM;
bad input one line, exit status 2."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pals_core.atomic import atomic_write_json
from pals_core.cli.runs import main
from pals_core.pricing.config import AdapterConfig
from pals_core.supervise import roots, runs, signals
from pals_core.supervise.roots import runs_root
from pals_core.supervise.runs import launch
from pals_core.train.config import TrainConfig

GLUE = Path(os.environ.get("PALS_GLUE_DIR", ""))
PALS_RUNS = Path(sys.executable).with_name("pals-runs")


def pals_runs(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The installed console script, as a person runs it (another process than the one that launched the run)."""
    return subprocess.run(
        [str(PALS_RUNS), *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def listed(root: Path, capsys) -> dict[str, dict]:
    """``pals-runs list --root ROOT --json`` (in this process: quick), by id."""
    capsys.readouterr()
    assert main(["list", "--root", str(root), "--json"]) == 0
    return {row["id"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}


def one_line(capsys, argv: list[str]) -> str:
    """``pals-runs argv`` in this process: exit 2 and one line on stderr, no traceback."""
    capsys.readouterr()
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


# ------------------------------------------------------------------------------------------ bad input


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    root = tmp_path / "runs"
    # a folder named that is not there (a typo): one line, exit 2 — never "no runs"; an empty one has none
    assert one_line(capsys, ["list", "--root", str(root)]) == f"pals-runs: error: --root {root}: no such folder"
    assert "no such folder" in one_line(capsys, ["resume", "x", "--root", str(root)])
    root.mkdir()
    assert main(["list", "--root", str(root)]) == 0 and "no runs or study workers" in capsys.readouterr().out
    assert "invalid choice" in one_line(capsys, ["stop", "x"])
    assert "the following arguments are required: ID" in one_line(capsys, ["cancel"])
    assert "is not a run id" in one_line(capsys, ["cancel", "../etc", "--root", str(root)])
    assert "no run or study worker 'nope'" in one_line(capsys, ["resume", "nope", "--root", str(root)])
    assert "not a number of seconds" in one_line(capsys, ["cancel", "x", "--grace", "-1"])
    # a finished run (the trainer's own files) can be neither cancelled nor resumed
    done = root / "done"
    done.mkdir(parents=True)
    atomic_write_json(done / "progress.json", {"status": "finished", "step": 4, "total": 4})
    assert one_line(capsys, ["cancel", "done", "--root", str(root)]).endswith(
        "run done is finished: no process runs it, nothing to cancel"
    )
    assert "run done has finished" in one_line(capsys, ["resume", "done", "--root", str(root)])
    # a study worker whose record lost its settings: never resumed from its recorded argv
    worker = roots.workers_root(root) / "w1"
    worker.mkdir(parents=True)
    atomic_write_json(worker / "worker.json", {"id": "w1", "argv": ["sh", "-c", "echo pwned"], "pid": 1, "trials": 3})
    rows = listed(root, capsys)
    assert rows["w1"]["kind"] == "study" and rows["w1"]["status"] == "ended" and rows["w1"]["steps"] == 3
    assert rows["done"] == {
        "id": "done",
        "kind": "run",
        "status": "finished",
        "pid": None,
        "out": str(done),
        "step": 4,
        "steps": 4,
        "trained": None,  # no parameter counts in its files
    }
    assert "holds no readable study settings" in one_line(capsys, ["resume", "w1", "--root", str(root)])
    assert not (worker / "log.txt").exists()  # nothing was started


def test_a_study_workers_arguments_are_rebuilt_by_the_studies_through_the_entry_point(tmp_path):
    """``pals-runs resume`` rebuilds a worker's flags with ``studies.workers`` (found through the declared entry
    point, never imported by pals_core) from the validated settings; the recorded argv is not what runs."""
    from pals_core.supervise import workers
    from studies.workers import resume_argv, settings_from_form

    folder = roots.workers_root(tmp_path) / "w2"
    folder.mkdir(parents=True)
    settings = settings_from_form("design", tasks="rte,mrpc", model="tiny", budget=1.05, steps=4)
    atomic_write_json(
        folder / "worker.json",
        {
            "id": "w2",
            "storage": f"sqlite:///{tmp_path / 's.db'}",
            "study_name": "s",
            "trials": 2,
            "settings": settings.as_dict(),
            "argv": ["sh", "-c", "echo pwned"],
            "pid": 1,
        },
    )
    worker = workers.load_worker(folder)
    argv = workers.rebuilt_argv(worker)
    assert argv == resume_argv(worker) and argv[:4] == [sys.executable, "-m", "studies.cli", "run"]
    assert argv[argv.index("--out") + 1] == str(folder.resolve()) and argv[argv.index("--trials") + 1] == "2"
    with pytest.raises(ValueError, match="no installed package rebuilds a nothing's arguments"):
        workers.rebuilt_argv(worker, kind="nothing")


def test_the_default_root_is_the_explorers(tmp_path, monkeypatch):
    monkeypatch.setenv(roots.RUNS_ENV, str(tmp_path / "elsewhere"))
    assert runs_root() == roots.runs_root() == tmp_path / "elsewhere"
    done = pals_runs("list", env={roots.RUNS_ENV: str(tmp_path / "elsewhere")})
    assert done.returncode == 0 and str(tmp_path / "elsewhere") in done.stdout


# ------------------------------------------------------------------------------------------ SIGKILL


@pytest.mark.slow  # ~0.5-1.3 s: make test, not make test-fast (under a minute on 2 cores)
def test_sigkill_only_after_the_grace_period(tmp_path):
    """A process that ignores SIGTERM is killed once the grace period is over; one that obeys is never killed."""
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    )
    for obeys, grace, outcome in ((False, 0.5, "killed"), (True, 10.0, "ended")):
        proc = subprocess.Popen(
            [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)" if obeys else code],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert proc.stdout.readline().strip() == "ready"
        started = time.monotonic()
        assert signals.cancel_process(tmp_path, proc.pid, grace) == outcome
        assert proc.wait(timeout=10) == (-signal.SIGTERM if obeys else -signal.SIGKILL)
        assert (time.monotonic() - started >= grace) == (not obeys)
        assert json.loads((tmp_path / "cancel.json").read_text())["pid"] == proc.pid
        proc.stdout.close()


# ------------------------------------------------------------------------------------------ a real run


def _spec(out: Path, cache: str) -> TrainConfig:
    return TrainConfig(
        tasks=["rte", "stsb"],
        adapter=AdapterConfig(method="pals", d_s=8, heads=2),
        model="tiny",
        glue_dir=str(GLUE),
        out=str(out),
        steps=120,
        batch_size=4,
        max_len=32,
        eval_every=40,
        save_every=10,
        max_train_examples=32,
        max_eval_examples=16,
        num_threads=1,
        cache_dir=cache,
        seed=5,
    )


def _wait(path: Path, until, timeout: float = 60.0) -> runs.Run:
    end = time.time() + timeout
    while not until(run := runs.load_run(path)):
        assert time.time() < end, f"run {run.id} stuck at {run.status}; log:\n{run.log_tail(20)}"
        time.sleep(0.1)
    return run


@pytest.mark.slow
@pytest.mark.skipif(not (GLUE / "RTE" / "train.tsv").is_file(), reason="PALS_GLUE_DIR is not set")
def test_list_cancel_resume_a_run_the_explorer_launched(tmp_path, token_cache, capsys):
    root = tmp_path / "runs"
    run = launch(_spec(tmp_path / "ignored", token_cache), root=root, name="life")  # as the Train view does
    latest = run.path / "checkpoints" / "latest.json"
    _wait(run.path, lambda r: r.status == "running" and latest.is_file())  # training, a first checkpoint written
    row = listed(root, capsys)["life"]
    assert row["kind"] == "run" and row["status"] == "running" and row["pid"] == run.pid
    assert row["out"] == str(run.path) and row["steps"] == 120 and row["step"] < 120
    trained = row["trained"]  # what it trains, known from its set-up on (progress.json): summary.json's below
    assert isinstance(trained, int) and trained > 0

    cancelled = pals_runs("cancel", "life", "--root", str(root))  # another process: SIGTERM, it checkpoints, stops
    assert cancelled.returncode == 0 and cancelled.stdout.strip() == "run life: it ended after SIGTERM; now stopped"
    stopped = runs.load_run(run.path)
    assert stopped.status == "stopped" and stopped.exit_code == 143 and not stopped.alive
    stopped_at = stopped.progress["step"]
    assert 10 <= stopped_at < 120 and json.loads(latest.read_text())["step"] == stopped_at  # checkpointed on SIGTERM
    assert listed(root, capsys)["life"]["status"] == "stopped" and listed(root, capsys)["life"]["pid"] is None
    assert listed(root, capsys)["life"]["trained"] == trained
    from explorer.tables import runs_frame  # the explorer's runs table: the stopped run's step k/N and parameters

    cells = runs_frame([stopped.row()]).iloc[0]
    assert cells["step"] == f"{stopped_at}/120" and cells["trained params"] == f"{trained:,}"
    out = capsys.readouterr()
    assert main(["list", "--root", str(root)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["ID", "KIND", "STATUS", "PID", "PROGRESS", "TRAINED", "OUT"], out
    assert table[1].split()[:5] == ["life", "run", "stopped", f"{stopped_at}/120", f"{trained:,}"]
    assert pals_runs("cancel", "life", "--root", str(root)).returncode == 2  # nothing runs it now

    resumed = pals_runs("resume", "life", "--root", str(root), "--wait")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[-1] == "life: finished"
    after = runs.load_run(run.path)
    assert after.launch["history"][-1]["status"] == "stopped" and after.launch["argv"][-1] == "--resume"
    # its log tail reads as a terminal shows it: the progress bar once, the loss and evaluation lines each on its own
    tail = after.log_tail(40).splitlines()
    for step in (40, 80, 120):
        assert any(re.match(rf"pals-train: step {step}/120 · train loss \d+\.\d{{4}} · dev average ", x) for x in tail)
    assert sum("step/s" in x for x in tail) <= 2, tail  # the bar's redraws are not lines
    assert listed(root, capsys)["life"] == {
        "id": "life",
        "kind": "run",
        "status": "finished",
        "pid": None,
        "out": str(run.path),
        "step": 120,
        "steps": 120,
        "trained": trained,
    }

    # the same summary as an uninterrupted run of the same settings
    from pals_core.train.trainer import train

    reference = train(_spec(tmp_path / "reference", token_cache), progress=False)
    summary = json.loads((run.path / "summary.json").read_text())
    for key in ("scores", "average", "best_step", "params", "steps", "task_steps"):
        assert summary[key] == reference[key], key


def test_pals_runs_stays_on_its_floor():
    """``pals-runs list`` is quick: no torch, and nothing of the explorer or the studies (docs/design.md "The house:
    floors, and one direction of dependency")."""
    code = (
        "import sys; from pals_core.cli.runs import main; main(['list', '--root', 'no-such-folder']); "
        "print(sorted(m for m in ('torch', 'streamlit', 'optuna', 'explorer', 'studies') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "[]", done.stderr
