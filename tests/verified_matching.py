"""How often a question is answered by a verified query, and how often wrongly: the matching
threshold swept on the fixture of fits and near misses (tests/fixtures/verified_questions.jsonl)
and on the demo evaluation set (every match scored against the gold by EX). No model.

    .venv/bin/python -m tests.verified_matching
"""

from __future__ import annotations

import json
from pathlib import Path

from groundsql.api import connect
from groundsql.config import Settings
from groundsql.evaluation.execution_match import gold_orders, results_match
from groundsql.semantic.verified import find_mentions, match_template
from groundsql.strategies.answer import Trace
from groundsql.strategies.compiled import _semantic
from groundsql.strategies.grounded import domain_for

FIXTURE = Path(__file__).parent / "fixtures" / "verified_questions.jsonl"
EVAL = Path(__file__).parents[1] / "src" / "groundsql" / "demo" / "eval.jsonl"
THRESHOLDS = (0.8, 0.85, 0.9, 0.95)


def main() -> None:
    with connect(settings=Settings.model_validate({"grounded": {"embeddings": False}})) as session:
        ctx = session.context
        domain = domain_for(ctx, Trace("", ""))
        semantic = _semantic(ctx, domain, Trace("", ""))

        def match(question: str, threshold: float):
            found = find_mentions(question, domain.entities.link(question)[0], semantic.labels)
            return match_template(question, found, semantic.templates, semantic.template_mentions, "sqlite", threshold)

        cases = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
        items = [json.loads(line) for line in EVAL.read_text().splitlines() if line.strip()]
        print(f"{len(semantic.templates)} verified queries; fixture: {sum(c['fits'] is not None for c in cases)} fits, "
              f"{sum(c['fits'] is None for c in cases)} near misses; demo eval: {len(items)} questions")
        print("| threshold | fits matched right | fits missed | false matches (fixture) | demo eval matched | of them right (EX) |")
        print("|---|---|---|---|---|---|")
        for threshold in THRESHOLDS:
            right = missed = false = 0
            for case in cases:
                found = match(case["question"], threshold)
                fits = found.example.question if found else None
                if case["fits"] is None:
                    false += fits is not None
                elif fits == case["fits"]:
                    right += 1
                elif fits is None:
                    missed += 1
                else:
                    false += 1
            matched = correct = 0
            for item in items:
                found = match(item["question"], threshold)
                if found is None:
                    continue
                matched += 1
                got = session.run_sql(found.sql).rows
                want = session.run_sql(item["gold_sql"]).rows
                correct += results_match(want, got, gold_orders(item["gold_sql"]))
            print(f"| {threshold} | {right} | {missed} | {false} | {matched} | {correct} |")


if __name__ == "__main__":
    main()
