"""Asking back on the demo database (strategies/clarify.py), with a scripted model where one is
called (plumbing only: how often the real model asks is measured in BENCHMARKS.md)."""

from __future__ import annotations

import json

import pytest

from groundsql.conversation import Turn, answer_in_conversation
from groundsql.config import Settings
from groundsql.strategies import Context
from groundsql.strategies.answer import Option
from groundsql.strategies.clarify import chosen_option
from tests.test_compiled import Scripted, ask, demo  # noqa: F401 (a fixture)

NOT_USED = Scripted("the model is not asked")


@pytest.mark.parametrize("question, about, options", [
    ("When was Reinsurance founded?", "Reinsurance", ["Banksia Reinsurance Ltd", "Marlow Reinsurance plc"]),
    ("What was Power & Light's net income in fiscal 2023?", "Power & Light",
     ["Osprey Power & Light Holdings, Inc.", "Taunus Power & Light GmbH"]),
    ("What was Hikari Telecom K.K.'s income in fiscal 2023?", "income", ["operating income", "net income"]),
    ("Which is the largest company in Germany?", "largest", None),
])
def test_an_ambiguous_question_is_asked_back_without_a_model_call(demo, question, about, options) -> None:
    llm = Scripted("not used")
    answer = ask(demo, question, llm)
    assert answer.asks_back and answer.ok and answer.sql is None and not llm.requests
    clarification = answer.clarification
    assert clarification.about == about and 2 <= len(clarification.options) <= 5
    if options is not None:
        assert [o.label for o in clarification.options] == options
    assert answer.grounds["path"] == "clarify"
    assert answer.to_dict()["clarification"]["options"][0]["question"]


@pytest.mark.parametrize("question", [
    "When was Marlow Reinsurance plc founded?",  # the name in full
    "What was Lindenhof Engineering AG's profit in fiscal 2023?",  # the pack's synonym of net income
    "Which company in Germany has the most employees?",  # the measure named
])
def test_a_clear_question_is_not_asked_back(demo, question) -> None:
    llm = Scripted(json.dumps({"select": ["company"], "where": []}))
    answer = ask(demo, question, llm)
    assert answer.clarification is None and len(llm.requests) == 1


def test_a_year_after_the_data_is_out_of_scope(demo) -> None:
    answer = ask(demo, "What will Kitano Mobility K.K.'s revenue be in fiscal 2027?", Scripted("not used"))
    assert answer.clarification.kind == "out_of_scope" and not answer.ok
    assert "ends in 2024" in answer.error and "2027" in answer.error


@pytest.mark.parametrize("question, lacking", [
    ("How many patents does Itapua Therapeutics S.A. hold?", "patents"),
    ("What is the average salary of Hikari Telecom K.K.'s employees?", "salary"),
])
def test_what_the_question_asks_for_being_unknown_to_the_domain_is_out_of_scope(demo, question, lacking) -> None:
    llm = Scripted("not used")
    answer = ask(demo, question, llm)
    assert answer.clarification.kind == "out_of_scope" and repr(lacking) in answer.error and not llm.requests


@pytest.mark.parametrize("question", [
    "How much total debt did Rheinwerk Properties SE carry at the end of fiscal 2021?",  # "carry": not asked for
    "How many companies were founded in 2000 or later?",
    "Which French companies report their financials in US dollars?",
])
def test_an_unknown_word_outside_what_is_asked_for_is_no_reason_to_refuse(demo, question) -> None:
    llm = Scripted(json.dumps({"select": ["company"], "where": []}))
    assert ask(demo, question, llm).clarification is None and len(llm.requests) == 1


@pytest.mark.parametrize("question, asked", [
    ("What is the average salary of Hikari Telecom K.K.'s employees?", "salary"),  # "average": how, not what
    ("What percentage of the shipments booked in 2023 were cancelled?", "shipments booked"),
    ("Which analysts cover Sakura Semiconductor K.K.?", "analysts cover"),
    ("How many tonnes of CO2 did it emit?", "tonnes"),
    ("What will the revenue be?", "revenue"),
])
def test_what_a_question_asks_for(question, asked) -> None:
    from groundsql.grounding.entities import EntityMatch
    from groundsql.strategies.clarify import asked_for

    matches = [EntityMatch(name, "company", "company_id", 1, "company_name", name, "company", 1.0)
               for name in ("Hikari Telecom K.K.", "Sakura Semiconductor K.K.") if name in question]
    assert asked_for(question, matches) == asked


def test_a_reply_that_picks_an_option_asks_its_question_without_resolving_it(demo) -> None:
    settings = Settings.model_validate({"grounded": {"embeddings": False}})
    llm = Scripted(json.dumps({"select": ["founded_year"], "where": [
        {"field": "company", "value": "Marlow Reinsurance plc"}]}))
    ctx = Context(db=demo, llm=llm, settings=settings)
    asked = answer_in_conversation("When was Reinsurance founded?", [], "compiled", ctx)
    assert asked.asks_back and not llm.requests
    turn = Turn("When was Reinsurance founded?", asked.question, None, clarification=asked.clarification)
    answer = answer_in_conversation("Marlow", [turn], "compiled", ctx)
    assert answer.ok and answer.rows, answer.error
    conversation = answer.grounds["conversation"]
    assert conversation["chosen"] == "Marlow Reinsurance plc"
    assert conversation["standalone"] == "When was Marlow Reinsurance plc founded?"
    assert len(llm.requests) == 1  # the request, and no call to make the reply standalone
    assert answer.steps[0].name == "reply"


