"""Numbers a query compares with that the question never states.

A small model computes what SQL should: asked for singers "older than average", it writes
`age > 32` (a number it guessed) instead of a subquery, or it filters a "youngest teacher"
on an age it made up. Such a query runs and looks plausible, so the check is on the text: a
number compared with a column or a count (WHERE, HAVING, JOIN conditions) that the question
does not state, that the calculator did not compute and that is not 0 or 1 is reported, so
the query can be revised and, in a vote, counts less than one that needs no invented number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from sqlglot import exp

from groundsql.safety import parse_untrusted
from groundsql.testsuite.literals import literal_value
from groundsql.understanding.quantities import extract_quantities

__all__ = ["unstated_numbers"]

# Numbers questions spell as words ("more than two", "a dozen").
_WORDS = {w: float(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_WORDS |= {"twenty": 20.0, "thirty": 30.0, "fifty": 50.0, "hundred": 100.0, "thousand": 1000.0,
           "dozen": 12.0, "half": 0.5, "twice": 2.0, "double": 2.0, "triple": 3.0}
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In)


def unstated_numbers(sql: str, question: str, dialect: str, known: Iterable[float] = ()) -> list[str]:
    """The numbers (as written in `sql`) compared with a column or an aggregate that neither
    the question nor `known` (computed constants) gives; [] when the query does not parse."""
    tree = parse_untrusted(sql, dialect)
    if tree is None:
        return []
    stated = {0.0, 1.0, *known}
    for q in extract_quantities(question):
        stated |= {q.value, q.fraction}
    stated |= {_WORDS[w] for w in re.findall(r"[a-z]+", question.lower()) if w in _WORDS}
    found: list[str] = []
    for node in tree.find_all(*_COMPARISONS):
        operands = list(node.iter_expressions())
        if not any(o.find(exp.Column, exp.AggFunc) for o in operands):
            continue  # "1 = 1": no column, no count
        for operand in operands:
            text = _number_text(operand)
            if text is not None and text not in found and not _stated(float(text), stated):
                found.append(text)
    return found


def _number_text(node: exp.Expression) -> str | None:
    """A literal number, negated or not (or a string that is one: `year = '2014'`), as written."""
    value = literal_value(node)
    if isinstance(value, str):
        text = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        text = node.sql()
    else:
        return None
    try:
        return text if math.isfinite(float(text)) else None
    except ValueError:
        return None


def _stated(value: float, stated: set[float]) -> bool:
    return any(math.isclose(value, s, rel_tol=1e-9, abs_tol=1e-9) for s in stated)
