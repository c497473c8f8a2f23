"""`groundsql init`: a domain pack drafted from a real database loads, checks and makes sense."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from groundsql.api import demo_database_url
from groundsql.db import Database
from groundsql.errors import ConfigError
from groundsql.packs.detect import (
    ColumnProfile,
    Join,
    TableProfile,
    detect_entities,
    detect_references,
    lookup_named,
    name_rank,
)
from groundsql.packs.draft import draft_pack
from groundsql.packs.load import check_pack, load_pack
from groundsql.schema.model import Column, Schema, Table
from tests.conftest import spider_db
from tests.test_end_to_end import _cli


def _draft(url: str, out: Path):
    with Database(url) as db:
        summary = draft_pack(db, out)
        pack = load_pack(out)
        check_pack(pack, db.introspect(), out)
        schema = db.introspect()
    return summary, pack, schema


@pytest.fixture(scope="module")
def demo_pack(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("demo-pack")
    return (out, *_draft(demo_database_url(), out))


def test_demo_references(demo_pack) -> None:
    _, _, pack, _ = demo_pack
    refs = {r.table: r for r in pack.references}
    assert refs["ref_data_item"].key == "data_item_id"
    assert refs["ref_data_item"].label == "data_item_name"
    assert set(refs["ref_data_item"].extra) >= {"category"}
    assert refs["ref_period_type"].label == "period_type_name"
    assert refs["ref_currency"].label == "currency_name"
    assert refs["ref_country"].label == "country_name" and "iso_code" in refs["ref_country"].extra
    assert "Quarterly" in refs["ref_period_type"].description
    # Tables of things, and large or unlabelled tables, are not lookups.
    assert not {"company", "person", "security", "financial_period", "trading_item"} & set(refs)


def test_demo_entities(demo_pack) -> None:
    _, _, pack, _ = demo_pack
    entities = {e.table: e for e in pack.entities}
    assert entities["company"].key == "company_id"
    assert entities["company"].names[0] == "company_name" and entities["company"].kind == "company"
    assert entities["person"].names == ("first_name", "last_name")  # distinct only together
    assert not {r.table for r in pack.references} & set(entities)


def test_demo_every_foreign_key_is_a_join(demo_pack) -> None:
    out, summary, pack, schema = demo_pack
    expected = {
        (f"{t.name}.{c}", f"{fk.ref_table}.{r}")
        for t in schema.tables for fk in t.foreign_keys for c, r in zip(fk.columns, fk.ref_columns)
    }
    joins = {(j.left, j.right) for j in pack.schema_docs.joins}
    assert joins == expected and summary.joins == len(expected) and summary.inferred_joins == 0
    assert all("declared" in j.description for j in pack.schema_docs.joins)


def test_demo_schema_descriptions(demo_pack) -> None:
    out, summary, pack, schema = demo_pack
    assert set(pack.schema_docs.tables) == {t.name for t in schema.tables}
    for table in schema.tables:
        assert set(pack.schema_docs.tables[table.name].columns) == {c.name for c in table.columns}
    company = pack.table_doc("company")
    assert "Row count: 114" in company.description
    assert company.columns["country_id"] == "integer key; references ref_country.country_id"
    assert "primary key" in company.columns["company_id"]
    country = pack.table_doc("ref_country").columns["country_name"]
    assert country.startswith("text") and "e.g. 'Australia'" in country
    assert "Row count: 12,443" in pack.table_doc("financial_data").description
    # A person edits these files: the YAML carries comments saying what goes where.
    text = (out / "pack.yaml").read_text()
    assert text.startswith("# ") and "\nrules:\n  schema_linking: []\n  generation: []\n" in text
    assert "# Domain rules" in text and "# Reference tables" in text


def test_demo_bank_starts_drafted_with_a_template(demo_pack) -> None:
    out, summary, pack, _ = demo_pack
    drafted = [json.loads(line) for line in (out / "bank.jsonl").read_text().splitlines()]
    assert 0 < summary.drafted == len(drafted) == len(pack.bank)  # tests/test_bank_draft.py checks them
    assert all(line["drafted"] is True for line in drafted)
    assert "drafted example" in (out / "README.md").read_text()
    lines = [json.loads(line) for line in (out / "bank.example.jsonl").read_text().splitlines()]
    assert lines[0] == {"question": "...", "reasoning": "...", "sql": "..."}
    assert '{"question": "...", "reasoning": "...", "sql": "..."}' in (out / "README.md").read_text()
    with Database(demo_database_url()) as db:  # the worked example really runs
        assert db.execute(lines[1]["sql"]).rows[0][0] > 0


def test_concert_singer(tmp_path: Path) -> None:
    summary, pack, schema = _draft(f"sqlite:///{spider_db('concert_singer')}", tmp_path)
    entities = {e.table: e for e in pack.entities}
    assert entities["singer"].key == "Singer_ID" and entities["singer"].names == ("Name",)
    assert entities["stadium"].names == ("Name",)
    joins = {(j.left, j.right) for j in pack.schema_docs.joins}
    assert ("singer_in_concert.Singer_ID", "singer.Singer_ID") in joins
    assert ("concert.Stadium_ID", "stadium.Stadium_ID") in joins
    assert summary.name == "concert_singer" and pack.name == "concert_singer"
    assert "Links concert and singer" in pack.table_doc("singer_in_concert").description


def test_every_spider_database_drafts_a_valid_pack(tmp_path: Path) -> None:
    root = spider_db("concert_singer").parents[1]
    for folder in sorted(p for p in root.iterdir() if (p / f"{p.name}.sqlite").is_file()):
        _draft(f"sqlite:///{folder / folder.name}.sqlite", tmp_path / folder.name)


def _sqlite(path: Path, script: str) -> str:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return f"sqlite:///{path}"


def test_joins_inferred_from_key_names_and_values(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "nofk.sqlite", """
        CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE singer_detail (singer_id INTEGER PRIMARY KEY, biography TEXT);
        CREATE TABLE performance (performance_id INTEGER PRIMARY KEY, singer_id INTEGER, year INT);
        CREATE TABLE award (award_id INTEGER PRIMARY KEY, singer_id INTEGER);
        INSERT INTO singer VALUES (1, 'Ada'), (2, 'Bo'), (3, 'Cy');
        INSERT INTO singer_detail VALUES (1, 'x'), (2, 'y');
        INSERT INTO performance VALUES (10, 1, 2020), (11, 2, 2021), (12, 2, 2022);
        INSERT INTO award VALUES (1, 7), (2, 8), (3, 9);  -- no such singers: not a join
    """)
    summary, pack, _ = _draft(url, tmp_path / "pack")
    joins = {(j.left, j.right): j for j in pack.schema_docs.joins}
    assert set(joins) == {
        ("performance.singer_id", "singer.singer_id"),
        ("singer_detail.singer_id", "singer.singer_id"),  # one direction only
    }
    assert all("Inferred" in j.description for j in joins.values())
    assert summary.inferred_joins == 2
    assert "probably references singer.singer_id" in pack.table_doc("performance").columns["singer_id"]


def test_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "db.sqlite", """
        CREATE TABLE ref_status (status_id INTEGER PRIMARY KEY, status_name TEXT);
        CREATE TABLE item (item_id INTEGER PRIMARY KEY, item_name TEXT,
                           status_id INTEGER REFERENCES ref_status(status_id));
        INSERT INTO ref_status VALUES (1, 'Open'), (2, 'Closed');
        INSERT INTO item VALUES (1, 'Alpha', 1), (2, 'Beta', 2), (3, 'Gamma', 1);
    """)
    out = tmp_path / "pack"
    with Database(url) as db:
        first = draft_pack(db, out)
        assert first.references == ("ref_status",) and first.entities == ("item",)
        (out / "pack.yaml").write_text((out / "pack.yaml").read_text() + "# my edits\n")
        (out / "bank.jsonl").write_text('{"question": "How many items?", "sql": "SELECT COUNT(*) FROM item"}\n')
        with pytest.raises(ConfigError, match="already exists.*--force"):
            draft_pack(db, out)
        assert "# my edits" in (out / "pack.yaml").read_text()
        again = draft_pack(db, out, force=True)
    assert "# my edits" not in (out / "pack.yaml").read_text()
    assert out / "bank.jsonl" in again.kept and len(load_pack(out).bank) == 1  # solved examples survive


HOSTILE_TABLE = 'we"ird: #tab\nle'
HOSTILE_REF = "ref_it's: yes"


def test_hostile_names_and_values_stay_valid_yaml(tmp_path: Path) -> None:
    def q(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    path = tmp_path / "hostile.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f'CREATE TABLE {q(HOSTILE_REF)} ("code: id" INTEGER PRIMARY KEY, "name #1" TEXT)')
    conn.execute(
        f'CREATE TABLE {q(HOSTILE_TABLE)} ("id\nx" INTEGER PRIMARY KEY, "<<" TEXT, "yes" TEXT, '
        f'"- dash" TEXT, "null" INTEGER, "name" TEXT, "&a *b" TEXT, '
        f'"code: id" INTEGER REFERENCES {q(HOSTILE_REF)}("code: id"))'
    )
    conn.execute('CREATE TABLE "dot.table" (dot_id INTEGER PRIMARY KEY, name TEXT, '
                 f'"code: id" INTEGER REFERENCES {q(HOSTILE_REF)}("code: id"))')
    conn.executemany(f"INSERT INTO {q(HOSTILE_REF)} VALUES (?, ?)",
                     [(1, "it's \"quoted\""), (2, "line\nbreak: # x"), (3, "- [a, b] &anchor *ref !tag")])
    conn.executemany(
        f"INSERT INTO {q(HOSTILE_TABLE)} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(i, "x: y\n#z", "yes", "'; --", None, f"Name \x85{i}\u2028 \x07 '\"\ufeff", "{}: [", 1 + i % 3)
         for i in range(10)],
    )
    conn.executemany('INSERT INTO "dot.table" VALUES (?, ?, ?)', [(1, "a", 1), (2, "b", 2)])
    conn.commit()
    conn.close()

    summary, pack, schema = _draft(f"sqlite:///{path}", tmp_path / "pack")
    for name in ("pack.yaml", "schema.yaml"):
        yaml.safe_load((tmp_path / "pack" / name).read_text(encoding="utf-8"))  # parses
    assert set(pack.schema_docs.tables) == {t.name for t in schema.tables}
    weird = pack.schema_docs.tables[HOSTILE_TABLE].columns
    assert set(weird) == {"id\nx", "<<", "yes", "- dash", "null", "name", "&a *b", "code: id"}
    assert all(isinstance(v, str) for v in weird.values())
    assert [(r.table, r.key, r.label) for r in pack.references] == [(HOSTILE_REF, "code: id", "name #1")]
    assert (HOSTILE_TABLE, "id\nx") in {(e.table, e.key) for e in pack.entities}
    assert [(j.left, j.right) for j in pack.schema_docs.joins] == [
        (f"{HOSTILE_TABLE}.code: id", f"{HOSTILE_REF}.code: id")
    ]
    # A join cannot name a table with a dot in it: it is left out, and said so.
    assert any("dot.table" in note for note in summary.notes)
    # Comments never break a line or carry unprintable characters.
    for name in ("pack.yaml", "schema.yaml"):
        for line in (tmp_path / "pack" / name).read_text(encoding="utf-8").split("\n"):
            if line.startswith("#"):
                assert line.isprintable(), line


def test_name_heuristics() -> None:
    assert name_rank("company_name", "company") == 4
    assert name_rank("country_name", "ref_country") == 4
    assert name_rank("CountryName", "countries") == 4
    assert name_rank("Name", "singer") == 4
    assert name_rank("Song_Name", "singer") == 3
    assert name_rank("iso_code", "ref_country") == 1
    assert name_rank("founded_year", "company") == 0
    assert lookup_named("ref_currency") and lookup_named("Ref_Template_Types") and lookup_named("order_status")
    assert not lookup_named("company") and not lookup_named("singer_in_concert")


def test_cli_init(tmp_path: Path) -> None:
    out = tmp_path / "pack"
    done = _cli("init", "--db", str(spider_db("concert_singer")), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "3 entity tables" in done.stdout and "3 joins" in done.stdout
    assert "bank.jsonl" in done.stdout and "15-30" in done.stdout
    assert "9 drafted examples in bank.jsonl" in done.stdout
    assert load_pack(out).name == "concert_singer"
    again = _cli("init", "--db", str(spider_db("concert_singer")), "--out", str(out))
    assert again.returncode != 0 and "--force" in again.stderr and "Traceback" not in again.stderr
    forced = _cli("init", "--db", str(spider_db("concert_singer")), "--out", str(out), "--force")
    assert forced.returncode == 0, forced.stderr


def test_cli_init_defaults_to_the_demo_database(tmp_path: Path) -> None:
    done = _cli("init", "--out", str(tmp_path / "demo"))
    assert done.returncode == 0, done.stderr
    assert "13 reference tables" in done.stdout and "2 entity tables" in done.stdout


def test_postgres_and_duckdb(postgres_url: str, duckdb_file: Path, tmp_path: Path) -> None:
    summary, pack, _ = _draft(postgres_url, tmp_path / "pg")
    # The session's PostgreSQL database is shared: other tests may have added tables to it.
    assert ("city.country_id", "country.country_id") in [(j.left, j.right) for j in pack.schema_docs.joins]
    assert ("country", "country_id", "name") in [(r.table, r.key, r.label) for r in pack.references]
    assert ("city", ("name",)) in [(e.table, e.names) for e in pack.entities]
    assert "e.g. 'Lyon'" in pack.table_doc("city").columns["name"]
    summary, pack, _ = _draft(f"duckdb:///{duckdb_file}", tmp_path / "duck")
    assert summary.name == "shop"
    assert [(j.left, j.right) for j in pack.schema_docs.joins] == [("orders.customer_id", "customer.customer_id")]
    assert "Row count: 3" in pack.table_doc("orders").description


def test_an_empty_database_is_judged_by_names(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "empty.sqlite", """
        CREATE TABLE pilot (pilot_id INTEGER PRIMARY KEY, name TEXT, age INTEGER);
        CREATE TABLE ref_rank (rank_id INTEGER PRIMARY KEY, rank_name TEXT);
        CREATE TABLE flight (flight_id INTEGER PRIMARY KEY, pilot_id INTEGER REFERENCES pilot(pilot_id),
                             rank_id INTEGER REFERENCES ref_rank(rank_id));
    """)
    summary, pack, _ = _draft(url, tmp_path / "pack")
    assert [(e.table, e.names) for e in pack.entities] == [("pilot", ("name",))]
    assert [(r.table, r.label) for r in pack.references] == [("ref_rank", "rank_name")]
    assert "guessed from the column names" in (tmp_path / "pack" / "pack.yaml").read_text()


def test_detection_is_pure_data_in_data_out() -> None:
    def table(name: str, *columns: Column, rows: int = 5) -> Table:
        return Table(name=name, columns=columns, row_count=rows)

    def key(name: str) -> Column:
        return Column(name, "INTEGER", primary_key=True)

    def text(name: str) -> Column:
        return Column(name, "TEXT")

    schema = Schema("sqlite", (
        table("pilot", key("pilot_id"), text("name"), Column("age", "INTEGER")),
        table("colour", key("colour_id"), text("colour_name")),
        table("flight", key("flight_id"), Column("pilot_id", "INTEGER"), Column("colour_id", "INTEGER"), rows=50),
    ))
    unique = TableProfile(5, {"name": ColumnProfile(5, 5, 8.0), "colour_name": ColumnProfile(5, 5, 4.0)})
    profiles = {"pilot": unique, "colour": unique, "flight": TableProfile(50)}
    joins = (Join("flight", "pilot_id", "pilot", "pilot_id"), Join("flight", "colour_id", "colour", "colour_id"))
    references = detect_references(schema, profiles, joins)
    # A narrow all-text table is a lookup; a table with a number beside its name is a thing.
    assert [(r.table, r.key, r.label) for r in references] == [("colour", "colour_id", "colour_name")]
    entities = detect_entities(schema, profiles, references, joins)
    assert [(e.table, e.key, e.names, e.kind) for e in entities] == [("pilot", "pilot_id", ("name",), "pilot")]