def test_a_reply_that_matches_no_option_is_read_as_a_follow_up(demo) -> None:
    settings = Settings.model_validate({"grounded": {"embeddings": False}})
    llm = Scripted("When was Banksia Reinsurance Ltd founded?",
                   json.dumps({"select": ["founded_year"], "where": []}))
    ctx = Context(db=demo, llm=llm, settings=settings)
    asked = answer_in_conversation("When was Reinsurance founded?", [], "compiled", ctx)
    turn = Turn("When was Reinsurance founded?", asked.question, None, clarification=asked.clarification)
    answer = answer_in_conversation("the Australian one", [turn], "compiled", ctx)
    assert "matched none of the options" in answer.grounds["conversation"]["unmatched"]
    assert "Asked back: Which company" in llm.requests[0].messages[-1].content
    assert answer.grounds["conversation"]["standalone"] == "When was Banksia Reinsurance Ltd founded?"


OPTIONS = (Option("Osprey Power & Light Holdings, Inc.", "q1", 1), Option("Taunus Power & Light GmbH", "q2", 2))


@pytest.mark.parametrize("reply, label", [
    ("2", "Taunus Power & Light GmbH"),
    ("Osprey Power & Light Holdings, Inc.", "Osprey Power & Light Holdings, Inc."),
    ("taunus", "Taunus Power & Light GmbH"),
    ("Power & Light", None),  # both
    ("7", None),
    ("the other one", None),
    ("", None),
    ("What was the revenue of Taunus Power & Light GmbH in 2023?", None),  # a new question, not a pick
])
def test_a_reply_picks_an_option_by_number_label_or_its_own_words(reply, label) -> None:
    chosen = chosen_option(reply, OPTIONS)
    assert (chosen.label if chosen else None) == label


def test_asking_back_can_be_turned_off(demo) -> None:
    llm = Scripted(json.dumps({"select": ["founded_year"], "where": []}))
    answer = ask(demo, "When was Reinsurance founded?", llm, ask_back=False)
    assert answer.clarification is None and len(llm.requests) == 1


def test_an_amount_no_rate_converts_says_so_instead_of_being_a_value(demo) -> None:
    request = {"select": ["revenue"], "where": [{"field": "company", "value": "Sakura Semiconductor K.K."},
                                                {"field": "fiscal_year", "value": 2022}], "currency": "USD"}
    answer = ask(demo, "What was the total revenue of Sakura Semiconductor K.K. in fiscal year 2022, in US dollars?",
                 Scripted(json.dumps(request)))
    assert answer.ok and answer.rows in ((), ((None,),)), answer.rows
    assert "no exchange rate converts them into USD" in answer.grounds["no_value"]
    assert any("Annual" in note for note in answer.grounds["assumed"])  # the default period, said


def test_an_empty_answer_names_the_condition_nothing_matches(demo) -> None:
    request = {"select": ["company"], "where": [{"field": "country", "value": "Japan"},
                                                {"field": "founded_year", "op": "<", "value": 1700}]}
    answer = ask(demo, "Which Japanese companies were founded before 1700?", Scripted(json.dumps(request)))
    assert answer.ok and answer.rows == ()
    assert answer.grounds["no_value"].startswith("no data where founded_year < 1700; without that condition")


def test_the_chosen_measure_of_a_judgement_ranks_and_keeps_one_row(demo) -> None:
    asked = ask(demo, "Which Japanese company is the biggest?", Scripted("not used"))
    option = next(o for o in asked.clarification.options if o.key == "employees")
    assert option.question == "Which Japanese company is the biggest by employees?"
    request = {"select": ["company", "employees"], "where": [{"field": "country", "value": "Japan"}],
               "order_by": [{"field": "employees", "desc": True}], "limit": 5}
    answer = ask(demo, option.question, Scripted(json.dumps(request)))
    assert answer.ok and len(answer.rows) == 1  # "the biggest" is one: the model's limit of 5 is its own


def test_a_year_the_question_names_and_the_request_leaves_out_is_said(demo) -> None:
    request = {"select": ["net_income"], "where": [{"field": "company", "value": "Hikari Telecom K.K."}]}
    answer = ask(demo, "What was Hikari Telecom K.K.'s net income in fiscal 2023?", Scripted(json.dumps(request)))
    assert answer.ok and any(note.startswith("the question names 2023, but the request is not limited to it")
                             for note in answer.grounds["assumed"])
    request["where"].append({"field": "fiscal_year", "value": 2023})
    kept = ask(demo, "What was Hikari Telecom K.K.'s net income in fiscal 2023?", Scripted(json.dumps(request)))
    assert not any("names 2023" in note for note in kept.grounds["assumed"])
