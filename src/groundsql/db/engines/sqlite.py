"""SQLite: a file opened read-only, with an authorizer that allows nothing but reading."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from groundsql.db.engines.base import Limits, fetch_bounded

_READ_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    getattr(sqlite3, "SQLITE_RECURSIVE", 33),  # WITH RECURSIVE
}
# Pragmas that only describe the schema (their argument is a table or index name), which
# introspection needs, and settings SQLAlchemy reads (not writes) on connect.
_SCHEMA_PRAGMAS = {"table_info", "table_xinfo", "foreign_key_list", "index_list", "index_info", "index_xinfo"}
_READABLE_SETTINGS = {"read_uncommitted"}
# Reads every page to report damage (Database.check, before a session opens); it changes nothing.
_CHECK_PRAGMAS = {"quick_check"}


def _authorizer(action: int, arg1: str | None, arg2: str | None, *_: Any) -> int:
    # Everything that could change a file, attach another one or alter a setting is denied
    # inside SQLite itself, whatever the validator in front of it let through.
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        pragma = (arg1 or "").lower()
        if pragma in _SCHEMA_PRAGMAS or pragma in _CHECK_PRAGMAS or (pragma in _READABLE_SETTINGS and arg2 is None):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def connect_read_only(path: str | Path, heap_limit_bytes: int | None = None) -> sqlite3.Connection:
    """The one way groundsql opens a SQLite file: `mode=ro`, `query_only`, the authorizer.

    `heap_limit_bytes` sets SQLite's hard heap limit, which is per process: only a query
    worker, which owns its process, passes it.
    """
    conn = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True, check_same_thread=False)
    # Benchmark databases hold stray non-UTF-8 bytes; show them, don't fail the query.
    conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    conn.execute("PRAGMA query_only = ON")
    if heap_limit_bytes:
        conn.execute(f"PRAGMA hard_heap_limit = {int(heap_limit_bytes)}")
    conn.set_authorizer(_authorizer)
    return conn


class SQLiteEngine:
    dialect = "sqlite"
    user_functions_sql = None  # SQLite keeps no functions in the file
    privilege_sql = None  # opened read-only: no account to check
    reader_grants = ""

    def connect(self, spec: dict[str, Any]) -> sqlite3.Connection:
        return connect_read_only(spec["path"], heap_limit_bytes=spec["memory_mb"] * 2**20 // 2)

    def run(self, conn: sqlite3.Connection, sql: str, limits: Limits) -> tuple[tuple[str, ...], list[tuple[Any, ...]], bool]:
        # No string or blob may outgrow the result cap, so randomblob(1e9) or a runaway
        # group_concat fails at once instead of allocating in one step the timer cannot stop.
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.max_bytes)
        try:
            cursor = conn.execute(sql)  # sqlite3 refuses a second statement by itself
            columns = tuple(d[0] for d in cursor.description or ())
            rows, truncated = fetch_bounded(cursor.fetchmany, limits) if cursor.description else ([], False)
            return columns, rows, truncated
        finally:
            conn.rollback()

    def usable(self, conn: Any) -> bool:
        return True  # a file: nothing to lose between queries

    def interrupt(self, conn: sqlite3.Connection) -> None:
        conn.interrupt()

    def close(self, conn: sqlite3.Connection) -> None:
        conn.close()
