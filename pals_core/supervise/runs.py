"""Training runs on disk: launch, watch, cancel, resume. The folder is the truth, not the page or the terminal.

Layout (``$PALS_RUNS_DIR``, default ``./runs``: ``roots.runs_root``), one folder per run::

    runs/<id>/launch.json    ours: argv, pid, pid_start, started, the run's TrainConfig; rewritten on resume
    runs/<id>/log.txt        the trainer's stdout and stderr
    runs/<id>/cancel.json    ours: written when someone cancels (``signals``)
    runs/<id>/exit.json      ours: the exit code, when the launching process reaped it (``children``)
    runs/<id>/progress.json  the trainer's: status, step, total, elapsed_s, eta_s, scores, error, pid
    runs/<id>/summary.json   the trainer's, at the end: scores, average, params, wall_time_s
    runs/<id>/config.json, metrics.jsonl   the trainer's

A run's status is derived every time it is read, so it survives a page reload and a server restart: the
trainer's terminal status (finished / failed / stopped) if it wrote one since this launch; else ``running``
while a process provably trains there (``starting`` before the first progress.json); else ``stopped`` if
someone cancelled it, or ``died`` (killed, out of memory, the machine restarted: a stale "running" in
progress.json is reported as such) — resumable with ``--resume``.

Nothing a folder says is executed or signalled on its word alone (``proof``): ``cancel`` signals only a process
proved to train the folder (progress.json's ``pid`` is never used); ``resume`` rebuilds the argument list from the
folder's config.json, validated as a ``TrainConfig`` (before the trainer wrote one: from launch.json's settings,
validated the same way), and runs only the trainer's own entry point (``python -m pals_core.cli.train … --out
<folder> --resume``); launch.json's ``argv`` is a record, never run. See docs/design.md (process supervision).
"""

from __future__ import annotations

import math
import os
import re
import secrets
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pals_core.atomic import atomic_write_json, not_regular, open_regular, read_json
from pals_core.train.config import TrainConfig
from pals_core.train.rundir import RunDir

from .children import record_exit, spawn
from .proof import TRAINER, busy, training_pid
from .roots import runs_root
from .signals import cancel_process

TRAIN_MODULE = TRAINER[0]
TERMINAL = ("finished", "failed", "stopped")
ACTIVE = ("starting", "running")
LAUNCH_FILE = "launch.json"
RUN_FILES = (LAUNCH_FILE, "progress.json", "summary.json")  # a folder holding one of these is a run
_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def valid_id(name: str) -> bool:
    """A run or worker id: a plain folder name (letters, digits, '_', '.', '-'; at most 100), never a path."""
    return isinstance(name, str) and bool(_ID_OK.match(name))


# ------------------------------------------------------------------------------------- the trainer's argv


def launch_argv(cfg: TrainConfig, *, resume: bool = False) -> list[str]:
    """What the launcher runs (a list, never a shell string): this Python, ``-m pals_core.cli.train``, the run's
    flags (``TrainConfig.to_argv``: parsing them back gives ``cfg``)."""
    return [sys.executable, "-m", TRAIN_MODULE, *cfg.to_argv(), *(["--resume"] if resume else [])]


def command(cfg: TrainConfig) -> str:
    """The same run as a person would type it."""
    return shlex.join(["pals-train", *cfg.to_argv()])


# ------------------------------------------------------------------------------------------ runs


def _find(d: Any, key: str, depth: int = 2) -> Any:
    """``d[key]``, or the first ``key`` found in nested dicts up to ``depth`` levels down."""
    if not isinstance(d, dict):
        return None
    if d.get(key) is not None:
        return d[key]
    if depth:
        for v in d.values():
            found = _find(v, key, depth - 1)
            if found is not None:
                return found
    return None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _as_shown(line: str) -> str:
    """What a terminal shows of one line written with carriage returns: its last part that is not blank (tqdm clears
    its bar with spaces before a line of text)."""
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-1].rstrip() if parts else ""


def _scalar(v: Any) -> Any:
    """A value a table cell can hold: a string, a finite number, or None (anything else as short text)."""
    if v is None or isinstance(v, str) or _number(v):
        return v
    if isinstance(v, bool):
        return str(v)
    return str(v)[:80]


