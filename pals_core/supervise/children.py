"""The processes this Python process launched, kept with their ``Popen`` until they are reaped.

A child's exit status is collected by its own ``Popen.poll`` here and nowhere else (a dropped ``Popen`` is reaped
by the next ``Popen`` anywhere in the process, and its status lost); it is then kept in the folder's ``exit.json``,
so a restarted server (or ``pals-runs``) still knows how the process ended.

A child that ends is collected at once, whoever looks: a small daemon thread (``_reaper``) polls this process's
unreaped children every ``REAP_EVERY_S`` while there are any, so no ``<defunct>`` process waits for the next page
draw (after Cancel, or when a run or a study worker finishes). It stops when none is left and starts again with the
next ``spawn``.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from pals_core.atomic import atomic_write_json, read_json
from pals_core.train import lock as run_lock

EXIT_FILE = "exit.json"
_CHILDREN: dict[int, tuple[subprocess.Popen, Path]] = {}  # pid → (our child, its folder); kept until reaped
REAP_EVERY_S = 0.2  # how often the reaper looks while a child is running: a zombie lives at most this long
_REAPER_LOCK = threading.Lock()  # guards _CHILDREN's insertions and the reaper's start and end
_reaper: threading.Thread | None = None


def zombie(pid: int) -> bool:
    """``pid`` has ended but is not reaped yet (state Z or X)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :][:1] in ("Z", "X")


def exit_status(proc: subprocess.Popen) -> int | None:
    """Our child's exit status, None while it runs. ``Popen.poll`` answers None, not the status, while another
    thread of this process (the reaper) polls the same child at that moment; a child the kernel says has ended is
    then waited for (that thread's poll takes microseconds), so an ended child never reads as running."""
    code = proc.poll()
    if code is None and zombie(proc.pid):
        try:
            code = proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass
    return code


def child(pid: Any, folder: Path) -> subprocess.Popen | None:
    """This process's child ``pid`` launched for ``folder``, if it is one."""
    entry = _CHILDREN.get(pid) if isinstance(pid, int) else None
    if entry is None or entry[1] != Path(folder).resolve():
        return None
    return entry[0]


def _child_env() -> dict:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")  # the hub is not reachable from here: fail fast, never hang
    return env


def spawn(folder: Path, argv: list[str]) -> tuple[int, int | None, float]:
    """Start ``argv`` (a list, no shell) detached in its own session, output appended to ``folder/log.txt``; keep
    its ``Popen`` so that its exit status is ours to collect. Returns (pid, its start time in clock ticks, the
    wall-clock time it was started)."""
    started = time.time()
    with open(Path(folder) / "log.txt", "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=_child_env(),
            close_fds=True,
        )
    global _reaper
    with _REAPER_LOCK:
        _CHILDREN[proc.pid] = (proc, Path(folder).resolve())  # kept for the process's life: a few bytes a launch
        if _reaper is None:
            _reaper = threading.Thread(target=_reap_while_running, name="pals-reaper", daemon=True)
            _reaper.start()
    return proc.pid, run_lock.start_time(proc.pid), started


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def record_exit(folder: Path, pid: Any) -> int | None:
    """The exit status of the process launched as ``pid`` for ``folder``: collected now by our own ``Popen`` (and
    then kept in ``exit.json``), else the one ``exit.json`` kept for this same pid (a restart)."""
    if not _is_int(pid):
        return None
    proc = child(pid, folder)
    exit_code = None if proc is None else exit_status(proc)
    exit_file = read_json(Path(folder) / EXIT_FILE, or_none=True)
    if exit_code is not None and (exit_file or {}).get("pid") != pid:
        try:
            atomic_write_json(Path(folder) / EXIT_FILE, {"pid": pid, "exit_code": exit_code, "seen": time.time()})
        except OSError:
            pass
    elif exit_code is None and exit_file and exit_file.get("pid") == pid and _is_int(exit_file.get("exit_code")):
        exit_code = exit_file["exit_code"]
    return exit_code


def reap_children() -> list[int]:
    """Collect every child that has ended (no zombie waits for someone to look): its exit status goes to its
    folder's exit.json (``record_exit``). Returns the pids collected now."""
    done = []
    with _REAPER_LOCK:
        children = list(_CHILDREN.items())
    for pid, (proc, folder) in children:
        if proc.returncode is None and exit_status(proc) is not None:
            record_exit(folder, pid)
            done.append(pid)
    return done


def _reap_while_running() -> None:
    """The reaper thread: ``reap_children`` every ``REAP_EVERY_S`` until no child of ours is left running."""
    global _reaper
    while True:
        time.sleep(REAP_EVERY_S)
        try:
            reap_children()
        except Exception:  # a folder gone under us: its exit status is still ours to keep, never a dead thread
            pass
        with _REAPER_LOCK:
            if all(proc.returncode is not None for proc, _ in _CHILDREN.values()):
                _reaper = None
                return
