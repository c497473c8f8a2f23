"""Which schema table a column reference reads (schema/references.py): by its qualifier, or the
one table of its own SELECT that has the column."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from groundsql.schema import Column, Schema, Table
from groundsql.schema.references import column_table, scope_tables

SCHEMA = Schema("sqlite", (
    Table("singer", (Column("singer_id", "INTEGER"), Column("name", "TEXT"), Column("country", "TEXT"))),
    Table("concert", (Column("concert_id", "INTEGER"), Column("name", "TEXT"), Column("year", "TEXT"))),
    Table("singer_in_concert", (Column("singer_id", "INTEGER"), Column("concert_id", "INTEGER"))),
))

CASES = [
    # (query, the column's SQL as written, its table or None)
    ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON 1 = 1", "T1.name", "singer"),
    ("SELECT country FROM singer JOIN concert ON 1 = 1", "country", "singer"),
    ("SELECT name FROM singer JOIN concert ON 1 = 1", "name", None),  # both tables have it
    ("SELECT T2.country FROM singer AS T1 JOIN concert AS T2 ON 1 = 1", "T2.country", None),  # not T2's
    ("SELECT a.name FROM singer AS a JOIN singer AS b ON a.singer_id = b.singer_id", "a.name", "singer"),
    ("SELECT country FROM singer AS a JOIN singer AS b ON 1 = 1", "country", "singer"),  # one table twice
    # A subquery's tables are its own: the outer SELECT reads concert only.
    ("SELECT year FROM concert WHERE concert_id IN (SELECT concert_id FROM singer_in_concert)", "year", "concert"),
    ("SELECT name FROM concert WHERE concert_id IN (SELECT concert_id FROM singer_in_concert WHERE singer_id = 1)",
     "singer_id", "singer_in_concert"),
    ("SELECT x.country FROM (SELECT country FROM singer) AS x", "x.country", None),  # a derived table
    ("SELECT nobody FROM singer", "nobody", None),
]


@pytest.mark.parametrize(("sql", "written", "table"), CASES)
def test_column_table(sql: str, written: str, table: str | None) -> None:
    tree = sqlglot.parse_one(sql, dialect="sqlite")
    columns = [c for c in tree.find_all(exp.Column) if c.sql() == written]
    assert columns, written
    assert {getattr(column_table(c, SCHEMA), "name", None) for c in columns} == {table}


def test_scope_tables_are_the_selects_own_by_alias() -> None:
    tree = sqlglot.parse_one("SELECT 1 FROM singer AS S JOIN concert ON 1 = 1 WHERE EXISTS "
                             "(SELECT 1 FROM singer_in_concert)", dialect="sqlite")
    assert {alias: t.name for alias, t in scope_tables(tree, SCHEMA).items()} == {"s": "singer", "concert": "concert"}
    assert scope_tables(None, SCHEMA) == {}
