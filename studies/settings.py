"""What a study optimises under: tasks, model, budget, training length — fixed for the whole study.

The settings are stored in the study itself (study user attribute ``pals_settings``), so every worker
that joins a study — on this machine or another one sharing the storage — trains exactly the same
problem; only machine-local things (GLUE folder, run folder, device) come from each worker's command
line. Defaults are laptop-sized: a few dozen steps on small GLUE slices.

``tasks`` are GLUE names, or — with ``tasks_file`` (absolute path, ``--tasks-file``) — tasks of one's own: then
``data`` holds their records, label names, C_t, files' sha256 and fingerprints as the study was created
(``studies.tasks``); the calculator prices each head from that C_t and every worker checks its copy against it.

``version`` is the layout the settings were written in: 1 (GLUE names only) or 2 (may hold ``tasks_file`` and
``data``). Older settings load as they are (the fields they lack take their defaults); settings written by a newer
pals-study than this one are refused, since this one would not know what they ask for.

``machine`` holds the study's ``pals_core.budget.machine.Machine`` settings (device profile, precision, and the bound
of each constraint record, ``pals_core.footprint.constraints.CONSTRAINTS``: training memory, step time, serving memory;
None when none was given): the trials' designs must fit them as they fit the parameter budget.
Its batch is the study's ``batch_size`` and its sequence length ``max_len`` — the step every trial trains — so
``Machine.batch`` is not a study flag; its ``device`` is ``--device-profile`` (``pals-study run --device`` is the
worker's torch device). The profile is resolved when the study is created (``local`` or ``h100``, see
``machine.default_device``) and stored, so every worker and every resume bounds d_s the same way.

``heartbeat``, ``grace`` and ``max_retry`` are the study's rule for a dead worker's trial: every worker's running trial
records a heartbeat each ``heartbeat`` s, and a trial silent for ``grace`` s (default 2 × heartbeat) is failed by the
next worker that looks and queued again, up to ``max_retry`` times. They are stored, not per worker: whichever worker
judges a trial stale judges it by the same grace, and the page and ``report`` say "stale" by it too.

``score_at`` says which dev evaluation of a trial is its score, the same for every trial: ``best`` (the best
evaluation, the checkpoint ``pals-predict`` and ``pals-export`` load, what ``summary.json``'s ``average`` holds) or
``final`` (the last evaluation, at the last step).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from pals_core.budget.machine import Machine
from pals_core.budget.solver import Budget
from pals_core.budget.tasks import Task, parse_tasks
from pals_core.flags import flags_of
from pals_core.kinds import DEFAULT_KIND
from pals_core.pricing.config import AdapterConfig
from pals_core.tasks.glue_tasks import glue_record
from pals_core.tasks.record import TaskRecord
from pals_core.train.seeds import parse_seeds

SETTINGS_ATTR = "pals_settings"
SETTINGS_VERSION = 2  # 2: tasks_file and data (tasks of one's own)

DEFAULT_TASKS = ("rte", "mrpc")
DEFAULT_HEARTBEAT_S = 30
DEFAULT_MAX_RETRY = 3
SCORE_AT = {
    "best": "its best dev evaluation (the checkpoint pals-predict loads)",
    "final": "its last dev evaluation (the last step)",
}
DEFAULT_BUDGET_RATIO = 1.10
MACHINE_SKIP = ("batch",)  # the study's batch_size is the machine's batch
MACHINE_NAMES = {"device": "--device-profile"}  # ``--device`` of ``pals-study run`` is the worker's torch device


@dataclass
class StudySettings:
    """The fixed part of every trial of one study (the searched part comes from its definition)."""

    definition: str
    tasks: list[str] = field(default_factory=lambda: list(DEFAULT_TASKS))
    tasks_file: str | None = None  # absolute path of the tasks file as created (None: ``tasks`` are GLUE names)
    data: dict | None = None  # with tasks_file: per task its record, labels, num_labels, files' sha256, fingerprint
    model: str | None = None  # None = embedded MiniLM; "tiny" = random tiny BERT (tests); or a local HF folder
    budget: dict = field(default_factory=lambda: Budget(ratio=DEFAULT_BUDGET_RATIO).as_dict())
    steps: int = 60
    eval_every: int | None = None  # None: a third of the steps (three reports to the pruner per trial)
    batch_size: int = 16
    max_len: int = 64
    max_train_examples: int | None = 512  # per task
    max_eval_examples: int | None = 200  # per task
    lr: float | None = None  # None: each trial's method's own (``Method.recipe``), as pals-train trains it
    warmup: float | None = None  # None: the method's own, likewise
    sampling: str = "annealed"
    epoch_steps: int | None = None  # None: the trainer's default (2400, the paper's epoch)
    seed: int = 0  # training seed, the same for every trial: trials differ by their configuration only
    seeds: list[int] | None = (
        None  # repeat every trial over these training seeds and optimise the mean (None: `seed` once)
    )
    methods: list[str] | None = None  # design study: methods searched (None: every method the calculator knows)
    # The design settings every trial shares (AdapterConfig.as_dict()): alpha-schedule / optimizer studies train this
    # one design; design studies search its method, location and d_s and keep the other fields (h_s, n_top, …).
    adapter: dict | None = None
    max_d_s: int | None = None  # design studies: cap on d_s (None: the hidden size d)
    # Machine fields but batch ({device, precision, <one per constraint record>}); None: no machine setting given
    machine: dict | None = None
    heartbeat: int = DEFAULT_HEARTBEAT_S  # seconds between a running trial's heartbeats
    grace: int | None = None  # a trial silent this long (s) is failed and retried; None: 2 × heartbeat
    max_retry: int = DEFAULT_MAX_RETRY  # how often a dead worker's trial is queued again
    score_at: str = "best"  # a trial's score: its best dev evaluation, or its final one (``SCORE_AT``)
    version: int = SETTINGS_VERSION

    def __post_init__(self) -> None:
        if self.tasks_file is None:
            if self.data is not None:
                raise ValueError("data (task records) is stored only with a tasks_file")
            self.tasks = [t.name for t in parse_tasks(list(self.tasks))]
        else:
            self._check_task_data()
        _positive_int("steps", self.steps)
        if self.eval_every is None:
            self.eval_every = max(1, self.steps // 3)
        self.budget_obj()  # validates
        for name in ("steps", "eval_every", "batch_size", "max_len"):
            _positive_int(name, getattr(self, name))
        for name in ("max_train_examples", "max_eval_examples", "epoch_steps", "max_d_s"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        if self.lr is not None and not (isinstance(self.lr, (int, float)) and self.lr > 0):
            raise ValueError(f"lr must be a positive number, got {self.lr!r}")
        if self.warmup is not None and not (isinstance(self.warmup, (int, float)) and 0 <= self.warmup < 1):
            raise ValueError(f"warmup must be a fraction in [0, 1), got {self.warmup!r}")
        if self.seeds is not None:
            self.seeds = parse_seeds(",".join(str(k) for k in self.seeds))
        if self.machine is not None:
            self.machine = machine_fields(self.machine)
        _positive_int("heartbeat", self.heartbeat)
        if self.grace is not None:
            _positive_int("grace", self.grace)
            if self.grace <= self.heartbeat:
                raise ValueError(
                    f"grace ({self.grace} s) must exceed the heartbeat interval ({self.heartbeat} s): a live "
                    "trial would look dead between two heartbeats"
                )
        if isinstance(self.max_retry, bool) or not isinstance(self.max_retry, int) or self.max_retry < 0:
            raise ValueError(f"max_retry must be a whole number ≥ 0, got {self.max_retry!r}")
        if self.score_at not in SCORE_AT:
            raise ValueError(f"score_at must be one of {', '.join(SCORE_AT)}, got {self.score_at!r}")
        if self.eval_every > self.steps:
            raise ValueError(
                f"eval_every ({self.eval_every}) exceeds steps ({self.steps}): no trial would report a score"
            )

    def _check_task_data(self) -> None:
        """``tasks_file`` is an absolute path and ``data`` holds a checked record, C_t and fingerprint for each task."""
        if not isinstance(self.tasks_file, str) or not os.path.isabs(self.tasks_file):
            raise ValueError(f"tasks_file must be an absolute path, got {self.tasks_file!r}")
        self.tasks = list(self.tasks)
        if not self.tasks or len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks must name each task of {self.tasks_file} once, got {self.tasks!r}")
        if not isinstance(self.data, dict) or set(self.data) != set(self.tasks):
            raise ValueError(f"data must describe exactly the tasks {', '.join(self.tasks)} of {self.tasks_file}")
        for name in self.tasks:
            entry = self.data[name]
            record = TaskRecord.from_dict(entry.get("record") or {}).check()
            c = entry.get("num_labels")
            if (
                record.name != name
                or isinstance(c, bool)
                or not isinstance(c, int)
                or c < 1
                or not isinstance(entry.get("fingerprint"), str)
            ):
                raise ValueError(
                    f"data of task {name!r}: a record of that name, num_labels ≥ 1 and a fingerprint expected"
                )

    @property
    def grace_s(self) -> int:
        """Seconds without a heartbeat after which a running trial is stale: ``grace``, else 2 × ``heartbeat``
        (Optuna's own default)."""
        return self.grace if self.grace is not None else 2 * self.heartbeat

    def records(self) -> list:
        """The study's ``TaskRecord``s in ``tasks`` order: as stored (tasks file), else GLUE's built-in ones."""
        if self.data is None:
            return [glue_record(t) for t in self.tasks]
        return [TaskRecord.from_dict(self.data[t]["record"]) for t in self.tasks]

    def calc_tasks(self) -> list[Task]:
        """The calculator's tasks: each name with its real C_t — read from the task's data when the study was created
        (the count ``tasks_of_records`` gives, and the trainer's own), GLUE's label counts for GLUE names."""
        if self.data is None:
            return parse_tasks(list(self.tasks))
        return [
            Task(t, self.data[t]["num_labels"], (self.data[t].get("record") or {}).get("kind", DEFAULT_KIND))
            for t in self.tasks
        ]

    def template(self) -> AdapterConfig:
        """The design settings shared by every trial (AdapterConfig defaults where the study set none)."""
        return AdapterConfig.from_dict(self.adapter or {})

    def budget_obj(self) -> Budget:
        return Budget.from_dict(self.budget)

    def machine_obj(self) -> Machine | None:
        """The machine every trial's design must fit (B = ``batch_size``), or None when the study set none."""
        return None if self.machine is None else Machine(batch=self.batch_size, **self.machine)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> StudySettings:
        known = {f.name for f in fields(cls)}
        d = dict(d)
        version = d.get("version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version > SETTINGS_VERSION:
            raise ValueError(
                f"study settings of version {version!r}: written by a newer pals-study than this one "
                f"(it reads up to {SETTINGS_VERSION}); update it"
            )
        if "heads" in d and "heads" not in (d.get("adapter") or {}):  # studies stored before h_s moved into `adapter`
            d["adapter"] = {**(d.get("adapter") or {}), "heads": d["heads"]}
        return cls(**{k: v for k, v in d.items() if k in known})

    def differences(self, other: StudySettings) -> list[str]:
        """Names of the settings that differ (``version`` aside). ``tasks_file`` and ``data`` hold where the files
        lie on one machine: compare them with ``studies.tasks.check_same_data``, which names the file."""
        a, b = self.as_dict(), other.as_dict()
        return [k for k in a if k != "version" and a[k] != b[k]]


def machine_fields(values: dict) -> dict:
    """Every stored ``Machine`` field but batch, each checked by its flag's own parser (the declaration's checks)."""
    flags = {f.name: f for f in flags_of(Machine, MACHINE_NAMES) if f.name not in MACHINE_SKIP}
    if not isinstance(values, dict) or set(values) - set(flags):
        raise ValueError(f"machine settings must be a dict of {', '.join(flags)}, got {values!r}")
    out = {}
    for name, f in flags.items():
        value = values.get(name, f.default)
        out[name] = None if value is None else f.read(f.format(value))
    return out


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
