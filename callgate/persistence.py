"""Where threads and full tool results live: a LangGraph checkpointer plus a LangGraph store.

``open_persistence(url)`` opens both on one database:

- ``None`` → ``$CALLGATE_DB`` → the SQLite file ``threads.sqlite`` in :func:`callgate_home`;
- a file path, ``sqlite:///path`` or ``:memory:`` → ``SqliteSaver`` + ``SqliteStore``;
- ``postgresql://…`` (or ``postgres://…``) → ``PostgresSaver`` + ``PostgresStore``.

Tables are created on open (``.setup()``), one process at a time (a lock file beside a
SQLite file, ``threads.sqlite.lock``; an advisory lock on PostgreSQL), so that processes
opening a new database at once do not run its migrations twice. ``open_async_persistence``
is the same for ``ainvoke``/``astream`` users (``AsyncSqliteSaver``/``AsyncPostgresSaver``
and their stores).
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from filelock import AsyncFileLock, FileLock
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from callgate.extras import MissingExtraError

__all__ = [
    "DB_ENV",
    "HOME_ENV",
    "Persistence",
    "PersistenceError",
    "callgate_home",
    "default_db_path",
    "open_async_persistence",
    "open_persistence",
    "resolve_url",
]

HOME_ENV = "CALLGATE_HOME"
DB_ENV = "CALLGATE_DB"
DB_FILE = "threads.sqlite"
_CONNECT_TIMEOUT_S = 10
_SETUP_LOCK_TIMEOUT_S = 60
_PG_SETUP_LOCK = int.from_bytes(b"callgate", "big") >> 1  # the advisory lock's key (a bigint)
# Polled, not waited for: a session waiting in pg_advisory_lock is an open transaction, which
# the store's CREATE INDEX CONCURRENTLY in the lock holder waits for (a deadlock).
_PG_TRY_LOCK = "SELECT pg_try_advisory_lock(%s)"
_PG_LOCK_POLL_S = 0.05
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_CONNINFO_KEYWORD = re.compile(r"(?:^|\s)(?:host|hostaddr|dbname|user|password|port)\s*=")

Backend = Literal["sqlite", "postgres"]


class PersistenceError(ValueError):
    """A database URL that cannot be used: unknown scheme, unreachable server, unwritable file."""


@dataclass(frozen=True)
class Persistence:
    """An open checkpointer and store on one database (valid inside the ``with`` block)."""

    checkpointer: BaseCheckpointSaver
    store: BaseStore
    backend: Backend
    url: str  # as opened, password removed


@dataclass(frozen=True)
class _Target:
    backend: Backend
    conn: str  # SQLite path or PostgreSQL conninfo
    shown: str  # for messages: no password


def callgate_home() -> Path:
    """callgate's data folder: ``$CALLGATE_HOME`` (``~`` expanded), else the user data dir."""
    configured = os.environ.get(HOME_ENV)
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_data_path

    return user_data_path("callgate", appauthor=False)


def default_db_path() -> Path:
    """The default SQLite file for threads and results."""
    return callgate_home() / DB_FILE


def resolve_url(url: str | None = None) -> str:
    """The database to open: ``url``, else ``$CALLGATE_DB``, else the default SQLite file."""
    return url or os.environ.get(DB_ENV) or str(default_db_path())


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username}:***@{host}" if parts.username else host
    return urlunsplit(parts._replace(netloc=netloc))


def _target(url: str | None) -> _Target:
    raw = resolve_url(url)
    if raw == ":memory:":
        return _Target("sqlite", raw, raw)
    scheme = urlsplit(raw).scheme.lower() if "://" in raw else ""
    if scheme in _POSTGRES_SCHEMES:
        return _postgres_target(raw)
    if scheme == "sqlite":
        # sqlite:///relative/or/absolute → the path after the third slash, as SQLAlchemy spells it
        path = raw.split("://", 1)[1]
        path = path[1:] if path.startswith("/") else path
        if not path:
            raise PersistenceError(f"no file in database URL {raw!r}; use sqlite:///path/to/file")
        return _sqlite_target(path)
    if scheme:
        raise PersistenceError(
            f"unsupported database URL scheme {scheme!r} in {_redact(raw)!r}; "
            "use a SQLite file path or postgresql://user@host:port/dbname")
    if _CONNINFO_KEYWORD.search(raw):
        # Not echoed: it may hold a password. As a path it became a SQLite file of that name.
        raise PersistenceError(
            "the database is a PostgreSQL keyword/value string (host=… dbname=…); give it as "
            "a URL: postgresql://user@host:port/dbname")
    return _sqlite_target(raw)


def _sqlite_target(path: str) -> _Target:
    file = Path(path).expanduser()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PersistenceError(f"cannot create {file.parent} for the SQLite database: "
                               f"{exc.strerror or exc}") from exc
    return _Target("sqlite", str(file), str(file))


def _postgres_target(url: str) -> _Target:
    try:
        # The savers too: psycopg alone let the open fail later, with ModuleNotFoundError.
        import langgraph.checkpoint.postgres  # noqa: F401
        import langgraph.store.postgres  # noqa: F401
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
    except ImportError as exc:
        raise MissingExtraError("a PostgreSQL database", "langgraph-checkpoint-postgres and "
                                "psycopg", "postgres") from exc
    try:
        params = conninfo_to_dict(url)
    except Exception as exc:  # psycopg.ProgrammingError: a malformed URL
        raise PersistenceError(f"malformed PostgreSQL URL {_redact(url)!r}: {exc}") from exc
    # A black-holed host would otherwise hang for the OS's TCP timeout.
    conn = url if "connect_timeout" in params else make_conninfo(
        url, connect_timeout=_CONNECT_TIMEOUT_S)
    return _Target("postgres", conn, _redact(url))


