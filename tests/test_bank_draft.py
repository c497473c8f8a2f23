"""`groundsql init` drafts solved examples: real, informative, by label, bounded, deterministic."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from groundsql.api import demo_database_url
from groundsql.config import SafetyConfig
from groundsql.db import Database
from groundsql.packs.bank_draft import MAX_EXAMPLES, PER_TEMPLATE, TEMPLATES, draft_bank
from groundsql.packs.detect import Draft, detect
from groundsql.packs.draft import draft_pack
from groundsql.packs.load import load_pack
from groundsql.retrieval.bank import QueryBank
from groundsql.safety import run_validated
from groundsql.testsuite.suite import informative
from tests.conftest import spider_db


def _url(name: str) -> str:
    return demo_database_url() if name == "demo" else f"sqlite:///{spider_db(name)}"


@pytest.fixture(scope="module", params=["demo", "concert_singer", "pets_1"])
def drafted(request: pytest.FixtureRequest):
    with Database(_url(request.param)) as db:
        draft = detect(db)
        yield request.param, db, draft, draft_bank(db, draft)


def _id_filters(sql: str, dialect: str, draft: Draft) -> list[str]:
    """Columns compared with a literal that are a reference table's key (or point to one)."""
    keys = {r.key.lower() for r in draft.references}
    keys |= {j.child_column.lower() for j in draft.joins if j.parent in {r.table for r in draft.references}}
    found = []
    for eq in sqlglot.parse_one(sql, read=dialect).find_all(exp.EQ):
        if isinstance(eq.left, exp.Column) and isinstance(eq.right, exp.Literal):
            if eq.left.name.lower() in keys:
                found.append(eq.sql())
    return found


def test_every_drafted_example_is_valid_and_informative(drafted) -> None:
    name, db, draft, examples = drafted
    assert examples, name
    for example in examples:
        _, result = run_validated(db, example.sql, SafetyConfig())
        assert informative(list(result.rows)), example.sql
        assert example.question.endswith("?") and example.reasoning


def test_labels_not_ids(drafted) -> None:
    _, db, draft, examples = drafted
    for example in examples:
        assert not _id_filters(example.sql, db.dialect, draft), example.sql


def test_bounded_diverse_and_deterministic(drafted) -> None:
    name, db, draft, examples = drafted
    assert len(examples) <= MAX_EXAMPLES
    per_template = Counter(e.template for e in examples)
    assert max(per_template.values()) <= PER_TEMPLATE
    assert len({e.sql for e in examples}) == len(examples)
    assert draft_bank(db, draft) == examples  # a fixed seed: the same bank twice
    assert len(draft_bank(db, draft, limit=3)) <= 3
    assert draft_bank(db, draft, budget_s=0) == ()  # past the time budget nothing more is drafted
    if name != "pets_1":  # pets_1: three tables, one entity, no lookups
        assert len(per_template) >= 4, per_template


def test_demo_drafts_cover_the_templates_with_labels() -> None:
    with Database(demo_database_url()) as db:
        examples = draft_bank(db, detect(db))
    templates = {e.template for e in examples}
    assert templates == {t.__name__ for t in TEMPLATES}
    by_label = [e for e in examples if e.template == "count_by_label"]
    assert all("JOIN ref_" in e.sql and "_name = '" in e.sql for e in by_label)
    value = next(e for e in examples if e.template == "value_for_entity_and_period")
    assert "e.company_name = '" in value.sql and "fiscal_year = " in value.sql


def test_concert_singer_drafts() -> None:
    with Database(_url("concert_singer")) as db:
        examples = draft_bank(db, detect(db))
    questions = {e.question for e in examples}
    assert "Which 3 concerts have the most singers?" in questions  # through the bridge table
    assert "Which 3 stadiums have the highest capacity?" in questions
    assert any(e.template == "names_via_bridge" and "singer_in_concert" in e.sql for e in examples)


def test_duckdb_drafts(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    from tests.spider_engines import load_duckdb, read_sqlite

    path = tmp_path / "concert_singer.duckdb"
    load_duckdb(read_sqlite(spider_db("concert_singer")), path)
    with Database(f"duckdb:///{path}") as db:
        examples = draft_bank(db, detect(db))
        assert len(examples) >= 5
        for example in examples:
            assert informative(list(run_validated(db, example.sql, SafetyConfig())[1].rows)), example.sql


def test_init_writes_the_drafted_bank_and_retrieval_reads_it(tmp_path: Path) -> None:
    out = tmp_path / "pack"
    with Database(demo_database_url()) as db:
        summary = draft_pack(db, out)
    lines = [json.loads(line) for line in (out / "bank.jsonl").read_text().splitlines()]
    assert summary.drafted == len(lines) > 0
    assert all(line["drafted"] is True and line["template"] and line["sql"] for line in lines)
    pack = load_pack(out)
    assert [e.question for e in pack.bank] == [line["question"] for line in lines]
    assert "Review every one" in (out / "README.md").read_text()
    near = QueryBank(pack.bank).nearest("How many companies have company type name Bank?", 1)
    assert near and "company_type_name" in near[0].sql


def test_an_existing_bank_is_never_touched(tmp_path: Path) -> None:
    out = tmp_path / "pack"
    out.mkdir()
    mine = '{"question": "How many singers?", "sql": "SELECT COUNT(*) FROM singer"}\n'
    (out / "bank.jsonl").write_text(mine)
    with Database(_url("concert_singer")) as db:
        summary = draft_pack(db, out)
    assert (out / "bank.jsonl").read_text() == mine
    assert summary.drafted == 0 and out / "bank.jsonl" in summary.kept


def test_quotes_and_nulls_in_values(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE ref_status (status_id INTEGER PRIMARY KEY, status_name TEXT);
            CREATE TABLE "order item" (item_id INTEGER PRIMARY KEY, item_name TEXT, price REAL,
                                       order_date DATE, status_id INTEGER REFERENCES ref_status(status_id));
            INSERT INTO ref_status VALUES (1, 'Won''t ship'), (2, 'Shipped'), (3, NULL);
        """)
        conn.executemany('INSERT INTO "order item" VALUES (?, ?, ?, ?, ?)', [
            (i, f"O'Item {i}", i * 1.5 if i % 4 else None, f"202{i % 3}-0{i % 9 + 1}-1{i % 10}",
             i % 3 + 1) for i in range(1, 40)])
    with Database(f"sqlite:///{path}") as db:
        draft = detect(db)
        examples = draft_bank(db, draft)
        assert {"count_by_label", "top_by_measure", "aggregate_in_period"} <= {e.template for e in examples}
        for example in examples:
            assert informative(list(run_validated(db, example.sql, SafetyConfig())[1].rows)), example.sql
            assert not _id_filters(example.sql, db.dialect, draft), example.sql


@pytest.mark.postgres
def test_postgres_drafts() -> None:
    pytest.importorskip("psycopg")
    from tests.spider_engines import postgres_copy, read_sqlite

    demo = Path(demo_database_url().removeprefix("sqlite:///"))
    with postgres_copy(read_sqlite(demo)) as url, Database(url) as db:
        draft = detect(db)
        examples = draft_bank(db, draft)
        assert {e.template for e in examples} == {t.__name__ for t in TEMPLATES}
        for example in examples:
            assert informative(list(run_validated(db, example.sql, SafetyConfig())[1].rows)), example.sql
            assert not _id_filters(example.sql, db.dialect, draft), example.sql
