"""The explorer's view of study workers: started from the Studies view's form, listed, stopped and resumed there.
The argument list comes from ``studies.workers`` (from the study's settings), the process rules from
``pals_core.supervise.workers``; nothing of either lives here."""

from __future__ import annotations

from pals_core.supervise.roots import workers_root  # noqa: F401
from pals_core.supervise.workers import RECORD, Worker, list_workers, load_worker, stop  # noqa: F401
from studies.workers import (  # noqa: F401
    BUDGET_FLAGS,
    absolute_storage,
    resume,
    resume_argv,
    settings_flags,
    settings_from_form,
    settings_of,
    start,
    worker_argv,
)
