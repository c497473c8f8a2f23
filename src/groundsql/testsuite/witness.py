"""Witness rows: joined rows on which a query's whole WHERE clause holds, and rows that miss it
by one condition.

The filler plants a query's literals column by column, so `pm.top_speed = 210` finds rows and
`d.curb_weight = 1500` finds rows, but rarely the same car: the conjunction, across a join, is
empty on every variant and the gold cannot be told from its near misses. This pass edits a
filled variant so that it can:

1. a tuple of rows, one per table of the query's FROM clause, is chosen so that the join
   conditions hold (reusing rows that already join, otherwise pointing a reference column at
   the chosen parent);
2. each `column <op> literal` condition of the WHERE conjunction is made true on that tuple
   (`> 30` gets 31, `= 'France'` gets 'France', `LIKE '%ab%'` gets 'ab', ...);
3. further tuples satisfy all but one condition, which gets the value just outside it (`> 30`
   gets 30, `= 'France'` gets 'Francf'), so dropping or loosening that condition changes the
   result;
4. the rows of one satisfying tuple are copied (all but their key columns), so the result has
   duplicates and DISTINCT, UNION and COUNT(DISTINCT) near misses differ from the gold;
5. satisfying tuples share their GROUP BY values, so groups hold several rows and SUM, AVG,
   MIN, MAX and COUNT disagree; and they meet and miss the CASE WHEN conditions of the select
   list in turn, so both branches are taken;
6. a formula compared with a number (`CASE WHEN a * 100.0 / b > 90`) is made to equal the
   number on one tuple and to lie just above and below it on two more, where `>` and `>=`,
   and a number changed by one, part.

Every (sub)query with a FROM clause of real tables gets its witnesses. Edits that a constraint
refuses (UNIQUE, NOT NULL, CHECK) are skipped: a witness is an improvement, never required.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

from groundsql.testsuite.literals import like_example, literal_value, near_values

__all__ = ["Condition", "plant_witnesses", "witness_conditions"]

_SATISFYING = (1, 3)  # fewest and most tuples that meet every condition, per query and variant
_NEAR_MISSES = 4  # most tuples that each miss one condition
_CANDIDATES = 50  # rows read when looking for one that joins
_MOST_LIMIT = 25  # a LIMIT up to this gets that many satisfying tuples and a couple more


@dataclass(frozen=True)
class Condition:
    alias: str  # the FROM item the column belongs to (lower-case)
    column: str
    hit: object  # a value that meets the condition
    miss: object | None  # a value just outside it (None: none known)


@dataclass(frozen=True)
class _Source:
    alias: str
    table: str  # as the query spells it
    links: tuple[tuple[str, str, str], ...]  # (own column, earlier alias, its column) equalities


@dataclass(frozen=True)
class _Scope:
    sources: tuple[_Source, ...]
    conditions: tuple[Condition, ...]
    limit: int | None = None  # the query's LIMIT: more satisfying rows than it, to test it
    groups: tuple[tuple[str, str], ...] = ()  # GROUP BY columns as (alias, column)
    cases: tuple[Condition, ...] = ()  # CASE WHEN conditions of the select list
    formulas: tuple["_Formula", ...] = ()  # `<formula of columns> <op> <number>` comparisons
    aggregated: tuple["_Formula", ...] = ()  # arguments of SUM/AVG/MIN/MAX in the select list


@dataclass(frozen=True)
class _Formula:
    """`expr <op> target`, where expr computes over one or two columns of the scope."""

    expr: exp.Expr
    columns: tuple[tuple[str, str], ...]  # (alias, column) as they appear in expr
    target: float


def plant_witnesses(path: Path, sql: str, rng: random.Random, only_witnesses: bool = False) -> int:
    """Edit the SQLite variant at `path` so `sql`'s filters meet and narrowly miss joined rows;
    return the number of tuples written. A query sqlglot cannot read is left alone.

    `only_witnesses`: afterwards delete every other row of the query's tables, so the variant
    holds nothing but rows that meet the filters. There a near miss that selects other rows
    (`<>` for `=`, a dropped join condition) finds none, which tells it from the gold even
    when the query's output does not depend on which rows it read."""
    try:
        scopes = _scopes(sqlglot.parse_one(sql, read="sqlite"))
    except sqlglot.errors.SqlglotError:
        return 0
    if not scopes:
        return 0
    written = 0
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=rw", uri=True,
                           isolation_level=None)
    kept: dict[str, set[int]] = {}
    with closing(conn):
        conn.execute("BEGIN")
        for scope in scopes:
            written += _plant_scope(conn, scope, rng, kept)
        if only_witnesses:
            for table, rowids in kept.items():
                marks = ", ".join("?" * len(rowids))
                conn.execute(f'DELETE FROM "{table}" WHERE rowid NOT IN ({marks})', sorted(rowids))
        conn.execute("COMMIT")
    return written


