"""Where the search's candidates are executed to be compared: the database and populated
variants of it.

Execution self-consistency (IESR's reward) asks whether two candidate queries give the same
result. On the real database that question is often vacuous: LogicCat's databases hold no
rows, and on small Spider tables two different queries often agree by accident (both empty,
both one row). So candidates also run on populated variants (testsuite/filler.py) in which
every candidate's filter literals are planted and each candidate's filters meet some joined
rows (testsuite/witness.py): there, queries that differ in meaning tend to differ in result.

On a database that holds no rows, a query that finds nothing anywhere, not even on variants
planted to meet its own filters, is vacuous: two such queries agree only in failing, so their
agreement is no evidence (`vacuous`). On a database with rows, finding nothing there is an
answer about the real data (no student keeps both a cat and a dog, and variants rarely plant
one who does), so agreement on it counts.

Variants are rebuilt whenever a new candidate brings literals or witnesses the current ones
lack; that is milliseconds on these schemas. A non-SQLite database is compared on itself only.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path

from groundsql.config import DatabaseConfig, SafetyConfig
from groundsql.db import Database
from groundsql.errors import DatabaseError, UnsafeSQLError
from groundsql.safety import run_validated
from groundsql.strategies.self_consistency import result_key
from groundsql.testsuite.filler import FillPlan, fill_variants
from groundsql.testsuite.suite import informative, planted_literals, table_columns
from groundsql.testsuite.witness import plant_witnesses

__all__ = ["Probe", "Signature"]

Signature = tuple[tuple[str, ...], ...]
"""A candidate's result on each database of the probe (rows as result_key gives them)."""

_PROBE_EXECUTION = DatabaseConfig(timeout_s=5.0, max_rows=2000)


class Probe:
    """Runs candidate queries on the database and its variants; one per question."""

    def __init__(self, db: Database, policy: SafetyConfig, variants: int, seed: int = 0) -> None:
        self.db, self.policy, self.variants, self.seed = db, policy, variants, seed
        self.source = _sqlite_file(db) if variants else None
        self._built_for: list[str] = []
        self._paths: list[Path] = []
        self._scratch: Path | None = None
        self._cache: dict[str, Signature | None] = {}
        self._informative: dict[str, bool] = {}  # some database gave the query a real result

    def signatures(self, sqls: list[str]) -> dict[str, Signature | None]:
        """Each query's signature (None where it fails to run on the real database)."""
        if self.source is not None and any(s not in self._built_for for s in sqls):
            self._rebuild(list(dict.fromkeys([*self._built_for, *sqls])))
        return {sql: self._signature(sql) for sql in sqls}

    def vacuous(self, sql: str) -> bool:
        """The real database holds no rows, and the query ran but found nothing (no rows,
        NULL, a single 0) on it or on any variant."""
        # An unknown row count (None) is not known to be empty.
        if not all(t.row_count == 0 for t in self.db.introspect().tables):
            return False
        return self.signatures([sql])[sql] is not None and not self._informative[sql]

    def close(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _signature(self, sql: str) -> Signature | None:
        if sql not in self._cache:
            self._cache[sql] = self._run_all(sql)
        return self._cache[sql]

    def _run_all(self, sql: str) -> Signature | None:
        keys = []
        try:
            _, result = run_validated(self.db, sql, self.policy)
        except (UnsafeSQLError, DatabaseError):
            return None
        keys.append(result_key(result))
        found = informative(result.rows)
        for path in self._paths:
            with Database(f"sqlite:///{path}", _PROBE_EXECUTION) as variant:
                try:
                    _, result = run_validated(variant, sql, self.policy)
                    keys.append(result_key(result))
                    found = found or informative(result.rows)
                except (UnsafeSQLError, DatabaseError) as err:
                    keys.append(("error", type(err).__name__))
        self._informative[sql] = found
        return tuple(keys)

    def _rebuild(self, sqls: list[str]) -> None:
        assert self.source is not None
        self.close()
        self._scratch = Path(tempfile.mkdtemp(prefix="groundsql-probe-"))
        schema, _ = table_columns(self.source)
        planted: dict[tuple[str, str], list[object]] = {}
        for sql in sqls:
            for key, values in planted_literals(sql, schema).items():
                planted.setdefault(key, [])
                planted[key] += [v for v in values if v not in planted[key]]
        # Variant 0 keeps the real rows (filling only empty tables); the others are drawn afresh.
        paths = fill_variants(self.source, self._scratch, self.variants + 1, seed=self.seed,
                              plan=FillPlan(planted=planted))
        for i, path in enumerate(paths[1:], start=1):
            rng = random.Random(self.seed * 1000 + i)
            for sql in sqls:
                plant_witnesses(path, sql, rng)
        self._paths = paths
        self._built_for = sqls
        self._cache.clear()


def _sqlite_file(db: Database) -> Path | None:
    if db.dialect != "sqlite" or not db.url.database or db.url.database == ":memory:":
        return None
    path = Path(db.url.database)
    return path if path.is_file() else None
