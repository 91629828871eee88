"""Proving that a pid is the process we launched, before anything reads it as alive or signals it.

Nothing a file says is believed on its word alone. A process runs ``entry_point`` (a trainer, a study worker) on a
folder if

- it is this process's own live child for that folder (``children``), or
- (training only) it holds the folder's run lock (``pals_core.train.lock``, read from the kernel) and its command
  line is the trainer's on that folder, or
- it is the pid the folder's record names, with the recorded start time (``/proc/<pid>/stat`` field 22), the
  recorded command line, and that command line is ``entry_point``'s (``python -m <module>`` or its console script)
  with ``--out`` this folder.

A pid reused by another process, a zombie, or a process on another folder is never "ours".
"""

from __future__ import annotations

import os
from pathlib import Path

from pals_core.train import lock as run_lock

from .children import child, exit_status, zombie

EntryPoint = tuple[str, str]  # (the module run with ``-m``, the console script)
TRAINER: EntryPoint = ("pals_core.cli.train", "pals-train")
STUDY_WORKER: EntryPoint = ("studies.cli", "pals-study")


def out_of(argv: list[str], cwd: str | None) -> Path | None:
    """The resolved ``--out`` folder of an argument list (the last one given), or None."""
    out = None
    for i, a in enumerate(argv):
        if a == "--out" and i + 1 < len(argv):
            out = argv[i + 1]
        elif a.startswith("--out="):
            out = a[len("--out=") :]
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


def runs_entry(pid: int, folder: Path, entry_point: EntryPoint = TRAINER) -> bool:
    """``pid``'s command line is ``entry_point``'s (``-m <module>`` or the console script) with ``--out`` ``folder``."""
    argv = run_lock.cmdline(pid)
    if not argv:
        return False
    module, script = entry_point
    entry = (len(argv) > 2 and argv[1:3] == ["-m", module]) or any(os.path.basename(a) == script for a in argv[:2])
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = None
    return entry and out_of(argv, cwd) == Path(folder).resolve()


def launched_pid(record: dict | None, folder: Path, entry_point: EntryPoint = TRAINER) -> int | None:
    """The record's pid, if that process still is the one launched: same start time, same command line, and that
    command line is ``entry_point``'s on ``folder``."""
    if not record:
        return None
    pid, start, argv = record.get("pid"), record.get("pid_start"), record.get("argv")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1 or not isinstance(start, int):
        return None
    if not isinstance(argv, list) or run_lock.start_time(pid) != start or zombie(pid):
        return None
    if run_lock.cmdline(pid) != [str(a) for a in argv] or not runs_entry(pid, Path(folder), entry_point):
        return None
    return pid


def owned_pid(folder: Path, record: dict | None, entry_point: EntryPoint) -> int | None:
    """The pid provably running ``entry_point`` on ``folder`` now: our live child for it, or the pid ``record``
    names with the recorded start time and command line (no run lock: for processes that take none, e.g. study
    workers). None otherwise, whatever a file says."""
    pid = record.get("pid") if record else None
    proc = child(pid, Path(folder))
    if proc is not None:
        return proc.pid if exit_status(proc) is None else None
    return launched_pid(record, Path(folder), entry_point)


def training_pid(run_dir: Path, launch: dict | None = None) -> int | None:
    """The pid provably training ``run_dir`` now (our child, the run lock's holder running the trainer there, or
    launch.json's proven pid), or None."""
    run_dir = Path(run_dir)
    pid = launch.get("pid") if launch else None
    proc = child(pid, run_dir)
    if proc is not None and exit_status(proc) is None:
        return proc.pid
    holder = run_lock.holder(run_dir)
    if holder is not None and holder > 1 and (child(holder, run_dir) is not None or runs_entry(holder, run_dir)):
        return holder
    return launched_pid(launch, run_dir)


def busy(run_dir: Path) -> bool:
    """Some process holds ``run_dir``'s run lock (whoever it is)."""
    return run_lock.holder(run_dir) is not None


def same_process(pid: int, start: int | None) -> bool:
    """``pid`` still is the process that started at ``start`` (clock ticks) and has not ended."""
    return start is not None and run_lock.start_time(pid) == start and not zombie(pid)
