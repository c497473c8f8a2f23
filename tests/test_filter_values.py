"""Filter values checked against the data (grounding/values.py), on a real Spider database."""

from __future__ import annotations

import pytest

from groundsql.config import SafetyConfig
from groundsql.db import Database
from groundsql.grounding.values import (doubled_filter_values, looks_empty, missing_filter_values,
                                        unmentioned_filter_values)
from tests.conftest import BENCHMARKS, shared_file, spider_db

# (query, what the check reports: "table.column op literal" of each missing value, closest first)
CASES = [
    ("SELECT Name FROM singer WHERE Country = 'France'", []),
    ("SELECT Name FROM singer WHERE Country = 'france'", ["singer.Country = 'france' -> France"]),
    ("SELECT Name FROM singer WHERE Country = 'USA' AND Age > 20",
     ["singer.Country = 'USA' -> United States"]),
    ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID "
     "WHERE T1.Name = 'Joe Sharpe'", ["singer.Name = 'Joe Sharpe' -> Joe Sharp"]),
    ("SELECT count(*) FROM concert WHERE Year = 1999", ["concert.Year = 1999 -> 2014"]),
    ("SELECT Name FROM singer WHERE Country IN ('France', 'Germany')",
     ["singer.Country = 'Germany' -> "]),
    ("SELECT Name FROM singer WHERE Name LIKE '%Timba%'", []),
    ("SELECT Name FROM singer WHERE Name LIKE '%Zorro%'", ["singer.Name LIKE '%Zorro%' -> "]),
    # A negated filter that matches nothing does not empty a result: not reported.
    ("SELECT Name FROM singer WHERE NOT Country = 'Atlantis'", []),
    # A subquery's or CTE's column is not a table's: not probed.
    ("WITH t AS (SELECT Country AS c FROM singer) SELECT c FROM t WHERE c = 'Atlantis'", []),
    ("SELECT Name FROM singer WHERE Country = 'Atlantis' OR Country = 'France'",
     ["singer.Country = 'Atlantis' -> "]),
]


@pytest.fixture(scope="module")
def db() -> Database:
    database = Database(f"sqlite:///{spider_db('concert_singer')}")
    yield database
    database.close()


@pytest.mark.parametrize("sql, expected", CASES, ids=[c[0][:60] for c in CASES])
def test_missing_filter_values(db: Database, sql: str, expected: list[str]) -> None:
    found = missing_filter_values(sql, db, db.introspect(), SafetyConfig())
    got = [f"{m.table}.{m.column} {m.op} {m.literal!r} -> {m.closest[0] if m.closest else ''}"
           for m in found]
    expected_heads = [e.split(" -> ")[0] for e in expected]
    assert [g.split(" -> ")[0] for g in got] == expected_heads
    for g, e in zip(got, expected):
        closest = e.split(" -> ")[1]
        if closest:
            assert g.split(" -> ")[1] == closest


def test_the_closest_values_are_real_values_of_the_column(db: Database) -> None:
    (missing,) = missing_filter_values("SELECT * FROM singer WHERE Country = 'Frnace'", db,
                                       db.introspect(), SafetyConfig())
    countries = {r[0] for r in db.execute("SELECT DISTINCT Country FROM singer").rows}
    assert missing.closest[0] == "France" and set(missing.closest) <= countries


@pytest.mark.parametrize("rows, empty", [((), True), (((0,),), True), (((None, 0),), True),
                                          (((3,),), False), (((0,), (0,)), False), ((("",),), False)])
def test_what_counts_as_an_empty_result(rows, empty) -> None:
    assert looks_empty(rows) is empty


def test_an_empty_table_blames_no_filter_value() -> None:
    """LogicCat's databases ship with no rows: a query finding nothing there says nothing about
    its values, so the check must not send a right query to revision."""
    database = Database(f"sqlite:///{shared_file(BENCHMARKS / 'logiccat/database/car/car.sqlite')}")
    try:
        sql = "SELECT Model FROM cars WHERE Model = 'Corolla'"
        assert database.execute(sql).rows == ()
        assert missing_filter_values(sql, database, database.introspect(), SafetyConfig()) == []
    finally:
        database.close()


