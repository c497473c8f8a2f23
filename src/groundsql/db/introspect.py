"""Read a database's schema: tables, columns, keys, row counts and a few example values.

It reads through `Introspectable`, the little of a database it needs, so that database.py
imports this module and not the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from groundsql.errors import DatabaseError, GroundsqlError
from groundsql.schema.model import Column, ForeignKey, Schema, Table

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Engine

    from groundsql.config import DatabaseConfig

_EXAMPLE_SAMPLE_ROWS = 10_000
_MAX_EXAMPLE_CHARS = 60  # long texts would crowd the prompt without telling the model more


class _Rows(Protocol):
    @property
    def rows(self) -> Sequence[Sequence[Any]]: ...


class Introspectable(Protocol):
    """What introspection uses of a database (db/database.py's `Database` is one)."""

    @property
    def backend(self) -> str: ...  # SQLAlchemy's backend name: "sqlite", "duckdb", ...

    @property
    def dialect(self) -> str: ...  # sqlglot's dialect name

    @property
    def url(self) -> URL: ...

    @property
    def config(self) -> DatabaseConfig: ...  # sample_values: how many examples per column

    @property
    def engine(self) -> Engine: ...  # for SQLAlchemy's reflection (not DuckDB's)

    def execute(self, sql: str, *, max_rows: int | None = None) -> _Rows: ...

    def quote(self, identifier: str) -> str: ...


@dataclass(frozen=True)
class Catalog:
    """What the validator checks a query's names against (safety/validator.py)."""

    tables: dict[str, frozenset[str]]  # lower-case table or view name -> lower-case columns
    user_functions: frozenset[str]  # lower-case names of functions the database defines


def read_catalog(db: Introspectable, user_functions_sql: str | None) -> Catalog:
    try:
        if db.backend == "duckdb":
            rows = db.execute(
                "SELECT table_name, column_name FROM duckdb_columns() "
                "WHERE NOT internal AND schema_name = current_schema()", max_rows=1_000_000,
            ).rows
        elif db.backend == "hive":
            rows = tuple((entry.name, column[0]) for entry in _spark_catalog(db, keys=False) for column in entry.columns)
        else:
            inspector = sa.inspect(db.engine)
            names = list(inspector.get_table_names()) + list(inspector.get_view_names())
            rows = tuple((name, c["name"]) for name in names for c in inspector.get_columns(name))
        functions = db.execute(user_functions_sql, max_rows=1_000_000).rows if user_functions_sql else ()
    except (SQLAlchemyError, GroundsqlError) as err:
        raise DatabaseError(f"could not read the catalog of {db!r}: {err}") from err
    tables: dict[str, set[str]] = {}
    for table, column in rows:
        tables.setdefault(str(table).lower(), set()).add(str(column).lower())
    return Catalog(
        tables={name: frozenset(columns) for name, columns in tables.items()},
        user_functions=frozenset(str(row[0]).lower() for row in functions),
    )


@dataclass(frozen=True)
class _CatalogTable:
    """What the catalog says of one table, before rows are counted and sampled."""

    name: str
    columns: tuple[tuple[str, str, bool, str], ...]  # name, type, nullable, comment
    primary_key: frozenset[str]
    foreign_keys: tuple[ForeignKey, ...]


def introspect(db: Introspectable) -> Schema:
    try:
        catalog = {"duckdb": _duckdb_catalog, "hive": _spark_catalog}.get(db.backend, _sqlalchemy_catalog)(db)
    except (SQLAlchemyError, GroundsqlError) as err:
        raise DatabaseError(f"could not read the schema of {db!r}: {err}") from err
    tables = tuple(_table(db, entry) for entry in sorted(catalog, key=lambda t: t.name))
    return Schema(dialect=db.dialect, tables=tables, name=_schema_name(db))


def _schema_name(db: Introspectable) -> str:
    database = db.url.database or ""
    return database.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _sqlalchemy_catalog(db: Introspectable) -> list[_CatalogTable]:
    inspector = sa.inspect(db.engine)
    catalog = []
    for name in inspector.get_table_names():
        foreign_keys = []
        for fk in inspector.get_foreign_keys(name):
            ref_table = fk["referred_table"]
            ref_columns = tuple(fk.get("referred_columns") or ())
            if not ref_columns or not all(ref_columns):
                # "REFERENCES t" without columns means t's primary key (SQLite allows it).
                ref_pk = inspector.get_pk_constraint(ref_table).get("constrained_columns")
                ref_columns = tuple(ref_pk or ())
            foreign_keys.append(ForeignKey(tuple(fk["constrained_columns"]), ref_table, ref_columns))
        columns = tuple(
            (c["name"], _type_name(c["type"]), bool(c.get("nullable", True)), c.get("comment") or "")
            for c in inspector.get_columns(name)
        )
        primary_key = frozenset(inspector.get_pk_constraint(name).get("constrained_columns") or ())
        catalog.append(_CatalogTable(name, columns, primary_key, tuple(foreign_keys)))
    return catalog


def _duckdb_catalog(db: Introspectable) -> list[_CatalogTable]:
    # SQLAlchemy's reflection (through duckdb-engine) cannot read DuckDB's keys,
    # so DuckDB's own catalog functions are read instead.
    where = "WHERE NOT internal AND schema_name = current_schema()"
    columns: dict[str, list[tuple[str, str, bool, str]]] = {}
    for table, column, dtype, nullable, comment in db.execute(
        f"SELECT table_name, column_name, data_type, is_nullable, comment FROM duckdb_columns() "
        f"{where} ORDER BY table_name, column_index",
        max_rows=100_000,
    ).rows:
        columns.setdefault(table, []).append((column, dtype, bool(nullable), comment or ""))
    primary: dict[str, frozenset[str]] = {}
    foreign: dict[str, list[ForeignKey]] = {}
    for table, kind, cols, ref_table, ref_cols in db.execute(
        "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
        "referenced_column_names FROM duckdb_constraints() WHERE schema_name = current_schema()",
        max_rows=100_000,
    ).rows:
        if kind == "PRIMARY KEY":
            primary[table] = frozenset(cols)
        elif kind == "FOREIGN KEY":
            foreign.setdefault(table, []).append(ForeignKey(tuple(cols), ref_table, tuple(ref_cols)))
    return [
        _CatalogTable(name, tuple(cols), primary.get(name, frozenset()), tuple(foreign.get(name, ())))
        for name, cols in columns.items()
    ]


def _spark_catalog(db: Introspectable, keys: bool = True) -> list[_CatalogTable]:
    # Spark's catalog holds no keys: a copy made by `groundsql spark load` keeps them as table
    # properties (db/sparkserver.py); a table without them has none.
    database = db.quote(db.url.database or "default")
    catalog = []
    for row in db.execute(f"SHOW TABLES IN {database}", max_rows=100_000).rows:
        name, temporary = str(row[1]), bool(row[2]) if len(row) > 2 else False
        if temporary:
            continue
        qualified = f"{database}.{db.quote(name)}"
        columns = []
        for column, dtype, comment in db.execute(f"DESCRIBE TABLE {qualified}", max_rows=100_000).rows:
            if not column or str(column).startswith("#"):
                break  # partition and detail sections follow a blank line
            columns.append((str(column), str(dtype), True, str(comment or "")))
        primary: frozenset[str] = frozenset()
        foreign: tuple[ForeignKey, ...] = ()
        if keys:
            properties = dict(db.execute(f"SHOW TBLPROPERTIES {qualified}", max_rows=10_000).rows)
            primary = frozenset(json.loads(properties.get("groundsql.primary_key", "[]")))
            foreign = tuple(ForeignKey(tuple(fk["columns"]), fk["table"], tuple(fk["ref_columns"]))
                            for fk in json.loads(properties.get("groundsql.foreign_keys", "[]")))
        catalog.append(_CatalogTable(name, tuple(columns), primary, foreign))
    return catalog


def _table(db: Introspectable, entry: _CatalogTable) -> Table:
    row_count = _scalar(db, f"SELECT COUNT(*) FROM {db.quote(entry.name)}")
    columns = tuple(
        Column(
            name=name,
            type=dtype,
            nullable=nullable and name not in entry.primary_key,
            primary_key=name in entry.primary_key,
            description=comment,
            examples=_examples(db, entry.name, name) if row_count else (),
        )
        for name, dtype, nullable, comment in entry.columns
    )
    return Table(name=entry.name, columns=columns, foreign_keys=entry.foreign_keys, row_count=row_count)


def _type_name(sa_type: Any) -> str:
    try:
        return str(sa_type)
    except Exception:  # some dialect types cannot render themselves without a dialect
        return type(sa_type).__name__.upper()


def _scalar(db: Introspectable, sql: str) -> int | None:
    try:
        result = db.execute(sql, max_rows=1)
    except GroundsqlError:
        return None
    return int(result.rows[0][0]) if result.rows else None


def _examples(db: Introspectable, table: str, column: str) -> tuple[object, ...]:
    k = db.config.sample_values
    if k == 0:
        return ()
    col = db.quote(column)
    # The most frequent values are the most useful examples (codes, categories, labels);
    # counting them over a bounded sample keeps introspection cheap on large tables.
    sql = (
        f"SELECT {col} FROM (SELECT {col} FROM {db.quote(table)} WHERE {col} IS NOT NULL "
        f"LIMIT {_EXAMPLE_SAMPLE_ROWS}) AS sample GROUP BY {col} ORDER BY COUNT(*) DESC, {col} LIMIT {k}"
    )
    try:
        rows = db.execute(sql, max_rows=k).rows
    except GroundsqlError:
        return ()
    return tuple(_shorten(row[0]) for row in rows)


def _shorten(value: object) -> object:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, str) and len(value) > _MAX_EXAMPLE_CHARS:
        return value[: _MAX_EXAMPLE_CHARS - 3] + "..."
    return value
