"""A domain pack's own benchmark: what the team knows, checked against what it answers.

Its questions are the pack's verified queries (bank entries a person has verified, not those
`groundsql init` drafted), each asked with the others as the bank (leave-one-out: its own
example and verified query are kept out, or it would only find itself), and the questions the
team adds with their gold SQL in `benchmark.jsonl` beside the pack's files:

    {"question": "How many companies are in Japan?", "sql": "SELECT COUNT(*) FROM company ..."}

Each answer is scored with a reason (evaluation/result_match.REASONS: right, error, empty
result, missing or extra rows or columns, wrong order, wrong values) and read against the run
before it, so an edit of the pack that breaks an answer shows as a regression. A question whose
gold fails to run is listed with its error and never counted. A person may override a score
with a note (a gold that allows two answers): `overrides.jsonl` in the run's folder, read
wherever the run is scored or compared.

Runs live in the pack's `benchmark-runs/` folder, one folder each, named by their start time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundsql.config import Settings
from groundsql.errors import ConfigError
from groundsql.evaluation.configs import parse_config
from groundsql.evaluation.datasets import EvalItem
from groundsql.evaluation.runner import EvalRun, bank_from_items, load_records, results_file, whole_results
from groundsql.files import read_text, write_text_atomic
from groundsql.jsonl import read_jsonl
from groundsql.llm import LLM
from groundsql.packs.load import BENCHMARK_FILE, benchmark_questions, load_pack
from groundsql.retrieval import Example

__all__ = ["BENCHMARK_FILE", "RUNS_FOLDER", "Change", "benchmark_run", "changes", "last_run", "new_run_folder",
           "override", "pack_items", "run_summary"]

RUNS_FOLDER = "benchmark-runs"
OVERRIDES_FILE = "overrides.jsonl"
VERDICTS = ("right", "wrong")


def pack_items(folder: str | Path, db_url: str) -> list[EvalItem]:
    """The pack's benchmark on the database at `db_url`: its verified queries (held out of
    the bank while each is asked), then the questions of its benchmark.jsonl."""
    folder = Path(folder)
    pack = load_pack(folder)
    db_id = pack.name
    items = [EvalItem(_item_id("verified", e.question), db_id, db_url, e.question, e.sql, category="verified",
                      metadata={"held_out": True, "verified_by": e.verified_by, "verified_at": e.verified_at})
             for e in pack.bank if e.verified_by and not e.drafted]
    for question, sql in benchmark_questions(folder):
        items.append(EvalItem(_item_id("added", question), db_id, db_url, question, sql, category="added"))
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
    regressions first; a person's override counts as the reason. Configurations are paired in
    the order they ran (a pack given by another path is the same configuration)."""
    def by_config(records: list[dict[str, Any]]) -> list[dict[str, str]]:
        configs: dict[str, dict[str, str]] = {}
        for r in records:
            if "gold_error" not in r:
                configs.setdefault(r["config"], {})[r["item_id"]] = reason_of(r)
        return list(configs.values())

    earlier = by_config(before)
    found = []
    for k, config in enumerate(dict.fromkeys(r["config"] for r in now)):
        reasons = earlier[k] if k < len(earlier) else {}
        found += [Change(r["item_id"], r["question"], reasons.get(r["item_id"], ""), reason_of(r))
                  for r in now if r["config"] == config and "gold_error" not in r]
    differing = [c for c in found if c.before != c.now]
    return sorted(differing, key=lambda c: not c.regression)


def reason_of(record: dict[str, Any]) -> str:
    """The reason a record is scored by: a person's override (right; or wrong where the
    results matched: judged_wrong), else the comparison's."""
    verdict = (record.get("override") or {}).get("verdict")
    reason = record.get("reason", "")
    if verdict == "right":
        return "right"
    if verdict == "wrong" and reason == "right":
        return "judged_wrong"
    return reason


# -- runs -----------------------------------------------------------------------------------------


# A run is named by its start time; a trial of an edit not saved yet ends in -trial, and is
# never the run a later one is compared with (it is not the pack as it is).
RUN_NAME = re.compile(r"^[0-9]{8}-[0-9]{6}(-trial)?$")
TRIAL_FILE = "trial.json"


def new_run_folder(pack_folder: str | Path, *, trial: bool = False) -> Path:
    return Path(pack_folder) / RUNS_FOLDER / (f"{dt.datetime.now():%Y%m%d-%H%M%S}" + ("-trial" if trial else ""))


def write_trial(run_folder: Path, edit: dict[str, Any]) -> None:
    """Mark a run as a trial of an edit not saved (what run_summary reads back)."""
    run_folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(run_folder / TRIAL_FILE, json.dumps(edit, ensure_ascii=False))


