"""The grammar free SQL is written under (schema/grammar.py), checked with llguidance itself
over a byte tokenizer: what it admits and what it refuses, without a model."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import llguidance
import pytest

from groundsql.db import Database
from groundsql.schema import Column, ForeignKey, Schema, Table
from groundsql.schema.grammar import sql_grammar
from tests.conftest import shared_benchmark, spider_db

BYTES = llguidance.LLTokenizer("byte")
ROOT = Path(__file__).resolve().parents[1]


def admits(grammar: str, sql: str) -> bool:
    matcher = llguidance.LLMatcher(BYTES, grammar)
    tokens = BYTES.tokenize_str(f"```sql\n{sql}\n```")
    return matcher.try_consume_tokens(tokens) == len(tokens) and matcher.is_accepting()


def test_every_spider_gold_query_is_admitted_by_its_databases_grammar() -> None:
    by_db: dict[str, list[str]] = defaultdict(list)
    for item in json.loads((shared_benchmark("spider_dev") / "dev.json").read_text()):
        by_db[item["db_id"]].append(item["query"])
    refused = []
    for db_id, queries in by_db.items():
        with Database(f"sqlite:///{spider_db(db_id)}") as db:
            grammar = sql_grammar(db.introspect()).text
        assert not llguidance.LLMatcher.validate_grammar_with_warnings(grammar)[0]
        refused += [(db_id, q) for q in queries if not admits(grammar, q)]
    assert not refused, refused[:5]


@pytest.fixture(scope="module")
def singers() -> str:
    with Database(f"sqlite:///{spider_db('concert_singer')}") as db:
        return sql_grammar(db.introspect()).text


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM singers",  # no such table
    "SELECT nam FROM singer",  # no such column
    "SELECT singer.Capacity FROM singer",  # a column of stadium, on singer
    "SELECT T1.Nmae FROM singer AS T1",  # a T-alias still names a real column
    "SELECT name FROM singer AS s JOIN concert AS c ON s.Singer_ID = c.concert_ID",  # free aliases
    "WITH x AS (SELECT name FROM singer) SELECT name FROM x",  # a name of the model's own
    "SELECT name FROM singer; DROP TABLE singer",
])
def test_a_name_that_does_not_exist_is_refused(singers, sql) -> None:
    assert not admits(singers, sql)


@pytest.mark.parametrize("sql", [
    "SELECT T2.Name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.Singer_ID = T2.Singer_ID",
    "select name, age from SINGER where country = 'France' order by age desc limit 3",
    "SELECT sic.Singer_ID FROM singer_in_concert AS sic",  # initials, bound to their table
    "SELECT Name FROM singer WHERE Age > (SELECT AVG(Age) FROM singer)",
    "SELECT Country, COUNT(*) AS n FROM singer GROUP BY Country HAVING COUNT(*) > 1",
    "SELECT CASE WHEN Age > 40 THEN 'old' ELSE 'young' END FROM singer",
])
def test_the_queries_small_models_write_are_admitted(singers, sql) -> None:
    assert admits(singers, sql)


def test_a_resolved_key_compared_with_a_literal_admits_only_the_resolved_values() -> None:
    facts = Table("financial_data", (Column("company_id", "INTEGER"), Column("data_item_id", "INTEGER"),
                                     Column("data_value", "REAL")),
                  (ForeignKey(("data_item_id",), "ref_data_item", ("data_item_id",)),))
    items = Table("ref_data_item", (Column("data_item_id", "INTEGER", primary_key=True),
                                    Column("data_item_name", "TEXT")))
    grammar = sql_grammar(Schema("sqlite", (facts, items)), {"data_item_id": [28, 15]}).text
    assert admits(grammar, "SELECT SUM(data_value) FROM financial_data WHERE data_item_id = 28")
    assert admits(grammar, "SELECT data_value FROM financial_data AS fd WHERE fd.data_item_id IN (28, 15)")
    assert admits(grammar, "SELECT fd.data_item_id, COUNT(*) FROM financial_data AS fd "
                           "JOIN ref_data_item AS rdi ON fd.data_item_id = rdi.data_item_id GROUP BY fd.data_item_id")
    assert admits(grammar, "SELECT data_value FROM financial_data WHERE data_item_id IN "
                           "(SELECT data_item_id FROM ref_data_item WHERE data_item_name = 'Revenue')")
    assert not admits(grammar, "SELECT SUM(data_value) FROM financial_data WHERE data_item_id = 29")
    assert not admits(grammar, "SELECT data_value FROM financial_data WHERE data_item_id IN (28, 1)")
    assert not admits(grammar, "SELECT data_value FROM financial_data WHERE 28 = data_item_id + 0")


def test_names_that_need_quotes_are_admitted_only_quoted() -> None:
    table = Table("Order Lines", (Column("Unit Price", "REAL"), Column('say "hi"', "TEXT"),
                                  Column("größe", "INTEGER"), Column("select", "TEXT"), Column("Qty", "INTEGER")))
    sqlite = sql_grammar(Schema("sqlite", (table,))).text
    assert admits(sqlite, 'SELECT "Unit Price", "say ""hi""", "größe", "select" FROM "Order Lines"')
    assert not admits(sqlite, "SELECT Unit Price FROM Order Lines")
    assert admits(sqlite, 'SELECT qty FROM "Order Lines"')  # SQLite reads names case-insensitively
    mysql = sql_grammar(Schema("mysql", (table,))).text
    assert admits(mysql, "SELECT `Unit Price`, Qty FROM `Order Lines`")
    postgres = sql_grammar(Schema("postgres", (table,))).text
    assert admits(postgres, 'SELECT "Qty" FROM "Order Lines"')
    assert not admits(postgres, 'SELECT Qty FROM "Order Lines"')  # folds to qty: no such column


