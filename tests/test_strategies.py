"""Few-shot and self-consistency on a real database, with a scripted model for the plumbing."""

from __future__ import annotations

from pathlib import Path

import pytest

import groundsql
from groundsql.config import GenerationConfig, SelfConsistencyConfig, Settings
from groundsql.errors import ConfigError
from groundsql.retrieval import Example, QueryBank
from tests.test_llm import Scripted

BANK = QueryBank(
    [
        Example("How many airlines do we have?", "SELECT count(*) FROM airlines", db_id="flight_2"),
        Example("List the names of all pets.", "SELECT name FROM pets", db_id="pets_1"),
        Example("How many singers are there?", "SELECT count(*) FROM singer", db_id="concert_singer"),
    ]
)


def test_few_shot_puts_retrieved_examples_after_the_schema(concert_singer: Path) -> None:
    llm = Scripted("SELECT COUNT(*) FROM singer")
    with groundsql.connect(concert_singer, llm=llm, bank=BANK) as session:
        answer = session.ask("How many singers do we have?", strategy="few-shot")
    assert answer.ok and answer.rows == ((6,),)
    system, user = llm.requests[0].messages
    assert "# Table: singer" in system.content and "Solved examples" not in system.content
    assert "How many singers are there?" in user.content  # the nearest example is shown
    assert user.content.rstrip().endswith("Question: How many singers do we have?")
    assert answer.steps[0].name == "retrieve" and len(answer.steps[0].detail["examples"]) == 3


def test_few_shot_without_bank_is_a_clear_error(concert_singer: Path) -> None:
    with groundsql.connect(concert_singer, llm=Scripted("SELECT 1")) as session:
        with pytest.raises(ConfigError, match="query bank"):
            session.ask("How many singers?", strategy="few-shot")


def test_bank_excludes_own_database() -> None:
    found = BANK.nearest("How many singers are there?", 3, exclude_db="concert_singer")
    assert [e.db_id for e in found] == ["flight_2", "pets_1"]


def test_self_consistency_votes_by_result(concert_singer: Path) -> None:
    # Five samples: two equivalent queries (6 singers), one other result, one failure, no SQL.
    llm = Scripted(
        "SELECT COUNT(*) FROM stadium",
        "SELECT COUNT(*) FROM singer",
        "SELECT nope FROM singer",
        "SELECT COUNT(Singer_ID) AS n FROM singer",
        "I do not know",
    )
    settings = Settings(self_consistency=SelfConsistencyConfig(k=5, temperature=0.8))
    with groundsql.connect(concert_singer, llm=llm, settings=settings) as session:
        answer = session.ask("How many singers do we have?", strategy="self-consistency")
    assert answer.ok and answer.rows == ((6,),)
    assert [r.temperature for r in llm.requests] == [0.0, 0.8, 0.8, 0.8, 0.8]
    assert len({r.seed for r in llm.requests}) == 5
    vote = answer.steps[-1]
    assert vote.name == "vote" and vote.detail["groups"] == [2, 1] and vote.detail["chosen_sample"] == 1
    assert len(answer.calls) == 5


def test_self_consistency_tie_goes_to_greedy(concert_singer: Path) -> None:
    llm = Scripted("SELECT COUNT(*) FROM stadium", "SELECT COUNT(*) FROM singer")
    settings = Settings(self_consistency=SelfConsistencyConfig(k=2))
    with groundsql.connect(concert_singer, llm=llm, settings=settings) as session:
        answer = session.ask("?", strategy="self-consistency")
    assert answer.steps[-1].detail["chosen_sample"] == 0


def test_self_consistency_all_failed(concert_singer: Path) -> None:
    settings = Settings(self_consistency=SelfConsistencyConfig(k=2))
    with groundsql.connect(concert_singer, llm=Scripted("nope", "DROP TABLE singer"), settings=settings) as s:
        answer = s.ask("?", strategy="self-consistency")
    assert not answer.ok and "none of 2 samples ran" in (answer.error or "")


def test_bank_file_round_trip_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "bank.jsonl"
    good.write_text(
        '{"question": "How many airlines?", "sql": "SELECT count(*) FROM airlines", "db": "flight_2"}\n\n'
        '{"question": "Pet names?", "gold_sql": "SELECT name FROM pets", "reasoning": "one table"}\n'
    )
    bank = QueryBank.load(good)
    assert len(bank) == 2 and bank.examples[1].sql == "SELECT name FROM pets"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:1: not a query-bank example"):
        QueryBank.load(bad)
    bad.write_text("[1, 2]\n")
    with pytest.raises(ConfigError, match="expected a JSON object"):
        QueryBank.load(bad)


