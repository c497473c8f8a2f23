"""Detecting what a database holds, for `groundsql init` to draft a pack from it.

Everything is read through the read-only `Database`: the introspected schema (with its row
counts and sample values) and a few plain SELECTs that profile the columns (how many distinct
values, how long the texts are) and check guessed joins. Detection is pure: it takes the
schema, the profiles and the joins, and returns data; packs/draft.py writes the files, and
packs/bank_draft.py and semantic/draft.py build on what is detected here.

- Joins: one per declared foreign key (a composite key gives one per column pair). Where none
  is declared, a column named like another table's one-column primary key (x.singer_id and
  singer.singer_id) is a join when at least 90% of its sampled values are keys of that table.
- Reference tables (lookups of concepts): at most 500 rows, referenced by another table
  through a one-column unique key, with a label column (a short, nearly unique text,
  preferably name-like), and lookup-shaped: named like one (ref_*, *_type, *_status, ...)
  or with at most two columns beyond its keys, all of them text.
- Entity tables (named things): the other tables with a one-column key and a name-like text
  column (name, *_name, title, label) whose values are mostly distinct (>= 80%), or several
  name columns (first and last name) that are distinct together. An empty table is judged by
  its column names alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from groundsql.db import Database
from groundsql.errors import GroundsqlError
from groundsql.packs.model import EntityTable, ReferenceTable
from groundsql.schema.model import Column, Schema, Table

PROFILE_ROWS = 10_000  # rows read per table to profile its columns (and per guessed join)
REFERENCE_MAX_ROWS = 500
REFERENCE_MAX_ATTRIBUTES = 2  # columns beyond keys a lookup may have without a lookup-like name
LABEL_MIN_DISTINCT = 0.9  # a reference label: nearly unique ...
LABEL_MAX_LENGTH = 60.0  # ... and short (average characters)
EXTRA_MAX_LENGTH = 100.0
NAME_MIN_DISTINCT = 0.8  # an entity's name column: mostly distinct
MIN_FILLED = 0.5  # a label or name column must be filled in at least half of the rows
INFERRED_JOIN_MIN_MATCH = 0.9

# Words that make a table look like a lookup: a first word (ref_currency, lkp_status) or a
# last word (company_type, order_status).
_LOOKUP_FIRST = {"ref", "refs", "reference", "lkp", "lookup", "lu", "lov", "dim", "enum", "code", "codes"}
_LOOKUP_LAST = {
    "type", "types", "status", "statuses", "category", "categories", "kind", "kinds", "code",
    "codes", "lookup", "lookups", "ref", "refs", "unit", "units", "currency", "currencies",
}
_CODE_WORDS = ("code", "abbrev", "abbreviation", "acronym", "symbol", "ticker", "iso", "alias")
_KEY_WORDS = {"id", "code", "key", "no", "num", "number"}
_LINE_BREAKS = "\r\n\x85\u2028\u2029"
_NUMERIC = ("INT", "REAL", "FLOAT", "DOUBLE", "NUMERIC", "DECIMAL", "NUMBER", "MONEY")
_PERIOD_WORDS = {"year", "date", "quarter", "month", "day", "week", "time", "timestamp"}


# -- data --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnProfile:
    non_null: int
    distinct: int
    avg_length: float | None = None  # text columns only


@dataclass(frozen=True)
class TableProfile:
    """Counts over the first PROFILE_ROWS rows of a table."""

    sampled: int
    columns: dict[str, ColumnProfile] = field(default_factory=dict)  # by lower-case name
    names_distinct: int | None = None  # distinct combinations of the name columns, if several

    def column(self, name: str) -> ColumnProfile | None:
        return self.columns.get(name.lower())


@dataclass(frozen=True)
class Join:
    child: str
    child_column: str
    parent: str
    parent_column: str
    inferred: bool = False
    match: float | None = None  # inferred: share of sampled child values found in the parent
    composite: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # the whole declared key

    @property
    def left(self) -> str:
        return f"{self.child}.{self.child_column}"

    @property
    def right(self) -> str:
        return f"{self.parent}.{self.parent_column}"



@dataclass(frozen=True)
class Draft:
    """Everything detected, before it is written."""

    schema: Schema
    profiles: dict[str, TableProfile]  # by lower-case table name
    joins: tuple[Join, ...]
    references: tuple[ReferenceTable, ...]
    entities: tuple[EntityTable, ...]
    notes: tuple[str, ...] = ()


def detect(db: Database) -> Draft:
    """Introspect `db`, profile its tables and detect joins, references and entities."""
    schema = db.introspect()
    profiles = {t.name.lower(): profile_table(db, t) for t in schema.tables}
    declared, notes = declared_joins(schema)
    inferred, more_notes = confirm_joins(db, join_candidates(schema, declared))
    joins = tuple(declared) + tuple(inferred)
    references = detect_references(schema, profiles, joins)
    entities = detect_entities(schema, profiles, references, joins)
    return Draft(schema, profiles, joins, references, entities, tuple(notes) + tuple(more_notes))


# -- reading data (plain SELECTs through the read-only database) -------------------------


def profile_table(db: Database, table: Table) -> TableProfile:
    """Non-null and distinct counts (and text lengths) of every column, over a sample."""
    source = f"(SELECT * FROM {db.quote(table.name)} LIMIT {PROFILE_ROWS}) AS sample"
    if not table.row_count:
        return TableProfile(sampled=0)
    parts = [_column_counts(db, c) for c in table.columns]
    try:
        row = db.execute(f"SELECT COUNT(*), {', '.join(parts)} FROM {source}", max_rows=1).rows[0]
        sampled, values = int(row[0]), list(row[1:])
        columns = {}
        for column in table.columns:
            width = 3 if _is_text(column) else 2
            columns[column.name.lower()] = _profile(values[:width])
            del values[:width]
    except GroundsqlError:  # a type COUNT(DISTINCT) refuses (json, ...): one column at a time
        sampled = _count(db, f"SELECT COUNT(*) FROM {source}") or 0
        columns = {}
        for column in table.columns:
            try:
                row = db.execute(f"SELECT {_column_counts(db, column)} FROM {source}", max_rows=1).rows[0]
            except GroundsqlError:
                continue
            columns[column.name.lower()] = _profile(list(row))
    names = [c for c in table.columns if _is_text(c) and name_rank(c.name, table.name) == 3]
    names_distinct = None
    if len(names) >= 2:
        listed = ", ".join(db.quote(c.name) for c in names[:3])
        names_distinct = _count(
            db, f"SELECT COUNT(*) FROM (SELECT DISTINCT {listed} FROM {source}) AS combos"
        )
    return TableProfile(sampled=sampled, columns=columns, names_distinct=names_distinct)


def _column_counts(db: Database, column: Column) -> str:
    col = db.quote(column.name)
    counts = f"COUNT({col}), COUNT(DISTINCT {col})"
    return f"{counts}, AVG(LENGTH({col}))" if _is_text(column) else counts


def _profile(values: list[Any]) -> ColumnProfile:
    length = float(values[2]) if len(values) > 2 and values[2] is not None else None
    return ColumnProfile(non_null=int(values[0] or 0), distinct=int(values[1] or 0), avg_length=length)


def _count(db: Database, sql: str) -> int | None:
    try:
        rows = db.execute(sql, max_rows=1).rows
    except GroundsqlError:
        return None
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


def confirm_joins(db: Database, candidates: Iterable[Join]) -> tuple[list[Join], list[str]]:
    """The guessed joins the data supports: most sampled child values are parent keys."""
    kept, notes = [], []
    for join in candidates:
        child, parent = db.quote(join.child_column), db.quote(join.parent_column)
        sql = (
            f"SELECT COUNT(*), COUNT(p.{parent}) FROM (SELECT DISTINCT {child} AS v FROM "
            f"(SELECT {child} FROM {db.quote(join.child)} WHERE {child} IS NOT NULL "
            f"LIMIT {PROFILE_ROWS}) AS s0) AS s LEFT JOIN {db.quote(join.parent)} AS p "
            f"ON s.v = p.{parent}"
        )
        try:
            total, matched = db.execute(sql, max_rows=1).rows[0]
        except GroundsqlError as error:
            notes.append(f"no join guessed for {join.left} -> {join.right}: {_one_line(str(error))}")
            continue
        if not total:  # no values to check: the names alone decide
            kept.append(join)
        elif matched / total >= INFERRED_JOIN_MIN_MATCH:
            kept.append(Join(join.child, join.child_column, join.parent, join.parent_column,
                             inferred=True, match=matched / total))
    return kept, notes


# -- detection (pure) --------------------------------------------------------------------


def declared_joins(schema: Schema) -> tuple[list[Join], list[str]]:
    """One join per column pair of every declared foreign key that names real columns."""
    joins: list[Join] = []
    notes: list[str] = []
    seen: set[tuple[str, str, str, str]] = set()
    for table in schema.tables:
        for fk in table.foreign_keys:
            parent = schema.table(fk.ref_table)
            label = f"{table.name}({', '.join(fk.columns)}) -> {fk.ref_table}({', '.join(fk.ref_columns)})"
            if parent is None:
                notes.append(f"skipped the foreign key {label}: no table {fk.ref_table!r}")
                continue
            pairs = [(table.column(c), parent.column(r)) for c, r in zip(fk.columns, fk.ref_columns)]
            if not pairs or len(fk.columns) != len(fk.ref_columns) or any(
                c is None or r is None for c, r in pairs
            ):
                notes.append(f"skipped the foreign key {label}: a column is missing")
                continue
            if "." in table.name or "." in parent.name:
                notes.append(f"skipped the foreign key {label}: a join cannot name a table with a '.'")
                continue
            composite = (fk.columns, fk.ref_columns) if len(pairs) > 1 else None
            for child_col, parent_col in pairs:
                key = (table.name.lower(), child_col.name.lower(), parent.name.lower(), parent_col.name.lower())
                if key not in seen:
                    seen.add(key)
                    joins.append(Join(table.name, child_col.name, parent.name, parent_col.name,
                                      composite=composite))
    return joins, notes


def join_candidates(schema: Schema, declared: Sequence[Join]) -> list[Join]:
    """Undeclared joins guessed from names: x.c where c is the one-column primary key of
    another table, named like a key (singer_id, StuID, country_code; not a bare 'id')."""
    covered = {(j.child.lower(), j.child_column.lower()) for j in declared}
    keys: dict[str, list[Table]] = {}
    for table in schema.tables:
        if len(table.primary_key) == 1 and _key_like(table.primary_key[0]) and "." not in table.name:
            keys.setdefault(table.primary_key[0].lower(), []).append(table)
    by_child: dict[tuple[str, str], list[Join]] = {}
    for child in schema.tables:
        if "." in child.name:
            continue
        for column in child.columns:
            for parent in keys.get(column.name.lower(), ()):
                if parent is child or (child.name.lower(), column.name.lower()) in covered:
                    continue
                join = Join(child.name, column.name, parent.name, parent.primary_key[0], inferred=True)
                by_child.setdefault((child.name.lower(), column.name.lower()), []).append(join)
    chosen = [_best_parent(options) for options in by_child.values()]
    # Two tables keyed by the same column (one-to-one): keep one direction only.
    pairs = {(j.child.lower(), j.parent.lower()) for j in chosen}
    result = []
    for join in chosen:
        if (join.parent.lower(), join.child.lower()) in pairs:
            if _parent_order(schema, join) < _parent_order(schema, _reverse(join)):
                continue
        result.append(join)
    return result


def _best_parent(options: list[Join]) -> Join:
    # singer_id -> singer rather than singer_detail, when both are keyed by singer_id.
    named = [j for j in options if _compact(j.child_column).startswith(_singular(_compact(j.parent)))]
    return (named or options)[0]


def _parent_order(schema: Schema, join: Join) -> tuple[int, int, str]:
    """How good a parent `join.parent` is: named by the column, then more rows."""
    parent = schema.table(join.parent)
    named = _compact(join.child_column).startswith(_singular(_compact(join.parent)))
    rows = (parent.row_count or 0) if parent is not None else 0
    return (int(named), rows, join.child.lower())


def _reverse(join: Join) -> Join:
    return Join(join.parent, join.parent_column, join.child, join.child_column, inferred=True)


def detect_references(
    schema: Schema, profiles: dict[str, TableProfile], joins: Sequence[Join]
) -> tuple[ReferenceTable, ...]:
    """Small lookup tables that other tables point to through a one-column key."""
    referenced: dict[str, list[Join]] = {}
    for join in joins:
        if join.parent.lower() != join.child.lower() and join.composite is None:
            referenced.setdefault(join.parent.lower(), []).append(join)
    sources = _join_sources(joins)
    found = []
    for table in schema.tables:
        incoming = referenced.get(table.name.lower())
        profile = profiles.get(table.name.lower(), TableProfile(0))
        if not incoming or table.row_count is None or table.row_count > REFERENCE_MAX_ROWS:
            continue
        key = _reference_key(table, profile, incoming)
        if key is None:
            continue
        attributes = [c for c in table.columns if not c.primary_key and c.name != key
                      and (table.name.lower(), c.name.lower()) not in sources]
        narrow = len(attributes) <= REFERENCE_MAX_ATTRIBUTES and all(_is_text(c) for c in attributes)
        if not (narrow or lookup_named(table.name)):
            continue
        label = _label(table, profile, key, sources)
        if label is None:
            continue
        extra = tuple(
            c.name for c in attributes
            if c.name != label and _is_text(c) and _short(profile.column(c.name), EXTRA_MAX_LENGTH)
        )[:3]
        by = sorted({j.left for j in incoming})
        found.append(ReferenceTable(
            table=table.name, key=key, label=label, extra=extra,
            description=_reference_description(table, label, by),
        ))
    return tuple(found)


def _reference_key(table: Table, profile: TableProfile, incoming: Sequence[Join]) -> str | None:
    """The referenced column, if it identifies a row: the primary key, or a unique column."""
    columns = {j.parent_column.lower(): j.parent_column for j in incoming}
    pk = table.primary_key
    if len(pk) == 1 and pk[0].lower() in columns:
        return pk[0]
    for lowered, name in sorted(columns.items()):
        stats = profile.column(lowered)
        if stats and profile.sampled and stats.distinct == stats.non_null == profile.sampled:
            return table.column(name).name if table.column(name) else name
    return None


def _label(table: Table, profile: TableProfile, key: str, sources: set[tuple[str, str]]) -> str | None:
    """The column a person recognises: nearly unique, short text, name-like if possible."""
    best: tuple[tuple[int, float], str] | None = None
    for column in table.columns:
        if column.name == key or not _is_text(column) or (table.name.lower(), column.name.lower()) in sources:
            continue
        stats = profile.column(column.name)
        rank = name_rank(column.name, table.name)
        if not profile.sampled:  # no rows to look at: a name-like column, by its name alone
            if rank < 2:
                continue
        elif not _distinct(stats, profile, LABEL_MIN_DISTINCT) or not _short(stats, LABEL_MAX_LENGTH):
            continue
        score = (rank, -(stats.avg_length or 0.0) if stats else 0.0)
        if best is None or score > best[0]:
            best = (score, column.name)
    if best is None:
        key_column = table.column(key)
        return key if key_column is not None and _is_text(key_column) else None  # a table of codes
    return best[1]


def detect_entities(
    schema: Schema, profiles: dict[str, TableProfile], references: Sequence[ReferenceTable],
    joins: Sequence[Join] = (),
) -> tuple[EntityTable, ...]:
    """Tables of named things: a one-column key and mostly distinct name columns."""
    lookups = {r.table.lower() for r in references}
    sources = _join_sources(joins)
    found = []
    for table in schema.tables:
        if table.name.lower() in lookups or len(table.primary_key) != 1:
            continue
        profile = profiles.get(table.name.lower(), TableProfile(0))
        own = {c.name for c in table.columns if (table.name.lower(), c.name.lower()) not in sources}
        names = entity_names(table, profile, own)
        if names:
            words = _words(table.name)
            kind = _singular(words[-1]) if words else "entity"
            found.append(EntityTable(table=table.name, key=table.primary_key[0], names=names, kind=kind))
    return tuple(found)


def entity_names(table: Table, profile: TableProfile, columns: Iterable[str] | None = None) -> tuple[str, ...]:
    """The table's name columns, its own name first ('name' before 'manager_name'), then
    distinct codes (a ticker, an abbreviation). Empty when it has no mostly distinct name.
    `columns`: the columns that may be names (not those referring to other tables)."""
    allowed = set(columns) if columns is not None else {c.name for c in table.columns}
    text = [c for c in table.columns if _is_text(c) and not c.primary_key and c.name in allowed]
    ranked = [(name_rank(c.name, table.name), c) for c in text]
    if not profile.sampled:  # no rows to look at: the table's own name columns, by name alone
        return tuple(c.name for r, c in ranked if r == 4)[:4]
    distinct = [(r, c) for r, c in ranked if _distinct(profile.column(c.name), profile, NAME_MIN_DISTINCT)]
    primary = [c.name for r, c in distinct if r == 4]
    if not primary:  # no name of its own: its other names (first and last name) together
        together = [c.name for r, c in ranked if r == 3][:3]
        combined = bool(profile.names_distinct and profile.sampled
                        and profile.names_distinct / profile.sampled >= NAME_MIN_DISTINCT)
        if any(r == 3 for r, _ in distinct) or (len(together) >= 2 and combined):
            primary = together
    if not primary:
        return ()
    codes = [c.name for r, c in distinct if r == 1 and c.name not in primary]
    return tuple(primary + codes)[:4]


# -- names -------------------------------------------------------------------------------


def _words(name: str) -> list[str]:
    """'Ref_Template_Types' -> ['ref', 'template', 'types']; 'CountryName' -> ['country', 'name'];
    'StuID' -> ['stu', 'id']; 'HTTPServer' -> ['http', 'server']."""
    words = []
    for chunk in re.split(r"[\W_]+", name):
        current = ""
        for i, ch in enumerate(chunk):
            following = chunk[i + 1] if i + 1 < len(chunk) else ""
            if current and (
                ch.isdigit() != current[-1].isdigit()
                or (ch.isupper() and (current[-1].islower() or (current[-1].isupper() and following.islower())))
            ):
                words.append(current)
                current = ""
            current += ch
        if current:
            words.append(current)
    return [w.lower() for w in words]


def _compact(name: str) -> str:
    return "".join(_words(name))


def _singular(word: str) -> str:
    if word in ("people", "persons"):
        return "person"
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "statuses")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def _plural(word: str) -> str:
    if word == "person":
        return "people"
    if word.endswith("y") and word[-2:-1] not in tuple("aeiou"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def name_rank(column: str, table: str) -> int:
    """How name-like a column is: 4 the table's own name (name, title, country_name in
    ref_country, Course in course), 3 another name (song_name, first_name), 2 a
    description, 1 a code (iso_code, ticker, abbreviation), 0 anything else."""
    compact = _compact(column)
    words = _words(table)
    owners = {_singular("".join(words[i:])) for i in range(len(words))}
    if compact in {"name", "fullname", "title", "label"} or any(
        compact in (owner, owner + "name", owner + "title", owner + "label") for owner in owners
    ):
        return 4
    if compact.endswith(("name", "title", "label")):
        return 3
    if compact.endswith(("description", "desc")):
        return 2
    if compact.endswith(_CODE_WORDS) or compact in _CODE_WORDS:
        return 1
    return 0


def lookup_named(table: str) -> bool:
    """ref_currency, lkp_status, company_type, Ref_Template_Types: named like a lookup."""
    words = _words(table)
    return bool(words) and (words[0] in _LOOKUP_FIRST or words[-1] in _LOOKUP_LAST)


def _key_like(column: str) -> bool:
    words = _words(column)
    compact = "".join(words)
    if compact in _KEY_WORDS or not words:
        return False
    return words[-1] in _KEY_WORDS or (compact.endswith("id") and len(compact) > 3)


def _is_text(column: Column) -> bool:
    kind = column.type.upper()
    if any(word in kind for word in ("CHAR", "TEXT", "CLOB", "STRING")):
        return True
    return not kind.strip() and bool(column.examples) and all(isinstance(v, str) for v in column.examples)


def _distinct(stats: ColumnProfile | None, profile: TableProfile, share: float) -> bool:
    if stats is None or not profile.sampled or not stats.non_null:
        return False
    return stats.non_null / profile.sampled >= MIN_FILLED and stats.distinct / stats.non_null >= share


def _short(stats: ColumnProfile | None, limit: float) -> bool:
    return stats is not None and stats.avg_length is not None and stats.avg_length <= limit


def _join_sources(joins: Sequence[Join]) -> set[tuple[str, str]]:
    return {(j.child.lower(), j.child_column.lower()) for j in joins}


def _reference_description(table: Table, label: str, referenced_by: Sequence[str]) -> str:
    column = table.column(label)
    examples = f", e.g. {_examples(column.examples)}" if column is not None and column.examples else ""
    return f"{table.row_count:,} {label} values{examples}; referenced by {_listed(list(referenced_by))}"


def _one_line(text: str) -> str:
    """`text` safe inside a YAML comment: one line of printable characters."""
    for brk in _LINE_BREAKS:
        text = text.replace(brk, " ")
    return "".join(ch if ch.isprintable() else "?" for ch in text).strip()

def _example(value: object, limit: int = 40) -> str:
    if isinstance(value, str):
        text = value.replace("\r\n", "\n")
        for brk in _LINE_BREAKS:
            text = text.replace(brk, "\\n")
        text = "".join(ch if ch.isprintable() else "?" for ch in text)
        if len(text) > limit:
            text = text[: limit - 3] + "..."
        return f"'{text}'"
    return str(value)

def _examples(values: Sequence[object], k: int = 3) -> str:
    return ", ".join(_example(v) for v in values[:k])

def _listed(items: Sequence[str], k: int = 3) -> str:
    shown = ", ".join(items[:k])
    return shown + (f" and {len(items) - k} more" if len(items) > k else "")


# -- what the structure offers -----------------------------------------------------------

def _sources(draft: Draft) -> set[tuple[str, str]]:
    return {(j.child.lower(), j.child_column.lower()) for j in draft.joins}


def measures(draft: Draft, table: Table) -> list[Column]:
    """Numeric columns that measure something: not keys, joins, flags, periods or codes."""
    sources = _sources(draft)
    profile = draft.profiles.get(table.name.lower())
    found = []
    for column in table.columns:
        kind = column.type.upper()
        parts = set(_words(column.name))
        if (column.primary_key or "BOOL" in kind or not any(w in kind for w in _NUMERIC)
                or (table.name.lower(), column.name.lower()) in sources or _key_like(column.name)
                or parts & _PERIOD_WORDS or _words(column.name)[:1] in (["is"], ["has"])):
            continue
        stats = profile.column(column.name) if profile is not None else None
        if stats is not None and stats.distinct < 3:
            continue
        found.append(column)
    return found


def periods(table: Table) -> list[tuple[Column, bool]]:
    """(column, is_date) for the year and date columns of a table."""
    found = []
    for column in table.columns:
        kind, parts = column.type.upper(), _words(column.name)
        if "DATE" in kind or "TIMESTAMP" in kind or (parts and parts[-1] == "date"):
            found.append((column, True))
        elif "year" in parts and not column.primary_key:
            found.append((column, False))
    return found
