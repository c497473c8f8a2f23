"""Build a test suite for one gold query (Zhong, Yu and Klein 2020).

1. the query's literals (and values just beside them) are planted, so filters match some rows
   and miss others;
2. candidate variants of the database are filled (variant 0 keeps the original rows), and
   the others get witness rows: joined rows on which the whole WHERE clause holds, and rows
   that miss it by one condition (witness.py); the last keeps only the rows that hold;
3. the gold and its near-miss mutations run on every candidate;
4. distillation keeps the fewest variants that tell the gold from as many mutations as possible,
   plus one on which the gold's result is informative, if any candidate gives one.

Suites are cached on disk, keyed by the database's bytes, the gold query and the parameters, so
an evaluation builds each once. SQLite only for now (the filler writes SQLite files).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import random
import shutil
import sqlite3
import tempfile
import time
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from groundsql.config import DatabaseConfig, data_home
from groundsql.db import Database
from groundsql.errors import GroundsqlError
from groundsql.files import cache_failed, reason, write_text_atomic
from groundsql.evaluation.execution_match import gold_orders
from groundsql.testsuite.distill import distill
from groundsql.testsuite.filler import FillPlan, fill_variants
from groundsql.testsuite.literals import Schema, near_values, query_literals
from groundsql.testsuite.mutations import Keys, mutations
from groundsql.testsuite.witness import plant_witnesses, unique_keys

_MANIFEST = "suite.json"
_VERSION = 3  # bump when the construction changes, so cached suites are rebuilt
SUITE_VERSION = _VERSION  # stored with test-suite scores; older scores are recomputed
_EXECUTION = DatabaseConfig(timeout_s=2.0, max_rows=100_000)
# Mutations are run until this many seconds have passed; a query whose near misses explode
# (cartesian joins on filled data) is tested on the mutations that ran in time.
_MUTATION_BUDGET_S = 30.0

Rows = list[tuple[Any, ...]]


@dataclass(frozen=True)
class TestSuite:
    __test__ = False  # not a pytest test class, despite the name

    directory: Path
    variants: tuple[str, ...]  # file names inside `directory`, variant 0 first
    gold_sql: str
    mutations_total: int
    mutations_killed: int
    informative: bool  # the gold gives a non-trivial result on some variant of the suite
    gold_error: str | None = None  # the gold failed on the original database
    mutations_equivalent: int = 0  # survivors proven to mean the same (not in the total)

    @property
    def paths(self) -> list[Path]:
        return [self.directory / name for name in self.variants]

    @property
    def share(self) -> float:
        return self.mutations_killed / self.mutations_total if self.mutations_total else 1.0


def informative(rows: Rows | None) -> bool:
    """A result that can tell queries apart: not empty, not all NULL, not a single 0."""
    if not rows:
        return False
    values = [v for row in rows for v in row]
    if all(v is None for v in values):
        return False
    return not (len(rows) == 1 and len(rows[0]) == 1 and rows[0][0] in (0, 0.0))


def suite_key(source: Path, gold_sql: str, candidates: int, seed: int) -> str:
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    payload = json.dumps([_VERSION, digest, gold_sql, candidates, seed])
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def build_suite(
    source: Path,
    gold_sql: str,
    *,
    out_dir: Path | None = None,
    candidates: int = 6,
    seed: int = 0,
    max_mutations: int = 60,
) -> TestSuite:
    """The suite for `gold_sql` on the SQLite database `source` (built, or read from cache)."""
    source = Path(source)
    cached_here = out_dir is None
    out_dir = out_dir or data_home() / "testsuites" / suite_key(source, gold_sql, candidates, seed)
    cached = load_suite(out_dir)
    if cached is not None and cached.gold_sql == gold_sql:
        return cached
    schema, keys = table_columns(source)
    plan = FillPlan(planted=planted_literals(gold_sql, schema))
    with tempfile.TemporaryDirectory(prefix="groundsql-suite-") as scratch:
        paths = fill_variants(source, Path(scratch), candidates, seed=seed, plan=plan)
        for i, path in enumerate(paths[1:], start=1):  # variant 0 stays as the filler left it
            # The last holds nothing but witnesses (see plant_witnesses).
            plant_witnesses(path, gold_sql, random.Random(seed * 1000 + i),
                            only_witnesses=i == len(paths) - 1 and i > 1)
        variants = [Database(f"sqlite:///{path}", _EXECUTION) for path in paths]
        gold = [_run(db, gold_sql) for db in variants]
        try:
            near = mutations(gold_sql, "sqlite", limit=max_mutations, schema=schema, keys=keys)
        except sqlglot.errors.SqlglotError:
            near = []  # a gold sqlglot cannot read: the suite is the filled variants alone
        deadline = time.monotonic() + _MUTATION_BUDGET_S
        mutant = []
        for m in near:
            if time.monotonic() > deadline:
                break
            mutant.append([_run(db, m.sql) for db in variants])
        chosen = distill(
            [g if not isinstance(g, str) else None for g in gold],
            [[r if not isinstance(r, str) else None for r in row] for row in mutant],
            gold_orders(gold_sql),
        )
        # A query that reads no table gives the same result on every database: a near miss
        # that survives gives that same result too, so it is an equivalent query, not a miss.
        equivalent = _reads_no_table(gold_sql)
        keep = list(chosen.variants)
        if not any(informative(_rows(gold[i])) for i in keep):
            extra = next((i for i, g in enumerate(gold) if informative(_rows(g))), None)
            if extra is not None:
                keep.append(extra)
        for db in variants:
            db.close()
        out_dir = _folder_for(out_dir, cached_here)
        names = []
        for i in keep:
            name = f"variant_{i:02d}.sqlite"
            shutil.copyfile(paths[i], out_dir / name)
            names.append(name)
    suite = TestSuite(
        directory=out_dir,
        variants=tuple(names),
        gold_sql=gold_sql,
        mutations_total=chosen.killed if equivalent else chosen.total,
        mutations_killed=chosen.killed,
        mutations_equivalent=chosen.total - chosen.killed if equivalent else 0,
        informative=any(informative(_rows(gold[i])) for i in keep),
        gold_error=gold[0] if isinstance(gold[0], str) else None,
    )
    manifest = {**asdict(suite), "directory": None, "version": _VERSION, "source": str(source)}
    write_text_atomic(out_dir / _MANIFEST, json.dumps(manifest, indent=1))
    return suite


def _folder_for(out_dir: Path, cached: bool) -> Path:
    """`out_dir`, made. The cache under the data folder is an optimisation: when it takes no
    files, the suite is built in a temporary folder that lives as long as the process."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        return out_dir
    except OSError as err:
        if not cached:
            raise GroundsqlError(f"cannot write the test suite in {out_dir}: {reason(err)}") from None
        cache_failed("the test-suite cache", out_dir.parent, err)
    scratch = Path(tempfile.mkdtemp(prefix="groundsql-suite-"))
    atexit.register(shutil.rmtree, scratch, True)
    return scratch


