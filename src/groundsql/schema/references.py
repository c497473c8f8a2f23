"""Which of the schema's tables a parsed query's table and column references name.

Used where a query is read against the schema after the validator accepted it (the repairs
and feedback for a failed query, the grounding checks, the lookup's evaluation): a column is
resolved in the SELECT it belongs to, not its subqueries', the way SQL binds it.
"""

from __future__ import annotations

from sqlglot import exp

from groundsql.schema.model import Schema, Table

__all__ = ["column_table", "scope_tables"]


def scope_tables(select: exp.Expression | None, schema: Schema) -> dict[str, Table]:
    """The schema's tables `select` reads itself (not its subqueries'), by alias or name in
    lower case; none when `select` is None."""
    if select is None:
        return {}
    return {(t.alias or t.name).lower(): real for t in select.find_all(exp.Table)
            if t.find_ancestor(exp.Select) is select and (real := schema.table(t.name)) is not None}


def column_table(column: exp.Column, schema: Schema) -> Table | None:
    """The schema table `column` reads in its SELECT: the one its qualifier names, or the one
    table there that has a column of that name; None when that table lacks it, when none or
    several could be meant, or outside a SELECT."""
    if not column.name:
        return None
    tables = scope_tables(column.find_ancestor(exp.Select), schema)
    if column.table:
        table = tables.get(column.table.lower())
        owners = [table] if table is not None and table.column(column.name) is not None else []
    else:
        owners = list({id(t): t for t in tables.values() if t.column(column.name) is not None}.values())
    return owners[0] if len(owners) == 1 else None
