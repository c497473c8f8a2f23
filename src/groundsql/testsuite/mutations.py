"""Near misses of a query: the mutations a test suite must tell apart from the gold.

Zhong, Yu and Klein (2020) distill a test suite by generating, for each gold query, many
queries that differ from it by one small change (an operator, a constant, a dropped condition,
an aggregate, ...) and keeping the database variants on which the gold and its near misses
return different results. A wrong prediction is usually such a near miss, so a suite that
kills them all rarely lets a wrong prediction pass.

Each rule below is a small pure function `rule(tree, ...) -> Iterator[tree]` yielding copies of
the tree with one node changed; `mutations` composes the table RULES, passing each rule only
the keyword arguments it names (schema, dialect), as sqlglot's optimizer does with its rules.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from itertools import zip_longest

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from groundsql.testsuite.literals import Schema, near_values, resolve_column, scope_tables

__all__ = ["KINDS", "Keys", "Mutation", "RULES", "mutations"]


@dataclass(frozen=True)
class Mutation:
    kind: str  # which rule made it, one of KINDS
    sql: str  # the near miss, rendered in the query's dialect


Keys = dict[str, list[tuple[str, ...]]]
"""Table name -> its unique column sets (primary key, UNIQUE constraints), any case."""

Rule = Callable[..., Iterator[exp.Expr]]
Edit = Callable[[exp.Expr], Iterable[exp.Expr | None]]


def mutations(
    sql: str,
    dialect: str = "sqlite",
    limit: int = 200,
    schema: Schema | None = None,
    keys: Keys | None = None,
) -> list[Mutation]:
    """Near misses of `sql`: each differs from it by one small change, parses in `dialect`,
    and is neither the original nor a repeat (compared after re-parsing and rendering).

    The order is deterministic and round-robin over KINDS (one of each kind, then a second of
    each, ...), so the first `limit` keep a spread of kinds. With `schema` (table -> columns),
    join and grouping columns can be changed to other columns of the same table. With `keys`
    (table -> its unique column sets), changes that cannot matter on a query pinned to one row
    by its key (`WHERE id = 1`: SUM, MIN, MAX and AVG agree, DISTINCT is moot) are not made:
    such an equivalent "near miss" can never be told apart and only dilutes the kill share.
    Raises sqlglot's ParseError when `sql` does not parse.
    """
    tree = sqlglot.parse_one(sql, read=dialect)
    seen = {_canonical(tree, dialect)}
    context = {"schema": schema, "dialect": dialect, "keys": keys}
    per_kind: list[list[Mutation]] = []
    for kind, rule in RULES:
        found: list[Mutation] = []
        # No kind can contribute more than `limit` to a round-robin of `limit`.
        for mutant in _apply(rule, tree, context):
            if len(found) >= limit:
                break
            rendered = _render(mutant, dialect)
            if rendered is None:
                continue
            text, canonical = rendered
            if canonical not in seen:
                seen.add(canonical)
                found.append(Mutation(kind, text))
        per_kind.append(found)
    spread = [m for rank in zip_longest(*per_kind) for m in rank if m is not None]
    return spread[: max(limit, 0)]


def _apply(rule: Rule, tree: exp.Expr, context: dict) -> Iterator[exp.Expr]:
    wanted = inspect.signature(rule).parameters
    return rule(tree, **{key: value for key, value in context.items() if key in wanted})


def _render(tree: exp.Expr, dialect: str) -> tuple[str, str] | None:
    """(sql, canonical form) of a mutant, or None when it does not render or re-parse."""
    try:
        text = tree.sql(dialect=dialect)
        return text, _canonical(sqlglot.parse_one(text, read=dialect), dialect)
    except (SqlglotError, ValueError, TypeError):
        return None


def _canonical(tree: exp.Expr, dialect: str) -> str:
    return tree.sql(dialect=dialect, normalize=True)


# The machinery: one node of a copy replaced.

def _each(tree: exp.Expr, types: type | tuple[type, ...], edit: Edit) -> Iterator[exp.Expr]:
    """For each node of `types` and each replacement edit(node) proposes, a copy of the tree
    with that node replaced (None: removed).

    `edit` reads the original node and must return new nodes (copies), never change it. The
    node is found again in the copy by its position in the walk, which copying preserves.
    """
    for index, node in enumerate(tree.walk()):
        if not isinstance(node, types):
            continue
        for replacement in edit(node):
            copy = tree.copy()
            target = next(n for i, n in enumerate(copy.walk()) if i == index)
            yield _replace(copy, target, replacement)


def _replace(root: exp.Expr, target: exp.Expr, replacement: exp.Expr | None) -> exp.Expr:
    if target is root:
        return replacement if replacement is not None else root
    if replacement is None:
        target.pop()
    else:
        target.replace(_fit(replacement, target.parent))
    return root


def _fit(node: exp.Expr, parent: exp.Expr | None) -> exp.Expr:
    """Parenthesize where the renderer would otherwise change the meaning: sqlglot prints a
    tree as it is, so an OR put under an AND (or anything logical under NOT) needs brackets."""
    loose = (isinstance(parent, exp.Not) and isinstance(node, exp.Connector)) or (
        isinstance(parent, exp.And) and isinstance(node, exp.Or)
    )
    return exp.Paren(this=node) if loose else node


def _is_join_key(node: exp.Expr) -> bool:
    """`a.x = b.y`: changing it is the join-column rule's business; dropping it or making it
    `!=` gives a cross join, a near miss nobody writes and a result too big to compare."""
    return (
        isinstance(node, exp.EQ)
        and isinstance(node.this, exp.Column)
        and isinstance(node.expression, exp.Column)
    )


# The rules.

_OPERATOR_SWAPS: dict[type, tuple[type, ...]] = {
    exp.EQ: (exp.NEQ,),
    exp.NEQ: (exp.EQ,),
    exp.LT: (exp.LTE, exp.GT),
    exp.LTE: (exp.LT, exp.GTE),
    exp.GT: (exp.GTE, exp.LT),
    exp.GTE: (exp.GT, exp.LTE),
}


def swapped_comparison(tree: exp.Expr) -> Iterator[exp.Expr]:
    """= <-> !=, < <-> <=, > <-> >=, < <-> >, ...: the off-by-one and wrong-direction filters."""

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        if _is_join_key(node):
            return
        for other in _OPERATOR_SWAPS[type(node)]:
            yield other(this=node.this.copy(), expression=node.expression.copy())

    return _each(tree, tuple(_OPERATOR_SWAPS), edit)


def dropped_predicate(tree: exp.Expr) -> Iterator[exp.Expr]:
    """One conjunct or disjunct left out (of WHERE, HAVING or ON); a lone WHERE or HAVING
    condition removed with its clause. Join keys stay (see _is_join_key)."""

    def edit_chain(node: exp.Expr) -> Iterator[exp.Expr]:
        if type(node.parent) is type(node):
            return  # not the top of its chain: the top drops each operand once
        operands = _operands(node)
        for i, operand in enumerate(operands):
            if _is_join_key(operand):
                continue
            rest = [o.copy() for j, o in enumerate(operands) if j != i]
            yield _chain(type(node), rest)

    def edit_clause(node: exp.Expr) -> Iterator[exp.Expr | None]:
        if not isinstance(node.this, exp.Connector) and not _is_join_key(node.this):
            yield None

    yield from _each(tree, exp.Connector, edit_chain)
    yield from _each(tree, (exp.Where, exp.Having), edit_clause)


def _operands(node: exp.Expr) -> list[exp.Expr]:
    """a AND b AND c -> [a, b, c] (brackets end a chain: they hold a different one)."""
    if type(node.this) is type(node):
        head = _operands(node.this)
    else:
        head = [node.this]
    if type(node.expression) is type(node):
        return head + _operands(node.expression)
    return head + [node.expression]


def _chain(kind: type, operands: list[exp.Expr]) -> exp.Expr:
    chained = operands[0]
    for operand in operands[1:]:
        chained = kind(this=chained, expression=operand)
    return chained


# Where a literal is a filter constant (LIKE patterns have their own rule).
_CONSTANT_PARENTS = (*_OPERATOR_SWAPS, exp.In, exp.Between, exp.NullSafeEQ, exp.NullSafeNEQ)


def changed_constant(tree: exp.Expr) -> Iterator[exp.Expr]:
    """A filter constant changed: numbers by one either way; strings to another string the
    query compares with, or to a string just beside (near_values)."""
    strings = _filter_strings(tree)

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        if not _is_filter_constant(node):
            return
        if node.is_string:
            others = [s for s in strings if s != node.this]
            for value in [*others, *near_values(node.this)]:
                yield exp.Literal.string(value)
        else:
            try:
                number = Decimal(node.this)
            except InvalidOperation:
                return
            for value in near_values(number):
                if value >= 0:
                    yield exp.Literal.number(value)
                elif not isinstance(node.parent, exp.Neg):  # `- -1` would render as a comment
                    yield exp.Neg(this=exp.Literal.number(-value))

    return _each(tree, exp.Literal, edit)


def _is_filter_constant(node: exp.Expr) -> bool:
    operand = node.parent if isinstance(node.parent, exp.Neg) else node
    return isinstance(operand.parent, _CONSTANT_PARENTS)


def _filter_strings(tree: exp.Expr) -> list[str]:
    values: list[str] = []
    for node in tree.find_all(exp.Literal):
        if node.is_string and _is_filter_constant(node) and node.this not in values:
            values.append(node.this)
    return values


def swapped_connective(tree: exp.Expr) -> Iterator[exp.Expr]:
    """AND <-> OR, one connective at a time."""

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        other = exp.Or if isinstance(node, exp.And) else exp.And
        yield other(this=node.this.copy(), expression=node.expression.copy())

    return _each(tree, (exp.And, exp.Or), edit)


_AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)


def changed_aggregation(
    tree: exp.Expr, schema: Schema | None = None, keys: Keys | None = None
) -> Iterator[exp.Expr]:
    """COUNT/SUM/AVG/MIN/MAX swapped among themselves; COUNT(*) <-> COUNT(column)."""

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        if node.expressions or not isinstance(node.this, exp.Expr):
            return  # MAX(a, b) is a scalar function in SQLite, not an aggregate
        star = isinstance(node.this, exp.Star)
        one_row = _one_row_in(node.find_ancestor(exp.Select), keys)
        for other in _AGGREGATES:
            if other is type(node) or (star and other is not exp.Count):
                continue
            if one_row and exp.Count not in (other, type(node)):
                continue  # over one row SUM, AVG, MIN and MAX agree
            yield _aggregate(other, node.this.copy())
        if isinstance(node, exp.Count):
            if star:
                for column in _count_columns(node, schema):
                    yield _aggregate(exp.Count, column)
            elif not isinstance(node.this, exp.Distinct):
                yield _aggregate(exp.Count, exp.Star())

    return _each(tree, _AGGREGATES, edit)


def _aggregate(kind: type, argument: exp.Expr) -> exp.Expr:
    return exp.Count(this=argument, big_int=True) if kind is exp.Count else kind(this=argument)


def _count_columns(node: exp.Expr, schema: Schema | None, most: int = 3) -> list[exp.Column]:
    """Columns to count instead of rows: those the query itself uses next to the COUNT(*),
    then, with a schema, its tables' own. Only a column that can be NULL tells COUNT(col)
    from COUNT(*), and a join key never is on an inner join's rows, so keys are skipped."""
    select = node.find_ancestor(exp.Select)
    candidates = [c.copy() for c in _own_columns(select) if not _is_join_key(c.parent)]
    if schema is not None:
        sources = scope_tables(node)
        for alias, table in sources.items():
            qualifier = alias if len(sources) > 1 else None  # several tables: say which
            names = _table_columns(schema, table)
            candidates += [exp.column(name, table=qualifier) for name in names]
    unique: dict[str, exp.Column] = {}
    for column in candidates:
        unique.setdefault(column.sql(), column)
    return list(unique.values())[:most]


