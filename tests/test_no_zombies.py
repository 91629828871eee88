"""No ``<defunct>`` child of the explorer: a run cancelled from the explorer, a run that finishes and a study worker
that finishes are each reaped within 2 s of ending, with nobody drawing a page or reading a folder in between
(``pals_core.supervise.children``'s reaper). Launched through the explorer's own functions, with the real trainer
(``--model tiny``, real GLUE rows) and the real ``pals-study`` worker (real SQLite Optuna storage)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pals_core.pricing.config import AdapterConfig
from pals_core.supervise.roots import RUNS_ENV
from pals_core.supervise.runs import cancel, launch, load_run
from pals_core.supervise.workers import list_workers, load_worker, stop
from pals_core.train.config import TrainConfig
from studies.workers import settings_from_form, start

pytestmark = pytest.mark.slow  # real trainers and a real study worker: tens of seconds on 2 busy cores
REAPED_WITHIN_S = 2.0


def _state(pid: int) -> str:
    """The kernel's one-letter state of ``pid`` ('Z' for a zombie), '' once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rfind(")") + 2]


def _our_zombies() -> list[int]:
    """Every zombie whose parent is this process."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            out.append(int(d.name))
    return out


def _gone_soon_after_it_ends(pid: int, timeout: float = 240.0) -> float:
    """Wait (reading /proc only: no Popen, no folder read that would reap it) until ``pid`` stops running; then it
    must be gone, not a zombie, within ``REAPED_WITHIN_S``. Returns how long it stayed a zombie."""
    end = time.monotonic() + timeout
    while _state(pid) not in ("Z", ""):
        assert time.monotonic() < end, f"pid {pid} still running after {timeout} s"
        time.sleep(0.05)
    ended = time.monotonic()
    while _state(pid) == "Z":
        assert time.monotonic() - ended < REAPED_WITHIN_S, f"pid {pid} is still <defunct> {REAPED_WITHIN_S} s on"
        time.sleep(0.05)
    return time.monotonic() - ended


def _spec(glue_dir, steps: int) -> TrainConfig:
    return TrainConfig(
        tasks=["rte"],
        adapter=AdapterConfig(method="pals", d_s=8, heads=2),
        model="tiny",
        glue_dir=str(glue_dir),
        steps=steps,
        batch_size=4,
        max_len=32,
        eval_every=2,
        max_train_examples=16,
        max_eval_examples=8,
        num_threads=1,
    )


def test_cancelled_and_finished_children_are_reaped_within_2_s(tmp_path, glue_dir, monkeypatch):
    monkeypatch.setenv(RUNS_ENV, str(tmp_path / "runs"))
    monkeypatch.setenv("PALS_GLUE_DIR", str(glue_dir))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cancelled = launch(_spec(glue_dir, steps=100_000), name="cancel-me")
    finished = launch(_spec(glue_dir, steps=4), name="finish-me")
    settings = settings_from_form("design", tasks="rte", model="tiny", budget=1.05, steps=2, max_examples=16)
    worker = start(settings, f"sqlite:///{tmp_path / 'studies.db'}", "zombies", 1, threads=1)
    try:
        assert cancel(cancelled) == "signalled"  # what the Cancel button does: SIGTERM, no wait
        for pid in (cancelled.pid, finished.pid, worker.owner):
            _gone_soon_after_it_ends(pid)
        assert _our_zombies() == []
        # the exit statuses were collected by the reaper and kept: the page reads them back
        assert json.loads((finished.path / "exit.json").read_text())["exit_code"] == 0
        assert load_run(finished.path).status == "finished"
        assert load_run(cancelled.path).status == "stopped"
        assert load_worker(worker.path).status == "finished"
    finally:
        for run in (cancelled, finished):
            cancel(run, grace_s=10)
        for w in list_workers():
            stop(w, grace_s=10)