# the fields the page reads from the trainer's files, and the type each must have to be used
_PROGRESS = {
    "status": lambda v: isinstance(v, str),
    "step": _count,
    "total": _count,
    "elapsed_s": _number,
    "eta_s": _number,
    "average": _number,
    "best_average": _number,
    "error": lambda v: isinstance(v, str),
    "updated": lambda v: isinstance(v, str),
    "pid": _count,
    "params": lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
    "scores": lambda v: (
        isinstance(v, dict) and all(isinstance(k, str) and (_number(x) or x is None) for k, x in v.items())
    ),
}
_SUMMARY = {
    "average": _number,
    "steps": _count,
    "best_step": _count,
    "wall_time_s": _number,
    "config": lambda v: isinstance(v, dict),
    "task_steps": lambda v: isinstance(v, dict),
    "params": lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
    "scores": lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, dict) for k, x in v.items()),
    "untrained": lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
    "tasks": lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),  # each task's kind, labels, …
}
_LAUNCH = {
    "id": lambda v: isinstance(v, str),
    "pid": _count,
    "pid_start": _count,
    "started": _number,
    "started_iso": lambda v: isinstance(v, str),
    "command": lambda v: isinstance(v, str),
    "argv": lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v),
    "config": lambda v: isinstance(v, dict),
    "history": lambda v: isinstance(v, list),
}


def _typed(d: dict | None, schema: dict) -> dict | None:
    """``d`` keeping only the fields of ``schema`` whose values have the expected type (a hand-edited or foreign
    file shows what it can, never breaks the page)."""
    if d is None:
        return None
    return {k: v for k, v in d.items() if k in schema and schema[k](v)}


@dataclass
class Run:
    id: str
    path: Path
    launch: dict | None
    progress: dict | None  # None when absent or left from an earlier launch of this folder
    summary: dict | None
    config: dict | None
    status: str
    alive: bool
    cancelled: bool
    exit_code: int | None
    owner: int | None = None  # the pid provably training this folder now (the one cancel signals)
    stale: bool = False  # progress.json says "running", but no process trains here
    passed_over: tuple[str, ...] = ()  # "progress.json is a FIFO (named pipe)": run files that are not regular files

    @property
    def note(self) -> str | None:
        """The run files passed over (never opened: a FIFO there would hang its reader), in one line; None if none."""
        if not self.passed_over:
            return None
        return f"passed over (not regular files, never opened): {'; '.join(self.passed_over)}"

    checkpoint_step: int | None = None  # the step of checkpoints/latest.json: where a resumed run continues

    @property
    def pid(self) -> int | None:
        """The pid on record (launch.json, else progress.json): shown, never signalled."""
        if self.owner is not None:
            return self.owner
        if self.launch and isinstance(self.launch.get("pid"), int):
            return self.launch["pid"]
        if self.progress and isinstance(self.progress.get("pid"), int):
            return self.progress["pid"]
        return None

    @property
    def launch_config(self) -> TrainConfig | None:
        """The run's settings as launched (``launch.json`` "config"), validated; None if absent or unreadable."""
        try:
            raw = self.launch.get("config") if self.launch else None
            if not isinstance(raw, dict):
                return None
            cfg = TrainConfig.from_dict(raw)
            cfg.validate()
            return cfg
        except (TypeError, ValueError, KeyError, AttributeError):
            return None

    @property
    def started(self) -> float | None:
        if self.launch and isinstance(self.launch.get("started"), (int, float)):
            return float(self.launch["started"])
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def get(self, key: str) -> Any:
        """A design field (method, d_s, location, tasks, ...) from the trainer's files, else the launch settings."""
        for source in (self.summary and self.summary.get("config"), self.config):
            value = _find(source, key)
            if value is not None:
                return value
        launched = self.launch_config
        if launched is None:
            return None
        return _find(launched.as_dict(), key)

    def steps(self) -> tuple[int | None, int | None]:
        """(the step the run is at, its total steps): progress.json's for this launch; before the trainer writes
        one (right after a resume) the checkpoint it continues from and the steps of its settings. None: unknown."""
        p = self.progress or {}
        step = p.get("step") if "step" in p else self.checkpoint_step
        total = p.get("total") if "total" in p else self.get("steps")
        return step, (total if _count(total) else None)

    @property
    def error(self) -> str | None:
        """What went wrong, in one line, with the run files passed over (``note``); None when nothing did."""
        problem = self._problem()
        return "; ".join(p for p in (problem, self.note) if p) or None

    def _problem(self) -> str | None:
        if self.progress and self.progress.get("error") and self.status != "running":
            return str(self.progress["error"])
        if self.status == "died":
            if self.stale:
                return (
                    'stale: progress.json still says "running" (step '
                    f"{(self.progress or {}).get('step', '?')}), but no process trains in this folder "
                    "(killed, or the machine restarted)"
                )
            code = f" with exit status {self.exit_code}" if self.exit_code is not None else ""
            return f"the training process ended{code} without writing a final status"
        return None

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of log.txt (at most 64 kB read) as a terminal shows them: a progress bar redrawn
        in place (carriage returns, no newline) is its latest state, one line, and the lines written between its
        redraws (``pals-train``'s loss and evaluation lines) stand on their own."""
        path = self.path / "log.txt"
        try:
            with open_regular(path, "log", 1 << 50, OSError) as f:  # a FIFO named log.txt: "", never a hang
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 65536))
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        shown = [_as_shown(line) for line in text.split("\n")]
        return "\n".join([line for line in shown if line.strip()][-lines:])

    def row(self) -> dict:
        """One line of the runs table (every cell a string, a finite number or None)."""
        p, s = self.progress or {}, self.summary or {}
        tasks = self.get("tasks")
        if isinstance(tasks, (list, tuple)):
            tasks = ",".join(map(str, tasks))
        elif isinstance(tasks, dict):
            tasks = ",".join(map(str, tasks))
        params = s.get("params") or p.get("params") or {}  # a running or stopped run: progress.json's, from its set-up
        row = {
            "run": self.id,
            "status": self.status,
            "method": self.get("method"),
            "location": self.get("location"),
            "d_s": self.get("d_s"),
            "tasks": tasks,
            "step": p.get("step", s.get("steps", self.steps()[0])),
            "total": p.get("total", s.get("steps", self.steps()[1])),
            "steps": s.get("steps", p.get("step")),
            "eta_s": p.get("eta_s") if self.status in ACTIVE else None,
            "elapsed_s": p.get("elapsed_s"),
            "dev average": s.get("average", p.get("average")),
            "best average": p.get("best_average"),
            "task-specific params": params.get("task_specific"),
            "trained params": params.get("trained"),
            "wall time (s)": s.get("wall_time_s", p.get("elapsed_s")),
            "started": self.started,
            "untrained": ",".join(map(str, s["untrained"])) if isinstance(s.get("untrained"), list) else None,
        }
        return {k: _scalar(v) for k, v in row.items()}