def _own_columns(select: exp.Expr | None) -> list[exp.Column]:
    """The columns of a SELECT that are not inside one of its subqueries."""
    if select is None:
        return []
    return [c for c in select.find_all(exp.Column) if c.find_ancestor(exp.Select) is select]


def _table_columns(schema: Schema, table: str | None) -> list[str]:
    if table is None:
        return []
    for name, columns in schema.items():
        if name.lower() == table:
            return list(columns)
    return []


def toggled_distinct(tree: exp.Expr, keys: Keys | None = None) -> Iterator[exp.Expr]:
    """SELECT DISTINCT on or off; COUNT(DISTINCT x) <-> COUNT(x) (DISTINCT dropped from any
    aggregate). Duplicates are what the official comparison counts (bag semantics)."""

    def edit_select(node: exp.Expr) -> Iterator[exp.Expr]:
        if _set_semantics(node) or _no_duplicates(node, keys):
            return  # no duplicates to drop: DISTINCT could change nothing
        toggled = node.copy()
        toggled.set("distinct", None if node.args.get("distinct") else exp.Distinct())
        yield toggled

    def edit_aggregate(node: exp.Expr) -> Iterator[exp.Expr]:
        if _one_row_in(node.find_ancestor(exp.Select), keys):
            return
        argument = node.this
        if isinstance(argument, exp.Distinct) and len(argument.expressions) == 1:
            yield _aggregate(type(node), argument.expressions[0].copy())
        elif isinstance(node, exp.Count) and isinstance(argument, exp.Column):
            yield _aggregate(exp.Count, exp.Distinct(expressions=[argument.copy()]))

    yield from _each(tree, exp.Select, edit_select)
    yield from _each(tree, _AGGREGATES, edit_aggregate)


