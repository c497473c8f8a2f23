"""The warehouse benchmark's generator (benchmarks/warehouse/build.py), built small: about 500
tables with keys declared, the same content for the same seed, and every committed question's
gold answering on it."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sqlite3
import sys
import uuid
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

ROOT = Path(__file__).resolve().parents[1] / "benchmarks" / "warehouse"
SCALE = 0.002  # the named rows and a few thousand more of each big table


def _build_module():
    spec = importlib.util.spec_from_file_location("warehouse_build", ROOT / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    build = _build_module()
    path = tmp_path_factory.mktemp("warehouse") / "warehouse.sqlite"
    assert build.main(["build.py", str(path), "--scale", str(SCALE)]) == 0
    return path


def _digest(path: Path, tables: list[str]) -> str:
    conn = sqlite3.connect(path)
    digest = hashlib.sha256()
    for table in tables:
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1"):
            digest.update(repr(row).encode())
    conn.close()
    return digest.hexdigest()


def test_about_500_tables_each_with_a_key_and_declared_references(small: Path) -> None:
    conn = sqlite3.connect(small)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert 480 <= len(tables) <= 520
    for table in tables:
        columns = conn.execute(f"PRAGMA table_info({table})").fetchall()
        assert any(c[5] for c in columns), f"{table} has no primary key"
    referencing = sum(bool(conn.execute(f"PRAGMA foreign_key_list({t})").fetchall()) for t in tables)
    assert referencing > 300
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()


def test_the_same_seed_gives_the_same_warehouse(small: Path, tmp_path: Path) -> None:
    again = tmp_path / "again.sqlite"
    _build_module().main(["build.py", str(again), "--scale", str(SCALE)])
    tables = ["customer", "ref_sls_status", "sls_order", "sls_order_line", "hr_absence", "fac_energy_budget"]
    assert _digest(small, tables) == _digest(again, tables)


def test_every_gold_answers_on_a_small_build_and_the_set_spans_the_warehouse(small: Path) -> None:
    items = [json.loads(line) for line in (ROOT / "questions.jsonl").read_text().splitlines()]
    assert len(items) == 40
    assert {c: sum(i["category"] == c for i in items) for c in ("simple", "moderate", "complex")} == \
        {"simple": 14, "moderate": 14, "complex": 12}
    conn = sqlite3.connect(small)
    tables: set[str] = set()
    for item in items:
        rows = conn.execute(item["gold_sql"]).fetchall()
        assert rows and any(v not in (None, 0, 0.0) for row in rows for v in row), item["id"]
        tables |= {t.name for t in sqlglot.parse_one(item["gold_sql"], read="sqlite").find_all(exp.Table)}
    conn.close()
    assert len(tables) >= 35 and len({t.split("_")[0] for t in tables if "_" in t and not t.startswith("ref")}) >= 12


@pytest.fixture(scope="module")
def drafted(small: Path, tmp_path_factory) -> Path:
    from groundsql.db import Database
    from groundsql.packs.draft import draft_pack

    pack = tmp_path_factory.mktemp("warehouse") / "pack"  # as `groundsql init` drafts it
    with Database(f"sqlite:///{small}") as db:
        draft_pack(db, pack)
    return pack


@pytest.fixture(scope="module")
def prepared() -> dict:
    return {}  # what the path builds once per database (its catalog, the names' index), shared


@pytest.mark.parametrize("question, asks", [
    # "Closed" is a status the question filters by, not the closing balance of seven snapshots.
    ("How many shipments are closed?", None),
    ("Which 3 customers in Germany had the highest total invoiced amount of closed customer invoices in 2023?", None),
    # The drafted model has no word for quality or compliance (`qa_`, `rsk_`), but it has inspections,
    # incidents and handling minutes: an unknown word beside them is no reason to refuse.
    ("How many quality inspections in the category 'Incoming' were recorded at Malmo Distribution Centre?", None),
    ("What was the total handling time in minutes of support tickets in 2023?", None),
    ("How many patents does the company hold?", "out_of_scope"),
])
def test_a_drafted_warehouse_pack_asks_back_only_where_the_domain_gives_a_reason(small, drafted, prepared, question,
                                                                                 asks) -> None:
    from groundsql.config import Settings
    from groundsql.db import Database
    from groundsql.packs.load import load_pack
    from groundsql.strategies import Context, get_strategy
    from tests.test_compiled import Scripted

    llm = Scripted("-")  # no request the path can use: a question not asked back reaches the model
    settings = Settings.model_validate({"grounded": {"embeddings": False}})
    with Database(f"sqlite:///{small}") as db:
        answer = get_strategy("compiled")(question, Context(db=db, llm=llm, settings=settings,
                                                            pack=load_pack(drafted), resources=prepared))
    assert (answer.clarification.kind if answer.clarification else None) == asks, answer.grounds
    assert bool(llm.requests) == (asks is None)
    for request in llm.requests[:1]:  # a monthly snapshot's 36 month starts are shown as their range
        prompt = request.messages[0].content
        assert "dates, 2022-01-01 to 2024-12-01" in prompt or "month_start" not in prompt
        assert max(len(re.findall(r"\d{4}-\d{2}-\d{2}", line)) for line in prompt.splitlines()) <= 2


def test_a_question_reads_its_subject_area_whole_and_the_areas_questions_share_that_prompt(small, drafted,
                                                                                          prepared) -> None:
    """The drafted warehouse model has subject areas in its names (sls_, lgs_, ...): each
    question's system message is its area, the same text for every question of that area (one
    saved prompt state), with the shared tables it reaches; the question's other tables come
    after, in its own message."""
    from groundsql.config import Settings
    from groundsql.db import Database
    from groundsql.packs.load import load_pack
    from groundsql.strategies import Context, get_strategy
    from tests.test_compiled import Scripted

    settings = Settings.model_validate({"grounded": {"embeddings": False}, "compiled": {"fallback": False}})
    asked = {}
    with Database(f"sqlite:///{small}") as db:
        for question in ("How many shipments are closed?", "What is the total freight cost of all shipments of the "
                         "customer Ashshaw Tools Inc.?", "How many work orders are closed?",
                         "How many customer invoices are closed?"):
            llm = Scripted("-")
            answer = get_strategy("compiled")(question, Context(db=db, llm=llm, settings=settings,
                                                                pack=load_pack(drafted), resources=prepared))
            asked[question] = (answer.grounds, llm.requests[0].messages)
    (ships, (ships_system, _)), (freight, (freight_system, _)) = [asked[q] for q in list(asked)[:2]]
    assert ships["area"] == freight["area"] == "lgs" and ships_system.content == freight_system.content
    for table in ("lgs_shipment", "ref_lgs_status", "customer", "ref_country"):  # its own, and shared ones
        assert table in ships["scope"]
    assert "sls_order" not in ships["scope"] and "- lgs_status:" in ships_system.content
    works, (works_system, _) = asked["How many work orders are closed?"]
    assert works["area"] == "mfg" and works_system.content != ships_system.content  # not the sls_order tables'
    # Invoices are an area of their own (fin_); a question that ranks another area's table first
    # still reads fin_invoice, after its area.
    invoices, (_, invoices_user) = asked["How many customer invoices are closed?"]
    assert "fin_invoice" in invoices["scope"]
    if invoices["area"] != "fin":
        assert "More of the semantic model" in invoices_user.content and "fin_invoice" in invoices_user.content


def test_warm_computes_each_areas_prompt_once_with_the_text_its_questions_start_from(small, drafted) -> None:
    from groundsql.api import connect
    from groundsql.config import Settings
    from tests.test_compiled import Scripted

    llm = Scripted("-")
    settings = Settings.model_validate({"grounded": {"embeddings": False}, "compiled": {"fallback": False}})
    with connect(small, llm=llm, settings=settings, pack=drafted) as session:
        warmed = session.warm()
        systems = [r.messages[0].content for r in llm.requests]
        assert len(warmed) == len(systems) == len(set(systems)) >= 12  # one per subject area
        assert all(r.max_tokens == 1 for r in llm.requests)
        session.ask("How many shipments are closed?", strategy="compiled")
        assert llm.requests[-1].messages[0].content in systems  # a question starts from a warmed prompt
        off = Settings.model_validate({**settings.model_dump(), "compiled": {"areas": False}})
    with connect(small, llm=Scripted("-"), settings=off, pack=drafted) as session:
        assert session.warm() == []  # each question's own scope: nothing shared to warm


def test_an_area_too_long_to_show_whole_gives_way_to_the_questions_own_scope(small, drafted, monkeypatch) -> None:
    from groundsql.db import Database
    from groundsql.packs.load import load_pack
    from groundsql.semantic import scope as scope_module
    from groundsql.semantic.load import catalog_for
    from groundsql.semantic.terms import terms_of

    pack = load_pack(drafted)
    question = "How many shipments are closed?"
    with Database(f"sqlite:///{small}") as db:
        for limit, area in ((100_000, "lgs"), (1_000, None)):
            monkeypatch.setattr(scope_module, "_AREA_MAX_CHARS", limit)
            catalog = catalog_for(pack.semantic, db.introspect(), pack.semantic_path,
                                  tuple(e.table for e in pack.entities))
            scope = scope_module.scoped(catalog, question, terms_of(question, catalog), 8)
            assert scope.area == area and (scope.shared is None) == (area is None)
            assert "lgs_shipment" in scope.tables and len(scope.tables) <= (60 if area else 8 + 3)


def _checked_catalog(small: Path, drafted: Path):
    from groundsql.db import Database
    from groundsql.packs.load import load_pack
    from groundsql.semantic.load import catalog_for, check_data

    pack = load_pack(drafted)
    with Database(f"sqlite:///{small}") as db:
        catalog = catalog_for(pack.semantic, db.introspect(), pack.semantic_path, tuple(e.table for e in pack.entities))
        check_data(catalog, db, pack.semantic_path)
    return catalog


def test_a_named_value_is_only_what_the_question_means_by_it(small, drafted) -> None:
    from groundsql.semantic.request import request_schema
    from groundsql.semantic.terms import terms_of

    catalog = _checked_catalog(small, drafted)

    def offered(question: str) -> tuple[dict, set[str]]:
        schema = request_schema(catalog, terms_of(question, catalog))
        return schema, {f["properties"]["field"]["const"] for f in schema["properties"]["where"]["items"]["anyOf"]}

    # "Krakow Plant" is a site; its word "Plant" is no site type besides. One number is asked:
    # no count of categories beside it.
    schema, fields = offered("How many meter readings in the category 'Electricity' were recorded at Krakow Plant?")
    assert "site" in fields and "site_type" not in fields
    assert schema["properties"]["select"]["items"]["enum"] == ["fac_meter_count"]
    # "highest" ranks; it names no priority High.
    _, fields = offered("Which 3 customers in Germany had the highest total handling time in minutes of closed "
                        "support tickets in 2023?")
    assert {"country", "svc_status"} <= fields and "svc_priority" not in fields
    # "ordered by customers" says who ordered: not one row per customer.
    schema, _ = offered("What was the total line net amount of sales order lines for bearings ordered by customers "
                        "in Germany in 2024?")
    assert "prefixItems" not in schema["properties"]["select"]


def test_areas_the_model_declares_take_the_place_of_those_its_names_show(small, drafted, tmp_path) -> None:
    """A warehouse whose names showed no areas would declare them; declared, they are the
    areas, each with the shared tables its own reach."""
    import shutil

    from groundsql.db import Database
    from groundsql.packs.load import load_pack
    from groundsql.semantic.load import catalog_for
    from groundsql.semantic.scope import areas, scoped
    from groundsql.semantic.terms import terms_of

    pack_dir = tmp_path / "pack"
    shutil.copytree(drafted, pack_dir)
    semantic = pack_dir / "semantic.yaml"
    semantic.write_text(semantic.read_text() + "areas:\n"
                        "  - {name: shipping, tables: [lgs_shipment, ref_lgs_status]}\n"
                        "  - {name: billing, tables: [fin_invoice, ref_fin_status]}\n")
    pack = load_pack(pack_dir)
    with Database(f"sqlite:///{small}") as db:
        catalog = catalog_for(pack.semantic, db.introspect(), semantic, tuple(e.table for e in pack.entities))
    assert set(areas(catalog)) == {"shipping", "billing"}
    assert {"lgs_shipment", "ref_lgs_status", "customer"} <= set(areas(catalog)["shipping"])
    assert "fin_invoice" not in areas(catalog)["shipping"]
    question = "How many shipments are closed?"
    scope = scoped(catalog, question, terms_of(question, catalog), 8)
    assert scope.area == "shipping" and "lgs_shipment" in scope.shared


def test_a_model_without_areas_in_its_names_reads_its_scope_alone() -> None:
    from groundsql.api import demo_database_url
    from groundsql.db import Database
    from groundsql.semantic.scope import areas, scoped
    from groundsql.semantic.terms import terms_of
    from tests.test_semantic import catalog_of

    catalog = catalog_of(Database(demo_database_url()))
    assert areas(catalog) == {}
    question = "How many companies are in Japan?"
    scope = scoped(catalog, question, terms_of(question, catalog), 3)
    assert scope.area is None and scope.shared is None and scope.extra is None
    assert scope.tables[0] == "companies" and len(scope.tables) <= 3 + 3  # and tables of the values it names


@pytest.mark.parametrize("question, count, offered, not_offered", [
    # The area's code is no word a question says: "compliance incidents" are rsk_incident's rows,
    # not the categories every area has.
    ("How many compliance incidents in the category 'Fraud' were recorded at Cork Distribution Centre?",
     "rsk_incident_count", {"rsk_category"}, {"qa_category", "sls_category"}),
    # What is counted is what the phrase names most fully, its last word first: work orders,
    # not sales orders; invoices, not customers. "Orders" is no request to order the rows.
    ("How many work orders are closed?", "mfg_work_order_count", {"mfg_status"}, {"sls_status", "pur_status"}),
    ("How many customer invoices are closed?", "fin_invoice_count", {"fin_status"}, {"lgs_status"}),
    # "Closed" is the label Closed and the code CLOSED of one status table: offered once.
    ("How many shipments are closed?", "lgs_shipment_count", {"lgs_status"}, {"lgs_status_code"}),
    ("How many sales orders in the category 'Fasteners' were recorded at Bergen Warehouse?", "sls_order_count",
     {"sls_category"}, {"pur_category"}),
])
def test_a_count_is_of_what_the_question_counts_and_filtered_only_by_what_its_rows_reach(
        small, drafted, question, count, offered, not_offered) -> None:
    from groundsql.semantic.request import request_schema
    from groundsql.semantic.terms import terms_of

    catalog = _checked_catalog(small, drafted)  # with the small dimensions' values ("Closed")
    terms = terms_of(question, catalog)
    assert terms.counted == (count,) and not terms.ranks
    schema = request_schema(catalog, terms)
    assert schema["properties"]["select"]["prefixItems"] == [{"enum": [count]}]
    assert "order_by" not in schema["properties"]
    filtered = {f["properties"]["field"]["const"] for f in schema["properties"]["where"]["items"]["anyOf"]}
    assert offered <= filtered and not filtered & not_offered, filtered


def test_a_tie_between_two_joins_is_broken_by_the_table_the_request_shows(small: Path, drafted: Path) -> None:
    """A shipment reaches a country through its customer and through its site: a request that
    shows customers means the customer's country (and the grounds say so); one that shows no
    table of either way stays an error that asks for `via`."""
    from groundsql.db import Database
    from groundsql.packs.load import load_pack
    from groundsql.semantic.compile import CompileError, compile_request
    from groundsql.semantic.load import catalog_for
    from groundsql.semantic.request import Request

    pack = load_pack(drafted)
    with Database(f"sqlite:///{small}") as db:
        catalog = catalog_for(pack.semantic, db.introspect(), pack.semantic_path, tuple(e.table for e in pack.entities))
        request = {"select": ["customer", "total_freight_cost"], "where": [{"field": "country", "value": "Germany"}]}
        compiled = compile_request(catalog, Request.model_validate(request))
        assert any("customer" in note and "site" in note for note in compiled.notes), compiled.notes
        hand = ("SELECT e.customer_name, SUM(f.freight_cost) FROM lgs_shipment f JOIN customer e "
                "ON f.customer_id = e.customer_id JOIN ref_country co ON e.country_id = co.country_id "
                "WHERE co.country_name = 'Germany' GROUP BY e.customer_id, e.customer_name")
        got, want = db.execute(compiled.sql).rows, db.execute(hand).rows
        assert want and sorted(_rounded(got)) == sorted(_rounded(want))
        with pytest.raises(CompileError, match="two ways"):
            compile_request(catalog, Request.model_validate({**request, "select": ["total_freight_cost"]}))


def test_a_tie_the_request_leaves_open_is_broken_by_the_tables_its_question_speaks_of(small, drafted) -> None:
    """"Shipped to customers in Germany": the request shows no customer, but the question
    speaks of customers, so the country is the customer's (and the request says through what);
    a question that speaks of neither way leaves the tie an error."""
    from groundsql.semantic.compile import AmbiguousJoin, compile_request
    from groundsql.semantic.request import Request, as_asked
    from groundsql.semantic.terms import terms_of

    catalog = _checked_catalog(small, drafted)
    request = Request.model_validate({"select": ["total_freight_cost"], "where": [{"field": "country",
                                                                                   "value": "Germany"}]})
    question = "What was the total freight cost of shipments for customers in Germany?"
    asked = as_asked(request, terms_of(question, catalog), catalog)
    assert "customer" in asked.through and "site" not in asked.through
    compiled = compile_request(catalog, asked)
    assert any("the question names" in note for note in compiled.notes), compiled.notes
    assert "customer.country_id" in compiled.sql and "site" not in compiled.sql
    neither = as_asked(request, terms_of("What was the total freight cost of shipments in Germany?", catalog), catalog)
    assert not {"customer", "site"} & set(neither.through)
    with pytest.raises(AmbiguousJoin):
        compile_request(catalog, neither)


def test_a_revision_is_not_offered_the_filter_the_requests_measures_cannot_reach(small, drafted, prepared) -> None:
    """The 1.5B model filtered purchase orders by a sales order's date and, told it was
    unreachable, repeated it: the revision's schema offers only the filters the chosen
    measure's rows are joined to (here: a purchase order's status, not a sales order's)."""
    from groundsql.config import Settings
    from groundsql.db import Database
    from groundsql.packs.load import load_pack
    from groundsql.strategies import Context, get_strategy
    from tests.test_compiled import Scripted

    question = "What was the total order value of closed purchase orders in 2023?"
    wrong = {"select": ["total_order_value"], "where": [{"field": "sls_status", "value": "Closed"},
                                                        {"field": "purchase_order_date", "value": "2023"}]}
    right = {"select": ["total_order_value"], "where": [{"field": "pur_status", "value": "Closed"},
                                                        {"field": "purchase_order_date", "value": "2023"}]}
    llm = Scripted(json.dumps(wrong), json.dumps(right))
    settings = Settings.model_validate({"grounded": {"embeddings": False}, "compiled": {"fallback": False}})
    with Database(f"sqlite:///{small}") as db:
        answer = get_strategy("compiled")(question, Context(db=db, llm=llm, settings=settings,
                                                            pack=load_pack(drafted), resources=prepared))

    def filters(request) -> set[str]:
        return {f["properties"]["field"]["const"] for f in request.json_schema["properties"]["where"]["items"]["anyOf"]}

    first, revision = llm.requests
    assert {"sls_status", "mfg_status"} <= filters(first)
    assert not {"sls_status", "mfg_status"} & filters(revision)
    assert {"pur_status", "purchase_order_date"} <= filters(revision)
    assert answer.ok and answer.grounds["request"] == right, answer.error
    assert next(s for s in answer.steps if s.name == "revise request").detail["not_offered"] == ["sls_status"]


