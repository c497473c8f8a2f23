"""The real local model, end to end: questions in, results checked against gold queries.

Runs Qwen2.5-Coder-0.5B in-process (the fast one), and the default 1.5B model on the question
the README's first command asks.
The questions are simple on purpose: this proves the whole path works with a real model, it
does not measure accuracy. Results compare as multisets, in order only where gold orders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import groundsql
from groundsql.config import LLMConfig, Settings
from groundsql.demo import DEMO_QUESTIONS
from tests.conftest import SPIDER, spider_db

pytestmark = pytest.mark.model
MODEL = "qwen2.5-coder-0.5b"

SPIDER_QUESTIONS = [
    "How many singers do we have?",
    "What is the average, minimum, and maximum age of all singers from France?",
    "What are all distinct countries where singers above age 20 are from?",
    "How many concerts are there in year 2014 or 2015?",
]


def _same_result(predicted: tuple, gold: tuple, ordered: bool) -> bool:
    norm = lambda rows: [tuple(round(v, 4) if isinstance(v, float) else v for v in r) for r in rows]
    if ordered:
        return norm(predicted) == norm(gold)
    return Counter(map(repr, norm(predicted))) == Counter(map(repr, norm(gold)))


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> Settings:
    # A private answer cache: the real model must answer, not an earlier run's cache.
    return Settings(llm=LLMConfig(model=MODEL, cache_dir=tmp_path_factory.mktemp("llm-cache")))


def _gold_for(question: str) -> str:
    items = json.loads((SPIDER / "dev.json").read_text())
    return next(i["query"] for i in items if i["db_id"] == "concert_singer" and i["question"] == question)


@pytest.mark.parametrize("question", SPIDER_QUESTIONS)
def test_spider_concert_singer(settings: Settings, question: str) -> None:
    with groundsql.connect(spider_db("concert_singer"), settings=settings) as session:
        answer = session.ask(question, strategy="zero-shot")
        gold_sql = _gold_for(question)
        gold = session.db.execute(gold_sql).rows
    assert answer.ok, answer.error
    assert _same_result(answer.rows, gold, "order by" in gold_sql.lower()), (answer.sql, answer.rows, gold)
    assert answer.calls and answer.calls[0].prompt_tokens > 0


@pytest.mark.parametrize(
    "model, strategy, question, gold_sql",
    [
        # One join through a reference table, written by the 0.5B model (which, asked through the
        # compiled path, leaves this question's filter out of its request).
        (MODEL, "zero-shot", *DEMO_QUESTIONS[1]),
        # The question the README's first command asks, as it asks: the default model and strategy.
        (LLMConfig().model, "auto", *DEMO_QUESTIONS[0]),
    ],
)
def test_demo_database(settings: Settings, model: str, strategy: str, question: str, gold_sql: str) -> None:
    settings = settings.model_copy(update={"llm": settings.llm.model_copy(update={"model": model})})
    with groundsql.connect(settings=settings) as session:
        answer = session.ask(question, strategy=strategy)
        gold = session.db.execute(gold_sql).rows
    assert answer.ok, answer.error
    assert _same_result(answer.rows, gold, False), (answer.sql, answer.rows, gold)


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    groundsql_bin = Path(sys.executable).with_name("groundsql")
    command = [str(groundsql_bin)] if groundsql_bin.exists() else [sys.executable, "-m", "groundsql"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})}
    )


def test_cli_ask_json_counts_singers(tmp_path: Path) -> None:
    db = spider_db("concert_singer")
    done = _cli(
        "ask", "--db", f"sqlite:///{db}", "--model", MODEL, "--strategy", "zero-shot", "--no-cache", "--json",
        "How many singers do we have?",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] and result["rows"] == [[6]]
    assert "count" in result["sql"].lower()
    assert result["usage"]["model_calls"] == 1 and result["usage"]["prompt_tokens"] > 0
    assert [step["step"] for step in result["trace"]] == ["schema", "generate", "validate+execute"]


def test_cli_table_output(tmp_path: Path) -> None:
    done = _cli("ask", "--db", str(spider_db("concert_singer")), "--model", MODEL, "--strategy", "zero-shot", "How many singers do we have?")
    assert done.returncode == 0, done.stderr
    assert "SELECT" in done.stdout.upper() and "6" in done.stdout


def test_search_strategy_with_the_real_model(settings: Settings) -> None:
    # The whole search on a real model: understanding under its grammar, compression, the
    # tree, the probe variants, selection; a small budget keeps it quick. It proves the path,
    # not accuracy (the 0.5B model may count or list here): the chosen query ran, and its rows
    # are the database's answer to it.
    question = "How many singers are older than 40?"
    # One direct sample, then reasoning: the semantic state is asked (lazily, for them).
    settings = settings.model_copy(update={"search": settings.search.model_copy(
        update={"rollouts": 3, "max_calls": 6, "root_samples": 1, "early_stop": 0})})
    with groundsql.connect(spider_db("concert_singer"), settings=settings) as session:
        answer = session.ask(question, strategy="search")
        assert answer.ok, answer.error
        again = session.db.execute(answer.sql).rows
    assert 3 <= len(answer.calls) <= 6  # a generation, the semantic state, a reasoning action
    assert answer.grounds["candidates"] and answer.grounds["trajectory"][-1] in (
        "sql_generation", "sql_revision")
    names = [s.name for s in answer.steps]
    assert names[0] == "compress schema" and names.index("understand") > names.index("sql_generation")
    understand = next(s for s in answer.steps if s.name == "understand")
    assert understand.detail["intent"]  # the grammar-held semantic state was read
    assert _same_result(answer.rows, again, False)


def test_compiled_path_with_the_real_model(settings: Settings) -> None:
    """The request path on a real model: one call under the grammar, a request that parses
    into the semantic model's names, compiled and run. It proves the path, not accuracy."""
    settings = settings.model_copy(update={"compiled": settings.compiled.model_copy(update={"fallback": False})})
    with groundsql.connect(settings=settings) as session:
        answer = session.ask("How many companies are headquartered in Japan?", strategy="compiled")
    request = answer.grounds.get("request")
    assert request is not None and set(request) <= {"select", "where", "currency", "scale", "order_by", "limit"}
    assert 1 <= len(answer.calls) <= 2 and answer.calls[0].completion_tokens < 120
    assert answer.grounds["path"] in ("semantic", "none")
    if answer.ok:
        assert answer.grounds["path"] == "semantic" and answer.rows


