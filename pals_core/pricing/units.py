"""Parsing of human-written counts (``15M``, ``1.9M``, ``250k``, ``1.5e7``, ``15,000,000``) and sizes in bytes
(``24GB``, ``80GiB``, ``512MB``: ``parse_memory``)."""

from __future__ import annotations

import math
import re

_SUFFIX = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9}
GIGA = 1e9  # FLOPs are written in GFLOPs (the explorer's figures and tables)
# The patterns are compiled on first use (``re``'s own cache), not at import: ``pals-budget`` starts without parsing a
# count or a size unless one is given.
_PATTERN = r"^\s*([+-]?[0-9][0-9_,]*(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?|\.[0-9]+)\s*([kmbg]?)\s*$"


def parse_count(text: str | int | float, what: str = "count") -> float:
    """A non-negative finite number, with an optional k / M / B suffix. Raises ValueError naming ``what``."""
    if isinstance(text, bool):
        raise ValueError(f"{what} must be a number, got {text!r}")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        match = re.match(_PATTERN, str(text), re.IGNORECASE)
        if not match:
            raise ValueError(f"{what} {text!r} is not a number (examples: 15M, 1.9M, 250k, 1500000)")
        value = float(match.group(1).replace(",", "").replace("_", "")) * _SUFFIX[match.group(2).lower()]
        if value < 0:
            raise ValueError(f"{what} must not be negative, got {text!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite non-negative number, got {text!r}")
    return value


def parse_positive_float(text: str, what: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{what} {text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be a finite positive number, got {text!r}")
    return value


def parse_positive_int(text: str, what: str) -> int:
    try:
        value = int(str(text).strip())
    except (TypeError, ValueError):
        raise ValueError(f"{what} {text!r} is not an integer") from None
    if value < 1:
        raise ValueError(f"{what} must be a positive integer, got {text!r}")
    return value


def check_positive_int(name: str, value: object) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is already an int of at least 1 (a bool is not one): a typed
    setting (a ``TrainConfig`` field, a value read back from a run's config.json); ``parse_positive_int`` parses text."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def human(n: float) -> str:
    """1234567 → '1.23M'."""
    n = float(n)
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.0f}"


_MEMORY = r"^\s*([+-]?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]i?b?|b)?\s*$"  # compiled on first use, as _PATTERN
_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "m": 1e6,
    "mb": 1e6,
    "g": 1e9,
    "gb": 1e9,
    "t": 1e12,
    "tb": 1e12,
    "ki": 2**10,
    "kib": 2**10,
    "mi": 2**20,
    "mib": 2**20,
    "gi": 2**30,
    "gib": 2**30,
    "ti": 2**40,
    "tib": 2**40,
}
MIN_BARE_BYTES = 2**20  # a number without a unit is bytes only from 1 MiB: "--memory 8" is a unit forgotten


def parse_memory(text) -> float:
    """Bytes from '24GB' (10⁹), '24GiB' (2³⁰), '512MB', '1.5e10' (a bare number is bytes, and must be at least
    1 MiB: '8' is refused, never read as 8 bytes). ValueError when unreadable, zero or negative, or under one byte
    ('0.5B', '1e-12GB')."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = re.match(_MEMORY, str(text), re.IGNORECASE)
        if not match:
            raise ValueError(f"memory {text!r} is not a size (examples: 24GB, 80GiB, 512MB)")
        value = float(match.group(1)) * _BYTE_UNITS[(match.group(2) or "").lower()]
        if not match.group(2) and 0 < value < MIN_BARE_BYTES:
            raise ValueError(
                f"memory {str(text).strip()!r} has no unit: {str(text).strip()}GB (10⁹ bytes) or "
                f"{str(text).strip()}GiB (2³⁰ bytes)? (a bare number is bytes, at least {MIN_BARE_BYTES:,})"
            )
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"memory must be a positive size, got {str(text).strip()!r} (examples: 24GB, 80GiB, 512MB)")
    if value < 1:
        raise ValueError(f"memory {str(text).strip()!r} is under one byte ({value:g} B): a size is whole bytes or more")
    return value
