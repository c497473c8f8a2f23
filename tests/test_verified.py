"""Verified queries (semantic/verified.py): parameters checked against their SQL, values found in
a question, and the decision to reuse a query: a paraphrase with other values fits, a question
that differs in anything else does not."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from groundsql.errors import ConfigError
from groundsql.retrieval import Example, QueryBank
from groundsql.semantic.verified import Param, fill, find_mentions, match_template, params_problem


@dataclass(frozen=True)
class Linked:
    """What entity linking returns, for the names these tests use."""

    mention: str
    table: str
    name: str


COMPANIES = {"Northwind Logistics": "Northwind Logistics Inc.", "Hikari Telecom": "Hikari Telecom K.K.",
             "Helios Energy AG": "Helios Energy AG", "Granite Bancorp": "Granite Bancorp Inc."}
LABELS = [("ref_country", "Japan"), ("ref_country", "Germany"), ("ref_transaction_status", "Completed"),
          ("ref_transaction_status", "Terminated"), ("ref_industry", "Banks")]


def linked(question: str) -> list[Linked]:
    # As entity linking does: the longest span that names the company.
    return [Linked(n if n in question else m, "company", n) for m, n in COMPANIES.items() if m in question]


def mentions(question: str):
    return find_mentions(question, linked(question), LABELS)


NET_INCOME = Example(
    "What was the annual net income of Northwind Logistics Inc. in fiscal year 2022, in millions of US dollars?",
    "SELECT fd.data_value / 1e6 FROM financial_data fd JOIN financial_period fp ON fd.financial_period_id = "
    "fp.financial_period_id JOIN company c ON fp.company_id = c.company_id WHERE c.company_name = "
    "'Northwind Logistics Inc.' AND fp.fiscal_year = 2022 AND fd.data_item_id = 15",
    params=(Param("company", "entity", "Northwind Logistics Inc."), Param("year", "year", 2022)))
TERMINATED = Example(
    "How many acquisitions were terminated?",
    "SELECT COUNT(*) FROM ma_transaction t JOIN ref_transaction_status s ON t.transaction_status_id = "
    "s.transaction_status_id WHERE s.status_name = 'Terminated' AND t.transaction_type_id = 2",
    params=(Param("status", "label", "Terminated"),))
TOP = Example(
    "Which five Japanese companies employ the most people?",
    "SELECT c.company_name FROM company c JOIN ref_country r ON c.country_id = r.country_id "
    "WHERE r.country_name = 'Japan' ORDER BY c.employees DESC LIMIT 5",
    params=(Param("top_n", "limit", 5),))
BANK = (NET_INCOME, TERMINATED, TOP)


def match(question: str):
    where = {i: mentions(e.question) for i, e in enumerate(BANK)}
    return match_template(question, mentions(question), BANK, where, "sqlite")


@pytest.mark.parametrize("question, values", [
    ("What was the annual net income of Hikari Telecom in fiscal year 2023, in millions of US dollars?",
     {"company": "Hikari Telecom K.K.", "year": 2023}),
    ("What was the annual net income of Granite Bancorp in fiscal year 2021 in millions of US dollars", 
     {"company": "Granite Bancorp Inc.", "year": 2021}),
    ("How many acquisitions were completed?", {"status": "Completed"}),
    ("Which three Japanese companies employ the most people?", {"top_n": 3}),
])
def test_a_question_with_other_values_fits_and_is_filled(question, values) -> None:
    found = match(question)
    assert found is not None and found.values == values
    for value in values.values():
        assert (f"'{value}'" if isinstance(value, str) else str(value)) in found.sql


@pytest.mark.parametrize("question", [
    "What was the annual revenue of Hikari Telecom in fiscal year 2023, in millions of US dollars?",  # another metric
    "What was the annual net income of Hikari Telecom in fiscal year 2023, in billions of US dollars?",  # scale
    "What was the quarterly net income of Hikari Telecom in fiscal year 2023, in millions of US dollars?",
    "What was the annual net income of Hikari Telecom in fiscal years 2022 and 2023, in millions of US dollars?",
    "What was the annual net income of Hikari Telecom and Helios Energy AG in fiscal year 2023, in millions of US dollars?",
    "Which five German companies employ the most people?",  # a value that is no parameter
    "How many acquisitions were terminated in 2022?",  # one value more than the query takes
    "How many mergers were terminated?",
    "What is the capital of Japan?",
])
def test_a_question_that_differs_in_anything_else_does_not_fit(question) -> None:
    assert match(question) is None


def test_mentions_of_dates_years_labels_and_a_top_n() -> None:
    found = mentions("Which five companies in Japan closed above 600 on 30 June 2023 or 2023-07-03 in 2022?")
    kinds = [(m.kind, m.value) for m in found]
    assert kinds == [("limit", 5), ("label", "Japan"), ("number", 600), ("date", "2023-06-30"),
                     ("date", "2023-07-03"), ("year", 2022)]


def test_fill_replaces_literals_and_the_limit() -> None:
    sql = fill(TOP.sql, TOP.params, {"top_n": 3}, "sqlite")
    assert sql.endswith("LIMIT 3") and "'Japan'" in sql


@pytest.mark.parametrize("params, problem", [
    ((Param("year", "year", 2019),), "year: 2019 does not occur in the sql"),
    ((Param("a", "entity", "Northwind Logistics Inc."), Param("a", "year", 2022)), "two parameters"),
])
def test_parameters_must_be_literals_of_their_sql(params, problem) -> None:
    assert problem in params_problem(NET_INCOME.sql, params, None)
    assert params_problem(NET_INCOME.sql, NET_INCOME.params, None) is None


def test_a_bank_entry_with_a_bad_parameter_names_file_line_and_field(tmp_path: Path) -> None:
    entry = {"question": "q", "sql": "SELECT 1 WHERE 2 = 2", "params": [{"name": "n", "kind": "year", "value": 2023}]}
    bank = tmp_path / "bank.jsonl"
    bank.write_text(json.dumps({"question": "ok", "sql": "SELECT 1"}) + "\n" + json.dumps(entry) + "\n")
    with pytest.raises(ConfigError, match=r"bank\.jsonl:2: params\.n: 2023 does not occur in the sql"):
        QueryBank.load(bank)
    entry["params"] = [{"name": "n", "kind": "weekday", "value": 2}]
    bank.write_text(json.dumps(entry) + "\n")
    with pytest.raises(ConfigError, match=r"bank\.jsonl:1: params\.0\.kind: 'weekday' is not one of"):
        QueryBank.load(bank)


# -- on the demo pack: questions that fit one of its verified queries, and near misses ---------------

FIXTURE = Path(__file__).parent / "fixtures" / "verified_questions.jsonl"


@pytest.fixture(scope="module")
def demo_matcher():
    from groundsql.api import connect
    from groundsql.strategies.answer import Trace
    from groundsql.strategies.compiled import _semantic
    from groundsql.strategies.grounded import domain_for

    session = connect(settings=__import__("groundsql.config", fromlist=["Settings"]).Settings.model_validate(
        {"grounded": {"embeddings": False}}))  # no model is asked of it
    ctx = session.context
    domain = domain_for(ctx, Trace("", ""))
    semantic = _semantic(ctx, domain, Trace("", ""))

    def matcher(question: str, threshold: float = 0.9):
        entities = domain.entities.link(question)[0]
        found = find_mentions(question, entities, semantic.labels)
        return match_template(question, found, semantic.templates, semantic.template_mentions, "sqlite", threshold)

    yield matcher, session
    session.close()


def test_the_demo_packs_verified_queries_fit_only_what_they_answer(demo_matcher) -> None:
    matcher, session = demo_matcher
    cases = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    assert len(cases) >= 40 and sum(c["fits"] is None for c in cases) >= 15
    wrong = []
    for case in cases:
        found = matcher(case["question"])
        fits = found.example.question if found else None
        if fits != case["fits"] or (found and sorted(map(str, found.values.values())) !=
                                    sorted(map(str, case["values"].values()))):
            wrong.append((case["question"], fits, found.values if found else None))
        elif found:
            assert session.run_sql(found.sql).rows, case["question"]  # the filled query runs and finds rows
    assert not wrong, wrong
