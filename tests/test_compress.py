"""Schema compression on the real benchmark databases: what the gold SQL uses is kept, a large
schema shrinks, joins survive, named values are found, and it all works without embeddings."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import networkx as nx
import pydantic
import pytest
import sqlglot
from sqlglot import exp

from groundsql.db import Database
from groundsql.schema import Column, ForeignKey, Schema, Table, m_schema
from groundsql.schema.compress import CompressionConfig, SchemaIndex, compress, name_words
from groundsql.schema.linking import join_graph
from tests.conftest import BENCHMARKS, shared_file

# Every schema compressed, however small, so recall is measured rather than given.
FORCED = CompressionConfig(whole_below_columns=0)


def _database(bench: str, db_id: str) -> Path:
    return shared_file(BENCHMARKS / bench / "database" / db_id / f"{db_id}.sqlite")


@cache
def _index(bench: str, db_id: str) -> SchemaIndex:
    """Lexical only (no embedder); built once per database for the whole module."""
    db = Database(f"sqlite:///{_database(bench, db_id)}")
    return SchemaIndex.build(db, db.introspect(), None)


@cache
def _questions(bench: str) -> tuple[dict, ...]:
    return tuple(json.loads((BENCHMARKS / bench / "dev.json").read_text(encoding="utf-8")))


def _item(bench: str, db_id: str, start: str) -> dict:
    """The benchmark item whose question starts so (the text, not a position, names it)."""
    found = [q for q in _questions(bench) if q["db_id"] == db_id and q["question"].startswith(start)]
    assert found, f"no {bench} question on {db_id} starts with {start!r}"
    return found[0]


def gold_columns(sql: str, schema: Schema) -> tuple[set[str], set[tuple[str, str]]]:
    """Tables and (table, column) pairs the gold SQL reads, lower case, resolved through its
    aliases; an unqualified column belongs to the first table of its SELECT that has it."""
    trees = [t for t in sqlglot.parse(sql, read="sqlite") if t is not None]
    tables: set[str] = set()
    columns: set[tuple[str, str]] = set()
    for tree in trees:
        aliases = {t.alias_or_name.lower(): schema.table(t.name).name.lower()
                   for t in tree.find_all(exp.Table) if schema.table(t.name)}
        tables |= set(aliases.values())
        for column in tree.find_all(exp.Column):
            if column.table:
                owners = [aliases.get(column.table.lower())]
            else:
                select = column.find_ancestor(exp.Select)
                scope = select.find_all(exp.Table) if select else ()
                owners = [aliases[t.alias_or_name.lower()] for t in scope
                          if t.alias_or_name.lower() in aliases] or sorted(set(aliases.values()))
            owner = next((o for o in owners if o and schema.table(o).column(column.name)), None)
            if owner:
                columns.add((owner, column.name.lower()))
    return tables, columns


def _kept(schema: Schema) -> set[tuple[str, str]]:
    return {(t.name.lower(), c.name.lower()) for t in schema.tables for c in t.columns}


# -- recall: what the gold SQL needs is kept -------------------------------------------------

RECALL_CASES = [
    ("spider_dev", "concert_singer", "Show the name and theme for all concerts and the number"),
    ("spider_dev", "pets_1", "Find the first name of students who have both cat and dog pets"),
    ("spider_dev", "car_1", "Which countries in europe have at least 3 car manufacturers?"),
    ("spider_dev", "flight_2", "Find all airlines that have flights from airport 'CVO'"),
    ("spider_dev", "employee_hire_evaluation", "Which shop has the most employees?"),
    ("spider_dev", "museum_visit", "What is the name of the visitor who visited both"),
    ("spider_dev", "battle_death", "What are the distinct battle names which are between"),
    ("spider_dev", "cre_Doc_Template_Mgt", "Show all paragraph ids and texts for the document"),
    ("spider_dev", "course_teach", "Show the name of the teacher for the math course."),
    ("logiccat", "car", "Calculate the average fuel efficiency of all cars from Tesla"),
    ("logiccat", "architect", "Ponte Vecchio (stone, built in 1345)"),
    ("logiccat", "AirCraft", "Calculate the total disk area of all winning aircraft"),
]


@pytest.mark.parametrize("bench, db_id, start", RECALL_CASES)
def test_gold_tables_and_columns_are_kept(bench: str, db_id: str, start: str) -> None:
    index = _index(bench, db_id)
    item = _item(bench, db_id, start)
    tables, columns = gold_columns(item["query"], index.schema)
    assert columns, "the gold SQL should name columns of the schema"
    result = compress(item["question"], index, FORCED)
    kept = _kept(result.schema)
    assert not result.whole
    assert tables <= {t.name.lower() for t in result.schema.tables}
    assert columns <= kept, f"dropped {sorted(columns - kept)}"


# -- compression: a larger schema shrinks ----------------------------------------------------


@pytest.mark.parametrize("db_id, start, most", [
    ("car", "What is the total profit for BMW?", 0.3),
    ("architect", "Ponte Vecchio (stone, built in 1345)", 0.5),
])
def test_a_larger_schema_is_compressed(db_id: str, start: str, most: float) -> None:
    index = _index("logiccat", db_id)
    result = compress(_item("logiccat", db_id, start)["question"], index, CompressionConfig())
    assert result.total_columns > CompressionConfig().whole_below_columns
    assert not result.whole
    assert result.ratio <= most, f"kept {result.kept_columns} of {result.total_columns}"
    assert len(result.schema.tables) < len(index.schema.tables)


def test_a_small_schema_is_kept_whole() -> None:
    index = _index("spider_dev", "concert_singer")
    result = compress("How many singers are there?", index, CompressionConfig())
    assert result.whole and result.ratio == 1.0
    assert _kept(result.schema) == _kept(index.schema)


def test_nothing_salient_keeps_the_schema_whole() -> None:
    result = compress("Hello, is anybody there?", _index("logiccat", "car"), FORCED)
    assert result.whole and result.tables == ()
    assert result.kept_columns == result.total_columns


@pytest.mark.parametrize("max_columns, per_table", [(1, 1), (4, 2), (12, 3)])
def test_column_budget(max_columns: int, per_table: int) -> None:
    config = CompressionConfig(whole_below_columns=0, max_columns=max_columns,
                               min_columns_per_table=per_table)
    index = _index("logiccat", "car")
    question = _item("logiccat", "car", "Calculate the average fuel efficiency of all cars from Tesla")
    result = compress(question["question"], index, config)
    full = {t.name: t for t in index.schema.tables}
    keys = {(t.name, c) for t in result.schema.tables for c in full[t.name].primary_key}
    keys |= {(t.name, c) for t in result.schema.tables for fk in t.foreign_keys for c in fk.columns}
    keys |= {(fk.ref_table, c) for t in result.schema.tables for fk in t.foreign_keys
             for c in fk.ref_columns}
    for table in result.schema.tables:
        # The minimum holds for every kept table (bridges too) ...
        assert len(table.columns) >= min(per_table, len(full[table.name].columns))
    # ... and the budget for all but the keys, which come on top.
    others = [(t.name, c.name) for t in result.schema.tables for c in t.columns
              if (t.name, c.name) not in keys]
    assert len(others) <= max(max_columns, per_table * len(result.schema.tables))


# -- joins: keys and bridges survive ---------------------------------------------------------


@pytest.mark.parametrize("bench, db_id, question, bridges", [
    # horsepower (cars_data) and a continent: four tables lie between them.
    ("spider_dev", "car_1", "What is the average horsepower of the cars made in europe?",
     {"car_names", "model_list", "car_makers", "countries"}),
    ("spider_dev", "course_teach", "Show the name of the teacher for the math course.",
     {"course_arrange"}),
])
def test_bridges_and_keys_keep_the_schema_joinable(bench: str, db_id: str, question: str,
                                                   bridges: set[str]) -> None:
    index = _index(bench, db_id)
    result = compress(question, index, FORCED)
    assert bridges <= {b.lower() for b in result.bridges}
    assert nx.is_connected(join_graph(result.schema))
    kept = {t.name: t for t in result.schema.tables}
    for table in index.schema.tables:
        if table.name not in kept:
            continue
        assert set(table.primary_key) <= {c.name for c in kept[table.name].columns}
        for fk in table.foreign_keys:
            if fk.ref_table in kept:
                assert fk in kept[table.name].foreign_keys
                assert set(fk.columns) <= {c.name for c in kept[table.name].columns}
                assert set(fk.ref_columns) <= {c.name for c in kept[fk.ref_table].columns}


def test_a_disconnected_schema_links_each_part() -> None:
    # flight_2's airlines table has no foreign key: the graph has two parts.
    index = _index("spider_dev", "flight_2")
    assert not nx.is_connected(index.graph)
    result = compress("Which airlines fly from airports in Aberdeen?", index, FORCED)
    assert {"airlines", "airports"} <= {t.name.lower() for t in result.schema.tables}


# -- values: a value the question names is found --------------------------------------------


@pytest.mark.parametrize("db_id, question, expected", [
    ("singer", 'List the name of singers whose citizenship is not "France".',
     "singer.Citizenship = 'France'"),
    ("flight_2", "Which flight numbers correspond to United Airlines flights?",
     "airlines.Airline = 'United Airlines'"),
    ("battle_death", "What are the distinct battle names which are between bulgarian commander "
     "'Kaloyan' and latin commander 'Baldwin I'?", "battle.bulgarian_commander = 'Kaloyan'"),
    # plural in the question, singular in the data: fuzzy, not exact
    ("real_estate_properties", "What are the names of properties that are either houses or "
     "apartments with more than 1 room?", "Properties.property_type_code = 'House'"),
    ("car_1", "What is the average horsepower of the cars made in europe?",
     "continents.Continent = 'europe'"),
])
def test_a_named_value_is_found(db_id: str, question: str, expected: str) -> None:
    result = compress(question, _index("spider_dev", db_id), FORCED)
    assert expected in {str(v) for v in result.values}
    match = next(v for v in result.values if str(v) == expected)
    # The value is evidence for its column, keeps the column, and is among its examples.
    score = next(s for s in result.scores if (s.table, s.column) == (match.table, match.column))
    assert any(r.startswith(f"value {expected}") for r in score.reasons)
    column = result.schema.table(match.table).column(match.column)
    assert column is not None and match.value in column.examples
    assert match.value in result.render()


def test_function_words_are_no_values() -> None:
    # pets_1's PetType holds 'cat' and 'dog'; "a", "the", "with" must match nothing.
    result = compress("Find the students with a dog", _index("spider_dev", "pets_1"), FORCED)
    assert [str(v) for v in result.values] == ["Pets.PetType = 'dog'"]


# -- rendering, configuration, words ---------------------------------------------------------


def test_render_is_the_m_schema_of_the_kept_tables() -> None:
    index = _index("logiccat", "car")
    result = compress("What is the total profit for BMW?", index, CompressionConfig())
    text = result.render()
    assert text == m_schema(result.schema)
    assert text.startswith("【DB_ID】") and "# Table: manufacturers" in text
    assert "# Table: safety_features" not in text and "safety_features." not in text
    assert "(Name:TEXT" in text and "(Profit_Margin:REAL" in text


def test_restrict_columns_keeps_keys_and_drops_dangling_foreign_keys() -> None:
    schema = Schema("sqlite", (
        Table("country", (Column("id", "INT", primary_key=True), Column("name", "TEXT"))),
        Table("city", (Column("id", "INT", primary_key=True), Column("name", "TEXT"),
                       Column("country_id", "INT"), Column("mayor_id", "INT")),
              (ForeignKey(("country_id",), "country", ("id",)),
               ForeignKey(("mayor_id",), "person", ("id",)))),
        Table("person", (Column("id", "INT", primary_key=True), Column("name", "TEXT"))),
    ))
    restricted = schema.restrict_columns({"city": ["name"], "country": []})
    assert [t.name for t in restricted.tables] == ["country", "city"]
    assert [c.name for c in restricted.table("city").columns] == ["id", "name", "country_id"]
    assert [c.name for c in restricted.table("country").columns] == ["id"]
    assert restricted.table("city").foreign_keys == (ForeignKey(("country_id",), "country", ("id",)),)


def test_lexical_only_index_has_no_embedding_evidence() -> None:
    index = _index("logiccat", "car")
    assert index.embedder is None and not index.vectors
    result = compress("What is the total profit for BMW?", index, FORCED)
    assert result.tables[0] == "manufacturers"
    assert not any("embedding" in r for s in result.scores for r in s.reasons)


def test_config_is_frozen_and_strict() -> None:
    config = CompressionConfig()
    with pytest.raises(pydantic.ValidationError):
        config.max_columns = 3  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        CompressionConfig(max_colums=3)  # type: ignore[call-arg]


@pytest.mark.parametrize("name, words", [
    ("Song_release_year", ("song", "release", "year")),
    ("FlightNo", ("flight", "number")),  # a name's abbreviation is spelled out
    ("Number_of_Employees", ("number", "employee")),
    ("singer_in_concert", ("singer", "concert")),
    ("HTTPStatusCode", ("http", "status", "code")),
    ("Countries", ("country",)),
])
def test_name_words(name: str, words: tuple[str, ...]) -> None:
    assert name_words(name) == words


# -- embeddings ------------------------------------------------------------------------------


def test_embeddings_find_a_column_no_word_names() -> None:
    from groundsql.retrieval.embeddings import load_embedder

    embedder = load_embedder()
    if embedder is None:
        pytest.skip("the embeddings extra is not installed")
    path = _database("logiccat", "car")
    db = Database(f"sqlite:///{path}")
    index = SchemaIndex.build(db, db.introspect(), embedder)
    # "driving mileage ... urban and highway" is engine_specs.Fuel_Consumption_City/_Highway.
    item = _item("logiccat", "car", "Calculate the car model with the highest driving mileage")
    _, gold = gold_columns(item["query"], index.schema)
    lexical = _kept(compress(item["question"], _index("logiccat", "car"), CompressionConfig()).schema)
    semantic = compress(item["question"], index, CompressionConfig())
    assert not gold <= lexical  # words alone miss it ...
    assert gold <= _kept(semantic.schema)  # ... the embedding finds it
    assert any(r.startswith("embedding") for s in semantic.scores for r in s.reasons)
