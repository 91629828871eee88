"""Running several ordinary training runs — in this process one after another, or as parallel processes.

``run_all(configs, jobs)`` trains every ``TrainConfig`` with ``train(cfg, resume=True)``: a run that
finished returns its summary at once, a stopped or killed one continues from its last checkpoint, a
new one starts — so calling it again after a kill finishes what is missing and redoes nothing.

With ``jobs > 1`` each run is a child process ``python -m pals_core.train.jobs '<config JSON>'`` (at most
``jobs`` at a time; its output goes to ``<run>/log.txt``). Children get SIGTERM when this process dies
(Linux ``PR_SET_PDEATHSIG``), so a killed orchestrator leaves no orphan training on; SIGTERM/SIGINT here
are passed on to the children, which checkpoint and stop (``TrainingStopped``). Give each child its
threads with ``--threads`` (e.g. 1 thread × 2 jobs on 2 cores).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..atomic import read_json
from .config import TrainConfig
from .rundir import RunDir

if TYPE_CHECKING:
    from .trainer import OnEval

POLL_S = 0.5
_ROOT = str(Path(__file__).resolve().parents[2])
EXIT_STOPPED, EXIT_INTERRUPTED, EXIT_USAGE = 143, 130, 2


class RunsFailed(RuntimeError):
    """Some runs exited with an error; the message names them and their logs."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def launch(cfg: TrainConfig) -> subprocess.Popen:
    """Start one run as a child process (output to <out>/log.txt)."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "log.txt", "ab")
    env = dict(os.environ)  # the child imports this very copy of pals_core
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "pals_core.train.jobs", json.dumps(cfg.as_dict())],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    finally:
        log.close()


def _finished(cfg: TrainConfig) -> dict | None:
    """The summary of a run that already finished with this very configuration, else None."""
    run = RunDir(cfg.out)
    if not run.summary.is_file() or (run.read_progress() or {}).get("status") != "finished":
        return None
    try:
        saved = TrainConfig.from_dict(read_json(run.config))
    except (OSError, ValueError):
        return None
    return read_json(run.summary) if saved.resumable_view() == cfg.resumable_view() else None


def run_all(
    configs: Sequence[TrainConfig],
    jobs: int = 1,
    progress: bool = True,
    on_change: Callable[[], None] | None = None,
    on_eval: OnEval | None = None,
    on_done: Callable[[TrainConfig], None] | None = None,
) -> dict[str, dict]:
    """{cfg.out: summary} of every run, trained (or resumed) as needed. Raises ``TrainingStopped`` if
    stopped by a signal and ``RunsFailed`` if any run failed (the others are finished first). ``on_eval`` is
    the first run's trainer callback (``train``'s): it runs in this process, so only with ``jobs`` 1;
    ``on_done(cfg)`` is called as each run has finished (its summary on disk)."""
    from .trainer import TrainingStopped, train  # late: loads torch

    if on_eval is not None and jobs > 1:
        raise ValueError("on_eval is called in this process: it needs jobs=1")
    results: dict[str, dict] = {}
    if jobs <= 1:
        for i, cfg in enumerate(configs):
            results[cfg.out] = train(cfg, resume=True, on_eval=on_eval if i == 0 else None, progress=progress)
            if on_done:
                on_done(cfg)
            if on_change:
                on_change()
        return results
    by_out = {cfg.out: cfg for cfg in configs}
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    pending, running, failed, stopped = list(configs), {}, [], []
    try:
        while pending or running:
            while pending and len(running) < jobs and not stop.is_set():
                cfg = pending.pop(0)
                done = _finished(cfg)
                if done is not None:  # nothing to train: no process to start
                    results[cfg.out] = done
                    if on_done:
                        on_done(cfg)
                    continue
                running[cfg.out] = launch(cfg)
            if stop.is_set():
                pending.clear()
                for proc in running.values():
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
            time.sleep(POLL_S)
            for out, proc in list(running.items()):
                rc = proc.poll()
                if rc is None:
                    continue
                del running[out]
                if rc == 0:
                    results[out] = read_json(Path(out) / "summary.json")
                    if on_done:
                        on_done(by_out[out])
                elif rc in (EXIT_STOPPED, EXIT_INTERRUPTED, -signal.SIGTERM, -signal.SIGINT):
                    stopped.append(out)
                else:
                    failed.append(f"{out} (exit {rc}; see {Path(out) / 'log.txt'})")
            if on_change:
                on_change()
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)
    if failed:
        raise RunsFailed(f"{len(failed)} run(s) failed: {'; '.join(failed)}")
    if stopped or stop.is_set():
        first = stopped[0] if stopped else (configs[0].out if configs else "")
        raise TrainingStopped(0, str(Path(first).parent))
    return results


def _child(argv: Sequence[str]) -> int:
    """One run from its configuration JSON (the child side of ``launch``)."""
    from .trainer import TrainingStopped, train  # late: loads torch

    cfg = TrainConfig.from_dict(json.loads(argv[0]))
    try:
        train(cfg, resume=True, progress=False)
    except TrainingStopped as e:
        print(f"pals-train: {e}", file=sys.stderr)
        return EXIT_STOPPED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except ValueError as e:
        print(f"pals-train: error: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