def _one_row_in(select: exp.Expr | None, keys: Keys | None) -> bool:
    """Whether the SELECT reads at most one row: no FROM, or one table whose WHERE pins a
    unique key with equalities (`WHERE id = 1`)."""
    if select is None:
        return False
    from_ = select.args.get("from_")
    if from_ is None:
        return True
    table = from_.this
    if select.args.get("joins") or not isinstance(table, exp.Table) or not keys:
        return False
    where = select.args.get("where")
    if where is None:
        return False
    pinned = set()
    for node in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        if isinstance(node, exp.EQ):
            for column, other in ((node.this, node.expression), (node.expression, node.this)):
                if isinstance(column, exp.Column) and isinstance(other, (exp.Literal, exp.Neg)):
                    pinned.add(column.name.lower())
    unique = next((v for k, v in keys.items() if k.lower() == table.name.lower()), [])
    return any(key and {c.lower() for c in key} <= pinned for key in unique)


def _no_duplicates(select: exp.Expr, keys: Keys | None) -> bool:
    """Whether the SELECT cannot return two equal rows: it reads at most one row, aggregates
    without GROUP BY, returns all its GROUP BY columns, or a unique key of its only table."""
    if _one_row_in(select, keys):
        return True
    group = select.args.get("group")
    grouped = group is not None
    shown = {e.unalias().sql().lower() for e in select.expressions}
    if grouped and all(g.sql().lower() in shown for g in group.expressions):
        return True
    aggregated = any(
        agg.find_ancestor(exp.Select) is select and agg.find_ancestor(exp.Window) is None
        for agg in select.find_all(*_AGGREGATES)
    )
    if aggregated:
        return not grouped
    from_ = select.args.get("from_")
    table = from_.this if from_ is not None else None
    if grouped or select.args.get("joins") or not isinstance(table, exp.Table) or not keys:
        return False
    shown = {e.unalias().name.lower() for e in select.expressions
             if isinstance(e.unalias(), exp.Column)}
    unique = next((v for k, v in keys.items() if k.lower() == table.name.lower()), [])
    return any(key and {c.lower() for c in key} <= shown for key in unique)


