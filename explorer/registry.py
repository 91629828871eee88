"""The explorer's view of launched training runs: ``pals_core.supervise.runs`` (launch, watch, cancel, resume) and
the process rules it rests on (``children``, ``proof``, ``signals``), under the names the views use. No process
logic lives here; see ``pals_core.supervise`` and docs/design.md (process supervision)."""

from __future__ import annotations

from pals_core.supervise.children import _CHILDREN, reap_children, record_exit, spawn  # noqa: F401
from pals_core.supervise.proof import TRAINER, busy, owned_pid, training_pid  # noqa: F401
from pals_core.supervise.roots import RUNS_ENV, runs_root  # noqa: F401
from pals_core.supervise.runs import (  # noqa: F401
    ACTIVE,
    TERMINAL,
    Run,
    cancel,
    launch,
    list_runs,
    load_run,
    new_run_id,
    resume,
    resume_argv,
)
from pals_core.supervise.signals import terminate  # noqa: F401
from pals_core.train import lock as run_lock  # noqa: F401