def _lock_wait(deadline: float) -> float:
    """Seconds to wait before asking for the PostgreSQL setup lock again; raises once the
    deadline has passed (a one-line error on open)."""
    if time.monotonic() > deadline:
        raise TimeoutError(f"another process has been making the tables for "
                           f"{_SETUP_LOCK_TIMEOUT_S} s")
    return _PG_LOCK_POLL_S


@contextmanager
def _setup_lock(target: _Target, saver: BaseCheckpointSaver) -> Iterator[None]:
    """Make the tables one process at a time. LangGraph's savers and stores read their
    migration version, then apply what is missing, outside a transaction: processes opening
    a new database at once (two `callgate ask` at first use) both added the SQLite store's
    ttl_minutes column, and one failed with "duplicate column name". SQLite: a lock file
    beside the database; PostgreSQL: a session advisory lock on the saver's connection."""
    if target.backend == "postgres":
        from psycopg.rows import tuple_row

        conn = saver.conn  # type: ignore[attr-defined]  # PostgresSaver's own, autocommit
        deadline = time.monotonic() + _SETUP_LOCK_TIMEOUT_S
        while not conn.cursor(row_factory=tuple_row).execute(
                _PG_TRY_LOCK, (_PG_SETUP_LOCK,)).fetchone()[0]:
            time.sleep(_lock_wait(deadline))
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SETUP_LOCK,))
    elif target.conn == ":memory:":
        yield
    else:
        with FileLock(f"{target.conn}.lock", timeout=_SETUP_LOCK_TIMEOUT_S):
            yield


@asynccontextmanager
async def _async_setup_lock(target: _Target, saver: BaseCheckpointSaver) -> AsyncIterator[None]:
    """:func:`_setup_lock` for async code: waits without blocking the event loop."""
    if target.backend == "postgres":
        from psycopg.rows import tuple_row

        conn = saver.conn  # type: ignore[attr-defined]  # AsyncPostgresSaver's own
        deadline = time.monotonic() + _SETUP_LOCK_TIMEOUT_S
        while not (await (await conn.cursor(row_factory=tuple_row).execute(
                _PG_TRY_LOCK, (_PG_SETUP_LOCK,))).fetchone())[0]:
            await asyncio.sleep(_lock_wait(deadline))
        try:
            yield
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SETUP_LOCK,))
    elif target.conn == ":memory:":
        yield
    else:
        async with AsyncFileLock(f"{target.conn}.lock", timeout=_SETUP_LOCK_TIMEOUT_S):
            yield


def _error(target: _Target, exc: BaseException) -> PersistenceError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    where = "PostgreSQL server" if target.backend == "postgres" else "SQLite database"
    return PersistenceError(f"cannot open the {where} at {target.shown}: {reason}")


def _open_errors(target: _Target) -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError)
    if target.backend != "postgres":  # importing psycopg would slow every SQLite start
        return errors
    import psycopg  # _postgres_target has checked that it is installed

    return (*errors, psycopg.Error)


@contextmanager
def open_persistence(url: str | None = None) -> Iterator[Persistence]:
    """Open the checkpointer and the store for ``url`` (see the module docstring); close on exit.

    Raises :class:`PersistenceError` (a ``ValueError``) with a one-line message when the URL's
    scheme is unknown or the database cannot be opened.
    """
    target = _target(url)
    with _opened(target) as persistence:
        yield persistence


@contextmanager
def _opened(target: _Target) -> Iterator[Persistence]:
    errors = _open_errors(target)
    # Only errors while opening are translated; errors from the caller's block pass through.
    opened = False
    try:
        if target.backend == "postgres":
            from langgraph.checkpoint.postgres import PostgresSaver as Saver
            from langgraph.store.postgres import PostgresStore as Store
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver as Saver  # type: ignore[assignment]
            from langgraph.store.sqlite import SqliteStore as Store  # type: ignore[assignment]
        with Saver.from_conn_string(target.conn) as saver, \
                Store.from_conn_string(target.conn) as store:
            with _setup_lock(target, saver):
                saver.setup()
                store.setup()
            opened = True
            yield Persistence(saver, store, target.backend, target.shown)
    except errors as exc:
        if opened:
            raise
        raise _error(target, exc) from exc


@asynccontextmanager
async def open_async_persistence(url: str | None = None) -> AsyncIterator[Persistence]:
    """The async twin of :func:`open_persistence` (for ``ainvoke``/``astream``)."""
    target = _target(url)
    errors = _open_errors(target)
    opened = False
    try:
        if target.backend == "postgres":
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver as Saver
            from langgraph.store.postgres.aio import AsyncPostgresStore as Store
        else:
            from langgraph.checkpoint.sqlite.aio import (  # type: ignore[assignment]
                AsyncSqliteSaver as Saver,
            )
            from langgraph.store.sqlite.aio import (  # type: ignore[assignment]
                AsyncSqliteStore as Store,
            )
        async with Saver.from_conn_string(target.conn) as saver, \
                Store.from_conn_string(target.conn) as store:
            async with _async_setup_lock(target, saver):
                await saver.setup()
                await store.setup()
            opened = True
            yield Persistence(saver, store, target.backend, target.shown)
    except errors as exc:
        if opened:
            raise
        raise _error(target, exc) from exc