# (question, query, the filter values reported as made up: neither in the question nor in the data)
UNMENTIONED = [
    ("Which singers are from France?", "SELECT Name FROM singer WHERE Country = 'France'", []),
    ("Which singers are from france?", "SELECT Name FROM singer WHERE Country = 'FRANCE'", []),
    # In the data though the question words it otherwise: the data vouches for it.
    ("Which singers are Dutch?", "SELECT Name FROM singer WHERE Country = 'Netherlands'", []),
    ("Which singers are Dutch?", "SELECT Name FROM singer WHERE Country = 'Holland'", ["Holland"]),
    ("Which singers are older than 30?",
     "SELECT Name FROM singer WHERE Age > 30 AND Country IN ('France', 'Narnia')", ["Narnia"]),
    ("Singers named like Timbaland?", "SELECT Name FROM singer WHERE Name LIKE '%Timbalnd%'", []),
    ("How many concerts in 1999?", "SELECT count(*) FROM concert WHERE Year = '1999'", []),  # a number
    # A placeholder made of the question's words and one it lacks.
    ("What does a singer's song earn?", "SELECT Name FROM singer WHERE Song_Name = 'Song Title'", ["Song Title"]),
    ("Songs of the singer Joe Sharp?", "SELECT Song_Name FROM singer WHERE Name = 'joe  sharp'", []),
]


@pytest.mark.parametrize("question, sql, expected", UNMENTIONED, ids=[c[1][20:70] for c in UNMENTIONED])
def test_unmentioned_filter_values(db: Database, question: str, sql: str, expected: list[str]) -> None:
    assert unmentioned_filter_values(sql, question, db, db.introspect(), SafetyConfig()) == expected


def test_a_missing_value_is_shown_where_it_is() -> None:
    """'europe' filtered on countries.Continent (an id) is a value of continents.Continent: said
    so, the model can join that table (told only "matches no row", the 1.5B model repeated its
    query four times on spider_dev/130)."""
    with Database(f"sqlite:///{spider_db('car_1')}") as cars:
        def told(sql: str) -> list[str]:
            return [m.text() for m in missing_filter_values(sql, cars, cars.introspect(), SafetyConfig())]

        assert told("SELECT CountryName FROM countries WHERE Continent = 'Europe'") == [
            "countries.Continent = 'Europe' matches no row; 'Europe' is a value of continents.Continent (as 'europe')"]
        assert told("SELECT * FROM car_makers WHERE Maker LIKE '%europ%'")[0].endswith(
            "; '%europ%' matches values of continents.Continent")
        # A value no column holds gets the closest values alone.
        assert " is a value of " not in told("SELECT * FROM car_makers WHERE Maker = 'narnia'")[0]


# (question, query, the text values it requires of several columns at once that the question says once)
DOUBLED = [
    ("Give the flight numbers of flights leaving from APG.",
     "SELECT FlightNo FROM flights WHERE SourceAirport = 'APG' AND DestAirport = 'APG'", ["APG"]),
    ("How many 'United Airlines' flights go to Airport 'ASY'?",
     "SELECT COUNT(*) FROM flights AS T1 JOIN airlines AS T2 ON T1.Airline = T2.uid "
     "WHERE T1.SourceAirport = 'ASY' AND T1.DestAirport = 'ASY' AND T2.Airline = 'United Airlines'", ["ASY"]),
    ("Give the flight numbers of flights leaving from APG.",
     "SELECT FlightNo FROM flights WHERE SourceAirport = 'APG'", []),
    # Either column (an OR), or a question that names the value twice: not doubled.
    ("Which flights leave from or land at APG?",
     "SELECT FlightNo FROM flights WHERE SourceAirport = 'APG' OR DestAirport = 'APG'", []),
    ("Which flights go from APG back to APG?",
     "SELECT FlightNo FROM flights WHERE SourceAirport = 'APG' AND DestAirport = 'APG'", []),
    # Numbers are not text values.
    ("Which flights have number 28?", "SELECT * FROM flights WHERE FlightNo = 28 AND Airline = 28", []),
]


@pytest.mark.parametrize("question, sql, expected", DOUBLED, ids=[c[0][:40] for c in DOUBLED])
def test_doubled_filter_values(question: str, sql: str, expected: list[str]) -> None:
    with Database(f"sqlite:///{spider_db('flight_2')}") as flights:
        assert doubled_filter_values(sql, question, flights.introspect(), "sqlite") == expected
