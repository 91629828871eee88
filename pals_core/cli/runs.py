"""``pals-runs``: the training runs and study workers launched in the background (by the explorer or by this command)
— list them, cancel one, resume one. It reads the same folders the explorer writes (``$PALS_RUNS_DIR``, default
./runs; study workers in ``<runs>/study-workers``), and applies the same rules (``pals_core.supervise``).

    pals-runs list [--root DIR] [--json]
    pals-runs cancel ID [--root DIR] [--grace SECONDS | --no-wait]
    pals-runs resume ID [--root DIR] [--wait]

Exit status: 0 done · 1 resumed with ``--wait`` but the process did not finish · 2 bad input or a refusal (an
unknown id, nothing running to cancel, a run still running), one line on stderr · 130 Ctrl-C while waiting (the
process goes on).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..atomic import dumps
from ..flags import OneLineParser, UsageError
from ..supervise import runs, workers
from ..supervise.roots import RUNS_ENV, runs_root, workers_root

DEFAULT_GRACE_S = 60.0  # a trainer checkpoints on SIGTERM: a large model needs a while
Item = runs.Run | workers.Worker


def _seconds(text: str) -> float:
    """A number of seconds ≥ 0 (argparse's type: its message names the flag)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds ≥ 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="pals-runs", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser, metavar="{list,cancel,resume}")
    root_help = f"the runs folder (default: ${RUNS_ENV}, else ./runs — the explorer's)"
    ls = sub.add_parser("list", help="every launched run and study worker, newest first")
    ls.add_argument("--root", metavar="DIR", help=root_help)
    ls.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    cancel = sub.add_parser("cancel", help="SIGTERM the process provably running ID; SIGKILL after --grace")
    cancel.add_argument("id", metavar="ID", help="a run's or a study worker's id (the first column of list)")
    cancel.add_argument("--root", metavar="DIR", help=root_help)
    cancel.add_argument(
        "--grace",
        type=_seconds,
        default=DEFAULT_GRACE_S,
        metavar="SECONDS",
        help=f"how long it may take to checkpoint and end before SIGKILL (default {DEFAULT_GRACE_S:g})",
    )
    cancel.add_argument("--no-wait", action="store_true", help="send SIGTERM and return (never SIGKILL)")
    resume = sub.add_parser("resume", help="start a stopped, failed or dead run (or worker) again where it left off")
    resume.add_argument("id", metavar="ID", help="a run's or a study worker's id (the first column of list)")
    resume.add_argument("--root", metavar="DIR", help=root_help)
    resume.add_argument("--wait", action="store_true", help="stay until it ends and report how")
    return p


# -------------------------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Row:
    """One line of ``pals-runs list``."""

    id: str
    kind: str  # "run" · "study"
    status: str
    pid: int | None
    out: str
    step: int | None  # run: training steps done; study worker: its study's finished trials (every worker's)
    steps: int | None  # run: steps planned; study worker: trials asked for
    trained: int | None = None  # run: the parameters it trains (known from its set-up on); study worker: None
    note: str | None = None  # run files passed over (a FIFO named progress.json, …): ``runs.Run.note``


def run_row(run: runs.Run) -> Row:
    p, s = run.progress or {}, run.summary or {}
    step = p.get("step", s.get("steps"))
    total = p.get("total", s.get("steps"))
    if total is None and run.launch_config is not None:
        total = run.launch_config.steps
    trained = run.row()["trained params"]
    return Row(
        run.id,
        "run",
        run.status,
        run.owner if run.alive else None,
        str(run.path),
        step,
        total,
        trained if isinstance(trained, int) else None,
        run.note,
    )


def worker_row(worker: workers.Worker) -> Row:
    trials = worker.get("trials")
    return Row(
        worker.id,
        "study",
        worker.status,
        worker.owner,
        str(worker.path),
        worker.trials_done(),
        trials if isinstance(trials, int) else None,
    )


def rows(root: Path) -> list[Row]:
    """The runs under ``root``, then its study workers, each newest first."""
    return [run_row(r) for r in runs.list_runs(root)] + [
        worker_row(w) for w in workers.list_workers(workers_root(root))
    ]


def format_rows(found: Sequence[Row]) -> str:
    header = ("ID", "KIND", "STATUS", "PID", "PROGRESS", "TRAINED", "OUT")
    table = [
        (
            r.id,
            r.kind,
            r.status,
            "" if r.pid is None else str(r.pid),
            f"{'?' if r.step is None else r.step}/{'?' if r.steps is None else r.steps}",
            "" if r.trained is None else f"{r.trained:,}",
            r.out,
        )
        for r in found
    ]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(header)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in (header, *table))