def _rounded(rows) -> list[tuple]:
    from decimal import Decimal

    return [tuple(round(float(v), 2) if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) else
                  str(v) if v is not None else None for v in row) for row in rows]


def test_the_warehouse_loads_into_postgresql_read_only_and_every_gold_answers_there_as_on_sqlite(small: Path) -> None:
    """`build.py --postgres`: the same tables and rows in a new database, and a role that may
    only read it; the golds, transpiled, return SQLite's results there."""
    psycopg = pytest.importorskip("psycopg")
    from groundsql.db import Database
    from groundsql.evaluation.execution_match import results_match
    from tests.conftest import PG_ADMIN_URL

    name = f"groundsql_test_warehouse_{uuid.uuid4().hex[:8]}"
    build = _build_module()
    try:
        build.to_postgres(str(small), PG_ADMIN_URL, name)
        items = [json.loads(line) for line in (ROOT / "questions.jsonl").read_text().splitlines()]
        conn = sqlite3.connect(small)
        reader = f"postgresql://warehouse_reader@127.0.0.1:5432/{name}"
        with Database(reader) as pg:
            assert len(pg.introspect().tables) == conn.execute(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            for table in ("customer", "sls_order_line", "ref_country"):
                assert pg.execute(f"SELECT COUNT(*) FROM {table}").rows[0][0] == \
                    conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            differ = []
            for item in items:
                expected = conn.execute(item["gold_sql"]).fetchall()
                sql = sqlglot.transpile(item["gold_sql"], read="sqlite", write="postgres")[0]
                got = pg.execute(sql, max_rows=10_000).rows
                if not results_match(_rounded(expected), _rounded(got), "order by" in item["gold_sql"].lower()):
                    differ.append(f"{item['id']}: {sql}\n  SQLite {expected[:3]}\n  PostgreSQL {got[:3]}")
        conn.close()
        assert not differ, "\n".join(differ)
        with psycopg.connect(reader, autocommit=True) as as_reader:  # the role reads, and only reads
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                as_reader.execute("DELETE FROM ref_country")
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_warehouse_loads_into_spark_and_every_gold_answers_there_as_on_sqlite(small: Path) -> None:
    pytest.importorskip("pyhive")
    from groundsql.db import Database
    from groundsql.evaluation.execution_match import results_match
    from tests.conftest import spark_copies

    items = [json.loads(line) for line in (ROOT / "questions.jsonl").read_text().splitlines()]
    conn = sqlite3.connect(small)
    with spark_copies([(f"sqlite:///{small}", "warehouse")]) as (port, _), \
            Database(f"hive://127.0.0.1:{port}/warehouse") as spark:
        assert len(spark.introspect().tables) == len(conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall())
        differ = []
        for item in items:
            expected = conn.execute(item["gold_sql"]).fetchall()
            sql = sqlglot.transpile(item["gold_sql"], read="sqlite", write="spark")[0]
            got = spark.execute(sql, max_rows=10_000).rows
            ordered = "order by" in item["gold_sql"].lower()
            if not results_match(_rounded(expected), _rounded(got), ordered):
                differ.append(f"{item['id']}: {sql}\n  SQLite {expected[:3]}\n  Spark  {got[:3]}")
    conn.close()
    assert not differ, "\n".join(differ)
