"""Fill a database's schema with synthetic rows: the variants a test suite is made of.

`fill_variants(source, out_dir, n)` writes `out_dir/variant_00.sqlite` ... `variant_{n-1}`,
each created from the source's own CREATE statements (types, constraints and quirks exactly as
written) and filled with believable rows (see values.py). Variant 0 keeps the source's rows
unchanged and only fills the tables the source leaves empty (plus a row for each planted value
the source lacks); the other variants are drawn afresh from the source's distributions. The
source is opened read-only and never changed; equal inputs give byte-identical files.

How the constraints are kept:
- order: tables are filled parents first, by strongly connected components of the foreign-key
  graph in topological order;
- self-references and cycles: inside a component, a reference to a table not filled yet (or to
  the row's own table) is deferred: the rows go in with NULL there, or a placeholder where the
  column is NOT NULL (rows are inserted with foreign_keys OFF), then each is UPDATEd to an
  existing key (a self-reference to an earlier row, so hierarchies are trees);
- keys and UNIQUE: tracked in memory while generating; a row the database still refuses
  (CHECK, collations, expression indexes) is regenerated a bounded number of times, then skipped;
- at the end, references the synthetic rows still leave dangling (PRAGMA foreign_key_check, or a
  NOT EXISTS query for foreign keys SQLite cannot check itself) are set NULL or their rows deleted.
Foreign keys to a missing table or missing columns are plain columns; foreign keys to columns that
are not a key still take existing values.
"""

from __future__ import annotations

import bisect
import logging
import random
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from groundsql.testsuite.values import ColumnSpec, derive_values, fresh_values, observed_values

__all__ = ["FillPlan", "fill_variants"]

log = logging.getLogger("groundsql")

_ATTEMPTS = 25  # regenerations of one refused row before it is skipped
_GIVE_UP_AFTER = 5  # consecutive skipped rows after which a table keeps what it has
_PROFILE_ROWS = 5_000  # original rows read per table to learn its distributions
_REPAIR_ROUNDS = 6  # deleting a row can leave its own children dangling: a few rounds
_UNIQUE_TRIES = 10  # draws of a new unique value before it gets a suffix
_MIN_ROWS = 5  # fewest rows of a table drawn afresh (unless its keys allow fewer)
_MAX_ROWS = 2_000  # most rows of a table drawn afresh: enough to tell queries apart, and fast


@dataclass(frozen=True)
class FillPlan:
    rows_per_table: int = 30  # target rows for tables without original rows
    null_rate: float = 0.1  # share of NULLs in nullable, non-key columns
    duplicate_rate: float = 0.15  # share of repeated values in non-unique columns
    # (table, column) -> values that must appear in that column (case-insensitive names).
    planted: Mapping[tuple[str, str], Sequence[object]] = field(default_factory=dict)


def fill_variants(
    source: Path, out_dir: Path, n: int, seed: int = 0, plan: FillPlan = FillPlan()
) -> list[Path]:
    """Write n filled variants of the SQLite database at `source`; return their paths."""
    source, out_dir = Path(source).resolve(), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with closing(_open_read_only(source)) as conn:
        schema = _read_schema(conn)
        originals = {t.name: _read_original(conn, t) for t in schema.tables}
    planted = _planted(plan.planted, schema)
    paths = []
    for i in range(n):
        path = out_dir / f"variant_{i:02d}.sqlite"
        rng = random.Random(seed * 1000 + i)
        _build_variant(source, path, schema, originals, planted, plan, rng, keep_original=i == 0)
        paths.append(path)
    return paths


def _open_read_only(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    # Benchmark databases hold stray non-UTF-8 bytes; they only feed the value distributions
    # here (variant 0 copies the rows byte for byte through ATTACH).
    conn.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return conn


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# -- the schema -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Column:
    name: str
    not_null: bool  # NOT NULL, or part of the primary key (never NULL here, whatever SQLite allows)
    spec: ColumnSpec


@dataclass(frozen=True)
class _ForeignKey:
    id: int  # as PRAGMA foreign_key_list and foreign_key_check number it
    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]
    checked: bool  # the parent columns are a key, so PRAGMA foreign_key_check can check it


@dataclass(frozen=True)
class _Table:
    name: str
    columns: tuple[_Column, ...]  # the insertable ones: generated columns are left out
    primary_key: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...]  # the primary key and every UNIQUE constraint or index
    foreign_keys: tuple[_ForeignKey, ...]
    rowid_alias: str | None  # the INTEGER PRIMARY KEY column, which must hold integers
    has_rowid: bool

    def column(self, name: str) -> _Column:
        return next(c for c in self.columns if c.name == name)


