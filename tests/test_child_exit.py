"""A child that has ended never reads as running: ``Popen.poll`` answers None, not the exit status, while another
thread of the process (the explorer's reaper) is polling the same child at that moment — so ``pals-runs cancel``
could report a run stopped while the page, reading it at once, still showed it alive with no exit status."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

from pals_core.supervise.children import exit_status, zombie


def test_an_ended_child_reads_as_ended_while_another_thread_polls_it():
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    end = time.monotonic() + 30
    while not zombie(proc.pid):  # ended, not reaped yet (read from /proc only)
        assert time.monotonic() < end
        time.sleep(0.01)
    held, release = threading.Event(), threading.Event()

    def polling() -> None:  # what the reaper's Popen.poll holds during its waitpid
        with proc._waitpid_lock:
            held.set()
            release.wait(5)

    other = threading.Thread(target=polling)
    other.start()
    held.wait(5)
    threading.Timer(0.3, release.set).start()  # that poll ends a moment later, as the reaper's does
    try:
        assert exit_status(proc) == 3
    finally:
        release.set()
        other.join()
