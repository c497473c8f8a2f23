"""Test suites: near-miss mutations, distillation by greedy set cover, and query literals."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import sqlglot

from groundsql.evaluation.execution_match import gold_orders
from groundsql.testsuite.distill import Distillation, distill, kills
from groundsql.testsuite.literals import like_example, near_values, query_literals
from groundsql.testsuite.mutations import KINDS, Mutation, mutations

SCHEMA = {
    "singer": ["singer_id", "name", "country", "age"],
    "concert": ["concert_id", "singer_id", "year", "stadium_id"],
    "stadium": ["stadium_id", "name", "capacity"],
}

SIMPLE = "SELECT name FROM singer WHERE age > 30 AND country = 'France'"
JOIN = (
    "SELECT T1.name, T2.year FROM singer AS T1 JOIN concert AS T2 "
    "ON T1.singer_id = T2.singer_id AND T2.year >= 2014"
)
GROUPED = (
    "SELECT country, COUNT(*) FROM singer GROUP BY country HAVING COUNT(*) > 1 "
    "ORDER BY COUNT(*) DESC LIMIT 3"
)
NESTED = (
    "SELECT name FROM singer WHERE singer_id IN "
    "(SELECT singer_id FROM concert WHERE year = 2014)"
)
UNION = (
    "SELECT name FROM singer WHERE age BETWEEN 20 AND 30 AND name LIKE '%an%' "
    "UNION SELECT name FROM stadium"
)
COUNT_DISTINCT = (
    "SELECT COUNT(DISTINCT country) FROM singer WHERE NOT EXISTS "
    "(SELECT 1 FROM concert WHERE concert.singer_id = singer.singer_id) "
    "INTERSECT SELECT 2"
)

EXPECTED_KINDS = {
    SIMPLE: {"comparison", "dropped_predicate", "constant", "and_or", "distinct"},
    JOIN: {"comparison", "dropped_predicate", "constant", "and_or", "join_column"},
    GROUPED: {"comparison", "dropped_predicate", "constant", "aggregation", "order", "limit",
              "group_by"},
    NESTED: {"comparison", "dropped_predicate", "constant", "in", "distinct"},
    UNION: {"dropped_predicate", "constant", "and_or", "like", "between", "set_operation"},
    COUNT_DISTINCT: {"aggregation", "distinct", "exists", "set_operation", "dropped_predicate"},
}


def canonical(sql: str, dialect: str = "sqlite") -> str:
    return sqlglot.parse_one(sql, read=dialect).sql(dialect=dialect, normalize=True)


def sqls(found: list[Mutation], kind: str | None = None) -> list[str]:
    return [m.sql for m in found if kind is None or m.kind == kind]


# Mutations.

@pytest.mark.parametrize("gold", list(EXPECTED_KINDS))
def test_mutations_are_valid_distinct_near_misses(gold):
    found = mutations(gold, schema=SCHEMA)
    assert EXPECTED_KINDS[gold] <= {m.kind for m in found}
    assert all(m.kind in KINDS for m in found)
    forms = [canonical(m.sql) for m in found]  # each parses
    assert canonical(gold) not in forms
    assert len(forms) == len(set(forms))
    assert found == mutations(gold, schema=SCHEMA)  # deterministic


def test_simple_filter_mutations():
    found = mutations(SIMPLE)
    comparisons = sqls(found, "comparison")
    assert "SELECT name FROM singer WHERE age >= 30 AND country = 'France'" in comparisons
    assert "SELECT name FROM singer WHERE age < 30 AND country = 'France'" in comparisons
    assert "SELECT name FROM singer WHERE age > 30 AND country <> 'France'" in comparisons
    assert set(sqls(found, "dropped_predicate")) == {
        "SELECT name FROM singer WHERE country = 'France'",
        "SELECT name FROM singer WHERE age > 30",
    }
    constants = sqls(found, "constant")
    assert "SELECT name FROM singer WHERE age > 29 AND country = 'France'" in constants
    assert "SELECT name FROM singer WHERE age > 31 AND country = 'France'" in constants
    assert "SELECT name FROM singer WHERE age > 30 AND country = 'france'" in constants
    assert sqls(found, "and_or") == ["SELECT name FROM singer WHERE age > 30 OR country = 'France'"]
    assert "join_column" not in {m.kind for m in found}


def test_constant_taken_from_another_literal_of_the_query():
    found = mutations("SELECT name FROM singer WHERE country = 'France' OR name = 'Joe'")
    constants = sqls(found, "constant")
    assert "SELECT name FROM singer WHERE country = 'Joe' OR name = 'Joe'" in constants


def test_join_column_needs_the_schema_and_keeps_the_join_key():
    with_schema = sqls(mutations(JOIN, schema=SCHEMA), "join_column")
    assert (
        "SELECT T1.name, T2.year FROM singer AS T1 JOIN concert AS T2 "
        "ON T1.singer_id = T2.concert_id AND T2.year >= 2014"
    ) in with_schema
    assert all("T1.singer_id = T2.singer_id" not in sql for sql in with_schema)
    assert not sqls(mutations(JOIN), "join_column")
    # The join key itself is never dropped or negated: that would be a cross join.
    for mutation in mutations(JOIN, schema=SCHEMA):
        if mutation.kind in ("dropped_predicate", "comparison"):
            assert "ON T1.singer_id = T2.singer_id" in mutation.sql


def test_grouping_ordering_and_limit_mutations():
    found = mutations(GROUPED, schema=SCHEMA)
    assert any(s.endswith("ORDER BY COUNT(*) ASC LIMIT 3") for s in sqls(found, "order"))
    limits = sqls(found, "limit")
    assert any(s.endswith("LIMIT 4") for s in limits)
    assert any(s.endswith("LIMIT 2") for s in limits)
    assert any(s.endswith("DESC") for s in limits)  # LIMIT removed
    groups = sqls(found, "group_by")
    assert any("GROUP BY" not in s for s in groups)
    assert any("GROUP BY name" in s for s in groups)
    aggregations = sqls(found, "aggregation")
    assert any(s.startswith("SELECT country, COUNT(country) FROM") for s in aggregations)
    assert any("HAVING COUNT(*) > 1" not in s for s in aggregations)


def test_limit_one_is_not_lowered_to_zero():
    limits = sqls(mutations("SELECT name FROM singer ORDER BY age LIMIT 1"), "limit")
    assert limits == [
        "SELECT name FROM singer ORDER BY age LIMIT 2",
        "SELECT name FROM singer ORDER BY age",
    ]


def test_order_flip_keeps_the_default_null_placement():
    assert sqls(mutations("SELECT name FROM singer ORDER BY age DESC"), "order") == [
        "SELECT name FROM singer ORDER BY age ASC"
    ]
    assert sqls(mutations("SELECT name FROM singer ORDER BY age"), "order") == [
        "SELECT name FROM singer ORDER BY age DESC"
    ]


def test_nested_subquery_is_mutated_too():
    found = mutations(NESTED)
    assert sqls(found, "in") == [
        "SELECT name FROM singer WHERE NOT singer_id IN "
        "(SELECT singer_id FROM concert WHERE year = 2014)"
    ]
    assert any("year = 2013" in s for s in sqls(found, "constant"))
    # DISTINCT inside IN (...) cannot change anything: not offered.
    assert all("IN (SELECT DISTINCT" not in s for s in sqls(found, "distinct"))
    back = sqls(mutations("SELECT name FROM singer WHERE NOT singer_id IN (1, 2)"), "in")
    assert back == ["SELECT name FROM singer WHERE singer_id IN (1, 2)"]


def test_union_like_and_between_mutations():
    found = mutations(UNION)
    assert any("UNION ALL" in s for s in sqls(found, "set_operation"))
    likes = sqls(found, "like")
    assert any("LIKE 'an%'" in s for s in likes) and any("LIKE '%an'" in s for s in likes)
    betweens = sqls(found, "between")
    assert any("(age > 20 AND age <= 30)" in s for s in betweens)
    assert any("(age >= 20 AND age < 30)" in s for s in betweens)
    assert all("UNION SELECT DISTINCT" not in s for s in sqls(found, "distinct"))


def test_count_distinct_exists_and_intersect_mutations():
    found = mutations(COUNT_DISTINCT)
    assert any(s.startswith("SELECT COUNT(country) FROM") for s in sqls(found, "distinct"))
    assert any(s.startswith("SELECT SUM(DISTINCT country)") for s in sqls(found, "aggregation"))
    assert any(" WHERE EXISTS" in s for s in sqls(found, "exists"))
    assert any("EXCEPT SELECT 2" in s for s in sqls(found, "set_operation"))
    counted = sqls(mutations("SELECT COUNT(name) FROM singer"), "distinct")
    assert "SELECT COUNT(DISTINCT name) FROM singer" in counted


def test_connective_swaps_keep_their_meaning_when_rendered():
    found = mutations("SELECT a FROM t WHERE x = 1 AND y = 2 AND z = 3")
    swapped = sqls(found, "and_or")
    assert "SELECT a FROM t WHERE (x = 1 OR y = 2) AND z = 3" in swapped
    assert "SELECT a FROM t WHERE x = 1 AND y = 2 OR z = 3" in swapped
    assert "SELECT a FROM t WHERE x = 1 AND z = 3" in sqls(found, "dropped_predicate")
    negated = mutations("SELECT a FROM t WHERE NOT x BETWEEN 1 AND 5")
    assert "SELECT a FROM t WHERE NOT (x > 1 AND x <= 5)" in sqls(negated, "between")


def test_negative_constants():
    constants = sqls(mutations("SELECT a FROM t WHERE x > -3 AND y < 0"), "constant")
    assert "SELECT a FROM t WHERE x > -2 AND y < 0" in constants
    assert "SELECT a FROM t WHERE x > -4 AND y < 0" in constants
    assert "SELECT a FROM t WHERE x > -3 AND y < -1" in constants


def test_cap_keeps_a_spread_of_kinds():
    full = mutations(GROUPED, schema=SCHEMA)
    kinds = list(dict.fromkeys(m.kind for m in full))
    capped = mutations(GROUPED, schema=SCHEMA, limit=len(kinds))
    assert [m.kind for m in capped] == kinds  # one of each kind before a second of any
    assert capped == full[: len(kinds)]
    assert len(mutations(GROUPED, schema=SCHEMA, limit=10)) == 10
    # Round robin: no kind is two ahead of another that still had mutations to give.
    available = Counter(m.kind for m in full)
    counts = Counter(m.kind for m in mutations(GROUPED, schema=SCHEMA, limit=2 * len(kinds)))
    for a in counts:
        for b in counts:
            assert counts[a] <= counts[b] + 1 or counts[b] == available[b]


def test_other_dialects_render_in_their_own_syntax():
    found = mutations('SELECT "Name" FROM singer WHERE age > 30 LIMIT 5', dialect="postgres")
    assert 'SELECT "Name" FROM singer WHERE age >= 30 LIMIT 5' in sqls(found)
    assert 'SELECT "Name" FROM singer WHERE age > 30 LIMIT 6' in sqls(found)


def test_unparseable_sql_raises():
    with pytest.raises(sqlglot.errors.ParseError):
        mutations("SELECT FROM WHERE (")


# Distillation.

A, B, C = [(1,)], [(2,)], [(1,), (2,)]


def test_greedy_cover_picks_the_biggest_killer_and_breaks_ties_low():
    gold = [A, A, A, A]
    mutants = [
        [A, B, B, A],  # killed by 1 and 2
        [A, B, A, B],  # killed by 1 and 3
        [A, A, B, A],  # killed by 2
        [A, A, A, B],  # killed by 3
    ]
    result = distill(gold, mutants, order_matters=False)
    # 0 first (kept, kills nothing); 1, 2 and 3 each kill two: 1 wins the tie; then 2 and 3
    # tie on one each: 2, then 3.
    assert result == Distillation(variants=(0, 1, 2, 3), killed=4, total=4, survivors=())
    assert result.share == 1.0
    assert distill(gold, mutants, False, keep=()).variants == (1, 2, 3)
    assert distill(gold, mutants, False, max_variants=2) == Distillation((0, 1), 2, 4, (2, 3))
    assert distill(gold, mutants, False, max_variants=2).share == 0.5


def test_greedy_takes_the_variant_covering_the_most_first():
    gold = [A, A, A]
    mutants = [[A, B, A], [A, B, B], [A, A, B], [A, A, B]]
    assert distill(gold, mutants, False, keep=()).variants == (2, 1)


def test_an_unkillable_mutation_survives():
    gold = [A, C, B]
    mutants = [
        [A, C, B],  # the same on every variant (COUNT(*) against COUNT(pk), say)
        [B, C, B],
        [A, [(1,), (3,)], B],
    ]
    result = distill(gold, mutants, order_matters=False)
    assert result.variants == (0, 1)
    assert result.survivors == (0,)
    assert (result.killed, result.total) == (2, 3)
    assert result.share == pytest.approx(2 / 3)


def test_errors_kill_unless_the_gold_failed_too():
    assert kills(A, None, False)
    assert not kills(None, None, False)
    assert not kills(None, B, False)
    gold = [A, None, A]
    mutants = [[A, None, None], [A, B, A]]
    result = distill(gold, mutants, order_matters=False)
    # Variant 1 broke the gold itself, so it tells nothing, even about the mutant that differs.
    assert result.variants == (0, 2)
    assert result.survivors == (1,)


def test_order_matters_only_when_asked():
    gold = [[(1,), (2,)], [(1,), (2,)]]
    mutants = [[[(1,), (2,)], [(2,), (1,)]]]  # the same rows, reversed on variant 1
    assert distill(gold, mutants, order_matters=False).survivors == (0,)
    ordered = distill(gold, mutants, order_matters=True)
    assert ordered.variants == (0, 1) and ordered.share == 1.0


def test_keep_is_always_first_and_edge_cases():
    gold = [A, A]
    result = distill(gold, [[A, B]], order_matters=False, max_variants=1)
    assert result.variants == (0,) and result.survivors == (0,)
    assert distill(gold, [], order_matters=False).share == 1.0
    assert distill(gold, [], order_matters=False).variants == (0,)
    assert distill(gold, [[B, B]], order_matters=False, keep=(1,)).variants == (1,)
    with pytest.raises(ValueError):
        distill(gold, [[A]], order_matters=False)
    with pytest.raises(ValueError):
        distill(gold, [[A, A]], order_matters=False, keep=(2,))


# Literals.

def test_literals_resolve_aliases_and_read_every_kind_of_filter():
    sql = (
        "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id "
        "AND T2.year >= 2014 WHERE T1.country IN ('France', 'Japan') "
        "AND T1.age BETWEEN 20 AND 30.5 AND T1.name LIKE '%an%' AND -3 < T2.stadium_id "
        "AND T1.Country = 'France'"
    )
    assert query_literals(sql, "sqlite") == {
        ("concert", "year"): [2014],
        ("singer", "country"): ["France", "Japan"],
        ("singer", "age"): [20, 30.5],
        ("singer", "name"): ["an"],
        ("concert", "stadium_id"): [-3],
    }
    values = query_literals(sql, "sqlite")
    assert isinstance(values[("singer", "age")][0], int)
    assert isinstance(values[("singer", "age")][1], float)


def test_literals_numbers_stay_apart_from_numeric_strings():
    found = query_literals("SELECT * FROM t WHERE code = '7' OR code = 7", "sqlite")
    assert found == {("t", "code"): ["7", 7]}


def test_unqualified_columns_need_a_schema_when_several_tables_are_in_scope():
    sql = "SELECT name FROM singer, concert WHERE year = 2014 AND name LIKE 'J_n%'"
    assert query_literals(sql, "sqlite") == {}
    assert query_literals(sql, "sqlite", SCHEMA) == {
        ("concert", "year"): [2014],
        ("singer", "name"): ["Jxn"],
    }


def test_literals_of_subqueries_and_correlated_aliases():
    sql = (
        "SELECT s.name FROM Singer s WHERE s.singer_id IN "
        "(SELECT singer_id FROM concert WHERE year = 2014) AND EXISTS "
        "(SELECT 1 FROM concert c WHERE c.singer_id = s.singer_id AND s.age = 3) "
        "GROUP BY s.name HAVING COUNT(*) > 2"
    )
    assert query_literals(sql, "sqlite") == {("concert", "year"): [2014], ("singer", "age"): [3]}


def test_literals_skip_derived_tables_ctes_and_the_select_list():
    cte = "WITH x AS (SELECT * FROM singer) SELECT * FROM x WHERE age = 3"
    derived = "SELECT * FROM (SELECT age FROM singer) AS d WHERE d.age = 3"
    assert query_literals(cte, "sqlite") == {}
    assert query_literals(derived, "sqlite") == {}
    assert query_literals("SELECT age = 3 FROM singer LIMIT 5", "sqlite") == {}


def test_like_examples_match_their_pattern():
    assert like_example("%abc%") == "abc"
    assert like_example("a%") == "a"
    con = sqlite3.connect(":memory:")
    for pattern in ("%abc%", "a%", "%b", "J_n%", "%"):
        assert con.execute("SELECT ? LIKE ?", (like_example(pattern), pattern)).fetchone() == (1,)


def test_near_values():
    assert near_values(30) == [29, 31]
    assert near_values(2.5) == [1.5, 3.5]
    assert near_values("France") == ["Francf", "france"]
    assert near_values("2020-01-01") == ["2020-01-02"]
    assert near_values("jazz") == ["jazy", "JAZZ"]
    assert near_values("") == ["x"]
    assert near_values(True) == [False]
    assert near_values(None) == []


# Integration: three hand-made variants of a SQLite database.

DDL = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, singer_id INTEGER, year INTEGER);
"""
VARIANTS = [
    # 0, the "original": a plain match and a plain miss.
    {"singer": [(1, "Ann", "France", 40), (2, "Bob", "Japan", 25)],
     "concert": [(1, 1, 2014), (2, 1, 2015), (3, 2, 2014)]},
    # 1, boundaries: the literals and the values just beside them (age 30/31, 'France').
    {"singer": [(1, "Cid", "France", 30), (2, "Dee", "France", 31), (3, "Eve", "Spain", 50),
                (4, "Fay", "France", 20)],
     "concert": [(1, 2, 2014), (2, 3, 2014), (3, 3, 2013), (4, 4, 2015)]},
    # 2, duplicates: two singers with the same name and country.
    {"singer": [(1, "Gus", "France", 40), (2, "Gus", "France", 45), (3, "Hal", None, 33)],
     "concert": [(1, 1, 2014), (2, 2, 2014), (3, 3, 2014), (4, 3, 2014)]},
]


