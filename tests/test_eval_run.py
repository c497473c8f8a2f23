"""The evaluation harness: loaders, configurations, runs, resumption, and the gold check."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from groundsql.config import Settings
from groundsql.errors import ConfigError
from groundsql.evaluation.configs import parse_config
from groundsql.evaluation.datasets import load_benchmark
from groundsql.evaluation.hardness import spider_hardness
from groundsql.evaluation.runner import EvalRun, bank_from_items, load_records, sample
from tests.conftest import SPIDER, shared_benchmark, spider_db
from tests.test_llm import Scripted

EVAL = Settings().model_copy(
    update={
        "database": Settings().database.model_copy(update={"max_rows": 100_000}),
        "safety": Settings().safety.model_copy(update={"default_limit": 100_000}),
    }
)


# -- configurations ----------------------------------------------------------------------------


def test_parse_config() -> None:
    config = parse_config("zero-shot:format=ddl,examples=false", Settings())
    assert config.strategy == "zero-shot" and config.label == "zero-shot:format=ddl,examples=false"
    assert config.settings.generation.schema_format == "ddl"
    assert config.settings.generation.with_examples is False
    sc = parse_config("self-consistency:k=5,temperature=0.9", Settings())
    assert (sc.settings.self_consistency.k, sc.settings.self_consistency.temperature) == (5, 0.9)
    assert parse_config("few-shot:k=2", Settings()).settings.few_shot.k == 2
    assert parse_config("zero-shot:generation.reflection_retries=0", Settings()).settings.generation.reflection_retries == 0
    search = parse_config("search:baseline_sample=false,discriminated=3,rollouts=8", Settings()).settings.search
    assert (search.baseline_sample, search.discriminated, search.rollouts) == ("never", 3, 8)
    assert parse_config("grounded:entity_threshold=0.9", Settings()).settings.grounded.entity_threshold == 0.9


@pytest.mark.parametrize(
    "spec, message",
    [
        ("telepathy", "unknown configuration"),
        ("zero-shot:format", "needs a value"),
        ("zero-shot:colour=blue", "unknown option"),
        ("zero-shot:format=yaml", "zero-shot:format=yaml"),
        ("self-consistency:k=0", "self-consistency:k=0"),
    ],
)
def test_bad_configs(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(spec, Settings())


# -- loaders -----------------------------------------------------------------------------------


def test_spider_loader_keeps_hardness() -> None:
    items = load_benchmark(shared_benchmark("spider_dev"))
    assert len(items) == 479 and items[0].db_id == "concert_singer"
    assert {i.category for i in items} == {"easy", "medium", "hard", "extra"}
    assert Path(items[0].db_url.removeprefix("sqlite:///")).is_file()


def test_logiccat_loader_keeps_type() -> None:
    items = load_benchmark(shared_benchmark("logiccat"))
    assert {i.category for i in items} == {"type 1", "type 2", "type 3", "type 4"}
    assert "step" in items[0].metadata


def test_bird_and_jsonl_loaders(tmp_path: Path) -> None:
    bird = tmp_path / "bird"
    (bird / "dev_databases" / "shop").mkdir(parents=True)
    with sqlite3.connect(bird / "dev_databases" / "shop" / "shop.sqlite") as conn:
        conn.execute("CREATE TABLE t (a INT)")
    (bird / "dev.json").write_text(
        json.dumps([{"question_id": 7, "db_id": "shop", "question": "q?", "SQL": "SELECT a FROM t",
                     "evidence": "a is the amount", "difficulty": "simple"}])
    )
    (item,) = load_benchmark(bird)
    assert (item.item_id, item.evidence, item.category) == ("bird/7", "a is the amount", "simple")

    jsonl = tmp_path / "mine.jsonl"
    jsonl.write_text(
        json.dumps({"db": "bird/dev_databases/shop/shop.sqlite", "question": "q?", "gold_sql": "SELECT 1",
                    "category": "simple", "id": "x1"}) + "\n\n"
    )
    (item,) = load_benchmark(jsonl)
    assert item.item_id == "x1" and item.db_url.endswith("shop.sqlite") and item.category == "simple"
    jsonl.write_text('{"question": "no db"}\n')
    with pytest.raises(ConfigError, match="mine.jsonl:1"):
        load_benchmark(jsonl)
    with pytest.raises(ConfigError, match="not a benchmark"):
        load_benchmark(tmp_path)


@pytest.mark.parametrize("layout, content, message", [
    ("jsonl", '{"db": 123, "question": "q", "gold_sql": "SELECT 1"}', r"items.jsonl:1: 'db' must be text, found int 123"),
    ("jsonl", '{"db": "x.sqlite", "question": null, "gold_sql": "SELECT 1"}', r"'question' must be text, found nothing"),
    ("jsonl", '{"db": "x.sqlite", "turns": [{"question": "q"}]}', r"items.jsonl:1: turn 1: 'gold_sql' must be text"),
    ("spider", '{"a": 1}', r"dev.json: expected a list of questions, found a JSON dict"),
    ("spider", '[{"db_id": "c", "query": "SELECT 1"}]', r"dev.json: entry 0: 'question' must be text"),
    ("spider", '[1, 2]', r"dev.json: entry 0: expected an object, found int"),
])
def test_malformed_benchmark_files_are_one_sentence(tmp_path: Path, layout: str, content: str,
                                                     message: str) -> None:
    if layout == "jsonl":
        path = tmp_path / "items.jsonl"
        path.write_text(content + "\n")
    else:
        (tmp_path / "database").mkdir()
        (tmp_path / "dev.json").write_text(content)
        path = tmp_path
    with pytest.raises(ConfigError, match=message):
        load_benchmark(path)


def test_spider_hardness_rules() -> None:
    items = {i.gold_sql: i.category for i in load_benchmark(shared_benchmark("spider_dev"))}
    assert items["SELECT count(*) FROM singer"] == "easy"
    assert items["SELECT name ,  country ,  age FROM singer ORDER BY age DESC"] == "medium"
    raw = json.loads((SPIDER / "dev.json").read_text())
    nested = next(r for r in raw if " INTERSECT " in r["query"].upper())
    assert spider_hardness(nested["sql"]) in {"hard", "extra"}


def test_sample_is_fixed_by_seed() -> None:
    items = load_benchmark(shared_benchmark("spider_dev"))
    a, b = sample(items, 20, seed=3), sample(items, 20, seed=3)
    assert [i.item_id for i in a] == [i.item_id for i in b] and len(a) == 20
    assert [i.item_id for i in sample(items, 20, seed=4)] != [i.item_id for i in a]
    assert sample(items, None, 0) == items


# -- runs --------------------------------------------------------------------------------------


def _concert_items(n: int):
    return [i for i in load_benchmark(shared_benchmark("spider_dev")) if i.db_id == "concert_singer"][:n]


def test_run_scores_and_resumes(tmp_path: Path) -> None:
    items = _concert_items(3)  # count, count, name/country/age ordered by age
    llm = Scripted(
        "SELECT COUNT(*) FROM singer",
        "SELECT COUNT(*) FROM stadium",
        "SELECT name, country, age FROM singer ORDER BY age ASC",
    )
    configs = [parse_config("gold", EVAL), parse_config("zero-shot", EVAL)]
    run = EvalRun(items=items, configs=configs, out_dir=tmp_path, llm=llm)
    run.run()
    records = load_records(tmp_path / "results.jsonl")
    assert len(records) == 6
    by = {(r["config"], r["item_id"]): r for r in records}
    assert all(by[("gold", i.item_id)]["ex"] and by[("gold", i.item_id)]["semantic"] for i in items)
    zero = [by[("zero-shot", i.item_id)] for i in items]
    assert [r["ex"] for r in zero] == [True, False, False]  # wrong table; wrong order (gold orders)
    assert zero[0]["tier"] in (1, 2) and zero[0]["model_calls"] == 1
    assert zero[1]["semantic"] is False and zero[1]["pred_rows"] == [[9]]
    # The record keeps the model's reply, so a failure can be read without running it again.
    replies = [c["text"] for step in zero[1]["trace"] for c in step.get("calls", [])]
    assert replies == ["SELECT COUNT(*) FROM stadium"]

    # A second run over the same folder does nothing (the scripted model has no answers left).
    EvalRun(items=items, configs=configs, out_dir=tmp_path, llm=Scripted()).run()
    assert len(load_records(tmp_path / "results.jsonl")) == 6

    # An interrupted write leaves half a line: it is skipped, and that item is run again.
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    (tmp_path / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    rerun = EvalRun(items=items, configs=configs, out_dir=tmp_path, llm=Scripted("SELECT name, country, age FROM singer ORDER BY age DESC"))
    assert len(rerun.pending()) == 1
    rerun.run()
    assert len(load_records(tmp_path / "results.jsonl")) == 6
    # The cut record is gone, not left in the file beside its rerun.
    assert all(json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines())


def test_repeated_configurations_and_items_are_refused(tmp_path: Path) -> None:
    items = _concert_items(2)
    twice = [parse_config("gold", EVAL), parse_config("gold", EVAL)]
    with pytest.raises(ConfigError, match="the configuration 'gold' is given twice"):
        EvalRun(items=items, configs=twice, out_dir=tmp_path).run()
    with pytest.raises(ConfigError, match=f"the item id {items[0].item_id!r} is given twice"):
        EvalRun(items=[items[0], items[0]], configs=twice[:1], out_dir=tmp_path).run()
    assert not (tmp_path / "results.jsonl").exists()


def test_one_run_at_a_time_per_results_folder(tmp_path: Path) -> None:
    import fcntl

    tmp_path.mkdir(exist_ok=True)
    with (tmp_path / ".lock").open("a") as other:  # another process's run, holding the folder
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ConfigError, match="another groundsql eval is writing to"):
            EvalRun(items=_concert_items(1), configs=[parse_config("gold", EVAL)], out_dir=tmp_path).run()
    EvalRun(items=_concert_items(1), configs=[parse_config("gold", EVAL)], out_dir=tmp_path).run()
    assert len(load_records(tmp_path / "results.jsonl")) == 1


def test_a_damaged_database_is_that_items_error_and_the_run_goes_on(tmp_path: Path) -> None:
    from groundsql.evaluation.datasets import EvalItem

    damaged = tmp_path / "damaged.sqlite"
    shutil.copy(spider_db("concert_singer"), damaged)
    with damaged.open("r+b") as handle:  # the schema's own page overwritten
        handle.seek(100)
        handle.write(b"\x42" * 3000)
    good = _concert_items(1)[0]
    bad = EvalItem(item_id="bad/1", db_id="damaged", db_url=f"sqlite:///{damaged}", question="How many?",
                   gold_sql="SELECT 1")
    EvalRun(items=[bad, good], configs=[parse_config("zero-shot", EVAL)], out_dir=tmp_path / "out",
            llm=Scripted("SELECT COUNT(*) FROM singer")).run()
    records = {r["item_id"]: r for r in load_records(tmp_path / "out" / "results.jsonl")}
    assert "database" in records["bad/1"]["gold_error"]
    assert records[good.item_id]["ex"] is True


def test_a_bug_on_one_item_is_recorded_and_the_run_goes_on(tmp_path: Path, monkeypatch, caplog) -> None:
    import groundsql.conversation as conversation  # where the runner looks strategies up

    calls = []
    real = conversation.get_strategy

    def broken(question, ctx):
        calls.append(question)
        if len(calls) == 1:
            raise OverflowError("int too large to convert to float")
        return real("zero-shot")(question, ctx)

    monkeypatch.setattr(conversation, "get_strategy", lambda name: broken if name == "zero-shot" else real(name))
    EvalRun(items=_concert_items(2), configs=[parse_config("zero-shot", EVAL)], out_dir=tmp_path,
            llm=Scripted("SELECT COUNT(*) FROM singer")).run()
    first, second = load_records(tmp_path / "results.jsonl")
    assert first["error"] == "internal error: OverflowError: int too large to convert to float"
    assert first["ex"] is False and second["ex"] is True
    assert "internal error" in caplog.text and "Traceback" in caplog.text


def test_few_shot_run_uses_other_databases(tmp_path: Path) -> None:
    items = load_benchmark(shared_benchmark("spider_dev"))
    run = EvalRun(
        items=_concert_items(1),
        configs=[parse_config("few-shot:k=3", EVAL)],
        out_dir=tmp_path,
        llm=Scripted("SELECT COUNT(*) FROM singer"),
        bank=bank_from_items(items),
    )
    run.run()
    (record,) = load_records(tmp_path / "results.jsonl")
    assert record["ex"] is True
    ctx = next(iter(run._contexts.values()))
    assert ctx.exclude_db == "concert_singer"


def test_broken_gold_is_listed_not_counted(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    shutil.copy(spider_db("concert_singer"), db)
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"db": "c.sqlite", "question": "?", "gold_sql": "SELECT nope FROM singer"}) + "\n")
    EvalRun(items=load_benchmark(bench), configs=[parse_config("gold", EVAL)], out_dir=tmp_path / "out").run()
    (record,) = load_records(tmp_path / "out" / "results.jsonl")
    assert "no such column" in record["gold_error"] and "ex" not in record


@pytest.mark.parametrize("benchmark", ["spider_dev", "logiccat"])
def test_gold_against_gold_is_perfect(tmp_path: Path, benchmark: str) -> None:
    """The harness's own check: every gold query that runs scores 100% against itself."""
    items = load_benchmark(shared_benchmark(benchmark))
    EvalRun(items=items, configs=[parse_config("gold", EVAL)], out_dir=tmp_path).run()
    records = load_records(tmp_path / "results.jsonl")
    scored = [r for r in records if "gold_error" not in r]
    assert len(records) == len(items)
    failed = [(r["item_id"], r["gold_sql"]) for r in scored if not (r["ex"] and r["semantic"])]
    assert failed == []
    assert len(scored) >= 0.95 * len(items)  # broken gold queries are rare, and listed


