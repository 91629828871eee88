"""GLUE's rows for the built-in GLUE tasks (Stickland & Murray 2019, Section 4): the official files or the hub.

Two sources:

* the official TSV layout (``download_glue_data.py``): ``<glue_dir>/<Folder>/{train,dev}.tsv``,
  MNLI with ``dev_matched.tsv`` / ``dev_mismatched.tsv``. ``glue_dir`` comes from the argument or
  the environment variable ``PALS_GLUE_DIR``;
* the Hugging Face hub dataset ``nyu-mll/glue`` through ``datasets.load_dataset`` — only when asked
  (``source="hub"``), or when no GLUE directory is given and ``HF_HUB_OFFLINE`` is not set.

Reading the real files. Every file is read with ``csv.reader(delimiter="\\t", quoting=csv.QUOTE_NONE)``:
quote characters are text (QNLI/MNLI/QQP/MRPC sentences start with a stray ``"``), and no value is
ever turned into NaN — "NA" and "null" are sentences (what pandas' ``keep_default_na=False`` does).
The csv module is used rather than pandas so that a malformed row is reported with its file and
line number, and so that QQP's truncated rows can be dropped and counted. CoLA has no header; MRPC's
header starts with a UTF-8 BOM (files are opened as ``utf-8-sig``).

Tokenising, caching and the caps on examples are the loader's (``load.py``), the same for every source.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..kinds.errors import TaskDataError
from ..tasks.glue_tasks import GlueTask, get_task
from ..tasks.readers import read_hashed

GLUE_DIR_ENV = "PALS_GLUE_DIR"
HUB_DATASET = "nyu-mll/glue"


class GlueDataError(TaskDataError):
    """A GLUE file is missing or malformed; the message names the file (and line)."""


@dataclass
class RawSplit:
    """Text pairs and labels of one file, as read."""

    text_a: list[str]
    text_b: list[str] | None
    labels: list[Any]
    dropped: int = 0  # truncated rows skipped (QQP)
    source: str = ""  # the file path, or "hub:nyu-mll/glue/<config>/<split>"
    fingerprint: str = ""  # sha256 of the file / the hub dataset fingerprint
    where_word: Callable[[int, int], str] | None = None  # rows of words: "file, line N, column K" of row i's word j
    read_from: tuple[str, str] | None = None  # (path, sha256 of the bytes the rows were read from); None: the hub


# ---------------------------------------------------------------------------------------- files


def resolve_glue_dir(glue_dir: str | None = None) -> Path | None:
    """The GLUE folder: the argument, else ``$PALS_GLUE_DIR``, else None."""
    value = glue_dir if glue_dir else os.environ.get(GLUE_DIR_ENV) or None
    return Path(value).expanduser() if value else None


def missing_files(glue_dir: Path, tasks: Iterable[str], train: bool = True) -> dict[str, list[str]]:
    """task → relative paths of the files it needs that are not in ``glue_dir``."""
    out = {}
    for name in tasks:
        lacking = [rel for rel in get_task(name).files(train) if not (glue_dir / rel).is_file()]
        if lacking:
            out[get_task(name).name] = lacking
    return out


def check_files(glue_dir: Path, tasks: Iterable[str], train: bool = True) -> None:
    """Raise ``GlueDataError`` naming every task whose files are missing."""
    if not glue_dir.is_dir():
        raise GlueDataError(f"GLUE directory not found: {glue_dir}")
    missing = missing_files(glue_dir, tasks, train)
    if missing:
        parts = "; ".join(f"{t} ({', '.join(files)})" for t, files in missing.items())
        raise GlueDataError(f"GLUE files missing in {glue_dir}: {parts}")


def _label(task: GlueTask, value: str, path: Path, line: int) -> Any:
    if task.classes is None:
        try:
            score = float(value)
        except ValueError:
            raise GlueDataError(f"{path}:{line}: score {value!r} is not a number") from None
        if not math.isfinite(score):
            raise GlueDataError(f"{path}:{line}: score {value!r} is not finite")
        if task.range is not None and not task.range[0] <= score <= task.range[1]:
            raise GlueDataError(
                f"{path}:{line}: score {score:g} is outside {task.name}'s range [{task.range[0]:g}, {task.range[1]:g}]"
            )
        return score
    try:
        return task.classes.index(value.strip())
    except ValueError:
        raise GlueDataError(f"{path}:{line}: label {value!r} is not one of {', '.join(task.classes)}") from None


def read_tsv(task: GlueTask, path: str | Path) -> RawSplit:
    """Read one official GLUE TSV file of ``task``. Malformed rows raise ``GlueDataError`` with
    ``file:line``; for QQP, rows with too few fields are dropped and counted in ``dropped``."""
    path = Path(path)
    a: list[str] = []
    b: list[str] | None = [] if task.text_b is not None else None
    labels: list[Any] = []
    dropped = 0
    try:
        data, digest = read_hashed(path, "GLUE file", OSError)  # the guarded open: a FIFO is refused, never read
        with io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            if task.header:
                header = next(reader, None)
                if header is None:
                    raise GlueDataError(f"{path}: empty file (expected a header line)")
                header = [h.strip() for h in header]
                wanted = [c for c in (task.text_a, task.text_b, task.label) if c is not None]
                lacking = [c for c in wanted if c not in header]
                if lacking:
                    raise GlueDataError(
                        f"{path}:1: header lacks column(s) {', '.join(map(repr, lacking))} "
                        f"(has {', '.join(header)}) — is this the {task.folder} file?"
                    )
                width = len(header)
                ia, il = header.index(task.text_a), header.index(task.label)
                ib = header.index(task.text_b) if task.text_b is not None else None
            else:
                width = task.columns
                ia, ib, il = task.text_a, task.text_b, task.label
            for row in reader:
                if not row:
                    continue
                if len(row) != width:
                    if task.drop_short_rows and len(row) < width:
                        dropped += 1
                        continue
                    raise GlueDataError(
                        f"{path}:{reader.line_num}: expected {width} tab-separated fields "
                        f"for {task.folder}, found {len(row)}"
                    )
                labels.append(_label(task, row[il], path, reader.line_num))
                a.append(row[ia])
                if b is not None:
                    b.append(row[ib])
    except UnicodeDecodeError as e:
        raise GlueDataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except csv.Error as e:
        raise GlueDataError(f"{path}: {e}") from None
    except OSError as e:  # not a regular file (a FIFO is never opened), unreadable
        raise GlueDataError(f"{path}: {e.strerror or e}") from None
    if not labels:
        raise GlueDataError(f"{path}: no data rows")
    return RawSplit(a, b, labels, dropped, str(path), digest, read_from=(str(path), digest))


def read_hub(task: GlueTask, split: str) -> RawSplit:
    """One split of ``nyu-mll/glue`` (needs network access or a filled ``datasets`` cache)."""
    import datasets

    try:
        ds = datasets.load_dataset(HUB_DATASET, task.hub_config, split=split)
    except Exception as e:  # offline, unreachable, not cached: one clear line instead of a network traceback
        raise GlueDataError(
            f"could not load {HUB_DATASET}/{task.hub_config} ({split}) from the hub: {type(e).__name__}: {e}"
        ) from None
    col_a, col_b = task.hub_columns
    labels = ds["label"]
    labels = [float(x) for x in labels] if task.classes is None else [int(x) for x in labels]
    return RawSplit(
        list(ds[col_a]),
        list(ds[col_b]) if col_b else None,
        labels,
        0,
        f"hub:{HUB_DATASET}/{task.hub_config}/{split}",
        ds._fingerprint,
    )


def hub_allowed() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("1", "true", "yes", "on")


def choose_source(glue_dir: str | None, source: str = "auto") -> tuple[str, Path | None]:
    """("files", dir) or ("hub", None). ``auto``: the files if a dir is given (argument or
    ``$PALS_GLUE_DIR``), else the hub unless ``HF_HUB_OFFLINE`` is set."""
    if source not in ("auto", "files", "hub"):
        raise ValueError(f"unknown GLUE source {source!r} (auto, files or hub)")
    if source == "hub":
        return "hub", None
    path = resolve_glue_dir(glue_dir)
    if path is not None:
        return "files", path
    if source == "auto" and hub_allowed():
        return "hub", None
    raise GlueDataError(
        f"no GLUE directory: give --glue-dir or set {GLUE_DIR_ENV}"
        + (" (hub download is off: HF_HUB_OFFLINE is set)" if source == "auto" else "")
    )


__all__ = [
    "GLUE_DIR_ENV",
    "GlueDataError",
    "RawSplit",
    "check_files",
    "choose_source",
    "missing_files",
    "read_hub",
    "read_tsv",
    "resolve_glue_dir",
]