def build_variants(folder: Path) -> list[Path]:
    paths = []
    for i, rows in enumerate(VARIANTS):
        path = folder / f"variant_{i}.sqlite"
        with sqlite3.connect(path) as con:
            con.executescript(DDL)
            for table, values in rows.items():
                marks = ", ".join("?" * len(values[0]))
                con.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
        con.close()
        paths.append(path)
    return paths


def run(path: Path, sql: str):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.Error:
        return None
    finally:
        con.close()


def execute(folder: Path, gold: str, schema=None):
    """The gold and each of its mutations run on every variant (None: it failed there)."""
    paths = build_variants(folder)
    found = mutations(gold, schema=schema)
    gold_results = [run(p, gold) for p in paths]
    mutant_results = [[run(p, m.sql) for p in paths] for m in found]
    return found, gold_results, mutant_results


def test_variants_kill_every_mutation_of_a_filter(tmp_path):
    found, gold_results, mutant_results = execute(tmp_path, SIMPLE)
    result = distill(gold_results, mutant_results, gold_orders(SIMPLE))
    assert result.total == len(found) > 5
    # 0 kills the wrong operators and strings, 1 the boundary ones, 2 only DISTINCT.
    assert result.variants == (0, 1, 2)
    assert result.share == 1.0 and result.survivors == ()
    two = distill(gold_results, mutant_results, gold_orders(SIMPLE), max_variants=2)
    assert two.variants == (0, 1)
    assert [found[i].kind for i in two.survivors] == ["distinct"]
    assert two.share == pytest.approx(1 - 1 / len(found))


def test_equivalent_mutations_survive_on_a_grouped_join(tmp_path):
    gold = (
        "SELECT T1.name, COUNT(*) FROM singer AS T1 JOIN concert AS T2 "
        "ON T1.singer_id = T2.singer_id WHERE T2.year = 2014 GROUP BY T1.singer_id "
        "ORDER BY COUNT(*) DESC"
    )
    found, gold_results, mutant_results = execute(tmp_path, gold, SCHEMA)
    assert all(rows is not None for rows in gold_results)
    result = distill(gold_results, mutant_results, gold_orders(gold))
    survivors = {found[i].sql for i in result.survivors}
    # COUNT(*) and COUNT(a non-null key) mean the same here: no variant can tell them apart.
    assert any("COUNT(T1.singer_id)" in s for s in survivors)  # joined on: never NULL
    assert any("COUNT(T1.name)" in s for s in survivors)  # no variant has a NULL name
    assert result.variants[0] == 0
    assert 0.5 < result.share < 1.0
    assert result.killed + len(result.survivors) == result.total