def load_run(path: Path) -> Run:
    """Read a run folder and derive its status (see the module docstring)."""
    path = Path(path)
    launch = _typed(read_json(path / LAUNCH_FILE, or_none=True), _LAUNCH)
    progress = _typed(read_json(path / "progress.json", or_none=True), _PROGRESS)
    started = launch.get("started") if launch else None

    def since_launch(name: str) -> bool:
        try:
            return not isinstance(started, (int, float)) or (path / name).stat().st_mtime >= started
        except OSError:
            return False

    if progress is not None and not since_launch("progress.json"):
        progress = None  # written by an earlier launch (before a resume)
    summary = _typed(read_json(path / "summary.json", or_none=True), _SUMMARY)
    if summary is not None and not since_launch("summary.json"):
        summary = None
    cancel = read_json(path / "cancel.json", or_none=True)
    requested = (cancel or {}).get("requested")
    cancelled = bool(cancel) and (
        not isinstance(started, (int, float)) or (_number(requested) and requested >= started)
    )
    owner = training_pid(path, launch)
    alive = owner is not None or busy(path)  # busy: a process we cannot name holds the lock (e.g. a study worker)
    pid = launch.get("pid") if launch else None
    exit_code = record_exit(path, pid)
    state = (progress or {}).get("status")
    stale = False
    if state in TERMINAL:
        status = state
    elif alive:
        status = "running" if progress else "starting"
    elif cancelled:
        status = "stopped"
    elif summary is not None:
        status = "finished"
    else:
        status, stale = "died", state == "running"
    return Run(
        path.name,
        path,
        launch,
        progress,
        summary,
        read_json(path / "config.json", or_none=True),
        status,
        alive,
        cancelled,
        exit_code,
        owner,
        stale,
        tuple(
            f"{name} is {kind}"
            for name in (*RUN_FILES, "cancel.json", "config.json", "exit.json")
            if (kind := not_regular(path / name)) is not None
        ),
        _checkpoint_step(path),
    )


def _checkpoint_step(path: Path) -> int | None:
    """The step ``checkpoints/latest.json`` names (the trainer's own file), None if it names none."""
    step = (read_json(path / "checkpoints" / "latest.json", or_none=True) or {}).get("step")
    return step if _count(step) else None


