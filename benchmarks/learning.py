"""How much a confirmed answer is worth: accuracy on a fixed held-back set of the demo's
questions as people confirm answers through the feedback API.

The demo's 90 questions are split once (`--seed`): `--held` of them are only ever asked, never
confirmed; the others, in a fixed order, are asked through `POST /v1/ask` and then confirmed
through `POST /v1/feedback` as an analyst would: `right` when the answer gives the gold's rows,
else `wrong` with the gold SQL as the correction. After 0, 5, 10, 20 and 40 confirmed, every
held-back question is asked again (each in a new conversation) and scored by EX against its
gold. One service (`groundsql serve`'s, in this process, through its HTTP app), the default
strategy, the local model; the service's state in a fresh SQLite file.

    .venv/bin/python benchmarks/learning.py --model qwen2.5-coder-1.5b --out benchmarks/runs/learning

Writes `records.jsonl.gz` (one record per question asked: what, when, the verdict, calls,
tokens) and `report.md` (the curve).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from groundsql.api import demo_database_url
from groundsql.db import Database
from groundsql.evaluation.datasets import load_benchmark
from groundsql.evaluation.execution_match import gold_orders, results_match
from groundsql.server.config import ServeConfig
from groundsql.server.http import create_app
from groundsql.server.service import Service
from groundsql.strategies.grounded import demo_pack_path

CHECKPOINTS = (0, 5, 10, 20, 40)
QUESTIONS = Path(__file__).resolve().parents[1] / "src" / "groundsql" / "demo" / "eval.jsonl"


def split(items: list[Any], held: int, seed: int) -> tuple[list[Any], list[Any]]:
    """The held-back questions (in benchmark order) and the others, in the order they are
    confirmed: one shuffle, fixed by the seed."""
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    kept = sorted(order[:held])
    return [items[i] for i in kept], [items[i] for i in order[held:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--held", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoints", default=",".join(map(str, CHECKPOINTS)),
                        help="how many confirmed before each reading of the held-back set")
    args = parser.parse_args()
    checkpoints = tuple(int(n) for n in args.checkpoints.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    items = load_benchmark(QUESTIONS)
    held, pool = split(items, args.held, args.seed)
    if len(pool) < checkpoints[-1]:
        raise SystemExit(f"{len(pool)} questions to confirm; the curve needs {checkpoints[-1]}")
    db = Database(demo_database_url())
    gold = {item.item_id: db.execute(item.gold_sql) for item in items}
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as state:
        config = ServeConfig.model_validate({
            "auth": False, "state_url": f"sqlite:///{state}/state.sqlite", "deadline_s": 3600,
            "llm": {"model": args.model, "cache": False},
            "databases": {"demo": {"url": None, "pack": str(demo_pack_path())}}})
        service = Service(config)
        with TestClient(create_app(service)) as client:
            def ask(item: Any, phase: str, confirmed: int) -> dict[str, Any]:
                start = time.perf_counter()
                answer = client.post("/v1/ask", json={"database": "demo", "question": item.question}).json()
                rows = [tuple(row) for row in answer.get("rows") or []]
                want = gold[item.item_id]
                right = bool(answer.get("ok")) and results_match(want.rows, rows, gold_orders(item.gold_sql))
                usage = answer.get("usage") or {}
                record = {"phase": phase, "confirmed": confirmed, "item_id": item.item_id,
                          "category": item.category, "ex": right, "path": (answer.get("grounds") or {}).get("path"),
                          "model_calls": usage.get("model_calls"), "prompt_tokens": usage.get("prompt_tokens"),
                          "cached_prompt_tokens": usage.get("cached_prompt_tokens"),
                          "completion_tokens": usage.get("completion_tokens"),
                          "seconds": round(time.perf_counter() - start, 2), "answer_id": answer.get("answer_id"),
                          "error": answer.get("error") or answer.get("detail")}
                records.append(record)
                return record

            confirmed = 0
            as_requests: dict[int, int] = {}
            for checkpoint in checkpoints:
                while confirmed < checkpoint:
                    item = pool[confirmed]
                    asked = ask(item, "confirm", confirmed)
                    verdict = {"answer_id": asked["answer_id"], "verdict": "right"} if asked["ex"] else \
                        {"answer_id": asked["answer_id"], "verdict": "wrong", "corrected_sql": item.gold_sql}
                    done = client.post("/v1/feedback", json=verdict)
                    records[-1]["feedback"] = verdict["verdict"] if done.status_code == 200 else done.text
                    confirmed += 1
                for item in held:
                    ask(item, "held", confirmed)
                right = sum(r["ex"] for r in records if r["phase"] == "held" and r["confirmed"] == checkpoint)
                # Of the confirmed, those the compiled path shows as solved requests (read back
                # from their SQL); the grounded fallback and few-shot see them all.
                semantic = service.databases["demo"].session.context.resources.get("compiled")
                asked = {item.question for item in pool[:confirmed]}
                as_requests[checkpoint] = sum(e.question in asked for e in semantic.examples.examples) if semantic else 0
                print(f"{checkpoint:>3} confirmed ({as_requests[checkpoint]} as requests): {right} of {len(held)} "
                      "held-back questions right", flush=True)
        service.close()
    (out / "records.jsonl.gz").write_bytes(gzip.compress(
        "".join(json.dumps(r) + "\n" for r in records).encode(), mtime=0))
    text = report(records, args, len(held), checkpoints, as_requests)
    (out / "report.md").write_text(text)
    print(text)


def report(records: list[dict[str, Any]], args: argparse.Namespace, held: int, checkpoints: tuple[int, ...],
           as_requests: dict[int, int]) -> str:
    lines = [f"# Learning from confirmed answers (demo, {held} held-back questions, seed {args.seed}, "
             f"{args.model})", "",
             "| confirmed (as requests) | held-back EX % (right) | calls/q | computed prompt tok/q | gen tok/q | s/q |",
             "|---|---|---|---|---|---|"]
    for checkpoint in checkpoints:
        rows = [r for r in records if r["phase"] == "held" and r["confirmed"] == checkpoint]
        if not rows:
            continue
        n = len(rows)

        def mean(key: str) -> float:
            return sum(r.get(key) or 0 for r in rows) / n

        computed = sum((r.get("prompt_tokens") or 0) - (r.get("cached_prompt_tokens") or 0) for r in rows) / n
        right = sum(r["ex"] for r in rows)
        lines.append(f"| {checkpoint} ({as_requests.get(checkpoint, 0)}) | {100 * right / n:.1f} ({right}) | {mean('model_calls'):.2f} | {computed:.0f} | "
                     f"{mean('completion_tokens'):.0f} | {mean('seconds'):.1f} |")
    confirming = [r for r in records if r["phase"] == "confirm"]
    if confirming:
        kept_right = sum(r.get("feedback") == "right" for r in confirming)
        lines += ["", f"Of the {len(confirming)} confirmed, {kept_right} were right as answered and "
                      f"{len(confirming) - kept_right} corrected with the gold SQL."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
