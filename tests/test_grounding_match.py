"""The lookup scored on its own (evaluation/grounding_match.py), on the real demo database: the
rows a gold query names, by key or by label, and recall and precision of resolved constraints."""

from __future__ import annotations

import pytest

from groundsql.api import demo_database_url
from groundsql.db import Database
from groundsql.evaluation.grounding_match import gold_rows, grounding_scores


@pytest.fixture(scope="module")
def demo() -> Database:
    return Database(demo_database_url())


def key(db: Database, table: str, key_column: str, column: str, value: str) -> str:
    (row,) = db.execute(f"SELECT {key_column} FROM {table} WHERE {column} = '{value}'").rows
    return str(row[0])


@pytest.fixture(scope="module")
def keys(demo) -> tuple[str, str]:
    """The keys of the annual period type and of the Total Revenue metric."""
    return (key(demo, "ref_period_type", "period_type_id", "period_type_name", "Annual"),
            key(demo, "ref_data_item", "data_item_id", "data_item_name", "Total Revenue"))


def test_rows_named_by_key_label_and_name(demo, keys) -> None:
    schema, (annual, revenue) = demo.introspect(), keys
    sql = ("SELECT fd.data_value FROM financial_data AS fd JOIN financial_period AS fp "
           "ON fd.financial_period_id = fp.financial_period_id JOIN company AS c ON c.company_id = fp.company_id "
           "JOIN ref_data_item AS di ON di.data_item_id = fd.data_item_id "
           f"WHERE fp.period_type_id = {annual} AND di.data_item_name IN ('Total Revenue') "
           "AND c.company_name = 'Ticino Mobility AG' AND fp.fiscal_year = 2023")
    ticino = key(demo, "company", "company_id", "company_name", "Ticino Mobility AG")
    # The key through a foreign key, the label through a read, the entity by its name; the year
    # names no row.
    assert gold_rows(sql, demo, schema) == {("ref_period_type", annual), ("ref_data_item", revenue),
                                            ("company", ticino)}
    # A name that matches no row names nothing; nor does unparseable SQL.
    assert gold_rows("SELECT 1 FROM company AS c WHERE c.company_name = 'Zyxcorp'", demo, schema) == set()
    assert gold_rows("not sql (", demo, schema) == set()


def test_recall_and_precision_of_resolved_constraints(demo, keys) -> None:
    schema, (annual, revenue) = demo.introspect(), keys
    sql = ("SELECT fd.data_value FROM financial_data AS fd JOIN financial_period AS fp "
           "ON fd.financial_period_id = fp.financial_period_id "
           f"WHERE fp.period_type_id = {annual} AND fd.data_item_id = {revenue}")
    resolved = [{"table": "ref_data_item", "column": "data_item_id", "id": int(revenue)},
                {"table": "ref_currency", "column": "currency_id", "id": 160}]
    scores = grounding_scores(sql, resolved, demo, schema)
    assert scores["found"] == 1 and scores["recall"] == 0.5 and scores["precision"] == 0.5
    assert scores["gold"] == sorted([f"ref_data_item={revenue}", f"ref_period_type={annual}"])
    # Nothing resolved: recall 0, precision undefined; nothing to find: recall undefined.
    assert grounding_scores(sql, [], demo, schema)["precision"] is None
    assert grounding_scores("SELECT COUNT(*) FROM company", resolved, demo, schema)["recall"] is None