def _set_semantics(select: exp.Expr) -> bool:
    """Whether only the set of rows of this SELECT matters: under EXISTS, IN, or a UNION,
    INTERSECT or EXCEPT without ALL."""
    parent = select.parent.parent if isinstance(select.parent, exp.Subquery) else select.parent
    if isinstance(parent, exp.SetOperation):
        return bool(parent.args.get("distinct"))
    return isinstance(parent, (exp.Exists, exp.In))


def changed_join_column(tree: exp.Expr, schema: Schema | None = None) -> Iterator[exp.Expr]:
    """One side of a join key `a.x = b.y` moved to another column of the same table.

    Needs the schema: without it the only candidates are guesses (swapping the two sides'
    column names), which mostly name columns that do not exist, and a mutation that merely
    errors tests nothing. Other key-like columns (..id) come first: they are the likely
    mistakes.
    """
    if schema is None:
        return

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        if not _is_join_key(node):
            return
        for side in ("this", "expression"):
            column = node.args[side]
            resolved = resolve_column(column, schema)
            if resolved is None:
                continue
            table, name = resolved
            for other in _key_like_first(_table_columns(schema, table)):
                if other.lower() == name:
                    continue
                changed = node.copy()
                changed.set(side, exp.column(other, table=column.args.get("table")))
                yield changed

    yield from _each(tree, exp.EQ, edit)


