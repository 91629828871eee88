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
``running`` while a process provably trains there (``starting`` before the first progress.json); else
``stopped`` if the person cancelled it, or ``died`` (killed, out of memory, the machine restarted: a
stale "running" in progress.json is reported as such) — resumable with ``--resume``.

Nothing a folder says is executed or signalled on its word alone:

- a process trains a folder if it is this server's own child for it, if it holds the folder's run lock
  (``pals_core.train.lock``, read from the kernel), or if it is the pid launch.json recorded with the same
  start time (``/proc/<pid>/stat`` field 22) and the same command line — the trainer's entry point with
  ``--out`` this folder. ``cancel`` signals only such a process; progress.json's ``pid`` is never used.
- ``resume`` rebuilds the argument list from the folder's config.json, validated as a ``TrainConfig``
  (before the trainer wrote one: from launch.json's settings, validated the same way), and runs only the
  trainer's own entry point (``python -m pals_core.train.cli … --out <folder> --resume``);
  launch.json's ``argv`` is a record, never run.
- this server keeps every child's ``Popen`` for as long as it runs, so the child's exit status is collected
  by ``Popen.poll`` here and nowhere else (a dropped ``Popen`` is reaped by the next ``Popen`` anywhere in
  the process, and its status lost).
"""
from __future__ import annotations

import json
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pals_core.train import lock as run_lock
from pals_core.train.rundir import atomic_write_text

from pals_core.train.config import TrainConfig

from .commands import TRAIN_MODULE, command, launch_argv

RUNS_ENV = "PALS_RUNS_DIR"
TERMINAL = ("finished", "failed", "stopped")
ACTIVE = ("starting", "running")
_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_CHILDREN: dict[int, tuple[subprocess.Popen, Path]] = {}  # pid → (our child, its run folder); kept until reaped


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
    except (OSError, ValueError, RecursionError):  # RecursionError: deeply nested brackets
        return None
    return data if isinstance(data, dict) else None


# ------------------------------------------------------------------------------------ processes

def _child(pid: Any, run_dir: Path) -> Optional[subprocess.Popen]:
    """This server's child ``pid`` launched for ``run_dir``, if it is one."""
    entry = _CHILDREN.get(pid) if isinstance(pid, int) else None
    if entry is None or entry[1] != Path(run_dir).resolve():
        return None
    return entry[0]


def _exit_code(pid: Any, run_dir: Path) -> Optional[int]:
    """The exit status of our child ``pid`` for ``run_dir`` once it ended (collected here, by its own Popen)."""
    proc = _child(pid, run_dir)
    return None if proc is None else proc.poll()


def _out_of(argv: list[str], cwd: Optional[str]) -> Optional[Path]:
    """The resolved ``--out`` folder of a trainer's argument list (the last one given), or None."""
    out = None
    for i, a in enumerate(argv):
        if a == "--out" and i + 1 < len(argv):
            out = argv[i + 1]
        elif a.startswith("--out="):
            out = a[len("--out="):]
    if out is None:
        return None
    path = Path(out)
    if not path.is_absolute():
        if cwd is None:
            return None
        path = Path(cwd) / path
    try:
        return path.resolve()
    except OSError:
        return None


TRAINER = (TRAIN_MODULE, "pals-train")  # (module run with -m, console script): the trainer's entry point


def _trains(pid: int, run_dir: Path, entry_point: tuple[str, str] = TRAINER) -> bool:
    """``pid``'s command line is ``entry_point``'s (``-m <module>`` or the console script; the trainer's by default)
    with ``--out`` ``run_dir``."""
    argv = run_lock.cmdline(pid)
    if not argv:
        return False
    module, script = entry_point
    entry = (len(argv) > 2 and argv[1:3] == ["-m", module]) or any(
        os.path.basename(a) == script for a in argv[:2])
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = None
    return entry and _out_of(argv, cwd) == Path(run_dir).resolve()


def _launched_pid(launch: Optional[dict], run_dir: Path, entry_point: tuple[str, str] = TRAINER) -> Optional[int]:
    """launch.json's pid, if that process still is the one launched: same start time, same command line,
    and that command line is ``entry_point``'s (the trainer's by default) on this folder."""
    if not launch:
        return None
    pid, start, argv = launch.get("pid"), launch.get("pid_start"), launch.get("argv")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1 or not isinstance(start, int):
        return None
    if not isinstance(argv, list) or run_lock.start_time(pid) != start or _zombie(pid):
        return None
    if run_lock.cmdline(pid) != [str(a) for a in argv] or not _trains(pid, run_dir, entry_point):
        return None
    return pid


def owned_pid(folder: Path, record: Optional[dict], entry_point: tuple[str, str]) -> Optional[int]:
    """The pid provably running ``entry_point`` on ``folder`` now: this server's live child for it, or the pid
    ``record`` names with the recorded start time and command line (no run lock: for processes that take none,
    e.g. study workers). None otherwise, whatever a file says."""
    pid = record.get("pid") if record else None
    proc = _child(pid, Path(folder))
    if proc is not None:
        return proc.pid if proc.poll() is None else None
    return _launched_pid(record, Path(folder), entry_point)


def record_exit(folder: Path, pid: Any) -> Optional[int]:
    """The exit status of the process launched as ``pid`` for ``folder``: collected now by our own ``Popen``
    (and then kept in ``exit.json``), else the one ``exit.json`` kept for this same pid (a server restart)."""
    if not isinstance(pid, int) or isinstance(pid, bool):
        return None
    exit_code = _exit_code(pid, folder)
    exit_file = read_json(Path(folder) / "exit.json")
    if exit_code is not None and (exit_file or {}).get("pid") != pid:
        try:
            write_json_atomic(Path(folder) / "exit.json", {"pid": pid, "exit_code": exit_code, "seen": time.time()})
        except OSError:
            pass
    elif exit_code is None and exit_file and exit_file.get("pid") == pid and isinstance(exit_file.get("exit_code"), int) \
            and not isinstance(exit_file.get("exit_code"), bool):
        exit_code = exit_file.get("exit_code")
    return exit_code


def reap_children() -> list[int]:
    """Collect every child of this server that has ended (no zombie waits for someone to open Runs): its exit status
    goes to its folder's exit.json (``record_exit``). Returns the pids collected now."""
    done = []
    for pid, (proc, folder) in list(_CHILDREN.items()):
        if proc.returncode is None and proc.poll() is not None:
            record_exit(folder, pid)
            done.append(pid)
    return done


def terminate(folder: Path, pid: int) -> bool:
    """Record the request in ``folder/cancel.json``, then SIGTERM ``pid`` — a pid the caller has proved runs
    ``folder`` — and its whole process group when it leads one (a process this explorer launched)."""
    write_json_atomic(Path(folder) / "cancel.json", {"requested": time.time(), "pid": pid})
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGTERM)
        else:
            os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True


