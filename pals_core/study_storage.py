"""Reading an Optuna study storage without changing it: the one check every reader uses (``pals-budget --storage``,
``pals-study list``, the score model's trials).

Opening a storage the usual way changes it: ``optuna.storages.get_storage`` creates a SQLite file for a mistyped path
and adds Optuna's tables to any database it is pointed at. A reader asks first: a SQLite file must be there
(``missing_sqlite_file``) and the database must already hold Optuna's tables (``has_optuna_tables``: an inspector,
nothing created); only then is ``RDBStorage`` opened, with ``skip_table_creation``. Loaded only where a storage is
read (optuna and SQLAlchemy are imported inside the functions).
"""

from __future__ import annotations

import os
from typing import Any


class NoStudyTables(ValueError):
    """The database is there but holds no Optuna tables (so no study); reading it created none."""


def sqlite_file(url: str) -> str | None:
    """The file of a ``sqlite:///FILE`` URL; None for another database, an in-memory one or a ``file:`` URI."""
    import sqlalchemy

    u = sqlalchemy.engine.make_url(url)
    if u.get_backend_name() != "sqlite":
        return None
    db = u.database
    return None if not db or db == ":memory:" or db.startswith("file:") else db


def missing_sqlite_file(url: str) -> str | None:
    """The path of a ``sqlite:///FILE`` URL's file when it is not there (connecting would create it); else None."""
    path = sqlite_file(url)
    return path if path is not None and not os.path.exists(path) else None


def has_optuna_tables(url: str, engine_kwargs: dict[str, Any] | None = None) -> bool:
    """Whether the database at ``url`` holds Optuna's tables (read-only: an inspector, nothing created)."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, **(engine_kwargs or {}))
    try:
        with engine.connect() as conn:
            inspector = sqlalchemy.inspect(conn)
            return inspector.has_table("studies") and inspector.has_table("version_info")
    finally:
        engine.dispose()


def open_read_only(url: str):
    """An ``RDBStorage`` on ``url`` that creates nothing: ``ValueError`` in one line for a SQLite file that is not
    there (none is created), a database without Optuna's tables (``NoStudyTables``; none is added), or one that
    cannot be opened."""
    import optuna

    said = "cannot read the study storage"
    try:
        missing = missing_sqlite_file(url)
        if missing is not None:
            raise ValueError(f"{said}: no SQLite file {missing!r} (nothing was created)")
        if not has_optuna_tables(url):
            raise NoStudyTables(f"{said}: {masked(url)} holds no studies (no Optuna tables; nothing was added)")
        return optuna.storages.RDBStorage(url, skip_table_creation=True)
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 — any driver's error is one line naming the storage
        raise ValueError(f"{said}: {' '.join(str(e).split())[:200]}") from None


def masked(url: str) -> str:
    """The URL with its password hidden, for messages (as given where it does not parse: it holds none then)."""
    import sqlalchemy

    try:
        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as given
        return url
