"""Copies of a Spider SQLite database in DuckDB, PostgreSQL and MySQL/MariaDB (Spark's are made
by `groundsql spark load`), and raw driver access to each.

Tests that run the same queries on every engine groundsql supports read the shared SQLite file
where it lies and build the other engines' copies in temporary places (a DuckDB file under the
test's temp dir, a uuid-named PostgreSQL or MariaDB database dropped afterwards): nothing is
written into the checkout.

Column types come from the values, not the declarations. SQLite stores each value with its own
storage class whatever the column says (Spider has a `bool` column holding 'T'/'F', text
columns holding digits, DECIMAL columns mixing integers and reals), so a column is numeric on
the copies exactly when every value SQLite holds in it is a number. Where a column is text
there, comparing it with a number fails on the stricter engines, as a query written against
SQLite's loose typing would on a real PostgreSQL database.
"""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

from tests.conftest import PG_ADMIN_URL, mysql_connect, mysql_grant_reader, mysql_revoke_reader


# The copies' type for each kind of column, per engine. SQLite integers are 64-bit.
_TYPES = {
    "postgres": {"integer": "BIGINT", "real": "DOUBLE PRECISION", "text": "TEXT"},
    "duckdb": {"integer": "BIGINT", "real": "DOUBLE", "text": "VARCHAR"},
    "mysql": {"integer": "BIGINT", "real": "DOUBLE", "text": "LONGTEXT"},
}

RawRunner = Callable[[str], list[tuple[Any, ...]]]


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # integer, real or text


@dataclass(frozen=True)
class ForeignKey:
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]  # empty: the referenced table's primary key


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    foreign_keys: tuple[ForeignKey, ...] = ()


# -- reading the SQLite original ------------------------------------------------------------


def read_sqlite(path: Path) -> list[Table]:
    """Every table of a SQLite file with its columns, primary key and rows."""
    with sqlite_read_only(path) as conn:
        names = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall()
        return [_read_table(conn, name) for (name,) in names]


@contextmanager
def sqlite_read_only(path: Path) -> Iterator[sqlite3.Connection]:
    # Read-only: the shared benchmark file must come out of every test as it went in.
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        yield conn
    finally:
        conn.close()


def _read_table(conn: sqlite3.Connection, name: str) -> Table:
    info = conn.execute(f"PRAGMA table_info({_quote(name)})").fetchall()
    columns = tuple(Column(col[1], _column_kind(conn, name, col[1], col[2])) for col in info)
    primary_key = tuple(col[1] for col in sorted(info, key=lambda c: c[5]) if col[5])
    # Text columns are read through SQLite's own CAST, so a number stored in one becomes the
    # text SQLite would compare it as, not Python's rendering of it.
    select = ", ".join(
        f"CAST({_quote(c.name)} AS TEXT)" if c.kind == "text" else _quote(c.name) for c in columns
    )
    rows = conn.execute(f"SELECT {select} FROM {_quote(name)}").fetchall()
    return Table(name, columns, primary_key, rows, _foreign_keys(conn, name))


def _foreign_keys(conn: sqlite3.Connection, table: str) -> tuple[ForeignKey, ...]:
    # PRAGMA foreign_key_list: one row per column (id, seq, table, from, to, ...).
    keys: dict[int, list[tuple[Any, ...]]] = {}
    for row in conn.execute(f"PRAGMA foreign_key_list({_quote(table)})"):
        keys.setdefault(row[0], []).append(row)
    return tuple(
        ForeignKey(tuple(r[3] for r in rows), rows[0][2], tuple(r[4] for r in rows) if all(r[4] for r in rows) else ())
        for rows in (sorted(group, key=lambda r: r[1]) for group in keys.values())
    )


def _column_kind(conn: sqlite3.Connection, table: str, column: str, declared: str) -> str:
    query = f"SELECT DISTINCT typeof({_quote(column)}) FROM {_quote(table)}"
    classes = {storage for (storage,) in conn.execute(query)} - {"null"}
    if not classes:
        # No values to go by: the declared type, read as SQLite's affinity rules read it.
        declared = declared.upper()
        if "INT" in declared:
            return "integer"
        return "real" if any(word in declared for word in ("REAL", "FLOA", "DOUB")) else "text"
    if classes == {"integer"}:
        return "integer"
    return "real" if classes <= {"integer", "real"} else "text"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# -- DuckDB ---------------------------------------------------------------------------------