def training_pid(run_dir: Path, launch: Optional[dict] = None) -> Optional[int]:
    """The pid provably training ``run_dir`` now, or None (see the module docstring)."""
    run_dir = Path(run_dir)
    pid = launch.get("pid") if launch else None
    proc = _child(pid, run_dir)
    if proc is not None and proc.poll() is None:
        return proc.pid
    holder = run_lock.holder(run_dir)
    if holder is not None and holder > 1 and (_child(holder, run_dir) is not None or _trains(holder, run_dir)):
        return holder
    return _launched_pid(launch, run_dir)


def busy(run_dir: Path) -> bool:
    """Some process holds ``run_dir``'s run lock (whoever it is)."""
    return run_lock.holder(run_dir) is not None


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] in ("Z", "X")


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


def _scalar(v: Any) -> Any:
    """A value a table cell can hold: a string, a finite number, or None (anything else as short text)."""
    if v is None or isinstance(v, str) or _number(v):
        return v
    if isinstance(v, bool):
        return str(v)
    return str(v)[:80]


# the fields the page reads from the trainer's files, and the type each must have to be used
_PROGRESS = {"status": lambda v: isinstance(v, str), "step": _count, "total": _count, "elapsed_s": _number,
             "eta_s": _number, "average": _number, "best_average": _number, "error": lambda v: isinstance(v, str),
             "updated": lambda v: isinstance(v, str), "pid": _count,
             "scores": lambda v: isinstance(v, dict) and all(isinstance(k, str) and (_number(x) or x is None)
                                                              for k, x in v.items())}
_SUMMARY = {"average": _number, "steps": _count, "best_step": _count, "wall_time_s": _number,
            "config": lambda v: isinstance(v, dict), "task_steps": lambda v: isinstance(v, dict),
            "params": lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
            "scores": lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, dict) for k, x in v.items()),
            "untrained": lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v)}
_LAUNCH = {"id": lambda v: isinstance(v, str), "pid": _count, "pid_start": _count, "started": _number,
           "started_iso": lambda v: isinstance(v, str), "command": lambda v: isinstance(v, str),
           "argv": lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v),
           "config": lambda v: isinstance(v, dict), "history": lambda v: isinstance(v, list)}


def _typed(d: Optional[dict], schema: dict) -> Optional[dict]:
    """``d`` keeping only the fields of ``schema`` whose values have the expected type (a hand-edited or foreign
    file shows what it can, never breaks the page)."""
    if d is None:
        return None
    return {k: v for k, v in d.items() if k in schema and schema[k](v)}


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
    owner: Optional[int] = None  # the pid provably training this folder now (the one cancel signals)
    stale: bool = False  # progress.json says "running", but no process trains here

    @property
    def pid(self) -> Optional[int]:
        """The pid on record (launch.json, else progress.json): shown, never signalled."""
        if self.owner is not None:
            return self.owner
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
        except (TypeError, ValueError, KeyError, AttributeError):
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
        """A design field (method, d_s, location, tasks, ...) from the trainer's files, else the launch settings."""
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
        if self.progress and self.progress.get("error") and self.status != "running":
            return str(self.progress["error"])
        if self.status == "died":
            if self.stale:
                return ("stale: progress.json still says \"running\" (step "
                        f"{(self.progress or {}).get('step', '?')}), but no process trains in this folder "
                        "(killed, or the machine restarted)")
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
        """One line of the runs table (every cell a string, a finite number or None)."""
        p, s = self.progress or {}, self.summary or {}
        tasks = self.get("tasks")
        if isinstance(tasks, (list, tuple)):
            tasks = ",".join(map(str, tasks))
        elif isinstance(tasks, dict):
            tasks = ",".join(map(str, tasks))
        params = s.get("params") if isinstance(s.get("params"), dict) else {}
        row = {
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
            "untrained": ",".join(map(str, s["untrained"])) if isinstance(s.get("untrained"), list) else None,
        }
        return {k: _scalar(v) for k, v in row.items()}


