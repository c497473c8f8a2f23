"""FLINT's filter-value accuracy (table 8): did the prediction filter on the gold's numeric IDs?

In a normalized production schema most filters are IDs (metric_id = 28, period_type_id = 1,
currency_id = 160) that the question never states; a query with the right shape and the wrong
ID returns a plausible, wrong answer, and EX on a small database may not notice (both sides
empty, say). This metric looks only at the integer literals the gold filters on.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

__all__ = ["filter_values_correct", "numeric_id_literals"]

# Where a literal constrains rows. IN lists, BETWEEN bounds and both sides of a comparison.
_COMPARISONS = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ, exp.GT, exp.GTE, exp.LT,
                exp.LTE, exp.In, exp.Between)
_FILTER_CLAUSES = (exp.Where, exp.Having)


def numeric_id_literals(sql: str, dialect: str) -> set[str]:
    """Integer literals compared against columns (or aggregates, in HAVING) in WHERE, HAVING
    and JOIN ... ON.

    Not counted: LIMIT/OFFSET, SELECT-list arithmetic, constants nested in arithmetic inside a
    filter (`x * 100 > 5` counts only 5), literals compared with no column (`1 = 1`), and
    string literals, even numeric-looking ones. Values are normalized (`007` -> `7`, `-3`).
    Raises sqlglot's ParseError when the SQL does not parse.
    """
    values: set[str] = set()
    for statement in sqlglot.parse(sql, read=dialect):
        if statement is None:
            continue
        for literal in statement.find_all(exp.Literal):
            if literal.is_string or not literal.is_int:
                continue
            operand: exp.Expr = literal.parent if isinstance(literal.parent, exp.Neg) else literal
            comparison = operand.parent
            if not isinstance(comparison, _COMPARISONS):
                continue
            if not comparison.find(exp.Column, exp.AggFunc):
                continue  # 1 = 1 filters nothing
            if _in_filter(comparison):
                values.add(str(-literal.to_py() if operand is not literal else literal.to_py()))
    return values


def filter_values_correct(gold: str, pred: str, dialect: str) -> bool | None:
    """None when the gold filters on no integer or does not parse (the item is not counted),
    else whether every gold value also appears in the prediction's filters.

    Presence, not position: a prediction using the right ID on the wrong column passes here
    and fails the other metrics. An unparseable prediction is simply wrong.
    """
    try:
        expected = numeric_id_literals(gold, dialect)
    except SqlglotError:
        return None  # a gold sqlglot cannot read: nothing to count
    if not expected:
        return None
    try:
        found = numeric_id_literals(pred, dialect)
    except SqlglotError:
        return False
    return expected <= found


def _in_filter(node: exp.Expr) -> bool:
    """Whether node sits in a WHERE, a HAVING or a join condition (of any enclosing query)."""
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, _FILTER_CLAUSES):
            return True
        if isinstance(parent, exp.Join) and child is parent.args.get("on"):
            return True
        child, parent = parent, parent.parent
    return False