def list_runs(root: Path | None = None) -> list[Run]:
    """Every run folder under ``root`` (one holding launch.json, progress.json or summary.json), newest first."""
    root = Path(root) if root is not None else runs_root()
    if not root.is_dir():
        return []
    out = []
    for d in root.iterdir():
        if d.is_dir() and any(os.path.lexists(d / f) for f in RUN_FILES):  # a FIFO there: listed, named, never opened
            out.append(load_run(d))
    out.sort(key=lambda r: (r.started or 0, r.id), reverse=True)
    return out


def new_run_id(cfg: TrainConfig, name: str = "") -> str:
    """``<name>`` if given (checked), else ``YYYYmmdd-HHMMSS-<method>-<4 hex>``."""
    if name:
        name = name.strip()
        if not valid_id(name):
            raise ValueError(f"run name {name!r} may hold only letters, digits, '_', '.' and '-' (at most 100)")
        return name
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{cfg.adapter.method}-{secrets.token_hex(2)}"


def launch(cfg: TrainConfig, root: Path | None = None, name: str = "") -> Run:
    """Start run ``cfg`` (its ``out`` replaced by the run's folder) as a background process in its own session;
    record it in ``<root>/<id>/launch.json``."""
    root = (Path(root) if root is not None else runs_root()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id(cfg, name)
    run_dir = root / run_id
    cfg = cfg.with_(out=str(run_dir))
    cfg.validate()
    try:
        run_dir.mkdir()
    except FileExistsError:
        raise ValueError(f"a run named {run_id!r} already exists in {root}") from None
    argv = launch_argv(cfg)
    try:
        pid, pid_start, started = spawn(run_dir, argv)
    except OSError as e:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise ValueError(f"could not start the trainer ({argv[0]}): {e}") from None
    atomic_write_json(
        run_dir / "launch.json",
        {
            "id": run_id,
            "argv": argv,
            "pid": pid,
            "pid_start": pid_start,
            "started": started,
            "started_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
            "command": command(cfg),
            "config": cfg.as_dict(),
            "history": [],
        },
    )
    return load_run(run_dir)


def cancel(run: Run, grace_s: float | None = None) -> str | None:
    """SIGTERM to the process provably training the run (the trainer then checkpoints and writes "stopped"), its
    whole process group when it leads one; with ``grace_s``, SIGKILL if it has not ended by then
    (``signals.cancel_process``). None if no such process runs — whatever pid a file names; else "signalled",
    "ended" or "killed"."""
    pid = load_run(run.path).owner
    if pid is None:
        return None
    outcome = cancel_process(run.path, pid, grace_s)
    return None if outcome == "gone" else outcome


def resume_argv(run_dir: Path, launched: TrainConfig | None = None) -> list[str]:
    """The argument list that continues the run in ``run_dir``: the trainer's own entry point with flags rebuilt
    (``TrainConfig.to_argv``) from the folder's config.json, validated as a ``TrainConfig``; a run stopped before
    the trainer wrote one is started again from its validated launch settings (``launched``). ``out`` is always
    this folder. ``ValueError`` names the problem; launch.json's ``argv`` is never used."""
    run_dir = Path(run_dir).resolve()
    if (run_dir / "config.json").is_file():
        cfg = TrainConfig.from_dict(RunDir(run_dir).read_config())
    elif launched is not None:
        cfg = launched
    else:
        raise ValueError(
            f"run {run_dir.name} has neither a config.json nor readable launch settings: nothing to resume"
        )
    return launch_argv(cfg.with_(out=str(run_dir)), resume=True)


def resume(run: Run) -> Run:
    """Start the run again with ``--resume`` in the same folder (no process may be training it)."""
    current = load_run(run.path)
    if current.alive:
        raise ValueError(f"run {run.id} is still running")
    argv = resume_argv(run.path, run.launch_config)
    pid, pid_start, started = spawn(run.path, argv)
    launch = run.launch or {"id": run.id, "history": []}
    history = list(launch.get("history", [])) + [
        {k: launch.get(k) for k in ("pid", "started", "argv")}
        | {"status": current.status, "exit_code": current.exit_code}
    ]
    atomic_write_json(
        run.path / "launch.json",
        {
            **launch,
            "argv": argv,
            "pid": pid,
            "pid_start": pid_start,
            "started": started,
            "started_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
            "command": shlex.join(["pals-train", *argv[3:]]),
            "history": history,
        },
    )
    return load_run(run.path)
