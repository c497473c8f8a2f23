"""The demo domain pack and the demo evaluation set: valid, runnable, informative, disjoint."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import sqlglot
from rapidfuzz import fuzz, utils
from sqlglot import exp

from groundsql.api import demo_database_url
from groundsql.config import DatabaseConfig
from groundsql.db import Database
from groundsql.evaluation.datasets import load_jsonl
from groundsql.packs.load import check_pack, load_pack
from groundsql.testsuite.suite import informative

DEMO = Path(__file__).resolve().parents[1] / "src" / "groundsql" / "demo"
PACK = DEMO / "pack"
EVAL = DEMO / "eval.jsonl"
CATEGORIES = ("simple", "moderate", "complex")


@pytest.fixture(scope="module")
def db():
    database = Database(demo_database_url(), DatabaseConfig(timeout_s=30.0, max_rows=100_000))
    yield database
    database.close()


@pytest.fixture(scope="module")
def pack():
    return load_pack(PACK)


@pytest.fixture(scope="module")
def items():
    return load_jsonl(EVAL)


def _rows(db: Database, sql: str) -> list[tuple]:
    return [tuple(row) for row in db.execute(sql).rows]


def _category(sql: str) -> str:
    """FLINT's difficulty by joins: 0-3 simple, 4-6 moderate, 7+ (or any CTE) complex."""
    tree = sqlglot.parse_one(sql, read="sqlite")
    joins = len(list(tree.find_all(exp.Join)))
    if joins >= 7 or tree.find(exp.CTE) is not None:
        return "complex"
    return "moderate" if joins >= 4 else "simple"


def _normalized(text: str) -> str:
    return utils.default_process(text)


# -- the pack ---------------------------------------------------------------------------------


def test_pack_loads_and_matches_the_demo_schema(pack, db: Database) -> None:
    assert pack.name == "findemo"
    check_pack(pack, db.introspect(), PACK)  # raises ConfigError on any unknown table or column


def test_pack_covers_every_table_column_and_foreign_key(pack, db: Database) -> None:
    schema = db.introspect()
    tables = {t.name: t for t in schema.tables}
    assert set(pack.schema_docs.tables) == set(tables)
    for name, table in tables.items():
        doc = pack.schema_docs.tables[name]
        assert doc.description, name
        assert set(doc.columns) == {c.name for c in table.columns}, name
        assert all(doc.columns.values()), name
    documented = {frozenset((j.left.lower(), j.right.lower())) for j in pack.schema_docs.joins}
    for table in schema.tables:
        for fk in table.foreign_keys:
            for own, ref in zip(fk.columns, fk.ref_columns):
                pair = frozenset((f"{table.name}.{own}".lower(), f"{fk.ref_table}.{ref}".lower()))
                assert pair in documented, f"undocumented foreign key {table.name}.{own}"
    references = {r.table for r in pack.references}
    assert references == {name for name in tables if name.startswith("ref_")}
    assert {"company", "trading_item"} <= {e.table for e in pack.entities}
    assert pack.rules.schema_linking and pack.rules.generation


# -- the query bank ---------------------------------------------------------------------------


def test_bank_has_at_least_20_examples_with_reasoning(pack) -> None:
    assert len(pack.bank) >= 20
    assert all(e.reasoning.strip() for e in pack.bank)
    assert len({_normalized(e.question) for e in pack.bank}) == len(pack.bank)


def test_every_bank_query_runs_with_a_result(pack, db: Database) -> None:
    for example in pack.bank:
        rows = _rows(db, example.sql)
        assert informative(rows), (example.question, rows)


# -- the evaluation set -----------------------------------------------------------------------


def test_eval_set_loads_with_enough_items_per_category(items) -> None:
    assert len(items) >= 80
    counts = Counter(item.category for item in items)
    assert set(counts) == set(CATEGORIES)
    assert all(counts[c] >= 15 for c in CATEGORIES), counts
    assert len({item.item_id for item in items}) == len(items)
    assert all(item.item_id.startswith("findemo/") for item in items)
    assert len({item.db_url for item in items}) == 1  # every item runs on the demo database
    raw = [json.loads(line) for line in EVAL.read_text(encoding="utf-8").splitlines() if line]
    assert all(r["db"] == "demo" for r in raw)


def test_every_gold_query_is_informative(items, db: Database) -> None:
    for item in items:
        rows = _rows(db, item.gold_sql)
        assert informative(rows), (item.item_id, item.question, rows)


def test_category_matches_the_join_count(items) -> None:
    wrong = [(i.item_id, i.category, _category(i.gold_sql)) for i in items
             if _category(i.gold_sql) != i.category]
    assert not wrong, wrong


# -- bank and evaluation set are disjoint -----------------------------------------------------


def test_bank_and_eval_questions_are_disjoint(pack, items) -> None:
    bank = [_normalized(e.question) for e in pack.bank]
    for item in items:
        question = _normalized(item.question)
        assert question not in bank, item.item_id
        for other in bank:
            score = fuzz.token_set_ratio(question, other)
            assert score < 95, (item.item_id, item.question, other, score)


def test_eval_questions_name_no_company_the_bank_asks_about(pack, items, db: Database) -> None:
    names = [r[0] for r in _rows(db, "SELECT company_name FROM company")]
    in_bank = {n for n in names if any(n.split()[0] in e.question for e in pack.bank)}
    assert in_bank  # the bank does ask about companies
    for item in items:
        mentioned = [n for n in in_bank if n.split()[0] in item.question]
        assert not mentioned, (item.item_id, mentioned)
