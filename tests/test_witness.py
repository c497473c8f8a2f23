"""Witness rows: a filled database edited so a query's joined filters meet and narrowly miss."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from groundsql.testsuite.mutations import mutations
from groundsql.testsuite.suite import build_suite
from groundsql.testsuite.witness import Condition, plant_witnesses, witness_conditions

DDL = """
CREATE TABLE maker (maker_id INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE car (car_id INTEGER PRIMARY KEY, maker_id INTEGER REFERENCES maker,
                  model TEXT, speed INTEGER, battery REAL, built TEXT);
CREATE TABLE dims (dims_id INTEGER PRIMARY KEY, car_id INTEGER REFERENCES car, weight INTEGER);
"""


def filled(path: Path, seed: int = 1) -> Path:
    """Random rows in which no car is both fast (210) and heavy (> 1500), built in 2023."""
    rng = random.Random(seed)
    with sqlite3.connect(path) as con:
        con.executescript(DDL)
        con.executemany("INSERT INTO maker VALUES (?, ?)", [(i, f"M{i}") for i in range(1, 6)])
        con.executemany(
            "INSERT INTO car VALUES (?, ?, ?, ?, ?, ?)",
            [(i, rng.randint(1, 5), rng.choice("ABCD"), rng.choice([150, 180, 210]),
              rng.random(), f"{rng.randint(2000, 2019)}-03-01") for i in range(1, 31)])
        con.executemany(
            "INSERT INTO dims VALUES (?, ?, ?)",
            [(i, rng.randint(1, 30), rng.randint(900, 1400)) for i in range(1, 31)])
    con.close()
    return path


def rows(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


JOINED = ("SELECT c.model, d.weight FROM car c JOIN dims d ON c.car_id = d.car_id "
          "WHERE c.speed = 210 AND d.weight > 1500")


def test_joined_filters_meet_on_some_rows_and_miss_by_one_condition(tmp_path: Path) -> None:
    db = filled(tmp_path / "v.sqlite")
    assert rows(db, JOINED) == []  # the filler alone: no fast heavy car
    assert plant_witnesses(db, JOINED, random.Random(0)) >= 2
    hits = rows(db, JOINED)
    assert hits and all(weight == 1501 for _, weight in hits)
    # The near misses now differ from the gold: the boundary row (weight 1500) and a row
    # missing only the speed condition are there.
    boundary = rows(db, JOINED.replace("> 1500", ">= 1500"))
    dropped = rows(db, JOINED.replace("c.speed = 210 AND ", ""))
    assert len(boundary) > len(hits) or len(dropped) > len(hits)
    assert rows(db, "PRAGMA foreign_key_check") == []


def test_every_near_miss_of_a_joined_filter_is_told_apart(tmp_path: Path) -> None:
    """Over a few planted variants each operator, constant and dropped-condition mutation
    differs from the gold somewhere."""
    variants = [filled(tmp_path / f"v{i}.sqlite", seed=i) for i in range(4)]
    for i, db in enumerate(variants):
        plant_witnesses(db, JOINED, random.Random(i))
    gold = [sorted(rows(db, JOINED)) for db in variants]
    for mutant in mutations(JOINED):
        if mutant.kind not in ("comparison", "constant", "dropped_predicate"):
            continue
        found = [sorted(rows(db, mutant.sql)) for db in variants]
        assert found != gold, mutant.sql


def test_duplicates_groups_and_case_branches(tmp_path: Path) -> None:
    db = filled(tmp_path / "v.sqlite")
    plant_witnesses(db, "SELECT model FROM car WHERE speed = 210 AND battery IS NULL",
                    random.Random(3))
    found = rows(db, "SELECT model FROM car WHERE speed = 210 AND battery IS NULL")
    assert found and len(found) > len(set(found))  # a copied row: DISTINCT changes the result

    grouped = ("SELECT model, COUNT(*), CASE WHEN speed > 200 THEN 'fast' ELSE 'slow' END "
               "FROM car WHERE strftime('%Y', built) = '2023' GROUP BY model LIMIT 3")
    assert rows(db, grouped) == []  # nothing was built in 2023
    plant_witnesses(db, grouped, random.Random(4))
    result = rows(db, grouped)
    assert result and max(count for _, count, _ in result) >= 2  # a group of several rows
    assert rows(db, "SELECT COUNT(*) FROM car WHERE built LIKE '2024-%'")[0][0] >= 1  # near miss


def test_conditions_read_from_the_query() -> None:
    (conditions,) = witness_conditions(
        "SELECT * FROM t WHERE a = 'x' AND 5 < b AND c BETWEEN 1 AND 9 AND d LIKE 'ab%' "
        "AND e <> 3 AND f IS NULL AND strftime('%Y', g) >= '2020' AND lower(h) = 'k'")
    assert conditions == [
        Condition("t", "a", "x", "y"), Condition("t", "b", 6, 5), Condition("t", "c", 1, 0),
        Condition("t", "d", "ab", "ac"), Condition("t", "e", 2, 3),
        Condition("t", "f", None, None), Condition("t", "g", "2020-06-15", "2019-06-15"),
    ]
    assert witness_conditions("SELECT 1 + 1") == []
    assert witness_conditions("SELECT * FROM (SELECT a FROM t) s WHERE s.a = 1") == []


def test_a_query_that_does_not_parse_is_left_alone(tmp_path: Path) -> None:
    db = filled(tmp_path / "v.sqlite")
    before = db.read_bytes()
    assert plant_witnesses(db, "SELEC nonsense FROM", random.Random(0)) == 0
    assert db.read_bytes() == before


def test_suite_of_a_query_reading_no_table_counts_survivors_as_equivalent(tmp_path: Path) -> None:
    db = filled(tmp_path / "v.sqlite")
    sql = "SELECT CASE WHEN 2 * 3 >= 5 THEN 'yes' ELSE 'no' END, 10 / 4.0"
    suite = build_suite(db, sql, out_dir=tmp_path / "suite", candidates=2)
    # `>= 5` -> `> 5` or `>= 4` cannot change a constant's value on any data.
    assert suite.mutations_equivalent > 0
    assert suite.share == 1.0 and suite.informative


@pytest.mark.parametrize("sql, kinds", [
    # the key pins one row: SUM, MIN, MAX and AVG agree, DISTINCT is moot
    ("SELECT SUM(speed) FROM car WHERE car_id = 3", {"aggregation": ["COUNT"]}),
    # the output holds the key, or every grouping column: no duplicates for DISTINCT to drop
    ("SELECT car_id, model FROM car WHERE speed > 3", {"distinct": []}),
    ("SELECT model, MAX(speed) FROM car GROUP BY model", {"distinct": []}),
    ("SELECT 1 + 2", {"distinct": []}),
])
def test_equivalent_near_misses_are_not_made_when_keys_prove_them(sql, kinds) -> None:
    keys = {"car": [("car_id",)], "maker": [("maker_id",), ("name",)]}
    made = mutations(sql, keys=keys)
    for kind, allowed in kinds.items():
        of_kind = [m.sql for m in made if m.kind == kind]
        assert all(any(a in s for a in allowed) for s in of_kind), of_kind
    without = mutations(sql)
    assert len(without) >= len(made)


def test_a_formula_threshold_is_met_exactly_and_missed_by_half(tmp_path: Path) -> None:
    """`CASE WHEN a * 100.0 / b > 90`: `>` against `>=` and 90 against 89 or 91 need rows
    where the formula is 90, a little above and a little below; a JOIN ... USING connects."""
    db = filled(tmp_path / "v.sqlite")
    sql = ("SELECT c.model, CASE WHEN d.weight * 100.0 / c.speed > 90 THEN 'heavy' ELSE 'light' END "
           "FROM car c JOIN dims d USING (car_id) WHERE c.model = 'B'")
    plant_witnesses(db, sql, random.Random(5))
    ratios = {r[0] for r in rows(db, "SELECT d.weight * 100.0 / c.speed FROM car c JOIN dims d "
                                     "USING (car_id) WHERE c.model = 'B'")}
    assert {90.0, 90.5, 89.5} <= ratios
    for mutant in ("> 89", "> 91", ">= 90"):
        assert sorted(rows(db, sql)) != sorted(rows(db, sql.replace("> 90", mutant))), mutant


def test_a_variant_of_witnesses_only_tells_apart_what_reads_other_rows(tmp_path: Path) -> None:
    db = filled(tmp_path / "v.sqlite")
    constant = ("SELECT 42 FROM car c JOIN dims d ON c.car_id = d.car_id "
                "WHERE c.speed = 210 AND d.weight > 1500 LIMIT 1")
    plant_witnesses(db, constant, random.Random(1), only_witnesses=True)
    assert rows(db, "SELECT COUNT(*) FROM car WHERE speed <> 210") == [(0,)]
    assert rows(db, constant) == [(42,)]
    # The output is a constant: only the absence of other rows tells `<>` from `=`.
    assert rows(db, constant.replace("c.speed = 210", "c.speed <> 210")) == []
