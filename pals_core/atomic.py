"""Atomic file writes (and strict JSON): the one writer every part of the project uses (run files, task weights, reports, the
explorer's registry). A file is written under a temporary name in its own folder, flushed to disk and moved into
place with ``os.replace``, so a reader never sees half a file and a kill never leaves one. Pure Python."""
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


def read_json(path: PathLike) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