def test_run_builds_its_backend_from_the_configuration(tmp_path: Path) -> None:
    """Without an injected model the runner builds one per configuration (here: the replay
    backend over answers recorded from the real 0.5B model)."""
    from tests.test_replay import RECORDINGS

    base = EVAL.model_copy(
        update={"llm": EVAL.llm.model_copy(update={"backend": "replay", "model": "qwen2.5-coder-0.5b", "replay_dir": RECORDINGS})}
    )
    run = EvalRun(items=_concert_items(1), configs=[parse_config("zero-shot", base)], out_dir=tmp_path)
    run.run()
    (record,) = load_records(tmp_path / "results.jsonl")
    assert record["ex"] is True and record["model_calls"] == 1 and record["cached_calls"] == 1


def test_best_of_pool_scores_what_the_vote_chose_among(tmp_path: Path) -> None:
    """Self-consistency's vote picks the wrong majority; the record still says a right query
    was in its pool, so the miss is the selection's, not the generator's."""
    items = _concert_items(1)  # How many singers do we have?
    llm = Scripted("SELECT COUNT(*) FROM stadium", "SELECT COUNT(*) FROM singer", "SELECT COUNT(*) FROM stadium")
    EvalRun(items=items, configs=[parse_config("self-consistency:k=3", EVAL)], out_dir=tmp_path, llm=llm).run()
    (record,) = load_records(tmp_path / "results.jsonl")
    assert record["ex"] is False and record["pool_ex"] is True and record["pool_size"] == 2
    assert [c["votes"] for c in record["grounds"]["candidates"]] == [2, 1]
    from groundsql.evaluation.report import markdown_table, summarize

    summary = summarize([record])
    assert summary["configs"]["self-consistency:k=3"]["pool_ex"] == 100.0
    assert "best-of-pool EX %" in markdown_table(summary)


