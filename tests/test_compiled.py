"""The compiled path end to end on the demo database with a scripted model (plumbing only: no
accuracy is claimed from a script): a verified query answers without the model, a semantic
request is compiled, and anything else falls back to the grounded pipeline with the reason."""

from __future__ import annotations

import json

import pytest

from groundsql.api import demo_database_url
from groundsql.config import Settings
from groundsql.db import Database
from groundsql.llm.base import LLM, ChatRequest, Completion
from groundsql.strategies import Context, get_strategy


@pytest.fixture(scope="module")
def demo() -> Database:
    return Database(demo_database_url())


class Scripted(LLM):
    """Answers every request with the next of its replies; records the requests."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []
        self.model_id = "scripted"
        self.retries = 0

    def _complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        text = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return Completion(text=text, model=self.model_id, prompt_tokens=100, completion_tokens=20)


def ask(demo: Database, question: str, llm: LLM, **compiled):
    settings = Settings.model_validate({"compiled": compiled, "grounded": {"embeddings": False}})
    return get_strategy("compiled")(question, Context(db=demo, llm=llm, settings=settings))


HIKARI = {"select": ["net_income"], "where": [{"field": "company", "value": "Hikari Telecom K.K."},
                                             {"field": "fiscal_year", "value": 2023}],
          "currency": "JPY", "scale": "billions"}


def test_a_semantic_request_is_compiled_and_run_in_one_model_call(demo) -> None:
    llm = Scripted(json.dumps(HIKARI))
    answer = ask(demo, "What was Hikari Telecom K.K.'s net income for fiscal 2023, in billions of yen?", llm)
    assert answer.ok and answer.rows == ((504.468,),), answer.error
    assert len(answer.calls) == 1 and answer.grounds["path"] == "semantic"
    assert answer.grounds["request"] == HIKARI
    assert any("Annual" in note for note in answer.grounds["assumed"])  # the measure's default, said
    (request,) = llm.requests
    schema = request.json_schema
    assert "net_income" in schema["properties"]["select"]["items"]["enum"]
    companies = {f["properties"]["field"]["const"]: f for f in schema["properties"]["where"]["items"]["anyOf"]}
    assert companies["company"]["properties"]["value"]["anyOf"][0] == {"enum": ["Hikari Telecom K.K."]}
    assert schema["properties"]["currency"] == {"enum": ["JPY"]}
    system = request.messages[0].content
    assert "net_income" in system and "Measures" in system  # the semantic model, shared by every question
    assert "Hikari" not in system


def test_warm_computes_the_demos_one_shared_prompt(demo) -> None:
    from groundsql.api import Session

    llm = Scripted(json.dumps(HIKARI))
    settings = Settings.model_validate({"grounded": {"embeddings": False}})
    session = Session(demo, llm, settings)
    assert len(session.warm()) == 1
    session.ask("What was Hikari Telecom K.K.'s net income for fiscal 2023, in billions of yen?", strategy="compiled")
    warmed, asked = llm.requests
    assert warmed.messages[0].content == asked.messages[0].content and "net_income" in warmed.messages[0].content


def test_a_question_that_fits_a_verified_query_needs_no_model(demo) -> None:
    llm = Scripted("not used")
    question = "Which companies are subsidiaries of Coral Sea Financial Ltd?"
    answer = ask(demo, question, llm)
    assert answer.ok and len(answer.calls) == 0 and not llm.requests
    assert answer.grounds["path"] == "verified" and answer.grounds["trusted"] is True
    verified = answer.grounds["verified_query"]
    assert verified["question"] == "Which companies are subsidiaries of Keystone Dairy Holdings, Inc.?"
    assert verified["values"] == {"company": "Coral Sea Financial Ltd"} and verified["verified_by"]
    assert {r[0] for r in answer.rows} == {"Gondwana Assurance Pty Ltd", "Kaveri Realty Private Limited"}
    off = ask(demo, question, Scripted(json.dumps({"select": ["company"], "where": []})), verified=False,
              fallback=False)
    assert off.grounds["path"] == "semantic" and len(off.calls) == 1


@pytest.mark.parametrize("reply, reason", [
    ("I think it is revenue.", "not a JSON request"),
    (json.dumps({"select": ["revenue"], "where": [], "colour": "red"}), "does not fit the schema"),
    (json.dumps({"select": ["no_such_measure"], "where": []}), "no field to select named 'no_such_measure'"),
    (json.dumps({"select": ["company_count", "ticker"], "where": []}), "would count rows twice"),
])
def test_a_reply_the_path_cannot_use_gives_the_reason(demo, reply, reason) -> None:
    """A remote backend may ignore the schema: the reply is checked, never trusted."""
    answer = ask(demo, "How many companies have a listing?", Scripted(reply), fallback=False, verified=False)
    assert not answer.ok and reason in answer.error
    assert answer.grounds["path"] == "none" and reason in answer.grounds["fallback"]


def test_without_a_fitting_request_the_grounded_pipeline_answers_and_says_why(demo) -> None:
    sql = "SELECT COUNT(*) FROM company"
    llm = Scripted("no json here", '{"tables": []}', '{"constraints": []}', '{"tables": ["company"], "reason": "x"}',
                   f"```sql\n{sql}\n```")
    answer = ask(demo, "How many companies are there?", llm, verified=False, retries=0)
    assert answer.ok and answer.rows == ((114,),)
    assert answer.grounds["path"] == "generated" and "not a JSON request" in answer.grounds["fallback"]
    assert answer.strategy == "compiled" and answer.steps[0].name in ("domain", "semantic model")


def test_a_name_that_matches_nothing_is_said_not_guessed(demo) -> None:
    llm = Scripted(json.dumps(HIKARI))
    answer = ask(demo, "What was the net income of Zyxcorp Holdings in fiscal 2023?", llm)
    assert not answer.ok and "Zyxcorp" in answer.error and not llm.requests


def test_a_request_that_does_not_compile_gets_one_more_turn_with_the_reason(demo) -> None:
    bad = json.dumps({"select": ["company_count", "ticker"], "where": []})
    good = json.dumps({"select": ["company_count"], "where": []})
    llm = Scripted(bad, good)
    answer = ask(demo, "How many companies have a listing on an exchange?", llm, verified=False)
    assert answer.ok and answer.rows == ((114,),) and len(answer.calls) == 2
    assert [s.name for s in answer.steps if s.calls] == ["semantic request", "revise request"]
    turn = llm.requests[1].messages
    assert turn[-2].content == bad and "would count rows twice" in turn[-1].content
    assert llm.requests[1].json_schema == llm.requests[0].json_schema


def test_a_large_semantic_model_is_shown_in_the_part_the_question_speaks_of(demo) -> None:
    # The demo's model (134 fields) treated as a warehouse's: above whole_catalog_fields each
    # question sees its best scope_tables logical tables, and may use only their fields.
    question = "What was Hikari Telecom K.K.'s net income for fiscal 2023, in billions of yen?"
    whole, part = Scripted(json.dumps(HIKARI)), Scripted(json.dumps(HIKARI))
    ask(demo, question, whole)
    answer = ask(demo, question, part, whole_catalog_fields=20, scope_tables=3)
    assert answer.ok and answer.rows == ((504.468,),), answer.error
    assert "financials" in answer.grounds["scope"] and 3 <= len(answer.grounds["scope"]) <= 3 + 3
    shown, full = part.requests[0].messages[0].content, whole.requests[0].messages[0].content
    assert "net_income" in shown and "deal_count" in full and "deal_count" not in shown
    assert len(shown) < len(full) / 2
    schema = part.requests[0].json_schema
    assert "deal_count" not in json.dumps(schema) and "net_income" in json.dumps(schema)


def test_a_confirmed_answer_is_shown_to_the_compiled_path_as_a_solved_request(demo) -> None:
    """Feedback's example (a question and its SQL) is read back into a request, and the next
    similar question is shown it, without the LIMIT the validator added; SQL no request says
    (a subquery) teaches the compiled path nothing."""
    import groundsql

    llm = Scripted(json.dumps({"select": ["company_count"], "where": [{"field": "country", "value": "Japan"}]}))
    settings = Settings.model_validate({"grounded": {"embeddings": False}, "compiled": {"verified": False}})
    with groundsql.connect(llm=llm, settings=settings) as session:
        session.ask("How many companies are there?", strategy="compiled")  # the path is built before the example
        session.learn("How many companies are headquartered in Norway?",
                      "SELECT COUNT(*) FROM company c JOIN ref_country r ON c.country_id = r.country_id "
                      "WHERE r.country_name = 'Norway'")
        session.learn("How many companies are there in Norway, really?",
                      "SELECT COUNT(*) FROM (SELECT company_id FROM company WHERE country_id = 1)")
        answer = session.ask("How many companies are headquartered in Japan?", strategy="compiled")
    shown = llm.requests[-1].messages[-1].content
    assert 'Question: How many companies are headquartered in Norway?\nRequest: {"select": ["company_count"], ' \
           '"where": [{"field": "country", "value": "Norway"}]}' in shown, shown
    assert "really?" not in shown
    learned = next(s for s in answer.steps if s.name == "learned examples")
    assert learned.detail == {"confirmed": 2, "as_requests": 1, "as_verified_queries": 0}


STAFF = ("SELECT COUNT(DISTINCT cp.person_id) AS people FROM company_professional AS cp JOIN company AS c "
         "ON cp.company_id = c.company_id WHERE c.company_name = '{}'")


@pytest.mark.parametrize("verified_by", ["ann", ""])
def test_an_answer_an_editor_confirmed_answers_the_next_like_question_as_a_verified_query(demo, verified_by) -> None:
    """Its question names a value its SQL holds (the company): a question like it about another
    company is answered by its SQL with that company, trusted, without the model. Confirmed by
    a reader (no verified_by), it is only a solved example."""
    import groundsql

    llm = Scripted(json.dumps({"select": ["company_count"], "where": []}))
    with groundsql.connect(llm=llm, settings=Settings.model_validate({"grounded": {"embeddings": False}})) as session:
        session.learn("How many people work as executives or directors at Northwind Logistics Inc.?",
                      STAFF.format("Northwind Logistics Inc."), verified_by=verified_by, verified_at="2026-12-07")
        answer = session.ask("How many people work as executives or directors at Helios Energy AG?",
                             strategy="compiled")
        want = session.run_sql(STAFF.format("Helios Energy AG")).rows
    learned = next(s for s in answer.steps if s.name == "learned examples")
    if verified_by:
        assert answer.grounds["path"] == "verified" and answer.rows == want and not llm.requests
        assert answer.grounds["verified_query"]["verified_by"] == "ann"
        assert answer.grounds["verified_query"]["values"] == {"entity": "Helios Energy AG"}
        assert learned.detail["as_verified_queries"] == 1
    else:
        assert answer.grounds["path"] == "semantic" and llm.requests
        assert learned.detail["as_verified_queries"] == 0
