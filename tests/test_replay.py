"""The whole ask path replayed from answers recorded from the real 0.5B model.

Fast and exact, so the plumbing is checked on every run without loading a model. When a prompt
changes, the recordings no longer match and the test says so; re-record with
`GROUNDSQL_RECORD=1 .venv/bin/python -m pytest tests/test_replay.py` (it then runs the real model).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import groundsql
from groundsql.config import LLMConfig, Settings
from tests.conftest import spider_db

RECORDINGS = Path(__file__).parent / "recordings"
RECORDING = os.environ.get("GROUNDSQL_RECORD") == "1"
REPLAY = Settings(llm=LLMConfig(backend="replay", model="qwen2.5-coder-0.5b", replay_dir=RECORDINGS))


@pytest.mark.parametrize(
    "question, expected",
    [
        ("How many singers do we have?", ((6,),)),
        ("What is the average, minimum, and maximum age of all singers from France?", ((34.5, 25, 43),)),
    ],
)
def test_replayed_answers(question: str, expected: tuple) -> None:
    with groundsql.connect(spider_db("concert_singer"), settings=REPLAY) as session:
        answer = session.ask(question, strategy="zero-shot")
    assert answer.ok, answer.error
    assert answer.rows == expected
    call = answer.calls[0]
    assert call.model == "qwen2.5-coder-0.5b" and call.prompt_tokens > 100
    assert call.from_cache or RECORDING


def test_unrecorded_question_fails_clearly() -> None:
    with groundsql.connect(spider_db("concert_singer"), settings=REPLAY) as session:
        answer = session.ask("A question nobody recorded?", strategy="zero-shot")
    assert not answer.ok and "no recording" in (answer.error or "")
    assert len(answer.steps) == 2  # schema, then the failed generate step: no retry loop
