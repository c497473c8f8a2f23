"""The lookup agent (FLINT 3.2): phrases of the question resolved to IDs of reference tables.

On a normalized schema "quarterly EBITDA in millions of euros" is four integer keys (the
metric, the period type, the unit, the currency). A model that guesses them is wrong most of
the time; one that reads the rows is not. Three steps:

1. the model picks the reference tables the question needs (structured output: a list of
   table names, from the pack's reference tables only);
2. their rows are read with plain SELECTs; a table with more rows than the limit is narrowed
   to the rows whose labels are most like the question (rapidfuzz);
3. the model writes the constraints, each an ID from the rows it was shown and the phrase of
   the question it grounds. Each is checked: an ID that was not shown, a phrase that is not
   in the question, or a row whose label (or extra values) does not say what the phrase says
   is dropped, never used; when another shown row's label is the phrase
   itself ("EBITDA" answered with the id of "Operating Income"), that row is taken. Every
   constraint keeps its provenance (table, key, label, row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz, process, utils

from groundsql.db import Database
from groundsql.packs.model import ReferenceTable

__all__ = ["Constraint", "ReferenceRows", "read_reference", "constraints_from", "rows_prompt"]


@dataclass(frozen=True)
class Constraint:
    """`table.key = value`, grounded in one row of a reference (or entity) table."""

    table: str
    column: str  # the key column
    value: Any
    label: str  # what the row is called
    phrase: str  # the words of the question it grounds
    source: str  # "lookup" (reference table, model-chosen) or "entity" (name linking)
    confidence: float = 1.0
    row: dict[str, Any] = field(default_factory=dict)  # the row as read

    def sql(self) -> str:
        value = self.value if isinstance(self.value, (int, float)) else repr(str(self.value))
        return f"{self.table}.{self.column} = {value}"


@dataclass(frozen=True)
class ReferenceRows:
    ref: ReferenceTable
    columns: tuple[str, ...]  # key, label, extras
    rows: tuple[tuple[Any, ...], ...]
    total: int  # rows in the table (the shown ones may be fewer)


def read_reference(db: Database, ref: ReferenceTable, question: str, limit: int) -> ReferenceRows:
    """The rows of a reference table; more than `limit`: the `limit` most like the question."""
    columns = (ref.key, ref.label, *ref.extra)
    select = ", ".join(db.quote(c) for c in columns)
    result = db.execute(f"SELECT {select} FROM {db.quote(ref.table)} ORDER BY 1", max_rows=100_000)
    rows = tuple(tuple(r) for r in result.rows)
    if len(rows) <= limit:
        return ReferenceRows(ref, columns, rows, len(rows))
    labels = {i: " ".join(str(v) for v in row[1:] if v is not None) for i, row in enumerate(rows)}
    best = process.extract(utils.default_process(question), labels, scorer=fuzz.partial_token_set_ratio,
                           processor=utils.default_process, limit=limit)
    keep = sorted(index for _, _, index in best)
    return ReferenceRows(ref, columns, tuple(rows[i] for i in keep), len(rows))


def rows_prompt(tables: Sequence[ReferenceRows]) -> str:
    """The rows as compact text for the model: `table (key | label | extras)` then one line each."""
    blocks = []
    for table in tables:
        head = f"{table.ref.table} ({' | '.join(table.columns)})"
        if table.total > len(table.rows):
            head += f" - {len(table.rows)} of {table.total} rows, those most like the question"
        lines = [" | ".join("" if v is None else str(v) for v in row) for row in table.rows]
        blocks.append("\n".join([head, *lines]))
    return "\n\n".join(blocks)


_IN_QUESTION = 80  # partial_ratio a phrase needs to count as words of the question
_SAME_LABEL = 90  # ratio at which a label is the phrase itself
_NAMES_IT = 75  # partial_ratio of the phrase with the row's label (or an extra) a constraint needs


def constraints_from(answer: Any, tables: Sequence[ReferenceRows],
                     question: str | None = None) -> tuple[list[Constraint], list[str]]:
    """Constraints from the model's structured answer `{"constraints": [{"table", "id",
    "phrase"}]}`; only IDs among the rows shown, for phrases of `question` (when given), are
    kept. Returns (kept, problems)."""
    shown = {t.ref.table.lower(): t for t in tables}
    kept: list[Constraint] = []
    problems: list[str] = []
    items = answer.get("constraints", []) if isinstance(answer, dict) else []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        table = shown.get(str(item.get("table", "")).lower())
        if table is None:
            problems.append(f"table {item.get('table')!r} was not shown")
            continue
        row = next((r for r in table.rows if _same(r[0], item.get("id"))), None)
        if row is None:
            problems.append(f"{table.ref.table} has no shown row with id {item.get('id')!r}")
            continue
        phrase = str(item.get("phrase", "")).strip()
        if question is not None and not _in(phrase, question):
            problems.append(f"{table.ref.table} id {row[0]!r}: phrase {phrase!r} is not in the question")
            continue
        named = _row_named(phrase, table)
        if named is not None and _label_score(phrase, row) < _SAME_LABEL:
            problems.append(f"{table.ref.table} id {row[0]!r} ({row[1]}) for {phrase!r} replaced by "
                            f"id {named[0]!r} ({named[1]}), whose label it is")
            row = named
        if not _names(phrase, row):
            problems.append(f"{table.ref.table} id {row[0]!r} ({row[1]}) does not name {phrase!r}")
            continue
        constraint = Constraint(
            table=table.ref.table, column=table.ref.key, value=row[0], label=str(row[1]),
            phrase=phrase, source="lookup", row=dict(zip(table.columns, row)),
        )
        if not any(c.table == constraint.table and c.value == constraint.value for c in kept):
            kept.append(constraint)
    return kept, problems


def _in(phrase: str, question: str) -> bool:
    return bool(phrase) and fuzz.partial_ratio(utils.default_process(phrase),
                                               utils.default_process(question)) >= _IN_QUESTION


def _names(phrase: str, row: tuple[Any, ...]) -> bool:
    """Whether the row's label or one of its extra values says what the phrase says: a model
    that maps "youngest" to a course id has grounded nothing."""
    said = utils.default_process(phrase)
    return any(fuzz.partial_ratio(said, utils.default_process(str(cell))) >= _NAMES_IT
               for cell in row[1:] if cell is not None and str(cell).strip())


def _label_score(phrase: str, row: tuple[Any, ...]) -> float:
    return fuzz.ratio(utils.default_process(phrase), utils.default_process(str(row[1])))


def _row_named(phrase: str, table: ReferenceRows) -> tuple[Any, ...] | None:
    """The shown row whose label is the phrase itself, if exactly one is."""
    named = [r for r in table.rows if _label_score(phrase, r) >= _SAME_LABEL]
    return named[0] if len(named) == 1 else None


def _same(value: Any, wanted: Any) -> bool:
    if value == wanted:
        return True
    return str(value).strip().lower() == str(wanted).strip().lower()
