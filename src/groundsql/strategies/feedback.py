"""What the model is told when its query failed: the error, and the schema facts it got wrong.

Small models answer a bare "no such column: T2.Name" by repeating the query (measured: on a
100-question Spider sample every reflection of the 1.5B model after such an error failed again).
The error alone does not say where the column really is. So the feedback names, for each table
the failed query used, its alias and its real columns, and for an unknown table the tables that
exist. Deterministic, from the introspected schema; no extra model call.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from groundsql.safety import parse_untrusted
from groundsql.schema import Schema
from groundsql.schema.references import column_table, scope_tables

_MAX_COLUMNS = 40  # a very wide table is cut, not dumped


def error_feedback(sql: str, error: str, schema: Schema) -> str:
    """`error`, followed by the columns of every table the failed query refers to."""
    lines = [error]
    used = _tables_in(sql, schema.dialect)
    known = [(alias, schema.table(name)) for alias, name in used if schema.table(name) is not None]
    unknown = sorted({name for _, name in used if schema.table(name) is None})
    if unknown:
        lines.append(f"These tables do not exist: {', '.join(unknown)}.")
        lines.append(f"The tables are: {', '.join(t.name for t in schema.tables)}.")
    if known:
        lines.append("The tables your query uses have exactly these columns:")
        for alias, table in known:
            assert table is not None
            names = [c.name for c in table.columns]
            shown = ", ".join(names[:_MAX_COLUMNS]) + (", ..." if len(names) > _MAX_COLUMNS else "")
            label = f"{alias} = {table.name}" if alias and alias.lower() != table.name.lower() else table.name
            lines.append(f"- {label}: {shown}")
    lines += [hint for pattern, hint in _HINTS if pattern.search(error)]
    if "aggregate" in error.lower():
        lines += _outer_columns_in_aggregates(sql, schema)
    missing = _missing_column(error)
    if missing:
        owners = [t.name for t in schema.tables if t.column(missing) is not None]
        # An owner the query already joins under another name: the fix is the qualifier (the
        # 1.5B model writes T2.Cylinders for T1's column and, told to join cars_data, which
        # it has as T1, repeats the query).
        joined = [(alias or table.name, table.name) for alias, table in known
                  if table.column(missing) is not None]
        if joined:
            lines += [f"{missing} is a column of {name}, which your query calls {ref}: write {ref}.{missing}."
                      if ref != name else f"{missing} is a column of {name}: write {name}.{missing}."
                      for ref, name in joined]
        elif owners:
            lines.append(f"{missing} is a column of {', '.join(owners)}: join that table to use it.")
        else:
            lines.append(f"No table has a column named {missing}.")
        # A misplaced column is most often a join on a key the table lacks (Spider's car_1:
        # cars_data.MakeId for cars_data.Id = car_names.MakeId, repeated in every revision
        # until the trajectory that picked tables was told the join).
        joins = _foreign_key_joins(known)
        if joins:
            lines.append(f"The foreign keys join these tables on: {'; '.join(joins)}.")
    return "\n".join(lines)


def repaired(sql: str, error: str, schema: Schema) -> str | None:
    """`sql` mended without the model after `error`, or None: the first repair that applies."""
    return next((fixed for repair in _REPAIRS if (fixed := repair(sql, error, schema)) is not None), None)


def powered(sql: str, error: str, schema: Schema) -> str | None:
    """`x ^ n` written as `POWER(x, n)` where the database has no ^ operator (SQLite): the 1.5B
    model writes ^ for a power and, told to write POWER, repeats it (LogicCat). Only where
    both sides are one term (`(1 + r) ^ 5`, `v ^ 2`): in `a * b ^ 2` the parser's precedence
    is not the model's, and that is left to the model."""
    if '"^"' not in error or schema.dialect != "sqlite":
        return None
    tree = parse_untrusted(sql, schema.dialect)
    if tree is None:
        return None
    xors = list(tree.find_all(exp.BitwiseXor))
    if not xors or any(isinstance(side, exp.Binary) for x in xors for side in (x.this, x.expression)):
        return None
    for xor in xors:
        xor.replace(exp.Pow(this=xor.this, expression=xor.expression))
    return tree.sql(dialect=schema.dialect)


