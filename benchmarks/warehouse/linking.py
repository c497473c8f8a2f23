"""What each warehouse question is shown, without a model: the tables, against the gold's.

For every question of a JSONL set, the compiled path (the default with a semantic model: its
scope of the model, `grounds.scope`) and the grounded pipeline (its fallback: its shortlist,
`grounds.shortlist`) run with a stand-in model that answers nothing usable. Reported per question and overall: the recall of the gold's tables
among the tables shown (a logical table counts as its database table), how many tables were
shown, the characters of the longest prompt sent, and the time spent outside the model; for the
compiled path's request, the characters of its system message (its area, shared by the area's
questions: a prompt state computed once) and of its own message, and how many distinct system
messages the set needs.

    .venv/bin/python benchmarks/warehouse/linking.py benchmarks/warehouse/questions.jsonl \\
        --db sqlite:///benchmarks/warehouse/warehouse.sqlite --pack runs/warehouse-pack
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace

import sqlglot
from sqlglot import exp

from groundsql.config import Settings
from groundsql.db import Database
from groundsql.llm.base import LLM, ChatRequest, Completion
from groundsql.packs.load import load_pack
from groundsql.strategies import Context, get_strategy


class Unhelpful(LLM):
    """Answers every request with something no stage can use; keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []
        self.model_id = "unhelpful"
        self.retries = 0

    def _complete(self, request: ChatRequest) -> Completion:
        self.requests.append(request)
        return Completion(text="-", model=self.model_id, prompt_tokens=0, completion_tokens=0)


def gold_tables(sql: str) -> set[str]:
    return {t.name.lower() for t in sqlglot.parse_one(sql, read="sqlite").find_all(exp.Table)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("questions")
    parser.add_argument("--db", required=True)
    parser.add_argument("--pack", required=True)
    args = parser.parse_args()
    db, pack = Database(args.db), load_pack(args.pack)
    logical = {t.name: t.table.lower() for t in pack.semantic.tables} if pack.semantic else {}
    settings = Settings.model_validate({"grounded": {"embeddings": False}})
    resources: dict = {}
    rows = []
    systems: set[str] = set()
    for line in open(args.questions):
        item = json.loads(line)
        llm = Unhelpful()
        ctx = Context(db=db, llm=llm, settings=settings, pack=pack, resources=resources)
        start = time.perf_counter()
        answer = get_strategy("compiled")(item["question"], ctx)
        spent = time.perf_counter() - start
        system, own = (m.content for m in llm.requests[0].messages[:2]) if llm.requests else ("", "")
        systems.add(system)
        grounded = get_strategy("grounded")(item["question"], replace(ctx, llm=llm))
        gold = gold_tables(item["gold_sql"])
        scope = {logical.get(t, t.lower()) for t in answer.grounds.get("scope", [])}
        shortlist = {t.lower() for t in grounded.grounds.get("shortlist", [])}
        rows.append({"id": item["id"], "category": item["category"], "gold": len(gold),
                     "scope_recall": len(gold & scope) / len(gold), "scope_tables": len(scope),
                     "shortlist_recall": len(gold & shortlist) / len(gold), "shortlist_tables": len(shortlist),
                     "longest_prompt_chars": max((sum(len(m.content) for m in r.messages) for r in llm.requests),
                                                 default=0),
                     "area": answer.grounds.get("area"), "system_chars": len(system), "own_chars": len(own),
                     "seconds": spent, "missed": sorted(gold - shortlist)})
        print(json.dumps(rows[-1]))
    n = len(rows)
    for key in ("scope_recall", "shortlist_recall"):
        found = sum(r[key] * r["gold"] for r in rows)
        print(f"{key}: {found / sum(r['gold'] for r in rows):.1%} of the golds' tables "
              f"({sum(r[key] == 1.0 for r in rows)} of {n} questions shown every gold table)")
    print(f"tables shown: scope {statistics.mean(r['scope_tables'] for r in rows):.1f}, shortlist "
          f"{statistics.mean(r['shortlist_tables'] for r in rows):.1f}; longest prompt "
          f"{statistics.median(r['longest_prompt_chars'] for r in rows):,.0f} chars (median), "
          f"{max(r['longest_prompt_chars'] for r in rows):,} (max); outside the model "
          f"{statistics.median(r['seconds'] for r in rows[1:] or rows):.2f} s a question (median, after the first)")
    print(f"compiled request: system message {statistics.median(r['system_chars'] for r in rows):,.0f} chars, "
          f"its own message {statistics.median(r['own_chars'] for r in rows):,.0f} (medians); "
          f"{len(systems)} distinct system messages for {n} questions")


if __name__ == "__main__":
    main()
