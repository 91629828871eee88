"""Study names are not paths: the folder a study's files go to, and the key that keeps its trial folders apart.

A study's name lives in its storage and may hold any characters (another tool may have created it). On disk it
becomes ``folder_name(name)``: the name itself when it is a plain file name (letters, digits, ``_ . -``, not
starting with a dot), else a slug of it plus 8 hex digits of its SHA-256 — never a path, never ``..``. A study
that pals-study creates also gets a random ``run key`` (a user attribute), and its trial folders go to
``OUT/<folder name>/<run key>/trial-NNNN``: a study of the same name re-created in another storage has another
key, so the old one's leftovers are never in its way. Studies created before the key existed keep
``OUT/<folder name>/trial-NNNN``.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets

from .errors import StudyError

RUN_KEY_ATTR = "pals_run_key"
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_KEY = re.compile(r"^[0-9a-f]{8}$")


def check_study_name(name: str | None) -> str:
    """A usable study name: not empty, not only spaces, no control characters, at most 200 characters."""
    if name is None or not name.strip():
        raise StudyError("the study name is empty: give --study-name NAME (or none, for the definition's name)")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise StudyError(f"study name {name!r} holds control characters")
    if len(name) > 200:
        raise StudyError(f"study name is {len(name)} characters long; at most 200")
    return name


def folder_name(name: str) -> str:
    """The study's folder name: ``name`` if it is a plain file name, else a slug of it and a hash."""
    if _PLAIN.match(name) and name not in (".", ".."):
        return name
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._-")[:60] or "study"
    return f"{slug}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}"


def new_run_key() -> str:
    return secrets.token_hex(4)


def trial_root(out: str, study_name: str, run_key: str | None) -> str:
    """Where a study's trial folders go: ``OUT/<folder name>[/<run key>]``, always under ``out`` (a run key that
    is not 8 hex digits — a storage edited by hand — is refused)."""
    root = os.path.join(os.path.abspath(out), folder_name(study_name))
    if run_key is None:
        return root
    if not isinstance(run_key, str) or not _KEY.match(run_key):
        raise StudyError(f"study {study_name!r} holds a malformed {RUN_KEY_ATTR} {run_key!r} (8 hex digits expected)")
    return os.path.join(root, run_key)


def report_folder(out: str, study_name: str) -> str:
    """The default report folder: ``OUT/<folder name>/report``."""
    return os.path.join(out, folder_name(study_name), "report")
