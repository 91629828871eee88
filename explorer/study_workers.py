"""Study workers started from the page: start, watch, stop, resume ``pals-study run`` under the rules of training runs.

Layout (``$PALS_RUNS_DIR/study-workers``, default ``./runs/study-workers``), one folder per worker::

    <folder>/worker.json   ours: storage, study name, trials, threads, the study's settings, argv, pid, pid_start,
                           started, history; rewritten on resume
    <folder>/log.txt       the worker's stdout and stderr
    <folder>/cancel.json   ours: written when the person stops it
    <folder>/exit.json     ours: the exit status, when this server reaped the process
    <folder>/<study>/…     the worker's ``--out`` is this folder: its trial run folders (``studies.naming.trial_root``)

The folder's name is ``studies.naming.folder_name(study)`` plus a time stamp and 4 hex digits: never a path.
The rules are ``explorer.registry``'s, and live there (``spawn``, ``owned_pid``, ``record_exit``, ``terminate``):

- the launch is an argument list, never a shell string, running only ``python -m studies.cli run`` with
  ``--out`` this folder; its flags are rebuilt from ``StudySettings`` (``worker_argv``), and parsing
  them back with ``pals-study``'s own parser must give the same settings, or nothing starts;
- this server keeps the child's ``Popen`` (its exit status is never lost; ``exit.json`` keeps it across restarts);
- ``stop`` sends SIGTERM only to a process it can prove is this worker: its own child, or the pid worker.json
  recorded with the same start time and the same command line, ``studies.cli`` on this folder. ``pals-study run``
  then ends after the current step, re-queues the trial and exits 130;
- ``resume`` rebuilds the argument list from worker.json's settings, validated as ``StudySettings``; the recorded
  ``argv`` is a record, never run.
"""
from __future__ import annotations

import os
import re
import secrets
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pals_core.budget import AdapterConfig
from pals_core.budget.machine import Machine
from pals_core.budget.flags import to_argv as adapter_flags  # AdapterConfig's and Machine's flags

from studies.errors import StudyError
from studies.naming import check_study_name, folder_name
from studies.settings import StudySettings

from . import registry

STUDY_MODULE = "studies.cli"
WORKER = (STUDY_MODULE, "pals-study")  # the entry point a worker runs (see registry.owned_pid)
RECORD = "worker.json"
_URL_OK = re.compile(r"^[A-Za-z0-9+]+://")


def workers_root() -> Path:
    """``$PALS_RUNS_DIR/study-workers`` (default ./runs/study-workers)."""
    return registry.runs_root() / "study-workers"


# --------------------------------------------------------------------------------------- argv

def settings_flags(settings: StudySettings) -> list[str]:
    """``pals-study`` flags that give exactly ``settings`` (the study's stored, validated settings)."""
    from studies.definitions import get_definition

    s = settings
    argv = ["--tasks", ",".join(s.tasks)]
    if s.tasks_file is not None:  # the tasks are the file's (GLUE names otherwise)
        argv += ["--tasks-file", s.tasks_file]
    if s.model is not None:
        argv += ["--model", s.model]
    argv += s.budget_obj().to_argv()
    argv += ["--steps", str(s.steps), "--eval-every", str(s.eval_every), "--batch-size", str(s.batch_size),
             "--max-len", str(s.max_len),
             "--max-train-examples", str(s.max_train_examples or 0), "--max-eval-examples", str(s.max_eval_examples or 0),
             "--lr", repr(float(s.lr)), "--warmup", repr(float(s.warmup)), "--sampling", s.sampling]
    if s.epoch_steps is not None:
        argv += ["--epoch-steps", str(s.epoch_steps)]
    argv += ["--seeds", ",".join(map(str, s.seeds))] if s.seeds is not None else ["--seed", str(s.seed)]
    if s.methods is not None:
        argv += ["--methods", ",".join(s.methods)]
    if s.max_d_s is not None:
        argv += ["--max-d-s", str(s.max_d_s)]
    searched = ("method", "location", "d_s") if get_definition(s.definition).searches_design else ()
    argv += adapter_flags(s.template(), skip=searched)
    if s.machine is not None:  # the study's Machine (its batch is --batch-size), flags from the same declaration
        from studies.settings import MACHINE_NAMES, MACHINE_SKIP

        argv += adapter_flags(s.machine_obj(), skip=MACHINE_SKIP, names=MACHINE_NAMES)  # the device is always stored
    return argv


