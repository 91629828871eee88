"""GLUE loading for the paper's eight tasks (Stickland & Murray 2019, Section 4).

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

Tokenisation goes through ``datasets`` (``Dataset.map``) and is cached on disk under
``<cache_dir>/<key>`` with key = sha256(tokenizer, max_len, file sha256), written atomically
(temp folder + ``os.replace``), so a second run reads the arrays back instead of re-tokenising.

Caps: ``max_train`` / ``max_eval`` keep a fixed random subset of that size (seed 0, independent of
the training seed: the same examples in every run), in file order. A random subset, not the first
rows, because the files are sorted (STS-B by genre, CoLA dev in-domain then out-of-domain).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from .encoded import Encoded
from .tasks import GLUE_TASKS, GlueTask, get_task

GLUE_DIR_ENV = "PALS_GLUE_DIR"
CACHE_DIR_ENV = "PALS_CACHE_DIR"
HUB_DATASET = "nyu-mll/glue"
CACHE_FORMAT = 1  # bump when the cached layout changes
SUBSET_SEED = 0


class GlueDataError(ValueError):
    """A GLUE file is missing or malformed; the message names the file (and line)."""


@dataclass
class RawSplit:
    """Text pairs and labels of one file, as read."""

    text_a: list[str]
    text_b: Optional[list[str]]
    labels: list[Any]
    dropped: int = 0  # truncated rows skipped (QQP)
    source: str = ""  # the file path, or "hub:nyu-mll/glue/<config>/<split>"
    fingerprint: str = ""  # sha256 of the file / the hub dataset fingerprint


@dataclass
class TaskData:
    """One task's tokenised splits. ``dev`` maps split suffix ("" or "m"/"mm") to data."""

    task: GlueTask
    train: Optional[Encoded]
    dev: dict[str, Encoded]
    dropped: dict[str, int] = field(default_factory=dict)  # file → rows dropped
    cached: dict[str, bool] = field(default_factory=dict)  # split → read from the tokenisation cache
    sources: dict[str, str] = field(default_factory=dict)  # split → file path or hub name


# ---------------------------------------------------------------------------------------- files

def resolve_glue_dir(glue_dir: Optional[str] = None) -> Optional[Path]:
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


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _label(task: GlueTask, value: str, path: Path, line: int) -> Any:
    if task.classes is None:
        try:
            score = float(value)
        except ValueError:
            raise GlueDataError(f"{path}:{line}: score {value!r} is not a number") from None
        if not np.isfinite(score):
            raise GlueDataError(f"{path}:{line}: score {value!r} is not finite")
        return score
    try:
        return task.classes.index(value.strip())
    except ValueError:
        raise GlueDataError(f"{path}:{line}: label {value!r} is not one of {', '.join(task.classes)}") from None


def read_tsv(task: GlueTask, path: "str | Path") -> RawSplit:
    """Read one official GLUE TSV file of ``task``. Malformed rows raise ``GlueDataError`` with
    ``file:line``; for QQP, rows with too few fields are dropped and counted in ``dropped``."""
    path = Path(path)
    a: list[str] = []
    b: Optional[list[str]] = [] if task.text_b is not None else None
    labels: list[Any] = []
    dropped = 0
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            if task.header:
                header = next(reader, None)
                if header is None:
                    raise GlueDataError(f"{path}: empty file (expected a header line)")
                header = [h.strip() for h in header]
                wanted = [c for c in (task.text_a, task.text_b, task.label) if c is not None]
                lacking = [c for c in wanted if c not in header]
                if lacking:
                    raise GlueDataError(f"{path}:1: header lacks column(s) {', '.join(map(repr, lacking))} "
                                        f"(has {', '.join(header)}) — is this the {task.folder} file?")
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
                    raise GlueDataError(f"{path}:{reader.line_num}: expected {width} tab-separated fields "
                                        f"for {task.folder}, found {len(row)}")
                labels.append(_label(task, row[il], path, reader.line_num))
                a.append(row[ia])
                if b is not None:
                    b.append(row[ib])
    except UnicodeDecodeError as e:
        raise GlueDataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except csv.Error as e:
        raise GlueDataError(f"{path}: {e}") from None
    if not labels:
        raise GlueDataError(f"{path}: no data rows")
    return RawSplit(a, b, labels, dropped, str(path), file_sha256(path))


