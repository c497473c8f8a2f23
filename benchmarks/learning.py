"""How much a confirmed answer is worth: accuracy on a fixed held-back set of the demo's
questions as people confirm answers through the feedback API.

The demo's 90 questions are split once (`--seed`): `--held` of them are only ever asked, never
confirmed; the others, in a fixed order, are asked through `POST /v1/ask` and then confirmed
through `POST /v1/feedback` as an analyst would: `right` when the answer gives the gold's rows,
else `wrong` with the gold SQL as the correction. After 0, 5, 10, 20 and 40 confirmed, every
held-back question is asked again (each in a new conversation) and scored by EX against its
gold. One service (`groundsql serve`'s, in this process, through its HTTP app), the default
strategy, the local model; the service's state in a fresh SQLite file, without keys (so every
confirmation is the local user's, an editor's).

The demo's questions are each of their own shape, so a second held-back set asks what teams
ask most: the same question about something else. Of the questions to be confirmed, each whose
gold names a value its question names (a company, a country, a year) gets a variant with
another value (its gold's rows differ and are not empty), asked at every checkpoint too.

With `--wrong`, an answer that is wrong is confirmed `right` all the same (a person clicking
*Right* on a wrong answer); `--against DIR` then lists the held-back answers that were right
in that run (the same questions confirmed correctly) and are not here: what a benchmark holding
those questions flags.

    .venv/bin/python benchmarks/learning.py --model qwen2.5-coder-1.5b --out benchmarks/runs/learning
    .venv/bin/python benchmarks/learning.py --model qwen2.5-coder-1.5b --checkpoints 40 --wrong \
        --against benchmarks/runs/learning --out benchmarks/runs/learning-wrong

Writes `records.jsonl.gz` (one record per question asked: what, when, the verdict, the path,
calls, tokens) and `report.md` (the curve).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from groundsql.api import demo_database_url
from groundsql.db import Database
from groundsql.evaluation.datasets import EvalItem, load_benchmark
from groundsql.evaluation.execution_match import gold_orders, results_match
from groundsql.packs.load import load_pack
from groundsql.semantic.verified import fill, infer_params
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


def variants(items: list[EvalItem], db: Database, seed: int) -> list[EvalItem]:
    """Each item whose gold holds a value its question names (a name, a label, a year), asked
    about another value: the first of a few tried whose gold gives other rows, not none."""
    pack = load_pack(demo_pack_path())
    labels = frozenset(r.label.lower() for r in pack.references)
    columns = [(r.table, r.label) for r in pack.references] + [(e.table, n) for e in pack.entities for n in e.names]
    rng = random.Random(seed)
    found = []
    for item in items:
        params = infer_params(item.question, item.gold_sql, db.dialect, labels)
        if not params or any(p.kind not in ("entity", "label", "year") for p in params):
            continue
        param = params[0]
        if param.kind == "year":
            others: list[Any] = [param.value - 1, param.value + 1]
        else:
            others = []
            for table, column in columns:
                values = [v for (v,) in db.execute(f'SELECT DISTINCT "{column}" FROM "{table}"').rows if isinstance(v, str)]
                if param.value in values:
                    others = sorted(v for v in values if v != param.value)
                    rng.shuffle(others)
                    break
        rows = db.execute(item.gold_sql).rows
        for value in others[:12]:
            try:
                sql = fill(item.gold_sql, params, {**{p.name: p.value for p in params}, param.name: value}, db.dialect)
                got = db.execute(sql).rows
            except Exception:  # a value the query cannot take: try the next
                continue
            if got and got != rows and not all(v is None for row in got for v in row):
                question = re.sub(rf"(?<![\w.]){re.escape(str(param.value))}(?![\w.])", lambda _: str(value),
                                  item.question, count=1)
                found.append(EvalItem(f"{item.item_id}-variant", item.db_id, item.db_url, question, sql,
                                      category="variant", metadata={"of": item.item_id}))
                break
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--held", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoints", default=",".join(map(str, CHECKPOINTS)),
                        help="how many confirmed before each reading of the held-back set")
    parser.add_argument("--wrong", action="store_true", help="confirm a wrong answer as right")
    parser.add_argument("--against", help="a run whose held-back verdicts to compare with (with --wrong)")
    args = parser.parse_args()
    checkpoints = tuple(int(n) for n in args.checkpoints.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    items = load_benchmark(QUESTIONS)
    held, pool = split(items, args.held, args.seed)
    if len(pool) < checkpoints[-1]:
        raise SystemExit(f"{len(pool)} questions to confirm; the curve needs {checkpoints[-1]}")
    db = Database(demo_database_url())
    alike = variants(pool[:checkpoints[-1]], db, args.seed)
    gold = {item.item_id: db.execute(item.gold_sql) for item in [*items, *alike]}
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
                grounds = answer.get("grounds") or {}
                record = {"phase": phase, "confirmed": confirmed, "item_id": item.item_id, "question": item.question,
                          "category": item.category, "ex": right, "path": grounds.get("path"),
                          "by_confirmed": (grounds.get("verified_query") or {}).get("verified_by") == "local",
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
                    verdict = {"answer_id": asked["answer_id"], "verdict": "right"} if asked["ex"] or args.wrong \
                        else {"answer_id": asked["answer_id"], "verdict": "wrong", "corrected_sql": item.gold_sql}
                    done = client.post("/v1/feedback", json=verdict)
                    records[-1]["feedback"] = verdict["verdict"] if done.status_code == 200 else done.text
                    confirmed += 1
                for item in held:
                    ask(item, "held", confirmed)
                for item in alike:
                    ask(item, "variant", confirmed)
                right = sum(r["ex"] for r in records if r["phase"] == "held" and r["confirmed"] == checkpoint)
                # Of the confirmed, those the compiled path shows as solved requests (read back
                # from their SQL); the grounded fallback and few-shot see them all.
                semantic = service.databases["demo"].session.context.resources.get("compiled")
                asked = {item.question for item in pool[:confirmed]}
                as_requests[checkpoint] = sum(e.question in asked for e in semantic.examples.examples) if semantic else 0
                like = sum(r["ex"] for r in records if r["phase"] == "variant" and r["confirmed"] == checkpoint)
                print(f"{checkpoint:>3} confirmed ({as_requests[checkpoint]} as requests): {right} of {len(held)} "
                      f"held-back questions right, {like} of {len(alike)} variants", flush=True)
        service.close()
    (out / "records.jsonl.gz").write_bytes(gzip.compress(
        "".join(json.dumps(r) + "\n" for r in records).encode(), mtime=0))
    text = report(records, args, len(held), len(alike), checkpoints, as_requests)
    (out / "report.md").write_text(text)
    print(text)


def report(records: list[dict[str, Any]], args: argparse.Namespace, held: int, alike: int,
           checkpoints: tuple[int, ...], as_requests: dict[int, int]) -> str:
    lines = [f"# Learning from confirmed answers (demo, {held} held-back questions and {alike} variants of "
             f"confirmed ones, seed {args.seed}, {args.model}{', wrong answers confirmed as right' if args.wrong else ''})",
             "", "| confirmed (as requests) | held-back EX % (right) | variants EX % (right; by a confirmed answer) "
             "| calls/q | computed prompt tok/q | gen tok/q | s/q |", "|---|---|---|---|---|---|---|"]
    for checkpoint in checkpoints:
        rows = [r for r in records if r["phase"] == "held" and r["confirmed"] == checkpoint]
        like = [r for r in records if r["phase"] == "variant" and r["confirmed"] == checkpoint]
        if not rows:
            continue
        asked = rows + like
        n = len(asked)

        def mean(key: str) -> float:
            return sum(r.get(key) or 0 for r in asked) / n

        computed = sum((r.get("prompt_tokens") or 0) - (r.get("cached_prompt_tokens") or 0) for r in asked) / n
        right = sum(r["ex"] for r in rows)
        like_right = sum(r["ex"] for r in like)
        lines.append(f"| {checkpoint} ({as_requests.get(checkpoint, 0)}) | {100 * right / len(rows):.1f} ({right}) | "
                     f"{100 * like_right / max(len(like), 1):.1f} ({like_right}; {sum(r['by_confirmed'] for r in like)}) | "
                     f"{mean('model_calls'):.2f} | {computed:.0f} | {mean('completion_tokens'):.0f} | {mean('seconds'):.1f} |")
    confirming = [r for r in records if r["phase"] == "confirm"]
    if confirming:
        kept_right = sum(r["ex"] for r in confirming)
        how = "confirmed as right all the same" if args.wrong else "corrected with the gold SQL"
        lines += ["", f"Of the {len(confirming)} confirmed, {kept_right} were right as answered and "
                      f"{len(confirming) - kept_right} wrong, {how}."]
    if args.against:
        earlier = [json.loads(line) for line in gzip.decompress(
            (Path(args.against) / "records.jsonl.gz").read_bytes()).decode().splitlines()]
        last = checkpoints[-1]
        before = {r["item_id"]: r["ex"] for r in earlier if r["phase"] in ("held", "variant") and r["confirmed"] == last}
        now = [r for r in records if r["phase"] in ("held", "variant") and r["confirmed"] == last]
        broken = [r for r in now if before.get(r["item_id"]) and not r["ex"]]
        mended = [r for r in now if before.get(r["item_id"]) is False and r["ex"]]
        lines += ["", f"Against {args.against} at {last} confirmed: {len(broken)} answers right there are wrong here, "
                      f"{len(mended)} the other way."]
        lines += [f"- broken: {r['question']} ({r['path']}{', by a confirmed answer' if r['by_confirmed'] else ''})"
                  for r in broken]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
