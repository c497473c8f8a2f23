"""Single-pass generation end to end on real databases, with a scripted model for the plumbing.

A scripted model proves the plumbing (validation, execution, reflection, trace, accounting),
never accuracy; accuracy is measured with the real model in test_end_to_end.py and BENCHMARKS.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import groundsql
from groundsql.config import GenerationConfig, SafetyConfig, Settings
from groundsql.strategies.context import extract_sql
from tests.test_llm import Scripted


def session(db: Path, *answers: str, retries: int = 1, **settings):
    llm = Scripted(*answers)
    config = Settings(generation=GenerationConfig(reflection_retries=retries), **settings)
    return groundsql.connect(db, settings=config, llm=llm), llm


def test_answer_carries_sql_rows_trace_and_usage(concert_singer: Path) -> None:
    s, llm = session(concert_singer, "```sql\nSELECT COUNT(*) AS n FROM singer;\n```")
    answer = s.ask("How many singers do we have?", strategy="zero-shot")
    assert answer.ok and answer.rows == ((6,),) and answer.columns == ("n",)
    assert answer.sql is not None and "LIMIT" in answer.sql.upper()
    assert [step.name for step in answer.steps] == ["schema", "generate", "validate+execute"]
    assert len(answer.calls) == 1 and answer.prompt_tokens == 7 and answer.completion_tokens == 3
    data = answer.to_dict()
    json.dumps(data)  # machine-readable
    assert data["rows"] == [[6]] and data["usage"]["model_calls"] == 1


def test_database_error_triggers_one_reflection(concert_singer: Path) -> None:
    s, llm = session(
        concert_singer,
        "SELECT COUNT(*) FROM singers",
        "```sql\nSELECT COUNT(*) FROM singer\n```",
    )
    answer = s.ask("How many singers do we have?", strategy="zero-shot")
    assert answer.ok and answer.rows == ((6,),)
    assert [step.name for step in answer.steps] == [
        "schema", "generate", "validate+execute", "reflect", "validate+execute",
    ]
    assert "there is no table singers" in answer.steps[2].detail["error"]


def test_refused_sql_is_never_run_and_retries_are_bounded(concert_singer: Path) -> None:
    before = hashlib.sha256(concert_singer.read_bytes()).hexdigest()
    s, llm = session(concert_singer, "DELETE FROM singer", "DROP TABLE singer", "SELECT 1", retries=1)
    answer = s.ask("Remove all singers", strategy="zero-shot")
    assert not answer.ok and "2 attempts" in (answer.error or "")
    assert llm.attempts == 2
    assert hashlib.sha256(concert_singer.read_bytes()).hexdigest() == before


def test_answer_without_sql_is_reflected_on(concert_singer: Path) -> None:
    s, _ = session(concert_singer, "I am not sure.", "SELECT Name FROM singer WHERE Age > 40")
    answer = s.ask("Which singers are older than 40?", strategy="zero-shot")
    assert answer.ok and answer.steps[1].detail["sql"] is None


def test_no_reflection_when_disabled(concert_singer: Path) -> None:
    s, llm = session(concert_singer, "SELECT nope FROM singer", "SELECT 1", retries=0)
    assert not s.ask("?", strategy="zero-shot").ok and llm.attempts == 1


def test_allow_list_applies_to_model_sql(concert_singer: Path) -> None:
    s, _ = session(
        concert_singer,
        "SELECT * FROM stadium",
        "SELECT * FROM stadium",
        safety=SafetyConfig(allowed_tables=frozenset({"singer"})),
    )
    answer = s.ask("List the stadiums", strategy="zero-shot")
    assert not answer.ok and "stadium" in (answer.error or "")


@pytest.mark.parametrize(
    "text, sql",
    [
        ("```sql\nSELECT 1;\n```", "SELECT 1"),
        ("Here you go:\n```\nSELECT a FROM t\n```\nThis counts.", "SELECT a FROM t"),
        ("```sql\nWITH x AS (SELECT 1) SELECT * FROM x", "WITH x AS (SELECT 1) SELECT * FROM x"),
        ("SELECT name FROM singer;", "SELECT name FROM singer"),
        ("I cannot answer that.", None),
        ("```sql\n\n```", None),
    ],
)
def test_extract_sql(text: str, sql: str | None) -> None:
    assert extract_sql(text) == sql