def test_a_wide_schema_still_compiles() -> None:
    tables = tuple(Table(f"table_{i}", tuple(Column(f"column_{i}_{j}", "INTEGER") for j in range(40)))
                   for i in range(25))
    grammar = sql_grammar(Schema("sqlite", tables)).text
    assert not llguidance.LLMatcher.validate_grammar_with_warnings(grammar)[0]
    assert admits(grammar, "SELECT T1.column_3_7 FROM table_3 AS T1 WHERE T1.column_3_1 > 5")


def qwen_vocabulary() -> llguidance.LLTokenizer:
    """The Qwen2.5-Coder tokenizer (0.5B and 1.5B share it), read from the 0.5B's GGUF file: the
    runtime's limits are spent per token of the vocabulary, which a byte tokenizer does not show."""
    gguf = pytest.importorskip("gguf")
    from groundsql.llm.models import resolve_gguf

    reader = gguf.GGUFReader(resolve_gguf("qwen2.5-coder-0.5b"))
    field = reader.fields["tokenizer.ggml.tokens"]
    kinds = reader.fields["tokenizer.ggml.token_type"]
    # GPT-2's byte-level BPE writes each byte as a printable character.
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    to_byte = {chr(b): b for b in printable}
    to_byte.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in printable)})
    tokens = []
    for i, kind in zip(field.data, kinds.data):
        text = bytes(field.parts[i]).decode()
        control = int(kinds.parts[kind][0]) == 3
        tokens.append(b"\xff" + text.encode() if control else bytes(to_byte[c] for c in text))

    class Vocabulary:
        eos_token_id = int(reader.fields["tokenizer.ggml.eos_token_id"].parts[-1][0])
        bos_token_id = None
        special_token_ids: list[int] = []

        def __init__(self) -> None:
            self.tokens = tokens

        def __call__(self, text: bytes | str) -> list[int]:
            # Greedy longest-match tokenization (not BPE's merges, which the masks do not need).
            text = text.decode() if isinstance(text, bytes) else text
            return built[0].greedy_tokenize(text) if built else []

    built: list[llguidance.LLTokenizer] = []
    built.append(llguidance.LLTokenizer(llguidance.TokenizerWrapper(Vocabulary())))
    return built[0]


def _t_aliased(sql: str) -> str:
    """`sql` with its table aliases renamed T1, T2, ... (the grammar binds only initials and T-aliases)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="sqlite")
    names: dict[str, str] = {}
    for alias in tree.find_all(exp.TableAlias):
        names.setdefault(alias.name, f"T{len(names) + 1}")
        alias.set("this", exp.to_identifier(names[alias.name]))
    for column in tree.find_all(exp.Column):
        if column.table in names:
            column.set("table", exp.to_identifier(names[column.table]))
    return tree.sql(dialect="sqlite")


def test_the_demo_grammar_keeps_within_the_runtimes_limits_at_every_token() -> None:
    """xllamacpp computes each token's mask with llguidance's default limits and, past them, lets
    the grammar go mid-answer. A bounded repetition in the alias lexeme (`{0,30}`) spent them at
    the first place an alias may stand: `SELECT COUNT(*)` already, on the demo's 24 tables."""
    from groundsql.api import demo_database_url
    from groundsql.db.introspect import introspect

    vocabulary = qwen_vocabulary()
    with Database(demo_database_url()) as db:
        grammar = sql_grammar(introspect(db)).text
    gold = [json.loads(line)["gold_sql"] for line in (ROOT / "src/groundsql/demo/eval.jsonl").open()]
    over = []
    for sql in [_t_aliased(q) for q in gold][:40] + ["SELECT COUNT(*) AS n FROM company"]:
        matcher = llguidance.LLMatcher(vocabulary, grammar, log_level=0)
        for token in vocabulary.tokenize_str(f"```sql\n{sql}\n```"):
            matcher.compute_bitmask()
            if matcher.is_error() or not matcher.consume_token(token):
                break
        if "Too many" in matcher.get_error():
            over.append((sql, matcher.get_error().splitlines()[0]))
    assert not over, over[:3]


