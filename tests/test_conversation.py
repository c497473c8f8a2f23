"""Follow-up questions: resolved against the conversation, then answered like any other.

A scripted model proves the plumbing (what the resolver and the generator are shown, what the
answer records); how often the real model resolves a follow-up right is in BENCHMARKS.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import groundsql
from groundsql.conversation import Turn, earlier_examples
from groundsql.errors import DatabaseError, UnsafeSQLError
from tests.test_llm import Scripted

FIRST = Turn("How many singers are from France?", "How many singers are from France?",
             "SELECT COUNT(*) FROM singer WHERE Country = 'France'", ("COUNT(*)",), 1)


def test_a_follow_up_is_made_standalone_before_it_is_answered(concert_singer: Path) -> None:
    llm = Scripted("How many singers are from the Netherlands?",
                   "```sql\nSELECT COUNT(*) FROM singer WHERE Country = 'Netherlands'\n```")
    steps: list[str] = []
    with groundsql.connect(concert_singer, llm=llm) as session:
        answer = session.ask("and from the Netherlands?", strategy="zero-shot", history=[FIRST], on_step=lambda s: steps.append(s.name))
    assert answer.ok and answer.rows == ((1,),)
    assert answer.question == "How many singers are from the Netherlands?"
    assert answer.grounds["conversation"] == {
        "asked": "and from the Netherlands?", "standalone": "How many singers are from the Netherlands?",
        "earlier": ["How many singers are from France?"]}
    assert [s.name for s in answer.steps] == steps == ["resolve", "schema", "generate", "validate+execute"]
    assert len(answer.calls) == 2
    resolver, generator = (request.messages[-1].content for request in llm.requests)
    # The resolver sees the earlier turn and its query, not the schema; the generator sees
    # the earlier turn as an example to edit, and the standalone question.
    assert "How many singers are from France?" in resolver and "SELECT COUNT(*)" in resolver
    assert "CREATE TABLE" not in resolver and "# Table" not in llm.requests[0].messages[0].content
    assert "Earlier in this conversation:" in generator and "WHERE Country = 'France'" in generator
    assert generator.rstrip().endswith("Question: How many singers are from the Netherlands?")


def test_without_history_nothing_is_resolved(concert_singer: Path) -> None:
    llm = Scripted("```sql\nSELECT COUNT(*) FROM singer\n```")
    with groundsql.connect(concert_singer, llm=llm) as session:
        answer = session.ask("How many singers are there?", strategy="zero-shot")
    assert [s.name for s in answer.steps][0] == "schema" and "conversation" not in answer.grounds


def test_only_answered_turns_become_examples() -> None:
    failed = Turn("Who sang?", "Who sang?", None)
    assert [e.question for e in earlier_examples([FIRST, failed])] == [FIRST.standalone]


def test_a_confirmed_answer_is_learned_for_the_next_question(concert_singer: Path) -> None:
    llm = Scripted("```sql\nSELECT Name FROM singer ORDER BY Age DESC LIMIT 1\n```")
    with groundsql.connect(concert_singer, llm=llm) as session:
        example = session.learn("Who is the oldest singer?", "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1")
        answer = session.ask("Name the oldest singer.", strategy="few-shot")
        with pytest.raises(UnsafeSQLError):
            session.learn("Drop it", "DROP TABLE singer")
        with pytest.raises(DatabaseError):
            session.learn("Nonsense", "SELECT nope FROM singer")
    assert answer.ok and example.sql in llm.requests[0].messages[-1].content
    assert [e.question for e in session.context.learned] == ["Who is the oldest singer?"]
