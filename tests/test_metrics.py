"""The evaluation metrics on hand-built cases whose verdicts are known by construction.

Most cases are data: tests/fixtures/metrics/queries.sql runs gold and predicted SQL on a tiny
SQLite database and checks all four metrics at once; rows.json checks the two result
comparisons on literal rows. The tests below them cover what data files cannot express.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import random
import re
import sqlite3
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from groundsql.evaluation.ast_match import ast_equivalent, canonical_sql, tree_edit_distance
from groundsql.evaluation.execution_match import gold_orders, results_match
from groundsql.evaluation.filter_values import filter_values_correct, numeric_id_literals
from groundsql.evaluation.result_match import results_equivalent

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"

DDL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER,
                     net_worth REAL);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, singer_id INTEGER, year INTEGER,
                      venue TEXT);
INSERT INTO singer VALUES (1, 'Ana', 'France', 30, 1.5), (2, 'Bo', 'Norway', 30, NULL),
                          (3, 'Cy', 'France', 41, 2.25), (4, 'Di', 'Japan', 25, 0.1);
INSERT INTO concert VALUES (1, 1, 2014, 'Arena'), (2, 1, 2015, 'Hall'), (3, 3, 2014, 'Arena'),
                           (4, 2, 2015, 'Dome');
"""
SCHEMA = {
    "singer": {"singer_id": "INTEGER", "name": "TEXT", "country": "TEXT", "age": "INTEGER",
               "net_worth": "REAL"},
    "concert": {"concert_id": "INTEGER", "singer_id": "INTEGER", "year": "INTEGER",
                "venue": "TEXT"},
}


def _query_cases() -> list:
    cases = []
    text = (FIXTURES / "queries.sql").read_text()
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip().splitlines()
        expect = [line for line in lines if line.startswith("-- expect:")]
        if not expect:
            continue  # the file's header
        title = " ".join(line[3:] for line in lines if line.startswith("--") and line not in expect)
        verdicts = dict(item.split("=") for item in expect[0].removeprefix("-- expect:").split())
        sql = " ".join(line for line in lines if not line.startswith("--"))
        gold, pred = (s.strip() for s in sql.split(";") if s.strip())
        expected = {k: None if v == "-" else v == "1" for k, v in verdicts.items()}
        cases.append(pytest.param(gold, pred, expected, id=title[:70]))
    return cases


@pytest.fixture(scope="module")
def db():
    conn = sqlite3.connect(":memory:")
    conn.executescript(DDL)
    yield conn
    conn.close()


@pytest.mark.parametrize(("gold", "pred", "expected"), _query_cases())
def test_query_case(db, gold, pred, expected):
    gold_rows = db.execute(gold).fetchall()
    pred_rows = db.execute(pred).fetchall()
    verdicts = {
        "ex": results_match(gold_rows, pred_rows, order_matters=gold_orders(gold)),
        "ast": ast_equivalent(gold, pred, "sqlite", SCHEMA),
        "results": results_equivalent(gold_rows, pred_rows),
        "filter": filter_values_correct(gold, pred, "sqlite"),
    }
    assert verdicts == expected, (gold_rows, pred_rows)
    # The edit distance agrees with tier 1: zero exactly when the canonical trees are equal.
    assert (tree_edit_distance(gold, pred, "sqlite", SCHEMA) == 0) == verdicts["ast"]


def _row_cases() -> list:
    cases = json.loads((FIXTURES / "rows.json").read_text())
    return [pytest.param(c, id=c["name"]) for c in cases]


@pytest.mark.parametrize("case", _row_cases())
def test_row_case(case):
    gold = [tuple(row) for row in case["gold"]]
    pred = [tuple(row) for row in case["pred"]]
    assert results_match(gold, pred, case["order_matters"]) is case["ex"]
    assert results_equivalent(gold, pred) is case["results"]


# ---- execution match ------------------------------------------------------------------------


