"""Atomic file writes (and strict JSON): the one writer and reader every part of the project uses (run files, task
weights, reports, the process records of ``pals_core.supervise``). A file is written under a temporary name in its
own folder, flushed to disk and moved into place with ``os.replace``, so a reader never sees half a file and a kill
never leaves one. Pure Python."""

from __future__ import annotations

import errno
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, Union

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


def dumps(obj: Any, indent: int | None = 2, default: Callable[[Any], Any] | None = None) -> str:
    """``obj`` as strict JSON — what every ``--json`` and every JSON file the project writes goes through: NaN and
    ±inf are null (``_clean``), and ``allow_nan=False`` refuses any that slipped past; ``default`` as ``json.dumps``
    takes it (for values that are not JSON types)."""
    return json.dumps(_clean(obj), indent=indent, allow_nan=False, default=default)


def atomic_write_json(path: PathLike, obj: Any) -> None:
    atomic_write_text(path, dumps(obj) + "\n")


MAX_JSON_BYTES = 16 << 20  # a config.json or a device profile is a few kB; 16 MiB is no longer one
MAX_RUN_JSON_BYTES = 256 << 20  # a run's own files (config, summary, checkpoint state): a summary of 10⁵ labels is MBs


def _kind(mode: int) -> str:
    import stat

    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _failure(path: PathLike, what: str, error: type) -> Callable[..., Exception]:
    def fail(detail: str, errno_: int = 0) -> Exception:  # OSError: strerror is the detail, filename the path
        if issubclass(error, OSError):
            return error(errno_, detail.removeprefix("is ").removeprefix("cannot be read: "), os.fspath(path))
        return error(f"{what} {path} {detail}")

    return fail


def open_regular(path: PathLike, what: str, limit: int, error: type = ValueError) -> BinaryIO:
    """The regular file at ``path`` opened for reading (binary): the one guarded open of every JSON and data file the
    project reads. Checked with ``os.stat`` before it is opened (a FIFO, a socket, a device or a directory is never
    opened, so never a hang; a file over ``limit`` bytes is refused unread), opened with ``O_NONBLOCK`` and checked
    again on the descriptor (a FIFO swapped in between cannot block either). ``error`` (a ``ValueError`` class, one
    line naming ``what`` and the path; or ``OSError``: its ``strerror`` says what is wrong, ``FileNotFoundError`` for a
    missing file) for anything else."""
    import stat

    fail = _failure(path, what, error)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if issubclass(error, OSError):
            raise
        raise error(f"{what} not found: {path}") from None
    except OSError as e:  # ELOOP (a symlink loop), EACCES, ENAMETOOLONG, …
        raise fail(f"cannot be read: {e.strerror}", e.errno) from None
    if not stat.S_ISREG(st.st_mode):
        raise fail(f"is {_kind(st.st_mode)}, not a regular file", errno.EINVAL)
    if st.st_size > limit:
        raise fail(f"is {st.st_size:,} bytes, over the {limit:,}-byte limit", errno.EFBIG)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:  # EACCES (mode 000), …
        raise fail(f"cannot be read: {e.strerror}", e.errno) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise fail(f"is {_kind(st.st_mode)}, not a regular file", errno.EINVAL)
    return os.fdopen(fd, "rb")


def read_regular(path: PathLike, what: str, limit: int, error: type = ValueError) -> bytes:
    """The bytes of the regular file at ``path`` (``open_regular``'s guards), read to at most ``limit`` bytes."""
    fail = _failure(path, what, error)
    with open_regular(path, what, limit, error) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:  # EIO, …
            raise fail(f"cannot be read: {e.strerror}", e.errno) from None
    if len(data) > limit:
        raise fail(f"grew over the {limit:,}-byte limit while read", errno.EFBIG)
    return data


def read_json(path: PathLike, *, or_none: bool = False, limit: int = MAX_RUN_JSON_BYTES) -> Any:
    """The JSON value in ``path``, read by ``read_regular`` (a FIFO is never opened, nothing over ``limit`` is read).

    ``or_none=False`` (a file this program needs: a checkpoint's state, a run's config): ``OSError`` (its
    ``strerror`` one line: not a regular file, over the limit, unreadable; ``FileNotFoundError`` when absent) /
    ``ValueError`` (not UTF-8, not JSON) / ``RecursionError``. ``or_none=True`` (a file another process writes, or
    a person may have edited: a run folder's launch.json, progress.json, exit.json, cancel.json): the JSON *object*
    in it, or None when it is absent, not a regular file, unreadable, half-written, nested too deeply, or not an
    object — absence is a state there, not an error, and nothing in such a file may break its reader."""
    if not or_none:
        return json.loads(read_regular(path, "file", limit, OSError).decode("utf-8"))
    try:
        data = json.loads(read_regular(path, "file", limit, OSError).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # ValueError: not JSON, not UTF-8; RecursionError: [[[[…
        return None
    return data if isinstance(data, dict) else None


def not_regular(path: PathLike) -> str | None:
    """What ``path`` is when it is there but is not a regular file (``"a FIFO (named pipe)"``, ``"a broken symbolic
    link"``, …); None for a regular file or nothing there."""
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(path) else None
    except OSError as e:  # ELOOP, EACCES on the folder, …
        return f"unreadable ({e.strerror})"
    return None if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)


def read_json_file(path: PathLike, what: str, limit: int = MAX_JSON_BYTES) -> Any:
    """A small JSON file someone gave (a model's config.json, a device profile), parsed; ``ValueError`` in one line
    naming ``what`` and the path for anything else: not there, a symlink loop, not a regular file (a directory, a
    FIFO — never opened, so never a hang), over ``limit`` bytes (never read into memory), not UTF-8, not JSON, or
    nested too deeply to parse (``read_regular``'s guards)."""
    data = read_regular(path, what, limit)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ValueError(f"{what} {path} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {path} is not valid JSON: {e}") from None
    except RecursionError:
        raise ValueError(f"{what} {path} is nested too deeply to be a {what}") from None