def test_conversations_are_answered_turn_by_turn_with_and_without_context(tmp_path: Path) -> None:
    db = spider_db("concert_singer")
    bench = tmp_path / "talk.jsonl"
    bench.write_text(json.dumps({"id": "talk/1", "db": str(db), "category": "change-filter-value", "turns": [
        {"question": "How many singers are from France?", "gold_sql": "SELECT COUNT(*) FROM singer WHERE Country = 'France'"},
        {"question": "And from the Netherlands?",
         "gold_sql": "SELECT COUNT(*) FROM singer WHERE Country = 'Netherlands'"}]}) + "\n")
    items = load_benchmark(bench)
    assert [(i.item_id, i.category, i.metadata["turn"]) for i in items] == [("talk/1#1", "turn 1", 1), ("talk/1#2", "turn 2", 2)]
    with_context = Scripted("SELECT COUNT(*) FROM singer WHERE Country = 'France'",
                            "How many singers are from the Netherlands?",  # the follow-up, resolved
                            "SELECT COUNT(*) FROM singer WHERE Country = 'Netherlands'")
    EvalRun(items=items, configs=[parse_config("zero-shot", EVAL)], out_dir=tmp_path / "on", llm=with_context).run()
    first, second = load_records(tmp_path / "on" / "results.jsonl")
    assert first["ex"] and second["ex"] and second["model_calls"] == 2
    assert second["grounds"]["conversation"]["standalone"] == "How many singers are from the Netherlands?"
    assert "WHERE Country = 'France'" in with_context.requests[1].messages[-1].content  # the earlier query
    alone = Scripted("SELECT COUNT(*) FROM singer WHERE Country = 'France'", "SELECT COUNT(*) FROM singer")
    off = parse_config("zero-shot:conversation.enabled=false", EVAL)
    EvalRun(items=items, configs=[off], out_dir=tmp_path / "off", llm=alone).run()
    assert [r["ex"] for r in load_records(tmp_path / "off" / "results.jsonl")] == [True, False]
    assert alone.requests[1].messages[-1].content.rstrip().endswith("Question: And from the Netherlands?")
    gold = Scripted("SELECT COUNT(*) FROM singer WHERE Country = 'Germany'",  # turn 1 wrong ...
                    "How many singers are from the Netherlands?",
                    "SELECT COUNT(*) FROM singer WHERE Country = 'Netherlands'")
    EvalRun(items=items, configs=[parse_config("zero-shot:conversation.gold_history=true", EVAL)],
            out_dir=tmp_path / "gold", llm=gold).run()
    # ... but turn 2 is asked after turn 1's gold query, not after the wrong answer.
    assert "WHERE Country = 'France'" in gold.requests[1].messages[-1].content
    assert [r["ex"] for r in load_records(tmp_path / "gold" / "results.jsonl")] == [False, True]
    with pytest.raises(ConfigError, match="one after another"):
        EvalRun(items=items, configs=[off], out_dir=tmp_path / "x", llm=alone, workers=2).run()


