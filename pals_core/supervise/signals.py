"""Cancelling a proven process: SIGTERM first (a trainer checkpoints and writes "stopped", a study worker re-queues
its trial and exits 130), SIGKILL only if it has not ended within a grace period.

The caller passes a pid it has proved runs the folder (``proof``); the request is recorded in ``cancel.json`` first,
so the folder reads "stopped" rather than "died" however the process ends. A process we launched leads its own
process group (``start_new_session``): the whole group is signalled, so no grandchild outlives it.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from pals_core.atomic import atomic_write_json
from pals_core.train import lock as run_lock

from .children import child, exit_status
from .proof import same_process

CANCEL_FILE = "cancel.json"


def _signal(pid: int, sig: int) -> bool:
    """``sig`` to ``pid``'s process group when it leads one, else to ``pid``; False if it is gone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def terminate(folder: Path, pid: int) -> bool:
    """Record the request in ``folder/cancel.json``, then SIGTERM ``pid`` (a pid the caller proved runs ``folder``)
    and its process group when it leads one. False if the process is already gone."""
    atomic_write_json(Path(folder) / CANCEL_FILE, {"requested": time.time(), "pid": pid})
    return _signal(pid, signal.SIGTERM)


def ended(folder: Path, pid: int, start: int | None) -> bool:
    """The process ``pid`` (started at ``start``) has ended: reaped here if it is our child, else gone or a zombie."""
    proc = child(pid, folder)
    if proc is not None:
        return exit_status(proc) is not None
    return not same_process(pid, start)


def wait_ended(folder: Path, pid: int, start: int | None, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``pid`` to end; True if it did."""
    deadline = time.monotonic() + seconds
    while not ended(folder, pid, start):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def cancel_process(folder: Path, pid: int, grace_s: float | None = None) -> str:
    """SIGTERM the proven ``pid``; with ``grace_s``, wait that long for it to end and SIGKILL it (and its group)
    if it has not. Returns "gone" (it had already ended), "signalled" (no wait asked), "ended" (it ended after
    SIGTERM) or "killed"."""
    start = run_lock.start_time(pid)  # taken before the signal: a reused pid is never killed
    if not terminate(folder, pid):
        return "gone"
    if grace_s is None:
        return "signalled"
    if wait_ended(folder, pid, start, grace_s):
        return "ended"
    if same_process(pid, start):
        _signal(pid, signal.SIGKILL)
        wait_ended(folder, pid, start, 5.0)
    return "killed"