def witness_conditions(sql: str) -> list[list[Condition]]:
    """The conditions each (sub)query's witnesses meet, for tests and explanations."""
    return [list(s.conditions) for s in _scopes(sqlglot.parse_one(sql, read="sqlite"))]


# -- reading the query ------------------------------------------------------------------------


def _scopes(tree: exp.Expr) -> list[_Scope]:
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    scopes = []
    for select in tree.find_all(exp.Select):
        sources = _sources(select, ctes)
        if not sources:
            continue
        where = select.args.get("where")
        conditions = _conditions(where.this, sources) if where is not None else []
        limit = select.args.get("limit")
        count = literal_value(limit.expression) if limit is not None else None
        count = count if isinstance(count, int) and 0 < count <= _MOST_LIMIT else None
        group = select.args.get("group")
        keys = [c for c in (group.expressions if group else ()) if isinstance(c, exp.Column)]
        groups = tuple((a, c.name) for c in keys if (a := _alias_of(c, sources)))
        whens = [w.this for e in select.expressions for w in e.find_all(exp.If)
                 if w.find_ancestor(exp.Select) is select]
        cases = tuple(c for w in whens for c in _conditions(w, sources))
        filters = [*whens, where.this] if where is not None else whens
        formulas = tuple(f for node in filters for f in _formulas(node, sources))
        aggregated = tuple(a for a in (_argument(a, sources) for e in select.expressions
                                       for a in e.find_all(exp.Sum, exp.Avg, exp.Min, exp.Max)
                                       if a.find_ancestor(exp.Select) is select) if a is not None)
        if conditions or groups or cases or formulas:
            scopes.append(_Scope(tuple(sources), tuple(conditions), count, groups, cases,
                                 formulas, aggregated))
    return scopes


_FORMULA_COLUMNS = 2  # most columns a formula may use for its boundary to be searched


def _formulas(node: exp.Expr, sources: list[_Source]) -> list[_Formula]:
    """The comparisons of a formula with a number (`a * 100.0 / b > 90`) in a condition."""
    found = []
    for comparison in node.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ):
        left, right = comparison.this, comparison.expression
        for expr, other in ((left, right), (right, left)):
            target = literal_value(other)
            if isinstance(expr, exp.Column) or not isinstance(target, (int, float)):
                continue
            if isinstance(target, bool) or expr.find(exp.Select, exp.AggFunc) is not None:
                continue
            columns = list(expr.find_all(exp.Column))
            places = [(_alias_of(c, sources), c.name) for c in columns]
            if not columns or any(a is None for a, _ in places):
                continue
            if len(set(places)) <= _FORMULA_COLUMNS:
                found.append(_Formula(expr, tuple(places), float(target)))
    return found


def _argument(aggregate: exp.Expr, sources: list[_Source]) -> _Formula | None:
    """An aggregate's argument as a formula of at most two columns (target unused)."""
    expr = aggregate.this
    if not isinstance(expr, exp.Expr) or expr.find(exp.Select, exp.AggFunc) is not None:
        return None
    places = [(_alias_of(c, sources), c.name) for c in expr.find_all(exp.Column)]
    if not places or any(a is None for a, _ in places) or len(set(places)) > _FORMULA_COLUMNS:
        return None
    return _Formula(expr, tuple(places), 0.0)


# Values the aggregated formula takes on the rows of the shared group, in turn: far apart, so
# the group's SUM, AVG, MIN and MAX differ from each other and from every other group's.
_SPREAD = (1000.0, 1.0, 400.0)


def _sources(select: exp.Select, ctes: set[str]) -> list[_Source] | None:
    """The real tables of the FROM clause with their join equalities, or None when a source
    is a subquery or CTE (its rows cannot be edited directly)."""
    from_ = select.args.get("from_")
    if from_ is None:
        return None
    items = [(from_.this, None, ())] + [(j.this, j.args.get("on"), j.args.get("using") or ())
                                        for j in select.args.get("joins") or ()]
    sources: list[_Source] = []
    for item, on, using in items:
        if not isinstance(item, exp.Table) or item.name.lower() in ctes or not item.name:
            return None
        alias = item.alias_or_name.lower()
        earlier = {s.alias for s in sources}
        links = tuple(_links(on, alias, earlier)) if on is not None else ()
        # JOIN ... USING (c): c equals the same column of the table before it.
        links += tuple((c.name, sources[-1].alias, c.name) for c in using if sources)
        sources.append(_Source(alias, item.name, links))
    return sources


