"""What the person asked for: the sidebar's raw values, and their validation into an ``Inputs``.

Pure Python (no streamlit): ``parse_inputs(RawInputs(...))`` either returns a fully checked
``Inputs`` or raises ``ValueError`` with one line that names the bad field — the page shows it
with ``st.error``. Every check is the calculator's own (``pals_core.budget``); this module only
routes the widget values to it.

The model is read once, here, with its activation-memory conditions (dropout probabilities, attention
implementation: ``pals_core.pricing.activations.Conditions``) from the same source as its shape — a preset's
stored config (``conditions_for_model``), the uploaded config.json (``conditions_from_config``), or the config
the trainer reads (``pals_core.base_model.model_conditions``) — so every view that prices memory or step time
reads ``Inputs.conditions`` and prices what ``pals-budget --model`` and the trainer price.

The tasks are GLUE's, N binary tasks, or the records of a tasks file (``pals_core.tasks.read_tasks_file``), priced
as ``pals-budget --tasks-file`` prices them (``pals_core.budget.tasks_of_records``: declared labels, or the train
file's label column). The label columns are read once per version of the files (``files_stamp``), not per redraw.

The machine bounds are the constraint records' (``pals_core.footprint.constraints.CONSTRAINTS``: training memory, step
time, serving memory, …): one text field each, read by its ``Machine`` flag's parser (``parse_bound``); the rows are
then solved on the page's machine with them (``Inputs.machine``), as ``pals-budget --memory … --memory-infer …``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from pals_core.atomic import atomic_write_text
from pals_core.base_model import model_conditions, model_shape
from pals_core.budget.costs import CONVENTIONS, DEFAULT_SEQ_LEN, default_seq_len
from pals_core.budget.machine import Machine
from pals_core.budget.methods import resolve_layers
from pals_core.budget.solver import Budget
from pals_core.budget.tasks import Task, parse_tasks, tasks_of_records
from pals_core.data.load import TINY as TINY_MODEL
from pals_core.families.bert.presets import EMBEDDED_MODEL
from pals_core.families.registry import get_family
from pals_core.families.shapes import ALIASES, PRESETS, conditions_for_model, conditions_from_config, from_hf_config
from pals_core.flags import flags_of
from pals_core.footprint.constraints import CONSTRAINTS, Constraint, get_constraint
from pals_core.methods.registry import METHODS, get_method
from pals_core.pricing.activations import Conditions
from pals_core.pricing.config import AdapterConfig
from pals_core.pricing.shape import BaseModel
from pals_core.tasks.glue_tasks import PAPER_TASKS, glue_name, glue_record
from pals_core.tasks.record import TaskRecord
from pals_core.tasks.taskfile import MAX_TASKS_FILE_BYTES, read_tasks_file, tasks_file_model

UPLOAD = "upload a config.json…"
EMBEDDED = EMBEDDED_MODEL  # the embedded checkpoint, by its one name (the preset of that name is this model)
TINY = "tiny random BERT (trainable)"
LOCAL = "a local checkpoint folder…"
TRAINABLE = (EMBEDDED, TINY, LOCAL)  # models the trainer can build: the launcher trains what is priced
MODEL_CHOICES = tuple(dict.fromkeys((*TRAINABLE, *PRESETS, UPLOAD)))  # the embedded model once, as trainable
LOCATION_EVERY = "compare all · top · bottom"
LOCATION_CUSTOM = "layers i,j,…"
LOCATION_CHOICES = (LOCATION_EVERY, "all", "top", "bottom", LOCATION_CUSTOM)
BUDGET_KINDS = ("ratio", "extra", "per-task")
BUDGET_DEFAULTS = {"ratio": "1.13", "extra": "15M", "per-task": "1.9M"}
TASKS_GLUE, TASKS_COUNT, TASKS_FILE = "GLUE tasks", "a number of tasks", "a tasks file"
TASK_MODES = (TASKS_GLUE, TASKS_COUNT, TASKS_FILE)
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_TASKS = "examples/tasks/tasks.yaml"  # repo-relative: the example the sidebar opens
UPLOADS = "uploads"  # <runs folder>/uploads/<sha>/tasks.yaml: uploaded tasks files, kept for links and runs
UPLOAD_NAME = "tasks.yaml"
SIDEBAR_RANGES = {"heads": (1, 4096), "seq_len": (1, 100_000), "task_count": (1, 10_000)}
"""The ranges of the sidebar's number fields a link sets (``sidebar.py``'s ``number_input`` min/max; a test holds the two
equal). Streamlit resets a value outside its field's range to the minimum without a word, so the address refuses one
first (``address.from_query``), naming the range."""


@dataclass
class RawInputs:
    """The widget values exactly as the sidebar holds them (strings where a person types)."""

    model: str = "bert-base-uncased"
    model_path: str = ""
    config_name: str = ""
    config_bytes: bytes | None = None
    task_mode: str = TASKS_GLUE
    glue_tasks: list = field(default_factory=lambda: list(PAPER_TASKS))
    task_count: int = 8
    tasks_file: str = ""  # a tasks file's path, as typed (or where an upload was saved)
    budget_kind: str = "ratio"
    budget_value: str = BUDGET_DEFAULTS["ratio"]
    budget_of: str = "base"  # what a ratio is taken against (Budget.OF): base or non-embedding
    methods: list = field(default_factory=lambda: list(METHODS))
    location: str = LOCATION_EVERY
    location_custom: str = ""
    heads: int = AdapterConfig.default("heads")
    seq_len: int = DEFAULT_SEQ_LEN
    convention: str = "exact"
    per_task_pooler: bool = False
    d_s: str = ""
    n_top: int = AdapterConfig.default("n_top")
    ffn_ratio: int = AdapterConfig.default("ffn_ratio")
    bounds: dict = field(default_factory=dict)  # constraint field (``CONSTRAINTS``) → its bound as typed; "" = none


@dataclass(frozen=True)
class Inputs:
    """A validated question for the calculator. ``location`` None = every location (all, top, bottom).
    ``conditions``: the model's dropout and attention implementation, read with its shape (memory and step time)."""

    model: BaseModel
    tasks: tuple[Task, ...]
    budget: Budget
    methods: tuple[str, ...]
    location: str | None
    conditions: Conditions
    heads: int = AdapterConfig.default("heads")
    seq_len: int = DEFAULT_SEQ_LEN
    convention: str = "exact"
    per_task_pooler: bool = False
    d_s: int | None = None
    n_top: int = AdapterConfig.default("n_top")
    ffn_ratio: int = AdapterConfig.default("ffn_ratio")
    trainable: bool = False  # the trainer can build this model (embedded MiniLM, tiny, a local folder)
    train_model: str | None = None  # its ``pals-train --model`` value: None = the embedded MiniLM
    tasks_file: str | None = None  # the tasks file the tasks come from (as typed); None = GLUE or N tasks
    records: tuple[TaskRecord, ...] = ()  # the tasks' records (GLUE built-ins, the file's); () for N anonymous tasks
    bounds: tuple[tuple[str, Any], ...] = ()  # (constraint field, its ``Machine`` value) of every bound given

    def machine(self, page: Machine | None = None) -> Machine | None:
        """The page's machine (``machine_view.page_machine``: device, batch, precision; None = the default) with this
        question's bounds, or None when it sets none (the rows are then priced on parameters only)."""
        if not self.bounds:
            return None
        return replace(page if page is not None else Machine(), **dict(self.bounds))