def test_gold_orders_is_the_official_substring_rule():
    assert gold_orders("SELECT a FROM t ORDER BY a")
    assert gold_orders("select a from t order by a")
    assert not gold_orders("SELECT a FROM t")
    # Substring semantics, as exec_eval.py: two spaces hide the ORDER BY from the official
    # evaluator too, and an ORDER BY in a subquery counts.
    assert not gold_orders("SELECT a FROM t ORDER  BY a")
    assert gold_orders("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3)")


def _brute_force_ex(gold, pred, order_matters):
    """The official result_eq without its shortcuts: every column permutation, exhaustively."""
    if not gold and not pred:
        return True
    if len(gold) != len(pred) or len(gold[0]) != len(pred[0]):
        return False
    for perm in itertools.permutations(range(len(gold[0]))):
        permuted = [tuple(row[i] for i in perm) for row in pred]
        if (permuted == gold) if order_matters else (Counter(permuted) == Counter(gold)):
            return True
    return False


def test_results_match_agrees_with_exhaustive_search():
    rng = random.Random(20201116)
    agreed = matched = 0
    for _ in range(3000):
        columns, rows = rng.randint(1, 5), rng.randint(1, 4)
        gold = [tuple(rng.choice((0, 1, 1.0, 2)) for _ in range(columns)) for _ in range(rows)]
        # Mostly a shuffled, column-permuted copy (so matches occur), sometimes one cell off.
        perm = rng.sample(range(columns), columns)
        pred = [tuple(row[i] for i in perm) for row in gold]
        if rng.random() < 0.5:
            pred = rng.sample(pred, len(pred))
        if rng.random() < 0.3:
            r, c = rng.randrange(rows), rng.randrange(columns)
            pred[r] = pred[r][:c] + (rng.randint(0, 2),) + pred[r][c + 1:]
        order_matters = rng.random() < 0.3
        expected = _brute_force_ex(gold, pred, order_matters)
        assert results_match(gold, pred, order_matters) is expected, (gold, pred, order_matters)
        agreed += 1
        matched += expected
    assert agreed == 3000 and 0 < matched < 3000  # both verdicts were exercised


def test_wide_results_do_not_explode():
    start = time.monotonic()
    # Twelve interchangeable columns: the official product() over the candidates walks ~12^12
    # tuples before its first injective one; here the identity comes first.
    gold = [(0,) * 12, (1,) * 12]
    assert results_match(gold, list(reversed(gold)), order_matters=False)
    assert results_equivalent(gold, list(reversed(gold)))
    # Every column holds {0, 1, x} and every row six 0s and six 1s, so neither the row check
    # nor the column check narrows anything (6! * 6! candidate permutations); a permutation
    # exists (gold column j -> prediction column: 0,2,4 -> 0,2,4; 1,3,5 -> 6,8,10;
    # 6,8,10 -> 1,3,5; 7,9,11 -> 7,9,11) and the column-by-column search finds it.
    gold = [(0, 1) * 6, (1, 0) * 6, (0,) * 6 + (1,) * 6]
    pred = [(0,) * 6 + (1,) * 6, (1,) * 6 + (0,) * 6, (0, 1) * 6]
    perm = (0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11)
    assert [tuple(row[j] for j in perm) for row in pred] == gold
    assert results_match(gold, pred, order_matters=True)
    assert results_match(gold, pred[::-1], order_matters=False)
    assert results_equivalent(gold, pred[::-1])
    assert not results_match(gold, pred[::-1], order_matters=True)
    assert time.monotonic() - start < 10


def test_search_bound_is_conservative():
    # Two interchangeable columns; the identity fails and the swap matches. With room for the
    # identity only (two partial permutations), the answer is "no", never a guess.
    gold = [(1, 2), (2, 3), (3, 1)]
    pred = [(2, 1), (3, 2), (1, 3)]
    assert results_match(gold, pred, order_matters=False)
    assert not results_match(gold, pred, order_matters=False, max_steps=2)


