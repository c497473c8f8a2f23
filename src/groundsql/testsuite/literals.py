"""The literals a query compares its columns with, so a database filler can plant them.

A random database rarely holds the one value a query filters on (`country = 'France'`,
`age > 30`), so the gold and most of its near misses return the same empty result there and no
mutation is told apart. Zhong, Yu and Klein (2020) plant the query's own literals, and values
just beside them, in the synthetic variants; this module finds them: which column of which
table each literal is compared with (query_literals), and what lies just beside (near_values).
"""

from __future__ import annotations

from decimal import Decimal

import sqlglot
from sqlglot import exp

__all__ = ["like_example", "near_values", "query_literals", "resolve_column", "Schema"]

Schema = dict[str, list[str]]
"""Table name -> its column names (any case; compared case-insensitively)."""

# Predicates whose literal operands constrain the rows of a column.
_COMPARISONS = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ, exp.GT, exp.GTE, exp.LT,
                exp.LTE)
_PATTERNS = (exp.Like, exp.ILike)
_INT64 = 2**63


def query_literals(
    sql: str, dialect: str, schema: Schema | None = None
) -> dict[tuple[str, str], list[object]]:
    """(table, column) -> the literal values the query compares that column with, in order of
    appearance and without repeats; table and column lower-case, aliases resolved.

    Looked at: comparisons, IN lists, BETWEEN bounds and LIKE patterns (as a value that
    matches them) in WHERE, HAVING, JOIN ... ON and CASE WHEN, of every (sub)query. A column whose table
    cannot be told (unqualified, several tables in scope and no schema saying which has it)
    is skipped. Numbers come back as int or float, strings as str.
    Raises sqlglot's ParseError when the SQL does not parse.
    """
    tree = sqlglot.parse_one(sql, read=dialect)
    found: dict[tuple[str, str], list[object]] = {}
    for column, value in _column_literals(tree):
        key = resolve_column(column, schema)
        if key is None or value is None:
            continue
        values = found.setdefault(key, [])
        if not any(_same(value, v) for v in values):
            values.append(value)
    return found


def _column_literals(tree: exp.Expr):
    """(column node, python value) for every literal a filter compares a bare column with."""
    for node in tree.find_all(*_COMPARISONS, exp.In, exp.Between, *_PATTERNS, bfs=False):
        if not _in_filter(node):
            continue
        if isinstance(node, exp.In):
            if isinstance(node.this, exp.Column):
                for item in node.expressions:  # empty for IN (subquery)
                    yield node.this, literal_value(item)
        elif isinstance(node, exp.Between):
            if isinstance(node.this, exp.Column):
                yield node.this, literal_value(node.args.get("low"))
                yield node.this, literal_value(node.args.get("high"))
        elif isinstance(node, _PATTERNS):
            pattern = literal_value(node.expression)
            if isinstance(node.this, exp.Column) and isinstance(pattern, str):
                yield node.this, like_example(pattern)
        else:
            # Either side may be the column: `age > 30` and `30 < age` both count.
            for column, other in ((node.this, node.expression), (node.expression, node.this)):
                if isinstance(column, exp.Column):
                    yield column, literal_value(other)


def literal_value(node: exp.Expr | None) -> object | None:
    """The python value of a literal (a negated number included), else None."""
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if not isinstance(node, exp.Literal):
        return None
    if node.is_string:
        return None if negative else node.this
    try:
        number: int | float = int(node.this) if node.is_int else float(node.this)
    except ValueError:
        return None  # hex or other dialect-specific spellings: not worth guessing
    if isinstance(number, int) and not -_INT64 <= number < _INT64:
        number = float(node.this)  # as SQLite reads an integer too big for 64 bits (inf beyond)
    return -number if negative else number


def like_example(pattern: str) -> str:
    """A value the LIKE pattern matches: '%abc%' -> 'abc', 'a%' -> 'a', 'a_c' -> 'axc'.

    `%` matches the empty string, so dropping it keeps the match; `_` needs one character.
    Escaped wildcards are rare in benchmarks and left as they are.
    """
    return pattern.replace("%", "").replace("_", "x")


