"""Training runs on disk: launch, watch, cancel, resume. The folder is the truth, not the page.

Layout (``$PALS_RUNS_DIR``, default ``./runs``), one folder per run::

    runs/<id>/launch.json    ours: argv, pid, started, the run's TrainConfig; rewritten on resume
    runs/<id>/log.txt        the trainer's stdout and stderr
    runs/<id>/cancel.json    ours: written when the person cancels
    runs/<id>/exit.json      ours: the exit code, when this server reaped the process
    runs/<id>/progress.json  the trainer's: status, step, total, elapsed_s, eta_s, scores, error, pid
    runs/<id>/summary.json   the trainer's, at the end: scores, average, params, wall_time_s
    runs/<id>/config.json, metrics.jsonl   the trainer's

A run's status is derived every time it is read, so it survives a page reload and a server restart:
the trainer's terminal status (finished / failed / stopped) if it wrote one since this launch; else
``running`` while the process lives (``starting`` before the first progress.json); else ``stopped``
if the person cancelled it, or ``died`` (e.g. killed, out of memory) — resumable with ``--resume``.
A process is alive if its pid exists, is not a zombie, and (on Linux) still has the start time
recorded at launch, so a recycled pid is not mistaken for the run.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pals_core.train.rundir import atomic_write_text

from pals_core.train.config import TrainConfig

from .commands import command, launch_argv

RUNS_ENV = "PALS_RUNS_DIR"
TERMINAL = ("finished", "failed", "stopped")
ACTIVE = ("starting", "running")
_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_EXIT_CODES: dict[int, int] = {}  # pid → exit status, for children this process reaped


def runs_root() -> Path:
    """``$PALS_RUNS_DIR`` or ./runs."""
    return Path(os.environ.get(RUNS_ENV) or "runs")


# ---------------------------------------------------------------------------------------- files

def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to a temp file in the same folder, then ``os.replace`` it into place."""
    atomic_write_text(path, json.dumps(obj, indent=2))


def read_json(path: Path) -> Optional[dict]:
    """The JSON object in ``path``, or None if missing, half-written or not an object."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ------------------------------------------------------------------------------------ processes

def _start_time(pid: int) -> Optional[int]:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat field 22), if known."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] in ("Z", "X")


def _reap(pid: int) -> Optional[int]:
    """If ``pid`` is our exited child, collect it (no zombie left) and return its exit status."""
    if pid in _EXIT_CODES:
        return _EXIT_CODES[pid]
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    if done != pid:
        return None
    _EXIT_CODES[pid] = os.waitstatus_to_exitcode(status)
    return _EXIT_CODES[pid]


def pid_alive(pid: Optional[int], start_time: Optional[int] = None) -> bool:
    """True while ``pid`` runs (not a zombie; same start time as recorded, when one was)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    if _reap(pid) is not None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if _zombie(pid):
        _reap(pid)  # it exited between the first look and now: collect its exit status too
        return False
    if start_time is not None:
        now = _start_time(pid)
        if now is not None and now != start_time:
            return False
    return True


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


