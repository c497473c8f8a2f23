"""Filter values checked against the data: the reflection signal for an empty result.

FLINT's finding is that most wrong answers on real schemas filter on a value that is not there
("Tesla model S", fiscal_year = 2025, a wrong metric id). Such a query runs and returns nothing.
But an empty result is not by itself an error: on Spider the gold answer is empty or a single
0 for one question in eight. So the signal is sharper than "no rows": a filter `column = literal`
(or IN, LIKE) whose literal occurs nowhere in that column. Then the model is told which value is
missing, which values of the column are closest and which other text columns hold it (the
value may be right and the column wrong), read from the database; a query whose
every filter value exists is left alone, empty or not.

The probing queries are built here (sqlglot, quoted identifiers, escaped literals) and still go
through the validator and the read-only connection, like every query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from rapidfuzz import fuzz, process, utils
from sqlglot import exp

from groundsql.config import SafetyConfig
from groundsql.db import Database
from groundsql.errors import DatabaseError, UnsafeSQLError
from groundsql.safety import parse_untrusted, run_validated
from groundsql.schema import Schema
from groundsql.testsuite.literals import literal_value, resolve_column

__all__ = ["MissingValue", "check_value", "doubled_filter_values", "has_values", "missing_filter_values",
           "looks_empty", "missing_values_text", "unmentioned_filter_values"]

_VALUES_READ = 2000  # distinct values of one column compared with a missing literal
_CLOSEST = 3
_HOLDERS_PROBED = 60  # text columns searched for a missing literal (one tiny query each)
_MENTIONED = 85  # rapidfuzz ratio at which a word of a filter value counts as the question's


@dataclass(frozen=True)
class MissingValue:
    """`table.column <op> literal` matched no row of the table on its own."""

    table: str
    column: str
    op: str  # "=", "IN", "LIKE"
    literal: Any
    closest: tuple[Any, ...]  # values of the column most like the literal
    elsewhere: tuple[str, ...] = ()  # "table.column"s that do hold the literal (any case)

    def text(self) -> str:
        shown = f"'{self.literal}'" if isinstance(self.literal, str) else str(self.literal)
        near = ", ".join(f"'{v}'" if isinstance(v, str) else str(v) for v in self.closest)
        hint = f" (closest values in {self.column}: {near})" if near else ""
        holds = "matches values of" if self.op == "LIKE" else "is a value of"
        found = f"; {shown} {holds} {' and '.join(self.elsewhere)}" if self.elsewhere else ""
        return f"{self.table}.{self.column} {self.op} {shown} matches no row{hint}{found}"


def looks_empty(rows: tuple[tuple[Any, ...], ...] | list) -> bool:
    """No rows, or one row of nothing but NULL or 0 (a count or sum over no rows)."""
    if not rows:
        return True
    return len(rows) == 1 and all(v is None or v == 0 for v in rows[0])


def missing_filter_values(sql: str, db: Database, schema: Schema, policy: SafetyConfig) -> list[MissingValue]:
    """The literal filters of `sql` on real table columns whose value occurs in no row."""
    tree = parse_untrusted(sql, db.dialect)
    if tree is None:
        return []
    missing: list[MissingValue] = []
    for table, name, op, literal in _table_filters(tree, schema):
        absent = check_value(db, policy, table, name, literal, op)
        if absent is not None:
            missing.append(replace(absent, elsewhere=_holders(db, policy, schema, absent)))
    return missing


def _holders(db: Database, policy: SafetyConfig, schema: Schema, missing: MissingValue) -> tuple[str, ...]:
    """The other text columns that hold a missing text literal, case aside: told where the
    value is (`continents.Continent` holds 'europe', `countries.Continent` an id), the model
    joins that table; told only the closest values of the wrong column, it repeats the query."""
    if not isinstance(missing.literal, str) or _number(missing.literal) is not None:
        return ()
    others = [(t.name, c.name) for t in schema.tables for c in t.columns
              if c.is_text and (t.name, c.name) != (missing.table, missing.column)][:_HOLDERS_PROBED]
    found = []
    for table, column in others:
        stored = _stored_as(db, policy, table, column, missing.op, missing.literal)
        if stored is not None:
            shown = "" if stored == missing.literal or missing.op == "LIKE" else f" (as '{stored}')"
            found.append(f"{table}.{column}{shown}")
            if len(found) == _CLOSEST:
                break  # as many as are told: the other columns need no probe
    return tuple(found)


def unmentioned_filter_values(sql: str, question: str, db: Database, schema: Schema,
                              policy: SafetyConfig) -> list[str]:
    """The text literals `sql` filters on that no row holds and the question never mentions:
    values the model made up. On an empty database (LogicCat ships empty) or a filter that
    still leaves rows, an empty result cannot point them out; the question can. Numbers are
    left to `understanding.unstated_numbers`."""
    tree = parse_untrusted(sql, db.dialect)
    if tree is None:
        return []
    said = utils.default_process(question)
    found: list[str] = []
    for table, name, op, literal in _table_filters(tree, schema):
        if not isinstance(literal, str) or _number(literal) is not None or literal in found:
            continue
        if _mentioned(literal.strip("%_"), said) or _occurs(db, policy, table, name, op, literal):
            continue
        found.append(literal)
    return found


def doubled_filter_values(sql: str, question: str, schema: Schema, dialect: str) -> list[str]:
    """The text literals `sql` requires of two or more columns at once (no OR between the
    filters) although the question says them once: measured on Spider's flight_2, the 1.5B
    model writes `SourceAirport = 'APG' AND DestAirport = 'APG'` for "flights leaving from APG",
    and three trajectories doing so outvoted the one that did not. "From or to APG" (an OR)
    and a question that repeats the value are not flagged."""
    tree = parse_untrusted(sql, dialect)
    if tree is None:
        return []
    if tree.find(exp.Or) is not None:
        return []
    columns: dict[str, set[tuple[str, str]]] = {}
    for table, name, _, literal in _table_filters(tree, schema):
        if isinstance(literal, str) and _number(literal) is None and literal.strip():
            columns.setdefault(literal, set()).add((table, name))
    said = question.casefold()

    def said_times(literal: str) -> int:
        return len(re.findall(rf"(?<!\w){re.escape(literal.strip().casefold())}(?!\w)", said))

    return [literal for literal, where in columns.items() if len(where) > 1 and said_times(literal) < len(where)]


def _mentioned(value: str, said: str) -> bool:
    """The question names the value, give or take case, spacing and a typo or two: every word
    of it is a word of the question (so a placeholder such as 'Model Name' for "a vehicle
    model" is not)."""
    text = utils.default_process(value)
    if not text or text.replace(" ", "") in said.replace(" ", ""):
        return True
    words = said.split()
    return all(process.extractOne(w, words, scorer=fuzz.ratio, score_cutoff=_MENTIONED)
               for w in text.split())


def _table_filters(tree: exp.Expression, schema: Schema):
    """(table, column, op, literal) for each literal filter on a real column, once each."""
    columns = {t.name: [c.name for c in t.columns] for t in schema.tables}
    seen: set[tuple[str, str, str, Any]] = set()
    for column, op, literal in _literal_filters(tree):
        resolved = resolve_column(column, columns)  # aliases, scopes and CTEs as the filler sees them
        real = schema.table(resolved[0]) if resolved else None
        if real is None or real.column(resolved[1]) is None:
            continue
        key = (real.name, real.column(resolved[1]).name, op, literal)
        if key not in seen:
            seen.add(key)
            yield key


def check_value(db: Database, policy: SafetyConfig, table: str, column: str, value: Any,
                op: str = "=") -> MissingValue | None:
    """None when some row of `table` has `column <op> value`, or when the column holds no
    value at all (an empty table blames no filter: LogicCat's databases ship empty); else what
    is missing and the column's closest values."""
    if _occurs(db, policy, table, column, op, value):
        return None
    values = _values(db, policy, table, column)
    if not values:
        return None
    return MissingValue(table, column, op, value, _closest(values, value))


def missing_values_text(missing: list[MissingValue]) -> str:
    return "\n".join(f"- {m.text()}" for m in missing)


def _literal_filters(tree: exp.Expression):
    """(column, op, literal) for `col = lit`, `lit = col`, `col IN (lits)`, `col LIKE lit`,
    outside NOT (a negated filter that matches nothing is not the empty result's cause)."""
    for node in tree.find_all(exp.EQ, exp.In, exp.Like):
        if node.find_ancestor(exp.Not) is not None:
            continue
        if isinstance(node, exp.In):
            if isinstance(node.this, exp.Column) and not node.args.get("query"):
                for item in node.expressions:
                    value = literal_value(item)
                    if value is not None:
                        yield node.this, "=", value
            continue
        left, right = node.this, node.expression
        if isinstance(right, exp.Column):
            left, right = right, left
        value = literal_value(right)
        if isinstance(left, exp.Column) and value is not None:
            yield left, ("LIKE" if isinstance(node, exp.Like) else "="), value


def _probe(db: Database, policy: SafetyConfig, query: exp.Select) -> tuple[tuple[Any, ...], ...] | None:
    try:
        _, result = run_validated(db, query.sql(dialect=db.dialect), policy)
    except (UnsafeSQLError, DatabaseError):
        return None
    return result.rows


def _literal_node(value: Any) -> exp.Expression:
    return exp.Literal.string(value) if isinstance(value, str) else exp.Literal.number(value)


def _occurs(db: Database, policy: SafetyConfig, table: str, column: str, op: str, value: Any) -> bool:
    rows = _probe(db, policy, _matching(table, column, op, value, exp.Literal.number(1)))
    return rows is None or bool(rows)  # a probe that fails proves nothing: assume it occurs


def _stored_as(db: Database, policy: SafetyConfig, table: str, column: str, op: str, value: str) -> Any:
    """The column's value that matches `value` case aside (None when none does)."""
    col = exp.column(column, quoted=True)
    rows = _probe(db, policy, _matching(table, column, op, value, col, any_case=True))
    return rows[0][0] if rows else None


def _matching(table: str, column: str, op: str, value: Any, select: exp.Expression, *,
              any_case: bool = False) -> exp.Select:
    """SELECT `select` FROM table WHERE column <op> value LIMIT 1."""
    col, literal = exp.column(column, quoted=True), _literal_node(value)
    if any_case:
        col, literal = exp.Lower(this=col), exp.Lower(this=literal)
    test = exp.Like(this=col, expression=literal) if op == "LIKE" else exp.EQ(this=col, expression=literal)
    return exp.select(select).from_(exp.table_(table, quoted=True)).where(test).limit(1)


def has_values(db: Database, policy: SafetyConfig, table: str, column: str) -> bool:
    """Some row of `table` has a non-NULL `column`."""
    return bool(_values(db, policy, table, column, most=1))


def _values(db: Database, policy: SafetyConfig, table: str, column: str,
            most: int = _VALUES_READ) -> list[Any]:
    """Up to `most` distinct non-NULL values of the column."""
    col = exp.column(column, quoted=True)
    query = exp.select(col).distinct().from_(exp.table_(table, quoted=True)).where(
        exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null()))).limit(most)
    return [r[0] for r in _probe(db, policy, query) or ()]


def _closest(values: list[Any], value: Any) -> tuple[Any, ...]:
    if isinstance(value, str):
        texts = [v for v in values if isinstance(v, str)]
        pattern = value.strip("%_")
        found = process.extract(pattern, texts, processor=utils.default_process, limit=_CLOSEST)
        return tuple(text for text, _, _ in found)
    numbers = [(n, v) for v in values if (n := _number(v)) is not None]
    return tuple(v for _, v in sorted(numbers, key=lambda nv: abs(nv[0] - value))[:_CLOSEST])


def _number(value: Any) -> float | None:
    """A number, or text that reads as one (a year stored as TEXT)."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