def _study_name(name: Any) -> str:
    """``name`` if ``studies.naming.check_study_name`` accepts it; else ``ValueError``."""
    if not isinstance(name, str):
        raise ValueError(f"study name {name!r} is not text")
    try:
        return check_study_name(name)
    except StudyError as e:
        raise ValueError(str(e)) from None


def worker_argv(settings: StudySettings, storage: str, study_name: str, trials: int, out: Path,
                threads: Optional[int] = None) -> list[str]:
    """``[python, -m, studies.cli, run, <definition>, --storage, URL, --study-name, NAME, --trials, N, --out, OUT,
    …settings]``. Raises ``ValueError`` unless ``pals-study``'s parser reads these flags back as ``settings``."""
    from studies.cli import build_parser, requested_settings

    _study_name(study_name)
    if not isinstance(storage, str) or not _URL_OK.match(storage):
        raise ValueError(f"storage {storage!r} is not a database URL (sqlite:///file.db, postgresql://…)")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    args = ["run", settings.definition, "--storage", storage, "--study-name", study_name, "--trials", str(trials),
            "--out", str(out)]
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        args += ["--threads", str(threads)]
    args += settings_flags(settings)
    try:
        parsed, _ = requested_settings(settings.definition, build_parser().parse_args(args))
    except StudyError as e:
        raise ValueError(str(e)) from None
    if parsed.differences(settings):
        raise ValueError(f"the flags do not reproduce the settings: {', '.join(parsed.differences(settings))} differ")
    return [sys.executable, "-m", STUDY_MODULE, *args]


BUDGET_FLAGS = {"ratio": "--budget", "extra": "--extra", "per_task": "--per-task"}


def settings_from_form(definition: str, *, tasks: str, model: Optional[str], budget, steps: int,
                       max_examples: Optional[int] = None, machine: Optional[dict[str, str]] = None,
                       budget_kind: str = "ratio", budget_of: str = "base",
                       tasks_file: Optional[str] = None) -> StudySettings:
    """The settings a form asks for, read by ``pals-study``'s own parser (its checks, its messages). ``budget``: a
    ratio (a number; of the base model's parameters, or ``budget_of`` "non-embedding"), or with ``budget_kind``
    "extra" / "per_task" a count as typed ("15M"); ``tasks_file``: the
    tasks file whose tasks ``tasks`` names (``--tasks-file``). ``machine``: ``Machine`` field → the text typed for it
    (empty or the field's default: not given), passed as pals-study's machine flags (``--memory``,
    ``--max-slowdown``, ``--precision``, ``--device-profile``)."""
    from pals_core.budget.flags import flags_of
    from studies.cli import build_parser, requested_settings
    from studies.settings import MACHINE_NAMES

    if budget_kind not in BUDGET_FLAGS:
        raise ValueError(f"unknown budget kind {budget_kind!r} ({', '.join(BUDGET_FLAGS)})")
    value = repr(float(budget)) if budget_kind == "ratio" else str(budget).strip()
    args = ["run", definition, "--tasks", tasks, f"{BUDGET_FLAGS[budget_kind]}={value}", "--steps", str(int(steps))]
    if budget_kind == "ratio" and budget_of != "base":
        args += [f"--budget-of={budget_of}"]
    if tasks_file:
        args += ["--tasks-file", tasks_file]
    if model:
        args += ["--model", model]
    if max_examples:
        args += ["--max-train-examples", str(int(max_examples)), "--max-eval-examples", str(int(max_examples))]
    flags = {f.name: f for f in flags_of(Machine, MACHINE_NAMES)}
    for name, text in (machine or {}).items():
        if text and text.strip() and text.strip() != flags[name].default:  # as the CLI: only what is asked for
            args += [f"{flags[name].flag}={text.strip()}"]  # "=": a value starting with "-" is not read as a flag
    try:
        settings, _ = requested_settings(definition, build_parser().parse_args(args))
    except StudyError as e:
        raise ValueError(str(e)) from None
    return settings


# ------------------------------------------------------------------------------------ workers