def _key_like_first(columns: list[str]) -> list[str]:
    return sorted(columns, key=lambda name: not name.lower().endswith("id"))


def flipped_order(tree: exp.Expr, dialect: str = "sqlite") -> Iterator[exp.Expr]:
    """ORDER BY x ASC <-> DESC, one key at a time."""
    null_ordering = Dialect.get_or_raise(dialect).NULL_ORDERING

    def default_nulls_first(desc: bool) -> bool:
        return {"nulls_are_small": not desc, "nulls_are_large": desc}.get(null_ordering, False)

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        desc = bool(node.args.get("desc"))
        flipped = node.copy()
        flipped.set("desc", not desc)
        # The parser records the dialect's default NULL placement; keep the default one for
        # the new direction, else the renderer spells out a NULLS FIRST/LAST the query lacked.
        if bool(node.args.get("nulls_first")) == default_nulls_first(desc):
            flipped.set("nulls_first", default_nulls_first(not desc))
        yield flipped

    return _each(tree, exp.Ordered, edit)


def changed_limit(tree: exp.Expr) -> Iterator[exp.Expr]:
    """LIMIT n -> n + 1, n - 1 (when n > 1), or no LIMIT."""

    def edit(node: exp.Expr) -> Iterator[exp.Expr | None]:
        count = node.args.get("expression")
        if isinstance(count, exp.Literal) and count.is_int:
            n = int(count.this)
            for other in (n + 1, n - 1):
                if other >= 1:
                    changed = node.copy()
                    changed.set("expression", exp.Literal.number(other))
                    yield changed
        yield None

    return _each(tree, exp.Limit, edit)


def changed_group_by(tree: exp.Expr, schema: Schema | None = None) -> Iterator[exp.Expr]:
    """A GROUP BY key dropped (the lone key: the whole GROUP BY) or changed to another column
    the query selects, or, with a schema, another column of the key's table."""

    def edit(node: exp.Expr) -> Iterator[exp.Expr | None]:
        keys = node.expressions
        if len(keys) == 1:
            yield None
        for i, key in enumerate(keys):
            if len(keys) > 1:
                yield _with_keys(node, [k.copy() for j, k in enumerate(keys) if j != i])
            for other in _other_group_columns(node, key, schema):
                yield _with_keys(node, [other if j == i else k.copy() for j, k in enumerate(keys)])

    return _each(tree, exp.Group, edit)


def _with_keys(group: exp.Expr, keys: list[exp.Expr]) -> exp.Expr:
    changed = group.copy()
    changed.set("expressions", keys)
    return changed


def _other_group_columns(
    group: exp.Expr, key: exp.Expr, schema: Schema | None, most: int = 3
) -> list[exp.Column]:
    select = group.parent
    current = {k.sql() for k in group.expressions}
    candidates = [
        c.copy() for p in getattr(select, "expressions", []) for c in p.find_all(exp.Column)
    ]
    if schema is not None and isinstance(key, exp.Column):
        resolved = resolve_column(key, schema)
        if resolved is not None:
            qualifier = key.args.get("table")
            for name in _table_columns(schema, resolved[0]):
                candidates.append(exp.column(name, table=qualifier.copy() if qualifier else None))
    unique: dict[str, exp.Column] = {}
    for column in candidates:
        text = column.sql()
        if text not in current and column.name.lower() != key.name.lower():
            unique.setdefault(text, column)
    return list(unique.values())[:most]