def requalified(sql: str, error: str, schema: Schema) -> str | None:
    """`sql` with a misqualified column repaired, or None when there is no single repair.

    The most common error of the 1.5B model on joins is a right column under the wrong table's
    name (`T2.Cylinders` for T1's column); told so, it repeats the query more often than not
    (Spider car_1: the revision of `car_makers.CountryId`, with the feedback naming
    `countries.CountryId`, was the same query). Two repairs are mechanical:
    - in a join condition `q.c = r.d`, the column of q's table that a foreign key pairs with
      r.d (car_1's `A.MakeId = B.MakeId` is `A.Id = B.MakeId`);
    - elsewhere, when exactly one table of the same SELECT has the column, `owner.c`.
    Anything else (no owner, two owners, a join on columns no key pairs, a column without a
    qualifier) is left to the model.
    """
    missing, qualifier = _missing_column(error), _missing_qualifier(error)
    if not missing or not qualifier:
        return None
    tree = parse_untrusted(sql, schema.dialect)
    if tree is None:
        return None
    wrong = [c for c in tree.find_all(exp.Column)
             if c.name.lower() == missing.lower() and c.table.lower() == qualifier.lower()]
    if not wrong:
        return None
    written = {(t.alias or t.name).lower(): t.alias or t.name for t in tree.find_all(exp.Table)}
    for column in wrong:
        tables = scope_tables(column.find_ancestor(exp.Select), schema)
        if column.find_ancestor(exp.Join) is not None:
            key = _join_key(column, tables)
            if key is None:
                return None
            column.set("this", exp.to_identifier(key))
            continue
        owners = [ref for ref, table in tables.items() if table.column(missing) is not None]
        if len(owners) != 1:
            return None
        column.set("table", exp.to_identifier(written[owners[0]]))
    # A column compared with itself is a repair that changed the query's meaning.
    if any(isinstance(eq.left, exp.Column) and eq.left == eq.right for eq in tree.find_all(exp.EQ)):
        return None
    return tree.sql(dialect=schema.dialect)


def joined(sql: str, error: str, schema: Schema) -> str | None:
    """`sql` with the table a missing column belongs to joined, or None.

    Where no table of the query's SELECT has the column but exactly one table that one of them
    references by a foreign key does (`company.country_name` for `ref_country`'s, on a
    normalized schema), that table is added with a LEFT JOIN on the key and the column is
    qualified with it. Only along a foreign key to the referenced table: each row finds at most
    one match, so the join adds a column and never repeats or drops a row. A column some table
    of the SELECT has is requalified's case; two candidate tables are left to the model.
    """
    missing, qualifier = _missing_column(error), _missing_qualifier(error)
    if not missing:
        return None
    tree = parse_untrusted(sql, schema.dialect)
    if tree is None:
        return None
    wrong = [c for c in tree.find_all(exp.Column) if c.name.lower() == missing.lower()
             and c.table.lower() == (qualifier or "").lower()]
    scopes = {id(c.find_ancestor(exp.Select)): c.find_ancestor(exp.Select) for c in wrong}
    if len(scopes) != 1:
        return None
    (select,) = scopes.values()
    if select is None or not isinstance(select.args.get("from_"), exp.From):
        return None
    tables = scope_tables(select, schema)
    if not tables or any(t.column(missing) is not None for t in tables.values()):
        return None
    # `T1.Name` on concert, which has concert_Name: more likely its own column, short of a prefix.
    lowered = missing.lower()
    if any(c.name.lower().endswith(f"_{lowered}") or c.name.lower().startswith(f"{lowered}_")
           for t in tables.values() for c in t.columns):
        return None
    written = {(t.alias or t.name).lower(): t.alias or t.name for t in select.find_all(exp.Table)
               if t.find_ancestor(exp.Select) is select}
    parents = [(written[ref], fk, parent) for ref, table in tables.items() for fk in table.foreign_keys
               if len(fk.columns) == 1 and (parent := schema.table(fk.ref_table)) is not None
               and parent.column(missing) is not None]
    if len({(ref.lower(), fk.columns[0].lower()) for ref, fk, _ in parents}) != 1:
        return None
    ref, fk, parent = parents[0]
    alias = parent.name if parent.name.lower() not in written else f"{parent.name}_joined"
    condition = exp.EQ(this=exp.column(fk.ref_columns[0], table=alias), expression=exp.column(fk.columns[0], table=ref))
    select.join(exp.Table(this=exp.to_identifier(parent.name), alias=exp.TableAlias(this=exp.to_identifier(alias)))
                if alias != parent.name else exp.to_table(parent.name),
                on=condition, join_type="LEFT", copy=False)
    for column in wrong:
        column.set("table", exp.to_identifier(alias))
    return tree.sql(dialect=schema.dialect)


