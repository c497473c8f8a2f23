"""The one database interface: any supported SQLAlchemy URL, read-only by construction.

Queries run in query worker processes (db/pool.py, db/worker.py) on connections that can only
read (db/engines/): SQLite files open with `mode=ro`, `query_only` and an authorizer that
denies everything but reading; DuckDB files open `read_only` with external access off and a
memory limit; PostgreSQL runs each query as a server-side cursor (one SELECT, by
construction) in a READ ONLY transaction with `statement_timeout`, rolled back and reset
afterwards; MySQL and MariaDB run one statement the server prepares as a query, in a READ ONLY
transaction with the server's time limit, rolled back and reset afterwards; both refuse an
account that could write. Every query has a wall-clock timeout (the
engine's interrupt, then the worker is killed), a row cap, a result byte cap and a memory
bound (the worker's address space), so one runaway query cannot take the caller down.

Introspection (trusted SQL of groundsql's own) reads the catalog through SQLAlchemy in this
process; it never runs model-written SQL.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from groundsql.config import DatabaseConfig
from groundsql.db.engines import engine_for
from groundsql.db.introspect import Catalog, read_catalog
from groundsql.db.introspect import introspect as read_schema
from groundsql.deadline import bounded
from groundsql.errors import ConfigError, DatabaseError, QueryTimeoutError

if TYPE_CHECKING:
    from groundsql.schema.model import Schema

log = logging.getLogger("groundsql")

# SQLAlchemy backend name -> sqlglot dialect name.
_DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "duckdb": "duckdb", "mysql": "mysql", "mariadb": "mysql",
             "hive": "spark"}
# SQLAlchemy backend name -> the driver package groundsql installs for it, and its extra.
_DRIVERS = {"postgresql": ("psycopg", "postgres"), "mysql": ("pymysql", "mysql"), "mariadb": ("pymysql", "mysql"),
            "duckdb": ("duckdb", "duckdb"), "hive": ("pyhive", "spark")}


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool  # more rows existed than the row cap (or the byte cap) allowed
    elapsed_s: float


class Database:
    """A database behind a SQLAlchemy URL. Use `execute` for queries, `introspect` for schema."""

    def __init__(self, url: str, config: DatabaseConfig | None = None) -> None:
        self.config = config or DatabaseConfig()
        try:
            parsed = make_url(url)
        except ArgumentError as err:
            raise ConfigError(f"not a database URL: {url!r} (e.g. sqlite:///path/to/file.db)") from err
        if parsed.host and "@" in parsed.host:
            raise ConfigError("the database URL's user name or password holds a character that must be "
                              "percent-encoded: @ as %40 (and : as %3A, / as %2F, # as %23)")
        backend = parsed.get_backend_name()
        if backend not in _DIALECTS:
            supported = ", ".join(sorted(_DIALECTS))
            raise ConfigError(f"no read-only support for {backend!r} databases yet (supported: {supported})")
        if backend in _DRIVERS and importlib.util.find_spec(_DRIVERS[backend][0]) is None:
            driver, extra = _DRIVERS[backend]
            raise ConfigError(f"{backend} databases need the {driver} package: pip install 'groundsql[{extra}]'")
        self.url = parsed
        self.backend = backend
        self.dialect = _DIALECTS[backend]
        self._engine_kind = engine_for(backend)
        self._path = self._file_path() if backend in ("sqlite", "duckdb") else None
        self._sa_engine: Engine | None = None
        self._schema: Schema | None = None
        self._catalog: Catalog | None = None
        self._check_role()

    def check(self) -> None:
        """Make sure this is a database to ask, before anything is spent on it (a session does
        this when it opens, before any model is loaded): it opens, it has tables, and a SQLite
        file's pages are not damaged (PRAGMA quick_check, within a few seconds: a file too large
        to check in that time is left unchecked rather than made slow to open)."""
        if not self.catalog().tables:
            raise DatabaseError(f"{self._name()} has no tables: nothing to ask about")
        if self.backend != "sqlite":
            return
        try:
            verdict = self.execute("PRAGMA quick_check(1)", timeout_s=min(5.0, self.config.timeout_s)).rows
        except QueryTimeoutError:
            return
        if verdict and verdict[0][0] != "ok":
            found = "; ".join(line for line in str(verdict[0][0]).splitlines() if not line.startswith("***"))
            raise DatabaseError(f"{self._name()} is damaged ({found}); restore it from a copy")

    def _name(self) -> str:
        return str(self._path) if self._path is not None else repr(self)

    # -- execution -------------------------------------------------------------------------

    def execute(self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None) -> QueryResult:
        """Run one statement read-only in a query worker; at most `max_rows` rows come back."""
        from groundsql.db.pool import WorkerLost, pool_for

        timeout_s = bounded(timeout_s or self.config.timeout_s)  # the question's deadline too
        max_rows = max_rows or self.config.max_rows
        request = {
            "op": "run", "spec": self._spec(), "sql": sql, "timeout_s": timeout_s,
            "max_rows": max_rows, "max_bytes": self.config.max_result_bytes,
        }
        start = time.perf_counter()
        try:
            reply = pool_for(self.config.workers, self.config.memory_mb).run(request, timeout_s)
        except WorkerLost as err:
            if err.timed_out:
                raise QueryTimeoutError(f"query interrupted after {timeout_s:g} s") from None
            raise DatabaseError(str(err)) from None
        if not reply["ok"]:
            raise self._error(reply, timeout_s)
        return QueryResult(
            columns=tuple(reply["columns"]),
            rows=tuple(reply["rows"]),
            truncated=reply["truncated"],
            elapsed_s=time.perf_counter() - start,
        )

    def _error(self, reply: dict[str, Any], timeout_s: float) -> DatabaseError:
        kind, message = reply["kind"], reply["message"]
        if kind == "timeout":
            return QueryTimeoutError(f"query interrupted after {timeout_s:g} s")
        if kind == "memory":
            return DatabaseError(f"the query needs more memory than the {self.config.memory_mb} MB "
                                 f"allowed (database.memory_mb): {message}")
        if kind == "too_large":
            return DatabaseError(f"{message} (database.max_result_bytes)")
        if kind == "connect":
            return DatabaseError(f"could not open {self!r}: {message}")
        return DatabaseError(message)

    def _spec(self) -> dict[str, Any]:
        """What a worker needs to open this database, and the key its connection is kept by."""
        config = self.config
        if self._path is not None:
            spec: dict[str, Any] = {"backend": self.backend, "path": str(self._path),
                                    "memory_mb": config.memory_mb, "threads": config.threads}
            try:
                # A file replaced at the same path (a rebuilt database) is another database.
                stat = os.stat(self._path)
                spec["file"] = (stat.st_dev, stat.st_ino)
            except OSError as err:
                raise DatabaseError(f"cannot read {self._path}: {err.strerror}") from None
        elif self.backend == "postgresql":
            conninfo = self.url.set(drivername="postgresql").render_as_string(hide_password=False)
            spec = {"backend": self.backend, "conninfo": conninfo,
                    "work_mem_mb": config.work_mem_mb, "temp_file_limit_mb": config.temp_file_limit_mb}
        elif self.backend == "hive":
            spec = {"backend": self.backend, **self._spark_spec()}
        else:
            spec = {"backend": self.backend, **self._mysql_spec()}
        spec["key"] = hashlib.sha256(repr(sorted(spec.items())).encode()).hexdigest()
        return spec

    def _mysql_spec(self) -> dict[str, Any]:
        url = self.url
        if not url.database:
            raise ConfigError(f"name the database in the URL: {self.backend}://user@host/mydb")
        return {"host": url.host or "localhost", "port": url.port or 3306, "user": url.username or "",
                "password": url.password or "", "database": url.database, "unix_socket": url.query.get("unix_socket")}

    def _spark_spec(self) -> dict[str, Any]:
        url = self.url
        if not url.database:
            raise ConfigError("name the Spark database in the URL: hive://host:10000/mydb")
        return {"host": url.host or "localhost", "port": url.port or 10000, "user": url.username or "",
                "password": url.password or "", "database": url.database}

    def _file_path(self) -> Path:
        database = self.url.database
        if not database or database == ":memory:":
            raise ConfigError(f"give a {self.backend} file (e.g. {self.backend}:///path/to/file), not an in-memory database")
        path = Path(database).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"no {'SQLite' if self.backend == 'sqlite' else 'DuckDB'} database at {path}")
        if self.backend == "sqlite" and not _looks_like_sqlite(path):
            raise ConfigError(f"{path} is not a SQLite database (it does not begin with SQLite's header)")
        return path

    def _check_role(self) -> None:
        """Refuse a role (an account) that may write: read-only transactions do not bind
        everything it could do (a superuser's file functions, MySQL's SET GLOBAL)."""
        engine = self._engine_kind
        if engine.privilege_sql is None:
            return
        reasons = [row[0] for row in self.execute(engine.privilege_sql, max_rows=5).rows]
        if not reasons:
            return
        if "it is a superuser" in reasons:
            reasons = ["it is a superuser"]  # a superuser is also a member of every role
        what = f"the role {self.url.username or 'of this connection'} may write ({'; '.join(reasons)})"
        if self.config.allow_privileged_role:
            log.warning("%s; running anyway because database.allow_privileged_role is set", what)
            return
        where = self.url.render_as_string(hide_password=True)
        grants = engine.reader_grants.format(database=self.url.database or "mydb")
        raise ConfigError(
            f"groundsql will not run queries on {where}: {what}. Connect as a role that may only "
            f"read ({grants}), or, for a database you can afford to lose, "
            "set database.allow_privileged_role (--allow-privileged-role)"
        )

    def quote(self, identifier: str) -> str:
        return _sqlalchemy_dialect(self.backend).identifier_preparer.quote(identifier)

    # -- introspection ---------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        """A SQLAlchemy engine for introspection (SQLite and the database servers), on the same
        read-only terms as the workers' connections."""
        if self._sa_engine is None:
            self._sa_engine = self._make_sqlalchemy_engine()
        return self._sa_engine

    def _make_sqlalchemy_engine(self) -> Engine:
        if self.backend == "sqlite":
            from groundsql.db.engines.sqlite import connect_read_only

            path = self._path
            return sa.create_engine("sqlite://", creator=lambda: connect_read_only(path), poolclass=sa.NullPool)
        if self.backend in _DRIVERS and self.backend not in ("duckdb", "hive"):
            driver, extra = _DRIVERS[self.backend]
            url = self.url
            if url.drivername == self.backend:
                url = url.set(drivername=f"{self.backend}+{driver}")  # the driver groundsql installs
            try:
                return sa.create_engine(url, poolclass=sa.NullPool)
            except (NoSuchModuleError, ImportError) as err:
                raise ConfigError(f"the driver for {self.backend} is not installed: pip install 'groundsql[{extra}]'") from err
        raise ConfigError(f"{self.backend} is introspected through its own catalog, not SQLAlchemy")

    def introspect(self, *, refresh: bool = False) -> "Schema":
        """Tables, columns, keys, row counts and sample values (cached per instance)."""
        if self._schema is None or refresh:
            self._schema = read_schema(self)
        return self._schema

    def catalog(self) -> Catalog:
        """The names the validator checks queries against: tables and views with their
        columns, and the functions the database defines itself (cached per instance)."""
        if self._catalog is None:
            self._catalog = read_catalog(self, self._engine_kind.user_functions_sql)
        return self._catalog

    def close(self) -> None:
        from groundsql.db.pool import pool_for

        if self._path is None or self._path.exists():
            try:
                pool_for(self.config.workers, self.config.memory_mb).close_connections(self._spec()["key"])
            except DatabaseError:
                pass
        if self._sa_engine is not None:
            self._sa_engine.dispose()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self.url.render_as_string(hide_password=True)!r})"


@lru_cache(maxsize=None)
def _sqlalchemy_dialect(backend: str) -> sa.engine.Dialect:
    # Quoting rules only; DuckDB follows PostgreSQL's (as duckdb-engine does).
    if backend == "sqlite":
        from sqlalchemy.dialects import sqlite

        return sqlite.dialect()
    if backend in ("mysql", "mariadb", "hive"):  # Spark quotes with backticks, as MySQL does
        from sqlalchemy.dialects import mysql

        return mysql.dialect()
    from sqlalchemy.dialects import postgresql

    return postgresql.dialect()


def _looks_like_sqlite(path: Path) -> bool:
    """An empty file is an empty database to SQLite; anything else begins with its header."""
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {err.strerror}") from None
    return not head or head == b"SQLite format 3\x00"
