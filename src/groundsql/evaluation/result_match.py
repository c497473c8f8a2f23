"""FLINT tier 2: result equivalence, lenient where EX is strict.

EX (execution_match) demands the same columns, exact values and, when the gold orders, the
same row order. FLINT's second tier asks instead whether the prediction *answers the same
question*: rows compared as a bag, numbers with a relative tolerance, and columns aligned by
content, with extra prediction columns allowed (a query that also returns, say, the company
name beside the asked-for revenue is accepted; one that omits a gold column is not).
Row order is ignored even when the gold has ORDER BY: a wrong order is an EX failure, and the
two tiers are read side by side.
"""

from __future__ import annotations

import bisect
import datetime as dt
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from groundsql.evaluation.execution_match import (
    MAX_SEARCH_STEPS,
    column_assignments,
    hashable_value,
)

__all__ = ["REASONS", "results_equivalent", "why_different"]

ABS_TOL = 1e-9
_NUMBER = object()  # stands for any number in a row's signature


def results_equivalent(
    gold_rows: Sequence[Sequence[Any]],
    pred_rows: Sequence[Sequence[Any]],
    rel_tol: float = 1e-6,
) -> bool:
    """Whether the prediction's rows contain the gold rows' columns, up to order and tolerance."""
    gold = [tuple(_normal(v) for v in row) for row in gold_rows]
    pred = [tuple(_normal(v) for v in row) for row in pred_rows]
    if not gold and not pred:
        return True
    # Bag semantics as in EX: a duplicated or missing row is a different answer.
    if len(gold) != len(pred):
        return False
    if len(pred[0]) < len(gold[0]):
        return False

    def line_up(chosen: list[int]) -> bool:
        gold_part = [row[: len(chosen)] for row in gold]
        pred_part = [tuple(row[j] for j in chosen) for row in pred]
        return _bags_close(gold_part, pred_part, rel_tol)

    # Align each gold column with a prediction column holding the same values (unused
    # prediction columns are the extras); the search is execution_match's, bound included.
    pred_columns = [[(v,) for v in column] for column in zip(*pred)]
    candidates = [
        [j for j, p in enumerate(pred_columns) if _bags_close([(v,) for v in g], p, rel_tol)]
        for g in zip(*gold)
    ]
    return next(column_assignments(candidates, line_up, MAX_SEARCH_STEPS), None) is not None