def test_a_sample_keeps_conversations_whole_and_single_questions_as_before() -> None:
    from groundsql.evaluation.datasets import EvalItem

    singles = [EvalItem(f"q/{i}", "db", "sqlite:///x", f"q{i}", "SELECT 1") for i in range(10)]
    assert [i.item_id for i in sample(singles, 3, 0)] == [f"q/{i}" for i in sorted(__import__("random").Random(0).sample(range(10), 3))]
    talks = [EvalItem(f"c/{c}#{t}", "db", "sqlite:///x", "q", "SELECT 1", metadata={"conversation": f"c/{c}", "turn": t})
             for c in range(6) for t in (1, 2, 3)]
    picked = sample(talks, 2, 0)
    assert len(picked) == 6 and len({i.metadata["conversation"] for i in picked}) == 2


def test_ex_is_kept_in_both_of_spiders_modes(tmp_path: Path) -> None:
    from dataclasses import replace

    from groundsql.evaluation.execution_match import without_distinct

    assert without_distinct("SELECT count(DISTINCT a), 'distinct', \"distinct\" FROM t") == \
        "SELECT count( a), 'distinct', \"distinct\" FROM t"
    item = replace(_concert_items(1)[0], gold_sql="SELECT country FROM singer")
    llm = Scripted("SELECT DISTINCT country FROM singer", "SELECT country FROM singer WHERE age > 99")
    run = EvalRun(items=[item, replace(item, item_id="other")], configs=[parse_config("zero-shot", EVAL)],
                  out_dir=tmp_path, llm=llm)
    run.run()
    distinct, empty = load_records(tmp_path / "results.jsonl")
    assert (distinct["ex"], distinct["ex_spider"]) == (False, True)  # 3 countries against 6 rows
    assert (empty["ex"], empty["ex_spider"]) == (False, False)
    # A record of an earlier version gets its spider-default EX from the stored prediction.
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "ex_spider"}) + "\n"
                                                    for r in lines))
    EvalRun(items=[item, replace(item, item_id="other")], configs=[parse_config("zero-shot", EVAL)],
            out_dir=tmp_path, llm=Scripted()).run()
    assert [r["ex_spider"] for r in load_records(tmp_path / "results.jsonl")] == [True, False]


