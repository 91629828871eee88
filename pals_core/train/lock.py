"""One trainer per run folder: an exclusive ``fcntl.flock`` on ``<out>/.pals-train.lock``.

The trainer takes the lock before it reads or writes anything in the folder and holds it until it
returns (the kernel drops it when the process dies, however it dies), so a second ``pals-train`` on the
same ``--out`` is refused at once and never interleaves its files with the first one's. The lock file
holds the owner's pid, start time (``/proc/<pid>/stat`` field 22) and command line, for messages; who
really holds the lock is read from the kernel (``/proc/locks``), never from the file.

Readers (the explorer's runs list) ask ``holder(folder)``: the pid that holds the lock now, or None.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from pathlib import Path

LOCK_FILE = ".pals-train.lock"
ACQUIRE_WAIT_S = 2.0  # a reader's probe never holds the lock; this only covers a lock being released


class RunBusy(ValueError):
    """Another process trains in this folder."""


def lock_path(folder: str | Path) -> Path:
    return Path(folder) / LOCK_FILE


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": field 3 is fields[0]
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def cmdline(pid: int) -> list[str] | None:
    """The process's argument list (``/proc/<pid>/cmdline``), or None."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return [a.decode("utf-8", errors="replace") for a in raw.split(b"\0")[:-1]]


def holder(folder: str | Path) -> int | None:
    """The pid that holds ``folder``'s run lock now (from the kernel's ``/proc/locks``), or None."""
    try:
        st = os.stat(lock_path(folder))
    except OSError:
        return None
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 7130 fe:00:2147339 0 EOF" ("->" marks a waiter: skip it)
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[3] == "WRITE" and parts[5] == dev:
            try:
                return int(parts[4])
            except ValueError:
                return None
    return None


class RunLock:
    """``with RunLock(out):`` — the exclusive right to train in ``out`` (which must exist)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.fd: int | None = None

    def acquire(self) -> RunLock:
        path = lock_path(self.folder)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)  # never through a link
        except OSError as e:
            raise ValueError(f"cannot lock run folder {self.folder}: {e.strerror or e}") from None
        deadline = time.monotonic() + ACQUIRE_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    who = holder(self.folder)
                    raise RunBusy(
                        f"another process{f' (pid {who})' if who else ''} is training in {self.folder}; "
                        "wait for it to end or cancel it, or choose another --out"
                    ) from None
                time.sleep(0.05)
        self.fd = fd
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": os.getpid(), "start": start_time(os.getpid()), "argv": sys.argv}).encode())
        except OSError:
            pass  # the lock is what counts; the note is for people
        return self

    def release(self) -> None:
        if self.fd is not None:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