def _compared(runs: Path) -> list[Path]:
    return sorted(p for p in runs.glob("*") if p.is_dir() and not p.name.endswith("-trial")
                  and results_file(p) is not None)


def last_run(runs: Path, excluding: Path | None = None) -> Path | None:
    """The latest run of the pack as it was (not a trial) in `runs` that has results."""
    done = [p for p in _compared(runs) if excluding is None or p.resolve() != excluding.resolve()]
    return done[-1] if done else None


def last_run_before(runs: Path, run: str) -> Path | None:
    """The run `run` is compared with: the latest run of the pack as it was that started before."""
    done = [p for p in _compared(runs) if p.name[:15] < run[:15]]
    return done[-1] if done else None


def benchmark_run(pack_folder: str | Path, db_url: str, settings: Settings, strategy: str = "auto", *,
                  llm: LLM | None = None, learned: Sequence[Example] = (), out_dir: Path | None = None,
                  on_record: Callable[[dict[str, Any]], None] | None = None) -> EvalRun:
    """A run of the pack's benchmark as the service answers: its strategy, its model, and the
    examples people confirmed (`learned`: a confirmed wrong answer shows as a regression here;
    one of a benchmark question itself is left out, or it would be scored on its own answer)."""
    items = pack_items(pack_folder, db_url)
    config = parse_config(f"{strategy}:grounded.pack={pack_folder}", whole_results(settings))
    asked = {item.question.strip() for item in items}
    return EvalRun(items=items, configs=[config], out_dir=out_dir or new_run_folder(pack_folder),
                   bank=bank_from_items(items), llm=llm, on_record=on_record,
                   learned=[e for e in learned if e.question.strip() not in asked])


def override(run_folder: Path, item_id: str, verdict: str, note: str, by: str) -> dict[str, Any]:
    """A person's score of one answer of a run, with why; the latest for an item counts."""
    if verdict not in VERDICTS:
        raise ConfigError(f"an override's verdict is right or wrong, not {verdict!r}")
    path = results_file(run_folder)
    if path is None or item_id not in {r["item_id"] for r in load_records(path)}:
        raise ConfigError(f"{run_folder.name}: no answer {item_id!r} in that run")
    entry = {"item_id": item_id, "verdict": verdict, "note": note.strip(), "by": by,
             "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    file = run_folder / OVERRIDES_FILE
    text = read_text(file) if file.is_file() else ""
    write_text_atomic(file, text + json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def scored_records(run_folder: Path) -> list[dict[str, Any]]:
    """A run's records, each with the override a person gave it."""
    path = results_file(run_folder)
    records = load_records(path) if path is not None else []
    file = run_folder / OVERRIDES_FILE
    overrides = {raw["item_id"]: raw for _, raw in read_jsonl(file, "an override")} if file.is_file() else {}
    return [{**r, "override": overrides[r["item_id"]]} if r["item_id"] in overrides else r for r in records]


def run_summary(run_folder: Path, earlier: Path | None) -> dict[str, Any]:
    """A run as the page shows it: each answer with its reason, the reason in the run before,
    whether it broke; the score (a failing gold listed, not counted)."""
    records = scored_records(run_folder)
    before = {r["item_id"]: reason_of(r) for r in scored_records(earlier) if "gold_error" not in r} \
        if earlier is not None else {}
    answers = []
    for r in records:
        failed = "gold_error" in r
        reason = "" if failed else reason_of(r)
        answers.append({
            "item_id": r["item_id"], "question": r["question"], "category": r.get("category", ""),
            "reason": reason, "model_reason": r.get("reason", ""), "before": before.get(r["item_id"], ""),
            "regression": before.get(r["item_id"]) == "right" and not failed and reason != "right",
            "gold_sql": r.get("gold_sql"), "gold_error": r.get("gold_error"), "sql": r.get("pred_sql"),
            "error": r.get("error"), "override": r.get("override"),
            # A verified query (the pack's, or an answer an editor confirmed) answered it: whose.
            "verified_by": ((r.get("grounds") or {}).get("verified_query") or {}).get("verified_by")})
    counted = [a for a in answers if not a["gold_error"]]
    trial = run_folder / TRIAL_FILE
    return {"run": run_folder.name, "earlier": earlier.name if earlier else None, "answers": answers,
            "trial": json.loads(read_text(trial)) if trial.is_file() else None,
            "right": sum(a["reason"] == "right" for a in counted), "counted": len(counted),
            "gold_failed": len(answers) - len(counted),
            "regressions": sum(a["regression"] for a in answers)}
