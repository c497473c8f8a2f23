"""The evaluation harness on MariaDB: the demo database and two Spider databases (concert_singer,
and pets_1 with its foreign keys) copied into the local server score as on SQLite.

`groundsql eval ITEMS.jsonl --config gold` runs once on the SQLite files and once on their
MariaDB copies (tests/spider_engines.py), the golds transpiled from SQLite to MySQL by sqlglot
(tables lowercased, as the copies' are): both runs score 100% EX, and each gold returns the
same rows on both engines, except where the two engines' own semantics differ (KNOWN_DIFFERENT).
Where no server answers the tests skip (they fail in CI); without the shared Spider data too.
"""

from __future__ import annotations

import json
import math
from contextlib import ExitStack
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlglot

import groundsql
from groundsql.config import DatabaseConfig, Settings
from groundsql.demo.findb import build_demo_database
from groundsql.evaluation.runner import load_records
from tests.conftest import REPO, mysql_connect, shared_benchmark, spider_db
from tests.spider_engines import mysql_copy, read_sqlite
from tests.test_end_to_end import _cli
from tests.test_spider_dialects import lowercase_tables

pytestmark = pytest.mark.mysql

SPIDER_DATABASES = ("concert_singer", "pets_1")
SETTINGS = Settings(database=DatabaseConfig(max_rows=100_000))

# Golds whose rows differ between the engines by the engines' own rules, not groundsql's.
KNOWN_DIFFERENT = {
    # SQLite takes a bare column from the row where MAX() found its value; MySQL from any row.
    "concert_singer/16": "select max(capacity), average from stadium",
    # 2014 and 2015 have as many concerts each: LIMIT 1 keeps either, by each engine's order.
    "concert_singer/26": "SELECT YEAR FROM concert GROUP BY YEAR ORDER BY count(*) DESC LIMIT 1",
    "concert_singer/27": "SELECT YEAR FROM concert GROUP BY YEAR ORDER BY count(*) DESC LIMIT 1",
}
# MySQL averages integers to four decimals (div_precision_increment): 10621.6667, not
# 10621.666666666666. Sums of floats may also differ in their last bit (summation order).
ABS_TOL, REL_TOL = 5e-5, 1e-12


def to_mysql(sql: str) -> str:
    tree = sqlglot.parse_one(sql, read="sqlite")
    lowercase_tables(tree)
    return tree.sql(dialect="mysql")


def _items() -> dict[str, list[dict[str, str]]]:
    """Each database's items: the demo's own eval set, and Spider dev's questions on it."""
    dev = json.loads((shared_benchmark("spider_dev") / "dev.json").read_text())
    items = {"demo": [json.loads(line) for line in (REPO / "src/groundsql/demo/eval.jsonl").read_text().splitlines()]}
    for name in SPIDER_DATABASES:
        items[name] = [{"id": f"{name}/{i}", "question": d["question"], "gold_sql": d["query"]}
                       for i, d in enumerate(dev) if d["db_id"] == name]
    return items


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The same items twice, as groundsql JSONL: on the SQLite files, and on MariaDB copies."""
    mysql_connect().close()  # skips (fails in CI) where no server answers
    folder = tmp_path_factory.mktemp("mysql_eval")
    files = {"demo": build_demo_database(folder / "demo.sqlite"), **{n: spider_db(n) for n in SPIDER_DATABASES}}
    items = _items()
    lines: dict[str, list[str]] = {"sqlite": [], "mysql": []}
    with ExitStack() as stack:
        for name, path in files.items():
            url = stack.enter_context(mysql_copy(read_sqlite(path)))
            for item in items[name]:
                common = {"id": item["id"], "question": item["question"]}
                lines["sqlite"].append(json.dumps({**common, "db": f"sqlite:///{path}", "gold_sql": item["gold_sql"]}))
                lines["mysql"].append(json.dumps({**common, "db": url, "gold_sql": to_mysql(item["gold_sql"])}))
        paths = {engine: folder / f"{engine}.jsonl" for engine in lines}
        for engine, text in lines.items():
            paths[engine].write_text("\n".join(text) + "\n")
        yield paths


def _eval(items: Path, out: Path) -> list[dict[str, Any]]:
    done = _cli("eval", str(items), "--config", "gold", "--out", str(out))
    assert done.returncode == 0, done.stderr
    return sorted(load_records(out / "results.jsonl"), key=lambda r: r["item_id"])


def test_gold_scores_100_percent_on_both_engines(benchmark: dict[str, Path], tmp_path: Path) -> None:
    sqlite, mysql = (_eval(benchmark[e], tmp_path / e) for e in ("sqlite", "mysql"))
    assert [r["item_id"] for r in sqlite] == [r["item_id"] for r in mysql] and len(sqlite) == 90 + 45 + 42
    for engine in ("sqlite", "mysql"):
        report = json.loads((tmp_path / engine / "report.json").read_text())
        (scores,) = report["configs"].values()
        assert scores["ex"] == 100.0, (engine, scores)
    for lite, my in zip(sqlite, mysql):
        assert my["ex"] is True and not my["error"], my
        assert my["gold_row_count"] == lite["gold_row_count"], my["item_id"]


def test_gold_rows_are_the_same_on_both_engines(benchmark: dict[str, Path]) -> None:
    lines = {e: [json.loads(line) for line in benchmark[e].read_text().splitlines()] for e in benchmark}
    different = {}
    sessions: dict[str, Any] = {}
    try:
        for lite, my in zip(lines["sqlite"], lines["mysql"]):
            for item in (lite, my):
                if item["db"] not in sessions:
                    sessions[item["db"]] = groundsql.connect(item["db"], settings=SETTINGS)
            expected = _plain(sessions[lite["db"]].run_sql(lite["gold_sql"]).rows)
            actual = _plain(sessions[my["db"]].run_sql(my["gold_sql"]).rows)
            ordered = sqlglot.parse_one(lite["gold_sql"], read="sqlite").args.get("order") is not None
            if not _same(expected, actual, ordered):
                different[lite["id"]] = f"{lite['gold_sql']}\n    sqlite {expected[:3]}, mysql {actual[:3]}"
    finally:
        for session in sessions.values():
            session.close()
    unexplained = {k: v for k, v in different.items() if k not in KNOWN_DIFFERENT}
    assert not unexplained, "\n".join(f"{k}: {v}" for k, v in unexplained.items())


def _plain(rows: tuple[tuple[Any, ...], ...]) -> list[tuple[Any, ...]]:
    return [tuple(float(v) if isinstance(v, Decimal) else v for v in row) for row in rows]


def _same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]], ordered: bool) -> bool:
    if not ordered:
        a, b = sorted(a, key=repr), sorted(b, key=repr)
    return len(a) == len(b) and all(len(x) == len(y) and all(map(_close, x, y)) for x, y in zip(a, b))


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        numbers = isinstance(a, (int, float)) and isinstance(b, (int, float))
        return numbers and math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b
