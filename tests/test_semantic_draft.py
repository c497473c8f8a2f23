"""`groundsql init` drafts a semantic model that loads and compiles, with the conversions the
data shows, and drafted solved examples that are verified-query templates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundsql.api import demo_database_url
from groundsql.db import Database
from groundsql.packs.draft import draft_pack
from groundsql.packs.load import load_pack
from groundsql.semantic.compile import compile_request
from groundsql.semantic.load import catalog_for, check_data
from groundsql.semantic.request import Request
from tests.conftest import spider_db


def drafted(db: Database, out: Path):
    summary = draft_pack(db, out)
    pack = load_pack(out)
    assert summary.semantic and pack.semantic is not None and pack.semantic.drafted
    catalog = catalog_for(pack.semantic, db.introspect(), pack.semantic_path, tuple(e.table for e in pack.entities))
    check_data(catalog, db, pack.semantic_path)
    return pack, catalog


@pytest.fixture(scope="module")
def demo_draft(tmp_path_factory):
    db = Database(demo_database_url())
    pack, catalog = drafted(db, tmp_path_factory.mktemp("demo-pack"))
    yield db, pack, catalog
    db.close()


def test_the_demo_draft_sees_the_unit_factor_and_the_rate_table(demo_draft) -> None:
    db, pack, catalog = demo_draft
    conv = pack.semantic.currency
    assert conv is not None and (conv.table, conv.base, conv.code) == ("exchange_rate", "USD", "iso_code")
    amount = catalog.field("total_data_value")
    assert amount is not None and "ref_unit.multiplier" in amount.source.expr
    assert amount.source.currency.date == "financial_period.period_end_date"
    assert catalog.field("total_percent_acquired").kind == "aggregate"  # a percentage is no amount: no factor
    # Roles: the self-reference is joined only through the dimension that names it.
    parent = next(r for r in pack.semantic.relationships if r.from_ == r.to == "company")
    assert parent.automatic is False and catalog.field("company_parent_company").via == (parent.name,)


def test_the_drafted_model_compiles_a_converted_total(demo_draft) -> None:
    db, pack, catalog = demo_draft
    request = Request.model_validate({"select": ["company", "total_data_value"],
                                      "where": [{"field": "fiscal_year", "value": 2023},
                                                {"field": "data_item", "value": "Total Revenue"},
                                                {"field": "period_type", "value": "Annual"}],
                                      "currency": "USD", "order_by": [{"field": "total_data_value", "desc": True}],
                                      "limit": 3})
    sql = compile_request(catalog, request).sql
    rows = db.execute(sql).rows
    assert len(rows) == 3 and rows[0][1] > rows[2][1] > 0


def test_drafted_examples_are_templates_with_parameters(demo_draft, tmp_path) -> None:
    _, pack, _ = demo_draft
    templated = [e for e in pack.bank if e.params]
    assert templated and all(e.drafted for e in templated)
    kinds = {p.kind for e in templated for p in e.params}
    assert {"label", "limit"} <= kinds


def test_a_spider_database_gets_a_draft_that_loads(tmp_path) -> None:
    with Database(f"sqlite:///{spider_db('concert_singer')}") as db:
        pack, catalog = drafted(db, tmp_path / "pack")
        assert catalog.of_kind("measure") and catalog.of_kind("dimension")
        assert pack.semantic.currency is None  # no rate table: nothing converts


def test_an_existing_semantic_model_is_kept(tmp_path) -> None:
    with Database(f"sqlite:///{spider_db('concert_singer')}") as db:
        out = tmp_path / "pack"
        draft_pack(db, out)
        mine = (out / "semantic.yaml").read_text() + "# edited by a person\n"
        (out / "semantic.yaml").write_text(mine)
        summary = draft_pack(db, out, force=True)
        assert not summary.semantic and (out / "semantic.yaml").read_text() == mine
        assert out / "semantic.yaml" in summary.kept


def test_the_drafted_file_says_it_is_a_draft(tmp_path) -> None:
    with Database(f"sqlite:///{spider_db('concert_singer')}") as db:
        draft_pack(db, tmp_path / "pack")
    text = (tmp_path / "pack" / "semantic.yaml").read_text()
    assert text.startswith("# Semantic model drafted by `groundsql init`") and "drafted: true" in text
    assert json.dumps(text)  # plain text, no control characters to trip an editor


def test_the_logistics_draft_scales_weights_and_converts_invoice_lines(tmp_path) -> None:
    """A unit applies to the fact named like it; an amount takes the currency of the table it
    belongs to (an invoice line's, its invoice's)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    path = tmp_path / "logistics.sqlite"
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "logistics" / "build.py"), str(path)], check=True,
                   capture_output=True)
    with Database(f"sqlite:///{path}") as db:
        pack, catalog = drafted(db, tmp_path / "pack")
        weight = catalog.field("total_weight").source
        assert weight.expr == "SUM(weight * ref_unit_of_weight.kg_factor)" and weight.currency is None
        declared = catalog.field("total_declared_value").source
        assert "kg_factor" not in declared.expr and declared.currency.column == "declared_currency_id"
        line = catalog.field("total_amount").source
        assert (line.currency.column, line.currency.date) == ("invoice.currency_id", "invoice.invoice_date")
        request = Request.model_validate({"select": ["total_amount"], "where": [{"field": "invoice_date", "value": "2023"}],
                                          "currency": "EUR"})
        (total,), = db.execute(compile_request(catalog, request).sql).rows
        assert total > 0
        # A drafted model has no synonyms: "booked in each month" names booked_date by its verb.
        from groundsql.semantic.terms import terms_of

        assert terms_of("How many shipments were booked in each month of 2023?", catalog).grouped == ("booked_month",)


def test_drafted_examples_carry_requests_that_give_their_rows(demo_draft) -> None:
    """The compiled path's solved examples: a drafted example's SQL read back as a request,
    kept only where the compiled request gives the same rows."""
    from groundsql.evaluation.execution_match import gold_orders, results_match

    db, pack, catalog = demo_draft
    with_request = [e for e in pack.bank if e.request]
    assert len(with_request) >= len(pack.bank) // 2
    for example in with_request:
        got = db.execute(compile_request(catalog, Request.model_validate(example.request)).sql).rows
        assert results_match(db.execute(example.sql).rows, got, gold_orders(example.sql)), example.question
    # "How many companies with country name Japan have announced date in 2021?": a label and a year.
    periods = [e for e in with_request if " in 20" in e.question and e.question.startswith("How many")]
    assert periods and all(len(e.request["where"]) == 2 for e in periods)
