"""Study workers (``pals-study run`` in the background) on disk: start, watch, stop, resume, under the rules of
training runs (``proof``, ``children``, ``signals``).

Layout (``$PALS_RUNS_DIR/study-workers``, default ``./runs/study-workers``: ``roots.workers_root``)::

    <folder>/worker.json   the launcher's: storage, study name, trials, threads, the study's settings, argv, pid,
                           pid_start, started, history; rewritten on resume
    <folder>/log.txt       the worker's stdout and stderr
    <folder>/cancel.json   written when someone stops it
    <folder>/exit.json     the exit status, when the launching process reaped it
    <folder>/<study>/…     the worker's ``--out`` is this folder: its trial run folders, and
                           ``study_progress.json``: the study's finished trials and its target, as the worker last
                           counted them (every worker's trials: a retry of a dead worker's trial may run elsewhere)

What a worker runs is the study's business: its argument list is built (and, on resume, rebuilt from the stored
settings, validated) by ``studies.workers``, which calls ``start``/``resume`` here with it. This module only starts
the list it is given as a detached process, records it, proves the process (``proof.owned_pid`` with the
``pals-study`` entry point) and signals only a proven one; the recorded ``argv`` is never run. ``pals-runs``, which
cannot import ``studies`` (a higher floor, docs/design.md "The house: floors, and one direction of dependency"), finds
the rebuilding function through the entry point ``ARGV_GROUP`` that the package declares (``resume_rebuilt``).

Status, derived on every read: ``running`` while a process provably runs the worker; else ``finished`` (exit 0),
``stopped`` (exit 130, or cancelled since this launch), ``failed`` (another exit status) or ``ended`` (the exit
status is unknown: the launching process was not there to collect it).
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pals_core.atomic import atomic_write_json, open_regular, read_json

from .children import record_exit, spawn
from .proof import STUDY_WORKER, owned_pid
from .roots import workers_root
from .signals import CANCEL_FILE, cancel_process

RECORD = "worker.json"
ARGV_GROUP = "pals_core.supervise.argv"  # entry points: kind → a function (Worker) -> argv, declared in pyproject
STUDY_KIND = "study-worker"
STOPPED_EXIT = 130  # ``pals-study run`` after SIGTERM: the trial re-queued
STUDY_PROGRESS = "study_progress.json"  # written by a worker under its --out: {"study", "finished", "target"}


def write_progress(folder: str | Path, study: str, finished: int, target: int) -> None:
    """Record in ``folder`` (a worker's trial folder) how many trials its study holds finished — complete or pruned,
    counted over every worker — out of its ``--trials`` target: what ``pals-runs list`` and the Studies page show as
    the worker's progress."""
    os.makedirs(folder, exist_ok=True)
    atomic_write_json(Path(folder) / STUDY_PROGRESS, {"study": study, "finished": finished, "target": target})


@dataclass
class Worker:
    id: str
    path: Path
    record: dict | None
    status: str  # running · finished · stopped · failed · ended (status unknown)
    owner: int | None  # the pid provably running this worker now (the one stop signals)
    exit_code: int | None
    cancelled: bool

    @property
    def alive(self) -> bool:
        return self.owner is not None

    def get(self, key: str) -> Any:
        """A scalar field of worker.json (text or a number), else None."""
        v = (self.record or {}).get(key)
        return v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of log.txt (at most 32 kB read)."""
        try:
            with open_regular(self.path / "log.txt", "log", 1 << 50, OSError) as f:  # a FIFO: "", never a hang
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 32768))
                return "\n".join(f.read().decode("utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def trials_done(self) -> int:
        """The study's finished trials as this worker last counted them (its newest ``study_progress.json``: every
        worker's trials, so a study brought to its target by a retry of another worker's trial reads as done); before
        its first count, the run folders under it that hold a summary.json."""
        found = sorted(self.path.rglob(STUDY_PROGRESS), key=lambda p: p.stat().st_mtime if p.is_file() else 0)
        for path in reversed(found):
            n = (read_json(path, or_none=True) or {}).get("finished")
            if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
                return n
        return sum(1 for _ in self.path.rglob("summary.json"))


def _status(owner: int | None, exit_code: int | None, cancelled: bool) -> str:
    if owner is not None:
        return "running"
    if exit_code == 0:
        return "finished"
    if exit_code == STOPPED_EXIT or cancelled:
        return "stopped"
    return "failed" if exit_code is not None else "ended"


def load_worker(path: Path) -> Worker:
    """Read a worker folder and derive its status (every time: it survives reloads and restarts)."""
    path = Path(path)
    record = read_json(path / RECORD, or_none=True)
    owner = owned_pid(path, record, STUDY_WORKER)
    exit_code = record_exit(path, (record or {}).get("pid"))
    started = (record or {}).get("started")
    requested = (read_json(path / CANCEL_FILE, or_none=True) or {}).get("requested")
    cancelled = isinstance(requested, (int, float)) and isinstance(started, (int, float)) and requested >= started
    return Worker(path.name, path, record, _status(owner, exit_code, cancelled), owner, exit_code, cancelled)


def list_workers(root: Path | None = None) -> list[Worker]:
    """Every worker folder under ``root`` (default ``roots.workers_root()``), newest first."""
    root = Path(root) if root is not None else workers_root()
    if not root.is_dir():
        return []
    out = [load_worker(d) for d in root.iterdir() if d.is_dir() and (d / RECORD).is_file()]
    out.sort(key=lambda w: (w.get("started") or 0, w.id), reverse=True)
    return out


def _launch(path: Path, record: dict, argv: list[str], history: list) -> Worker:
    """Spawn ``argv`` for the worker folder ``path`` and record it (with ``record``'s fields) in worker.json."""
    pid, pid_start, started = spawn(path, argv)
    atomic_write_json(
        path / RECORD,
        {
            **record,
            "argv": argv,
            "pid": pid,
            "pid_start": pid_start,
            "started": started,
            "started_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
            "command": shlex.join(["pals-study", *argv[3:]]),
            "history": history,
        },
    )
    return load_worker(path)


def start(path: Path, record: dict, argv: list[str]) -> Worker:
    """Create the worker folder ``path`` and start ``argv`` (a ``pals-study run`` list on ``--out path``, built and
    checked by the caller) in it, detached."""
    Path(path).mkdir()
    return _launch(Path(path), {**record, "id": Path(path).name}, argv, [])


def stop(worker: Worker, grace_s: float | None = None) -> str | None:
    """SIGTERM to the process provably running this worker (SIGKILL after ``grace_s`` if given); None if none
    does, whatever pid a file names; else "signalled", "ended" or "killed"."""
    fresh = load_worker(worker.path)
    if fresh.owner is None:
        return None
    outcome = cancel_process(fresh.path, fresh.owner, grace_s)
    return None if outcome == "gone" else outcome


def resume(worker: Worker, argv: list[str]) -> Worker:
    """Start the worker again in the same folder with ``argv`` (rebuilt by the caller from the stored settings);
    no process may be running it. The previous launch goes to the record's history."""
    current = load_worker(worker.path)
    if current.alive:
        raise ValueError(f"worker {worker.id} is still running")
    record = current.record or {}
    past = record["history"] if isinstance(record.get("history"), list) else []
    history = past + [
        {k: record.get(k) for k in ("pid", "started", "argv")}
        | {"status": current.status, "exit_code": current.exit_code}
    ]
    return _launch(current.path, record, argv, history)


def _registered(group: str, name: str) -> list:
    """The entry points ``name`` of ``group`` in every installed distribution (not ``entry_points()``'s first
    distribution of a name: a stale ``*.egg-info`` in the working folder must not hide the installed one)."""
    from importlib.metadata import distributions

    return [ep for dist in distributions() for ep in dist.entry_points if ep.group == group and ep.name == name]


def rebuilt_argv(worker: Worker, kind: str = STUDY_KIND) -> list[str]:
    """``worker``'s argument list rebuilt by the function registered for ``kind`` under the entry-point group
    ``ARGV_GROUP`` (``studies.workers:resume_argv`` for study workers): the floor that knows the settings rebuilds
    them, this one never imports it. ``ValueError`` if no installed package registers one."""
    found = _registered(ARGV_GROUP, kind)
    if not found:
        raise ValueError(
            f"no installed package rebuilds a {kind}'s arguments (entry point group {ARGV_GROUP!r}; "
            "reinstall the project: pip install -e .)"
        )
    return found[0].load()(worker)


def resume_rebuilt(worker: Worker) -> Worker:
    """``resume`` with the argument list ``rebuilt_argv`` gives (what ``pals-runs resume`` does)."""
    current = load_worker(worker.path)
    if current.alive:
        raise ValueError(f"worker {worker.id} is still running")
    return resume(current, rebuilt_argv(current))
