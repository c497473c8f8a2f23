"""The database interface on real engines: introspection, read-only execution, limits."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import groundsql
from groundsql.config import DatabaseConfig
from groundsql.db import Database
from groundsql.errors import ConfigError, DatabaseError, QueryTimeoutError
from tests.conftest import spider_db

SLOW_SQLITE = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- SQLite ---------------------------------------------------------------------------------


def test_sqlite_introspection(concert_singer: Path) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    assert schema.dialect == "sqlite"
    assert [t.name for t in schema.tables] == ["concert", "singer", "singer_in_concert", "stadium"]
    singer = schema.table("singer")
    assert singer is not None and singer.row_count == 6
    assert singer.primary_key == ("Singer_ID",)
    assert singer.column("Country").examples  # sample values are read
    link = schema.table("singer_in_concert")
    assert link is not None
    assert {(fk.ref_table, fk.ref_columns) for fk in link.foreign_keys} == {
        ("concert", ("concert_ID",)),
        ("singer", ("Singer_ID",)),
    }


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM singer",
        "UPDATE singer SET Age = 0",
        "INSERT INTO singer (Singer_ID) VALUES (99)",
        "DROP TABLE singer",
        "CREATE TABLE evil (x)",
        "PRAGMA writable_schema = 1",
        "PRAGMA journal_mode = DELETE",
        "ATTACH DATABASE 'evil.db' AS evil",
        "VACUUM",
        "SELECT load_extension('/tmp/evil')",
    ],
)
def test_sqlite_connection_refuses_writes_without_validator(concert_singer: Path, statement: str) -> None:
    """Defence in depth: even SQL that skipped the validator cannot change the file."""
    before = digest(concert_singer)
    db = Database(f"sqlite:///{concert_singer}")
    with pytest.raises(DatabaseError):
        db.execute(statement)
    assert digest(concert_singer) == before
    assert not (concert_singer.parent / "evil.db").exists()


def test_sqlite_timeout_and_row_cap(concert_singer: Path) -> None:
    db = Database(f"sqlite:///{concert_singer}", DatabaseConfig(max_rows=4))
    with pytest.raises(QueryTimeoutError):
        db.execute(SLOW_SQLITE, timeout_s=0.5)
    result = db.execute("SELECT Name FROM singer ORDER BY Name")
    assert len(result.rows) == 4 and result.truncated
    assert result.columns == ("Name",)
    assert not db.execute("SELECT Name FROM singer", max_rows=6).truncated


def test_bad_urls_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no SQLite database"):
        Database(f"sqlite:///{tmp_path / 'missing.sqlite'}")
    with pytest.raises(ConfigError, match="not a database URL"):
        Database("::nonsense::")
    with pytest.raises(ConfigError, match="no read-only support"):
        Database("oracle://scott@localhost/db")


def test_database_error_is_one_sentence(concert_singer: Path) -> None:
    with pytest.raises(DatabaseError) as info:
        Database(f"sqlite:///{concert_singer}").execute("SELECT nope FROM singer")
    assert "no such column" in str(info.value)
    assert "\n" not in str(info.value)


# -- PostgreSQL -----------------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_introspection_and_query(postgres_url: str) -> None:
    db = Database(postgres_url)
    schema = db.introspect()
    assert schema.dialect == "postgres"
    city = schema.table("city")
    assert city is not None and city.row_count == 3
    assert city.foreign_keys[0].ref_table == "country"
    result = db.execute(
        "SELECT c.name FROM city c JOIN country k ON k.country_id = c.country_id "
        "WHERE k.name = 'France' ORDER BY c.name"
    )
    assert result.rows == (("Lyon",), ("Paris",))


@pytest.mark.postgres
@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO country VALUES (3, 'Chile')",
        "UPDATE city SET population = 0",
        "DROP TABLE city",
        "CREATE TABLE evil (x int)",
        "WITH gone AS (DELETE FROM city RETURNING *) SELECT count(*) FROM gone",
        "SELECT nextval('no_such_seq')",
    ],
)
def test_postgres_read_only_transaction(postgres_url: str, statement: str) -> None:
    db = Database(postgres_url)
    with pytest.raises(DatabaseError):
        db.execute(statement)
    assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)
    assert db.execute("SELECT COUNT(*) FROM country").rows == ((2,),)


@pytest.mark.postgres
def test_postgres_statement_timeout(postgres_url: str) -> None:
    with pytest.raises(QueryTimeoutError):
        Database(postgres_url).execute("SELECT pg_sleep(5)", timeout_s=0.5)


# -- DuckDB ---------------------------------------------------------------------------------


def test_duckdb_introspection_read_only_and_timeout(duckdb_file: Path) -> None:
    db = Database(f"duckdb:///{duckdb_file}")
    schema = db.introspect()
    orders = schema.table("orders")
    assert orders is not None and orders.row_count == 3
    assert orders.foreign_keys[0].ref_table == "customer"
    total = db.execute("SELECT SUM(amount) FROM orders WHERE customer_id = 1").rows[0][0]
    assert float(total) == pytest.approx(19.75)
    before = digest(duckdb_file)
    with pytest.raises(DatabaseError):
        db.execute("DELETE FROM orders")
    with pytest.raises(QueryTimeoutError):
        db.execute("SELECT COUNT(*) FROM range(100000000000) a", timeout_s=0.5)
    db.close()
    assert digest(duckdb_file) == before


# -- Bounds that hold without the validator (issue 22) ----------------------------------------


def test_result_bytes_are_capped_like_rows(concert_singer: Path) -> None:
    """1,000 rows of 1 MB would otherwise reach the caller whole."""
    db = Database(f"sqlite:///{concert_singer}", DatabaseConfig(max_result_bytes=4 * 2**20))
    big = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) "
    result = db.execute(big + "SELECT x, zeroblob(1000000) FROM c")
    assert result.truncated and 2 <= len(result.rows) <= 4
    with pytest.raises(DatabaseError, match="single row is larger"):
        db.execute("SELECT zeroblob(3000000), zeroblob(3000000)")


def test_a_query_that_ignores_its_interrupt_is_killed(duckdb_file: Path) -> None:
    db = Database(f"duckdb:///{duckdb_file}")
    start = time.perf_counter()
    with pytest.raises(QueryTimeoutError):
        db.execute("SELECT length(list_sort(range(30000000)))", timeout_s=1.0)
    assert time.perf_counter() - start < 5  # the limit, the grace second, and a new worker
    assert db.execute("SELECT COUNT(*) FROM orders").rows == ((3,),)


class _LateInterrupt:
    """An engine whose query overruns its time and whose interrupt arrives after the query has
    ended, as PostgreSQL's cancel request or MySQL's KILL QUERY can on a busy machine."""

    def __init__(self) -> None:
        self.connections: list[dict] = []
        self.interrupts = 0

    def connect(self, spec: dict) -> dict:
        conn = {"closed": False}
        self.connections.append(conn)
        return conn

    def run(self, conn: dict, sql: str, limits):
        time.sleep(limits.timeout_s + 0.05)
        raise RuntimeError("canceling statement due to statement timeout")

    def interrupt(self, conn: dict) -> None:
        time.sleep(0.2)  # still on its way when the query has already failed
        self.interrupts += 1

    def usable(self, conn: dict) -> bool:
        return not conn["closed"]

    def close(self, conn: dict) -> None:
        conn["closed"] = True


def test_an_interrupted_connection_is_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    from groundsql.db import engines, worker

    engine = _LateInterrupt()
    monkeypatch.setitem(engines.ENGINES, "late", lambda: engine)
    connections = worker._Connections()
    request = {"sql": "SELECT 1", "timeout_s": 0.05, "max_rows": 10, "max_bytes": 2**20,
               "spec": {"key": "k", "backend": "late"}}
    assert worker._run(connections, request)["kind"] == "timeout"
    # The interrupt was waited for, and the session it may have landed on was dropped.
    assert engine.interrupts == 1 and engine.connections[0]["closed"]
    worker._run(connections, request)
    assert len(engine.connections) == 2


def test_memory_is_bounded_per_query(duckdb_file: Path) -> None:
    db = Database(f"duckdb:///{duckdb_file}", DatabaseConfig(memory_mb=1024))
    with pytest.raises(DatabaseError, match="memory"):
        db.execute("SELECT max(x) FROM (SELECT unnest(range(1000000000)) AS x)")
    assert db.execute("SELECT COUNT(*) FROM customer").rows == ((2,),)


def test_duckdb_runs_one_select_only(duckdb_file: Path) -> None:
    db = Database(f"duckdb:///{duckdb_file}")
    before = digest(duckdb_file)
    for sql in ("SELECT 1; DELETE FROM orders", "CHECKPOINT", "SET threads = 64", "PRAGMA show_tables"):
        with pytest.raises(DatabaseError):
            db.execute(sql)
    db.close()
    assert digest(duckdb_file) == before


def test_queries_run_side_by_side(concert_singer: Path) -> None:
    db = Database(f"sqlite:///{concert_singer}", DatabaseConfig(workers=2))
    with ThreadPoolExecutor(4) as pool:
        counts = list(pool.map(lambda _: db.execute("SELECT COUNT(*) FROM singer").rows, range(16)))
    assert counts == [((6,),)] * 16


@pytest.mark.postgres
def test_postgres_refuses_a_role_that_can_write(postgres_admin_url: str) -> None:
    with pytest.raises(ConfigError, match="superuser"):
        Database(postgres_admin_url)
    assert Database(postgres_admin_url, DatabaseConfig(allow_privileged_role=True)).execute("SELECT 1").rows == ((1,),)


@pytest.mark.postgres
def test_postgres_percent_is_a_character(postgres_url: str) -> None:
    rows = Database(postgres_url).execute("SELECT name FROM city WHERE name LIKE 'L%' OR name LIKE '%r%' ORDER BY name").rows
    assert rows == (("Lyon",), ("Paris",))


@pytest.mark.postgres
@pytest.mark.parametrize("statement", [
    "COMMIT; DELETE FROM city",
    "ROLLBACK; DELETE FROM city",
    "SET TRANSACTION READ WRITE; DELETE FROM city; COMMIT",
    "COMMIT; DROP TABLE city",
    "DELETE FROM city",
    "SET TRANSACTION READ WRITE",
])
def test_postgres_sends_one_select_even_as_superuser(postgres_admin_url: str, statement: str) -> None:
    """The second layer alone, with the most privileged role: one statement, a query, read-only."""
    db = Database(postgres_admin_url, DatabaseConfig(allow_privileged_role=True))
    with pytest.raises(DatabaseError):
        db.execute(statement)
    assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)


@pytest.mark.postgres
def test_postgres_session_state_does_not_outlive_a_query(postgres_admin_url: str) -> None:
    import psycopg

    db = Database(postgres_admin_url, DatabaseConfig(allow_privileged_role=True, workers=1))
    db.execute("SELECT pg_advisory_lock(4242)")
    db.execute("SELECT set_config('search_path', 'nowhere', false)")
    with psycopg.connect(postgres_admin_url, autocommit=True) as admin:
        held = admin.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242").fetchone()
    assert held == (0,)
    assert db.execute("SELECT current_setting('search_path')").rows[0][0] != "nowhere"


@pytest.mark.postgres
def test_postgres_fetches_only_what_it_returns(postgres_url: str) -> None:
    db = Database(postgres_url, DatabaseConfig(max_rows=1000))
    start = time.perf_counter()
    result = db.execute("SELECT g, repeat('x', 100) FROM generate_series(1, 3000000) g LIMIT 3000000", timeout_s=10)
    assert len(result.rows) == 1000 and result.truncated
    assert time.perf_counter() - start < 5  # a server-side cursor: three million rows never cross


@pytest.mark.postgres
def test_postgres_reconnects_after_its_backend_is_terminated(postgres_url: str, postgres_admin_url: str) -> None:
    import psycopg

    db = Database(postgres_url, DatabaseConfig(workers=1))
    assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)
    with psycopg.connect(postgres_admin_url, autocommit=True) as admin:
        killed = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                               "WHERE application_name = 'groundsql' AND datname = current_database()").fetchone()
    assert killed[0] >= 1
    assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)


@pytest.mark.postgres
@pytest.mark.parametrize("grant", ["CREATEDB", "REPLICATION"])
def test_postgres_refuses_roles_with_cluster_privileges(postgres_admin_url: str, grant: str) -> None:
    import psycopg

    role = f"groundsql_test_{grant.lower()}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {role}")
        admin.execute(f"CREATE ROLE {role} LOGIN {grant}")
    try:
        with pytest.raises(ConfigError, match="may write"):
            Database(postgres_admin_url.replace("postgres@", f"{role}@", 1))
    finally:
        with psycopg.connect(postgres_admin_url, autocommit=True) as admin:
            admin.execute(f"DROP ROLE {role}")


# -- databases that are not what they seem (issue 26, 4) --------------------------------------------


def _damaged_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "damaged.sqlite"
    shutil.copy(spider_db("concert_singer"), copy)
    with copy.open("r+b") as handle:  # a b-tree page overwritten with garbage
        handle.seek(4096 * 3)
        handle.write(b"\x0d\x00\x00\xff\xff" + b"\x42" * 4000)
    return copy


@pytest.mark.parametrize("kind, message", [
    ("empty file", "has no tables"), ("no tables", "has no tables"), ("damaged", r"is damaged \(Page 4"),
])
def test_a_database_that_is_not_one_to_ask_is_said_at_once(tmp_path: Path, kind: str, message: str,
                                                           monkeypatch) -> None:
    import groundsql.api

    path = tmp_path / "db.sqlite"
    if kind == "empty file":
        path.write_bytes(b"")
    elif kind == "no tables":
        sqlite3.connect(path).execute("PRAGMA user_version = 3").connection.close()
    else:
        path = _damaged_copy(tmp_path)

    def no_model(*_):
        raise AssertionError("a model was loaded for a database that cannot be asked")

    monkeypatch.setattr(groundsql.api, "build_llm", no_model)
    with pytest.raises(DatabaseError, match=message):
        groundsql.connect(path).ask("How many rows?")


@pytest.mark.parametrize("name", ["with space%20.sqlite", "what?.sqlite", "100%.sqlite"])
def test_a_file_name_is_a_name_not_url_syntax(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copy(spider_db("concert_singer"), path)
    with groundsql.connect(str(path)) as session:
        assert session.run_sql("SELECT COUNT(*) FROM singer").rows == ((6,),)
