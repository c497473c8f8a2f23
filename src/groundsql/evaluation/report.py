"""The report stage of `groundsql eval`: evaluation records -> JSON, Markdown and one HTML file.

Input is the list of records `EvalRun.evaluate` writes (one per configuration and item). The
numbers all come from `summarize`; the renderers only format them, so the three reports can
never disagree.

Conventions, stated once so every table means the same thing:
- A record with `gold_error` is not scored: the gold query itself failed, so there is nothing to
  compare against. Such items are listed apart and never enter a denominator.
- Percentages are of scored items, rounded to one decimal. Filter-value accuracy is over the
  items where `filter_value` is not None (the gold had something to check); its count is given.
- Latency percentiles use the nearest-rank method: the p-th percentile of n sorted values is the
  value at rank ceil(p * n / 100) (1-based). It is always an observed latency, never interpolated.
- Configurations keep the order in which they first appear in the records.
- Best of pool (strategies that choose among candidate queries): some candidate was right; a
  question whose strategy kept no candidate is a miss. It bounds what the selection could score.

The HTML report is self-contained: inline CSS, plots as base64 PNG data URIs (matplotlib, Agg,
no pyplot global state), one tiny inline script for the failure filter. Everything taken from a
record is untrusted (questions, SQL, values and errors may hold markup) and is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from groundsql.errors import GroundsqlError
from groundsql.files import reason, writable_folder, write_text_atomic

PERCENTILE_METHOD = "nearest-rank"
JSON_FILE, MARKDOWN_FILE, HTML_FILE = "report.json", "report.md", "report.html"

# Known difficulty scales, easiest first; other categories keep their first-seen order after these.
_CATEGORY_ORDER = ("easy", "medium", "hard", "extra", "simple", "moderate", "challenging")
_NO_CATEGORY = "(none)"
_DASH = "–"
_TIER_KEYS = ("tier1", "tier2", "tier3", "failed")
_TIER_NAMES = {"tier1": "tier 1 (AST)", "tier2": "tier 2 (results)", "tier3": "tier 3 (judge)",
               "failed": "failed (no result)"}
_POOL_NOTE = (" Best of pool: a question counts when any query the strategy chose among (the search's"
              " trajectories, self-consistency's samples) is right, i.e. what a perfect selection would score.")
_QUESTION_PREVIEW = 140  # characters of a question shown in a closed failure entry


# ---------------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------------


def is_scored(record: dict[str, Any]) -> bool:
    return "gold_error" not in record


def percentile(values: Iterable[float], p: int) -> float | None:
    """Nearest-rank percentile (see the module docstring); None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    # Integer arithmetic: ceil(p * n / 100) without the float error of e.g. 0.95 * 20.
    rank = max(1, -(-p * len(ordered) // 100))
    return ordered[rank - 1]


def _pct(count: int, total: int) -> float | None:
    return round(100 * count / total, 1) if total else None


def _mean(values: list[float], digits: int) -> float | None:
    return round(sum(values) / len(values), digits) if values else None


def _numbers(records: list[dict[str, Any]], key: str) -> list[float]:
    # Missing or None values (older or partial records) are left out rather than counted as 0.
    return [r[key] for r in records if isinstance(r.get(key), (int, float))]


def _config(record: dict[str, Any]) -> str:
    return str(record.get("config"))


def _category(record: dict[str, Any]) -> str:
    value = record.get("category")
    return _NO_CATEGORY if value is None or value == "" else str(value)


def _ordered_unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _category_order(records: list[dict[str, Any]]) -> list[str]:
    seen = _ordered_unique(_category(r) for r in records)
    known = [c for c in _CATEGORY_ORDER if c in seen]
    return known + [c for c in seen if c not in known]


def _has_ts(records: list[dict[str, Any]]) -> bool:
    return any("ts_ex" in r for r in records)


def _accuracy(records: list[dict[str, Any]]) -> dict[str, Any]:
    """EX and semantic accuracy (and test-suite EX when recorded) over scored records."""
    n = len(records)
    ex = sum(1 for r in records if r.get("ex") is True)
    semantic = sum(1 for r in records if r.get("semantic") is True)
    metrics: dict[str, Any] = {
        "n": n, "ex": _pct(ex, n), "ex_count": ex,
        "semantic": _pct(semantic, n), "semantic_count": semantic,
    }
    if _has_ts(records):
        # Test-suite EX may be missing for some items (no suite for that database): its own n.
        counted = [r for r in records if r.get("ts_ex") is not None]
        ts = sum(1 for r in counted if r["ts_ex"] is True)
        metrics.update(ts_ex=_pct(ts, len(counted)), ts_ex_count=ts, ts_ex_n=len(counted))
        # Items whose gold result on the original database (empty, all NULL, a single 0) could
        # not tell a right query from a wrong one: where plain EX is least trustworthy.
        judged = [r for r in records if "gold_informative" in r]
        blind = sum(1 for r in judged if r["gold_informative"] is False)
        metrics.update(gold_uninformative=_pct(blind, len(judged)), gold_uninformative_count=blind)
    if any("pool_ex" in r for r in records):
        # Best of pool: some query the strategy chose among was right (a record without a
        # pool, where nothing ran, is a miss). What a perfect selection would have scored.
        pool = sum(1 for r in records if r.get("pool_ex") is True)
        metrics.update(pool_ex=_pct(pool, n), pool_ex_count=pool)
        if _has_ts(records):
            counted = [r for r in records if r.get("ts_ex") is not None]
            pool = sum(1 for r in counted if r.get("pool_ts") is True)
            metrics.update(pool_ts=_pct(pool, len(counted)), pool_ts_count=pool)
    return metrics


def _tiers(records: list[dict[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(_TIER_KEYS, 0)
    for r in records:
        key = "failed" if r.get("tier") is None else f"tier{r['tier']}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def _config_metrics(records: list[dict[str, Any]], categories: list[str]) -> dict[str, Any]:
    """All metrics of one configuration; `records` are its records, scored or not."""
    scored = [r for r in records if is_scored(r)]
    n = len(scored)
    tiers = _tiers(scored)
    filter_counted = [r for r in scored if r.get("filter_value") is not None]
    filter_ok = sum(1 for r in filter_counted if r["filter_value"] is True)
    errors = sum(1 for r in scored if r.get("error"))
    latencies = _numbers(scored, "latency_s")
    prompt, completion = _numbers(scored, "prompt_tokens"), _numbers(scored, "completion_tokens")
    total_tokens = [  # per question, for the cost plot; records without token counts left out
        (r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)
        for r in scored
        if r.get("prompt_tokens") is not None or r.get("completion_tokens") is not None
    ]
    by_category = {}
    for category in categories:
        in_category = [r for r in scored if _category(r) == category]
        if in_category:
            by_category[category] = _accuracy(in_category)
    return {
        **_accuracy(scored),
        "gold_failures": len(records) - n,
        "tiers": tiers,
        "tier_shares": {key: _pct(count, n) for key, count in tiers.items()},
        "filter_value": _pct(filter_ok, len(filter_counted)),
        "filter_value_count": filter_ok,
        "filter_value_n": len(filter_counted),
        "errors": errors,
        "error_rate": _pct(errors, n),
        "latency_p50_s": percentile(latencies, 50),
        "latency_p95_s": percentile(latencies, 95),
        "latency_mean_s": _mean(latencies, 3),
        "calls_per_q": _mean(_numbers(scored, "model_calls"), 2),
        "prompt_tokens_per_q": _mean(prompt, 1),
        "completion_tokens_per_q": _mean(completion, 1),
        "tokens_per_q": _mean(total_tokens, 1),
        # Queries the model wrote, and those naming a table or column that does not exist.
        "sql_written": sum(int(r.get("sql_written") or 0) for r in scored),
        "missing_names": sum(int(r.get("missing_names") or 0) for r in scored),
        # Answers the runtime wrote without the grammar it was given (its limits).
        "grammar_dropped": sum(int(r.get("grammar_dropped") or 0) for r in scored),
        "cost": _cost(scored),
        "categories": by_category,
        "grounding": _grounding(scored),
    }


def _grounding(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The lookup and entity linking over the gold's rows (evaluation/grounding_match.py), summed
    over questions: recall = found / gold rows, precision = found / resolved rows."""
    scores = [r["grounding"] for r in records if r.get("grounding")]
    if not scores:
        return None
    found = sum(s["found"] for s in scores)
    gold, resolved = sum(len(s["gold"]) for s in scores), sum(len(s["resolved"]) for s in scores)
    return {"n": len(scores), "gold_rows": gold, "resolved_rows": resolved, "found": found,
            "recall": _pct(found, gold), "precision": _pct(found, resolved)}


def grounding_table(summary: dict[str, Any]) -> Table:
    header = ["config", "n", "gold rows", "resolved", "found", "recall %", "precision %"]
    rows = [[label, str(g["n"]), str(g["gold_rows"]), str(g["resolved_rows"]), str(g["found"]),
             _fmt(g["recall"]), _fmt(g["precision"])]
            for label, m in summary["configs"].items() if (g := m.get("grounding"))]
    return header, rows


def _calls(record: dict[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    """(stage, call) for every model call of a record's trace."""
    for step in record.get("trace") or ():
        for call in step.get("calls") or ():
            yield step.get("step", "?"), call


def _cost(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Where the time and the tokens go, per question: prompt tokens the model computed (not
    served from its prefix cache), tokens it generated, seconds in the model and seconds in
    everything else; and the same per stage. Machine-independent counts beside wall time, so a
    change is judged on both. Calls answered from the disk cache cost no model time."""
    n = len(records) or 1
    stages: dict[str, dict[str, float]] = {}
    model_s: list[float] = []
    for record in records:
        spent = 0.0
        for step in record.get("trace") or ():
            stage = stages.setdefault(step.get("step", "?"), {"seconds": 0.0, "computed": 0.0, "generated": 0.0,
                                                             "calls": 0.0})
            stage["seconds"] += step.get("elapsed_s") or 0.0
        for name, call in _calls(record):
            stage = stages[name]
            live = not call.get("from_cache")
            stage["calls"] += 1
            stage["computed"] += ((call.get("prompt_tokens") or 0) - (call.get("cached_prompt_tokens") or 0)) * live
            stage["generated"] += (call.get("completion_tokens") or 0) * live
            spent += (call.get("latency_s") or 0.0) * live
        model_s.append(spent)
    return {
        "computed_prompt_tokens_per_q": round(sum(s["computed"] for s in stages.values()) / n, 1),
        "generated_tokens_per_q": round(sum(s["generated"] for s in stages.values()) / n, 1),
        "model_s_per_q": round(sum(model_s) / n, 3),
        "other_s_per_q": round(max(sum(_numbers(records, "latency_s")) - sum(model_s), 0.0) / n, 3),
        "stages": {name: {key: round(value / n, 3) for key, value in stage.items()} for name, stage in stages.items()},
    }


def _gold_failures(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per item whose gold failed (the same item fails in every configuration)."""
    failures: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in records:
        if is_scored(r):
            continue
        key = (r.get("item_id"), r.get("gold_error"))
        if key not in failures:
            failures[key] = {
                "item_id": r.get("item_id"), "db_id": r.get("db_id"), "category": r.get("category"),
                "question": r.get("question"), "gold_sql": r.get("gold_sql"),
                "error": r.get("gold_error"), "configs": [],
            }
        failures[key]["configs"].append(r.get("config"))
    return list(failures.values())


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-configuration metrics, the gold failures and the category order (see module doc)."""
    categories = _category_order([r for r in records if is_scored(r)])
    labels = _ordered_unique(_config(r) for r in records)
    configs = {
        label: _config_metrics([r for r in records if _config(r) == label], categories)
        for label in labels
    }
    asked = [r for r in records if "clarification" in r or r.get("category") in ASK_BACK_CATEGORIES]
    return {
        "configs": configs,
        **({"ask_back": {label: _ask_back([r for r in asked if _config(r) == label]) for label in labels}}
           if any("clarification" in r for r in asked) else {}),
        "gold_failures": _gold_failures(records),
        "categories": categories,
        "percentile_method": PERCENTILE_METHOD,
    }


ASK_BACK_CATEGORIES = ("ambiguous", "out-of-scope", "clear")


def _ask_back(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The confusion of an ask-back set: per category, how many were asked back, called out of
    scope or answered; of those asked back with a reply, how many the reply's answer got right."""
    rows = {}
    for category in _ordered_unique(_category(r) for r in records):
        mine = [r for r in records if _category(r) == category]
        replied = [r for r in mine if "reply" in r]
        rows[category] = {
            "n": len(mine),
            "asked": sum(r.get("clarification") == "ambiguous" for r in mine),
            "out_of_scope": sum(r.get("clarification") == "out_of_scope" for r in mine),
            "answered": sum(not r.get("clarification") for r in mine),
            "answered_right": sum(not r.get("clarification") and r.get("ex") is True for r in mine),
            "replied": len(replied), "reply_right": sum(r.get("ex") is True for r in replied),
        }
    return rows


def ask_back_table(summary: dict[str, Any]) -> Table:
    header = ["config", "category", "n", "asked back", "out of scope", "answered (right)", "reply's answer right"]
    rows = [[label, category, str(c["n"]), str(c["asked"]), str(c["out_of_scope"]),
             f"{c['answered']} ({c['answered_right']})",
             f"{c['reply_right']} of {c['replied']}" if c["replied"] else "-"]
            for label, by_category in summary.get("ask_back", {}).items() for category, c in by_category.items()]
    return header, rows


# ---------------------------------------------------------------------------------------------
# Tables: built once as plain strings, rendered as Markdown or HTML
# ---------------------------------------------------------------------------------------------

Table = tuple[list[str], list[list[str]]]  # header, rows


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return _DASH
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _with_n(value: float | None, n: int) -> str:
    return _DASH if value is None else f"{value:.1f} ({n})"


def _any_ts(summary: dict[str, Any]) -> bool:
    return any("ts_ex" in m for m in summary["configs"].values())


def _any_pool(summary: dict[str, Any]) -> bool:
    return any("pool_ex" in m for m in summary["configs"].values())


def main_table(summary: dict[str, Any]) -> Table:
    ts = _any_ts(summary)
    pools = _any_pool(summary)
    pool_header = ["best-of-pool EX %"] + (["best-of-pool TS %"] if ts else []) if pools else []
    header = ["config", "n", "EX %"] + (["TS %", "uninformative gold %"] if ts else []) + pool_header + [
        "semantic %", "filter-value % (n)", "p50 s", "p95 s", "calls/q", "prompt tok/q",
        "gen tok/q", "missing names / queries written",
    ]
    rows = []
    for label, m in summary["configs"].items():
        ts_cell = [_fmt(m.get("ts_ex")), _fmt(m.get("gold_uninformative"))] if ts else []
        pool_cell = [_fmt(m.get("pool_ex"))] + ([_fmt(m.get("pool_ts"))] if ts else []) if pools else []
        rows.append([
            label, str(m["n"]), _fmt(m["ex"]), *ts_cell, *pool_cell, _fmt(m["semantic"]),
            _with_n(m["filter_value"], m["filter_value_n"]),
            _fmt(m["latency_p50_s"], 2), _fmt(m["latency_p95_s"], 2), _fmt(m["calls_per_q"], 2),
            _fmt(m["prompt_tokens_per_q"], 0), _fmt(m["completion_tokens_per_q"], 0),
            (f"{m['missing_names']} / {m['sql_written']}" if m.get("sql_written") else _DASH)
            + (f" ({m['grammar_dropped']} without the grammar)" if m.get("grammar_dropped") else ""),
        ])
    return header, rows


def cost_table(summary: dict[str, Any]) -> Table:
    """Per configuration and stage: seconds, model calls, computed prompt and generated tokens
    per question; each configuration's total row first."""
    header = ["config", "stage", "s/q", "model s/q", "calls/q", "computed prompt tok/q", "gen tok/q"]
    rows = []
    for label, m in summary["configs"].items():
        cost = m["cost"]
        rows.append([label, "all", _fmt(m["latency_mean_s"], 2), _fmt(cost["model_s_per_q"], 2),
                     _fmt(m["calls_per_q"], 2), _fmt(cost["computed_prompt_tokens_per_q"], 0),
                     _fmt(cost["generated_tokens_per_q"], 0)])
        for stage, numbers in cost["stages"].items():
            rows.append(["", stage, _fmt(numbers["seconds"], 2), _DASH, _fmt(numbers["calls"], 2),
                         _fmt(numbers["computed"], 0), _fmt(numbers["generated"], 0)])
    return header, rows


def category_table(summary: dict[str, Any], metric: str) -> Table:
    """Rows = categories (then `all`), columns = configurations; cells are `% (n)`."""
    labels = list(summary["configs"])
    rows = []
    for category in summary["categories"]:
        cells = []
        for label in labels:
            m = summary["configs"][label]["categories"].get(category)
            cells.append(_DASH if m is None else _with_n(m.get(metric), m["n"]))
        rows.append([category, *cells])
    overall = [_with_n(summary["configs"][label].get(metric), summary["configs"][label]["n"])
               for label in labels]
    rows.append(["all", *overall])
    return ["category", *labels], rows


def tier_table(summary: dict[str, Any]) -> Table:
    header = ["config", "n", *(_TIER_NAMES[k] for k in _TIER_KEYS), "prediction errors"]
    rows = []
    for label, m in summary["configs"].items():
        cells = [_with_n(m["tier_shares"][k], m["tiers"][k]) for k in _TIER_KEYS]
        rows.append([label, str(m["n"]), *cells, _with_n(m["error_rate"], m["errors"])])
    return header, rows


def gold_failure_table(summary: dict[str, Any]) -> Table:
    failures = summary["gold_failures"]
    rows = [[_fmt(f["item_id"]), _fmt(f["db_id"]), _fmt(f["error"])] for f in failures]
    return ["item_id", "db", "error"], rows


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    # Cells hold record text (errors, labels): a `|` or newline would break the row, and raw
    # `<`/`>` would be live HTML wherever the Markdown is rendered.
    text = " ".join(text.split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def _md_table(table: Table) -> str:
    header, rows = table
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown_table(summary: dict[str, Any]) -> str:
    """The main table alone (one row per configuration), for pasting into BENCHMARKS.md."""
    return _md_table(main_table(summary))


def _md_meta(meta: dict[str, Any]) -> str:
    lines = (f"- **{_md_cell(str(k))}**: {_md_cell(_meta_value(v))}" for k, v in meta.items())
    return "\n".join(lines)


def _meta_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def render_markdown(summary: dict[str, Any], title: str, meta: dict[str, Any]) -> str:
    parts = [f"# {_md_cell(title)}"]
    if meta:
        parts.append(_md_meta(meta))
    parts += [
        "## Results",
        markdown_table(summary),
        "Percentages are of scored items (gold failures excluded); filter-value accuracy is over "
        f"the items with filter values to check (their count in brackets). Latency percentiles: "
        f"{PERCENTILE_METHOD}." + (_POOL_NOTE if _any_pool(summary) else ""),
        "## Where the time goes (per question)",
        _md_table(cost_table(summary)),
        "Computed prompt tokens are those the model processed (not served from its prefix cache); "
        "model seconds exclude answers from the disk cache; the rest of a question's time is "
        "grounding, validation, execution and waiting.",
        "## Execution accuracy by category (% (n))",
        _md_table(category_table(summary, "ex")),
        *(["## Grounding: the gold's rows that lookup and entity linking resolved",
           _md_table(grounding_table(summary)),
           "A gold row is one the gold query names by its key or by a label or name (table = key "
           "value); recall is found / gold rows, precision found / resolved, summed over questions."]
          if any(m.get("grounding") for m in summary["configs"].values()) else []),
        "## Semantic accuracy by category (% (n))",
        _md_table(category_table(summary, "semantic")),
        "## Which tier decided the semantic verdict (% (count))",
        _md_table(tier_table(summary)),
        *(["## Ask back: what each category was met with",
           _md_table(ask_back_table(summary)),
           "Asked back: a clarifying question with options; out of scope: the answer says what the "
           "data lacks. A reply's answer is the follow-up to the item's `reply`, scored against its gold."]
          if summary.get("ask_back") else []),
        "## Gold failures (not scored)",
        _md_table(gold_failure_table(summary)) if summary["gold_failures"] else "None.",
    ]
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# Plots (matplotlib, Agg): each returns a PNG data URI
# ---------------------------------------------------------------------------------------------


def _figure(width: float = 7.0, height: float = 4.0) -> Any:
    # Figure without pyplot: no global state, no GUI backend, safe in any thread.
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _data_uri(fig: Any) -> str:
    buffer = io.BytesIO()
    # No metadata: the PNG bytes depend only on the data.
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _grouped_bars(ax: Any, groups: list[str], series: dict[str, list[float | None]]) -> None:
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, [v or 0.0 for v in values], width, label=name)
        ax.bar_label(bars, labels=[_fmt(v) for v in values], fontsize=7, padding=1)
    # Configuration labels get long (`self-consistency:k=5,temperature=0.7`): slant them.
    slant = len(groups) > 4 or any(len(g) > 14 for g in groups)
    ax.set_xticks(range(len(groups)), groups, rotation=20 if slant else 0,
                  ha="right" if slant else "center", fontsize=8)
    ax.set_ylim(0, 108)  # room for the value labels above a 100 % bar
    ax.set_ylabel("%")


def _legend_below(fig: Any, ax: Any) -> None:
    # Outside the axes, so the legend never hides a bar.
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)), fontsize=8)


def plot_accuracy(summary: dict[str, Any]) -> str:
    labels = list(summary["configs"])
    series = {"EX": [summary["configs"][c]["ex"] for c in labels],
              "semantic": [summary["configs"][c]["semantic"] for c in labels]}
    if _any_ts(summary):
        series["TS"] = [summary["configs"][c].get("ts_ex") for c in labels]
    fig = _figure()
    ax = fig.add_subplot()
    _grouped_bars(ax, labels, series)
    _legend_below(fig, ax)
    ax.set_title("Accuracy per configuration")
    return _data_uri(fig)


def plot_categories(summary: dict[str, Any]) -> str:
    categories = summary["categories"]
    fig = _figure(11.0, 4.2)
    for i, (metric, name) in enumerate((("ex", "EX"), ("semantic", "semantic"))):
        ax = fig.add_subplot(1, 2, i + 1)
        series = {
            label: [m["categories"].get(c, {}).get(metric) for c in categories]
            for label, m in summary["configs"].items()
        }
        _grouped_bars(ax, categories, series)
        ax.set_title(f"{name} accuracy per category")
    _legend_below(fig, ax)  # one legend for both panels
    return _data_uri(fig)


def plot_latency(summary: dict[str, Any], records: list[dict[str, Any]]) -> str | None:
    scored = [r for r in records if is_scored(r)]
    latencies = {
        label: _numbers([r for r in scored if _config(r) == label], "latency_s")
        for label in summary["configs"]
    }
    labels = [label for label, values in latencies.items() if values]  # boxplot needs data
    if not labels:
        return None
    data = [latencies[label] for label in labels]
    fig = _figure(7.0, 0.6 * len(labels) + 1.6)
    ax = fig.add_subplot()
    ax.boxplot(data, orientation="horizontal", tick_labels=labels)
    ax.invert_yaxis()  # first configuration on top, as in the tables
    ax.set_xlabel("seconds per question")
    ax.set_title("Latency per configuration")
    return _data_uri(fig)


def plot_cost(summary: dict[str, Any]) -> str | None:
    points = [(c, m["tokens_per_q"], m["ex"]) for c, m in summary["configs"].items()
              if m["tokens_per_q"] is not None and m["ex"] is not None]
    if not points:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    for label, x, y in points:
        ax.scatter([x], [y])
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.margins(x=0.25)  # room for the labels of the outermost points
    ax.set_xlabel("mean tokens per question (prompt + generated)")
    ax.set_ylabel("EX %")
    ax.set_ylim(0, 105)
    ax.set_title("Accuracy against tokens spent")
    return _data_uri(fig)


def _plots(summary: dict[str, Any], records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(alt text, data URI) of each plot; none when matplotlib is absent or nothing was scored."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return []
    if not any(m["n"] for m in summary["configs"].values()):
        return []
    makers: list[tuple[str, Callable[[], str | None]]] = [
        ("Accuracy per configuration", lambda: plot_accuracy(summary)),
        ("Accuracy per category", lambda: plot_categories(summary)),
        ("Latency per configuration", lambda: plot_latency(summary, records)),
        ("Accuracy against tokens", lambda: plot_cost(summary)),
    ]
    return [(alt, uri) for alt, make in makers if (uri := make()) is not None]


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------


def _e(value: Any) -> str:
    """Escaped text of any value; None is shown as SQL NULL."""
    return html.escape("NULL" if value is None else str(value), quote=True)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1200px;
padding:0 1rem;color:#222}
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}
dl.meta dt{font-weight:600}dl.meta dd{margin:0}
img{max-width:100%;display:block;margin:.5rem 0}
details.failure{border:1px solid #ddd;border-radius:4px;margin:.3rem 0;padding:.3rem .6rem}
details.failure summary{cursor:pointer}
pre{background:#f7f7f7;padding:.4rem;white-space:pre-wrap;word-break:break-word;margin:.2rem 0}
pre.error{background:#fdecec}
.bad{color:#b00020;font-weight:600}.good{color:#1b7f3b;font-weight:600}
.results{display:flex;gap:1.5rem;flex-wrap:wrap}.small{font-size:.8rem;color:#555}
#filter{width:100%;max-width:30rem;padding:.3rem;margin:.5rem 0}
"""

# Inline and constant: no record text is ever placed inside the script.
_FILTER_SCRIPT = """
document.getElementById('filter').addEventListener('input', function () {
  var q = this.value.toLowerCase();
  document.querySelectorAll('details.failure').forEach(function (d) {
    d.style.display = d.textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
  });
});
"""


def _html_table(table: Table) -> str:
    header, rows = table
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _html_meta(meta: dict[str, Any]) -> str:
    items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(_meta_value(v))}</dd>" for k, v in meta.items())
    return f'<dl class="meta">{items}</dl>'


def _result_html(name: str, columns: Any, rows: Any, count: Any) -> str:
    """A result as a small table (the rows the record kept) with its full row count."""
    columns, rows = list(columns or []), list(rows or [])
    count = count if isinstance(count, int) else len(rows)
    note = f"{count} rows, first {len(rows)} shown" if count > len(rows) else f"{count} rows"
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(v)}</td>" for v in (row if isinstance(row, list) else [row]))
        + "</tr>" for row in rows
    )
    return (f'<div><div class="small">{_e(name)}: {_e(note)}</div>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def _verdict(ok: Any, name: str) -> str:
    mark, cls = ("✓", "good") if ok is True else ("✗", "bad")
    return f'<span class="{cls}">{_e(name)} {mark}</span>'


def _failure_html(r: dict[str, Any]) -> str:
    question = str(r.get("question") or "")
    preview = question if len(question) <= _QUESTION_PREVIEW else question[:_QUESTION_PREVIEW] + "…"
    tier = r.get("tier")
    summary = (f"{_verdict(r.get('ex'), 'EX')} {_verdict(r.get('semantic'), 'semantic')} "
               f"[{_e(_category(r))}] {_e(r.get('item_id'))} — {_e(preview)}")
    if r.get("error") or r.get("pred_sql") is None:
        prediction = f'<pre class="error">{_e(r.get("error") or "no SQL produced")}</pre>'
        if r.get("pred_sql"):
            prediction = f"<pre>{_e(r['pred_sql'])}</pre>" + prediction
        pred_result = ""
    else:
        prediction = f"<pre>{_e(r['pred_sql'])}</pre>"
        pred_result = _result_html("predicted", r.get("pred_columns"), r.get("pred_rows"),
                                   r.get("pred_row_count"))
    gold_result = _result_html("gold", r.get("gold_columns"), r.get("gold_rows"),
                               r.get("gold_row_count"))
    facts = {
        "config": r.get("config"), "db": r.get("db_id"), "category": _category(r),
        "decided by": "failed (no result)" if tier is None else f"tier {tier}",
        "tree edit distance": _fmt(r.get("tree_edit_distance")),
        "filter values": _fmt(r.get("filter_value")),
    }
    details = (
        "<p>" + " · ".join(f"<b>{_e(k)}</b> {_e(v)}" for k, v in facts.items()) + "</p>"
        f"<p><b>question</b></p><pre>{_e(question)}</pre>"
        f"<p><b>gold SQL</b></p><pre>{_e(r.get('gold_sql'))}</pre>"
        f"<p><b>predicted SQL</b></p>{prediction}"
        f'<div class="results">{gold_result}{pred_result}</div>'
    )
    return f'<details class="failure"><summary>{summary}</summary>{details}</details>'


def is_failure(record: dict[str, Any]) -> bool:
    correct = record.get("ex") is True and record.get("semantic") is True
    return is_scored(record) and not correct


def _failure_browser(summary: dict[str, Any], records: list[dict[str, Any]]) -> str:
    failures = [r for r in records if is_failure(r)]
    parts = [f"<p>{len(failures)} scored records where EX or the semantic verdict is false, "
             "grouped by configuration. Click one to open it.</p>",
             '<input id="filter" type="search" placeholder="filter: any text (question, SQL, '
             'error, category…)">']
    for label in summary["configs"]:
        mine = [r for r in failures if _config(r) == label]
        parts.append(f"<h3>{_e(label)} ({len(mine)})</h3>")
        parts += [_failure_html(r) for r in mine]
    return "\n".join(parts)


def _gold_failures_html(summary: dict[str, Any]) -> str:
    if not summary["gold_failures"]:
        return "<p>None.</p>"
    items = "".join(
        f'<details class="failure"><summary>{_e(f["item_id"])} ({_e(f["db_id"])}): '
        f'{_e(f["error"])}</summary><p><b>question</b></p><pre>{_e(f["question"])}</pre>'
        f'<p><b>gold SQL</b></p><pre>{_e(f["gold_sql"])}</pre>'
        "</details>"
        for f in summary["gold_failures"]
    )
    return _html_table(gold_failure_table(summary)) + items


def render_html(summary: dict[str, Any], records: list[dict[str, Any]], title: str,
                meta: dict[str, Any]) -> str:
    plots = _plots(summary, records)
    plot_html = "".join(f'<img alt="{_e(alt)}" src="{uri}">' for alt, uri in plots) or (
        "<p>No plots (matplotlib is not installed, or nothing was scored).</p>")
    scored = sum(m["n"] for m in summary["configs"].values())
    body = [
        f"<h1>{_e(title)}</h1>",
        _html_meta(meta) if meta else "",
        f"<p>{scored} scored records in {len(summary['configs'])} configurations; "
        f"{len(summary['gold_failures'])} items not scored (gold failed). Percentages are of "
        "scored items; filter-value accuracy is over items with filter values to check (count in "
        f"brackets); latency percentiles: {PERCENTILE_METHOD}.</p>",
        "<h2>Results</h2>", _html_table(main_table(summary)),
        "<h2>Plots</h2>", plot_html,
        "<h2>Where the time goes, per question</h2>", _html_table(cost_table(summary)),
        "<h2>Execution accuracy by category, % (n)</h2>",
        _html_table(category_table(summary, "ex")),
        *(["<h2>Grounding: the gold's rows that lookup and entity linking resolved</h2>",
           _html_table(grounding_table(summary))]
          if any(m.get("grounding") for m in summary["configs"].values()) else []),
        "<h2>Semantic accuracy by category, % (n)</h2>",
        _html_table(category_table(summary, "semantic")),
        "<h2>Which tier decided, % (count)</h2>", _html_table(tier_table(summary)),
        "<h2>Gold failures (not scored)</h2>", _gold_failures_html(summary),
        "<h2>Failures</h2>", _failure_browser(summary, records),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(body)
        + f"\n<script>{_FILTER_SCRIPT}</script>\n</body></html>\n"
    )


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def write_reports(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    title: str = "groundsql evaluation",
    meta: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Write report.json, report.md and report.html into `out_dir`; returns their paths."""
    meta = dict(meta or {})
    summary = summarize(records)
    out_dir = Path(out_dir)
    writable_folder(out_dir, "the reports (--out)")
    paths = {"json": out_dir / JSON_FILE, "markdown": out_dir / MARKDOWN_FILE,
             "html": out_dir / HTML_FILE}
    document = {"title": title, "meta": meta, **summary}
    # default=str: meta may carry paths or dates; the report must not fail over them.
    texts = {"json": json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n",
             "markdown": render_markdown(summary, title, meta),
             "html": render_html(summary, records, title, meta)}
    for kind, text in texts.items():
        try:
            write_text_atomic(paths[kind], text)
        except OSError as err:
            raise GroundsqlError(f"cannot write {paths[kind]}: {reason(err)} (the results are kept in "
                                 f"{out_dir}; the same command writes the reports again)") from None
    return paths