def test_a_misqualified_column_is_repaired_without_a_model_call(concert_singer: Path) -> None:
    written = "SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"
    with groundsql.connect(concert_singer, llm=Scripted(written)) as session:
        answer = session.ask("Which singers gave concerts?", strategy="zero-shot")
    assert answer.ok and len(answer.calls) == 1
    assert "T1.Name" in (answer.sql or "")
    executed = next(s for s in answer.steps if s.name == "validate+execute")
    # The trace keeps the query as written and why it failed.
    assert executed.detail["repaired"] == [{"sql": written, "error": "no such column: T2.Name"}]
    # Switched off, the model is told the error and asked again (the reflection retry).
    llm = Scripted(written, "SELECT T1.Name FROM singer AS T1")
    settings = Settings(generation=GenerationConfig(repair=False))
    with groundsql.connect(concert_singer, llm=llm, settings=settings) as session:
        answer = session.ask("Which singers gave concerts?", strategy="zero-shot")
    assert answer.ok and len(answer.calls) == 2
    assert "no such column: T2.Name" in llm.requests[1].messages[-1].content


def test_self_consistency_votes_with_repaired_samples(concert_singer: Path) -> None:
    llm = Scripted("SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID",
                    "SELECT COUNT(*) FROM stadium",
                    "SELECT singer.Name FROM singer JOIN singer_in_concert USING (Singer_ID)")
    settings = Settings(self_consistency=SelfConsistencyConfig(k=3))
    with groundsql.connect(concert_singer, llm=llm, settings=settings) as session:
        answer = session.ask("Which singers gave concerts?", strategy="self-consistency")
    assert answer.steps[-1].detail["groups"] == [2, 1]  # the repaired greedy sample votes
    assert "repaired" in next(s for s in answer.steps if s.name == "sample").detail


def test_reflection_does_not_run_a_failed_query_again(concert_singer: Path) -> None:
    # A timed-out query would spend its whole timeout again; any failed one fails the same way.
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    llm = Scripted(slow, f"```sql\n{slow}\n```", "SELECT COUNT(*) FROM singer")
    settings = Settings.model_validate({"database": {"timeout_s": 1}, "generation": {"reflection_retries": 2}})
    with groundsql.connect(concert_singer, llm=llm, settings=settings) as session:
        answer = session.ask("How many singers are there?", strategy="zero-shot")
    assert answer.ok and answer.rows == ((6,),)
    executed = [s for s in answer.steps if s.name == "validate+execute"]
    # each as it ran: the validator bounds the second with a LIMIT
    assert [s.detail["sql"] for s in executed] == [slow, "SELECT COUNT(*) FROM singer LIMIT 1000"]
    assert "not run again" in llm.requests[2].messages[-1].content


# -- auto: the strategy the measurements favour ------------------------------------------------


def test_auto_compiles_where_a_pack_has_a_semantic_model_and_searches_without_a_pack(monkeypatch, tmp_path) -> None:
    from groundsql.api import demo_database_url
    from groundsql.db import Database
    from groundsql.strategies import Answer, Context
    from groundsql.strategies import auto as auto_module
    from tests.conftest import spider_db

    with Database(demo_database_url()) as demo, Database(f"sqlite:///{spider_db('concert_singer')}") as singers:
        chosen = auto_module.choose(Context(db=demo, llm=Scripted(), settings=Settings()))
        assert chosen[0] == "compiled" and "domain pack (findemo) has a semantic model" in chosen[1]
        import shutil

        from groundsql.strategies.grounded import demo_pack_path

        shutil.copytree(demo_pack_path(), tmp_path / "pack")
        (tmp_path / "pack" / "semantic.yaml").unlink()
        without = Settings.model_validate({"grounded": {"pack": str(tmp_path / "pack")}})
        chosen = auto_module.choose(Context(db=demo, llm=Scripted(), settings=without))
        assert chosen[0] == "grounded" and "domain pack (findemo)" in chosen[1]
        assert auto_module.choose(Context(db=singers, llm=Scripted(), settings=Settings()))[0] == "search"
        fast = Settings.model_validate({"auto": {"budget": "fast"}})
        assert auto_module.choose(Context(db=singers, llm=Scripted(), settings=fast))[0] == "self-consistency"

        ran, heard = [], []
        monkeypatch.setattr("groundsql.strategies.get_strategy", lambda name: lambda q, ctx: ran.append(name) or Answer(
            q, name, "SELECT 1", grounds={"x": 1}))
        answer = auto_module.auto("How many singers?", Context(db=singers, llm=Scripted(), settings=fast,
                                                               on_step=heard.append))
    assert ran == ["self-consistency"] and answer.strategy == "self-consistency"
    assert answer.steps[0].name == "strategy" and answer.steps[0].detail["chosen"] == "self-consistency"
    assert answer.grounds == {"auto": {"chosen": "self-consistency", "why": answer.steps[0].detail["why"]}, "x": 1}
    assert heard == [answer.steps[0]]  # the server's event stream hears of the choice first
