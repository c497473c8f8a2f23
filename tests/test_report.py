"""The report stage: summary numbers, the three files, self-contained and escaped HTML."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from groundsql.evaluation.report import markdown_table, percentile, summarize, write_reports

INJECTION = "<script>alert(1)</script>"


def _record(config: str, item: str, category: str, **fields) -> dict:
    base = {
        "config": config, "item_id": item, "db_id": "concert_singer", "category": category,
        "question": f"question {item}?", "gold_sql": "SELECT count(*) FROM singer",
    }
    scored = {
        "pred_sql": "SELECT count(*) FROM singer", "error": None, "ex": True, "semantic": True,
        "tier": 1, "tree_edit_distance": 0, "filter_value": None, "latency_s": 1.0,
        "model_calls": 1, "prompt_tokens": 100, "completion_tokens": 10,
        "gold_columns": ["count(*)"], "gold_rows": [[6]], "gold_row_count": 1,
        "pred_columns": ["count(*)"], "pred_rows": [[6]], "pred_row_count": 1,
    }
    return {**base, **scored, **fields}


def _gold_failure(config: str) -> dict:
    return {
        "config": config, "item_id": "g1", "db_id": "broken_db", "category": "easy",
        "question": "a question whose gold fails", "gold_sql": "SELECT nope FROM nowhere",
        "gold_error": "gold query failed: no such table: nowhere",
    }


@pytest.fixture
def records() -> list[dict]:
    zero = "zero-shot"
    few = "few-shot:k=3"
    return [
        # zero-shot: 5 scored items + the gold failure.
        _record(zero, "a", "easy", latency_s=1.0, filter_value=True),
        _record(zero, "b", "easy", latency_s=2.0, tier=2, ex=True, semantic=True, filter_value=False),
        _record(zero, "c", "medium", latency_s=3.0, tier=2, ex=False, semantic=False,
                question=INJECTION, pred_rows=[[INJECTION]], pred_row_count=7,
                model_calls=2, prompt_tokens=300, completion_tokens=30),
        _record(zero, "d", "hard", latency_s=4.0, tier=3, ex=False, semantic=True),
        _record(zero, "e", "hard", latency_s=10.0, tier=None, ex=False, semantic=False,
                pred_sql=None, error="model output is not SQL", filter_value=False,
                tree_edit_distance=None, pred_columns=[], pred_rows=[], pred_row_count=0),
        _gold_failure(zero),
        # few-shot: 4 scored items + the same gold failure; carries a future key.
        _record(few, "a", "easy", latency_s=0.5, ts_ex=True, gold_informative=True),
        _record(few, "b", "easy", latency_s=0.5, ts_ex=True),
        _record(few, "c", "medium", latency_s=0.5, ts_ex=False, ex=True, semantic=False, tier=2),
        _record(few, "d", "hard", latency_s=2.5, ts_ex=None, filter_value=True),
        _gold_failure(few),
    ]


def test_percentile_is_nearest_rank():
    assert percentile([1, 2, 3, 4, 10], 50) == 3  # rank ceil(2.5) = 3
    assert percentile([1, 2, 3, 4, 10], 95) == 10  # rank ceil(4.75) = 5
    assert percentile(list(range(1, 21)), 95) == 19  # rank exactly 19, no float drift to 20
    assert percentile([7.0], 50) == 7.0
    assert percentile([], 50) is None


def test_summary_numbers(records):
    summary = summarize(records)
    assert list(summary["configs"]) == ["zero-shot", "few-shot:k=3"]  # first-seen order
    assert summary["categories"] == ["easy", "medium", "hard"]

    zero = summary["configs"]["zero-shot"]
    assert zero["n"] == 5 and zero["gold_failures"] == 1  # the gold failure is not in n
    assert zero["ex"] == 40.0 and zero["ex_count"] == 2
    assert zero["semantic"] == 60.0 and zero["semantic_count"] == 3
    assert zero["tiers"] == {"tier1": 1, "tier2": 2, "tier3": 1, "failed": 1}
    assert zero["tier_shares"] == {"tier1": 20.0, "tier2": 40.0, "tier3": 20.0, "failed": 20.0}
    # filter values: a True, b False, e False counted; c, d (None) not in the denominator.
    assert zero["filter_value_n"] == 3 and zero["filter_value_count"] == 1
    assert zero["filter_value"] == 33.3
    assert zero["errors"] == 1 and zero["error_rate"] == 20.0
    assert zero["latency_p50_s"] == 3.0 and zero["latency_p95_s"] == 10.0
    assert zero["calls_per_q"] == 1.2
    assert zero["prompt_tokens_per_q"] == 140.0 and zero["completion_tokens_per_q"] == 14.0
    assert zero["tokens_per_q"] == 154.0
    assert "ts_ex" not in zero
    assert zero["categories"]["easy"] == {
        "n": 2, "ex": 100.0, "ex_count": 2, "semantic": 100.0, "semantic_count": 2}
    assert zero["categories"]["hard"]["ex"] == 0.0 and zero["categories"]["hard"]["semantic"] == 50.0

    few = summary["configs"]["few-shot:k=3"]
    assert few["n"] == 4 and few["ex"] == 100.0 and few["semantic"] == 75.0
    assert few["filter_value"] == 100.0 and few["filter_value_n"] == 1
    assert few["ts_ex"] == 66.7 and few["ts_ex_n"] == 3  # the None is not counted
    assert few["latency_p50_s"] == 0.5 and few["latency_p95_s"] == 2.5
    assert few["error_rate"] == 0.0

    # The gold failure is listed once, with the configurations it hit.
    [failure] = summary["gold_failures"]
    assert failure["item_id"] == "g1" and failure["db_id"] == "broken_db"
    assert failure["configs"] == ["zero-shot", "few-shot:k=3"]
    json.dumps(summary)  # machine-readable as is


def test_summary_of_only_gold_failures_has_no_numbers():
    summary = summarize([_gold_failure("zero-shot")])
    metrics = summary["configs"]["zero-shot"]
    assert metrics["n"] == 0 and metrics["ex"] is None and metrics["latency_p50_s"] is None
    assert "zero-shot" in markdown_table(summary)


def test_markdown_table_has_one_row_per_config(records):
    table = markdown_table(summarize(records))
    lines = table.splitlines()
    assert len(lines) == 2 + 2  # header, separator, one row per configuration
    assert lines[2].startswith("| zero-shot | 5 | 40.0 |")
    assert lines[3].startswith("| few-shot:k=3 | 4 | 100.0 |")
    assert "TS %" in lines[0]  # ts_ex appeared in one configuration
    assert "33.3 (3)" in lines[2]  # filter-value accuracy with its denominator


def test_write_reports(tmp_path: Path, records):
    meta = {"benchmark": "spider_dev", "model": "qwen2.5-coder-0.5b", "items": 6, "seed": 0}
    paths = write_reports(records, tmp_path / "out", title="test run", meta=meta)
    assert {p.name for p in paths.values()} == {"report.json", "report.md", "report.html"}
    assert all(p.is_file() for p in paths.values())

    document = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert document["meta"] == meta and document["configs"]["zero-shot"]["ex"] == 40.0

    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert markdown_table(summarize(records)) in markdown
    assert "| g1 | broken_db | gold query failed: no such table: nowhere |" in markdown
    assert "tier 3 (judge)" in markdown and "| medium |" in markdown


def test_html_is_self_contained_and_complete(tmp_path: Path, records):
    paths = write_reports(records, tmp_path, meta={"benchmark": "spider_dev", "seed": 7})
    page = paths["html"].read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "spider_dev" in page and "seed" in page
    # Failures: zero-shot c, d, e and few-shot c; passing records are not listed.
    assert page.count('<details class="failure">') == 4 + 1  # + the gold failure entry
    assert "model output is not SQL" in page
    assert "predicted: 7 rows, first 1 shown" in page  # the row count beside the first rows
    pytest.importorskip("matplotlib")
    assert page.count('src="data:image/png;base64,') == 4


def test_html_escapes_record_text(tmp_path: Path, records):
    records.append(_record("few-shot:k=3", "x", "extra", ex=False, semantic=False, tier=2,
                           pred_sql=f"SELECT '{INJECTION}'", gold_rows=[[INJECTION, "a&b"]]))
    records.append(_record("few-shot:k=3", "y", f"<b>{INJECTION}", ex=False, semantic=False))
    page = write_reports(records, tmp_path)["html"].read_text(encoding="utf-8")
    assert INJECTION not in page  # neither in a question nor in a cell value nor in SQL
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert f"<pre>{escaped}</pre>" in page  # the question of zero-shot c
    assert f"<td>{escaped}</td>" in page  # the cell values
    assert "<td>a&amp;b</td>" in page
    assert f"SELECT &#x27;{escaped}&#x27;" in page
    assert page.count("<script>") == 1  # only the report's own filter script
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert INJECTION not in markdown  # category names reach the Markdown tables too


def test_where_the_time_goes() -> None:
    """Computed prompt tokens (not the prefix cache's), generated tokens and model seconds per
    question and per stage; answers from the disk cache cost nothing."""
    def call(prompt: int, cached: int, generated: int, seconds: float, from_cache: bool = False) -> dict:
        return {"prompt_tokens": prompt, "cached_prompt_tokens": cached, "completion_tokens": generated,
                "latency_s": seconds, "from_cache": from_cache}

    first = _record("zero-shot", "a", "easy", latency_s=12.0, trace=[
        {"step": "schema", "elapsed_s": 0.5},
        {"step": "generate", "elapsed_s": 10.0, "calls": [call(2000, 0, 30, 10.0)]},
        {"step": "validate+execute", "elapsed_s": 1.5}])
    second = _record("zero-shot", "b", "easy", latency_s=4.0, trace=[
        {"step": "generate", "elapsed_s": 3.0, "calls": [call(2100, 2000, 40, 3.0)]},
        {"step": "reflect", "elapsed_s": 1.0, "calls": [call(2200, 2100, 20, 1.0, from_cache=True)]}])
    cost = summarize([first, second])["configs"]["zero-shot"]["cost"]
    assert cost["computed_prompt_tokens_per_q"] == (2000 + 100) / 2
    assert cost["generated_tokens_per_q"] == (30 + 40) / 2
    assert (cost["model_s_per_q"], cost["other_s_per_q"]) == ((10 + 3) / 2, (16 - 13) / 2)
    assert cost["stages"]["generate"] == {"seconds": 6.5, "computed": 1050.0, "generated": 35.0, "calls": 1.0}
    assert cost["stages"]["reflect"]["computed"] == 0 and cost["stages"]["reflect"]["calls"] == 0.5


def test_grounding_is_summed_over_questions(tmp_path: Path, records) -> None:
    grounded = [
        _record("grounded", "a", "easy", grounding={"gold": ["t=1", "t=2"], "resolved": ["t=1"], "found": 1}),
        _record("grounded", "b", "easy", grounding={"gold": ["t=3"], "resolved": ["t=3", "u=9"], "found": 1}),
    ]
    summary = summarize(records + grounded)
    assert summary["configs"]["grounded"]["grounding"] == {
        "n": 2, "gold_rows": 3, "resolved_rows": 3, "found": 2, "recall": 66.7, "precision": 66.7}
    assert summary["configs"]["zero-shot"]["grounding"] is None
    write_reports(records + grounded, tmp_path / "out", title="t", meta={})
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "| grounded | 2 | 3 | 3 | 2 | 66.7 | 66.7 |" in markdown
    assert "Grounding" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    # Without a grounded configuration there is no such section.
    write_reports(records, tmp_path / "plain", title="t", meta={})
    assert "Grounding" not in (tmp_path / "plain" / "report.md").read_text(encoding="utf-8")