def read_hub(task: GlueTask, split: str) -> RawSplit:
    """One split of ``nyu-mll/glue`` (needs network access or a filled ``datasets`` cache)."""
    import datasets

    try:
        ds = datasets.load_dataset(HUB_DATASET, task.hub_config, split=split)
    except Exception as e:  # offline, unreachable, not cached: one clear line instead of a network traceback
        raise GlueDataError(f"could not load {HUB_DATASET}/{task.hub_config} ({split}) from the hub: "
                            f"{type(e).__name__}: {e}") from None
    col_a, col_b = task.hub_columns
    labels = ds["label"]
    labels = [float(x) for x in labels] if task.regression else [int(x) for x in labels]
    return RawSplit(list(ds[col_a]), list(ds[col_b]) if col_b else None, labels, 0,
                    f"hub:{HUB_DATASET}/{task.hub_config}/{split}", ds._fingerprint)


# ---------------------------------------------------------------------------------- tokenising

def tokenizer_fingerprint(tokenizer) -> str:
    """A hash of everything that decides the token ids (vocabulary, normaliser, special tokens)."""
    h = hashlib.sha256(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        spec.pop("truncation", None)  # per-call settings the backend remembers from its last call
        spec.pop("padding", None)
        h.update(json.dumps(spec, sort_keys=True).encode())
    else:
        h.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    h.update(json.dumps(getattr(tokenizer, "init_kwargs", {}), sort_keys=True, default=str).encode())
    return h.hexdigest()


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE) / "pals_glue"


def _from_dataset(ds, regression: bool) -> Encoded:
    """Flat arrays out of a tokenised ``datasets.Dataset`` (arrow list columns)."""
    ids = ds.data.column("input_ids").combine_chunks()
    types = ds.data.column("token_type_ids").combine_chunks()
    labels = np.asarray(ds.data.column("label").to_numpy(), dtype=np.float32 if regression else np.int64)
    return Encoded(np.asarray(ids.values.to_numpy(), dtype=np.int32),
                   np.asarray(types.values.to_numpy(), dtype=np.int8),
                   np.asarray(ids.offsets.to_numpy(), dtype=np.int64), labels)


def encode(raw: RawSplit, tokenizer, max_len: int, *, regression: bool,
           cache_dir: Optional[Path] = None) -> tuple[Encoded, bool]:
    """Tokenise ``raw`` (pairs truncated longest-first to ``max_len`` tokens incl. [CLS]/[SEP]).
    Returns the arrays and whether they came from the cache."""
    import datasets

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = hashlib.sha256(json.dumps({
        "format": CACHE_FORMAT, "tokenizer": tokenizer_fingerprint(tokenizer), "max_len": max_len,
        "data": raw.fingerprint, "regression": regression,
    }, sort_keys=True).encode()).hexdigest()[:32]
    target = cache_dir / key
    if (target / "dataset_info.json").is_file():
        try:
            return _from_dataset(datasets.load_from_disk(str(target)), regression), True
        except Exception:  # a damaged cache entry is rebuilt
            shutil.rmtree(target, ignore_errors=True)
    columns = {"text_a": raw.text_a, "label": raw.labels}
    if raw.text_b is not None:
        columns["text_b"] = raw.text_b

    def tok(batch: dict) -> dict:
        out = tokenizer(batch["text_a"], batch.get("text_b"), truncation=True, max_length=max_len,
                        return_token_type_ids=True, return_attention_mask=False)
        return {"input_ids": out["input_ids"], "token_type_ids": out["token_type_ids"]}

    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        ds = datasets.Dataset.from_dict(columns)
        ds = ds.map(tok, batched=True, batch_size=2000, remove_columns=[c for c in columns if c != "label"],
                    load_from_cache_file=False, keep_in_memory=True)
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=cache_dir))
        try:
            ds.save_to_disk(str(tmp))
            (tmp / "source.json").write_text(json.dumps({"source": raw.source, "max_len": max_len}))
            try:
                os.replace(tmp, target)
            except OSError:  # another process filled it first
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        if was_enabled:
            datasets.enable_progress_bars()
    return _from_dataset(ds, regression), False