def test_tolerant_matching_scales():
    # Each value has a near twin (within tolerance) carrying the other label, so sorting pairs
    # every row with the wrong label and the perfect matching has to run on 3000 rows; the
    # tolerance window keeps that near-linear.
    gold, pred = [], []
    for i in range(1, 1501):
        x, twin = float(i), i * (1 + 1e-8)
        gold += [(x, "b"), (twin, "a")]
        pred += [(x, "a"), (twin, "b")]
    start = time.monotonic()
    assert results_equivalent(gold, pred)
    assert not results_equivalent(gold, pred[:-1] + [(twin, "c")])
    assert time.monotonic() - start < 5


def test_rows_may_be_lists_and_hold_unhashable_values():
    assert results_match([[1, [1, 2]]], [[[1, 2], 1]], order_matters=False)
    assert results_match([({"a": 1},)], [({"a": 1},)], order_matters=False)
    assert not results_match([({"a": 1},)], [({"a": 2},)], order_matters=False)


# ---- result match ---------------------------------------------------------------------------


def _brute_force_tier2(gold, pred, rel_tol=1e-6):
    """Tier 2 by exhaustion: some injective column map and some row order make all cells close."""
    def close(a, b):
        numbers = (int, float)
        if isinstance(a, numbers) and isinstance(b, numbers):
            return math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-9)
        return type(a) is type(b) and a == b

    if not gold and not pred:
        return True
    if len(gold) != len(pred) or len(pred[0]) < len(gold[0]):
        return False
    for columns in itertools.permutations(range(len(pred[0])), len(gold[0])):
        projected = [tuple(row[j] for j in columns) for row in pred]
        for order in itertools.permutations(projected):
            if all(close(a, b) for g, p in zip(gold, order) for a, b in zip(g, p)):
                return True
    return False


def test_results_equivalent_agrees_with_exhaustive_search():
    # 1 ~ 1+5e-7 ~ 1+1.2e-6 but 1 !~ 1+1.2e-6: closeness is not transitive, which is what
    # makes pairing rows non-trivial.
    values = [0, 1, 1.0, 1 + 5e-7, 1 + 1.2e-6, 2, None, "a"]
    rng = random.Random(7)
    verdicts = Counter()
    for _ in range(2000):
        rows, columns = rng.randint(1, 4), rng.randint(1, 3)
        gold = [tuple(rng.choice(values) for _ in range(columns)) for _ in range(rows)]
        pred = [tuple(rng.choice(values) for _ in range(columns)) for _ in range(rows)]
        if rng.random() < 0.7:  # mostly a near copy: shuffled, maybe widened, maybe nudged
            extra = rng.randint(0, 1)
            pred = [row + tuple(rng.choice(values) for _ in range(extra)) for row in gold]
            perm = rng.sample(range(columns + extra), columns + extra)
            pred = rng.sample([tuple(row[i] for i in perm) for row in pred], rows)
            pred = [tuple(1 + 5e-7 if v == 1 and rng.random() < 0.3 else v for v in row)
                    for row in pred]
        expected = _brute_force_tier2(gold, pred)
        assert results_equivalent(gold, pred) is expected, (gold, pred)
        verdicts[expected] += 1
    assert verdicts[True] > 100 and verdicts[False] > 100


def test_results_equivalent_normalizes_driver_types():
    # What PostgreSQL returns (numeric, date) against what SQLite returns (float, text).
    gold = [(Decimal("1.10"), dt.date(2023, 1, 1), True)]
    pred = [(1.1, "2023-01-01", 1)]
    assert results_equivalent(gold, pred)
    assert not results_match(gold, pred, order_matters=False)  # EX compares exact values


def test_results_equivalent_tolerance_is_a_parameter():
    assert results_equivalent([(31.5,)], [(32.0,)], rel_tol=0.05)
    assert not results_equivalent([(31.5,)], [(32.0,)])


def test_results_equivalent_with_an_extra_column_in_the_middle():
    gold = [("Ana", 30), ("Cy", 41)]
    pred = [(41, "France", "Cy"), (30, "France", "Ana")]
    assert results_equivalent(gold, pred)
    assert not results_equivalent(gold, [(41, "France", "Cy"), (30, "France", "Bo")])


