"""The lookup measured on its own: of the rows the gold query filters on, which did the lookup
and entity linking resolve (recall), and which resolved rows are not the gold's (precision)?

A gold query names a row of a keyed table by its key (`fp.period_type_id = 1`, a foreign key to
ref_period_type), or by a value of another column (`dd.data_item_name = 'Total Debt'`, a label;
`c.company_name = 'Ticino Mobility AG'`, an entity); both become (table, key value), the second
by one read of the table. The grounded strategy's resolved constraints (the answer's
`grounds["constraints"]`) are (table, key value) already. Only `column = literal` and
`column IN (literals)` count. A number in a column that is neither a key nor a foreign key
(`fiscal_year = 2023`) names no row, nor does a text matching more than a few rows (a category).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlglot import exp

from groundsql.db import Database
from groundsql.grounding.usage import column_literals, comparable
from groundsql.safety import parse_untrusted
from groundsql.schema import Schema, Table
from groundsql.schema.references import column_table

__all__ = ["gold_rows", "grounding_scores"]

_MOST_ROWS = 5  # a label matching more rows than this is a category, not a row


def gold_rows(sql: str, db: Database, schema: Schema) -> set[tuple[str, str]]:
    """(table, key value) of every row `sql` names by its key or by another column's value."""
    tree = parse_untrusted(sql, schema.dialect)
    if tree is None:
        return set()
    rows: set[tuple[str, str]] = set()
    for column, literal in column_literals(tree):
        table = column_table(column, schema)
        if table is None:
            continue
        rows |= _named_rows(table, column.name, literal, db, schema)
    return rows


def grounding_scores(gold_sql: str, constraints: Iterable[Mapping[str, Any]], db: Database,
                     schema: Schema) -> dict[str, Any]:
    """The gold's rows, the resolved ones, and recall and precision (None with nothing to divide)."""
    gold = gold_rows(gold_sql, db, schema)
    resolved = {(str(c["table"]).lower(), comparable(c["id"])) for c in constraints
                if c.get("table") is not None and c.get("id") is not None}
    found = gold & resolved
    return {
        "gold": sorted(f"{t}={v}" for t, v in gold),
        "resolved": sorted(f"{t}={v}" for t, v in resolved),
        "found": len(found),
        "recall": round(len(found) / len(gold), 4) if gold else None,
        "precision": round(len(found) / len(resolved), 4) if resolved else None,
    }


def _named_rows(table: Table, column: str, literal: exp.Literal, db: Database,
                schema: Schema) -> set[tuple[str, str]]:
    value = literal.this
    for fk in table.foreign_keys:  # a foreign key names a row of the table it references
        if len(fk.columns) == 1 and fk.columns[0].lower() == column.lower():
            return {(fk.ref_table.lower(), comparable(value))}
    key = table.primary_key
    if len(key) != 1:
        return set()
    if key[0].lower() == column.lower():
        return {(table.name.lower(), comparable(value))}
    if not literal.is_string:
        return set()  # a number in another column (a year, an amount) names no row
    query = exp.select(exp.column(key[0])).from_(exp.to_table(table.name)).where(
        exp.column(column).eq(exp.Literal.string(value))).limit(_MOST_ROWS + 1)
    found = db.execute(query.sql(dialect=schema.dialect), max_rows=_MOST_ROWS + 1).rows
    if not found or len(found) > _MOST_ROWS:
        return set()
    return {(table.name.lower(), comparable(k)) for (k,) in found}