def subset(n: int, cap: Optional[int]) -> Optional[np.ndarray]:
    """Rows kept under a cap: a fixed random subset (seed 0) in file order; None = all."""
    if cap is None or cap >= n:
        return None
    if cap < 1:
        raise ValueError(f"example cap must be at least 1, got {cap}")
    return np.sort(np.random.default_rng(SUBSET_SEED).permutation(n)[:cap])


# ------------------------------------------------------------------------------------ loading

def hub_allowed() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("1", "true", "yes", "on")


def choose_source(glue_dir: Optional[str], source: str = "auto") -> tuple[str, Optional[Path]]:
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
    raise GlueDataError(f"no GLUE directory: give --glue-dir or set {GLUE_DIR_ENV}"
                        + (" (hub download is off: HF_HUB_OFFLINE is set)" if source == "auto" else ""))


def load_task(name: str, tokenizer, *, glue_dir: Optional[str] = None, source: str = "auto", max_len: int = 128,
              max_train: Optional[int] = None, max_eval: Optional[int] = None, train: bool = True,
              cache_dir: Optional[str] = None) -> TaskData:
    """Tokenised train (if ``train``) and dev splits of one task."""
    return load_tasks([name], tokenizer, glue_dir=glue_dir, source=source, max_len=max_len, max_train=max_train,
                      max_eval=max_eval, train=train, cache_dir=cache_dir)[get_task(name).name]


def load_tasks(names: Sequence[str], tokenizer, *, glue_dir: Optional[str] = None, source: str = "auto",
               max_len: int = 128, max_train: Optional[int] = None, max_eval: Optional[int] = None,
               train: bool = True, cache_dir: Optional[str] = None) -> dict[str, TaskData]:
    """Tokenised splits of several tasks. Every task's files are checked before any is read, and a
    ``GlueDataError`` names all tasks with missing files."""
    if not isinstance(max_len, int) or max_len < 8:
        raise ValueError(f"max_len must be an integer of at least 8, got {max_len!r}")
    tasks = [get_task(n) for n in names]
    kind, root = choose_source(glue_dir, source)
    if kind == "files":
        check_files(root, [t.name for t in tasks], train)
    cdir = Path(cache_dir) if cache_dir else None
    out: dict[str, TaskData] = {}
    for t in tasks:
        data = TaskData(t, None, {})
        splits: list[tuple[str, str, Optional[int]]] = []  # (key, file-or-hub-split, cap)
        if train:
            splits.append(("train", t.train_file if kind == "files" else "train", max_train))
        devs = t.dev_files if kind == "files" else t.hub_dev_splits
        splits += [(f"dev{('_' + s) if s else ''}", where, max_eval) for s, where in devs]
        for key, where, cap in splits:
            raw = read_tsv(t, root / t.folder / where) if kind == "files" else read_hub(t, where)
            if raw.dropped:
                data.dropped[raw.source] = raw.dropped
            enc, hit = encode(raw, tokenizer, max_len, regression=t.regression, cache_dir=cdir)
            rows = subset(len(enc), cap)
            if rows is not None:
                enc = enc.select(rows)
            data.cached[key] = hit
            data.sources[key] = raw.source
            if key == "train":
                data.train = enc
            else:
                data.dev[key[4:]] = enc
        out[t.name] = data
    return out


def load_tokenizer(path: str):
    """The tokenizer of a local HF model folder (never the network)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


__all__ = ["CACHE_DIR_ENV", "GLUE_DIR_ENV", "GLUE_TASKS", "GlueDataError", "RawSplit", "TaskData", "check_files",
           "choose_source", "encode", "load_task", "load_tasks", "load_tokenizer", "missing_files", "read_tsv",
           "resolve_glue_dir", "subset"]
