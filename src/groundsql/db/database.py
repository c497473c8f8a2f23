"""The one database interface: any SQLAlchemy URL, read-only by construction.

Read-only is enforced by the connection itself, not only by the validator in front of it:
- SQLite files are opened with `mode=ro`, `PRAGMA query_only`, and an authorizer that denies
  every action but reading (so even ATTACH or a PRAGMA write fails inside SQLite);
- PostgreSQL runs every query in a `READ ONLY` transaction with `statement_timeout`, rolled back;
- DuckDB files are opened with `read_only=True`, external (file) access off, settings locked.
PostgreSQL's READ ONLY still lets a superuser read server files or run COPY TO PROGRAM, so
connect as a role that may only SELECT; groundsql warns when the role is a superuser.
Every query also has a wall-clock timeout (the driver's interrupt or cancel) and a row cap.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from groundsql.config import DatabaseConfig
from groundsql.errors import ConfigError, DatabaseError, QueryTimeoutError
from groundsql.schema.model import Schema

log = logging.getLogger("groundsql")

# SQLAlchemy backend name -> sqlglot dialect name.
_DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "duckdb": "duckdb"}


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool  # more rows existed than the row cap allowed
    elapsed_s: float


_SQLITE_READ_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),  # WITH RECURSIVE
}
# Pragmas that only describe the schema (their argument is a table or index name), which
# introspection needs, and settings SQLAlchemy reads (not writes) on connect.
_SQLITE_SCHEMA_PRAGMAS = {
    "table_info", "table_xinfo", "foreign_key_list", "index_list", "index_info", "index_xinfo",
}
_SQLITE_READABLE_SETTINGS = {"read_uncommitted"}


def _sqlite_authorizer(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    # Everything that could change a file, attach another one or alter a setting is denied
    # inside SQLite itself, whatever the validator in front of it let through.
    if action in _SQLITE_READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        pragma = (arg1 or "").lower()
        if pragma in _SQLITE_SCHEMA_PRAGMAS or (pragma in _SQLITE_READABLE_SETTINGS and arg2 is None):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


# A read-only DuckDB file can still read and write other files (COPY ... TO, read_csv, ATTACH,
# INSTALL): external access is switched off and the configuration locked against SET.
_DUCKDB_CONNECT_ARGS = {
    "read_only": True,
    "config": {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "lock_configuration": True,
    },
}


class Database:
    """A database behind a SQLAlchemy URL. Use `execute` for queries, `introspect` for schema."""

    def __init__(self, url: str, config: DatabaseConfig | None = None) -> None:
        self.config = config or DatabaseConfig()
        try:
            parsed = make_url(url)
        except ArgumentError as err:
            raise ConfigError(f"not a database URL: {url!r} (e.g. sqlite:///path/to/file.db)") from err
        backend = parsed.get_backend_name()
        if backend not in _DIALECTS:
            supported = ", ".join(sorted(_DIALECTS))
            raise ConfigError(f"no read-only support for {backend!r} databases yet (supported: {supported})")
        self.url = parsed
        self.backend = backend
        self.dialect = _DIALECTS[backend]
        self.engine = self._make_engine()
        self._schema: Schema | None = None

    # -- connections -----------------------------------------------------------------------

    def _make_engine(self) -> Engine:
        url = self.url
        try:
            if self.backend == "sqlite":
                return self._sqlite_engine()
            if self.backend == "postgresql" and url.drivername == "postgresql":
                url = url.set(drivername="postgresql+psycopg")  # the driver groundsql installs
            if self.backend == "duckdb":
                if not url.database or url.database == ":memory:":
                    raise ConfigError("DuckDB needs a database file to open read-only")
                if not Path(url.database).is_file():
                    raise ConfigError(f"no DuckDB database at {url.database}")
                return sa.create_engine(url, connect_args=_DUCKDB_CONNECT_ARGS, poolclass=sa.NullPool)
            return sa.create_engine(url, pool_pre_ping=True)
        except NoSuchModuleError as err:
            raise ConfigError(
                f"the driver for {self.backend} is not installed: pip install 'groundsql[{self.backend}]'"
            ) from err

    def _sqlite_engine(self) -> Engine:
        database = self.url.database
        if not database or database == ":memory:":
            raise ConfigError("give a SQLite file (sqlite:///path/to/file.sqlite), not an in-memory database")
        path = Path(database).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"no SQLite database at {path}")

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
            # Benchmark databases hold stray non-UTF-8 bytes; show them, don't fail the query.
            conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
            conn.execute("PRAGMA query_only = ON")
            conn.set_authorizer(_sqlite_authorizer)
            return conn

        return sa.create_engine("sqlite://", creator=connect, poolclass=sa.NullPool)

    def _interrupter(self, conn: Connection) -> Callable[[], None]:
        raw = conn.connection.dbapi_connection
        if self.backend == "postgresql":
            return lambda: raw.cancel()  # type: ignore[union-attr]
        inner = getattr(raw, "_ConnectionWrapper__c", raw)  # duckdb_engine wraps the connection
        return getattr(inner, "interrupt", lambda: None)

    # -- execution -------------------------------------------------------------------------

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> QueryResult:
        """Run one statement read-only; at most `max_rows` rows come back."""
        timeout_s = timeout_s or self.config.timeout_s
        max_rows = max_rows or self.config.max_rows
        start = time.perf_counter()
        timed_out = threading.Event()
        try:
            with self.engine.connect() as conn:
                if self.backend == "postgresql":
                    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                    conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout_s * 1000)}")
                interrupt = self._interrupter(conn)

                def on_timeout() -> None:
                    timed_out.set()
                    interrupt()

                timer = threading.Timer(timeout_s, on_timeout)
                timer.start()
                try:
                    result = conn.exec_driver_sql(sql)
                    columns = tuple(result.keys()) if result.returns_rows else ()
                    rows = result.fetchmany(max_rows + 1) if result.returns_rows else []
                finally:
                    timer.cancel()
                    conn.rollback()
        except SQLAlchemyError as err:
            if timed_out.is_set() or "statement timeout" in str(err):
                raise QueryTimeoutError(f"query interrupted after {timeout_s:g} s") from err
            raise DatabaseError(_driver_message(err)) from err
        except sqlite3.Error as err:  # raised by our own connect() hooks
            raise DatabaseError(str(err)) from err
        if timed_out.is_set():
            raise QueryTimeoutError(f"query interrupted after {timeout_s:g} s")
        return QueryResult(
            columns=columns,
            rows=tuple(tuple(row) for row in rows[:max_rows]),
            truncated=len(rows) > max_rows,
            elapsed_s=time.perf_counter() - start,
        )

    def quote(self, identifier: str) -> str:
        return self.engine.dialect.identifier_preparer.quote(identifier)

    # -- introspection ---------------------------------------------------------------------

    def introspect(self, *, refresh: bool = False) -> Schema:
        """Tables, columns, keys, row counts and sample values (cached per instance)."""
        if self._schema is None or refresh:
            from groundsql.db.introspect import introspect

            self._schema = introspect(self)
            if self.backend == "postgresql":
                self._warn_if_superuser()
        return self._schema

    def _warn_if_superuser(self) -> None:
        rows = self.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").rows
        if rows and rows[0][0]:
            log.warning(
                "connected to PostgreSQL as a superuser: READ ONLY transactions do not stop a "
                "superuser from reading server files; use a role that may only SELECT"
            )

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self.url.render_as_string(hide_password=True)!r})"


def _driver_message(err: SQLAlchemyError) -> str:
    """The driver's own sentence, without SQLAlchemy's statement echo and links."""
    original = getattr(err, "orig", None)
    text = str(original) if original is not None else str(err)
    return text.strip().splitlines()[0] if text.strip() else type(err).__name__
