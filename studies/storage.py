"""Study storage: Optuna's own ``RDBStorage`` (SQLite, PostgreSQL, MySQL) with heartbeats — no coordinator of ours.

Several processes or machines run one study by pointing at the same storage URL. Each running trial records a
heartbeat every ``heartbeat`` seconds; a trial whose heartbeat is older than ``grace`` seconds (its worker was
killed) is marked FAIL by the next worker that asks for a trial, and ``RetryHeartbeatStaleTrialCallback`` queues a
copy of it (same parameters, same user attributes — its run directory) as WAITING, which that worker runs next.
SQLite serialises writers: connections wait up to ``SQLITE_TIMEOUT_S`` for the lock instead of failing.
"""

from __future__ import annotations

import os
import warnings

import optuna
import sqlalchemy
import sqlalchemy.exc
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages._rdb import models  # Optuna's own tables: no public reader of a heartbeat's time
from optuna.trial import FrozenTrial

from pals_core.study_storage import has_optuna_tables

from .errors import StudyError

DEFAULT_STORAGE = "sqlite:///pals_studies.db"
SQLITE_TIMEOUT_S = 60


def one_line(e: BaseException) -> str:
    """The first line of an exception's message (the driver's own message where SQLAlchemy wraps one)."""
    orig = getattr(e, "orig", None)
    text = str(orig if orig is not None else e).strip() or type(e).__name__
    return text.splitlines()[0].strip()


def masked(url: str) -> str:
    """The URL with its password hidden, for messages."""
    try:
        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as given (it holds no parsable password)
        return url


def _parse(url: str) -> sqlalchemy.engine.URL:
    if not isinstance(url, str) or not url.strip():
        raise StudyError("no storage URL given (e.g. sqlite:///pals_studies.db or postgresql://user@host/db)")
    try:
        return sqlalchemy.engine.make_url(url)
    except (sqlalchemy.exc.ArgumentError, ValueError):
        raise StudyError(
            f"storage URL {url!r} is not a database URL "
            "(e.g. sqlite:///pals_studies.db, postgresql://user:password@host/db, mysql+pymysql://…)"
        ) from None


def _sqlite_path(u: sqlalchemy.engine.URL) -> str | None:
    db = u.database
    if not db or db == ":memory:" or db.startswith("file:"):
        return None
    return db


def _with_installed_driver(u: sqlalchemy.engine.URL, url: str) -> str:
    """``postgresql://`` means psycopg 3 to SQLAlchemy 2.1; use psycopg2 when only that one is installed."""
    if u.drivername != "postgresql":
        return url
    import importlib.util

    if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2") is not None:
        return u.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)
    return url


class NoStudies(StudyError):
    """The database exists but holds no Optuna tables (so no study); reading it created none."""