def load_run(path: Path) -> Run:
    """Read a run folder and derive its status (see the module docstring)."""
    path = Path(path)
    launch = _typed(read_json(path / "launch.json"), _LAUNCH)
    progress = _typed(read_json(path / "progress.json"), _PROGRESS)
    started = launch.get("started") if launch else None

    def since_launch(name: str) -> bool:
        try:
            return not isinstance(started, (int, float)) or (path / name).stat().st_mtime >= started
        except OSError:
            return False

    if progress is not None and not since_launch("progress.json"):
        progress = None  # written by an earlier launch (before a resume)
    summary = _typed(read_json(path / "summary.json"), _SUMMARY)
    if summary is not None and not since_launch("summary.json"):
        summary = None
    cancel = read_json(path / "cancel.json")
    requested = (cancel or {}).get("requested")
    cancelled = bool(cancel) and (not isinstance(started, (int, float)) or (_number(requested) and requested >= started))
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
    return Run(path.name, path, launch, progress, summary, read_json(path / "config.json"), status, alive, cancelled,
               exit_code, owner, stale)


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


def spawn(run_dir: Path, argv: list[str]) -> tuple[int, Optional[int], float]:
    """Start ``argv`` (a list, no shell) in its own session, output to log.txt; keep its ``Popen`` so that its
    exit status is ours to collect."""
    started = time.time()
    with open(run_dir / "log.txt", "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=_child_env(), close_fds=True)
    _CHILDREN[proc.pid] = (proc, Path(run_dir).resolve())  # kept for the server's life: a few bytes a run
    return proc.pid, run_lock.start_time(proc.pid), started


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
        pid, pid_start, started = spawn(run_dir, argv)
    except OSError as e:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise ValueError(f"could not start the trainer ({argv[0]}): {e}") from None
    write_json_atomic(run_dir / "launch.json", {
        "id": run_id, "argv": argv, "pid": pid, "pid_start": pid_start, "started": started,
        "started_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "command": command(cfg), "config": cfg.as_dict(), "history": []})
    return load_run(run_dir)


def cancel(run: Run) -> bool:
    """SIGTERM to the process provably training the run (the trainer then checkpoints and writes "stopped"):
    its whole process group when it leads one (a run this explorer launched), else that process only.
    False if no such process runs — whatever pid a file names."""
    fresh = load_run(run.path)
    pid = fresh.owner
    if pid is None:
        return False
    return terminate(run.path, pid)


def resume_argv(run_dir: Path, launched: Optional[TrainConfig] = None) -> list[str]:
    """The argument list that continues the run in ``run_dir``: the trainer's own entry point with flags rebuilt
    (``TrainConfig.to_argv``) from the folder's config.json, validated as a ``TrainConfig``; a run stopped before
    the trainer wrote one is started again from its validated launch settings (``launched``). ``out`` is always
    this folder. ``ValueError`` names the problem; launch.json's ``argv`` is never used."""
    from pals_core.train.rundir import RunDir

    run_dir = Path(run_dir).resolve()
    if (run_dir / "config.json").is_file():
        cfg = TrainConfig.from_dict(RunDir(run_dir).read_config())
    elif launched is not None:
        cfg = launched
    else:
        raise ValueError(f"run {run_dir.name} has neither a config.json nor readable launch settings: nothing to resume")
    return launch_argv(cfg.with_(out=str(run_dir)), resume=True)


def resume(run: Run) -> Run:
    """Start the run again with ``--resume`` in the same folder (no process may be training it)."""
    current = load_run(run.path)
    if current.alive:
        raise ValueError(f"run {run.id} is still running")
    argv = resume_argv(run.path, run.launch_config)
    pid, pid_start, started = spawn(run.path, argv)
    launch = run.launch or {"id": run.id, "history": []}
    history = list(launch.get("history", [])) + [{k: launch.get(k) for k in ("pid", "started", "argv")}
                                                 | {"status": current.status, "exit_code": current.exit_code}]
    write_json_atomic(run.path / "launch.json", {**launch, "argv": argv, "pid": pid, "pid_start": pid_start,
                                                 "started": started,
                                                 "started_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
                                                 "command": shlex.join(["pals-train", *argv[3:]]),
                                                 "history": history})
    return load_run(run.path)