def near_values(value: object) -> list[object]:
    """Values just beside a literal, so a filler can plant rows on both sides of a filter.

    Numbers: value - 1 and value + 1 (a boundary `> 30` is then tested by 29, 30 and 31).
    Strings: the last character bumped ('France' -> 'Francf', '2020-01-01' -> '2020-01-02'),
    and another letter case ('france'), which tells `=` (case-sensitive in SQLite) from LIKE.
    Booleans: the other one. Anything else: nothing.
    """
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, (int, float, Decimal)):
        return [value - 1, value + 1]
    if isinstance(value, str):
        candidates = [_bump_last(value), _other_case(value)]
        return [c for i, c in enumerate(candidates) if c != value and c not in candidates[:i]]
    return []


def _bump_last(text: str) -> str:
    """The same string with its last character moved to a neighbour of the same class."""
    if not text:
        return "x"
    last = text[-1]
    if last.isdigit():
        bumped = str(int(last) + 1) if last != "9" else "8"
    elif last.isalpha() and last.isascii():
        bumped = chr(ord(last) + 1) if last not in "zZ" else chr(ord(last) - 1)
    else:
        return text + "x"
    return text[:-1] + bumped


def _other_case(text: str) -> str:
    if text != text.lower():
        return text.lower()
    return text.upper()


def _same(a: object, b: object) -> bool:
    # 1 == 1.0 == True in python; keep them apart only by type family (numbers vs strings).
    return type(a) is type(b) and a == b


def _in_filter(node: exp.Expr) -> bool:
    """Whether node sits in a WHERE, a HAVING, a join condition or a CASE WHEN condition (of
    any enclosing query): `CASE WHEN material = 'stone'` needs stone rows as much as a filter."""
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, (exp.Where, exp.Having)):
            return True
        if isinstance(parent, exp.Join) and child is parent.args.get("on"):
            return True
        if isinstance(parent, exp.If) and child is parent.this:
            return True
        child, parent = parent, parent.parent
    return False


# Column resolution, shared with the mutation generator.

def resolve_column(column: exp.Column, schema: Schema | None = None) -> tuple[str, str] | None:
    """(table, column), lower-case, for a column of a real table, else None.

    A qualifier is looked up among the sources of the enclosing queries, innermost first
    (a correlated subquery may name an outer alias). An unqualified column belongs, with a
    schema, to the first table in scope that has it; without one, to the only table of its
    query, and is skipped when there are several. Derived tables and CTEs are not tables.
    """
    name = column.name.lower()
    if not name or isinstance(column.this, exp.Star):
        return None
    scopes = list(_scopes(column))
    columns = _lower_schema(schema)
    qualifier = column.table.lower()
    if qualifier:
        for sources in scopes:
            if qualifier in sources:
                table = sources[qualifier]
                return (table, name) if table is not None else None
        return None
    if columns is not None:
        for sources in scopes:
            for table in sources.values():
                if table is not None and name in columns.get(table, ()):
                    return table, name
        return None
    innermost = scopes[0] if scopes else {}
    if len(innermost) == 1:
        (table,) = innermost.values()
        return (table, name) if table is not None else None
    return None


def scope_tables(node: exp.Expr) -> dict[str, str | None]:
    """Alias (or name) -> real table name (None for a derived table or CTE), lower-case, of
    the query node belongs to."""
    return next(_scopes(node), {})


def _scopes(node: exp.Expr):
    """The sources of each enclosing SELECT, innermost first."""
    ctes = {cte.alias_or_name.lower() for cte in node.root().find_all(exp.CTE)}
    select = node.find_ancestor(exp.Select)
    while select is not None:
        yield _sources(select, ctes)
        select = select.find_ancestor(exp.Select)


def _sources(select: exp.Select, ctes: set[str]) -> dict[str, str | None]:
    sources: dict[str, str | None] = {}
    from_ = select.args.get("from_")
    items = [from_.this] if from_ is not None else []
    items += [join.this for join in select.args.get("joins") or ()]
    for item in items:
        alias = item.alias_or_name.lower()
        if not alias:
            continue
        real = isinstance(item, exp.Table) and item.name.lower() not in ctes
        sources[alias] = item.name.lower() if real else None
    return sources


def _lower_schema(schema: Schema | None) -> dict[str, list[str]] | None:
    if schema is None:
        return None
    return {table.lower(): [c.lower() for c in cols] for table, cols in schema.items()}
