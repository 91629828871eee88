"""A study worker's argument list, from the study's settings: what ``pals_core.supervise.workers`` starts.

The launch is an argument list, never a shell string, running only ``python -m studies.cli run`` with ``--out``
the worker's folder; its flags are rebuilt from ``StudySettings`` (``worker_argv``), and parsing them back with
``pals-study``'s own parser must give the same settings, or nothing starts. ``resume`` rebuilds the list from
worker.json's settings, storage, name and trials, each validated; the recorded ``argv`` is a record, never run.
The process side (detached start, proof, SIGTERM, exit status) is ``pals_core.supervise``'s.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pals_core.budget.machine import Machine
from pals_core.flags import flags_of
from pals_core.flags import to_argv as adapter_flags  # AdapterConfig's and Machine's flags
from pals_core.pricing.config import AdapterConfig
from pals_core.supervise import workers as supervised
from pals_core.supervise.proof import STUDY_WORKER
from pals_core.supervise.roots import workers_root
from pals_core.supervise.workers import Worker

from .definitions import get_definition
from .errors import StudyError
from .naming import check_study_name, folder_name
from .settings import MACHINE_NAMES, MACHINE_SKIP, StudySettings

STUDY_MODULE = STUDY_WORKER[0]
_URL_OK = re.compile(r"^[A-Za-z0-9+]+://")
BUDGET_FLAGS = {"ratio": "--budget", "extra": "--extra", "per_task": "--per-task"}


def settings_flags(settings: StudySettings) -> list[str]:
    """``pals-study`` flags that give exactly ``settings`` (the study's stored, validated settings)."""
    s = settings
    argv = ["--tasks", ",".join(s.tasks)]
    if s.tasks_file is not None:  # the tasks are the file's (GLUE names otherwise)
        argv += ["--tasks-file", s.tasks_file]
    if s.model is not None:
        argv += ["--model", s.model]
    argv += s.budget_obj().to_argv()
    argv += [
        "--steps",
        str(s.steps),
        "--eval-every",
        str(s.eval_every),
        "--batch-size",
        str(s.batch_size),
        "--max-len",
        str(s.max_len),
        "--max-train-examples",
        str(s.max_train_examples or 0),
        "--max-eval-examples",
        str(s.max_eval_examples or 0),
        "--sampling",
        s.sampling,
    ]
    if s.lr is not None:  # else each trial's method's own
        argv += ["--lr", repr(float(s.lr))]
    if s.warmup is not None:
        argv += ["--warmup", repr(float(s.warmup))]
    if s.epoch_steps is not None:
        argv += ["--epoch-steps", str(s.epoch_steps)]
    argv += ["--seeds", ",".join(map(str, s.seeds))] if s.seeds is not None else ["--seed", str(s.seed)]
    if s.methods is not None:
        argv += ["--methods", ",".join(s.methods)]
    if s.max_d_s is not None:
        argv += ["--max-d-s", str(s.max_d_s)]
    argv += ["--score-at", s.score_at, "--heartbeat", str(s.heartbeat), "--max-retry", str(s.max_retry)]
    if s.grace is not None:
        argv += ["--grace", str(s.grace)]
    searched = ("method", "location", "d_s") if get_definition(s.definition).searches_design else ()
    argv += adapter_flags(s.template(), skip=searched)
    if s.machine is not None:  # the study's Machine (its batch is --batch-size), flags from the same declaration
        argv += adapter_flags(s.machine_obj(), skip=MACHINE_SKIP, names=MACHINE_NAMES)  # the device is always stored
    return argv


def _study_name(name: Any) -> str:
    """``name`` if ``studies.naming.check_study_name`` accepts it; else ``ValueError``."""
    if not isinstance(name, str):
        raise ValueError(f"study name {name!r} is not text")
    try:
        return check_study_name(name)
    except StudyError as e:
        raise ValueError(str(e)) from None


def worker_argv(
    settings: StudySettings,
    storage: str,
    study_name: str,
    trials: int,
    out: Path,
    threads: int | None = None,
    create: bool = False,
) -> list[str]:
    """``[python, -m, studies.cli, run, <definition>, --storage, URL, --study-name, NAME, --trials, N, --out, OUT,
    [--create,] …settings]``. Raises ``ValueError`` unless ``pals-study``'s parser reads these flags back as
    ``settings``. ``create``: the person asked for a new study of that name (``--create``)."""
    from .cli import build_parser, requested_settings  # late: loads optuna

    _study_name(study_name)
    if not isinstance(storage, str) or not _URL_OK.match(storage):
        raise ValueError(f"storage {storage!r} is not a database URL (sqlite:///file.db, postgresql://…)")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    args = [
        "run",
        settings.definition,
        "--storage",
        storage,
        "--study-name",
        study_name,
        "--trials",
        str(trials),
        "--out",
        str(out),
    ]
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        args += ["--threads", str(threads)]
    if create is True:
        args += ["--create"]
    args += settings_flags(settings)
    try:
        parsed, _ = requested_settings(settings.definition, build_parser().parse_args(args))
    except StudyError as e:
        raise ValueError(str(e)) from None
    if parsed.differences(settings):
        raise ValueError(f"the flags do not reproduce the settings: {', '.join(parsed.differences(settings))} differ")
    return [sys.executable, "-m", STUDY_MODULE, *args]


def settings_from_form(
    definition: str,
    *,
    tasks: str,
    model: str | None,
    budget,
    steps: int,
    max_examples: int | None = None,
    machine: dict[str, str] | None = None,
    budget_kind: str = "ratio",
    budget_of: str = "base",
    tasks_file: str | None = None,
    methods: Sequence[str] | None = None,
    design: AdapterConfig | None = None,
    max_len: int | None = None,
    batch_size: int | None = None,
) -> StudySettings:
    """The settings a form asks for, read by ``pals-study``'s own parser (its checks, its messages). ``budget``: a
    ratio (a number; of the base model's parameters, or ``budget_of`` "non-embedding"), or with ``budget_kind``
    "extra" / "per_task" a count as typed ("15M"); ``tasks_file``: the tasks file whose tasks ``tasks`` names
    (``--tasks-file``). ``machine``: ``Machine`` field → the text typed for it (empty or the field's default: not
    given), passed as pals-study's machine flags (``--memory``, ``--max-slowdown``, ``--precision``,
    ``--device-profile``). ``methods``: the methods a design study searches (``--methods``; other definitions train
    one design and take none); ``design``: the design settings every trial shares (``AdapterConfig``'s flags; a
    design study takes all but method, location and d_s, which it searches; another definition trains this design);
    ``max_len``, ``batch_size``: ``--max-len``, ``--batch-size``."""
    from .cli import build_parser, requested_settings  # late: loads optuna

    if budget_kind not in BUDGET_FLAGS:
        raise ValueError(f"unknown budget kind {budget_kind!r} ({', '.join(BUDGET_FLAGS)})")
    searches = get_definition(definition).searches_design
    value = repr(float(budget)) if budget_kind == "ratio" else str(budget).strip()
    args = ["run", definition, "--tasks", tasks, f"{BUDGET_FLAGS[budget_kind]}={value}", "--steps", str(int(steps))]
    if budget_kind == "ratio" and budget_of != "base":
        args += [f"--budget-of={budget_of}"]
    if tasks_file:
        args += ["--tasks-file", tasks_file]
    if model:
        args += ["--model", model]
    if max_examples:
        args += ["--max-train-examples", str(int(max_examples)), "--max-eval-examples", str(int(max_examples))]
    if max_len is not None:
        args += ["--max-len", str(int(max_len))]
    if batch_size is not None:
        args += ["--batch-size", str(int(batch_size))]
    if searches and methods:
        args += ["--methods", ",".join(methods)]
    if design is not None:
        args += adapter_flags(design, skip=("method", "location", "d_s") if searches else ())
    flags = {f.name: f for f in flags_of(Machine, MACHINE_NAMES)}
    for name, text in (machine or {}).items():
        if text and text.strip() and text.strip() != flags[name].default:  # as the CLI: only what is asked for
            args += [f"{flags[name].flag}={text.strip()}"]  # "=": a value starting with "-" is not read as a flag
    try:
        settings, _ = requested_settings(definition, build_parser().parse_args(args))
    except StudyError as e:
        raise ValueError(str(e)) from None
    return settings


def absolute_storage(url: str) -> str:
    """A relative SQLite URL (``sqlite:///file.db``) made absolute, so a resume from another folder finds the same
    file; other URLs as given."""
    if isinstance(url, str) and url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        return "sqlite:///" + os.path.abspath(url[len("sqlite:///") :])
    return url


def settings_of(worker: Worker) -> StudySettings | None:
    """The worker's stored settings (worker.json "settings"), validated; None if absent or unreadable."""
    raw = (worker.record or {}).get("settings")
    try:
        return StudySettings.from_dict(raw) if isinstance(raw, dict) else None
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


def start(
    settings: StudySettings,
    storage: str,
    study_name: str,
    trials: int,
    root: Path | None = None,
    threads: int | None = None,
    create: bool = False,
) -> Worker:
    """Start a ``pals-study run`` worker in the background (its own session) and record it on disk; ``create``:
    make the study if the storage does not hold it (``--create``; kept for a resume)."""
    root = (Path(root) if root is not None else workers_root()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    storage = absolute_storage(storage)
    name = f"{folder_name(_study_name(study_name))[:60]}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    path = root / name
    argv = worker_argv(settings, storage, study_name, trials, path, threads, create)  # checked before any folder
    record = {
        "storage": storage,
        "study_name": study_name,
        "trials": trials,
        "threads": threads,
        "create": create is True,
        "settings": settings.as_dict(),
    }
    return supervised.start(path, record, argv)


def resume_argv(worker: Worker) -> list[str]:
    """The worker's argument list rebuilt from worker.json's settings, storage, name and trials, each validated;
    ``--out`` is always this folder. The recorded ``argv`` is never used."""
    record = worker.record or {}
    settings = settings_of(worker)
    if settings is None:
        raise ValueError(f"worker {worker.id} holds no readable study settings: nothing to resume")
    return worker_argv(
        settings,
        record.get("storage"),
        record.get("study_name"),
        record.get("trials"),
        Path(worker.path).resolve(),
        record.get("threads"),
        record.get("create") is True,
    )


def resume(worker: Worker) -> Worker:
    """Start the worker again in the same folder (no process may be running it); it joins the same study."""
    current = supervised.load_worker(worker.path)
    if current.alive:
        raise ValueError(f"worker {worker.id} is still running")
    return supervised.resume(current, resume_argv(current))
