"""Atomic file writes (and strict JSON): the one writer and reader every part of the project uses (run files, task
weights, reports, the process records of ``pals_core.supervise``). A file is written under a temporary name in its
own folder, flushed to disk and moved into place with ``os.replace``, so a reader never sees half a file and a kill
never leaves one. Pure Python."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp)`` to fill a temporary file beside ``path``, then move it into place (permissions as
    ``open()`` would give). The temporary file is removed if anything fails, a kill included."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 → what open() would have given
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: PathLike, text: str) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    atomic_write(path, write)


def _clean(value: Any) -> Any:
    """JSON-safe: NaN/inf → None (strict JSON), numpy scalars → Python."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps(obj: Any, indent: Optional[int] = 2) -> str:
    return json.dumps(_clean(obj), indent=indent, allow_nan=False)


def atomic_write_json(path: PathLike, obj: Any) -> None:
    atomic_write_text(path, dumps(obj) + "\n")


def read_json(path: PathLike, *, or_none: bool = False) -> Any:
    """The JSON value in ``path``.

    ``or_none=False`` (a file this program needs: a checkpoint's state, a run's config): ``OSError`` /
    ``ValueError`` as ``open``/``json`` raise them. ``or_none=True`` (a file another process writes, or a person
    may have edited: a run folder's launch.json, progress.json, exit.json, cancel.json): the JSON *object* in it,
    or None when it is absent, unreadable, half-written, nested too deeply, or not an object — absence is a state
    there, not an error, and nothing in such a file may break its reader."""
    if not or_none:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):  # ValueError: not JSON, not UTF-8; RecursionError: [[[[…
        return None
    return data if isinstance(data, dict) else None


MAX_JSON_BYTES = 16 << 20  # a config.json or a device profile is a few kB; 16 MiB is no longer one


def read_json_file(path: PathLike, what: str, limit: int = MAX_JSON_BYTES) -> Any:
    """A small JSON file someone gave (a model's config.json, a device profile), parsed; ``ValueError`` in one line
    naming ``what`` and the path for anything else: not there, a symlink loop, not a regular file (a directory, a
    FIFO — never opened, so never a hang), over ``limit`` bytes (never read into memory), not UTF-8, not JSON, or
    nested too deeply to parse."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"{what} not found: {path}") from None
    except OSError as e:  # ELOOP (a symlink loop), EACCES, ENAMETOOLONG, …
        raise ValueError(f"{what} {path} cannot be read: {e.strerror}") from None
    import stat

    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise ValueError(f"{what} {path} is {kind}")
    if st.st_size > limit:
        raise ValueError(f"{what} {path} is {st.st_size:,} bytes, over the {limit:,}-byte limit: not a {what}")
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
        return json.loads(data.decode("utf-8"))
    except OSError as e:
        raise ValueError(f"{what} {path} cannot be read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} {path} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {path} is not valid JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"{what} {path} is nested too deeply to be a {what}") from None