def load_suite(directory: Path) -> TestSuite | None:
    try:
        manifest = json.loads((directory / _MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("version") != _VERSION:
        return None
    fields = {k: v for k, v in manifest.items() if k in TestSuite.__dataclass_fields__}
    suite = TestSuite(**{**fields, "directory": directory, "variants": tuple(fields["variants"])})
    return suite if all(p.is_file() for p in suite.paths) else None


def run_on_suite(suite: TestSuite, sql: str) -> list[Rows | str]:
    """`sql`'s result on each variant (an error message where it failed), read-only."""
    results = []
    for path in suite.paths:
        with Database(f"sqlite:///{path}", _EXECUTION) as db:
            results.append(_run(db, sql))
    return results


def _run(db: Database, sql: str) -> Rows | str:
    try:
        return [tuple(row) for row in db.execute(sql).rows]
    except GroundsqlError as err:
        return str(err)


def _reads_no_table(sql: str) -> bool:
    try:
        return sqlglot.parse_one(sql, read="sqlite").find(exp.Table) is None
    except sqlglot.errors.SqlglotError:
        return False


def _rows(result: Rows | str) -> Rows | None:
    return None if isinstance(result, str) else result


def table_columns(source: Path) -> tuple[Schema, Keys]:
    """Each table's columns, and its unique column sets (primary key, UNIQUE indexes)."""
    conn = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    schema: Schema = {}
    keys: Keys = {}
    with closing(conn):
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in (t for t in tables if not t.startswith("sqlite_")):
            schema[table.lower()] = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            keys[table.lower()] = unique_keys(conn, table)
    return schema, keys


def planted_literals(sql: str, schema: dict[str, list[str]]) -> dict[tuple[str, str], list[object]]:
    """What a variant must hold for `sql`'s filters to meet rows: each literal it compares a
    column with, and the values just beside it (near misses)."""
    try:
        found = query_literals(sql, "sqlite", schema)
    except Exception:  # noqa: BLE001 - a query sqlglot cannot read just plants nothing
        return {}
    planted: dict[tuple[str, str], list[object]] = {}
    for key, values in found.items():
        wanted: list[object] = []
        for value in values:
            for v in (value, *near_values(value)):
                if v not in wanted:
                    wanted.append(v)
        planted[key] = wanted
    return planted
