"""Reflection feedback: the error plus the real columns of the tables the failed query used."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundsql.db import Database
from groundsql.evaluation.datasets import load_benchmark
from groundsql.strategies.feedback import error_feedback, joined, mismatched_keys, powered, requalified
from tests.conftest import BENCHMARKS, shared_file


def sqlite_error(path: Path, sql: str) -> str:
    """The error text SQLite really gives for `sql`."""
    with Database(f"sqlite:///{path}") as db:
        try:
            db.execute(sql)
        except Exception as err:
            return str(err)
    raise AssertionError(f"SQLite ran {sql}")


def test_wrong_column_lists_real_columns_by_alias(concert_singer: Path) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    text = error_feedback(
        "SELECT T2.Name FROM concert AS T1 JOIN singer_in_concert AS T2 ON T1.concert_ID = T2.concert_ID",
        "no such column: T2.Name",
        schema,
    )
    assert text.splitlines()[0] == "no such column: T2.Name"
    assert "- T2 = singer_in_concert: concert_ID, Singer_ID" in text
    assert "- T1 = concert: concert_ID, concert_Name, Theme, Stadium_ID, Year" in text
    # ... and where the column really is.
    assert text.splitlines()[-2] == "Name is a column of singer, stadium: join that table to use it."


def test_the_tables_that_have_a_missing_column_are_named(concert_singer: Path) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    sql = "SELECT s.Country FROM concert AS s"
    for error in ('no such column: s.Country', 'column s.country does not exist',
                  'Binder Error: Table "s" does not have a column named "Country"'):
        assert "ountry is a column of singer: join" in error_feedback(sql, error, schema), error
    assert error_feedback(sql, "no such column: s.Colour", schema).endswith(
        "No table has a column named Colour.")


def test_a_missing_column_of_a_joined_table_is_told_by_the_name_the_query_gives_it(concert_singer: Path) -> None:
    # The column is there, under the other alias: joining its table again is not the fix.
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    sql = ("SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID")
    text = error_feedback(sql, sqlite_error(concert_singer, sql), schema)
    assert "Name is a column of singer, which your query calls T1: write T1.Name." in text.splitlines()
    # ... and the foreign keys that join the query's tables, by the names it gives them.
    assert text.splitlines()[-1] == "The foreign keys join these tables on: T2.Singer_ID = T1.Singer_ID."
    sql = "SELECT singer_in_concert.Name FROM singer JOIN singer_in_concert USING (Singer_ID)"
    assert error_feedback(sql, sqlite_error(concert_singer, sql), schema).splitlines()[-2:] == [
        "Name is a column of singer: write singer.Name.",
        "The foreign keys join these tables on: singer_in_concert.Singer_ID = singer.Singer_ID."]


def test_an_operator_sqlite_lacks_is_named_with_what_to_write(concert_singer: Path) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    sql = "SELECT Age ^ 2 FROM singer"
    error = sqlite_error(concert_singer, sql)
    assert "POWER(x, y)" in error_feedback(sql, error, schema)
    assert "x * x" in error_feedback("SELECT power(Age, 2) FROM singer", "no such function: power", schema)
    assert "POWER" not in error_feedback(sql, "no such column: Agee", schema)


def test_unknown_table_lists_the_real_ones(concert_singer: Path) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    text = error_feedback("WITH x AS (SELECT 1) SELECT * FROM singers, x", "no such table: singers", schema)
    assert "These tables do not exist: singers." in text
    assert "The tables are: concert, singer, singer_in_concert, stadium." in text
    assert "x" not in text.split("exist:")[1].split(".")[0]  # a CTE is not a missing table


def test_unparseable_sql_gives_the_error_alone(concert_singer: Path) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    assert error_feedback("SELEC nonsense (((", "refused unparseable SQL", schema) == "refused unparseable SQL"


def test_reflection_turn_carries_the_feedback(concert_singer: Path) -> None:
    import groundsql
    from tests.test_llm import Scripted

    llm = Scripted("SELECT T2.Name FROM concert AS T1 JOIN singer_in_concert AS T2 ON 1", "SELECT 1")
    with groundsql.connect(concert_singer, llm=llm) as session:
        session.ask("Which singers sang in a concert?", strategy="zero-shot")
    first, second = llm.requests
    assert second.messages[: len(first.messages)] == first.messages  # same prefix, reused
    assert second.messages[-2].role == "assistant"
    follow_up = second.messages[-1].content
    assert "no such column: T2.Name" in follow_up
    assert "- T2 = singer_in_concert: concert_ID, Singer_ID" in follow_up


def test_an_aggregate_over_a_column_the_subquery_lacks_is_pointed_out(concert_singer: Path) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    sql = "SELECT Name FROM singer WHERE Age > (SELECT AVG(Age) FROM concert)"
    text = error_feedback(sql, sqlite_error(concert_singer, sql), schema)
    assert text.splitlines()[-1] == ("In (SELECT AVG(Age) FROM concert), concert has no column Age; "
                                     "singer has: select it from there.")
    fine = "SELECT Name FROM singer WHERE Age > (SELECT AVG(Age) FROM singer)"
    assert "In (" not in error_feedback(fine, "misuse of aggregate: AVG()", schema)


# (query as written, query after the repair; None: left to the model), on concert_singer.
REQUALIFY_CASES = [
    ("SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID",
     "SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"),
    # Every use of the misqualified column is repaired, by table name as well as by alias.
    ("SELECT concert.Name FROM singer JOIN concert ON 1 = 1 WHERE concert.Name = 'Joe' ORDER BY concert.Name",
     "SELECT singer.Name FROM singer JOIN concert ON 1 = 1 WHERE singer.Name = 'Joe' ORDER BY singer.Name"),
    # Inside a subquery, only that SELECT's tables count.
    ("SELECT Name FROM singer WHERE Singer_ID IN (SELECT T.Country FROM singer_in_concert AS T)", None),
    # No table of the query has the column: joining one is the model's decision.
    ("SELECT T1.Name FROM concert AS T1", None),
    # Two tables have it (stadium and singer both have Name): no single repair.
    ("SELECT T3.Name FROM singer AS T1 JOIN stadium AS T2 ON 1 = 1 JOIN concert AS T3 ON 1 = 1", None),
    # In a join condition, the column a foreign key pairs with the other side.
    ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T2.Name = T1.Singer_ID",
     "SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T2.Singer_ID = T1.Singer_ID"),
    # ... and nothing when no key pairs them (the owner's column would join T2 with itself).
    ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.concert_ID = T2.concert_ID", None),
    # A repair that would compare a column with itself is no repair.
    ("SELECT T1.Name FROM singer AS T1, singer_in_concert AS T2 WHERE T1.concert_ID = T2.concert_ID", None),
    # Not qualified: nothing to requalify.
    ("SELECT Theme FROM singer", None),
]


# (query as written, after the repair; None: left to the model): a column of a table the query
# does not join, which one of its tables references by a foreign key (concert -> stadium,
# singer_in_concert -> concert and singer).
JOINED_CASES = [
    ("SELECT T1.concert_Name, T1.Capacity FROM concert AS T1",
     "SELECT T1.concert_Name, stadium.Capacity FROM concert AS T1 "
     "LEFT JOIN stadium ON stadium.Stadium_ID = T1.Stadium_ID"),
    ("SELECT COUNT(*) FROM concert WHERE Capacity > 10000",
     "SELECT COUNT(*) FROM concert LEFT JOIN stadium ON stadium.Stadium_ID = concert.Stadium_ID "
     "WHERE stadium.Capacity > 10000"),
    # The table's name is taken: the join gets another.
    ("SELECT COUNT(*) FROM singer_in_concert AS concert WHERE concert.Theme = 'Free choice'",
     "SELECT COUNT(*) FROM singer_in_concert AS concert LEFT JOIN concert AS concert_joined "
     "ON concert_joined.concert_ID = concert.concert_ID WHERE concert_joined.Theme = 'Free choice'"),
    # concert has concert_Name: T1.Name is more likely that one, short of its prefix.
    ("SELECT T1.Name FROM concert AS T1", None),
    # singer_in_concert references singer and concert; only singer has Age.
    ("SELECT T1.Age FROM singer_in_concert AS T1", "SELECT singer.Age FROM singer_in_concert AS T1 "
     "LEFT JOIN singer ON singer.Singer_ID = T1.Singer_ID"),
    # No referenced table has it: left to the model.
    ("SELECT T1.Population FROM concert AS T1", None),
    # Only towards the referenced table: stadium -> concert would repeat stadiums per concert.
    ("SELECT Theme FROM stadium", None),
]


@pytest.mark.parametrize(("repair", "written", "repaired"),
                         [(requalified, *case) for case in REQUALIFY_CASES] + [(joined, *case) for case in JOINED_CASES])
def test_a_misplaced_column_is_repaired_where_one_table_has_it(concert_singer: Path, repair, written: str,
                                                               repaired: str | None) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    fixed = repair(written, sqlite_error(concert_singer, written), schema)
    assert fixed == repaired
    if fixed is not None:
        with Database(f"sqlite:///{concert_singer}") as db:
            db.execute(fixed)  # the repair runs


# (query as written, after the repair; None: left to the model): ^ is no operator in SQLite.
POWERED_CASES = [
    ("SELECT (Age * (1 + 0.015)) ^ 5 AS grown FROM singer", "SELECT POWER((Age * (1 + 0.015)), 5) AS grown FROM singer"),
    ("SELECT Age ^ 2 FROM singer", "SELECT POWER(Age, 2) FROM singer"),
    # Here the parser's precedence (a * b, then ^) is not what the model meant: left alone.
    ("SELECT 0.5 * Age ^ 2 FROM singer", None),
]


@pytest.mark.parametrize(("written", "repaired"), POWERED_CASES)
def test_a_power_written_with_a_caret_is_written_with_power(concert_singer: Path, written: str,
                                                            repaired: str | None) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    error = sqlite_error(concert_singer, written)
    assert powered(written, error, schema) == repaired
    if repaired is not None:
        with Database(f"sqlite:///{concert_singer}") as db:
            db.execute(repaired)


# (query, what the model is told; None: nothing): a foreign key compared with a column of the
# table it references other than the one it holds. The query runs; only the schema can tell.
KEY_MISMATCH_CASES = [
    ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Name = T2.Singer_ID",
     "It compares singer.Name with singer_in_concert.Singer_ID, but singer_in_concert.Singer_ID "
     "holds singer.Singer_ID: compare singer.Singer_ID with it."),
    # A one-column subquery, resolved in its own SELECT (the bare Stadium_ID is concert's).
    ("SELECT Name FROM stadium WHERE Name IN (SELECT Stadium_ID FROM concert WHERE Year = 2014)",
     "It compares stadium.Name with concert.Stadium_ID, but concert.Stadium_ID holds "
     "stadium.Stadium_ID: compare stadium.Stadium_ID with it."),
    # A column of another table altogether: the key's table is to be joined.
    ("SELECT T1.Name FROM stadium AS T1 JOIN singer_in_concert AS T2 ON T1.Stadium_ID = T2.Singer_ID",
     "It compares stadium.Stadium_ID with singer_in_concert.Singer_ID, but singer_in_concert.Singer_ID "
     "holds singer.Singer_ID: compare singer.Singer_ID with it (join singer)."),
    # The key against the column it holds, either way round: nothing.
    ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T2.Singer_ID = T1.Singer_ID", None),
    ("SELECT Name FROM stadium WHERE Stadium_ID IN (SELECT Stadium_ID FROM concert)", None),
    # No key between the columns compared.
    ("SELECT Name FROM singer WHERE Name = Country", None),
    ("SELECT T1.Name FROM singer AS T1 JOIN stadium AS T2 ON T1.Name = T2.Name", None),
    # The outer query's column in a correlated subquery is not resolved there: nothing is claimed.
    ("SELECT Name FROM stadium AS s WHERE EXISTS (SELECT 1 FROM concert AS c WHERE c.Stadium_ID = s.Name)",
     None),
]


@pytest.mark.parametrize(("sql", "told"), KEY_MISMATCH_CASES)
def test_a_foreign_key_compared_with_another_column_of_its_table_is_told(
        concert_singer: Path, sql: str, told: str | None) -> None:
    schema = Database(f"sqlite:///{concert_singer}").introspect()
    with Database(f"sqlite:///{concert_singer}") as db:
        db.execute(sql)  # every case runs: no error reports the mistake
    assert mismatched_keys(sql, schema) == ([told] if told else [])


def test_no_gold_query_of_the_shared_benchmarks_is_told_of_a_key_mismatch() -> None:
    # The check's precision on queries known right: Spider's and LogicCat's golds.

    schemas: dict[str, object] = {}
    flagged, compared = [], 0
    for name in ("spider_dev", "logiccat"):
        shared_file(BENCHMARKS / name / "dev.json")
        for item in load_benchmark(BENCHMARKS / name):
            if item.db_url not in schemas:
                schemas[item.db_url] = Database(item.db_url).introspect()
            compared += " join " in item.gold_sql.lower() or " in (" in item.gold_sql.lower()
            if mismatched_keys(item.gold_sql, schemas[item.db_url]):
                flagged.append(item.item_id)
    assert compared > 200 and flagged == []