@dataclass
class Run:
    id: str
    path: Path
    launch: Optional[dict]
    progress: Optional[dict]  # None when absent or left from an earlier launch of this folder
    summary: Optional[dict]
    config: Optional[dict]
    status: str
    alive: bool
    cancelled: bool
    exit_code: Optional[int]

    @property
    def pid(self) -> Optional[int]:
        if self.launch and isinstance(self.launch.get("pid"), int):
            return self.launch["pid"]
        if self.progress and isinstance(self.progress.get("pid"), int):
            return self.progress["pid"]
        return None

    @property
    def launch_config(self) -> Optional[TrainConfig]:
        """The run's settings as launched (``launch.json`` "config"), validated; None if absent or unreadable."""
        try:
            raw = self.launch.get("config") if self.launch else None
            if not isinstance(raw, dict):
                return None
            cfg = TrainConfig.from_dict(raw)
            cfg.validate()
            return cfg
        except (TypeError, ValueError, KeyError):
            return None

    @property
    def started(self) -> Optional[float]:
        if self.launch and isinstance(self.launch.get("started"), (int, float)):
            return float(self.launch["started"])
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def get(self, key: str) -> Any:
        """A design field (method, d_s, location, tasks, ...) from the trainer's files, else our spec."""
        for source in (self.summary and self.summary.get("config"), self.config):
            value = _find(source, key)
            if value is not None:
                return value
        launched = self.launch_config
        if launched is None:
            return None
        return _find(launched.as_dict(), key)

    @property
    def error(self) -> Optional[str]:
        if self.progress and self.progress.get("error"):
            return str(self.progress["error"])
        if self.status == "died":
            code = f" with exit status {self.exit_code}" if self.exit_code is not None else ""
            return f"the training process ended{code} without writing a final status"
        return None

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of log.txt (at most 64 kB read)."""
        path = self.path / "log.txt"
        try:
            with open(path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - 65536))
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def row(self) -> dict:
        """One line of the runs table."""
        p, s = self.progress or {}, self.summary or {}
        tasks = self.get("tasks")
        if isinstance(tasks, (list, tuple)):
            tasks = ",".join(map(str, tasks))
        elif isinstance(tasks, dict):
            tasks = ",".join(tasks)
        params = s.get("params") if isinstance(s.get("params"), dict) else {}
        return {
            "run": self.id, "status": self.status, "method": self.get("method"), "location": self.get("location"),
            "d_s": self.get("d_s"), "tasks": tasks,
            "step": p.get("step", s.get("steps")), "total": p.get("total", s.get("steps")),
            "steps": s.get("steps", p.get("step")),
            "eta_s": p.get("eta_s") if self.status in ACTIVE else None,
            "elapsed_s": p.get("elapsed_s"),
            "dev average": s.get("average", p.get("average")),
            "best average": p.get("best_average"),
            "task-specific params": params.get("task_specific"),
            "wall time (s)": s.get("wall_time_s", p.get("elapsed_s")),
            "started": self.started,
        }


def load_run(path: Path) -> Run:
    """Read a run folder and derive its status (see the module docstring)."""
    path = Path(path)
    launch = read_json(path / "launch.json")
    progress = read_json(path / "progress.json")
    started = launch.get("started") if launch else None
    if progress is not None and isinstance(started, (int, float)):
        try:
            if (path / "progress.json").stat().st_mtime < started:
                progress = None  # written by an earlier launch (before a resume)
        except OSError:
            progress = None
    summary = read_json(path / "summary.json")
    if summary is not None and isinstance(started, (int, float)) and (path / "summary.json").stat().st_mtime < started:
        summary = None
    cancel = read_json(path / "cancel.json")
    cancelled = bool(cancel) and (not isinstance(started, (int, float)) or cancel.get("requested", 0) >= started)
    pid = launch.get("pid") if launch else (progress or {}).get("pid")
    alive = pid_alive(pid, launch.get("pid_start") if launch else None)
    exit_code = _EXIT_CODES.get(pid) if isinstance(pid, int) else None
    exit_file = read_json(path / "exit.json")
    if exit_code is not None and (exit_file or {}).get("pid") != pid:
        try:
            write_json_atomic(path / "exit.json", {"pid": pid, "exit_code": exit_code, "seen": time.time()})
        except OSError:
            pass
    elif exit_code is None and exit_file and exit_file.get("pid") == pid:
        exit_code = exit_file.get("exit_code")
    state = (progress or {}).get("status")
    if state in TERMINAL:
        status = state
    elif alive:
        status = "running" if progress else "starting"
    elif cancelled:
        status = "stopped"
    elif summary is not None:
        status = "finished"
    else:
        status = "died"
    return Run(path.name, path, launch, progress, summary, read_json(path / "config.json"), status, alive, cancelled,
               exit_code)


def list_runs(root: Optional[Path] = None) -> list[Run]:
    """Every run folder under ``root`` (one holding launch.json, progress.json or summary.json), newest first."""
    root = Path(root) if root is not None else runs_root()
    if not root.is_dir():
        return []
    out = []
    for d in root.iterdir():
        if d.is_dir() and any((d / f).is_file() for f in ("launch.json", "progress.json", "summary.json")):
            out.append(load_run(d))
    out.sort(key=lambda r: (r.started or 0, r.id), reverse=True)
    return out


def new_run_id(cfg: TrainConfig, name: str = "") -> str:
    """``<name>`` if given (checked), else ``YYYYmmdd-HHMMSS-<method>-<4 hex>``."""
    if name:
        name = name.strip()
        if not _ID_OK.match(name):
            raise ValueError(f"run name {name!r} may hold only letters, digits, '_', '.' and '-' (at most 100)")
        return name
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{cfg.adapter.method}-{secrets.token_hex(2)}"


def _child_env() -> dict:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")  # the hub is not reachable from here: fail fast, never hang
    return env


def _spawn(run_dir: Path, argv: list[str]) -> tuple[int, Optional[int], float]:
    started = time.time()
    with open(run_dir / "log.txt", "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=_child_env(), close_fds=True)
    return proc.pid, _start_time(proc.pid), started


def launch(cfg: TrainConfig, root: Optional[Path] = None, name: str = "") -> Run:
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
        pid, pid_start, started = _spawn(run_dir, argv)
    except OSError as e:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise ValueError(f"could not start the trainer ({argv[0]}): {e}") from None
    write_json_atomic(run_dir / "launch.json", {
        "id": run_id, "argv": argv, "pid": pid, "pid_start": pid_start, "started": started,
        "started_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "command": command(cfg), "config": cfg.as_dict(), "history": []})
    return load_run(run_dir)


def cancel(run: Run) -> bool:
    """SIGTERM to the run's process group (the trainer then writes status "stopped"). False if not running."""
    pid = run.pid
    if not run.alive or pid is None:
        return False
    write_json_atomic(run.path / "cancel.json", {"requested": time.time(), "pid": pid})
    try:
        if run.launch is not None and os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGTERM)
        else:
            os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True


def resume(run: Run) -> Run:
    """Start the run again with ``--resume`` in the same folder (it must not be running)."""
    if run.alive:
        raise ValueError(f"run {run.id} is still running")
    cfg = run.launch_config
    if cfg is None:
        raise ValueError(f"run {run.id} has no readable launch settings (launch.json); resume it with pals-train --resume")
    # Never what the folder says to run: the project's own entry point with flags rebuilt from the validated
    # settings, writing to this run's own folder.
    argv = launch_argv(cfg.with_(out=str(run.path)), resume=True)
    pid, pid_start, started = _spawn(run.path, argv)
    history = list(run.launch.get("history", [])) + [{k: run.launch.get(k) for k in ("pid", "started", "argv")}
                                                     | {"status": run.status, "exit_code": run.exit_code}]
    write_json_atomic(run.path / "launch.json", {**run.launch, "argv": argv, "pid": pid, "pid_start": pid_start,
                                                 "started": started,
                                                 "started_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
                                                 "history": history})
    return load_run(run.path)
