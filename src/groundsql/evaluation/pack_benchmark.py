"""A domain pack's own benchmark: what the team knows, checked against what it answers.

Its questions are the pack's verified queries (bank entries a person has verified, not those
`groundsql init` drafted), each asked with the others as the bank (leave-one-out: its own
example and verified query are kept out, or it would only find itself), and the questions the
team adds with their gold SQL in `benchmark.jsonl` beside the pack's files:

    {"question": "How many companies are in Japan?", "sql": "SELECT COUNT(*) FROM company ..."}

Each answer is scored with a reason (evaluation/result_match.REASONS: right, error, empty
result, missing or extra rows or columns, wrong order, wrong values) and read against the run
before it, so an edit of the pack that breaks an answer shows as a regression.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundsql.errors import ConfigError
from groundsql.evaluation.datasets import EvalItem
from groundsql.jsonl import read_jsonl
from groundsql.packs.load import load_pack

__all__ = ["BENCHMARK_FILE", "Change", "changes", "pack_items"]

BENCHMARK_FILE = "benchmark.jsonl"


def pack_items(folder: str | Path, db_url: str) -> list[EvalItem]:
    """The pack's benchmark on the database at `db_url`: its verified queries (held out of
    the bank while each is asked), then the questions of its benchmark.jsonl."""
    folder = Path(folder)
    pack = load_pack(folder)
    db_id = pack.name
    items = [EvalItem(_item_id("verified", e.question), db_id, db_url, e.question, e.sql, category="verified",
                      metadata={"held_out": True, "verified_by": e.verified_by, "verified_at": e.verified_at})
             for e in pack.bank if e.verified_by and not e.drafted]
    added = folder / BENCHMARK_FILE
    if added.is_file():
        for number, raw in read_jsonl(added, "a benchmark question"):
            question, sql = raw.get("question"), raw.get("sql")
            for name, value in (("question", question), ("sql", sql)):
                if not isinstance(value, str) or not value.strip():
                    raise ConfigError(f"{added}:{number}: {name}: a non-empty text is required")
            items.append(EvalItem(_item_id("added", question), db_id, db_url, question, sql,  # type: ignore[arg-type]
                                  category="added"))
    if not items:
        raise ConfigError(f"{folder}: the pack has no verified queries (bank entries with verified_by, not "
                          f"drafted) and no {BENCHMARK_FILE}: nothing to benchmark")
    seen: dict[str, str] = {}
    for item in items:
        if item.item_id in seen:
            raise ConfigError(f"{folder}: the question {item.question!r} is in the benchmark twice")
        seen[item.item_id] = item.question
    return items


def _item_id(kind: str, question: str) -> str:
    """Stable across edits of the pack (an id by position would shift when an entry is added)."""
    return f"{kind}/{hashlib.sha256(question.strip().encode()).hexdigest()[:10]}"


@dataclass(frozen=True)
class Change:
    item_id: str
    question: str
    before: str  # the reason in the run before ("" when the question is new)
    now: str

    @property
    def regression(self) -> bool:
        return self.before == "right" and self.now != "right"


def changes(before: list[dict[str, Any]], now: list[dict[str, Any]]) -> list[Change]:
    """The questions whose reason differs from the run before (a new question included),
    regressions first. Configurations are paired in the order they ran (a pack given by
    another path is the same configuration)."""
    def by_config(records: list[dict[str, Any]]) -> list[dict[str, str]]:
        configs: dict[str, dict[str, str]] = {}
        for r in records:
            if "gold_error" not in r:
                configs.setdefault(r["config"], {})[r["item_id"]] = r.get("reason", "")
        return list(configs.values())

    earlier = by_config(before)
    found = []
    for k, config in enumerate(dict.fromkeys(r["config"] for r in now)):
        reasons = earlier[k] if k < len(earlier) else {}
        found += [Change(r["item_id"], r["question"], reasons.get(r["item_id"], ""), r.get("reason", ""))
                  for r in now if r["config"] == config and "gold_error" not in r]
    differing = [c for c in found if c.before != c.now]
    return sorted(differing, key=lambda c: not c.regression)