@dataclass
class Worker:
    id: str
    path: Path
    record: Optional[dict]
    status: str  # starting/running · finished · stopped · failed · ended (status unknown)
    owner: Optional[int]  # the pid provably running this worker now (the one stop signals)
    exit_code: Optional[int]
    cancelled: bool

    @property
    def alive(self) -> bool:
        return self.owner is not None

    @property
    def settings(self) -> Optional[StudySettings]:
        """The stored settings, validated; None if absent or unreadable."""
        raw = (self.record or {}).get("settings")
        try:
            return StudySettings.from_dict(raw) if isinstance(raw, dict) else None
        except (TypeError, ValueError, KeyError, AttributeError):
            return None

    def get(self, key: str) -> Any:
        v = (self.record or {}).get(key)
        return v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None

    def log_tail(self, lines: int = 20) -> str:
        try:
            with open(self.path / "log.txt", "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 32768))
                return "\n".join(f.read().decode("utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def load_worker(path: Path) -> Worker:
    """Read a worker folder and derive its status (every time: it survives reloads and restarts)."""
    path = Path(path)
    record = registry.read_json(path / RECORD)
    owner = registry.owned_pid(path, record, WORKER)
    pid = (record or {}).get("pid")
    exit_code = registry.record_exit(path, pid)
    started = (record or {}).get("started")
    cancel = registry.read_json(path / "cancel.json") or {}
    requested = cancel.get("requested")
    cancelled = bool(cancel) and isinstance(requested, (int, float)) and isinstance(started, (int, float)) \
        and requested >= started
    if owner is not None:
        status = "running"
    elif exit_code == 0:
        status = "finished"
    elif exit_code == 130 or cancelled:
        status = "stopped"
    elif exit_code is not None:
        status = "failed"
    else:
        status = "ended"
    return Worker(path.name, path, record, status, owner, exit_code, cancelled)


def list_workers(root: Optional[Path] = None) -> list[Worker]:
    """Every worker folder under ``root``, newest first."""
    root = Path(root) if root is not None else workers_root()
    if not root.is_dir():
        return []
    out = [load_worker(d) for d in root.iterdir() if d.is_dir() and (d / RECORD).is_file()]
    out.sort(key=lambda w: (w.get("started") or 0, w.id), reverse=True)
    return out


def _write(path: Path, record: dict, argv: list[str], history: list) -> Worker:
    pid, pid_start, started = registry.spawn(path, argv)
    registry.write_json_atomic(path / RECORD, {
        **record, "argv": argv, "pid": pid, "pid_start": pid_start, "started": started,
        "started_iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        "command": shlex.join(["pals-study", *argv[3:]]), "history": history})
    return load_worker(path)


def absolute_storage(url: str) -> str:
    """A relative SQLite URL (``sqlite:///file.db``) made absolute, so a resume from another folder finds the same
    file; other URLs as given."""
    if isinstance(url, str) and url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        return "sqlite:///" + os.path.abspath(url[len("sqlite:///"):])
    return url


def start(settings: StudySettings, storage: str, study_name: str, trials: int, root: Optional[Path] = None,
          threads: Optional[int] = None) -> Worker:
    """Start a ``pals-study run`` worker in the background (its own session) and record it on disk."""
    root = (Path(root) if root is not None else workers_root()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    storage = absolute_storage(storage)
    name = f"{folder_name(_study_name(study_name))[:60]}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    path = root / name
    argv = worker_argv(settings, storage, study_name, trials, path, threads)  # checked before any folder
    path.mkdir()
    record = {"id": name, "storage": storage, "study_name": study_name, "trials": trials, "threads": threads,
              "settings": settings.as_dict()}
    return _write(path, record, argv, [])


def stop(worker: Worker) -> bool:
    """SIGTERM to the process provably running this worker; False if none does, whatever pid a file names."""
    fresh = load_worker(worker.path)
    if fresh.owner is None:
        return False
    return registry.terminate(fresh.path, fresh.owner)


def resume_argv(worker: Worker) -> list[str]:
    """The worker's argument list rebuilt from worker.json's settings, storage, name and trials, each validated;
    ``--out`` is always this folder. The recorded ``argv`` is never used."""
    record = worker.record or {}
    settings = worker.settings
    if settings is None:
        raise ValueError(f"worker {worker.id} holds no readable study settings: nothing to resume")
    return worker_argv(settings, record.get("storage"), record.get("study_name"), record.get("trials"),
                       Path(worker.path).resolve(), record.get("threads"))


def resume(worker: Worker) -> Worker:
    """Start the worker again in the same folder (no process may be running it); it joins the same study."""
    current = load_worker(worker.path)
    if current.alive:
        raise ValueError(f"worker {worker.id} is still running")
    argv = resume_argv(current)
    record = current.record or {}
    history = (record["history"] if isinstance(record.get("history"), list) else []) + [{k: record.get(k) for k in ("pid", "started", "argv")}
                                                    | {"status": current.status, "exit_code": current.exit_code}]
    return _write(current.path, record, argv, history)