def trainer_model(choice: str, path: str = "") -> tuple[BaseModel, str | None, Conditions]:
    """A model the trainer builds → (its shape, its ``--model`` value, its conditions), read by the trainer's own
    ``model_shape`` and ``model_conditions`` (config.json only, no weights)."""
    if choice == EMBEDDED:
        train_model = None
    elif choice == TINY:
        train_model = TINY_MODEL
    else:
        train_model = (path or "").strip()
        if not train_model:
            raise ValueError("enter the local checkpoint folder (it holds config.json), or pick another model")
        if not os.path.isfile(os.path.join(train_model, "config.json")):
            raise ValueError(f"no config.json in the checkpoint folder {train_model!r}")
    shape = model_shape(train_model)
    try:
        conditions = model_conditions(train_model)
    except ValueError as e:  # a dropout rate that is no probability, or no number
        raise ValueError(f"{train_model or 'the embedded MiniLM'}: config.json: {e}") from None
    return shape, train_model, conditions


def model_of(choice: str, path: str = "") -> BaseModel:
    """The shape of a sidebar model choice (a preset, or a model the trainer builds; not an upload), read as
    ``parse_inputs`` reads it; ``ValueError`` in one line for one that cannot be read."""
    if choice in TRAINABLE:
        return trainer_model(choice, path)[0]
    return parse_model(choice)[0]