def _links(on: exp.Expr, alias: str, earlier: set[str]):
    for eq in on.find_all(exp.EQ):
        left, right = eq.this, eq.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        for own, other in ((left, right), (right, left)):
            if own.table.lower() == alias and other.table.lower() in earlier:
                yield own.name, other.table.lower(), other.name


def _conditions(where: exp.Expr, sources: list[_Source]) -> list[Condition]:
    """The `column <op> literal` conditions of a conjunction (of a disjunction: its first)."""
    if isinstance(where, exp.Paren):
        return _conditions(where.this, sources)
    if isinstance(where, exp.And):
        return _conditions(where.this, sources) + _conditions(where.expression, sources)
    if isinstance(where, exp.Or):
        return _conditions(where.this, sources)[:1] or _conditions(where.expression, sources)[:1]
    condition = _condition(where, sources)
    return [condition] if condition is not None else []


_FLIPPED = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE,
            exp.EQ: exp.EQ, exp.NEQ: exp.NEQ}


def _condition(node: exp.Expr, sources: list[_Source]) -> Condition | None:
    kind = type(node)
    column, value = None, None
    if kind in _FLIPPED:
        column, value = node.this, literal_value(node.expression)
        if not isinstance(column, (exp.Column, exp.TimeToStr)):
            column, value, kind = node.expression, literal_value(node.this), _FLIPPED[kind]
        if isinstance(column, exp.TimeToStr):
            return _date_part_condition(column, kind, value, sources)
    elif isinstance(node, exp.In) and node.expressions:
        column, value = node.this, literal_value(node.expressions[0])
    elif isinstance(node, exp.Between):
        column, value = node.this, literal_value(node.args.get("low"))
        kind = exp.GTE
    elif isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        if isinstance(node.this, exp.Column):
            alias = _alias_of(node.this, sources)
            return Condition(alias, node.this.name, None, None) if alias else None
    elif isinstance(node, (exp.Like, exp.ILike)):
        column, pattern = node.this, literal_value(node.expression)
        if isinstance(pattern, str):
            value = like_example(pattern)
            kind = exp.EQ
    if not isinstance(column, exp.Column) or value is None:
        return None
    alias = _alias_of(column, sources)
    if alias is None:
        return None
    bounds = _hit_and_miss(kind, value)
    if bounds is None:
        return None
    return Condition(alias, column.name, *bounds)


# strftime formats whose output, completed this way, is a date the format maps back to it.
_DATE_COMPLETIONS = {"%Y": "{}-06-15", "%Y-%m": "{}-15", "%Y-%m-%d": "{}"}


def _date_part_condition(node: exp.TimeToStr, kind: type, value: object,
                         sources: list[_Source]) -> Condition | None:
    """`strftime('%Y', d) = '2023'` (a year filter, common in SQLite): d gets a date of that
    year, and a date of the next as the near miss."""
    column = node.this.this if isinstance(node.this, exp.TsOrDsToTimestamp) else node.this
    fmt = literal_value(node.args.get("format"))
    completion = _DATE_COMPLETIONS.get(fmt) if isinstance(fmt, str) else None
    if not isinstance(column, exp.Column) or not isinstance(value, str) or not completion:
        return None
    bounds = _hit_and_miss(kind, value)
    alias = _alias_of(column, sources)
    if bounds is None or alias is None:
        return None
    dates = [completion.format(v) if v is not None else None for v in bounds]
    for date in dates:
        try:
            if date is not None:
                dt.date.fromisoformat(date)
        except ValueError:
            return None
    return Condition(alias, column.name, *dates)


def _alias_of(column: exp.Column, sources: list[_Source]) -> str | None:
    qualifier = column.table.lower()
    if qualifier:
        return qualifier if any(s.alias == qualifier for s in sources) else None
    # Unqualified: certain only with one table; with several, the pass tries the first that
    # has the column when it writes (see _column_of).
    return sources[0].alias if len(sources) == 1 else f"?{column.name.lower()}"