def _normal(value: Any) -> Any:
    """One representation per value, so that drivers and dialects compare alike.

    Decimal (PostgreSQL numeric) and bool become float/int; dates and times become their ISO
    text, which is how SQLite stores them; strings lose surrounding whitespace (CHAR(n)
    padding in PostgreSQL); arrays, JSON and bytes-like values compare by content.
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (dt.date, dt.time, dt.datetime)):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    return hashable_value(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))


def _values_close(a: Any, b: Any, rel_tol: float) -> bool:
    if _is_number(a) and _is_number(b):
        # Ints and floats compare numerically: COUNT(*) as 3 and AVG-derived 3.0 are equal.
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=ABS_TOL)
    # NULL equals NULL here (a result cell, not a SQL comparison); other types compare exactly,
    # so the number 1 and the text '1' differ.
    return type(a) is type(b) and a == b


def _sort_key(value: Any) -> tuple:
    """A total order across types; numbers sort by value so that close ones end up adjacent."""
    if value is None:
        return (0, 0)
    if _is_number(value):
        return (1, 0, value) if not math.isnan(value) else (1, 1, 0)
    return (2, type(value).__name__, value if isinstance(value, (str, bytes)) else repr(value))


def _rows_close(a: tuple, b: tuple, rel_tol: float) -> bool:
    return all(_values_close(x, y, rel_tol) for x, y in zip(a, b))


def _row_key(row: tuple) -> tuple:
    return tuple(map(_sort_key, row))


def _bags_close(gold: list[tuple], pred: list[tuple], rel_tol: float) -> bool:
    """Multiset equality of rows under the tolerance.

    Sorting both sides and pairing in order settles nearly every case at once (and any
    pairing that works proves the answer). When it fails, near-equal numbers may just have
    sorted into different places on the two sides, so we look for a perfect matching; close
    rows have equal non-numeric parts, so that splits by those parts (the signature).
    """
    pairs = zip(sorted(gold, key=_row_key), sorted(pred, key=_row_key))
    if all(_rows_close(a, b, rel_tol) for a, b in pairs):
        return True
    gold_groups, pred_groups = _by_signature(gold), _by_signature(pred)
    if {s: len(g) for s, g in gold_groups.items()} != {s: len(g) for s, g in pred_groups.items()}:
        return False
    for signature, rows in gold_groups.items():
        # Without numbers, rows of one signature are identical and equal counts suffice.
        if _NUMBER in signature:
            if not _perfect_matching(_close_pairs(rows, pred_groups[signature], rel_tol)):
                return False
    return True


def _by_signature(rows: list[tuple]) -> dict[tuple, list[tuple]]:
    groups: dict[tuple, list[tuple]] = defaultdict(list)
    for row in rows:
        groups[tuple(_NUMBER if _is_number(v) else v for v in row)].append(row)
    return groups


def _close_pairs(gold: list[tuple], pred: list[tuple], rel_tol: float) -> list[list[int]]:
    """For each gold row, the indices of the prediction rows close to it (rows of one
    signature). Only rows whose first number lies in the tolerance window are compared,
    which keeps this near-linear rather than quadratic."""
    position = next(i for i, v in enumerate(gold[0]) if _is_number(v))
    values = [_as_float(row[position]) for row in pred]
    ordered = sorted((x, j) for j, x in enumerate(values) if not math.isnan(x))
    unordered = [j for j, x in enumerate(values) if math.isnan(x)]
    edges = []
    for row in gold:
        x = _as_float(row[position])
        if math.isnan(x):
            candidates = unordered
        elif math.isinf(x) or rel_tol >= 1:
            candidates = [j for _, j in ordered]
        else:
            width = max(rel_tol * abs(x) / (1 - rel_tol), ABS_TOL) * (1 + 1e-9)
            lo = bisect.bisect_left(ordered, (x - width, -1))
            hi = bisect.bisect_right(ordered, (x + width, len(pred)))
            candidates = [j for _, j in ordered[lo:hi]]
        edges.append([j for j in candidates if _rows_close(row, pred[j], rel_tol)])
    return edges


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an int beyond the float range
        return math.inf if value > 0 else -math.inf


def _perfect_matching(edges: list[list[int]]) -> bool:
    """Whether every gold row gets its own prediction row: Kuhn's augmenting paths
    (iterative), gold rows on the left, prediction rows on the right."""
    owner: dict[int, int] = {}  # prediction index -> gold index
    for start in range(len(edges)):
        parent: dict[int, tuple[int, int | None]] = {}  # pred j -> (gold i, previous pred)
        stack: list[tuple[int, int | None]] = [(start, None)]
        seen: set[int] = set()
        free = None
        while stack and free is None:
            i, via = stack.pop()
            for j in edges[i]:
                if j in seen:
                    continue
                seen.add(j)
                parent[j] = (i, via)
                if j not in owner:
                    free = j
                    break
                stack.append((owner[j], j))
        if free is None:
            return False
        j: int | None = free
        while j is not None:
            i, previous = parent[j]
            owner[j] = i
            j = previous
    return True


# -- why an answer is not the gold's (a benchmark's reason codes) -------------------------------

REASONS = ("right", "error", "asked_back", "empty_result", "missing_columns", "extra_columns", "missing_rows", "extra_rows",
           "wrong_order", "wrong_values")


def why_different(gold_rows: Sequence[Sequence[Any]], pred_rows: Sequence[Sequence[Any]], rel_tol: float = 1e-6) -> str:
    """What a person checking the answer would say is wrong with it, for a prediction that ran
    and is not the gold's (as Databricks Genie's benchmarks score): no rows; a column short or
    one too many (the other columns right); rows missing or extra (the rows it has are the
    gold's, or the gold's are among its rows); the right rows out of order; else wrong values."""
    gold = [tuple(_normal(v) for v in row) for row in gold_rows]
    pred = [tuple(_normal(v) for v in row) for row in pred_rows]
    if not pred:
        return "empty_result" if gold else "extra_rows"
    if not gold:
        return "extra_rows"
    if len(pred[0]) > len(gold[0]) and results_equivalent(gold, pred, rel_tol):
        return "extra_columns"
    if len(pred[0]) < len(gold[0]) and results_equivalent(pred, gold, rel_tol):
        return "missing_columns"
    if len(pred[0]) == len(gold[0]) and results_equivalent(gold, pred, rel_tol):
        return "wrong_order"
    if len(pred[0]) != len(gold[0]):
        return "missing_columns" if len(pred[0]) < len(gold[0]) else "extra_columns"
    # Rows compared as bags of their values (columns in any order), numbers to 9 digits.
    gold_bag, pred_bag = Counter(map(_loose, gold)), Counter(map(_loose, pred))
    if pred_bag < gold_bag:
        return "missing_rows"
    if gold_bag < pred_bag:
        return "extra_rows"
    return "wrong_values"


def _loose(row: tuple) -> tuple:
    return tuple(sorted((f"{float(v):.9g}" if _is_number(v) else repr(v) for v in row)))
