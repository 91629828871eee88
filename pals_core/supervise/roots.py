"""Where launched processes are recorded: one folder per run under ``$PALS_RUNS_DIR`` (default ``./runs``), one per
study worker under ``<runs>/study-workers``. The explorer and ``pals-runs`` read the same default."""

from __future__ import annotations

import os
from pathlib import Path

RUNS_ENV = "PALS_RUNS_DIR"
WORKERS_DIR = "study-workers"


def runs_root() -> Path:
    """``$PALS_RUNS_DIR`` or ./runs."""
    return Path(os.environ.get(RUNS_ENV) or "runs")


def workers_root(root: Path | None = None) -> Path:
    """The study workers' folder under ``root`` (default ``runs_root()``)."""
    return (Path(root) if root is not None else runs_root()) / WORKERS_DIR