def test_a_compact_run_is_gzipped_without_replies_and_resumes(tmp_path) -> None:
    import gzip

    from groundsql.evaluation.runner import COMPACT_FILE, EvalRun, load_records

    db = spider_db("concert_singer")
    jsonl = tmp_path / "items.jsonl"
    jsonl.write_text("".join(json.dumps({"id": f"q{i}", "db": f"sqlite:///{db}", "question": q, "gold_sql": sql}) + "\n"
                             for i, (q, sql) in enumerate([("How many singers?", "SELECT COUNT(*) FROM singer"),
                                                           ("Singer names?", "SELECT name FROM singer")])))
    items = load_benchmark(jsonl)
    config = parse_config("gold", Settings())
    out = tmp_path / "run"
    EvalRun(items=items[:1], configs=[config], out_dir=out, compact=True).run()
    path = out / COMPACT_FILE
    assert path.is_file() and not (out / "results.jsonl").exists()
    (record,) = load_records(path)
    assert all(set(call) <= {"prompt_tokens", "cached_prompt_tokens", "completion_tokens", "latency_s", "from_cache"}
               for step in record["trace"] for call in step["calls"])
    # A member cut off by an interruption is dropped; the run resumes after the whole ones.
    with path.open("ab") as handle:
        handle.write(gzip.compress(b'{"config": "gold", "item_id": "cut"}\n')[:-9])
    EvalRun(items=items, configs=[config], out_dir=out, compact=True).run()
    records = load_records(path)
    assert [r["item_id"] for r in records] == [i.item_id for i in items]
