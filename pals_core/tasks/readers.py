"""Reading the columns of a task's file: CSV, TSV, JSON Lines, Parquet, or a folder written by ``datasets``'
``Dataset.save_to_disk``. Pure Python over pyarrow (no torch, no transformers, no ``datasets`` import): the
calculator reads a label column through here and stays instant.

Values come back as read — strings stay strings (no "NA" or "null" turned into a missing value, no number
parsing of text columns): every row is checked afterwards (``rows.py``) and a bad one is named by its file,
its row (the 1-based data row; the header is not a row) and its column.

* ``.csv``: a header line, RFC 4180 quoting (``"a, b"``; quotes doubled inside), newlines inside quotes.
* ``.tsv``: a header line, tab-separated, **no quoting** — a quote character is text, as in GLUE's files.
* ``.jsonl`` / ``.ndjson``: one JSON object per line (blank lines skipped); a list label stays a list.
* ``.parquet``; a ``save_to_disk`` folder (its Arrow files; a ``ClassLabel`` column gives its label names, and
  so does a list of ``ClassLabel``: ``datasets``' CoNLL-2003 layout).
* ``.conll`` (or any file read with ``fmt="conll"``): a CoNLL column file — one word per line, its columns separated
  by whitespace, a blank line between sentences, ``-DOCSTART-`` lines skipped. A row is a sentence; each column
  is a list (one value per word), named by its number from 0 (``"text"`` and ``"label"``, a record's defaults, name
  the first and the last column); ``Columns.word_lines`` keeps each word's file line.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import MAX_JSON_BYTES, open_regular, read_regular
from ..kinds.errors import TaskDataError

FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".conll": "conll",
}
CONLL_DEFAULTS = {"text": 0, "label": -1}  # a record's default column names, in a CoNLL file: the first, the last


def conll_index(name: str, width: int) -> int | None:
    """The column (from 0) a record's column ``name`` reads in a CoNLL file of ``width`` columns: a default name's
    (``CONLL_DEFAULTS``: the first, the last) or a number's; None for any other name or a number out of range."""
    k = CONLL_DEFAULTS.get(name, int(name) if name.isascii() and name.isdigit() else None)
    return None if k is None or not -width <= k < width else k % width


MAX_FILE_BYTES = 8 << 30  # a task file above 8 GiB is refused before it is read


@dataclass
class Columns:
    """Some columns of one file, as read: ``values[column][i]`` is data row i (0-based)."""

    path: str
    values: dict[str, list[Any]]
    label_names: dict[str, tuple[str, ...]]  # save_to_disk ClassLabel columns: index → name
    line_of: list[int] | None = None  # JSON Lines: the file line of each row
    word_lines: list[list[int]] | None = None  # CoNLL: the file line of each word of each row
    numbers: dict[str, int] | None = None  # CoNLL: each column's number (from 0)
    sha256: str | None = None  # of the bytes the rows were read from (None: a save_to_disk folder, ``sha256_of``)
    rows: list[int] | None = None  # some rows of the file (``subset``): the file's data row each is

    def __len__(self) -> int:
        return len(next(iter(self.values.values()))) if self.values else 0

    def subset(self, rows: Sequence[int]) -> Columns:
        """The data rows ``rows`` of these columns, each still named as the file numbers it (``where``)."""
        rows = list(rows)
        pick = lambda xs: None if xs is None else [xs[i] for i in rows]
        values = {c: [v[i] for i in rows] for c, v in self.values.items()}
        whole = [self.rows[i] for i in rows] if self.rows is not None else rows
        return Columns(
            self.path, values, self.label_names, pick(self.line_of), pick(self.word_lines), self.numbers, rows=whole
        )

    def where(self, i: int, column: str | None = None) -> str:
        """``file, row N, column 'c'`` for data row i (JSON Lines: ``file, line N``)."""
        row = self.rows[i] if self.rows is not None else i
        at = f"line {self.line_of[i]}" if self.line_of is not None else f"row {row + 1}"
        return f"{self.path}, {at}" + (f", {self.column(column)}" if column else "")

    def column(self, column: str) -> str:
        """``column 'c'`` (CoNLL: ``column N``, its number)."""
        return f"column {self.numbers[column]}" if self.numbers and column in self.numbers else f"column {column!r}"

    def where_word(self, i: int, j: int, column: str) -> str:
        """Word j (0-based) of data row i: ``file, line N, column K`` in a CoNLL file (the word's own line), else
        ``file, row N, column 'c', word j+1`` (JSON Lines: ``line N``)."""
        if self.word_lines is not None:
            return f"{self.path}, line {self.word_lines[i][j]}, {self.column(column)}"
        return f"{self.where(i, column)}, word {j + 1}"