# -------------------------------------------------------------------------------------------- find


def find(root: Path, item_id: str) -> Item:
    """The run ``root/ID`` or the study worker ``root/study-workers/ID``; ``UsageError`` naming what is there."""
    if not runs.valid_id(item_id):
        raise UsageError(f"{item_id!r} is not a run id (letters, digits, '_', '.', '-'; see pals-runs list)")
    folder = root / item_id
    if folder.is_dir() and any(os.path.lexists(folder / f) for f in runs.RUN_FILES):
        return runs.load_run(folder)
    folder = workers_root(root) / item_id
    if folder.is_dir() and (folder / workers.RECORD).is_file():
        return workers.load_worker(folder)
    raise UsageError(f"no run or study worker {item_id!r} in {root} (see pals-runs list --root {root})")


# ------------------------------------------------------------------------------------------ actions


def do_list(root: Path, as_json: bool) -> str:
    found = rows(root)
    if as_json:
        return "\n".join(  # "note" only where a run file was passed over
            dumps({k: v for k, v in r.__dict__.items() if k != "note" or v is not None}, indent=None) for r in found
        )
    if not found:
        return f"no runs or study workers in {root}"
    notes = [f"{r.id}: {r.note}" for r in found if r.note]
    return "\n".join([format_rows(found), *notes])


def _kind(item: Item) -> str:
    return "run" if isinstance(item, runs.Run) else "study worker"


def do_cancel(root: Path, item_id: str, grace_s: float | None) -> str:
    item = find(root, item_id)
    kind = _kind(item)
    outcome = runs.cancel(item, grace_s) if isinstance(item, runs.Run) else workers.stop(item, grace_s)
    if outcome is None:
        raise UsageError(f"{kind} {item.id} is {item.status}: no process runs it, nothing to cancel")
    said = {
        "signalled": "SIGTERM sent",
        "ended": "it ended after SIGTERM",
        "killed": f"it did not end within {grace_s:g} s of SIGTERM: killed (SIGKILL)",
    }[outcome]
    return f"{kind} {item.id}: {said}; now {_load(item).status}"


def _load(item: Item) -> Item:
    return runs.load_run(item.path) if isinstance(item, runs.Run) else workers.load_worker(item.path)


def _wait(item: Item) -> Item:
    """Poll until ``item``'s process ends; we are its parent, so reading it collects its exit status (exit.json)."""
    while (fresh := _load(item)).alive:
        time.sleep(0.2)
    return fresh


def do_resume(root: Path, item_id: str, wait: bool) -> tuple[str, int]:
    item = find(root, item_id)
    if item.alive:
        pid = f" (pid {item.owner})" if item.owner else ""
        raise UsageError(f"{_kind(item)} {item.id} is still running{pid}: nothing to resume")
    if item.status == "finished":
        raise UsageError(f"{_kind(item)} {item.id} has finished: nothing to resume")
    started = runs.resume(item) if isinstance(item, runs.Run) else workers.resume_rebuilt(item)
    line = f"resumed {_kind(item)} {item.id} (pid {started.owner}) in {started.path}; log: {started.path / 'log.txt'}"
    if not wait:
        return line, 0
    done = _wait(started)
    return f"{line}\n{item.id}: {done.status}", 0 if done.status == "finished" else 1


def run(argv: Sequence[str] | None = None) -> tuple[str, int]:
    args = build_parser().parse_args(argv)
    root = Path(args.root) if args.root else runs_root()
    if args.root and not root.is_dir():  # a folder named on purpose: a typo is said, never "no runs" (the default
        # folder may not exist yet: no run was launched)
        raise UsageError(f"--root {args.root}: no such folder")
    if args.command == "list":
        return do_list(root, args.json), 0
    if args.command == "cancel":
        return do_cancel(root, args.id, None if args.no_wait else args.grace), 0
    return do_resume(root, args.id, args.wait)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        text, code = run(argv)
    except (UsageError, ValueError, OSError) as e:
        print(f"pals-runs: error: {' '.join(str(e).split()) or type(e).__name__}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C while waiting: the process has its own session and goes on
        print("pals-runs: stopped waiting; the process goes on (pals-runs list shows it)", file=sys.stderr)
        return 130
    if text:
        print(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
