"""The run directory and its files (fixed schemas; the explorer and the studies read them).

    <out>/config.json      the resolved TrainConfig
    <out>/progress.json    {"status", "step", "total", "elapsed_s", "eta_s", "scores": {task: main metric},
                            "average", "best_average", "error", "updated", "pid"}   — rewritten atomically
    <out>/metrics.jsonl    one object per evaluation: {"step", "scores": {task: {metric: value}},
                            "average", "train_loss"}
    <out>/summary.json     {"config", "scores" (best checkpoint), "average", "best_step", "params",
                            "wall_time_s", "steps", "mixed_precision" (what auto was), …}  — written when
                            the run finishes
    <out>/checkpoints/     see ``pals_core/checkpoint.py``

Every JSON file is written to a temporary file in the same folder, flushed, fsync'ed and moved into
place with ``os.replace``, so a reader never sees half a file and a kill never leaves one.

A folder is owned: ``RunDir.claim`` (under the folder's ``lock.RunLock``) accepts a new or empty folder,
a folder a launcher prepared (``LAUNCHER_FILES``), a run, or a start that never reached its first
checkpoint (which the next command may start again); any other non-empty folder is refused. Only the
trainer's own files (``TRAINER_FILES``, checkpoint folders ``step-NNNNNNNN``) are ever deleted.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
from pathlib import Path

from ..atomic import atomic_write_json, atomic_write_text, dumps, open_regular, read_json
from .config import TrainConfig
from .lock import LOCK_FILE

STATUSES = ("running", "finished", "failed", "stopped")
TRAINER_FILES = ("config.json", "progress.json", "metrics.jsonl", "summary.json")
#: notes a launcher (the explorer) keeps beside a run: allowed in a new run's folder, never deleted by the trainer
LAUNCHER_FILES = ("launch.json", "log.txt", "cancel.json", "exit.json")
#: the plan a ``--seeds`` parent (``seeds.py``) and a separate-models parent (``separate.py``) keep beside their runs
SEEDS_FILE = "seeds.json"
PLAN_FILE = "separate.json"


def run_owning(path: str | Path, runs: tuple[str | Path, ...] = ()) -> Path | None:
    """The run folder ``path`` is one of the own files of (a file the trainer, a launcher or a ``--seeds`` /
    separate-models parent writes there, or anything under its ``checkpoints/``), else None — whether or not that
    file exists yet (a run's metrics.jsonl appears at its first evaluation). A run folder: one of ``runs``, or a
    folder holding config.json and checkpoints/, progress.json, seeds.json or separate.json. Symbolic links are
    followed. What writes files for people (``pals-predict --out``) never writes one of these."""
    own = set(TRAINER_FILES) | set(LAUNCHER_FILES) | {LOCK_FILE, SEEDS_FILE, PLAN_FILE}
    target = Path(path).resolve()
    given = {Path(r).resolve() for r in runs}
    for folder in target.parents:
        parts = target.relative_to(folder).parts
        if not ((len(parts) == 1 and parts[0] in own) or (len(parts) > 1 and parts[0] == "checkpoints")):
            continue
        if (
            folder in given
            or ((folder / "config.json").is_file() and (folder / "checkpoints").is_dir())
            or any((folder / name).is_file() for name in ("progress.json", SEEDS_FILE, PLAN_FILE))
        ):
            return folder
    return None


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def eta_s(seconds: float, steps_done: int, steps_left: int) -> float | None:
    """progress.json's ``eta_s``: the steps left at the pace so far, ``steps_left × seconds / steps_done`` (None
    before a step is done). A trainer and a multi-run parent both time only their own invocation's steps."""
    return steps_left * seconds / steps_done if steps_done > 0 else None


