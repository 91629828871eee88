"""``TrainConfig``: everything one multi-task training run depends on (paper Section 4 defaults).

Defaults are the paper's: 60,000 steps of single-task batches of 32, max length 128, AdamW (β 0.9/0.999, no
weight decay on biases/LayerNorm/IA³ scales), linear warm-up then linear decay to zero, gradient clipping at 1.0,
annealed task sampling with 2400-step epochs. The learning rate, the warm-up fraction and the weight decay are the
method's own (``Method.recipe``, as its authors train it: BERT's 2e-5, 10 %, 0.01 for the fine-tuning methods, the
PALs paper's; 5e-4 for LoRA, …), resolved once when the configuration is made (``resolve_recipe``) and stated with
where each came from (``lr_source``: "lora's default (Hu et al. 2021, …)" or "--lr").

``budget`` (a ratio B: N_total ≤ B·N_base) replaces ``adapter.d_s`` by the calculator's solution
(``pals_core.budget.solve``, exact convention, for this model and these tasks); see ``resolve``.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from ..budget.methods import recipe_setting, resolve_trunk
from ..budget.solver import Budget
from ..data.glue_rows import GLUE_DIR_ENV
from ..data.load import TINY
from ..data.samplers import ALPHA_SHAPES, SAMPLERS
from ..data.windows import check_stride
from ..families.shapes import TRAINER_DEFAULT, trainer_model
from ..flags import to_argv
from ..kinds.errors import TaskRecordError
from ..pricing.config import AdapterConfig
from ..pricing.recipe import RECIPE_FIELDS
from ..pricing.units import check_positive_int
from ..tasks import resolve_records
from ..tasks.record import TaskRecord
from ..tasks.taskfile import tasks_file_model
from .extend import extended_records

DEVICES = ("auto", "cpu", "cuda")
MAX_SEED = 2**63 - 1  # a signed 64-bit integer: what torch.manual_seed, numpy and every JSON reader take
MIXED_PRECISION = ("auto", "no", "bf16", "fp16")
GLUE_SOURCES = ("auto", "files", "hub")

# fields that may differ between a run and its resumption (they do not change the numbers)
RESUME_FREE = (
    "out",
    "device",
    "glue_dir",
    "cache_dir",
    "num_threads",
    "glue_source",
    "tasks_file",
    "data",
    *(f"{name}_source" for name in RECIPE_FIELDS),  # where a setting came from, not what it is
)
# (where the data lies may change; what it is may not: ``data`` — each task's record and its files' sha256 — is
# compared on its own, naming the file that changed: ``data_differences``)
# fields that say what a run adapts and with which seed, rather than how it was trained
DESIGN_FIELDS = ("adapter", "budget", "seed")
# fields of a run that adds tasks to another (``extend.py``); absent from runs made before, so left out when unset
EXTENSION_FIELDS = ("from_run", "add_tasks")


def _grad_clip(text: str) -> float | None:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("is not a finite number")
    return None if value == 0 else value


@dataclass
class TrainConfig:
    """One run. Each field is declared once here — type, default, help — and becomes a ``pals-train`` flag
    (``pals_core.flags``); the design's fields are ``AdapterConfig``'s, the budget is ``Budget``."""

    tasks: list[str] = field(
        metadata={
            "help": "tasks, comma-separated: GLUE's cola,sst2,mrpc,stsb,qqp,mnli,qnli,rte, or "
            "names in --tasks-file (none = all of the file's)",
            "always": True,
            "metavar": "T,T,…",
        }
    )
    adapter: AdapterConfig = field(metadata={"cli": False})  # its fields are flags of their own
    model: str | None = field(
        default=None,
        metadata={
            "help": f"local Hugging Face checkpoint folder, or '{TINY}' (a random tiny BERT for smoke runs); "
            "none = the embedded MiniLM",
            "metavar": "PATH",
        },
    )
    glue_dir: str | None = field(  # None: found where the data is read (``resolve_glue_dir``), never frozen here
        default=None,
        metadata={"help": f"official GLUE TSV folder; none = ${GLUE_DIR_ENV}", "always": True, "metavar": "DIR"},
    )
    tasks_file: str | None = field(
        default=None,
        metadata={"help": "your own tasks: a YAML/JSON tasks file (docs/tasks.md)", "metavar": "FILE"},
    )
    from_run: str | None = field(
        default=None,
        metadata={
            "flag": "--from",
            "metavar": "RUN_DIR",
            "help": "add tasks later: a finished run whose design shares nothing trained (trunk frozen); only --add-tasks' "
            "tasks train, every task of the run keeps its weights and settings (max length, precision, model)",
        },
    )
    add_tasks: str | None = field(
        default=None,
        metadata={"help": "with --from: a tasks file of the tasks to add (names new to the run)", "metavar": "FILE"},
    )
    out: str = field(default="runs/pals-train", metadata={"help": "run directory", "always": True, "metavar": "DIR"})
    steps: int = field(default=60000, metadata={"help": "training steps (paper: 60,000)"})
    batch_size: int = field(default=32, metadata={"help": "examples per step and process (single-task batches)"})
    max_len: int = field(default=128, metadata={"help": "max tokens per example"})
    stride: int | None = field(
        default=None,
        metadata={
            "help": "tokens two consecutive windows share when a row is longer than --max-len and read in windows "
            "(a tagging sentence; transformers' stride, run_qa's --doc_stride); none = a third of --max-len",
        },
    )
    truncate: bool = field(
        default=False,
        metadata={
            "help": "cut a tagging sentence longer than --max-len at --max-len instead of reading it in windows: "
            "its later words get the baseline's tag and are counted as cut"
        },
    )
    lr: float | None = field(  # None: the method's own (``resolve_recipe``); config.json holds the rate trained at
        default=None, metadata={"help": "peak learning rate (AdamW)", "default_text": "recipe.lr"}
    )
    weight_decay: float | None = field(
        default=None,
        metadata={
            "help": "AdamW weight decay (none on biases, LayerNorms and IA³'s scale vectors)",
            "default_text": "recipe.weight_decay",
        },
    )
    adam_betas: tuple[float, float] = field(default=(0.9, 0.999), metadata={"help": "AdamW β1,β2"})
    adam_eps: float = field(default=1e-6, metadata={"help": "AdamW ε (BERT's)"})
    warmup: float | None = field(
        default=None,
        metadata={"help": "linear warm-up, as a fraction of the steps", "default_text": "recipe.warmup"},
    )
    grad_clip: float | None = field(
        default=1.0, metadata={"help": "max global gradient norm; 0 or none = off", "parse": _grad_clip, "format": repr}
    )
    sampling: str = field(default="annealed", metadata={"help": "task sampling", "choices": lambda: list(SAMPLERS)})
    alpha_start: float = field(default=1.0, metadata={"help": "alpha_schedule: α in the first epoch"})
    alpha_end: float = field(default=0.2, metadata={"help": "alpha_schedule: α in the last epoch"})
    alpha_shape: str = field(
        default="linear",
        metadata={"help": "alpha_schedule: shape between start and end", "choices": lambda: list(ALPHA_SHAPES)},
    )
    epoch_steps: int = field(default=2400, metadata={"help": "steps per sampling epoch (annealed, alpha_schedule)"})
    eval_every: int = field(default=1000, metadata={"help": "evaluate (and checkpoint) every N steps"})
    save_every: int | None = field(default=None, metadata={"help": "checkpoint every N steps; none = at evaluations"})
    eval_batch_size: int = field(default=128, metadata={"help": "evaluation batch size"})
    max_train_examples: int | None = field(
        default=None, metadata={"help": "per-task cap on training rows (a fixed random subset)"}
    )
    max_eval_examples: int | None = field(
        default=None, metadata={"help": "per-task cap on dev rows (a fixed random subset)"}
    )
    seed: int = field(default=0, metadata={"help": "random seed"})
    device: str = field(
        default="auto",
        metadata={
            "help": "auto = CUDA when present (pick GPUs with CUDA_VISIBLE_DEVICES)",
            "choices": lambda: list(DEVICES),
        },
    )
    mixed_precision: str = field(
        default="auto",
        metadata={
            "help": "auto = bf16 autocast on a CUDA device that has it",
            "choices": lambda: list(MIXED_PRECISION),
        },
    )
    budget: Budget | None = field(
        default=None, metadata={"cli": False}
    )  # --budget/--extra/--per-task: d_s from the solver
    glue_source: str = field(
        default="auto",
        metadata={"help": "files (--glue-dir), hub (nyu-mll/glue) or auto", "choices": lambda: list(GLUE_SOURCES)},
    )
    cache_dir: str | None = field(
        default=None,
        metadata={"help": "tokenisation cache; none = $PALS_CACHE_DIR or the datasets cache", "metavar": "DIR"},
    )
    num_threads: int | None = field(
        default=None, metadata={"help": "torch CPU threads; none = torch's default", "flag": "--threads"}
    )
    data: dict | None = field(default=None, metadata={"cli": False})  # per task: record, label names, files' sha256
    # where lr, warmup and weight_decay came from: "<method>'s default (<its source>)", or their flag ("--lr")
    lr_source: str | None = field(default=None, metadata={"cli": False})
    warmup_source: str | None = field(default=None, metadata={"cli": False})
    weight_decay_source: str | None = field(default=None, metadata={"cli": False})

    def __post_init__(self) -> None:
        if isinstance(self.tasks, str):
            self.tasks = [t for t in self.tasks.split(",") if t.strip()]
        self.tasks = list(self.tasks)
        if isinstance(self.adapter, dict):
            self.adapter = AdapterConfig.from_dict(self.adapter)
        if isinstance(self.adapter, AdapterConfig):  # the trunk as trained, stated in config.json (freeze_trunk)
            self.adapter = resolve_trunk(self.adapter)
            resolve_recipe(self)
        self.adam_betas = tuple(self.adam_betas)
        self.budget = Budget.from_dict(self.budget)

    # --- (de)serialisation --------------------------------------------------------------------------

    def as_dict(self) -> dict:
        d = asdict(self)
        d["adapter"] = self.adapter.as_dict()
        d["adam_betas"] = list(self.adam_betas)
        d["budget"] = self.budget.as_dict() if self.budget is not None else None
        return d

    def to_argv(self) -> list[str]:
        """The ``pals-train`` flags that give this run (design flags and budget included): what a launcher runs
        and what a person would type. ``config_from_args(parse(to_argv(c))) == c``."""
        budget = self.budget.to_argv() if self.budget is not None else []
        own = [name for name in RECIPE_FIELDS if not given_by_flag(self, name)]  # the method's own: resolved again
        argv = [*self.adapter.to_argv(), *budget, *to_argv(self, skip=own)]
        if self.model is None and self.tasks_file and not self.from_run:
            try:
                spec = tasks_file_model(self.tasks_file)
            except (OSError, ValueError):  # the file is read again, and refused, where the run starts
                spec = None
            if spec is not None and trainer_model(spec) != (True, None):  # the embedded model, not the file's: said
                argv += ["--model", "none"]
        return argv

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig field(s): {', '.join(unknown)}")
        return cls(**d)

    # --- checks -------------------------------------------------------------------------------------

    def validate(self, records: list[TaskRecord] | None = None) -> list[TaskRecord]:
        """Raise ``ValueError`` naming the first bad field (before any file or weight is touched); returns the tasks'
        records for the caller to use: ``records`` when the caller holds them (a run's config.json: ``records()``),
        else as declared (``declared_records``: the tasks file parsed here, once)."""
        if not isinstance(self.adapter, AdapterConfig):
            raise ValueError(f"adapter must be an AdapterConfig, got {type(self.adapter).__name__}")
        if self.tasks_file is not None and not str(self.tasks_file).strip():
            raise ValueError("tasks_file is empty: give the path of a tasks file, or leave it out for GLUE")
        if self.add_tasks and not self.from_run:
            raise ValueError("--add-tasks adds tasks to a trained run: give it with --from RUN_DIR")
        records = self.declared_records() if records is None else records
        self.tasks = [r.name for r in records]
        for name in ("steps", "batch_size", "max_len", "epoch_steps", "eval_every", "eval_batch_size"):
            check_positive_int(name, getattr(self, name))
        for name in ("save_every", "max_train_examples", "max_eval_examples", "num_threads"):
            if getattr(self, name) is not None:
                check_positive_int(name, getattr(self, name))
        if self.max_len < 8:  # the upper limit is the model's (``Family.max_tokens``, checked in ``params.resolve``)
            raise ValueError(f"max_len must be at least 8, got {self.max_len}")
        if self.stride is not None:
            check_stride(self.stride, self.max_len)
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be an integer from 0 to 2**63 − 1, got {self.seed!r}")
        _finite("lr", self.lr, low=0.0, strict=True)
        _finite("weight_decay", self.weight_decay, low=0.0)
        _finite("warmup", self.warmup, low=0.0)
        if self.warmup > 1:
            raise ValueError(f"warmup is a fraction of the steps (0 … 1), got {self.warmup}")
        _finite("adam_eps", self.adam_eps, low=0.0, strict=True)
        if len(self.adam_betas) != 2 or not all(0 <= b < 1 for b in self.adam_betas):
            raise ValueError(f"adam_betas must be two numbers in [0, 1), got {self.adam_betas}")
        if self.grad_clip is not None:
            _finite("grad_clip", self.grad_clip, low=0.0, strict=True)
        if self.sampling not in SAMPLERS:
            raise ValueError(f"unknown sampling {self.sampling!r} ({', '.join(SAMPLERS)})")
        if self.alpha_shape not in ALPHA_SHAPES:
            raise ValueError(f"unknown alpha shape {self.alpha_shape!r} ({', '.join(ALPHA_SHAPES)})")
        _finite("alpha_start", self.alpha_start)
        _finite("alpha_end", self.alpha_end)
        if self.device not in DEVICES:
            raise ValueError(
                f"unknown device {self.device!r} ({', '.join(DEVICES)}; pick GPUs with CUDA_VISIBLE_DEVICES)"
            )
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"unknown mixed precision {self.mixed_precision!r} ({', '.join(MIXED_PRECISION)})")
        if self.glue_source not in GLUE_SOURCES:
            raise ValueError(f"unknown GLUE source {self.glue_source!r} ({', '.join(GLUE_SOURCES)})")
        if not self.out:
            raise ValueError("out (the run directory) must be given")
        if (
            self.model is not None
            and self.model != TINY
            and not os.path.isfile(os.path.join(self.model, "config.json"))
        ):
            raise ValueError(
                f"no checkpoint at {self.model!r} (a folder with config.json; or 'tiny', or none for MiniLM)"
            )
        return records

    def records(self) -> list[TaskRecord]:
        """The run's task records, in ``tasks`` order: as recorded in ``data`` once resolved (``params.resolve``),
        else read from the tasks file, else GLUE's built-in records."""
        if self.data is not None and all(t in self.data for t in self.tasks):
            return [TaskRecord.from_dict(self.data[t]["record"]) for t in self.tasks]
        return self.declared_records()

    def declared_records(self) -> list[TaskRecord]:
        """The tasks' records as declared: the tasks file's (or GLUE's built-ins); for a run adding tasks to another
        (``from_run``), the base run's records followed by the ``add_tasks`` file's (``extend.py``)."""
        if self.from_run:
            return extended_records(self.from_run, self.add_tasks)
        return resolve_records(self.tasks, self.tasks_file)

    def resumable_view(self) -> dict:
        """The fields that must match for ``--resume`` to continue this run."""
        d = self.as_dict()
        for k in RESUME_FREE:
            d.pop(k, None)
        return d

    def with_(self, **changes: Any) -> TrainConfig:
        return replace(self, **changes)


def tasks_file_train_model(tasks_file: str) -> tuple[bool, str | None]:
    """(whether the tasks file names its model — ``model:`` —, the ``model`` a run of it trains without ``--model``:
    None for the embedded model, 'tiny', or a checkpoint folder); ``ValueError`` in one line for a model the
    trainer cannot build (a shape-only preset or a bare config.json: the calculator prices those, nothing trains
    them)."""
    try:
        spec = tasks_file_model(tasks_file)
    except (OSError, TaskRecordError):  # a missing or bad file is named where the run reads its tasks (``validate``)
        return False, None
    if spec is None:
        return False, None
    if spec == TINY:
        return True, TINY
    trainable, value = trainer_model(spec)
    if not trainable:
        raise ValueError(
            f"the tasks file's model {spec!r} is a shape the calculator prices, not a model pals-train builds "
            f"(the embedded {TRAINER_DEFAULT}, {TINY!r} or a local checkpoint folder): give --model"
        )
    return True, value


OWN = "the method's own"  # a recipe setting a run took from its method, in ``recipe``


def flag_source(name: str) -> str:
    """The source of a recipe setting a flag gave: '--lr', '--warmup', '--weight-decay'."""
    return "--" + name.replace("_", "-")


def given_by_flag(cfg: TrainConfig, name: str) -> bool:
    """Whether the recipe setting ``name`` of ``cfg`` was given (a flag, a study's sample, a caller's value) rather
    than taken from the method."""
    return getattr(cfg, f"{name}_source") == flag_source(name)


def resolve_recipe(cfg: TrainConfig) -> None:
    """Decide ``cfg``'s learning rate, warm-up and weight decay, as ``resolve_trunk`` decides the trunk: a value
    given stays (its source: its flag); None — or a value taken from a method before — is the method's own
    (``budget.methods.recipe_setting``: its authors', else BERT's), its source naming the method and the paper. So a
    configuration whose method changes (``replace``) takes the new method's rate, and one read back from its
    ``config.json`` the same rate as it was made with."""
    for name in RECIPE_FIELDS:
        source = f"{name}_source"
        if getattr(cfg, name) is not None and getattr(cfg, source) in (None, flag_source(name)):
            setattr(cfg, source, flag_source(name))  # given: by its flag, a caller, a study's sample
        else:
            value, where = recipe_setting(cfg.adapter.method, name)
            setattr(cfg, name, value)
            setattr(cfg, source, where)


def data_differences(saved: dict | None, new: dict | None) -> list[str]:
    """What differs between two runs' ``data`` (records and files' sha256), naming the task and the file."""
    if not saved or not new:
        return []
    out = []
    for t in sorted(set(saved) | set(new)):
        a, b = saved.get(t), new.get(t)
        if a is None or b is None:
            out.append(f"task {t!r} is {'not ' if b is None else ''}given now")
            continue
        ra, rb = TaskRecord.from_dict(a["record"]).definition(), TaskRecord.from_dict(b["record"]).definition()
        if ra != rb:
            fields_ = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
            out.append(f"task {t!r}: its record differs ({', '.join(fields_)})")
        for role in sorted(set(a.get("files", {})) | set(b.get("files", {}))):
            fa, fb = a.get("files", {}).get(role) or {}, b.get("files", {}).get(role) or {}
            if fa.get("sha256") != fb.get("sha256"):
                out.append(
                    f"task {t!r}: {fb.get('path') or fa.get('path')} is not the {role} file the run was "
                    f"trained on (sha256 {str(fa.get('sha256'))[:12]}…, now {str(fb.get('sha256'))[:12]}…)"
                )
    return out


def recipe(config: dict) -> dict:
    """How a run was trained, apart from what it adapts and its seed: the ``TrainConfig`` fields of its config
    (``as_dict()``, as a summary holds it; what ``separate`` derives from them is left out) less ``RESUME_FREE``
    and ``DESIGN_FIELDS``. Runs with the same recipe (model, tasks, steps, batch, lr, sampling, …) differ only in
    their designs and seeds, so their scores may be compared. A setting a run took from its method (``lr_source``,
    …: not a flag) is ``OWN``, whatever its value: runs each trained as its method's authors train it are trained
    alike (LoRA at its 5e-4 beside ``shared`` at BERT's 2e-5)."""
    out = {
        f.name: config[f.name]
        for f in fields(TrainConfig)
        if f.name in config
        and f.name not in RESUME_FREE + DESIGN_FIELDS
        and not (f.name in EXTENSION_FIELDS and config[f.name] is None)
    }  # as runs made before they existed
    for name in RECIPE_FIELDS:
        source = config.get(f"{name}_source")
        if name in out and source is not None and source != flag_source(name):
            out[name] = OWN
    out["tasks"] = task_keys(config)
    return out


def task_keys(config: dict) -> list[str]:
    """The run's tasks as what they are, not what they are called: each task's fingerprint (``glue:rte`` for a
    built-in GLUE task, ``sha256:…`` of the record and its files otherwise); runs made before records were
    recorded are GLUE runs, their names the built-in tasks'."""
    data = config.get("data") or {}
    return [(data.get(t) or {}).get("fingerprint") or f"glue:{t}" for t in config.get("tasks") or []]


def _finite(name: str, value: Any, *, low: float | None = None, strict: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if low is not None and (value < low or (strict and value == low)):
        raise ValueError(f"{name} must be {'above' if strict else 'at least'} {low:g}, got {value!r}")