def check_sidebar_range(key: str, what: str, value: int) -> None:
    """``ValueError`` naming ``what``, ``value`` and the range when the sidebar's field ``key`` cannot hold ``value``."""
    low, high = SIDEBAR_RANGES[key]
    if not low <= value <= high:
        raise ValueError(f"{what} {value:,} is outside the sidebar's range, {low:,} to {high:,}")


def parse_model(name: str, config_name: str = "", config_bytes: bytes | None = None) -> tuple[BaseModel, Conditions]:
    """A preset, or the uploaded Hugging Face ``config.json`` read by ``from_hf_config`` → (its shape, its
    conditions: ``conditions_for_model`` of the preset, ``conditions_from_config`` of the upload)."""
    if name in TRAINABLE:
        raise ValueError(f"{name!r} is a trainable model: use trainer_model")
    if name != UPLOAD:
        if name not in PRESETS:
            raise ValueError(f"unknown model preset {name!r} (presets: {', '.join(PRESETS)})")
        return PRESETS[name], conditions_for_model(name)
    if not config_bytes:
        raise ValueError("upload a Hugging Face config.json for the base model, or pick a preset")
    try:
        config = json.loads(config_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{config_name or 'config.json'} is not valid JSON: {e}") from None
    except RecursionError:  # e.g. 100,000 nested brackets
        raise ValueError(f"{config_name or 'config.json'} nests too deeply to be a model config") from None
    if not isinstance(config, dict):
        raise ValueError(f"{config_name or 'config.json'} is not a JSON object")
    label = str(config.get("_name_or_path") or config_name or "uploaded config")
    try:
        model = from_hf_config(config, name=label)
    except TypeError as e:  # a field of the wrong JSON type
        raise ValueError(f"{config_name or 'config.json'}: {e}") from None
    try:
        return model, conditions_from_config(config)
    except ValueError as e:  # a dropout rate that is no probability, or no number
        raise ValueError(f"{config_name or 'config.json'}: {e}") from None


def example_tasks_path() -> str:
    """The example tasks file: repo-relative when the server runs in the checkout (a short link), else absolute."""
    path = ROOT / EXAMPLE_TASKS
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def file_model_widgets(path: str) -> dict[str, str]:
    """The sidebar's model widgets for the model a tasks file names (``model:``, ``tasks_file_model``): the embedded
    model, tiny, a preset, or a checkpoint folder (a config.json's folder); {} when it names none or cannot be read
    (the task panel says why)."""
    try:
        spec = tasks_file_model(os.path.expanduser(path))
    except (OSError, ValueError):
        return {}
    if spec is None:
        return {}
    if spec == TINY_MODEL:
        return {"model": TINY}
    name = ALIASES.get(spec, spec)
    if name in PRESETS:
        return {"model": name}  # the embedded model's preset is the trainable choice of that name
    return {"model": LOCAL, "model_path": spec if os.path.isdir(spec) else os.path.dirname(spec)}


def files_stamp(records: Iterable[TaskRecord], tasks_file: str | None = None) -> tuple:
    """The version of a question's files: (path, mtime, size) of the tasks file and of every train / dev file (each
    file of a save_to_disk folder); None for one that is not there. A cache keyed by it is read again when one
    changes."""

    def stat(p: Path) -> tuple | None:
        try:
            st = p.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    out = []
    paths = [tasks_file] if tasks_file else []
    paths += [p for r in records for p in (r.train, r.dev) if p]
    for path in paths:
        p = Path(path).expanduser()
        files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        out.append((str(p), tuple((str(q), stat(q)) for q in files)))
    return tuple(out)


class NoTasksFile(ValueError):
    """No tasks file given yet (the path field is empty): a prompt, not a mistake of its own."""


def read_records(path: str) -> tuple[TaskRecord, ...]:
    """The records of the tasks file at ``path`` (in file order); ``ValueError`` in one line for a missing or bad
    file (``NoTasksFile`` when no path is given)."""
    text = (path or "").strip()
    if not text:
        raise NoTasksFile("enter the path of a tasks file (YAML or JSON), upload one, or open the example tasks")
    try:
        return tuple(read_tasks_file(text).values())
    except OSError as e:
        raise ValueError(f"{text}: {e.strerror or e}") from None


@lru_cache(maxsize=32)
def _tasks_of(records: tuple[TaskRecord, ...], stamp: tuple) -> tuple[Task, ...]:
    return tuple(tasks_of_records(records))


def file_tasks(records: tuple[TaskRecord, ...], tasks_file: str | None = None) -> tuple[Task, ...]:
    """The calculator's tasks of a tasks file's records (C_t from declared labels or the train file's label
    column), read once per version of the files. ``ValueError`` (a ``TaskDataError``) names file, row and column."""
    try:
        return _tasks_of(records, files_stamp(records, tasks_file))
    except OSError as e:
        raise ValueError(f"{getattr(e, 'filename', None) or 'a task file'}: {e.strerror or e}") from None


def one_line(message: object) -> str:
    """An error as one line (a YAML or data error may carry line breaks)."""
    return " ".join(str(message).split())


def save_upload(data: bytes, root: Path) -> Path:
    """An uploaded tasks file, kept at ``<root>/uploads/<sha256[:16]>/tasks.yaml`` (the same file uploaded again is
    the same path), so that a link and a run can name it. It is read in a staging folder first and moved into place
    only once it is a tasks file whose paths are absolute (the file's own folder is not where its data lies): a
    rejected upload leaves nothing under ``uploads/``. ``ValueError`` with one line (the reason, without the staging
    path) for a file that cannot be used."""
    import shutil
    import tempfile

    if len(data) > MAX_TASKS_FILE_BYTES:
        raise ValueError(f"the uploaded file is over {MAX_TASKS_FILE_BYTES >> 20} MiB: not a tasks file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"the uploaded file is not UTF-8 text ({e.reason} at byte {e.start})") from None
    uploads = Path(root) / UPLOADS
    made = not uploads.is_dir()
    uploads.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".upload-", dir=uploads)).resolve()
    final = uploads / hashlib.sha256(data).hexdigest()[:16]
    try:
        atomic_write_text(staging / UPLOAD_NAME, text)
        try:
            records = read_tasks_file(staging / UPLOAD_NAME).values()
        except ValueError as e:
            reason = one_line(e).removeprefix(f"{staging / UPLOAD_NAME}: ").replace(str(staging / UPLOAD_NAME), "it")
            raise ValueError(f"not a tasks file: {reason}") from None
        for r in records:
            for role in ("train", "dev"):
                p = getattr(r, role)
                if p and Path(p).is_relative_to(staging):
                    raise ValueError(
                        f"the uploaded file's task {r.name!r} gives its {role} file as a relative path "
                        f"({Path(p).relative_to(staging)}): paths in an uploaded tasks file must be absolute "
                        "— or type the file's path instead"
                    )
        try:
            staging.rename(final)
        except OSError:
            if not (final / UPLOAD_NAME).is_file():  # not the same upload kept before: a real failure
                raise
        return final / UPLOAD_NAME
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if made:
            try:
                uploads.rmdir()  # only if still empty: nothing left behind by a rejected first upload
            except OSError:
                pass


