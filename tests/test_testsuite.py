"""Test suites end to end: built for real benchmark queries, cached, and used by `eval`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundsql.evaluation.configs import parse_config
from groundsql.evaluation.datasets import load_benchmark
from groundsql.evaluation.runner import EvalRun, load_records
from groundsql.testsuite.literals import query_literals
from groundsql.testsuite.suite import build_suite, informative, load_suite, run_on_suite
from tests.conftest import BENCHMARKS, shared_benchmark, shared_file
from tests.test_eval_run import EVAL
from tests.test_llm import Scripted

AIRCRAFT = BENCHMARKS / "logiccat" / "database" / "AirCraft" / "AirCraft.sqlite"
LIFT = "SELECT Total_Disk_Area * Max_Disk_Loading AS Lift FROM aircraft WHERE Aircraft = 'Robinson R-22'"


@pytest.mark.parametrize(
    "rows, expected",
    [([], False), ([(None,)], False), ([(0,)], False), ([(0.0,)], False), ([(None, None)], False),
     ([(3,)], True), ([(0,), (0,)], True), ([("a", None)], True)],
)
def test_informative(rows, expected) -> None:
    assert informative(rows) is expected


def test_suite_for_an_empty_database_is_informative_and_cached(tmp_path: Path) -> None:
    if not AIRCRAFT.is_file():
        pytest.skip("LogicCat is not here")
    suite = build_suite(AIRCRAFT, LIFT, out_dir=tmp_path / "s")
    assert suite.informative and suite.gold_error is None
    assert suite.share >= 0.8 and suite.mutations_total > 0
    results = run_on_suite(suite, LIFT)
    assert any(isinstance(r, list) and informative(r) for r in results)
    again = build_suite(AIRCRAFT, LIFT, out_dir=tmp_path / "s")
    assert again == suite and load_suite(tmp_path / "s") == suite
    assert suite.paths[0].stat().st_mtime_ns == again.paths[0].stat().st_mtime_ns  # not rebuilt


def test_a_literal_beyond_64_bits_is_planted_as_sqlite_reads_it(tmp_path: Path) -> None:
    """A model wrote a 400-digit number; the suite (and the search's probe) crashed on it."""
    if not AIRCRAFT.is_file():
        pytest.skip("LogicCat is not here")
    huge = "1" + "0" * 400
    sql = f"SELECT Aircraft FROM aircraft WHERE Max_Gross_Weight = {huge} OR Aircraft_ID > 99999999999999999999"
    suite = build_suite(AIRCRAFT, sql, out_dir=tmp_path / "s")
    assert suite.gold_error is None
    assert len(run_on_suite(suite, sql)) == len(suite.paths)
    assert query_literals(sql, "sqlite")[("aircraft", "aircraft_id")] == [1e20]


def test_eval_test_suite_catches_what_empty_databases_hide(tmp_path: Path, monkeypatch) -> None:
    """On LogicCat's empty database a wrong formula returns nothing, like the gold: plain EX
    calls it correct; test-suite accuracy does not."""
    monkeypatch.setenv("GROUNDSQL_HOME", str(tmp_path / "home"))
    items = [i for i in load_benchmark(shared_benchmark("logiccat")) if i.gold_sql.rstrip(";") == LIFT][:1]
    assert items, "the LogicCat item this test uses is missing"
    wrong = LIFT.replace("*", "+")
    for pred, expected_ts in ((LIFT, True), (wrong, False)):
        out = tmp_path / ("right" if expected_ts else "wrong")
        EvalRun(items=items, configs=[parse_config("zero-shot", EVAL)], out_dir=out,
                llm=Scripted(pred), test_suite=True).run()
        (record,) = load_records(out / "results.jsonl")
        assert record["ex"] is True  # empty result against empty result
        assert record["gold_informative"] is False
        assert record["ts_ex"] is expected_ts and record["suite_informative"] is True


def test_cli_testsuite(tmp_path: Path) -> None:
    from tests.test_end_to_end import _cli

    shared_file(AIRCRAFT)  # skips where the shared data is absent, fails in CI, like every user of it
    done = _cli("testsuite", "--db", str(AIRCRAFT), "--sql", LIFT, "--out", str(tmp_path / "ts"))
    assert done.returncode == 0, done.stderr
    assert "near-miss mutations" in done.stdout and (tmp_path / "ts" / "suite.json").is_file()
    refused = _cli("testsuite", "--db", str(AIRCRAFT), "--sql", "DELETE FROM aircraft", "--out", str(tmp_path / "x"))
    assert refused.returncode != 0 and "refused" in refused.stderr


def test_earlier_run_is_rescored_with_test_suites(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GROUNDSQL_HOME", str(tmp_path / "home"))
    items = [i for i in load_benchmark(shared_benchmark("logiccat")) if i.gold_sql.rstrip(";") == LIFT][:1]
    configs = [parse_config("zero-shot", EVAL)]
    EvalRun(items=items, configs=configs, out_dir=tmp_path, llm=Scripted(LIFT.replace("*", "-"))).run()
    (before,) = load_records(tmp_path / "results.jsonl")
    assert "ts_ex" not in before and before["ex"] is True
    # No model answers are left: the rescoring must use the stored prediction.
    EvalRun(items=items, configs=configs, out_dir=tmp_path, llm=Scripted(), test_suite=True).run()
    (after,) = load_records(tmp_path / "results.jsonl")
    assert after["ts_ex"] is False and after["pred_sql"] == before["pred_sql"]
    from groundsql.evaluation.report import markdown_table, summarize

    summary = summarize([after])
    metrics = summary["configs"]["zero-shot"]
    assert (metrics["ex"], metrics["ts_ex"], metrics["gold_uninformative"]) == (100.0, 0.0, 100.0)
    assert "uninformative gold %" in markdown_table(summary)
    # Scores from an older suite construction are recomputed; current ones are kept.
    records = load_records(tmp_path / "results.jsonl")
    stale = [{**r, "suite_version": -1, "ts_ex": True} for r in records]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in stale))
    EvalRun(items=items, configs=configs, out_dir=tmp_path, llm=Scripted(), test_suite=True).run()
    (again,) = load_records(tmp_path / "results.jsonl")
    assert again["ts_ex"] is False and again["suite_version"] == after["suite_version"]