# -- the grammar on a request ------------------------------------------------------------------

def _ask(llm, **generation):
    import groundsql
    from groundsql.config import Settings

    settings = Settings.model_validate({"generation": {"constrain": True, **generation}})
    with groundsql.connect(spider_db("concert_singer"), llm=llm, settings=settings) as session:
        return session.ask("How many singers do we have?", strategy="zero-shot")


def test_a_constrained_request_carries_the_grammar_and_the_grounds_say_so() -> None:
    from tests.test_llm import Scripted

    llm = Scripted("```sql\nSELECT count(*) FROM singer\n```")
    llm.grammars = True
    answer = _ask(llm)
    assert answer.ok and answer.rows == ((6,),)
    (request,) = llm.requests
    assert admits(request.grammar, "SELECT count(*) FROM singer")
    constraint = answer.grounds["constraint"]
    assert constraint["applied"] and constraint["tables"] == 4 and constraint["build_ms"] >= 0


def test_an_answer_the_runtime_wrote_without_its_grammar_is_said_in_the_grounds() -> None:
    # xllamacpp lets a grammar go when llguidance hits a limit mid-answer ("Too many items
    # (limit 50000; mask) ... stopping"): what came back is checked against the grammar.
    from groundsql.evaluation.runner import written_queries
    from tests.test_llm import Scripted

    llm = Scripted("```sql\nSELECT nickname FROM singers\n```", "```sql\nSELECT count(*) FROM singer\n```")
    llm.grammars = True
    answer = _ask(llm)
    assert answer.ok and answer.grounds["constraint"]["dropped"] == 1
    assert [s.detail.get("grammar_dropped", False) for s in answer.steps if s.name in ("generate", "reflect")] \
        == [True, False]
    assert written_queries(answer)["grammar_dropped"] == 1


def test_an_answer_cut_off_by_max_tokens_under_the_grammar_is_not_counted_as_dropped() -> None:
    from groundsql.schema.grammar import admitted

    grammar = sql_grammar(Schema("sqlite", (Table("singer", (Column("name", "TEXT"),)),))).text
    assert admitted("```sql\nSELECT name FROM singer\n```", grammar) == "admitted"
    assert admitted("```sql\nSELECT name FROM singer WHERE name * name * name *", grammar) == "cut off"
    assert admitted("```sql\nSELECT nickname FROM singer\n```", grammar) == "outside"


def test_a_backend_that_cannot_enforce_a_grammar_gets_none_and_the_grounds_say_so() -> None:
    from tests.test_llm import Scripted

    llm = Scripted("```sql\nSELECT count(*) FROM singer\n```")  # grammars: False, as a remote server
    answer = _ask(llm)
    assert answer.ok and llm.requests[0].grammar is None
    assert answer.grounds["constraint"] == {
        "applied": False, "why": "the model backend cannot enforce a grammar: the query was written unconstrained"}


def test_a_grammar_llguidance_cannot_compile_is_not_sent(monkeypatch) -> None:
    # The runtime would ignore it without a word: the request goes out without it, and says why.
    from groundsql.schema import grammar as grammar_module
    from groundsql.strategies import context
    from tests.test_llm import Scripted

    broken = grammar_module.SqlGrammar("%llguidance {}\nstart: NOWHERE\n", 1, 1, 0)
    monkeypatch.setattr(context, "sql_grammar", lambda schema, resolved=None, **_: broken)
    llm = Scripted("```sql\nSELECT count(*) FROM singer\n```")
    llm.grammars = True
    answer = _ask(llm)
    assert answer.ok and llm.requests[0].grammar is None
    assert not answer.grounds["constraint"]["applied"]
    assert "llguidance cannot compile the grammar" in answer.grounds["constraint"]["why"]


def test_a_grammar_changes_a_requests_cache_key_and_its_absence_keeps_the_old_key() -> None:
    # Recordings and cached answers made before grammars existed still match their requests.
    import hashlib

    from groundsql.llm import chat

    request = chat("system", "user", seed=7)
    before = {k: v for k, v in request.model_dump(mode="json").items() if k != "grammar"}
    old_key = hashlib.sha256(json.dumps({"model": "m", "request": before}, sort_keys=True,
                                        ensure_ascii=False).encode("utf-8")).hexdigest()
    assert request.fingerprint("m") == old_key
    assert request.model_copy(update={"grammar": "start: x"}).fingerprint("m") != old_key
