"""Hostile SQL against real databases: refused by the validator, and nothing changes.

Each corpus case goes through `Session.run_sql` (validator + read-only connection) and, as a
second line of defence, straight to the read-only connection with no validator at all. Either
way the database must be byte-identical afterwards (for PostgreSQL: identical catalog and data).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

import groundsql
from groundsql.db import Database
from groundsql.errors import GroundsqlError, UnsafeSQLError
from tests.conftest import pg_reader_url
from tests.test_validator import HOSTILE

SETUP = [
    "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, password TEXT)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), total REAL)",
    "CREATE TABLE t (a INTEGER, b TEXT)",
    "INSERT INTO users VALUES (1, 'ada', 'pw1'), (2, 'bob', 'pw2')",
    "INSERT INTO orders VALUES (1, 1, 9.5), (2, 2, 3.0)",
    "INSERT INTO t VALUES (1, 'x'), (2, 'y')",
]


def _cases_for(dialect: str):
    return [pytest.param(case, id=case.name) for case in HOSTILE if case.dialect == dialect]


def _attempt(session, db: Database, sql: str) -> None:
    with pytest.raises(UnsafeSQLError):
        session.run_sql(sql)
    try:  # no validator: the connection alone must hold
        db.execute(sql, timeout_s=2)
    except GroundsqlError:
        pass


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Path:
    path = tmp_path / "victim.sqlite"
    with sqlite3.connect(path) as conn:
        for statement in SETUP:
            conn.execute(statement)
    return path


@pytest.mark.parametrize("case", _cases_for("sqlite"))
def test_sqlite_unchanged(sqlite_file: Path, case) -> None:
    before = hashlib.sha256(sqlite_file.read_bytes()).hexdigest()
    with groundsql.connect(sqlite_file) as session:
        _attempt(session, session.db, case.sql)
    assert hashlib.sha256(sqlite_file.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in sqlite_file.parent.iterdir()) == ["victim.sqlite"]


@pytest.fixture
def duckdb_victim(tmp_path: Path) -> Path:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "victim.duckdb"
    conn = duckdb.connect(str(path))
    for statement in SETUP:
        conn.execute(statement)
    conn.close()
    return path


@pytest.mark.parametrize("case", _cases_for("duckdb"))
def test_duckdb_unchanged(duckdb_victim: Path, case) -> None:
    before = hashlib.sha256(duckdb_victim.read_bytes()).hexdigest()
    with groundsql.connect(f"duckdb:///{duckdb_victim}") as session:
        _attempt(session, session.db, case.sql)
    assert hashlib.sha256(duckdb_victim.read_bytes()).hexdigest() == before


def _pg_state(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        catalog = conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
        ).fetchall()
        roles = conn.execute("SELECT rolname FROM pg_roles ORDER BY 1").fetchall()
        data = [conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in ("users", "orders", "t")]
    return hashlib.sha256(repr((catalog, roles, data)).encode()).hexdigest()


@pytest.fixture(scope="module")
def pg_victim(postgres_admin_url: str) -> str:
    """The test tables, and the URL of a role that may only SELECT them (groundsql refuses a
    superuser: its READ ONLY transaction can still read server files or run COPY TO PROGRAM)."""
    import psycopg

    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        for statement in SETUP:
            conn.execute(statement.replace("REAL", "DOUBLE PRECISION"))
    return pg_reader_url(postgres_admin_url)


@pytest.mark.postgres
@pytest.mark.parametrize("case", _cases_for("postgres"))
def test_postgres_unchanged(pg_victim: str, case) -> None:
    before = _pg_state(pg_victim)
    with groundsql.connect(pg_victim) as session:
        _attempt(session, session.db, case.sql)
    assert _pg_state(pg_victim) == before


# A degenerate model reply: nesting deep enough to exhaust sqlglot's recursion. The validator
# refuses it; every check that reads model SQL must pass it by rather than stop the question
# (a zero-shot LogicCat question ended in "internal error" from the failed query's feedback).
DEEP = "SELECT " + "(" * 3000 + "1" + ")" * 3000 + " FROM t"


def test_checks_that_read_model_sql_pass_a_degenerate_query_by(tmp_path: Path) -> None:
    from groundsql.db.introspect import introspect
    from groundsql.grounding.values import doubled_filter_values, missing_filter_values
    from groundsql.safety import parse_untrusted
    from groundsql.strategies.feedback import error_feedback, repaired
    from groundsql.understanding import bind_constants, drop_restated_filters, read_stored, unstated_numbers

    path = tmp_path / "t.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(SETUP[2])
    db = Database(f"sqlite:///{path}")
    schema = introspect(db)
    assert parse_untrusted(DEEP, "sqlite") is None
    assert "no such column" in error_feedback(DEEP, "no such column: x", schema)
    assert repaired(DEEP, "no such column: t.x", schema) is None
    assert repaired(DEEP, "near \"^\": syntax error", schema) is None
    assert unstated_numbers(DEEP, "how many?", "sqlite") == []
    assert bind_constants(DEEP, {"x": 1.0}, schema, "sqlite") == (DEEP, [])
    assert read_stored(DEEP, {1.0: ["t.a"]}, schema, "sqlite") == (DEEP, [])
    assert drop_restated_filters(DEEP, {1.0: ["t.a"]}, schema, "sqlite") == (DEEP, [])
    assert doubled_filter_values(DEEP, "q", schema, "sqlite") == []
    from groundsql.config import SafetyConfig
    assert missing_filter_values(DEEP, db, schema, SafetyConfig()) == []