def file_format(path: str | Path, fmt: str | None = None) -> str:
    """csv | tsv | jsonl | parquet | conll | arrow (a save_to_disk folder); ``TaskDataError`` for anything else.
    ``fmt`` ("conll"): the format of a file whatever its extension (a task record's ``format``)."""
    p = Path(path)
    if fmt is not None and not p.is_dir():
        if fmt not in _READERS:
            raise TaskDataError(f"{p}: unknown format {fmt!r} ({', '.join(sorted(set(FORMATS.values())))})")
        return fmt
    if p.is_dir():
        if os.path.lexists(p / "dataset_dict.json"):
            splits = _json(p / "dataset_dict.json").get("splits")
            if not isinstance(splits, list) or not splits or not all(isinstance(s, str) and s for s in splits):
                raise TaskDataError(
                    f"{p / 'dataset_dict.json'}: 'splits' is a list of split names, got {_short(splits)}"
                )
            raise TaskDataError(
                f"{p}: a DatasetDict folder; give one split's folder ({', '.join(f'{p}/{s}' for s in splits)})"
            )
        if os.path.lexists(p / "state.json"):
            return "arrow"
        raise TaskDataError(f"{p}: a folder that save_to_disk did not write (no state.json)")
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise TaskDataError(
            f"{p}: unknown format {p.suffix or '(no extension)'!r} "
            f"(.csv, .tsv, .jsonl, .parquet, .conll, or a save_to_disk folder)"
        )
    return fmt


