"""The tasks file: YAML (a JSON file is valid YAML) with a top-level ``tasks:`` mapping, name → record:

    tasks:
      intent:
        train: data/intent_train.csv     # .csv .tsv .jsonl .parquet, or a save_to_disk folder
        dev: data/intent_dev.csv         # optional: else dev_fraction (default 0.1) of train, split by the seed
        text: message                    # one column, or [premise, hypothesis] for a pair
        label: intent
        kind: classification             # classification | regression | multilabel
        labels: [billing, refund, other] # optional: fixes the class order
        metric: macro_f1                 # optional main metric
      tags: {train: data/tickets.parquet, text: body, label: tags, kind: multilabel}
      rte: {glue: rte}                   # a built-in GLUE task (rows from --glue-dir)

Paths are relative to the file's folder. ``read_tasks_file`` returns the records, checked, in file order;
``TaskRecordError`` (a ``ValueError``) names the file, the task and the field of anything wrong.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Sequence

from .glue import glue_name, glue_record, get_task
from .record import TaskRecord, TaskRecordError

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
    "dev_fraction",
)


def _yaml_load(text: str, path: Path) -> Any:
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise TaskRecordError(
                    f"{path}, line {key_node.start_mark.line + 1}: {key!r} is given twice (two tasks of one name?)"
                )
            seen.add(key)
        return loader.construct_mapping(node, deep)

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f", line {mark.line + 1}" if mark is not None else ""
        raise TaskRecordError(f"{path}{at}: not YAML ({getattr(e, 'problem', None) or e})") from None
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
    for key in ("text", "labels", "metrics", "range"):
        if key in entry:
            items = _scalar_list(entry[key], name, key, path)
            if items is not None:
                d[key] = tuple(str(v) if key in ("text", "labels", "metrics") else v for v in items)
    for key in ("label", "kind", "metric", "positive", "label_sep"):
        if entry.get(key) is not None:
            if isinstance(entry[key], (dict, list)):
                raise TaskRecordError(f"{path}: task {name!r}: {key!r} is one value, got {entry[key]!r}")
            d[key] = str(entry[key])
    if "dev_fraction" in entry:
        d["dev_fraction"] = entry["dev_fraction"]
    try:
        return TaskRecord(**d).check()
    except TaskRecordError as e:
        raise TaskRecordError(f"{path}: {e}") from None


def read_tasks_file(path: "str | Path") -> dict[str, TaskRecord]:
    """The records of a tasks file, in file order (see the module's docstring)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise TaskRecordError(f"{p}: tasks file not found" if not p.exists() else f"{p}: not a file")
    if p.stat().st_size > MAX_TASKS_FILE_BYTES:
        raise TaskRecordError(f"{p}: over {MAX_TASKS_FILE_BYTES >> 20} MiB: not a tasks file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise TaskRecordError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:  # EACCES, EIO (/proc/self/mem), …
        raise TaskRecordError(f"{p}: cannot be read ({e.strerror or type(e).__name__})") from None
    doc = _yaml_load(text, p)
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), dict) or not doc["tasks"]:
        raise TaskRecordError(f"{p}: expected a top-level 'tasks:' mapping of task name → record")
    extra = sorted(set(doc) - {"tasks"})
    if extra:
        raise TaskRecordError(f"{p}: unknown top-level key(s) {', '.join(map(repr, extra))} (only 'tasks')")
    folder = p.resolve().parent
    return {str(name): _record(str(name), entry, folder, p) for name, entry in doc["tasks"].items()}


def select(records: dict[str, TaskRecord], names: Optional[Sequence[str]]) -> list[TaskRecord]:
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
