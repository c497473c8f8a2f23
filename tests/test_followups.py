"""The follow-up evaluation set (issue 23): conversations over the demo database whose later
turns can only be answered from the earlier ones, every turn with a gold query that passes
groundsql's validator, runs on its executor and says something the previous turn did not."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import sqlglot
from rapidfuzz import fuzz, utils
from sqlglot import exp

import groundsql
from groundsql.demo.findb import DEMO_QUESTIONS
from groundsql.testsuite.suite import informative

DEMO = Path(__file__).resolve().parents[1] / "src" / "groundsql" / "demo"
FOLLOWUPS = DEMO / "followups.jsonl"
EVAL = DEMO / "eval.jsonl"
BANK = DEMO / "pack" / "bank.jsonl"

KINDS = {
    "change-filter-value", "add-filter", "remove-filter", "change-entity", "change-period",
    "sort-or-limit", "aggregate-over-previous", "add-column", "drill-down",
}
# A follow-up leans on what came before: "and ...", "what about ...", "only ...", a pronoun, ...
REFERS_BACK = re.compile(
    r"\b(and|what about|only|just|same|instead|too|as well|alongside|previous|before|"
    r"those|these|them|they|their|its|it|that|there|ones?|each|"
    r"break|split|add|include|drop|count)\b",
    re.IGNORECASE,
)
FOLLOW_UP_MAX_CHARS = 80  # a self-contained question here (entity, metric, period, unit) is longer


def _load() -> list[dict]:
    lines = FOLLOWUPS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


CONVERSATIONS = _load()


def _normalized(text: str) -> str:
    return utils.default_process(text)


def _questions(path: Path, field: str = "question") -> list[str]:
    return [json.loads(line)[field] for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


@pytest.fixture(scope="module")
def session():
    with groundsql.connect(None) as opened:  # the demo database
        yield opened


@pytest.fixture(scope="module")
def results(session) -> dict[str, list]:
    """Every gold run once through the validator and the executor: a QueryResult or the error."""
    out: dict[str, list] = {}
    for conversation in CONVERSATIONS:
        runs = []
        for turn in conversation["turns"]:
            try:
                runs.append(session.run_sql(turn["gold_sql"]))
            except Exception as err:  # noqa: BLE001 - reported by the test, with its id
                runs.append(err)
        out[conversation["id"]] = runs
    return out


# -- format and balance -----------------------------------------------------------------------


def test_every_conversation_has_the_format() -> None:
    ids = [c.get("id") for c in CONVERSATIONS]
    assert len(set(ids)) == len(ids), [i for i, n in Counter(ids).items() if n > 1]
    for conversation in CONVERSATIONS:
        cid = conversation.get("id")
        assert set(conversation) == {"id", "db", "category", "turns"}, cid
        assert re.fullmatch(r"followup/\d+", cid), cid
        assert conversation["db"] == "demo", cid
        assert conversation["category"] in KINDS, (cid, conversation["category"])
        turns = conversation["turns"]
        assert isinstance(turns, list) and 2 <= len(turns) <= 3, cid
        for turn in turns:
            assert set(turn) == {"question", "gold_sql"}, cid
            assert turn["question"].strip() and turn["gold_sql"].strip(), cid
        questions = [_normalized(t["question"]) for t in turns]
        assert len(set(questions)) == len(questions), cid


def test_the_set_is_large_and_balanced() -> None:
    assert len(CONVERSATIONS) >= 40
    kinds = Counter(c["category"] for c in CONVERSATIONS)
    assert len(kinds) >= 5, kinds
    assert max(kinds.values()) <= 0.3 * len(CONVERSATIONS), kinds
    lengths = Counter(len(c["turns"]) for c in CONVERSATIONS)
    # about half two-turn and half three-turn conversations
    assert min(lengths[2], lengths[3]) >= 0.35 * len(CONVERSATIONS), lengths


def test_follow_ups_are_elliptical() -> None:
    for conversation in CONVERSATIONS:
        for turn in conversation["turns"][1:]:
            question = turn["question"]
            assert REFERS_BACK.search(question), (conversation["id"], question)
            assert len(question) <= FOLLOW_UP_MAX_CHARS, (conversation["id"], question)


# -- the gold queries -------------------------------------------------------------------------


def test_every_gold_runs_with_an_informative_result(results) -> None:
    failures = []
    for conversation in CONVERSATIONS:
        runs = results[conversation["id"]]
        for number, run in enumerate(runs, 1):
            if isinstance(run, Exception):
                failures.append((conversation["id"], number, f"{type(run).__name__}: {run}"))
            elif run.truncated or not informative([tuple(row) for row in run.rows]):
                failures.append((conversation["id"], number, run.rows[:3]))
    assert not failures, failures


def test_each_follow_up_changes_the_result(results) -> None:
    same = []
    for conversation in CONVERSATIONS:
        runs = results[conversation["id"]]
        if any(isinstance(run, Exception) for run in runs):
            continue  # reported by the test above
        for number in range(1, len(runs)):
            # compared as multisets of rows: a mere reordering does not count as a new answer
            if Counter(map(tuple, runs[number].rows)) == Counter(map(tuple, runs[number - 1].rows)):
                question = conversation["turns"][number]["question"]
                same.append((conversation["id"], number + 1, question))
    assert not same, same


def _cut_probe(sql: str) -> tuple[str, int] | None:
    """For `... ORDER BY keys LIMIT n`: the query without its LIMIT that returns only the sort
    keys (aliases resolved to their expressions), and n."""
    tree = sqlglot.parse_one(sql, read="sqlite")
    limit, order = tree.args.get("limit"), tree.args.get("order")
    if not isinstance(tree, exp.Select) or limit is None or order is None:
        return None
    aliases = {s.alias: s.this for s in tree.selects if isinstance(s, exp.Alias)}
    probe = tree.copy()
    keys = []
    for number, ordered in enumerate(probe.args["order"].expressions):
        key = ordered.this
        if isinstance(key, exp.Column) and not key.table and key.name in aliases:
            key = aliases[key.name].copy()
            ordered.set("this", key)  # the alias goes with the select list it names
        keys.append(exp.alias_(key.copy(), f"k{number}"))
    probe.set("limit", None)
    probe.set("expressions", keys)
    return probe.sql(dialect="sqlite"), int(limit.expression.name)


def test_no_limit_cuts_through_a_tie(session) -> None:
    """`The top 3`, `the smallest one`: no gold may depend on how the database breaks a tie."""
    probed, ties = 0, []
    for conversation in CONVERSATIONS:
        for number, turn in enumerate(conversation["turns"], 1):
            probe = _cut_probe(turn["gold_sql"])
            if probe is None:
                continue
            probed += 1
            sql, n = probe
            rows = [tuple(row) for row in session.run_sql(sql).rows]
            if len(rows) > n and rows[n - 1] == rows[n]:
                ties.append((conversation["id"], number, rows[n - 1]))
    assert probed >= 5  # the set does ask for top-n answers
    assert not ties, ties


# -- new questions ----------------------------------------------------------------------------


def test_no_question_repeats_the_eval_set_the_bank_or_the_demo() -> None:
    known = _questions(EVAL) + _questions(BANK) + [q for q, _ in DEMO_QUESTIONS]
    normalized = [_normalized(q) for q in known]
    exact = set(normalized)
    for conversation in CONVERSATIONS:
        for turn in conversation["turns"]:
            question = _normalized(turn["question"])
            assert question not in exact, (conversation["id"], turn["question"])
            closest = max(normalized, key=lambda other: fuzz.ratio(question, other))
            score = fuzz.ratio(question, closest)
            assert score < 90, (conversation["id"], turn["question"], closest, score)


def test_no_question_names_a_company_the_bank_asks_about(session) -> None:
    """The grounded strategy retrieves from the bank: a conversation about a company the bank
    has solved questions for would be answered from its near-twin."""
    bank = _questions(BANK)
    names = [row[0] for row in session.run_sql("SELECT company_name FROM company").rows]
    in_bank = {name for name in names if any(name.split()[0] in q for q in bank)}
    assert in_bank
    for conversation in CONVERSATIONS:
        for turn in conversation["turns"]:
            mentioned = [name for name in in_bank if name.split()[0] in turn["question"]]
            assert not mentioned, (conversation["id"], turn["question"], mentioned)
