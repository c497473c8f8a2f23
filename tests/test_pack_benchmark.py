"""A domain pack's own benchmark (`groundsql eval --pack DIR`): its verified queries, each asked
with the others as the bank (leave-one-out), and the questions the team adds; every answer
scored with a reason, and an edit that breaks an answer flagged against the run before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from groundsql.api import demo_database_url
from groundsql.errors import ConfigError
from groundsql.evaluation.pack_benchmark import BENCHMARK_FILE, changes, pack_items
from groundsql.strategies.grounded import demo_pack_path
from tests.test_end_to_end import _cli

NORTHWIND = json.loads(next(line for line in (demo_pack_path() / "bank.jsonl").read_text().splitlines()
                            if "Northwind Logistics Inc. in fiscal year 2022" in line))


def _sibling(name: str, year: int) -> dict:
    """The Northwind query for another company and year: the same verified query, other values."""
    entry = json.loads(json.dumps(NORTHWIND))
    for key in ("question", "sql"):
        entry[key] = entry[key].replace("Northwind Logistics Inc.", name).replace("2022", str(year))
    entry["request"]["where"] = [{"field": "company", "value": name}, {"field": "fiscal_year", "value": year}]
    entry["params"] = [{"name": "company", "kind": "entity", "value": name}, {"name": "year", "kind": "year",
                                                                              "value": year}]
    return entry


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    """The demo's pack with a bank of two verified queries of one shape, and one drafted."""
    folder = tmp_path / "pack"
    shutil.copytree(demo_pack_path(), folder)
    drafted = {**_sibling("Caribou Renewables Inc.", 2023), "verified_by": "", "drafted": True}
    drafted.pop("params")
    entries = [NORTHWIND, _sibling("Granite Bancorp Inc.", 2023), drafted]
    (folder / "bank.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    return folder


def test_the_benchmark_is_the_verified_queries_held_out_and_the_questions_added(pack: Path) -> None:
    items = pack_items(pack, "sqlite:///x.sqlite")
    assert [i.question for i in items] == [NORTHWIND["question"], _sibling("Granite Bancorp Inc.", 2023)["question"]]
    assert all(i.metadata["held_out"] and i.category == "verified" for i in items)  # the drafted one is not verified
    (pack / BENCHMARK_FILE).write_text(json.dumps({"question": "How many banks are there?", "sql": "SELECT 1"}) + "\n")
    again = pack_items(pack, "sqlite:///x.sqlite")
    assert [i.item_id for i in again[:2]] == [i.item_id for i in items]  # ids by question, not position
    assert again[2].category == "added" and not again[2].metadata.get("held_out")
    (pack / BENCHMARK_FILE).write_text('{"question": "How many banks?"}\n')
    with pytest.raises(ConfigError, match=r"benchmark.jsonl:1: sql: a non-empty text is required"):
        pack_items(pack, "sqlite:///x.sqlite")


def test_a_pack_with_nothing_verified_has_no_benchmark(pack: Path) -> None:
    (pack / "bank.jsonl").write_text("")
    with pytest.raises(ConfigError, match="no verified queries"):
        pack_items(pack, "sqlite:///x.sqlite")


def test_changes_put_what_an_edit_broke_first() -> None:
    before = [{"config": "auto:grounded.pack=a", "item_id": "v/1", "question": "q1", "reason": "right"},
              {"config": "auto:grounded.pack=a", "item_id": "v/2", "question": "q2", "reason": "error"}]
    now = [{"config": "auto:grounded.pack=/abs/a", "item_id": "v/2", "question": "q2", "reason": "right"},
           {"config": "auto:grounded.pack=/abs/a", "item_id": "v/1", "question": "q1", "reason": "extra_rows"},
           {"config": "auto:grounded.pack=/abs/a", "item_id": "v/3", "question": "q3", "reason": "right"}]
    found = changes(before, now)
    assert [(c.item_id, c.before, c.now, c.regression) for c in found] == [
        ("v/1", "right", "extra_rows", True), ("v/2", "error", "right", False), ("v/3", "", "right", False)]


def test_each_verified_query_is_answered_by_the_others_and_a_bad_edit_shows_as_broken(pack: Path,
                                                                                      tmp_path: Path) -> None:
    """No model is reachable (an empty replay folder): each question can only be answered by the
    other verified query, filled with its own values. Both are right; then an edit drops the
    annual filter from Granite's query: Northwind's answer, filled from it, breaks, and so does
    Granite's (its gold is now the edited query)."""
    replay = tmp_path / "replay"
    replay.mkdir()
    args = ["eval", "--pack", str(pack), "--backend", "replay", "--config", f"auto:llm.replay_dir={replay}"]
    alone = _cli(*args)  # a pack that is not the demo's: which database is it of?
    assert alone.returncode != 0 and "needs --db" in alone.stderr and "Traceback" not in alone.stderr
    args += ["--db", demo_database_url()]
    first = _cli(*args)
    assert first.returncode == 0, first.stderr
    assert "no earlier run of this pack's benchmark" in first.stderr
    (run,) = (pack / "benchmark-runs").iterdir()
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in records] == ["right", "right"], [r.get("error") for r in records]
    for record in records:  # each answered by the other's query, never its own
        used = record["grounds"]["verified_query"]["question"]
        assert record["grounds"]["path"] == "verified" and used != record["question"]

    entries = [json.loads(line) for line in (pack / "bank.jsonl").read_text().splitlines()]
    entries[1]["sql"] = entries[1]["sql"].replace(" AND fp.period_type_id = 1", "")
    (pack / "bank.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    second = _cli(*args)
    assert second.returncode == 1, second.stderr
    # Northwind's answer now has the quarters too; Granite's gold has them, its answer not.
    assert "2 answers broken" in second.stdout
    assert f"BROKEN: {NORTHWIND['question']}  (right -> extra_rows)" in second.stdout
    assert f"BROKEN: {entries[1]['question']}  (right -> missing_rows)" in second.stdout