# ---- AST match ------------------------------------------------------------------------------


def test_validator_limit_can_be_ignored():
    gold = "SELECT name FROM singer"
    pred = "SELECT name FROM singer LIMIT 1000"
    assert not ast_equivalent(gold, pred, "sqlite", SCHEMA)
    assert ast_equivalent(gold, pred, "sqlite", SCHEMA, ignore_limit=1000)
    assert tree_edit_distance(gold, pred, "sqlite", SCHEMA, ignore_limit=1000) == 0
    # Another value, or a LIMIT the gold has itself, is part of the answer.
    assert not ast_equivalent(gold, "SELECT name FROM singer LIMIT 10", "sqlite", ignore_limit=1000)
    assert not ast_equivalent(
        "SELECT name FROM singer LIMIT 5", pred, "sqlite", SCHEMA, ignore_limit=1000
    )


def test_ast_match_without_a_schema():
    # Qualified columns and single-table queries need no schema.
    assert ast_equivalent(
        "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id",
        "SELECT s.name FROM concert AS c JOIN singer AS s ON s.singer_id = c.singer_id",
        "sqlite",
    )
    assert ast_equivalent(
        "SELECT singer.name FROM singer WHERE singer.age > 30",
        "SELECT name FROM singer AS s WHERE 30 < age",
        "sqlite",
    )
    # A bare column in a join cannot be attributed without the schema: not shown equivalent.
    gold = "SELECT singer.name FROM singer JOIN concert ON singer.singer_id = concert.singer_id"
    pred = "SELECT name FROM singer JOIN concert ON singer.singer_id = concert.singer_id"
    assert not ast_equivalent(gold, pred, "sqlite")
    assert ast_equivalent(gold, pred, "sqlite", SCHEMA)
    # Unexpanded, `*` takes its column order from the joins, so those are not reordered.
    star = "SELECT * FROM {} JOIN {} ON singer.singer_id = concert.singer_id"
    swapped = star.format("concert", "singer"), star.format("singer", "concert")
    assert not ast_equivalent(*swapped, "sqlite")
    assert ast_equivalent(*swapped, "sqlite", SCHEMA) is False  # expanded: columns differ
    counted = [q.replace("*", "count(*)", 1) for q in swapped]
    assert ast_equivalent(*counted, "sqlite")


def test_identifier_case_follows_the_dialect():
    assert ast_equivalent("SELECT Name FROM Singer", "select name from singer", "postgres")
    # A quoted identifier keeps its case in PostgreSQL: "Name" is another column.
    assert not ast_equivalent('SELECT "Name" FROM singer', "SELECT name FROM singer", "postgres")


def test_non_equivalences_are_kept():
    for gold, pred in [
        ("SELECT name FROM singer WHERE age > 30", "SELECT name FROM singer WHERE age < 30"),
        ("SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age DESC"),
        ("SELECT DISTINCT name FROM singer", "SELECT name FROM singer"),
        ("SELECT name FROM singer WHERE age > 1 OR age < 9",
         "SELECT name FROM singer WHERE age > 1 AND age < 9"),
        ("SELECT age - net_worth FROM singer", "SELECT net_worth - age FROM singer"),
    ]:
        assert not ast_equivalent(gold, pred, "sqlite", SCHEMA), (gold, pred)
        assert tree_edit_distance(gold, pred, "sqlite", SCHEMA) > 0


def test_canonical_sql_is_readable_and_stable():
    sql = "SELECT T1.name AS n FROM singer T1 WHERE (T1.age > 30) AND T1.singer_id IN (3, 1)"
    canonical = canonical_sql(sql, "sqlite", SCHEMA)
    assert canonical == (
        'SELECT "name" FROM "singer" AS "singer" WHERE "age" > 30 AND "singer_id" IN (1, 3)'
    )
    assert canonical_sql(canonical, "sqlite", SCHEMA) == canonical