def test_verified_query_with_the_real_model_loaded_asks_it_nothing(settings: Settings) -> None:
    with groundsql.connect(settings=settings) as session:
        answer = session.ask("Which companies are subsidiaries of Coral Sea Financial Ltd?", strategy="compiled")
    assert answer.ok and not answer.calls and answer.grounds["path"] == "verified"
    assert {r[0] for r in answer.rows} == {"Gondwana Assurance Pty Ltd", "Kaveri Realty Private Limited"}


def test_the_local_runtime_enforces_the_schema_grammar(settings: Settings) -> None:
    # Told to write a table and a column that do not exist, the model under the schema's
    # grammar cannot: what it writes is what the grammar admits (checked by llguidance itself).
    from groundsql.llm import build_llm, chat
    from groundsql.schema.grammar import sql_grammar
    from tests.test_sql_grammar import admits

    with groundsql.connect(spider_db("concert_singer"), settings=settings) as session:
        grammar = sql_grammar(session.db.introspect()).text
    llm = build_llm(settings.llm.model_copy(update={"cache": False}))
    try:
        asked = chat("Answer with one SQL query in a ```sql code block.",
                     "Write exactly this query: SELECT nickname FROM singers_table", max_tokens=60)
        free = llm.complete(asked).text
        bound = llm.complete(asked.model_copy(update={"grammar": grammar})).text
    finally:
        llm.close()
    assert "singers_table" in free  # what the model writes when nothing stops it
    assert "singers_table" not in bound and "nickname" not in bound
    assert admits(grammar, bound.strip().removeprefix("```sql").removesuffix("```").strip()), bound