def load_duckdb(tables: list[Table], path: Path) -> None:
    """Create a DuckDB file at `path` holding a copy of `tables` (names as in SQLite)."""
    import duckdb

    conn = duckdb.connect(str(path))
    try:
        for table in tables:
            conn.execute(_create_table(table, "duckdb"))
            if table.rows:
                # One multi-row INSERT: executemany costs ~2 ms a row, seconds for flight_2.
                row = "(" + ", ".join("?" for _ in table.columns) + ")"
                values = ", ".join(row for _ in table.rows)
                params = [value for row in table.rows for value in row]
                conn.execute(f"INSERT INTO {_quote(table.name)} VALUES {values}", params)
    finally:
        conn.close()  # groundsql opens the file read-only: no other connection may hold it


def _create_table(table: Table, engine: str, lowercase: bool = False) -> str:
    """CREATE TABLE for `engine`, table and column names lowercased if asked."""

    def rename(name: str) -> str:
        return name.lower() if lowercase else name

    columns = [f"{_quote(rename(c.name))} {_TYPES[engine][c.kind]}" for c in table.columns]
    if table.primary_key:
        # Kept because PostgreSQL lets a query select any column of a table grouped by its key.
        columns.append(f"PRIMARY KEY ({', '.join(_quote(rename(k)) for k in table.primary_key)})")
    return f"CREATE TABLE {_quote(rename(table.name))} ({', '.join(columns)})"


# -- PostgreSQL -----------------------------------------------------------------------------


@contextmanager
def postgres_copy(tables: list[Table], admin_url: str = PG_ADMIN_URL) -> Iterator[str]:
    """A fresh PostgreSQL database holding `tables`; yields the URL of a login role that may
    only read it. The database and the role are dropped on exit.

    Names are lowercased: Spider's SQL names tables and columns unquoted and in any case,
    which PostgreSQL folds to lower case.
    """
    import psycopg

    suffix = uuid.uuid4().hex[:12]
    database, role = f"groundsql_spider_{suffix}", f"groundsql_spider_reader_{suffix}"
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as admin:
        try:
            admin.execute(f'CREATE DATABASE "{database}"')
            admin.execute(f'CREATE ROLE "{role}" LOGIN')
            with psycopg.connect(_pg_url(admin_url, database), autocommit=True) as conn:
                _fill_postgres(conn, tables)
                _grant_read_only(conn, database, role)
            yield _pg_url(admin_url, database, user=role)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def _pg_url(url: str, database: str, user: str | None = None) -> str:
    """`url` pointing at another database, and as another user (trust authentication)."""
    parts = urlsplit(url)
    netloc = f"{user}@{parts.netloc.rpartition('@')[2]}" if user else parts.netloc
    return urlunsplit(parts._replace(netloc=netloc, path=f"/{database}"))


def _fill_postgres(conn: Any, tables: list[Table]) -> None:
    for table in tables:
        conn.execute(_create_table(table, "postgres", lowercase=True))
        with conn.cursor().copy(f"COPY {_quote(table.name.lower())} FROM STDIN") as copy:
            for row in table.rows:
                copy.write_row(row)


def _grant_read_only(conn: Any, database: str, role: str) -> None:
    # A new database lets PUBLIC connect and create temporary tables; groundsql refuses a role
    # that can write anything, so PUBLIC loses both and the reader gets CONNECT alone. (Since
    # PostgreSQL 15 PUBLIC can no longer create in schema public; revoked for older servers.)
    conn.execute(f'REVOKE ALL ON DATABASE "{database}" FROM PUBLIC')
    conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO "{role}"')
    conn.execute(f'GRANT USAGE ON SCHEMA public TO "{role}"')
    conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{role}"')


# -- MySQL and MariaDB -----------------------------------------------------------------------


@contextmanager
def mysql_copy(tables: list[Table]) -> Iterator[str]:
    """A fresh database on the local MariaDB (or MySQL) server holding `tables`; yields the URL
    of the account that may only read it (tests/conftest.py). Dropped on exit.

    Table names are lowercased: Spider's SQL names tables in any case, which the server on
    Linux compares case-sensitively (lower_case_table_names=0). Text is stored in a binary,
    NO PAD collation, so that it compares (and groups, and sorts) byte for byte as in SQLite,
    not case- and trailing-space-insensitively as the server's default collation does.
    """
    admin = mysql_connect()
    database = f"groundsql_spider_{uuid.uuid4().hex[:12]}"
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT VERSION()")
            mariadb = "mariadb" in cur.fetchone()[0].lower()
            collation = "utf8mb4_nopad_bin" if mariadb else "utf8mb4_0900_bin"
            cur.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE {collation}")
            cur.execute(f"USE `{database}`")
            _fill_mysql(cur, tables)
        yield mysql_grant_reader(admin, database)
    finally:
        mysql_revoke_reader(admin, database)
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        admin.close()