def test_unparseable_prediction_is_not_equivalent():
    assert not ast_equivalent("SELECT name FROM singer", "SELEC name FROM", "sqlite", SCHEMA)
    assert not ast_equivalent("SELECT name FROM singer", "DROP TABLE singer", "sqlite", SCHEMA)


# ---- filter values --------------------------------------------------------------------------


def test_numeric_id_literals_positions():
    sql = """
        SELECT a * 2, 5 FROM t JOIN u ON u.id = t.id AND u.kind_id = 7
        WHERE t.metric_id IN (3, 1) AND t.delta = -4 AND 1 = 1 AND t.z * 100 > 5
          AND t.code = '12' AND t.ratio = 1.5 AND t.y BETWEEN 2010 AND 2020
          AND t.c IN (SELECT c FROM v WHERE v.unit_id = 0009)
        GROUP BY a HAVING count(*) > 2 LIMIT 10 OFFSET 3
    """
    # Not: SELECT-list constants, 100 inside arithmetic, 1 = 1, '12', 1.5, LIMIT, OFFSET.
    expected = {"7", "3", "1", "-4", "5", "2010", "2020", "9", "2"}
    assert numeric_id_literals(sql, "sqlite") == expected


def test_filter_values_correct():
    gold = "SELECT value FROM data WHERE metric_id = 28 AND period_type_id = 1"
    right = "SELECT value FROM data WHERE period_type_id = 1 AND metric_id = 28 AND unit_id = 3"
    wrong = "SELECT value FROM data WHERE metric_id = 29 AND period_type_id = 1"
    assert filter_values_correct(gold, right, "sqlite") is True
    assert filter_values_correct(gold, wrong, "sqlite") is False
    # No integer in the gold's filters: the item is not counted.
    no_ids = "SELECT name FROM company WHERE country = 'DE' LIMIT 5"
    assert filter_values_correct(no_ids, "SELECT 1", "sqlite") is None
    assert filter_values_correct(gold, "SELEC value FRM", "sqlite") is False


def test_sqlite_double_quoted_strings():
    # Spider's gold SQL writes strings in double quotes, which SQLite reads as strings when
    # no column has that name; the AST match reads them the same way, keeping their case.
    gold = 'SELECT name FROM singer WHERE country = "France"'
    pred = "SELECT name FROM singer WHERE country = 'France'"
    assert ast_equivalent(gold, pred, "sqlite", SCHEMA)
    assert ast_equivalent(gold, pred, "sqlite")
    assert not ast_equivalent(gold, "SELECT name FROM singer WHERE country = 'france'", "sqlite")
    # A quoted name that is a column stays a column.
    assert ast_equivalent('SELECT "name" FROM singer', "SELECT name FROM singer", "sqlite", SCHEMA)


@pytest.mark.parametrize(("gold", "pred", "reason"), [
    ([("a", 1)], [], "empty_result"),
    ([("a", 1), ("b", 2)], [("a", 1)], "missing_rows"),
    ([("a", 1)], [("a", 1), ("b", 2)], "extra_rows"),
    ([("a", 1)], [("a", 1, "x")], "extra_columns"),
    ([("a", 1, "x")], [("a", 1)], "missing_columns"),
    ([("a", 1, "x")], [("z", 9)], "missing_columns"),  # a column short is seen first
    ([("a", 1), ("b", 2)], [("b", 2), ("a", 1)], "wrong_order"),  # the caller found no match: the order counted
    ([("a", 1)], [("a", 2)], "wrong_values"),
    ([("a", 1), ("b", 2)], [("a", 1), ("c", 3)], "wrong_values"),
    ([], [("a", 1)], "extra_rows"),
    ([(Decimal("2.50"), dt.date(2023, 1, 2))], [(2.5, "2023-01-02"), (3.0, "2023-01-03")], "extra_rows"),
])
def test_why_a_result_is_not_the_golds(gold, pred, reason):
    from groundsql.evaluation.result_match import REASONS, why_different

    assert reason in REASONS
    assert why_different(gold, pred) == reason