@dataclass(frozen=True)
class _Schema:
    encoding: str
    tables: tuple[_Table, ...]  # in creation order
    before: tuple[str, ...]  # CREATE TABLE and CREATE INDEX, run before the rows go in
    after: tuple[str, ...]  # views and triggers, after (a trigger must not rewrite our rows)

    def table(self, name: str) -> _Table:
        return next(t for t in self.tables if t.name == name)


def _read_schema(conn: sqlite3.Connection) -> _Schema:
    entries = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid").fetchall()
    virtual = [name for kind, name, sql in entries if kind == "table" and sql and _is_virtual(sql)]
    before, after, names, sqls = [], [], [], {}
    for kind, name, sql in entries:
        if sql is None or name.startswith("sqlite_"):  # autoindexes, sqlite_sequence, stats
            continue
        (before if kind in ("table", "index") else after).append(sql)
        shadow = any(name.startswith(f"{v}_") for v in virtual)  # a virtual table's storage
        if kind == "table" and not _is_virtual(sql) and not shadow:
            names.append(name)
            sqls[name] = sql
    bare = {name: _bare_table(conn, name, sqls[name]) for name in names}
    by_lower = {name.lower(): table for name, table in bare.items()}
    tables = tuple(
        _Table(t.name, t.columns, t.primary_key, t.unique, _foreign_keys(conn, t, by_lower),
               t.rowid_alias, t.has_rowid)
        for t in bare.values()
    )
    encoding = conn.execute("PRAGMA encoding").fetchone()[0]
    return _Schema(encoding, tables, tuple(before), tuple(after))


def _is_virtual(sql: str) -> bool:
    return re.match(r"\s*CREATE\s+VIRTUAL\s", sql, re.IGNORECASE) is not None


def _bare_table(conn: sqlite3.Connection, name: str, sql: str) -> _Table:
    """A table without its foreign keys (they need every table read first)."""
    # cid, name, type, notnull, default, pk, hidden (hidden != 0: generated or virtual-table column)
    info = conn.execute(f"PRAGMA table_xinfo({_q(name)})").fetchall()
    primary_key = tuple(row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5]))
    columns = tuple(
        _Column(row[1], bool(row[3]) or row[1] in primary_key,
                ColumnSpec(name, row[1], row[2] or ""))
        for row in info
        if row[6] == 0
    )
    has_rowid = re.search(r"\)\s*WITHOUT\s+ROWID\s*;?\s*$", sql, re.IGNORECASE) is None
    declared = {row[1]: (row[2] or "").strip().upper() for row in info}
    single = primary_key[0] if len(primary_key) == 1 else None
    alias = single if has_rowid and single and declared[single] == "INTEGER" else None
    unique = [primary_key] if primary_key else []
    for row in conn.execute(f"PRAGMA index_list({_q(name)})").fetchall():
        index, is_unique = row[1], row[2]
        if not is_unique:
            continue
        parts = sorted(conn.execute(f"PRAGMA index_info({_q(index)})").fetchall())
        if any(cid < 0 for _, cid, _ in parts):  # an expression: left to the insert's own check
            continue
        cols = tuple(col for _, _, col in parts)
        if cols and cols not in unique:
            unique.append(cols)
    return _Table(name, columns, primary_key, tuple(unique), (), alias, has_rowid)


def _foreign_keys(
    conn: sqlite3.Connection, table: _Table, by_lower: dict[str, _Table]
) -> tuple[_ForeignKey, ...]:
    # id, seq, table, from, to, on_update, on_delete, match
    rows = conn.execute(f"PRAGMA foreign_key_list({_q(table.name)})").fetchall()
    grouped: dict[int, list[tuple]] = {}
    for row in sorted(rows, key=lambda r: (r[0], r[1])):
        grouped.setdefault(row[0], []).append(row)
    keys = []
    for fk_id, parts in grouped.items():
        parent = by_lower.get(parts[0][2].lower())
        columns = _resolve(table, [p[3] for p in parts])
        if parent is None or columns is None:
            log.debug("%s: reference to missing %s: a plain column", table.name, parts[0][2])
            continue
        targets = [p[4] for p in parts]
        # "REFERENCES t" without columns means t's primary key.
        parent_columns = (
            parent.primary_key if all(t is None for t in targets) else _resolve(parent, targets)
        )
        if not parent_columns or len(parent_columns) != len(columns):
            continue
        key_sets = {frozenset(c.lower() for c in u) for u in parent.unique}
        checked = frozenset(c.lower() for c in parent_columns) in key_sets
        keys.append(_ForeignKey(fk_id, columns, parent.name, tuple(parent_columns), checked))
    return tuple(keys)


