"""The one error type of ``studies``: bad input or an unusable storage, reported as one line (CLI exit 2)."""

from __future__ import annotations


class StudyError(Exception):
    """A problem the user can fix (bad option, unreachable storage, unknown study). One line, no traceback."""