def open_storage(
    url: str,
    *,
    heartbeat: int | None = None,
    grace: int | None = None,
    max_retry: int | None = None,
    create: bool = True,
) -> RDBStorage:
    """An ``RDBStorage`` on ``url``; with ``heartbeat`` set (a worker: the study's ``StudySettings.heartbeat``, ``grace``
    and ``max_retry``), its running trials send heartbeats and stale trials are failed and retried (up to
    ``max_retry``; None: without end). Without, it only reads and writes (``list``, ``report``, the page).

    ``create=False`` is reading: it creates neither a SQLite file nor a table (a database without Optuna's
    tables raises ``NoStudies``, and is left as it was). Raises ``StudyError`` with one line for an unusable URL,
    a missing driver or a refused connection."""
    u = _parse(url)
    url = _with_installed_driver(u, url)
    kwargs: dict = {}
    if u.get_backend_name() == "sqlite":
        path = _sqlite_path(u)
        if path is not None:
            if not create and not os.path.exists(path):
                raise StudyError(f"no SQLite study file {path!r} (storage {url})")
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                raise StudyError(f"folder {parent!r} of SQLite storage {url} does not exist")
        kwargs["connect_args"] = {"timeout": SQLITE_TIMEOUT_S}
    elif u.get_backend_name() in ("postgresql", "mysql", "mariadb"):
        kwargs["pool_pre_ping"] = True
    hb: dict = {}
    if heartbeat is not None:
        if heartbeat < 1:
            raise StudyError(f"heartbeat interval must be at least 1 second, got {heartbeat}")
        if grace is not None and grace <= heartbeat:
            raise StudyError(f"grace period ({grace} s) must exceed the heartbeat interval ({heartbeat} s)")
        hb = dict(heartbeat_interval=int(heartbeat), grace_period=int(grace) if grace else None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            if hb:
                hb["heartbeat_stale_trial_callback"] = RetryHeartbeatStaleTrialCallback(
                    max_retry=max_retry, inherit_intermediate_values=True
                )
            if not create and not has_optuna_tables(url, kwargs):
                raise NoStudies(f"storage {masked(url)} holds no studies (no Optuna tables); nothing was changed")
            return RDBStorage(url, engine_kwargs=kwargs, skip_table_creation=not create, **hb)
    except sqlalchemy.exc.NoSuchModuleError:
        raise StudyError(
            f"storage URL {masked(url)!r}: unknown database kind {u.drivername!r} (sqlite, postgresql, mysql)"
        ) from None
    except ImportError as e:
        raise StudyError(
            f"storage {masked(url)}: database driver missing ({one_line(e.__cause__ or e)}); "
            f"{DRIVER_HINTS.get(u.get_backend_name(), 'install the driver named in the URL')}"
        ) from None
    except (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError, ValueError, OSError) as e:
        raise StudyError(f"cannot open storage {masked(url)}: {one_line(e)}") from None


DRIVER_HINTS = {
    "postgresql": "for PostgreSQL install psycopg2-binary or psycopg",
    "mysql": "for MySQL install PyMySQL (mysql+pymysql://…) or mysqlclient (mysql+mysqldb://…)",
    "mariadb": "for MariaDB install PyMySQL (mariadb+pymysql://…) or mysqlclient",
}


def retry_of(trial: FrozenTrial) -> int | None:
    """The trial this one retries (its worker died or was stopped), per ``RetryHeartbeatStaleTrialCallback``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return RetryHeartbeatStaleTrialCallback.retried_trial_number(trial)


def heartbeat_ages(storage: RDBStorage, study: optuna.Study) -> dict[int, float]:
    """Trial number → seconds since the last heartbeat, for each RUNNING trial of ``study`` that has sent one: read
    as Optuna's own stale check reads it (``RDBStorage._get_stale_trial_ids``), the heartbeat rows against the
    database's clock, so the age is the one a worker judges. {} when the storage holds no heartbeat table."""
    session = storage.scoped_session()
    try:
        study_id = storage.get_study_id_from_name(study.study_name)
        now = session.execute(sqlalchemy.func.now()).scalar()
        rows = (
            session.query(models.TrialModel.number, models.TrialHeartbeatModel.heartbeat)
            .join(models.TrialHeartbeatModel, models.TrialHeartbeatModel.trial_id == models.TrialModel.trial_id)
            .filter(models.TrialModel.study_id == study_id)
            .filter(models.TrialModel.state == optuna.trial.TrialState.RUNNING)
            .all()
        )
    except (sqlalchemy.exc.SQLAlchemyError, KeyError) as e:
        raise StudyError(f"cannot read the trials' heartbeats: {one_line(e)}") from None
    finally:
        session.close()
    if now is None:
        return {}
    now = now.replace(tzinfo=None)  # as Optuna: PostgreSQL's now() is aware, the stored heartbeat naive
    return {int(n): max(0.0, (now - beat.replace(tzinfo=None)).total_seconds()) for n, beat in rows}


def study_names(storage: RDBStorage) -> list[str]:
    try:
        return sorted(optuna.study.get_all_study_names(storage))
    except (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError) as e:
        raise StudyError(f"cannot read studies: {one_line(e)}") from None


def load(storage: RDBStorage, name: str, **kwargs) -> optuna.Study:
    """An existing study; ``StudyError`` naming the studies there if ``name`` is not one of them."""
    names = study_names(storage)
    if name not in names:
        there = ", ".join(names) if names else "none"
        raise StudyError(f"no study named {name!r} in this storage (studies there: {there})")
    return optuna.load_study(study_name=name, storage=storage, **kwargs)
