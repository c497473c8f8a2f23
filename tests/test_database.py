"""The database interface on real engines: introspection, read-only execution, limits."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from groundsql.config import DatabaseConfig
from groundsql.db import Database
from groundsql.errors import ConfigError, DatabaseError, QueryTimeoutError

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