def _hit_and_miss(kind: type, value: object) -> tuple[object, object | None] | None:
    near = near_values(value)
    if kind is exp.EQ:
        return value, near[0] if near else None
    if kind is exp.NEQ:
        return (near[0], value) if near else None
    step = _step(value)
    if step is None:
        return None
    above, below = step(value, 1), step(value, -1)
    if kind is exp.GT:
        return above, value
    if kind is exp.GTE:
        return value, below
    if kind is exp.LT:
        return below, value
    return value, above  # LTE


def _step(value: object):
    """How to move a value one unit up or down, for numbers and ISO dates; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return lambda v, d: v + d
    if isinstance(value, str):
        for fmt, unit in (("%Y-%m-%d", dt.timedelta(days=1)),
                          ("%Y-%m-%d %H:%M:%S", dt.timedelta(seconds=1))):
            try:
                dt.datetime.strptime(value, fmt)
            except ValueError:
                continue
            return lambda v, d, fmt=fmt, unit=unit: (
                dt.datetime.strptime(v, fmt) + d * unit).strftime(fmt)
        if value.isdigit():
            return lambda v, d: str(int(v) + d)
    return None


# -- editing the variant ----------------------------------------------------------------------


def _plant_scope(conn: sqlite3.Connection, scope: _Scope, rng: random.Random,
                 kept: dict[str, set[int]]) -> int:
    """Write the scope's witness tuples; the rowids of those meeting every condition go
    into `kept` (by table)."""
    columns = {s.alias: _table_columns(conn, s.table) for s in scope.sources}
    if any(cols is None for cols in columns.values()):
        return 0  # an unknown table or one WITHOUT ROWID
    conditions = [c for c in (_placed(c, scope, columns) for c in scope.conditions) if c]
    if scope.conditions and not conditions:
        return 0  # the filters name columns the tables do not have
    join_columns = {(s.alias, own.lower()) for s in scope.sources for own, _, _ in s.links}
    join_columns |= {(a, c.lower()) for s in scope.sources for _, a, c in s.links}
    pinned: dict[str, list[tuple[str, object]]] = {}
    for c in conditions:
        if (c.alias, c.column.lower()) in join_columns and c.hit is not None:
            pinned.setdefault(c.alias, []).append((c.column, c.hit))
    conditions = [c for c in conditions if (c.alias, c.column.lower()) not in join_columns]
    fewest, most = (scope.limit, scope.limit + 2) if scope.limit else _SATISFYING
    plans = [None] * rng.randint(fewest, most)  # None: miss nothing
    misses = [i for i, c in enumerate(conditions) if c.miss is not None]
    plans += rng.sample(misses, min(_NEAR_MISSES, len(misses)))
    groups = [g for g in (_placed(Condition(a, c, None, None), scope, columns)
                          for a, c in scope.groups) if g and (g.alias, g.column.lower())
              not in join_columns]
    group_values: list[object] | None = None
    written = 0
    for n, missed in enumerate(plans):
        rows = _joined_tuple(conn, scope, rng, pinned)
        if rows is None:
            continue
        for i, condition in enumerate(conditions):
            value = condition.miss if i == missed else condition.hit
            _set(conn, scope, rows, condition.alias, condition.column, value)
        if missed is None:
            for case in scope.cases:
                value = case.hit if n % 2 == 0 or case.miss is None else case.miss
                placed = _placed(case, scope, columns)
                if placed is not None and (placed.alias, placed.column.lower()) not in join_columns:
                    _set(conn, scope, rows, placed.alias, placed.column, value)
        if missed is None and groups:
            if group_values is None:
                group_values = [_value(conn, scope, rows, g.alias, g.column) for g in groups]
            else:
                for group, value in zip(groups, group_values):
                    _set(conn, scope, rows, group.alias, group.column, value)
            taken = {(c.alias, c.column.lower()) for c in conditions} | join_columns
            taken |= {(g.alias, g.column.lower()) for g in groups}
            for argument in scope.aggregated:
                _reach(conn, scope, rows, argument, _SPREAD[n % len(_SPREAD)], taken, columns)
        if missed is None:
            for source in scope.sources:
                kept.setdefault(source.table, set()).add(rows[source.alias])
        if n == 0:
            for source in scope.sources:
                copy = _duplicate(conn, source.table, rows[source.alias])
                if copy is not None:
                    kept[source.table].add(copy)
        written += 1
    # A formula compared with a number gets tuples on which it equals the number, and lies
    # half a unit above and below it: `>` against `>=`, and the number changed by one, part.
    taken = {(c.alias, c.column.lower()) for c in conditions} | join_columns
    for formula in scope.formulas:
        for goal in (formula.target, formula.target + 0.5, formula.target - 0.5):
            rows = _joined_tuple(conn, scope, rng, pinned)
            if rows is None:
                break
            for condition in conditions:
                _set(conn, scope, rows, condition.alias, condition.column, condition.hit)
            _reach(conn, scope, rows, formula, goal, taken, columns)
            for source in scope.sources:
                kept.setdefault(source.table, set()).add(rows[source.alias])
            written += 1
    return written


def _reach(conn, scope: _Scope, rows: dict[str, int], formula: _Formula, goal: float,
           taken: set[tuple[str, str]], columns: dict[str, set[str]]) -> bool:
    """Give the formula's columns values on which it equals `goal`: exactly, from a small grid
    of round numbers, or else by solving for its last column (a secant step, exact for the
    linear and proportional formulas queries use)."""
    places = []
    for alias, column in dict.fromkeys(formula.columns):
        placed = _placed(Condition(alias, column, None, None), scope, columns)
        if placed is None or (placed.alias, placed.column.lower()) in taken:
            return False
        places.append((placed.alias, placed.column))
    for values in itertools.product(_grid(goal), repeat=len(places)):
        if _evaluate(conn, formula, dict(zip(places, values))) == goal:
            for (alias, column), v in zip(places, values):
                _set(conn, scope, rows, alias, column, v)
            return True
    fixed = {p: _value(conn, scope, rows, *p) for p in places[:-1]}
    if any(not isinstance(v, (int, float)) for v in fixed.values()):
        return False
    last = places[-1]
    e1, e2 = (_evaluate(conn, formula, {**fixed, last: x}) for x in (1, 2))
    if e1 is None or e2 is None or e1 == e2:
        return False
    x = 1 + (goal - e1) / (e2 - e1)
    reached = _evaluate(conn, formula, {**fixed, last: x})
    if reached is None or abs(reached - goal) > 1e-9 * max(1.0, abs(goal)):
        return False
    for (alias, column), v in {**fixed, last: x}.items():
        _set(conn, scope, rows, alias, column, v)
    return True


def _evaluate(conn: sqlite3.Connection, formula: _Formula,
              assigned: dict[tuple[str, str], object]) -> float | None:
    """The formula's value with its columns replaced by the assigned numbers."""
    expr = formula.expr.copy()
    for node in list(expr.find_all(exp.Column)):
        key = next(((a, c) for (a, c) in assigned if c.lower() == node.name.lower()
                    and (not node.table or node.table.lower() == a)), None)
        if key is None:
            return None
        number = assigned[key]
        literal = exp.Literal.number(repr(float(number)) if isinstance(number, float) else number)
        node.replace(exp.Paren(this=literal) if float(number) < 0 else literal)
    try:
        (value,) = conn.execute(f"SELECT {expr.sql(dialect='sqlite')}").fetchone()
    except sqlite3.DatabaseError:
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _grid(target: float) -> list[float | int]:
    """Round numbers and the target's own multiples: enough for ratios and percentages."""
    values = [1, 2, 4, 5, 10, 20, 50, 100, 1000, target, target * 10, target * 100, target / 10,
              target * 2, target / 2]
    if target:
        values += [100 / target, 1 / target]
    numbers = []
    for v in values:
        v = int(v) if float(v).is_integer() else v
        if v not in numbers:
            numbers.append(v)
    return numbers


