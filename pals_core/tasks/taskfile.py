"""The tasks file: YAML (a JSON file is valid YAML) with a top-level ``tasks:`` mapping, name → record:

    tasks:
      intent:
        train: data/intent_train.csv     # .csv .tsv .jsonl .parquet, or a save_to_disk folder
        dev: data/intent_dev.csv         # optional: else dev_fraction (default 0.1) of train, split by the seed
        text: message                    # one column, or [premise, hypothesis] for a pair
        label: intent
        kind: classification             # classification | regression | multilabel | tokens | choice | span
        labels: [billing, refund, other] # optional: fixes the class order
        metric: macro_f1                 # optional main metric
      tags: {train: data/tickets.parquet, text: body, label: tags, kind: multilabel}
      entities: {train: data/ner.conll, kind: tokens}  # CoNLL: words in the first column, tags in the last
      swag: {train: data/swag_train.csv, kind: choice}  # SWAG's layout: sent1, sent2, ending0…, label
      squad: {train: data/squad_train.jsonl, kind: span}  # SQuAD's layout: question, context, answers
      rte: {glue: rte}                   # a built-in GLUE task (rows from --glue-dir)

A top-level ``model:`` names the model the tasks are meant for (a preset such as ``all-MiniLM-L6-v2``, a HF
``config.json`` or a checkpoint folder, a path relative to the file's folder): ``tasks_file_model`` reads it, and
``pals-budget``, ``pals-train`` and the explorer price and train it unless ``--model`` (the sidebar's model) says
otherwise.

A field an entry leaves out that its kind declares a default for (``Kind.record_defaults``: a choice task's text is
SWAG's ``[sent1, sent2]``, a span task's ``[question, context]`` and its label ``answers``) takes that default. Paths
are relative to the file's folder. ``read_tasks_file`` returns the records, checked, in file order;
``TaskRecordError`` (a ``ValueError``) names the file, the task and the field of anything wrong. Names and text are
read as written (``_yaml_load``): a key YAML 1.1 would turn into a boolean, a number or null (``yes:``, ``1:``,
``010:``, ``null:``) is refused with the quoting that keeps it, a text field takes a scalar's text (``labels: [yes,
no]``), and aliases, the merge key ``<<`` and complex keys are refused by name.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..kinds import DEFAULT_KIND, PACKAGES, get_kind
from ..kinds.errors import TaskRecordError
from .glue_tasks import get_task, glue_name, glue_record
from .record import TaskRecord

MAX_TASKS_FILE_BYTES = 1 << 20
RECORD_FIELDS = (
    "train",
    "dev",
    "text",
    "label",
    "kind",
    "labels",
    "metric",
    "metrics",
    "positive",
    "range",
    "label_sep",
    "format",
    "choices",
    "dev_fraction",
)


_KEY_TYPES = {"bool": "a boolean", "int": "a number", "float": "a number", "null": "null", "timestamp": "a date"}
NUMBER_FIELDS = ("range", "dev_fraction")  # every other field is text: a column, a label, a name, a path


class _Written:
    """A YAML scalar that YAML 1.1 reads as a number, a boolean or a date: its value and the text as written. A field
    of text takes the text (``labels: [yes, no]`` are the labels 'yes' and 'no', ``label: 010`` the column '010'),
    a field of numbers the value."""

    __slots__ = ("value", "text")

    def __init__(self, value: Any, text: str) -> None:
        self.value, self.text = value, text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return repr(self.text)


def _as_written(key: str, value: Any) -> Any:
    """``value`` of field ``key`` with each ``_Written`` scalar as its text (its value in ``NUMBER_FIELDS``)."""
    if isinstance(value, list):
        return [_as_written(key, v) for v in value]
    if isinstance(value, dict):
        return {k: _as_written(k, v) for k, v in value.items()}
    if isinstance(value, _Written):
        return value.value if key in NUMBER_FIELDS else value.text
    return value


def _yaml_load(text: str, path: Path) -> Any:
    """The YAML document in ``text``, read so that nothing is misread or expanded: a mapping's keys are strings as
    written (YAML 1.1 reads ``yes:`` as true, ``010:`` as 8, ``null:`` as None: such a key is refused with a line
    that says to quote it; a complex key ``? [a, b]`` is refused), a key given twice is refused, and aliases
    (``*name``) and the merge key ``<<`` are refused by name before anything is built — a 600-byte alias bomb that
    would expand to billions of elements is one line, at once. ``TaskRecordError`` names the file, line and column."""
    import yaml

    def at(mark: Any) -> str:
        return f"{path}, line {mark.line + 1}, column {mark.column + 1}"

    class _Loader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise TaskRecordError(
                    f"{at(event.start_mark)}: YAML alias *{event.anchor}: a tasks file takes no aliases (*name, of an "
                    "&name); write each value out"
                )
            return super().compose_node(parent, index)

    def mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise TaskRecordError(
                    f"{at(key_node.start_mark)}: the YAML merge key '<<' is not read in a tasks file; "
                    "write each task's fields out"
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise TaskRecordError(
                    f"{at(key_node.start_mark)}: a complex key (a {key_node.id} as a key, as '? [a, b]' writes); "
                    "keys are names"
                )
            if key_node.tag != "tag:yaml.org,2002:str":
                kind = _KEY_TYPES.get(key_node.tag.rsplit(":", 1)[-1], key_node.tag)
                raise TaskRecordError(
                    f"{at(key_node.start_mark)}: key {key_node.value} is read by YAML as {kind}, not as the name "
                    f"written; quote it ('{key_node.value}') to name it"
                )
            key = key_node.value
            if key in seen:
                raise TaskRecordError(
                    f"{path}, line {key_node.start_mark.line + 1}: {key!r} is given twice (two tasks of one name?)"
                )
            seen.add(key)
        return loader.construct_mapping(node, deep)

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    for kind in ("bool", "int", "float", "timestamp"):
        tag = f"tag:yaml.org,2002:{kind}"
        build = yaml.SafeLoader.yaml_constructors[tag]
        _Loader.add_constructor(tag, lambda loader, node, build=build: _Written(build(loader, node), node.value))
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise TaskRecordError(
            f"{path}{where}: not YAML ({' '.join(str(getattr(e, 'problem', None) or e).split())})"
        ) from None
    except RecursionError:
        raise TaskRecordError(f"{path}: nested too deeply") from None


def _scalar_list(value: Any, task: str, name: str, path: Path) -> Any:
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    for v in items:
        if isinstance(v, (dict, list)) or v is None:
            raise TaskRecordError(f"{path}: task {task!r}: {name!r} holds {type(v).__name__} {v!r}")
    return items


def _record(name: str, entry: Any, folder: Path, path: Path) -> TaskRecord:
    entry = entry.value if isinstance(entry, _Written) else _as_written("", entry)
    if not isinstance(entry, dict):
        raise TaskRecordError(
            f"{path}: task {name!r} is a mapping of fields (train, text, label, …) "
            f"or {{glue: <name>}}, got {type(entry).__name__}"
        )
    if "glue" in entry:
        if set(entry) != {"glue"}:
            raise TaskRecordError(
                f"{path}: task {name!r}: a built-in GLUE task takes only 'glue' "
                f"(also given: {', '.join(sorted(set(entry) - {'glue'}))})"
            )
        key = glue_name(str(entry["glue"]))
        try:
            get_task(entry["glue"] if key is None else key)
        except ValueError as e:
            raise TaskRecordError(f"{path}: task {name!r}: {e}") from None
        record = glue_record(key)
        if name != record.name:
            record = record.with_(name=name)
        return record.check()
    unknown = sorted(set(entry) - set(RECORD_FIELDS))
    if unknown:
        raise TaskRecordError(
            f"{path}: task {name!r}: unknown field(s) {', '.join(map(repr, unknown))} "
            f"(fields: {', '.join(RECORD_FIELDS)}, or glue)"
        )
    d: dict[str, Any] = {"name": name}
    for key in ("train", "dev"):
        if entry.get(key) is not None:
            if not isinstance(entry[key], str) or not entry[key].strip():
                raise TaskRecordError(f"{path}: task {name!r}: {key!r} is a path, got {entry[key]!r}")
            p = Path(entry[key]).expanduser()
            d[key] = os.path.normpath(p if p.is_absolute() else (folder / p))
    for key in ("text", "labels", "metrics", "range", "choices"):
        if key in entry:
            items = _scalar_list(entry[key], name, key, path)
            if items is not None:
                d[key] = tuple(str(v) if key != "range" else v for v in items)
    for key in ("label", "kind", "metric", "positive", "label_sep", "format"):
        if entry.get(key) is not None:
            if isinstance(entry[key], (dict, list)):
                raise TaskRecordError(f"{path}: task {name!r}: {key!r} is one value, got {entry[key]!r}")
            d[key] = str(entry[key])
    if "dev_fraction" in entry:
        d["dev_fraction"] = entry["dev_fraction"]
    if d.get("kind", DEFAULT_KIND) in PACKAGES:  # an unknown kind is named by the record's check
        for key, value in get_kind(d.get("kind", DEFAULT_KIND)).record_defaults.items():
            d.setdefault(key, value)
    try:
        return TaskRecord(**d).check()
    except TaskRecordError as e:
        raise TaskRecordError(f"{path}: {e}") from None


TOP_LEVEL = ("tasks", "model")


def read_tasks_file(path: str | Path) -> dict[str, TaskRecord]:
    """The records of a tasks file, in file order (see the module's docstring)."""
    doc, p = _document(path)
    folder = p.resolve().parent
    return {str(name): _record(str(name), entry, folder, p) for name, entry in doc["tasks"].items()}


def tasks_file_model(path: str | Path) -> str | None:
    """The model a tasks file names (its top-level ``model:``), or None: a preset's name as written, a path made
    absolute against the file's folder (a value with a path separator, ending in ``.json``, or naming a file or
    folder beside the tasks file)."""
    doc, p = _document(path)
    value = doc.get("model")
    if value is None:
        return None
    value = value.text if isinstance(value, _Written) else value
    if not isinstance(value, str) or not value.strip():
        raise TaskRecordError(f"{p}: 'model' is a preset name or a path, got {value!r}")
    value = value.strip()
    folder = p.resolve().parent
    local = Path(value).expanduser()
    local = local if local.is_absolute() else folder / local
    if "/" in value or os.sep in value or value.endswith(".json") or local.exists():
        return os.path.normpath(local)
    return value


def _document(path: str | Path) -> tuple[dict, Path]:
    """The tasks file's YAML document, checked at the top level (a ``tasks:`` mapping, an optional ``model:``), and
    its path."""
    from ..atomic import read_regular  # late: atomic loads tempfile, kept off pals-budget's start-up without a file

    p = Path(path).expanduser()
    if not p.exists() and not p.is_symlink():
        raise TaskRecordError(f"{p}: tasks file not found")
    data = read_regular(p, "tasks file", MAX_TASKS_FILE_BYTES, TaskRecordError)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TaskRecordError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:  # EACCES, EIO (/proc/self/mem), …
        raise TaskRecordError(f"{p}: cannot be read ({e.strerror or type(e).__name__})") from None
    doc = _yaml_load(text, p)
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), dict) or not doc["tasks"]:
        raise TaskRecordError(f"{p}: expected a top-level 'tasks:' mapping of task name → record")
    extra = sorted(set(doc) - set(TOP_LEVEL))
    if extra:
        raise TaskRecordError(
            f"{p}: unknown top-level key(s) {', '.join(map(repr, extra))} (only {' and '.join(map(repr, TOP_LEVEL))})"
        )
    return doc, p


def select(records: dict[str, TaskRecord], names: Sequence[str] | None) -> list[TaskRecord]:
    """The records named (in that order; None or empty = all of them); ``ValueError`` for a name not in the file."""
    if not names:
        return list(records.values())
    out = []
    for n in names:
        if n not in records:
            raise ValueError(f"task {n!r} is not in the tasks file ({', '.join(records)})")
        if records[n] in out:
            raise ValueError(f"task {n!r} is listed twice")
        out.append(records[n])
    return out