def parse_tasks_input(raw: RawInputs) -> tuple[tuple[Task, ...], str | None, tuple[TaskRecord, ...]]:
    """The sidebar's tasks → (the calculator's tasks, the tasks file or None, the tasks' records)."""
    if raw.task_mode == TASKS_FILE:
        path = (raw.tasks_file or "").strip()
        records = read_records(path)
        return file_tasks(records, path), path, records
    if raw.task_mode == TASKS_GLUE:
        if not raw.glue_tasks:
            raise ValueError("choose at least one GLUE task (or switch to a number of tasks, or a tasks file)")
        tasks = tuple(parse_tasks(list(raw.glue_tasks)))
    else:
        tasks = tuple(parse_tasks(int(raw.task_count)))
    names = [glue_name(t.name) for t in tasks]
    return tasks, None, tuple(glue_record(n) for n in names) if all(names) else ()


def parse_budget(kind: str, text: str) -> Budget:
    """``ratio`` "1.13" (or "1.13x"), ``extra`` "15M", ``per-task`` "250k" → a calculator ``Budget``."""
    return Budget.parse(kind, text)


def bound_key(c: Constraint) -> str:
    """The sidebar widget of a constraint's bound (its address key is its ``Machine`` field, ``c.field``)."""
    return f"machine_{c.field}"