def toggled_in(tree: exp.Expr) -> Iterator[exp.Expr]:
    """IN <-> NOT IN (of a list or a subquery)."""
    return _toggled_not(tree, exp.In)


def toggled_exists(tree: exp.Expr) -> Iterator[exp.Expr]:
    """EXISTS <-> NOT EXISTS."""
    return _toggled_not(tree, exp.Exists)


def _toggled_not(tree: exp.Expr, kind: type) -> Iterator[exp.Expr]:
    def negate(node: exp.Expr) -> Iterator[exp.Expr]:
        if not isinstance(node.parent, exp.Not):
            yield exp.Not(this=node.copy())

    def unnegate(node: exp.Expr) -> Iterator[exp.Expr]:
        if isinstance(node.this, kind):
            yield node.this.copy()

    yield from _each(tree, kind, negate)
    yield from _each(tree, exp.Not, unnegate)


def changed_like(tree: exp.Expr) -> Iterator[exp.Expr]:
    """'%x%' -> 'x%' or '%x'; 'x%' or '%x' -> '%x%'; 'x' -> '%x%': contains vs starts/ends."""

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            return
        for other in _like_variants(pattern.this):
            changed = node.copy()
            changed.set("expression", exp.Literal.string(other))
            yield changed

    return _each(tree, (exp.Like, exp.ILike), edit)


def _like_variants(pattern: str) -> list[str]:
    core = pattern.strip("%")
    if not core:
        return []
    starts, ends = pattern.startswith("%"), pattern.endswith("%")
    if starts and ends:
        return [core + "%", "%" + core]
    if starts or ends:
        return ["%" + core + "%"]
    return ["%" + pattern + "%"]


def between_bounds(tree: exp.Expr) -> Iterator[exp.Expr]:
    """x BETWEEN a AND b (inclusive) -> x > a AND x <= b, and x >= a AND x < b."""

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        value, low, high = node.this, node.args.get("low"), node.args.get("high")
        if low is None or high is None:
            return
        for above, below in ((exp.GT, exp.LTE), (exp.GTE, exp.LT)):
            yield exp.Paren(
                this=exp.And(
                    this=above(this=value.copy(), expression=low.copy()),
                    expression=below(this=value.copy(), expression=high.copy()),
                )
            )

    return _each(tree, exp.Between, edit)


def changed_set_operation(tree: exp.Expr) -> Iterator[exp.Expr]:
    """UNION <-> UNION ALL; INTERSECT <-> EXCEPT."""

    def edit(node: exp.Expr) -> Iterator[exp.Expr]:
        changed = node.copy()
        if isinstance(node, exp.Union):  # Intersect and Except are siblings, not subclasses
            changed.set("distinct", not node.args.get("distinct"))
            yield changed
        else:
            other = exp.Except if isinstance(node, exp.Intersect) else exp.Intersect
            yield other(**changed.args)

    return _each(tree, (exp.Union, exp.Intersect, exp.Except), edit)


# The table: kind -> rule, in the order the kinds take turns.
RULES: tuple[tuple[str, Rule], ...] = (
    ("comparison", swapped_comparison),
    ("dropped_predicate", dropped_predicate),
    ("constant", changed_constant),
    ("and_or", swapped_connective),
    ("aggregation", changed_aggregation),
    ("distinct", toggled_distinct),
    ("join_column", changed_join_column),
    ("order", flipped_order),
    ("limit", changed_limit),
    ("group_by", changed_group_by),
    ("in", toggled_in),
    ("exists", toggled_exists),
    ("like", changed_like),
    ("between", between_bounds),
    ("set_operation", changed_set_operation),
)
KINDS: tuple[str, ...] = tuple(kind for kind, _ in RULES)