def _resolve(table: _Table, names: Sequence[str | None]) -> tuple[str, ...] | None:
    """Column names as the table spells them (SQLite compares them case-insensitively)."""
    spelled = {c.name.lower(): c.name for c in table.columns}
    resolved = tuple(spelled.get((n or "").lower()) for n in names)
    return None if any(n is None for n in resolved) else resolved  # type: ignore[return-value]


def _components(tables: Sequence[_Table]) -> list[list[_Table]]:
    """Strongly connected components of the foreign-key graph (Tarjan's algorithm), parents
    before children; inside a component, tables whose references to the others may be NULL
    come first, so the deferred references are the nullable ones when the schema allows."""
    by_name = {t.name: t for t in tables}
    position = {t.name: i for i, t in enumerate(tables)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[_Table]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for fk in by_name[name].foreign_keys:
            if fk.parent not in index:
                visit(fk.parent)
                low[name] = min(low[name], low[fk.parent])
            elif fk.parent in on_stack:
                low[name] = min(low[name], index[fk.parent])
        if low[name] == index[name]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == name:
                    break
            components.append(sorted((by_name[m] for m in members), key=lambda t: (
                _required_links(t, members), position[t.name])))

    for table in tables:
        if table.name not in index:
            visit(table.name)
    return components


def _required_links(table: _Table, members: Sequence[str]) -> int:
    return sum(
        1 for fk in table.foreign_keys
        if fk.parent in members and fk.parent != table.name
        and any(table.column(c).not_null for c in fk.columns)
    )


# -- the source's rows ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Original:
    count: int
    values: dict[str, list[object]]  # column -> its values in the first rows, NULLs included


def _read_original(conn: sqlite3.Connection, table: _Table) -> _Original:
    count = conn.execute(f"SELECT COUNT(*) FROM {_q(table.name)}").fetchone()[0]
    if not count:
        return _Original(0, {})
    names = [c.name for c in table.columns]
    rows = conn.execute(
        f"SELECT {', '.join(map(_q, names))} FROM {_q(table.name)} LIMIT {_PROFILE_ROWS}"
    ).fetchall()
    return _Original(count, {name: [row[i] for row in rows] for i, name in enumerate(names)})


def _planted(
    wanted: Mapping[tuple[str, str], Sequence[object]], schema: _Schema
) -> dict[tuple[str, str], list[object]]:
    """The planted values by (table, column) as the schema spells them; a value planted in a
    reference column is planted in the referenced key too, so the reference can exist."""
    spelled = {
        (t.name.lower(), c.name.lower()): (t.name, c.name) for t in schema.tables for c in t.columns
    }
    planted: dict[tuple[str, str], list[object]] = {}
    for (table, column), values in wanted.items():
        target = spelled.get((table.lower(), column.lower()))
        if target is None:
            log.debug("planted values for unknown column %s.%s ignored", table, column)
            continue
        _add_values(planted, target, values)
    changed = True
    while changed:  # up the reference chains; ends because values are only ever added
        changed = False
        for table in schema.tables:
            for fk in table.foreign_keys:
                if len(fk.columns) == 1 and (table.name, fk.columns[0]) in planted:
                    values = planted[(table.name, fk.columns[0])]
                    changed |= _add_values(planted, (fk.parent, fk.parent_columns[0]), values)
    return planted


def _add_values(
    planted: dict[tuple[str, str], list[object]], key: tuple[str, str], values: Sequence[object]
) -> bool:
    present = planted.setdefault(key, [])
    known = {_key(v) for v in present}
    added = False
    for value in values:
        if value is not None and _key(value) not in known:
            present.append(value)
            known.add(_key(value))
            added = True
    return added


def _key(value: object) -> object:
    """A value as uniqueness sees it: 3, 3.0 and '3' are one key (column affinity makes them so)."""
    if isinstance(value, (bool, int, float, str)):
        try:
            return float(value)
        except (ValueError, OverflowError):  # text, or an int beyond any float
            return value
    return value


# -- one variant ------------------------------------------------------------------------------


def _build_variant(
    source: Path, path: Path, schema: _Schema, originals: dict[str, _Original],
    planted: dict[tuple[str, str], list[object]], plan: FillPlan, rng: random.Random,
    keep_original: bool,
) -> None:
    for stale in (path, path.with_name(path.name + "-journal")):
        stale.unlink(missing_ok=True)
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rwc", uri=True, isolation_level=None)
    try:
        conn.execute(f"PRAGMA encoding = '{schema.encoding}'")  # ATTACH needs the source's
        conn.execute("PRAGMA journal_mode = MEMORY")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA foreign_keys = OFF")  # cycles need rows in before their references
        for sql in schema.before:
            _create(conn, sql)
        protected = _copy_original(conn, source, schema, originals) if keep_original else {}
        conn.execute("BEGIN")
        _Variant(conn, schema, originals, planted, plan, rng, keep_original).fill()
        _repair_references(conn, schema, protected)
        conn.execute("COMMIT")
        for sql in schema.after:
            _create(conn, sql)
        result = conn.execute("PRAGMA integrity_check").fetchall()
        if result != [("ok",)]:
            raise RuntimeError(f"{path.name} failed its integrity check: {result[:3]}")
    except BaseException:
        conn.close()
        path.unlink(missing_ok=True)  # no half-filled variant left behind
        raise
    conn.close()


def _create(conn: sqlite3.Connection, sql: str) -> None:
    try:
        conn.execute(sql)
    except sqlite3.OperationalError as err:
        if "already exists" not in str(err):  # a virtual table's shadow tables create themselves
            raise


def _copy_original(
    conn: sqlite3.Connection, source: Path, schema: _Schema, originals: dict[str, _Original]
) -> dict[str, set[int]]:
    """Copy the source's rows byte for byte (rowids too); return the copied rowids per table,
    which the repair pass must leave alone even where the source itself is inconsistent."""
    conn.execute("ATTACH DATABASE ? AS src", (f"{source.as_uri()}?mode=ro",))
    protected: dict[str, set[int]] = {}
    try:
        conn.execute("BEGIN")
        for table in schema.tables:
            if not originals[table.name].count:
                continue
            names = [_q(c.name) for c in table.columns]
            keep_rowid = table.has_rowid and table.rowid_alias is None and not any(
                c.name.lower() in ("rowid", "oid", "_rowid_") for c in table.columns)
            cols = ", ".join((["rowid"] if keep_rowid else []) + names)
            name = _q(table.name)
            conn.execute(f"INSERT INTO main.{name} ({cols}) SELECT {cols} FROM src.{name}")
            if table.has_rowid:
                copied = conn.execute(f"SELECT rowid FROM main.{name}")
                protected[table.name] = {rowid for (rowid,) in copied}
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("DETACH DATABASE src")
    return protected


@dataclass
class _Row:
    locator: tuple[object, ...]  # (rowid,), or the primary key of a WITHOUT ROWID table
    forced: dict[str, object]  # planted values of the row, honoured by deferred references


class _Variant:
    """Fills every table of one variant, component by component."""

    def __init__(self, conn, schema, originals, planted, plan, rng, keep_original) -> None:
        self.conn: sqlite3.Connection = conn
        self.schema: _Schema = schema
        self.originals: dict[str, _Original] = originals
        self.planted: dict[tuple[str, str], list[object]] = planted
        self.plan: FillPlan = plan
        self.rng: random.Random = rng
        self.keep_original: bool = keep_original

    def fill(self) -> None:
        for component in _components(self.schema.tables):
            members = {t.name for t in component}
            filled: set[str] = set()
            deferred = []
            for table in component:
                waiting = members - filled  # the table itself and the members after it
                later = tuple(fk for fk in table.foreign_keys if fk.parent in waiting)
                rows = _TableFiller(self, table, later).run() if self._gets_rows(table) else []
                deferred.extend((table, fk, rows) for fk in later)
                filled.add(table.name)
            for table, fk, rows in deferred:
                self._link(table, fk, rows)

    def _gets_rows(self, table: _Table) -> bool:
        """Whether the table gets new rows: always, but in variant 0 a table the source filled
        only gets rows for planted values (which the table filler checks are missing)."""
        if not (self.keep_original and self.originals[table.name].count):
            return True
        return any((table.name, c.name) in self.planted for c in table.columns)

    def _link(self, table: _Table, fk: _ForeignKey, rows: list[_Row]) -> None:
        """Point a deferred reference of each new row at an existing parent row."""
        if not rows:
            return
        nullable = not any(table.column(c).not_null for c in fk.columns)
        parent = self.schema.table(fk.parent)
        order = "rowid" if parent.has_rowid else "NULL"
        where = " AND ".join(f"{_q(c)} IS NOT NULL" for c in fk.parent_columns)
        found = self.conn.execute(
            f"SELECT {order}, {', '.join(map(_q, fk.parent_columns))} FROM {_q(parent.name)} "
            f"WHERE {where} ORDER BY 1"
        ).fetchall()
        rowids = [r[0] for r in found]
        targets = [tuple(r[1:]) for r in found]
        self_tree = parent.name == table.name and table.has_rowid
        one_each = any(set(u) <= set(fk.columns) for u in table.unique)
        taken: set[tuple] = set()
        for row in rows:
            wanted = {i: row.forced[c] for i, c in enumerate(fk.columns) if c in row.forced}
            candidates = _matching(targets, wanted) if wanted else []  # planted: as planted
            if not candidates:
                if nullable and self.rng.random() < self.plan.null_rate:
                    continue
                candidates = targets
                if self_tree:
                    # A row refers to an earlier one (a tree, as in employee -> manager); the
                    # first is the root: NULL, or itself when the reference may not be NULL.
                    earlier = bisect.bisect_left(rowids, row.locator[0])
                    if not earlier and nullable:
                        continue
                    candidates = targets[:earlier] if earlier else targets[:1]
            if one_each:
                candidates = [t for t in candidates if tuple(map(_key, t)) not in taken]
            self._point(table, fk, row, candidates, nullable, taken)

    def _point(self, table: _Table, fk: _ForeignKey, row: _Row, candidates: list[tuple],
               nullable: bool, taken: set[tuple]) -> None:
        """UPDATE the row to refer to one of the candidates; failing that, NULL the reference,
        or delete the row when it may not be NULL (the repair pass then mends its children)."""
        where = _locate(table)
        sets = ", ".join(f"{_q(c)} = ?" for c in fk.columns)
        for target in self.rng.sample(candidates, min(5, len(candidates))):
            try:
                self.conn.execute(
                    f"UPDATE {_q(table.name)} SET {sets} WHERE {where}", (*target, *row.locator)
                )
            except sqlite3.DatabaseError:  # UNIQUE or CHECK: try another parent
                continue
            taken.add(tuple(map(_key, target)))
            return
        if nullable:
            nulls = ", ".join(f"{_q(c)} = NULL" for c in fk.columns)
            self.conn.execute(f"UPDATE {_q(table.name)} SET {nulls} WHERE {where}", row.locator)
        else:
            self.conn.execute(f"DELETE FROM {_q(table.name)} WHERE {where}", row.locator)


def _matching(keys: list[tuple], wanted: dict[int, object]) -> list[tuple]:
    """The parent keys whose i-th value is wanted[i] (a planted reference)."""
    return [k for k in keys if all(_key(k[i]) == _key(v) for i, v in wanted.items())]


def _locate(table: _Table) -> str:
    """The WHERE clause that finds a row again by its _Row.locator: rowid, or primary key."""
    if table.has_rowid:
        return "rowid = ?"
    return " AND ".join(f"{_q(c)} = ?" for c in table.primary_key)


class _TableFiller:
    """Generates and inserts the new rows of one table."""

    def __init__(self, variant: _Variant, table: _Table, later: tuple[_ForeignKey, ...]) -> None:
        self.v = variant
        self.table = table
        self.rng = variant.rng
        self.plan = variant.plan
        self.later = later  # references resolved after the component is filled
        self.now = tuple(fk for fk in table.foreign_keys if fk not in later)
        original = variant.originals[table.name]
        self.draws = {
            c.name: observed_values(c.spec, original.values.get(c.name, ()), fresh_values(c.spec))
            for c in table.columns
        }
        self.fresh = {c.name: fresh_values(c.spec) for c in table.columns}
        self.key_columns = {c for cols in table.unique for c in cols}
        self.single_unique = {cols[0] for cols in table.unique if len(cols) == 1}
        self.references = {c for fk in table.foreign_keys for c in fk.columns}
        self.used: dict[tuple[str, ...], set[tuple]] = {cols: set() for cols in table.unique}
        self.seen: dict[str, list[object]] = {c.name: [] for c in table.columns}
        self._remember_existing()
        self.parents = {fk.id: self._parent_rows(fk) for fk in self.now}
        self.queues = self._key_queues(original)
        self.queue_start: dict[str, int] = {}
        self.reserved: dict[str, set[object]] = {}
        self.next_int: dict[str, int] = {}
        names = [c.name for c in table.columns]
        self.insert_sql = (f"INSERT INTO {_q(table.name)} ({', '.join(map(_q, names))}) "
                           f"VALUES ({', '.join('?' * len(names))})")
        self.rows: list[_Row] = []

    # -- state ---------------------------------------------------------------------------

    def _remember_existing(self) -> None:
        """Variant 0's copied rows count as taken keys and as values to repeat."""
        names = [c.name for c in self.table.columns]
        select = f"SELECT {', '.join(map(_q, names))} FROM {_q(self.table.name)}"
        for row in self.v.conn.execute(select):
            self._remember(dict(zip(names, row)))

    def _remember(self, row: dict[str, object]) -> None:
        for cols in self.table.unique:
            values = tuple(row.get(c) for c in cols)
            if all(v is not None for v in values):
                self.used[cols].add(tuple(map(_key, values)))
        for name, value in row.items():
            if value is not None:
                self.seen[name].append(value)

    def _parent_rows(self, fk: _ForeignKey) -> list[tuple]:
        where = " AND ".join(f"{_q(c)} IS NOT NULL" for c in fk.parent_columns)
        columns = ", ".join(map(_q, fk.parent_columns))
        return self.v.conn.execute(
            f"SELECT DISTINCT {columns} FROM {_q(fk.parent)} WHERE {where}"
        ).fetchall()

    def _key_queues(self, original: _Original) -> dict[str, list[object]]:
        """For single-column keys: the original's distinct values, used before new ones (so the
        ids a question names still exist); the primary key keeps its order, others shuffle."""
        queues = {}
        for name in sorted(self.single_unique - self.references):
            values = list(dict.fromkeys(v for v in original.values.get(name, ()) if v is not None))
            if name not in self.table.primary_key:
                self.rng.shuffle(values)
            queues[name] = values
        return queues

    # -- the rows ------------------------------------------------------------------------

    def run(self) -> list[_Row]:
        n_rows, slots = self._plan_rows()
        failures = 0
        leftovers = []
        for i in range(n_rows):
            forced = slots.get(i, {})
            if self._add_row(forced):
                failures = 0
                continue
            failures += 1
            if forced:
                leftovers.append(forced)
            if failures >= _GIVE_UP_AFTER:
                log.debug("%s: stopped after %d rows it could not fill", self.table.name, failures)
                break
        for forced in leftovers:  # a planted value gets a second chance in a row of its own
            self._add_row(forced)
        return self.rows

    def _plan_rows(self) -> tuple[int, dict[int, dict[str, object]]]:
        """How many rows, and which rows carry which planted values. The i-th planted value of
        every column goes into the same row, so a query's conjunction of filters can match;
        non-unique columns get a second copy somewhere, but never in every row."""
        original = self.v.originals[self.table.name].count
        planted = self._planted_here()
        for name, values in planted.items():
            if name in self.single_unique:
                self.reserved[name] = {_key(v) for v in values}
        most = max((len(v) for v in planted.values()), default=0)
        if self.v.keep_original and original:
            # Variant 0 keeps the source's rows: only a new row for each missing planted value.
            rows = {j: {c: v[j] for c, v in planted.items() if j < len(v)} for j in range(most)}
            return most, rows
        base = original or self.plan.rows_per_table
        # Sizes vary between variants (LIMIT and COUNT mistakes show), never below a handful
        # (a 3-row table tells little apart).
        n_rows = round(base * self.rng.uniform(0.7, 1.3))
        n_rows = max(min(_MIN_ROWS, self.plan.rows_per_table), n_rows)
        n_rows = min(n_rows, _MAX_ROWS, self._capacity())
        if not most:
            return n_rows, {}
        n_rows = max(n_rows, most + 1)
        rows = self.rng.sample(range(n_rows), most)
        slots: dict[int, dict[str, object]] = {}
        for name, values in planted.items():
            holding = set()
            for j, value in enumerate(values):
                slots.setdefault(rows[j], {})[name] = value
                holding.add(rows[j])
            if name in self.single_unique:
                continue
            for value in values:
                extra = self.rng.randrange(n_rows)
                if self.rng.random() < 0.5 and extra not in holding and len(holding) + 1 < n_rows:
                    slots.setdefault(extra, {})[name] = value
                    holding.add(extra)
        return n_rows, slots

    def _planted_here(self) -> dict[str, list[object]]:
        """Planted values of this table's columns that are not there yet."""
        planted = {}
        for column in self.table.columns:
            values = self.v.planted.get((self.table.name, column.name), [])
            present = {_key(v) for v in self.seen[column.name]}
            missing = [v for v in values if _key(v) not in present]
            if missing:
                planted[column.name] = missing
        return planted

    def _capacity(self) -> int:
        """The most rows the unique keys made only of references allow (a link table's pairs)."""
        capacity = 10**9
        for cols in self.table.unique:
            involved = [fk for fk in self.now if set(fk.columns) & set(cols)]
            covered = {c for fk in involved for c in fk.columns}
            if set(cols) <= covered:
                product = 1
                for fk in involved:
                    product *= len(self.parents[fk.id])
                capacity = min(capacity, product)
        return capacity

    def _add_row(self, forced: dict[str, object]) -> bool:
        for attempt in range(_ATTEMPTS):
            row = self._make_row(forced, attempt)
            if row is None:  # no parent row left to refer to
                return False
            if self._fits(row, forced) and self._insert(row, forced):
                return True
        return False

    def _make_row(self, forced: dict[str, object], attempt: int) -> dict[str, object] | None:
        row: dict[str, object] = {}
        for fk in self.now:
            target = self._reference(fk, forced)
            if target is None:
                return None
            for name, value in zip(fk.columns, target):
                row.setdefault(name, value)  # overlapping keys: the first reference decides
        for fk in self.later:  # filled in by _Variant._link once the parents exist
            for name in fk.columns:
                column = self.table.column(name)
                placeholder = self._value(column, attempt) if column.not_null else None
                row.setdefault(name, forced.get(name, placeholder))
        for column in self.table.columns:
            if column.name in row:
                continue
            if column.name in forced:
                row[column.name] = forced[column.name]
            else:
                row[column.name] = self._value(column, attempt)
        fixed = set(forced) | self.key_columns | self.references
        derive_values([c.spec for c in self.table.columns], row, fixed)
        return row

    def _reference(self, fk: _ForeignKey, forced: dict[str, object]) -> tuple | None:
        """The key of the parent row this row refers to, all NULLs, or None if there is none."""
        pool = self.parents[fk.id]
        nulls = (None,) * len(fk.columns)
        nullable = not any(self.table.column(c).not_null for c in fk.columns)
        wanted = {i: forced[c] for i, c in enumerate(fk.columns) if c in forced}
        if wanted:
            matching = _matching(pool, wanted)
            if matching:
                return self._pick_parent(fk, matching) or self._pick_parent(fk, pool)
        if nullable and self.rng.random() < self.plan.null_rate:
            return nulls
        if not pool:
            return nulls if nullable else None
        return self._pick_parent(fk, pool)

    def _pick_parent(self, fk: _ForeignKey, pool: list[tuple]) -> tuple | None:
        unique = next((cols for cols in self.table.unique if set(cols) <= set(fk.columns)), None)
        if unique is None:
            return self.rng.choice(pool)
        # One row per parent (a one-to-one table): a parent not referred to yet.
        positions = [fk.columns.index(c) for c in unique]
        free = [p for p in pool if tuple(_key(p[i]) for i in positions) not in self.used[unique]]
        return self.rng.choice(free) if free else None

    def _value(self, column: _Column, attempt: int) -> object:
        name = column.name
        if name in self.single_unique:
            return self._unique_value(column, attempt)
        key = name in self.key_columns
        if not column.not_null and not key and self.rng.random() < self.plan.null_rate:
            return None
        seen = self.seen[name]
        if seen and not key and self.rng.random() < self.plan.duplicate_rate:
            return self.rng.choice(seen)  # repeats tell DISTINCT from its absence
        return self.draws[name](self.rng)

    def _unique_value(self, column: _Column, attempt: int) -> object:
        name = column.name
        taken = self.used[(name,)]
        reserved = self.reserved.get(name, set())
        value = self._queued(name, attempt, taken, reserved)
        if value is not None:
            return value
        if column.spec.kind == "int" or name == self.table.rowid_alias:
            return self._next_int(name, taken, reserved)
        # Redraw here rather than fail the whole row: original values first, then new ones,
        # then (a small value list exhausted) a suffix.
        value = None
        for tries in range(_UNIQUE_TRIES):
            value = (self.draws if tries < 3 else self.fresh)[name](self.rng)
            if value is None or ((_key(value),) not in taken and _key(value) not in reserved):
                return value
        return _suffixed(value, self.rng)

    def _queued(self, name: str, attempt: int, taken: set[tuple], reserved: set[object]) -> object:
        """The next original key not taken yet; a retry looks further along, so a value that
        keeps failing (a CHECK, another column's collision) is left for a later row, not lost."""
        queue = self.queues.get(name, [])
        free = lambda v: (_key(v),) not in taken and _key(v) not in reserved  # noqa: E731
        position = self.queue_start.get(name, 0)
        while position < len(queue) and not free(queue[position]):
            position += 1
        self.queue_start[name] = position
        pick = position + attempt
        return queue[pick] if pick < len(queue) and free(queue[pick]) else None

    def _next_int(self, name: str, taken: set[tuple], reserved: set[object]) -> int:
        """Ids count up from 1 (or past the largest id there is), with the odd gap, so an id
        differs from a row number and from COUNT(*)."""
        if name not in self.next_int:  # (planted ids are skipped below, not counted past)
            keys = [k for (k,) in taken] + [_key(v) for v in self.queues.get(name, [])]
            numbers = [int(k) for k in keys if isinstance(k, float) and k.is_integer()]
            self.next_int[name] = max(numbers, default=0) + 1
        value = self.next_int[name]
        if value > 1 and self.rng.random() < 0.1:
            value += 1
        while (float(value),) in taken or float(value) in reserved:
            value += 1
        self.next_int[name] = value + 1
        return value

    def _fits(self, row: dict[str, object], forced: dict[str, object]) -> bool:
        for cols in self.table.unique:
            values = tuple(row.get(c) for c in cols)
            if all(v is not None for v in values) and tuple(map(_key, values)) in self.used[cols]:
                return False
        for name, reserved in self.reserved.items():
            if name not in forced and _key(row.get(name)) in reserved:
                return False  # a planted key belongs to its planted row
        return True

    def _insert(self, row: dict[str, object], forced: dict[str, object]) -> bool:
        values = [row.get(c.name) for c in self.table.columns]
        try:
            cursor = self.v.conn.execute(self.insert_sql, values)
        except (sqlite3.DatabaseError, OverflowError) as err:  # CHECK, collations, type mismatch
            log.debug("%s: row refused (%s)", self.table.name, err)
            return False
        if self.table.has_rowid:
            locator: tuple[object, ...] = (cursor.lastrowid,)
        else:
            locator = tuple(row[c] for c in self.table.primary_key)
        later_columns = {c for fk in self.later for c in fk.columns}
        self.rows.append(_Row(locator, {c: v for c, v in forced.items() if c in later_columns}))
        self._remember(row)
        return True


def _suffixed(value: object, rng: random.Random) -> object:
    """A colliding unique value made different, as a last resort."""
    if isinstance(value, str):
        return f"{value} {rng.randint(2, 999)}"
    if isinstance(value, float):
        return round(value + rng.random(), 4)
    if isinstance(value, int):
        return value + rng.randint(1, 10**6)
    return value


# -- the final check of references ------------------------------------------------------------


def _repair_references(
    conn: sqlite3.Connection, schema: _Schema, protected: dict[str, set[int]]
) -> None:
    """NULL or delete the new rows whose references still dangle (the source's own rows in
    variant 0 stay as they are, even where the source itself is inconsistent)."""
    for _ in range(_REPAIR_ROUNDS):
        broken = [
            (table, fk, rowid) for table, fk, rowid in _dangling(conn, schema)
            if rowid not in protected.get(table.name, ())
        ]
        if not broken:
            return
        for table, fk, rowid in broken:
            if any(table.column(c).not_null for c in fk.columns):
                conn.execute(f"DELETE FROM {_q(table.name)} WHERE rowid = ?", (rowid,))
            else:
                nulls = ", ".join(f"{_q(c)} = NULL" for c in fk.columns)
                conn.execute(f"UPDATE {_q(table.name)} SET {nulls} WHERE rowid = ?", (rowid,))
    log.warning("references still dangle after %d repair rounds", _REPAIR_ROUNDS)


def _dangling(
    conn: sqlite3.Connection, schema: _Schema
) -> Iterator[tuple[_Table, _ForeignKey, int]]:
    for table in schema.tables:
        if not table.foreign_keys or not table.has_rowid:
            continue
        by_id = {fk.id: fk for fk in table.foreign_keys}
        if all(fk.checked for fk in table.foreign_keys):
            try:
                check = f"PRAGMA foreign_key_check({_q(table.name)})"
                for _, rowid, _, fk_id in conn.execute(check).fetchall():
                    if fk_id in by_id and rowid is not None:  # others point at missing tables
                        yield table, by_id[fk_id], rowid
                continue
            except sqlite3.OperationalError:  # "foreign key mismatch": check by hand below
                pass
        for fk in table.foreign_keys:
            present = " AND ".join(f"c.{_q(col)} IS NOT NULL" for col in fk.columns)
            pairs = zip(fk.columns, fk.parent_columns)
            match = " AND ".join(f"p.{_q(pc)} = c.{_q(col)}" for col, pc in pairs)
            for (rowid,) in conn.execute(
                f"SELECT c.rowid FROM {_q(table.name)} AS c WHERE {present} "
                f"AND NOT EXISTS (SELECT 1 FROM {_q(fk.parent)} AS p WHERE {match})"
            ).fetchall():
                yield table, fk, rowid