def _set(conn, scope: _Scope, rows: dict[str, int], alias: str, column: str, value) -> None:
    table = next(s.table for s in scope.sources if s.alias == alias)
    _try(conn, f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (value, rows[alias]))


def _duplicate(conn: sqlite3.Connection, table: str, rowid: int) -> int | None:
    """Insert a copy of the row without its key and unique columns (they get new values or
    NULL), so a join through its references still finds it; return the copy's rowid."""
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    unique = {c.lower() for key in unique_keys(conn, table) for c in key}
    names = ", ".join(f'"{r[1]}"' for r in info if r[1].lower() not in unique)
    if not names:
        return None
    try:
        cursor = conn.execute(f'INSERT INTO "{table}" ({names}) SELECT {names} FROM "{table}" '
                              f"WHERE rowid = ?", (rowid,))
    except sqlite3.DatabaseError:
        return None
    return cursor.lastrowid


def _table_columns(conn: sqlite3.Connection, table: str) -> set[str] | None:
    try:
        conn.execute(f'SELECT rowid FROM "{table}" LIMIT 0')
    except sqlite3.DatabaseError:
        return None
    return {r[1].lower() for r in conn.execute(f'PRAGMA table_info("{table}")')}


def _placed(condition: Condition, scope: _Scope, columns: dict[str, set[str]]) -> Condition | None:
    """The condition with its alias settled: an unqualified column goes to the first table
    that has it."""
    if not condition.alias.startswith("?"):
        known = columns.get(condition.alias, set())
        return condition if condition.column.lower() in known else None
    for source in scope.sources:
        if condition.column.lower() in columns[source.alias]:
            return Condition(source.alias, condition.column, condition.hit, condition.miss)
    return None


