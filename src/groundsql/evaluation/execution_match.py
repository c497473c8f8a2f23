"""Execution accuracy (EX) with the semantics of Spider's official test-suite evaluator.

Reference: Zhong, Yu and Klein (2020), taoyds/test-suite-sql-eval, exec_eval.py
(`result_eq`, `quick_rej`, `get_constraint_permutation`, `permute_tuple`, `multiset_eq`).
The verdicts are the official ones. Only the search for a column permutation differs, in ways
that cannot change a verdict (stronger necessary conditions, checked as the permutation is
built, and no random sampling), except past an explicit bound on the search, documented at
MAX_SEARCH_STEPS.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = [
    "MAX_SEARCH_STEPS",
    "column_assignments",
    "gold_orders",
    "hashable_value",
    "results_match",
    "without_distinct",
]

# The official code enumerates `itertools.product` of the per-column candidates and skips
# non-injective tuples, so 12 interchangeable columns walk ~12^12 tuples and never finish.
# We build the permutation one column at a time and drop a partial one as soon as the columns
# chosen so far cannot line up (see column_assignments), which leaves little to search in
# practice; still, the search stops after this many partial permutations, and a prediction
# whose permutation was not reached by then is counted wrong (a conservative false negative,
# never a false positive).
MAX_SEARCH_STEPS = 10_000


def gold_orders(gold_sql: str) -> bool:
    """The official rule, verbatim: row order matters iff the gold SQL says 'order by'.

    It is a substring test on purpose (exec_eval.eval_exec_match): `ORDER  BY` with two
    spaces is missed and an ORDER BY inside a subquery counts, exactly as the official
    evaluator judges them, so our EX numbers are comparable with published ones.
    """
    return "order by" in gold_sql.lower()


def without_distinct(sql: str, dialect: str = "sqlite") -> str:
    """`sql` with every DISTINCT keyword removed, as Spider's official evaluator does to both
    queries unless it runs with --keep_distinct (evaluation.py, `remove_distinct`: a token-level
    cut, so COUNT(DISTINCT x) becomes COUNT(x) too). Strings and quoted names are left alone.
    A query the tokenizer cannot read is returned unchanged."""
    from sqlglot.errors import SqlglotError
    from sqlglot.tokens import TokenType

    import sqlglot

    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except SqlglotError:
        return sql
    cuts = [(t.start, t.end + 1) for t in tokens if t.token_type == TokenType.DISTINCT]
    for start, end in reversed(cuts):
        sql = sql[:start] + sql[end:]
    return sql


def results_match(
    gold_rows: Sequence[Sequence[Any]],
    pred_rows: Sequence[Sequence[Any]],
    order_matters: bool,
    *,
    max_steps: int = MAX_SEARCH_STEPS,
) -> bool:
    """Whether two denotations are equal under some column permutation (official result_eq).

    Values compare as Python values, as officially (1 == 1.0; no float tolerance; NULL, i.e.
    None, equals None).
    """
    gold = [tuple(hashable_value(v) for v in row) for row in gold_rows]
    pred = [tuple(hashable_value(v) for v in row) for row in pred_rows]

    # Official: two empty results match whatever their columns were (the column count of an
    # empty result is not even looked at).
    if not gold and not pred:
        return True
    # Official: bag semantics, so the row counts must agree; duplicates are never collapsed.
    if len(gold) != len(pred):
        return False
    # Official: the column count must agree exactly (no extra columns, unlike FLINT tier 2).
    if len(gold[0]) != len(pred[0]):
        return False
    if not _rows_as_bags_agree(gold, pred, order_matters):
        return False

    def line_up(chosen: list[int]) -> bool:
        """Gold columns 0..k-1 against the prediction columns chosen for them."""
        gold_part = [row[: len(chosen)] for row in gold]
        pred_part = [tuple(row[j] for j in chosen) for row in pred]
        if order_matters:
            # Official: with ORDER BY in the gold the rows must come in the same order. Ties
            # in the sort key are not special-cased: a different order among tied rows is a
            # mismatch, in the official evaluator as here.
            return pred_part == gold_part
        # Official multiset_eq: equal as bags, so [(1,), (1,), (2,)] != [(1,), (2,), (2,)]
        # although their sets are equal.
        return Counter(pred_part) == Counter(gold_part)

    # Official: column names are never compared and column order is free, so we look for a
    # permutation of the prediction's columns that makes the rows equal.
    candidates = _column_candidates(gold, pred, order_matters)
    return next(column_assignments(candidates, line_up, max_steps), None) is not None


def _rows_as_bags_agree(gold: list[tuple], pred: list[tuple], order_matters: bool) -> bool:
    """A necessary condition, like the official quick_rej: each row, read as a bag of values,
    must reappear (in place when order matters).

    The official quick_rej sorts each row by `str(x) + str(type(x))`, which orders 1 and 1.0
    differently and so rejects rows that result_eq itself would accept ((1, 1.5) against
    (1.0, 1.5)). Comparing rows as Counters keeps Python's 1 == 1.0 throughout, which is
    what result_eq means; we do not reproduce that accident.
    """
    gold_rows = [frozenset(Counter(row).items()) for row in gold]
    pred_rows = [frozenset(Counter(row).items()) for row in pred]
    if order_matters:
        return gold_rows == pred_rows
    return Counter(gold_rows) == Counter(pred_rows)


def _column_candidates(
    gold: list[tuple], pred: list[tuple], order_matters: bool
) -> list[list[int]]:
    """For each gold column, the prediction columns that may map to it.

    The official get_constraint_permutation keeps a mapping when, on 20 randomly sampled
    prediction rows, the prediction column's values all occur in the gold column (and does no
    pruning for <= 3 columns). Equal value bags over all rows (equal value sequences when
    order matters) is a stronger test that every accepted permutation also passes, so the
    verdict is unchanged, the search smaller and nothing random.
    """
    if order_matters:
        gold_columns, pred_columns = list(zip(*gold)), list(zip(*pred))
    else:
        gold_columns = [Counter(column) for column in zip(*gold)]
        pred_columns = [Counter(column) for column in zip(*pred)]
    return [[j for j, p in enumerate(pred_columns) if p == g] for g in gold_columns]


def column_assignments(
    candidates: list[list[int]],
    consistent: Callable[[list[int]], bool],
    max_steps: int,
) -> Iterator[tuple[int, ...]]:
    """Yield perm, perm[i] = the prediction column for gold column i (each used once), such
    that consistent(perm[:k]) holds for every k: a partial permutation that cannot line up is
    never extended. Gives up after max_steps calls to `consistent`. Shared with result_match.

    Candidates are tried in column order, so the identity permutation comes first.
    """
    chosen: list[int] = []
    used: set[int] = set()
    steps = 0

    def extend(i: int) -> Iterator[tuple[int, ...]]:
        nonlocal steps
        if i == len(candidates):
            yield tuple(chosen)
            return
        for j in candidates[i]:
            if j in used or steps >= max_steps:
                continue
            chosen.append(j)
            steps += 1
            if consistent(chosen):
                used.add(j)
                yield from extend(i + 1)
                used.discard(j)
            chosen.pop()

    return extend(0)


def hashable_value(value: Any) -> Any:
    """Drivers other than sqlite3 return lists (arrays) and dicts (JSON); the official code
    would crash on them. They compare by content here. Shared with result_match."""
    if isinstance(value, (list, tuple)):
        return tuple(hashable_value(v) for v in value)
    if isinstance(value, dict):
        return ("<dict>", tuple(sorted((repr(k), hashable_value(v)) for k, v in value.items())))
    if isinstance(value, (set, frozenset)):
        return frozenset(hashable_value(v) for v in value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    try:
        hash(value)
    except TypeError:
        return ("<unhashable>", repr(value))
    return value