def mismatched_keys(sql: str, schema: Schema) -> list[str]:
    """Comparisons of a foreign key with a column other than the one it references (or another
    key to that column), each as a sentence naming the right column.

    The query runs, so no error tells the model: LogicCat's AirCraft has
    `aircraft.Aircraft IN (SELECT Winning_Aircraft FROM match)`, a name against
    `match.Winning_Aircraft`, which holds `aircraft.Aircraft_ID`; Spider's 1.5B answers join
    `T1.Name = T2.Singer_ID` alike. Both sides are resolved in their own SELECT (a bare column
    by the one table there that has it); an equality and an IN with a one-column subquery are
    read, nothing else.
    """
    tree = parse_untrusted(sql, schema.dialect)
    if tree is None:
        return []
    found: list[str] = []
    for node in tree.find_all(exp.EQ, exp.In):
        if isinstance(node, exp.EQ):
            pair = (node.left, node.right)
        else:
            query = node.args.get("query")
            select = query.this if isinstance(query, exp.Subquery) else query
            if not isinstance(select, exp.Select) or len(select.expressions) != 1:
                continue
            pair = (node.this, select.expressions[0].unalias())
        left, right = (_resolved(side, schema) for side in pair)
        if left is None or right is None:
            continue
        for key, other in ((left, right), (right, left)):
            hint = _key_mismatch(key, other)
            if hint and hint not in found:
                found.append(hint)
    return found


def _resolved(node: exp.Expression, schema: Schema) -> tuple[Any, str] | None:
    """(table, column name) of a column reference, in the SELECT it belongs to."""
    table = column_table(node, schema) if isinstance(node, exp.Column) else None
    return (table, table.column(node.name).name) if table is not None else None


def _key_mismatch(key: tuple[Any, str], other: tuple[Any, str]) -> str | None:
    """What is wrong when `key` is a foreign key and `other` is neither the column it holds nor
    another key to that column (None when nothing is, or `key` is no foreign key)."""
    table, column = key
    other_table, other_column = other
    if other_table is table:
        return None
    for fk in table.foreign_keys:
        if len(fk.columns) != 1 or len(fk.ref_columns) != 1 or fk.columns[0].lower() != column.lower():
            continue
        target = (fk.ref_table.lower(), fk.ref_columns[0].lower())
        # The column it holds, another key to that column, or a key to this one: all fine.
        fine = {target, (table.name.lower(), column.lower())}
        if (other_table.name.lower(), other_column.lower()) == target or fine & _targets(other_table, other_column):
            return None
        join = "" if other_table.name.lower() == target[0] else f" (join {fk.ref_table})"
        return (f"It compares {other_table.name}.{other_column} with {table.name}.{column}, "
                f"but {table.name}.{column} holds {fk.ref_table}.{fk.ref_columns[0]}: compare "
                f"{fk.ref_table}.{fk.ref_columns[0]} with it{join}.")
    return None


def _targets(table: Any, column: str) -> set[tuple[str, str]]:
    """The (table, column) pairs `table.column` refers to as a one-column foreign key."""
    return {(fk.ref_table.lower(), fk.ref_columns[0].lower()) for fk in table.foreign_keys
            if len(fk.columns) == 1 and len(fk.ref_columns) == 1 and fk.columns[0].lower() == column.lower()}


def _join_key(column: exp.Column, tables: dict[str, Any]) -> str | None:
    """In a join condition `q.c = r.d`, the column of q's table a foreign key pairs with r.d."""
    equality = column.parent
    if not isinstance(equality, exp.EQ):
        return None
    other = equality.right if equality.left is column else equality.left
    if not isinstance(other, exp.Column) or not other.table:
        return None
    mine, theirs = tables.get(column.table.lower()), tables.get(other.table.lower())
    if mine is None or theirs is None or mine is theirs:
        return None
    wanted = other.name.lower()
    for fk in mine.foreign_keys:
        if fk.ref_table.lower() == theirs.name.lower():
            for own, ref in zip(fk.columns, fk.ref_columns):
                if ref.lower() == wanted:
                    return own
    for fk in theirs.foreign_keys:
        if fk.ref_table.lower() == mine.name.lower():
            for own, ref in zip(fk.columns, fk.ref_columns):
                if own.lower() == wanted:
                    return ref
    return None