def _joined_tuple(conn: sqlite3.Connection, scope: _Scope, rng: random.Random,
                  pinned: dict[str, list[tuple[str, object]]] | None = None) -> dict | None:
    """A rowid per alias such that the join equalities hold, editing references if needed.
    `pinned`: alias -> (column, value) its row must have (a filter on a join column, such as
    `cars.car_id = 1`, which cannot be written without breaking the join)."""
    chosen: dict[str, int] = {}
    pinned = pinned or {}
    for source in scope.sources:
        table = f'"{source.table}"'
        if source.alias in chosen:  # a table joined twice under one name: nothing to add
            continue
        fixed = pinned.get(source.alias, [])
        wanted = [(own, _value(conn, scope, chosen, alias, col)) for own, alias, col in source.links]
        where = " AND ".join(f'"{own}" = ?' for own, _ in [*wanted, *fixed]) or "1"
        found = [r[0] for r in conn.execute(
            f"SELECT rowid FROM {table} WHERE {where} LIMIT {_CANDIDATES}",
            [v for _, v in [*wanted, *fixed]])]
        if found:
            chosen[source.alias] = rng.choice(found)
            continue
        where = " AND ".join(f'"{own}" = ?' for own, _ in fixed) or "1"
        found = [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {where} "
                                            f"LIMIT {_CANDIDATES}", [v for _, v in fixed])]
        if not found:
            return None
        rowid = chosen[source.alias] = rng.choice(found)
        keys = _primary_key(conn, source.table)
        for own, alias, column in source.links:
            if own.lower() in keys and _repoint(conn, scope, chosen, alias, column, source, own):
                continue  # the earlier row now refers to this one's key
            value = _value(conn, scope, chosen, alias, column)
            if not _try(conn, f'UPDATE {table} SET "{own}" = ? WHERE rowid = ?', (value, rowid)):
                return None
    return chosen


def _repoint(conn, scope: _Scope, chosen: dict[str, int], alias: str, column: str,
             source: _Source, own: str) -> bool:
    """Set the earlier row's reference column to this row's key, unless it is a key itself
    or an earlier join depends on it."""
    earlier = next(s for s in scope.sources if s.alias == alias)
    if column.lower() in _primary_key(conn, earlier.table):
        return False
    if any(a == alias and c.lower() == column.lower() for s in scope.sources for _, a, c in s.links
           if s is not source) or any(o.lower() == column.lower() for o, _, _ in earlier.links):
        return False
    value = _value(conn, scope, chosen, source.alias, own)
    return _try(conn, f'UPDATE "{earlier.table}" SET "{column}" = ? WHERE rowid = ?',
                (value, chosen[alias]))


def unique_keys(conn: sqlite3.Connection, table: str) -> list[tuple[str, ...]]:
    """The table's unique column sets: its primary key, then each UNIQUE index."""
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    primary = tuple(r[1] for r in sorted(info, key=lambda r: r[5]) if r[5])
    keys = [primary] if primary else []
    for index in conn.execute(f'PRAGMA index_list("{table}")').fetchall():
        if index[2]:  # unique
            named = conn.execute(f'PRAGMA index_info("{index[1]}")').fetchall()
            keys.append(tuple(r[2] for r in named if r[2] is not None))
    return keys


def _primary_key(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1].lower() for r in conn.execute(f'PRAGMA table_info("{table}")') if r[5]}


def _value(conn, scope: _Scope, chosen: dict[str, int], alias: str, column: str) -> object:
    table = next(s.table for s in scope.sources if s.alias == alias)
    row = conn.execute(f'SELECT "{column}" FROM "{table}" WHERE rowid = ?', (chosen[alias],))
    return row.fetchone()[0]


def _try(conn: sqlite3.Connection, sql: str, params: tuple) -> bool:
    try:
        conn.execute(sql, params)
    except sqlite3.DatabaseError:  # UNIQUE, NOT NULL or CHECK: this witness goes without it
        return False
    return True