def parse_bound(name: str, text: str) -> Any:
    """A bound as typed for the constraint whose ``Machine`` field is ``name`` → the field's value, read by that
    field's flag (``pals-budget --memory-infer 2GB`` reads it the same way); ``ValueError`` in one line."""
    field = get_constraint(name).field
    return next(f for f in flags_of(Machine) if f.name == field).read(str(text).strip())


def parse_bounds(bounds: dict) -> tuple[tuple[str, Any], ...]:
    """Every bound given (a field left empty sets none), in ``CONSTRAINTS`` order."""
    for name in bounds:
        get_constraint(name)  # a key that is no constraint: named
    out = []
    for c in CONSTRAINTS:
        text = str(bounds.get(c.field) or "").strip()
        if text:
            value = parse_bound(c.field, text)
            if value is not None:  # "none" sets none, as on the command line
                out.append((c.field, value))
    return tuple(out)


def parse_location(choice: str, custom: str, model: BaseModel) -> str | None:
    if choice == LOCATION_EVERY:
        return None
    if choice == LOCATION_CUSTOM:
        text = (custom or "").strip()
        if not text:
            raise ValueError("enter the adapted layers as 0-based indices, e.g. 0,1,2")
        layers = resolve_layers(text, model.layers)  # the calculator's own check and message
        return ",".join(str(i) for i in layers)
    if choice not in ("all", "top", "bottom"):
        raise ValueError(f"unknown location {choice!r}")
    return choice


def seq_len_for(model: BaseModel, n: int) -> int:
    """The sequence length priced for ``n`` tokens on ``model``: the default n is lowered to a shorter model's longest,
    as pals-budget does; any other n is checked by the model family's ``check_seq_len`` (``ValueError``, one line)."""
    family = get_family(model.family)
    seq_len = default_seq_len(family.max_tokens(model)) if n == DEFAULT_SEQ_LEN else n
    family.check_seq_len(model, seq_len)
    return seq_len


def parse_inputs(raw: RawInputs) -> Inputs:
    """Validate every field; raise ``ValueError`` naming the first bad one."""
    choice = ALIASES.get(raw.model, raw.model)  # another name of a preset (minilm-l6-h384: the embedded model)
    trainable, train_model = choice in TRAINABLE, None
    if trainable:
        model, train_model, conditions = trainer_model(choice, raw.model_path)
    else:
        model, conditions = parse_model(choice, raw.config_name, raw.config_bytes)
    tasks, tasks_file, records = parse_tasks_input(raw)
    budget = parse_budget(raw.budget_kind, raw.budget_value)
    if budget.ratio is not None and raw.budget_of != "base":
        budget = Budget(ratio=budget.ratio, of=raw.budget_of)
    if not raw.methods:
        raise ValueError("choose at least one method")
    methods = tuple(get_method(m).name for m in raw.methods)
    location = parse_location(raw.location, raw.location_custom, model)
    if raw.convention not in CONVENTIONS:
        raise ValueError(f"unknown convention {raw.convention!r} (exact or paper)")
    for what, value in (
        ("adapter heads h_s", raw.heads),
        ("sequence length", raw.seq_len),
        ("N_top", raw.n_top),
        ("FFN ratio", raw.ffn_ratio),
    ):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{what} must be a positive integer, got {value!r}")
    seq_len = seq_len_for(model, raw.seq_len)
    d_s = None
    if (raw.d_s or "").strip():
        try:
            d_s = int(raw.d_s.strip())
        except ValueError:
            raise ValueError(f"fixed d_s {raw.d_s!r} is not an integer (leave it empty to solve the budget)") from None
        if d_s < 1:
            raise ValueError(f"fixed d_s must be a positive integer, got {d_s}")
    bounds = parse_bounds(raw.bounds or {})
    return Inputs(
        model,
        tuple(tasks),
        budget,
        methods,
        location,
        conditions,
        raw.heads,
        seq_len,
        raw.convention,
        bool(raw.per_task_pooler),
        d_s,
        raw.n_top,
        raw.ffn_ratio,
        trainable,
        train_model,
        tasks_file,
        records,
        bounds,
    )