def _fill_mysql(cur: Any, tables: list[Table]) -> None:
    by_name = {t.name.lower(): t for t in tables}
    cur.execute("SET SESSION foreign_key_checks = 0")  # Spider's rows do not always honour their keys
    for table in tables:
        cur.execute(_create_mysql_table(table, by_name))
        if table.rows:
            # pymysql sends executemany's INSERT as multi-row statements.
            values = ", ".join("%s" for _ in table.columns)
            cur.executemany(f"INSERT INTO {_backquote(table.name.lower())} VALUES ({values})", table.rows)


def _create_mysql_table(table: Table, tables: dict[str, Table]) -> str:
    kinds = {c.name.lower(): c.kind for c in table.columns}
    columns = [f"{_backquote(c.name)} {_TYPES['mysql'][c.kind]}" for c in table.columns]
    if table.primary_key:
        # A text key is indexed on a prefix (the server indexes at most 3072 bytes of a key).
        keys = [_backquote(k) + ("(255)" if kinds[k.lower()] == "text" else "") for k in table.primary_key]
        columns.append(f"PRIMARY KEY ({', '.join(keys)})")
    for fk in table.foreign_keys:
        if _pairs_in_mysql(table, fk, tables):
            referenced = fk.ref_columns or tables[fk.ref_table.lower()].primary_key
            columns.append(f"FOREIGN KEY ({', '.join(map(_backquote, fk.columns))}) REFERENCES "
                           f"{_backquote(fk.ref_table.lower())} ({', '.join(map(_backquote, referenced))})")
    return f"CREATE TABLE {_backquote(table.name.lower())} ({', '.join(columns)})"


def _pairs_in_mysql(table: Table, fk: ForeignKey, tables: dict[str, Table]) -> bool:
    """Whether the server can keep this foreign key: it must name the referenced table's whole
    primary key, on numeric columns of the same kind (SQLite lets a key name any column, of
    any type, and a text key is only indexed on a prefix here)."""
    ref = tables.get(fk.ref_table.lower())
    if ref is None or not ref.primary_key:
        return False
    ref_columns = fk.ref_columns or ref.primary_key
    if [c.lower() for c in ref_columns] != [k.lower() for k in ref.primary_key]:
        return False
    own = {c.name.lower(): c.kind for c in table.columns}
    theirs = {c.name.lower(): c.kind for c in ref.columns}
    pairs = [(own.get(a.lower()), theirs.get(b.lower())) for a, b in zip(fk.columns, ref_columns)]
    return all(a == b and a in ("integer", "real") for a, b in pairs)


def _backquote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# -- running SQL straight through each driver -----------------------------------------------


@contextmanager
def raw_runner(url: str) -> Iterator[RawRunner]:
    """A function running SQL on the database at `url` through its own driver, without
    groundsql: sqlite:///path or duckdb:///path (opened read-only), postgresql://...,
    mysql+pymysql://... or hive://... (Spark's Thrift server)"""
    scheme, _, rest = url.partition("://")
    path = rest[1:]  # as in SQLAlchemy: the path follows a third slash (sqlite:////abs/file)
    if scheme == "sqlite":
        with sqlite_read_only(Path(path)) as conn:
            yield lambda sql: conn.execute(sql).fetchall()
    elif scheme == "duckdb":
        import duckdb

        conn = duckdb.connect(path, read_only=True)
        try:
            yield lambda sql: conn.execute(sql).fetchall()
        finally:
            conn.close()  # before groundsql opens the same file with its own settings
    elif scheme == "postgresql":
        import psycopg

        # Autocommit: one failing query must not abort the transaction of the next.
        with psycopg.connect(url, autocommit=True) as conn:
            yield lambda sql: conn.execute(sql).fetchall()
    elif scheme == "hive":
        from tests.conftest import spark_connect

        parts = urlsplit(url)
        with spark_connect(parts.port or 10000, parts.path.lstrip("/")) as conn:
            def run_spark(sql: str) -> list[tuple[Any, ...]]:
                cursor = conn.cursor()
                try:
                    cursor.execute(sql)
                    return list(cursor.fetchall())
                finally:
                    cursor.close()

            yield run_spark
    elif scheme.split("+")[0] in ("mysql", "mariadb"):
        import pymysql

        parts = urlsplit(url)
        conn = pymysql.connect(host=parts.hostname, port=parts.port or 3306, user=parts.username or "",
                               password=parts.password or "", database=parts.path.lstrip("/"),
                               autocommit=True, charset="utf8mb4")

        def run(sql: str) -> list[tuple[Any, ...]]:
            with conn.cursor() as cur:
                cur.execute(sql)
                return list(cur.fetchall())

        try:
            yield run
        finally:
            conn.close()
    else:
        raise ValueError(f"no raw runner for {url}")