def test_best_of_pool_by_test_suite_and_rescored(tmp_path: Path, monkeypatch) -> None:
    """On an empty database every sample finds nothing, so all vote together and the greedy
    (wrong) one is chosen; the test suite finds the right query in the pool. A record made
    before best-of-pool scoring gets it from its stored candidates, without the model."""
    monkeypatch.setenv("GROUNDSQL_HOME", str(tmp_path / "home"))
    items = [i for i in load_benchmark(shared_benchmark("logiccat")) if i.gold_sql.rstrip(";") == LIFT][:1]
    configs = [parse_config("self-consistency:k=3", EVAL)]
    wrong = LIFT.replace("*", "-")
    EvalRun(items=items, configs=configs, out_dir=tmp_path, llm=Scripted(wrong, LIFT, wrong), test_suite=True).run()
    (record,) = load_records(tmp_path / "results.jsonl")
    assert (record["ex"], record["ts_ex"]) == (True, False)
    assert (record["pool_ex"], record["pool_ts"], record["pool_size"]) == (True, True, 2)

    older = {k: v for k, v in record.items() if not k.startswith("pool_")}
    (tmp_path / "results.jsonl").write_text(json.dumps(older) + "\n")
    EvalRun(items=items, configs=configs, out_dir=tmp_path, llm=Scripted(), test_suite=True).run()
    (again,) = load_records(tmp_path / "results.jsonl")
    assert (again["pool_ts"], again["ts_ex"]) == (True, False)