def _json(path: Path) -> dict:
    """The JSON object in a ``datasets`` folder's own file (state.json, dataset_info.json, dataset_dict.json), read
    by the guarded reader (``atomic.read_regular``: a FIFO is named, never opened); ``TaskDataError`` naming it."""
    data = read_regular(path, "datasets file", MAX_JSON_BYTES, TaskDataError)
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise TaskDataError(f"{path}: not JSON ({getattr(e, 'msg', None) or type(e).__name__})") from None
    if not isinstance(value, dict):
        raise TaskDataError(f"{path}: a JSON object expected, got {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (list, dict, int, float, str, type(None))) else repr(value)
    return f"{type(value).__name__} {text[:60]}{'…' if len(text) > 60 else ''}"


def read_hashed(path: str | Path, what: str = "data file", error: type = TaskDataError) -> tuple[bytes, str]:
    """A data file's bytes, read once by the guarded open (``atomic.open_regular``), and the sha256 of those very
    bytes: the rows and the fingerprint of a file come from one read, so a file replaced between two opens cannot
    give rows of one content and a fingerprint of another. The digest is remembered for ``sha256_of`` under the
    size and modification time of the descriptor read (not of the path, which may have changed since)."""
    import hashlib

    with open_regular(path, what, MAX_FILE_BYTES, error) as f:
        st = os.fstat(f.fileno())
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise error(f"{path}: grew over the {MAX_FILE_BYTES >> 30} GiB limit while read")
    digest = hashlib.sha256(data).hexdigest()
    p = Path(path)
    _DIGESTS[(str(p.resolve()), (str(p), st.st_size, st.st_mtime_ns))] = digest
    return data, digest


def _bytes(path: Path) -> tuple[bytes, str]:
    """A data file's bytes and their sha256 (``read_hashed``)."""
    return read_hashed(path)


def check_file(path: str | Path) -> None:
    """``TaskDataError`` for a path that is not a readable data file or folder."""
    p = Path(path)
    if not p.exists():
        raise TaskDataError(f"{p}: file not found")
    if p.is_dir():
        return
    if not p.is_file():
        raise TaskDataError(f"{p}: not a regular file")
    if p.stat().st_size > MAX_FILE_BYTES:
        raise TaskDataError(f"{p}: {p.stat().st_size / 2**30:.1f} GiB, over the {MAX_FILE_BYTES >> 30} GiB limit")


def read_columns(path: str | Path, columns: Sequence[str] | None, fmt: str | None = None) -> Columns:
    """The named ``columns`` (None: every column, in the file's order) of the file at ``path`` (every row);
    ``TaskDataError`` names a missing file or column (with the columns the file has), text that is not UTF-8
    (with its row), or a malformed row. ``fmt``: the file's format whatever its extension ("conll")."""
    check_file(path)
    reader: Callable[[Path, Sequence[str] | None], Columns] = _READERS[file_format(path, fmt)]
    try:
        return reader(Path(path), None if columns is None else list(dict.fromkeys(columns)))
    except TaskDataError:
        raise
    except OSError as e:
        raise TaskDataError(f"{path}: {e.strerror or e}") from None
    except Exception as e:  # a malformed file: pyarrow's message, on one line, with the file
        raise TaskDataError(f"{path}: cannot be read ({type(e).__name__}: {' '.join(str(e).split())[:300]})") from None


def column_names(path: str | Path, fmt: str | None = None) -> list[str]:
    """Every column of the file at ``path``, in its order, read as cheaply as its format allows (a CSV / TSV header
    line, a Parquet schema; a JSON Lines file's keys in order of first appearance, a CoNLL file's numbers):
    what a kind that finds its columns by their names looks among (``Kind.columns``)."""
    check_file(path)
    p = Path(path)
    kind = file_format(p, fmt)
    if kind in ("csv", "tsv"):
        with open_regular(p, "data file", MAX_FILE_BYTES, TaskDataError) as f:
            line = f.readline().decode("utf-8-sig", errors="replace").rstrip("\r\n")
        quoting = csv.QUOTE_MINIMAL if kind == "csv" else csv.QUOTE_NONE
        first = next(csv.reader([line], delimiter="," if kind == "csv" else "\t", quoting=quoting), [])
        return [h.strip() for h in first]
    if kind == "parquet":
        import pyarrow.parquet as pq

        with open_regular(p, "data file", MAX_FILE_BYTES, TaskDataError) as f:
            return list(pq.ParquetFile(f).schema_arrow.names)
    return list(read_columns(p, None, fmt).values)


def _missing(path: Path, wanted: Sequence[str], have: Sequence[str]) -> None:
    lacking = [c for c in wanted if c not in have]
    if lacking:
        raise TaskDataError(f"{path}: no column {', '.join(map(repr, lacking))} (it has {', '.join(map(repr, have))})")


def _unique(path: Path, wanted: Sequence[str], have: Sequence[str]) -> None:
    """Two columns of one name: which one a task means cannot be told."""
    twice = [c for c in dict.fromkeys(wanted) if have.count(c) > 1]
    if twice:
        raise TaskDataError(
            f"{path}: column {twice[0]!r} appears {have.count(twice[0])} times (give each a name of its own)"
        )


class _TwiceError(ValueError):
    pass


def _pairs(pairs: list) -> dict:
    """A JSON object, refusing a key given twice (``json`` keeps the last one silently)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise _TwiceError(k)
        out[k] = v
    return out


def _utf8(path: Path, data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TaskDataError(f"{path}, line {line}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def _read_delimited(path: Path, columns: Sequence[str], delimiter: str) -> Columns:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    data, digest = _bytes(path)
    _utf8(path, data)
    text = data.decode("utf-8-sig")
    first = next(
        csv.reader(
            [text.split("\n", 1)[0].rstrip("\r")],
            delimiter=delimiter,
            quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE,
        ),
        None,
    )
    if not first:
        raise TaskDataError(f"{path}: empty file (expected a header line)")
    header = [h.strip() for h in first]
    columns = header if columns is None else columns
    _missing(path, columns, header)
    _unique(path, columns, header)
    bad: list[Any] = []

    def invalid(row) -> str:
        bad.append(row)
        return "skip"

    quoted = delimiter == ","
    table = pacsv.read_csv(
        pa.BufferReader(text.encode("utf-8")),
        # one thread: pyarrow's CSV thread pool in a process that has imported torch aborts the interpreter at exit
        # now and then ("terminate called without an active exception", 12 of 30 runs); the label column of
        # 100,000 rows still reads in well under 0.3 s
        read_options=pacsv.ReadOptions(column_names=header, skip_rows=1, use_threads=False),
        parse_options=pacsv.ParseOptions(
            delimiter=delimiter,
            quote_char='"' if quoted else False,
            newlines_in_values=quoted,
            invalid_row_handler=invalid,
        ),
        convert_options=pacsv.ConvertOptions(
            include_columns=list(columns),
            column_types={c: pa.string() for c in columns},
            strings_can_be_null=False,
            null_values=[],
        ),
    )
    if bad:  # pyarrow does not count rows when values may hold newlines: find the row with the csv module
        row = bad[0]
        reader = csv.reader(
            text.splitlines(keepends=True)[1:] if not quoted else io.StringIO(text.split("\n", 1)[1]),
            delimiter=delimiter,
            quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
        )
        number = next((i for i, fields in enumerate(reader, start=1) if fields and len(fields) != len(header)), None)
        at = f"row {number}" if number is not None else "a row"
        raise TaskDataError(f"{path}, {at}: expected {row.expected_columns} fields, found {row.actual_columns}")
    return Columns(str(path), {c: table.column(c).to_pylist() for c in columns}, {}, sha256=digest)


def _read_csv(path: Path, columns: Sequence[str]) -> Columns:
    return _read_delimited(path, columns, ",")


def _read_tsv(path: Path, columns: Sequence[str]) -> Columns:
    return _read_delimited(path, columns, "\t")


def _read_jsonl(path: Path, columns: Sequence[str]) -> Columns:
    data, digest = _bytes(path)
    _utf8(path, data)
    lines: list[int] = []
    seen: set[str] = set()
    objects = []
    for n, line in enumerate(data.decode("utf-8-sig").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, object_pairs_hook=_pairs)
        except _TwiceError as e:
            raise TaskDataError(f"{path}, line {n}: key {e.args[0]!r} is given twice in one object") from None
        except (json.JSONDecodeError, RecursionError) as e:
            raise TaskDataError(f"{path}, line {n}: not JSON ({getattr(e, 'msg', 'nested too deeply')})") from None
        if not isinstance(obj, dict):
            raise TaskDataError(f"{path}, line {n}: a JSON object per line, got {type(obj).__name__}")
        seen.update(obj)
        objects.append(obj)
        lines.append(n)
    if not lines:
        raise TaskDataError(f"{path}: no rows")
    if columns is None:  # every key, in the order of first appearance
        columns = list(dict.fromkeys(k for obj in objects for k in obj))
    values = {c: [obj.get(c) for obj in objects] for c in columns}
    _missing(path, [c for c in columns if all(v is None for v in values[c])], sorted(seen))
    return Columns(str(path), values, {}, lines, sha256=digest)


def _read_parquet(path: Path, columns: Sequence[str]) -> Columns:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data, digest = _bytes(path)
    parquet = pq.ParquetFile(pa.BufferReader(data))
    names = parquet.schema_arrow.names
    columns = names if columns is None else columns
    _missing(path, columns, names)
    _unique(path, columns, names)
    table = parquet.read(columns=list(columns))
    return Columns(str(path), {c: table.column(c).to_pylist() for c in columns}, {}, sha256=digest)


def _read_arrow(path: Path, columns: Sequence[str]) -> Columns:
    import pyarrow as pa

    state = _json(path / "state.json")
    info_file = path / "dataset_info.json"
    features = _json(info_file).get("features", {}) if os.path.lexists(info_file) else {}
    entries = state.get("_data_files")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("filename"), str) and e["filename"] for e in entries
    ):
        raise TaskDataError(f"{path / 'state.json'}: '_data_files' is a list of {{filename: …}}, got {_short(entries)}")
    tables = []
    folder = path.resolve()
    for entry in entries:
        file = path / entry["filename"]
        if not file.resolve().is_relative_to(folder):
            raise TaskDataError(f"{path / 'state.json'}: data file {entry['filename']!r} lies outside {path}")
        with open_regular(file, "data file", MAX_FILE_BYTES, TaskDataError) as source:
            tables.append(pa.ipc.open_stream(source).read_all())
    if not tables:
        raise TaskDataError(f"{path}: state.json lists no data files")
    table = pa.concat_tables(tables)
    columns = table.column_names if columns is None else columns
    _missing(path, columns, table.column_names)
    _unique(path, columns, table.column_names)
    names = {}
    for c in columns:
        feature = features.get(c) if isinstance(features, dict) else None
        if isinstance(feature, list) and len(feature) == 1:  # datasets' older spelling of a list feature: [inner]
            feature = feature[0]
        elif isinstance(feature, dict) and feature.get("_type") in ("List", "Sequence", "LargeList"):
            feature = feature.get("feature")  # a list of ClassLabel (multilabel): its items are class indices
        if isinstance(feature, dict) and feature.get("_type") == "ClassLabel":
            label_names = feature.get("names")
            if not isinstance(label_names, list) or not all(isinstance(n, str) for n in label_names):
                raise TaskDataError(f"{info_file}: column {c!r}: ClassLabel 'names' is a list of strings")
            names[c] = tuple(label_names)
    return Columns(str(path), {c: table.column(c).to_pylist() for c in columns}, names)


def _read_conll(path: Path, columns: Sequence[str] | None) -> Columns:
    """A CoNLL column file (the module's docstring): each requested column as one list a sentence. Every word line
    has as many columns as the first (``TaskDataError`` naming the line otherwise)."""
    data, digest = _bytes(path)
    _utf8(path, data)
    sentences: list[list[list[str]]] = []
    lines: list[list[int]] = []
    width: tuple[int, int] | None = None  # (columns of the first word line, its line number)
    words: list[list[str]] = []
    at: list[int] = []
    for n, line in enumerate(data.decode("utf-8-sig").split("\n"), start=1):
        fields = line.split()
        if fields and fields[0] == "-DOCSTART-":
            fields = []
        if not fields:
            if words:
                sentences.append(words)
                lines.append(at)
                words, at = [], []
            continue
        if width is None:
            width = (len(fields), n)
        elif len(fields) != width[0]:
            raise TaskDataError(
                f"{path}, line {n}: {len(fields)} column{'s' * (len(fields) != 1)}, expected {width[0]} "
                f"(as line {width[1]}: one word per line, its columns separated by whitespace)"
            )
        words.append(fields)
        at.append(n)
    if words:
        sentences.append(words)
        lines.append(at)
    if width is None:
        raise TaskDataError(f"{path}: no rows (a CoNLL file: one word per line, a blank line between sentences)")
    names = [str(k) for k in range(width[0])]
    columns = names if columns is None else columns
    index = {}
    for c in columns:
        k = conll_index(c, width[0])
        if k is None:
            raise TaskDataError(
                f"{path}: no column {c!r} (a CoNLL file's columns are numbered from 0; line {width[1]} has "
                f"{width[0]}: {', '.join(names)})"
            )
        index[c] = k
    same = [c for c in index if list(index.values()).count(index[c]) > 1]
    if same:
        raise TaskDataError(f"{path}: {' and '.join(map(repr, same))} are both column {index[same[0]]}")
    values = {c: [[w[k] for w in s] for s in sentences] for c, k in index.items()}
    return Columns(str(path), values, {}, [a[0] for a in lines], lines, index, digest)


_READERS = {
    "csv": _read_csv,
    "tsv": _read_tsv,
    "jsonl": _read_jsonl,
    "parquet": _read_parquet,
    "arrow": _read_arrow,
    "conll": _read_conll,
}


_DIGESTS: dict[tuple, str] = {}  # (path, each file's name, size and mtime) → sha256: a file is read once per change


def sha256_of(path: str | Path) -> str:
    """sha256 of a file, or of a save_to_disk folder's files (names and contents, in name order).

    Remembered per process by each file's size and modification time (nanoseconds), so the explorer's redraws and a
    run's start do not read a large task file again unless it changed."""
    import hashlib

    p = Path(path)
    files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
    key = (str(p.resolve()), *((str(q), (st := q.stat()).st_size, st.st_mtime_ns) for q in files))
    if key in _DIGESTS:
        return _DIGESTS[key]
    h = hashlib.sha256()
    for q in files:
        if p.is_dir():
            h.update(str(q.relative_to(p)).encode() + b"\0")
        with open_regular(q, "data file", 1 << 62, TaskDataError) as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]