class RunDir:
    """Paths and writers of one run directory."""

    def __init__(self, out: str | Path) -> None:
        self.root = Path(out)
        self.config = self.root / "config.json"
        self.progress = self.root / "progress.json"
        self.metrics = self.root / "metrics.jsonl"
        self.summary = self.root / "summary.json"
        self.checkpoints = self.root / "checkpoints"

    def create(self) -> None:
        self.checkpoints.mkdir(parents=True, exist_ok=True)

    def has_run(self) -> bool:
        return self.config.is_file()

    def read_config(self) -> dict:
        """The stored configuration (a ``TrainConfig`` dict); ``ValueError`` naming the file if it is not one."""
        try:
            data = read_json(self.config)
        except OSError as e:
            raise ValueError(f"cannot read {self.config}: {e.strerror or e}") from None
        except (ValueError, RecursionError) as e:
            raise ValueError(
                f"{self.config} is not valid JSON ({type(e).__name__}: {' '.join(str(e).split())[:120]})"
            ) from None
        if not isinstance(data, dict):
            raise ValueError(f"{self.config} is not a pals-train configuration (a JSON object)")
        try:
            cfg = TrainConfig.from_dict(data)
            cfg.validate(cfg.records())  # its records as it recorded them: its tasks file is not parsed again
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise ValueError(f"{self.config} is not a pals-train configuration: {' '.join(str(e).split())}") from None
        return data

    def started(self) -> bool:
        """A run that reached its first checkpoint (or its end): resumable, never started over silently."""
        return (self.checkpoints / "latest.json").is_file() or self.summary.is_file()

    def ensure_folder(self) -> None:
        """Create the run folder (and its parents); ``ValueError`` naming the path if it cannot be one."""
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"--out {self.root} is a file, not a folder")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ValueError(f"cannot create the run folder {self.root}: {e.strerror or e}") from None

    def kind(self) -> str:
        """What the folder holds: "new" (nothing of a run: start one), "unstarted" (a start that failed or was
        killed before its first checkpoint: start again) or "run" (resume it or refuse). ``ValueError`` for a
        foreign non-empty folder or a config.json that is not a pals-train configuration. Read it holding the
        folder's lock (``lock.RunLock``)."""
        if self.config.exists():
            self.read_config()
            return "run" if self.started() else "unstarted"
        if not self.root.is_dir():
            return "new"

        allowed = set(LAUNCHER_FILES) | {LOCK_FILE}
        foreign = sorted(
            p.name
            for p in self.root.iterdir()
            if p.name not in allowed and not (p.name == "checkpoints" and p.is_dir() and not any(p.iterdir()))
        )
        if foreign:
            shown = ", ".join(foreign[:4]) + (", …" if len(foreign) > 4 else "")
            raise ValueError(
                f"{self.root} is not empty and holds no pals-train run ({shown}); choose a new or empty --out"
            )
        return "new"

    def clear_own_files(self) -> None:
        """Delete what the trainer wrote here (its files and checkpoints), nothing else: a new start."""
        from ..checkpoint import Checkpoints  # late: loads torch

        for name in TRAINER_FILES:
            (self.root / name).unlink(missing_ok=True)
        if self.checkpoints.is_dir():
            Checkpoints(self.checkpoints).clear()

    # --- progress.json ----------------------------------------------------------------------------

    def write_progress(
        self,
        *,
        status: str,
        step: int,
        total: int,
        elapsed_s: float,
        eta_s: float | None,
        scores: dict[str, float],
        average: float | None,
        best_average: float | None,
        error: str | None = None,
        params: dict | None = None,
    ) -> None:
        """``params``: the run's parameter counts (summary.json's ``params``), known from its set-up on: a running or
        stopped run shows what it trains before its summary exists (None before the model is built)."""
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        atomic_write_json(
            self.progress,
            {
                "status": status,
                "step": int(step),
                "total": int(total),
                "elapsed_s": round(float(elapsed_s), 3),
                "eta_s": None if eta_s is None else round(float(eta_s), 1),
                "scores": scores,
                "average": average,
                "best_average": best_average,
                "error": error,
                "params": params,
                "updated": now_iso(),
                "pid": os.getpid(),
            },
        )

    def read_progress(self) -> dict | None:
        try:
            return read_json(self.progress)
        except (OSError, ValueError, RecursionError):
            return None

    # --- metrics.jsonl ----------------------------------------------------------------------------

    def append_metrics(self, record: dict) -> None:
        """One evaluation, one line; flushed and fsync'ed (a kill leaves at most a partial last line,
        which ``read_metrics`` ignores and ``truncate_metrics`` removes)."""
        line = dumps(record, indent=None) + "\n"
        with open(self.metrics, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())

    def read_metrics(self) -> list[dict]:
        if not self.metrics.is_file():
            return []
        out = []
        with io.TextIOWrapper(open_regular(self.metrics, "metrics", 1 << 40, OSError), encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # a partial line from a kill
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    break
        return out

    def truncate_metrics(self, last_step: int) -> list[dict]:
        """Keep the evaluations up to ``last_step`` (a resumed run redoes the later ones)."""
        kept = [r for r in self.read_metrics() if r.get("step", 0) <= last_step]
        atomic_write_text(self.metrics, "".join(dumps(r, indent=None) + "\n" for r in kept))
        return kept