def _foreign_key_joins(known: list[tuple[str, Any]]) -> list[str]:
    """The foreign-key conditions between the tables a query uses, by the names it gives them."""
    joins: list[str] = []
    for alias, table in known:
        for fk in table.foreign_keys:
            for other_alias, other in known:
                if other.name.lower() != fk.ref_table.lower() or (other_alias, other) == (alias, table):
                    continue
                left, right = alias or table.name, other_alias or other.name
                condition = " AND ".join(f"{left}.{c} = {right}.{r}" for c, r in zip(fk.columns, fk.ref_columns))
                if condition not in joins:
                    joins.append(condition)
    return joins


# Errors whose text does not say what to write instead (measured on LogicCat: the 1.5B model
# writes x ^ 2 for a square, and repeats it when told only "unrecognized token").
_HINTS = (
    (re.compile(r'unrecognized token: "\^"'), "SQLite has no ^ operator: write POWER(x, y) for x to the power y."),
    (re.compile(r"no such function: (POWER|POW|SQRT)\b", re.I),
     "This SQLite has no math functions: write x * x for a square."),
)

def _outer_columns_in_aggregates(sql: str, schema: Schema) -> list[str]:
    """A subquery's aggregate over a column its own tables lack reads the outer query's column
    (SQLite: "misuse of aggregate"); measured on LogicCat, the 1.5B model writes
    `(SELECT AVG(Production_Volume) FROM manufacturers)` and, told only the error, repeats it."""
    tree = parse_untrusted(sql, schema.dialect)
    if tree is None:
        return []
    hints: list[str] = []
    for select in tree.find_all(exp.Select):
        if select is tree:
            continue
        own = [t for t in (schema.table(x.name) for x in select.find_all(exp.Table)
                           if x.find_ancestor(exp.Select) is select) if t is not None]
        for aggregate in (a for e in select.expressions for a in e.find_all(exp.AggFunc)):
            for column in aggregate.find_all(exp.Column):
                if column.table or not own or any(t.column(column.name) for t in own):
                    continue
                owners = [t.name for t in schema.tables if t.column(column.name) is not None]
                hint = (f"In ({select.sql(dialect=schema.dialect)}), {', '.join(t.name for t in own)} "
                        f"has no column {column.name}")
                hint += f"; {', '.join(owners)} has: select it from there." if owners else "."
                if hint not in hints:
                    hints.append(hint)
    return hints


# How SQLite, PostgreSQL and DuckDB name a column that is not there.
_MISSING_COLUMN = (
    re.compile(r"no such column: (?:[\w\"]+\.)?\"?(\w+)"),
    re.compile(r"column \"?(?:\w+\.)?(\w+)\"? does not exist"),
    re.compile(r"does not have a column named \"(\w+)\""),
    re.compile(r"Referenced column \"(\w+)\" not found"),
)


# The same errors, for the table name or alias the query wrote before the column.
_QUALIFIER = (
    re.compile(r"no such column: \"?(\w+)\"?\.\"?\w+"),
    re.compile(r"column \"?(\w+)\.\w+\"? does not exist"),
    re.compile(r"Table \"(\w+)\" does not have a column named"),
)


# A query that names a table or column the database does not have, in each engine's words.
_MISSING_NAME = re.compile(
    r"no such (?:column|table)|there is no table|(?:column|relation|table)\b[^\n]*does not exist"
    r"|does not have a column named|Referenced column [^\n]* not found|Unknown (?:column|table)"
    r"|Table [^\n]* doesn't exist|Table with name [^\n]* does not exist", re.I)


def names_missing(error: str) -> bool:
    """Whether a query failed because it names a table or column that does not exist."""
    return bool(_MISSING_NAME.search(error))


def _missing_qualifier(error: str) -> str | None:
    return _first_group(_QUALIFIER, error)


def _missing_column(error: str) -> str | None:
    return _first_group(_MISSING_COLUMN, error)


def _first_group(patterns: tuple[re.Pattern[str], ...], error: str) -> str | None:
    return next((m.group(1) for m in (p.search(error) for p in patterns) if m), None)


def _tables_in(sql: str, dialect: str) -> list[tuple[str, str]]:
    """(alias, table name) of each table reference, CTE names excluded, in order of appearance."""
    tree = parse_untrusted(sql, dialect)
    if tree is None:
        return []
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    seen: list[tuple[str, str]] = []
    for table in tree.find_all(exp.Table):
        name = table.name
        if not name or name.lower() in ctes:
            continue
        entry = (table.alias, name)
        if entry not in seen:
            seen.append(entry)
    return seen


_REPAIRS = (requalified, joined, powered)
