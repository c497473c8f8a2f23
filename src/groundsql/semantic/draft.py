"""Drafting a semantic model for any database (`groundsql init`), for a person to review.

From what packs/detect.py found:

- a logical table per table; reference labels and entity names as dimensions (an entity's
  values are resolved by entity linking), other short texts as dimensions, dates as time
  dimensions (by year and month), whole-number year columns as years, numeric non-key
  columns as facts (listed, compared, or aggregated by name), and a count per table;
- each foreign key as a relationship, many-to-one as the data shows it; a self-reference, a
  second key to the same table, or a join that would close a cycle is a role (joined only
  through a dimension that names it: the parent company, the buyer);
- the conversions the data shows: a lookup with a multiplying factor (a unit table) turns
  each fact that refers to it into an absolute amount; a rate table (a currency, a date and
  a rate, one currency's rate always 1) makes every amount with a currency and a date
  convertible, at the latest rate on or before that date.

Every entry the database's checks refuse (semantic/catalog.py) is left out with a note, so
the draft always loads. It is marked `drafted: true`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import yaml

from groundsql.db import Database
from groundsql.errors import GroundsqlError
from groundsql.packs.detect import (_NUMERIC, Draft, Join, _is_text, _singular, _sources, _words, measures,
                                    name_rank, periods)
from groundsql.semantic.catalog import SemanticError, build_catalog
from groundsql.semantic.model import SemanticModel

__all__ = ["SemanticDraft", "draft_semantic", "render_semantic_yaml"]

_FACTOR_WORDS = {"multiplier", "factor", "scale", "conversion", "ratio"}
_RATE_WORDS = {"rate", "rates", "fx", "exchange"}
# The facts a unit's factor or a currency applies to: amounts, not percentages or counts.
_AMOUNT_WORDS = {"value", "amount", "price", "cost", "revenue", "sales", "total", "income", "expense",
                 "balance", "fee", "payment", "salary", "budget", "spend", "spent", "paid"}
_SHORT_TEXT = 60.0  # a text column this short on average is a dimension, longer ones are prose
_MAX_FIXES = 50


@dataclass
class SemanticDraft:
    model: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def draft_semantic(db: Database, draft: Draft) -> SemanticDraft:
    """A semantic model for `db` from what was detected; every entry checked, the refused
    ones left out with a note."""
    result = SemanticDraft(_build(db, draft))
    result.notes += _measure_cardinality(db, result.model)
    entity_tables = tuple(e.table for e in draft.entities)
    for _ in range(_MAX_FIXES):
        try:
            build_catalog(SemanticModel.model_validate(result.model), draft.schema, entity_tables)
            return result
        except SemanticError as err:
            if not _drop(result.model, err.where):
                raise
            result.notes.append(f"left out {'.'.join(map(str, err.where))}: {err.message}")
    raise GroundsqlError("the semantic model could not be drafted: too many entries were refused")


class _Names:
    """Unique field names: the plain name first, then prefixed by the table's noun."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def take(self, wanted: str, table: str) -> str:
        base = _identifier(wanted)
        for candidate in (base, _identifier(f"{_noun(table)}_{wanted}")):
            if candidate not in self.taken:
                self.taken.add(candidate)
                return candidate
        n = 2
        while f"{base}_{n}" in self.taken:
            n += 1
        self.taken.add(f"{base}_{n}")
        return f"{base}_{n}"


def _build(db: Database, draft: Draft) -> dict[str, Any]:
    schema = draft.schema
    names = _Names()
    logical = {t.name.lower(): _identifier(t.name) for t in schema.tables}
    references = {r.table.lower(): r for r in draft.references}
    entities = {e.table.lower(): e for e in draft.entities}
    sources = _sources(draft)
    roles = _roles(draft)
    tables: dict[str, dict[str, Any]] = {}
    for table in schema.tables:
        item: dict[str, Any] = {"name": logical[table.name.lower()], "table": table.name}
        if table.primary_key:
            item["key"] = list(table.primary_key)
        dims, times, facts = [], [], []
        used: set[str] = set()
        ref = references.get(table.name.lower())
        entity = entities.get(table.name.lower())
        if ref is not None:
            dims.append({"name": names.take(_noun(table.name), table.name), "expr": ref.label})
            used.add(ref.label.lower())
        if entity is not None:
            columns = _entity_expr(entity)
            dims.append({"name": names.take(entity.kind, table.name),
                         "expr": columns[0] if len(columns) == 1 else list(columns), "entity": entity.table})
            used |= {c.lower() for c in columns}
        profile = draft.profiles.get(table.name.lower())
        dated = {c.name.lower() for c, _ in periods(table)}
        for column in table.columns:
            lowered = column.name.lower()
            if lowered in used or column.primary_key or (table.name.lower(), lowered) in sources:
                continue
            stats = profile.column(column.name) if profile is not None else None
            if lowered in dated:
                continue
            if _is_text(column) and (stats is None or stats.avg_length is None or stats.avg_length <= _SHORT_TEXT):
                dims.append({"name": names.take(_dimension_word(column.name, table.name), table.name),
                             "expr": column.name})
        for column, is_date in periods(table):
            if (table.name.lower(), column.name.lower()) in sources or column.primary_key:
                continue
            kind = column.type.upper()
            entry: dict[str, Any] = {"name": names.take(column.name, table.name), "expr": column.name}
            if is_date:
                entry["type"] = "datetime" if ("TIME" in kind and "DATE" in kind) or "TIMESTAMP" in kind else "date"
                entry["grains"] = ["year", "month"]
            else:
                entry["type"] = "year"
            times.append(entry)
        for column in measures(draft, table):
            facts.append({"name": names.take(column.name, table.name), "expr": column.name})
        if dims:
            item["dimensions"] = dims
        if times:
            item["time_dimensions"] = times
        if facts:
            item["facts"] = facts
        item["measures"] = [{"name": names.take(f"{_noun(table.name)}_count", table.name), "expr": "COUNT(*)",
                             "description": f"the number of rows of {table.name}"}]
        tables[table.name.lower()] = item
    relationships = []
    for join in _relationship_joins(draft):
        name = names.take(_role_word(join) if join in roles else f"{_noun(join.child)}_{_role_word(join)}",
                          join.child)
        relationship: dict[str, Any] = {
            "name": name, "from": logical[join.child.lower()], "to": logical[join.parent.lower()],
            "columns": [list(pair) for pair in _pairs(join)], "type": "many_to_one"}
        if join in roles:
            relationship["automatic"] = False
            label = _label_of(join.parent, references, entities)
            if label is not None:
                dim: dict[str, Any] = {"name": names.take(_role_word(join), join.child), "expr": label[0],
                                       "via": name, "description": f"through {join.left}"}
                if label[1]:
                    dim["entity"] = label[1]
                tables[join.child.lower()].setdefault("dimensions", []).append(dim)
        relationships.append(relationship)
    model: dict[str, Any] = {
        "name": draft.schema.name or "database", "drafted": True,
        "description": "TODO: what this database holds, in a sentence or two.",
        "tables": list(tables.values()), "relationships": relationships,
    }
    _conversions(db, draft, model, tables, logical, names)
    return model


def _dimension_word(column: str, table: str) -> str:
    """sector_name -> sector; a table's own name column -> the table's noun."""
    if name_rank(column, table) >= 4:
        return _noun(table)
    words = _words(column)
    if len(words) > 1 and words[-1] in ("name", "title", "label"):
        words = words[:-1]
    return "_".join(words) or column


def _entity_expr(entity: Any) -> tuple[str, ...]:
    if name_rank(entity.names[0], entity.table) == 4:
        return entity.names[:1]
    together = [n for n in entity.names if name_rank(n, entity.table) >= 3][:2]
    return tuple(together) or entity.names[:1]


def _label_of(table: str, references: dict[str, Any], entities: dict[str, Any]) -> tuple[str, str | None] | None:
    if table.lower() in entities:
        return _entity_expr(entities[table.lower()])[0], entities[table.lower()].table
    if table.lower() in references:
        return references[table.lower()].label, None
    return None


def _relationship_joins(draft: Draft) -> list[Join]:
    """One join per foreign key (a composite key once, with all its columns)."""
    seen: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()
    found = []
    for join in draft.joins:
        key = (join.child.lower(), join.parent.lower(), _pairs(join))
        if key not in seen:
            seen.add(key)
            found.append(join)
    return found


def _pairs(join: Join) -> tuple[tuple[str, str], ...]:
    if join.composite is not None:
        return tuple(zip(join.composite[0], join.composite[1]))
    return ((join.child_column, join.parent_column),)


def _roles(draft: Draft) -> set[Join]:
    """Joins that are roles rather than paths: a table referring to itself, a table referring
    to another twice (buyer and seller), and any join that would close a cycle."""
    joins = _relationship_joins(draft)
    count: dict[tuple[str, str], int] = {}
    for join in joins:
        pair = (join.child.lower(), join.parent.lower())
        count[pair] = count.get(pair, 0) + 1
    roles = {j for j in joins if j.child.lower() == j.parent.lower() or count[(j.child.lower(), j.parent.lower())] > 1}
    graph = nx.DiGraph()
    for join in joins:
        if join in roles:
            continue
        graph.add_edge(join.child.lower(), join.parent.lower())
        if not nx.is_directed_acyclic_graph(graph):
            graph.remove_edge(join.child.lower(), join.parent.lower())
            roles.add(join)
    return roles


def _role_word(join: Join) -> str:
    """What a foreign key calls the row it refers to: parent_company_id -> parent_company."""
    words = _words(join.child_column)
    while words and words[-1] in ("id", "key", "code", "no", "num"):
        words = words[:-1]
    return "_".join(words) or _noun(join.parent)


def _noun(table: str) -> str:
    words = _words(table)
    if len(words) > 1 and words[0] in ("ref", "lkp", "lookup", "dim", "tbl", "t"):
        words = words[1:]
    if not words:
        return _identifier(table)
    return "_".join(words[:-1] + [_singular(words[-1])])


def _identifier(name: str) -> str:
    text = re.sub(r"\W+", "_", name.strip().lower()).strip("_") or "field"
    if text[0].isdigit():
        text = f"f_{text}"
    return text[:64]


# -- conversions ------------------------------------------------------------------------------


def _conversions(db: Database, draft: Draft, model: dict[str, Any], tables: dict[str, dict[str, Any]],
                 logical: dict[str, str], names: _Names) -> None:
    """Measures that convert: a fact scaled by its unit's factor, and converted between
    currencies where a rate table is in the data."""
    references = {r.table.lower(): r for r in draft.references}
    units: dict[str, tuple[Join, str]] = {}  # child table -> (join to the unit table, factor column)
    for join in _relationship_joins(draft):
        parent = draft.schema.table(join.parent)
        if parent is None or join.parent.lower() not in references:
            continue
        for column in parent.columns:
            if set(_words(column.name)) & _FACTOR_WORDS and not _is_text(column) and not column.primary_key:
                units.setdefault(join.child.lower(), (join, column.name))
    rates = _rate_table(db, draft, references)
    if rates is not None:
        model["currency"] = rates["section"]
    for child, item in tables.items():
        facts = item.get("facts", [])
        unit = units.get(child)
        currency = _currency_of(draft, child, rates, logical) if rates is not None else None
        if not facts or (unit is None and currency is None):
            continue
        # A unit's factor applies to the fact named like the unit (weight for a weight unit);
        # a currency to the amounts. Without either word: the amounts, or a table's only fact.
        measured = _unit_words(unit[0]) if unit is not None else set()
        scaled = [f for f in facts if set(_words(f["expr"])) & measured]
        amounts = [f for f in facts if set(_words(f["expr"])) & _AMOUNT_WORDS] or (facts if len(facts) == 1 else [])
        for fact in list(dict.fromkeys(map(id, scaled + amounts))):
            fact = next(f for f in facts if id(f) == fact)
            unit_here = unit is not None and (fact in scaled or not scaled)
            currency_here = currency if fact in amounts and fact not in scaled else None
            if not unit_here and currency_here is None:
                continue
            value = fact["expr"]
            if unit_here:
                value = f"{value} * {logical[unit[0].parent.lower()]}.{unit[1]}"
            # The converted total takes the natural name; the raw sum, which adds units or
            # currencies together, is not offered.
            fact["aggregations"] = []
            measure: dict[str, Any] = {"name": names.take(f"total_{fact['name']}", child),
                                       "expr": f"SUM({value})"}
            about = [f"{fact['expr']}"]
            if unit_here:
                about.append(f"times {unit[0].parent}.{unit[1]} (the amount in base units)")
            if currency_here is not None:
                measure["currency"] = currency_here
                about.append(f"in the currency of {currency_here['column']}, convertible at {currency_here['date']}")
            else:
                measure["scalable"] = True
            measure["description"] = " ".join(about)
            item["measures"].append(measure)


def _rate_table(db: Database, draft: Draft, references: dict[str, Any]) -> dict[str, Any] | None:
    """A table of (currency, date, rate) whose currency table has a code, one currency's rate
    being 1 throughout: the conversion section, and the currency table."""
    for table in draft.schema.tables:
        if not set(_words(table.name)) & _RATE_WORDS:
            continue
        to_currency = [j for j in draft.joins if j.child.lower() == table.name.lower()
                       and j.parent.lower() in references and j.composite is None]
        dates = [c for c, is_date in periods(table) if is_date]
        numbers = [c for c in table.columns if "rate" in _words(c.name) and _is_number(c)]
        if len(to_currency) != 1 or not dates or not numbers:
            continue
        join, date, rate = to_currency[0], dates[0], numbers[0]
        ref = references[join.parent.lower()]
        currencies = draft.schema.table(ref.table)
        code = next((c for c in (ref.label, *ref.extra) if _is_code(db, ref.table, c)), None)
        if currencies is None or code is None:
            continue
        q = db.quote
        try:
            rows = db.execute(
                f"SELECT c.{q(code)} FROM {q(table.name)} AS r JOIN {q(ref.table)} AS c ON "
                f"r.{q(join.child_column)} = c.{q(join.parent_column)} GROUP BY c.{q(code)} "
                f"HAVING MIN(r.{q(rate.name)}) = 1 AND MAX(r.{q(rate.name)}) = 1", max_rows=2).rows
        except GroundsqlError:
            continue
        if len(rows) != 1:
            continue
        section: dict[str, Any] = {
            "table": table.name, "currency_column": join.child_column, "date_column": date.name,
            "rate_column": rate.name, "base": str(rows[0][0]), "currencies": ref.table, "key": join.parent_column,
            "code": code}
        return {"section": section, "currencies": ref.table.lower(), "rates": table.name.lower()}
    return None


def _is_number(column: Any) -> bool:
    kind = column.type.upper()
    return any(word in kind for word in _NUMERIC) and not any(word in kind for word in ("DATE", "TIME"))


def _is_code(db: Database, table: str, column: str) -> bool:
    """A column of three-letter upper-case codes (USD, EUR)."""
    try:
        rows = db.execute(f"SELECT {db.quote(column)} FROM {db.quote(table)}", max_rows=500).rows
    except GroundsqlError:
        return False
    values = [r[0] for r in rows if r[0] is not None]
    return bool(values) and all(isinstance(v, str) and re.fullmatch(r"[A-Z]{3}", v) for v in values)


def _unit_words(join: Join) -> set[str]:
    """What a unit measures, by the names of its key column and table (weight_unit_id,
    ref_unit_of_weight: weight)."""
    generic = {"unit", "units", "id", "ref", "of", "uom", "key"}
    return (set(_words(join.child_column)) | set(_words(join.parent))) - generic


def _currency_of(draft: Draft, child: str, rates: dict[str, Any], logical: dict[str, str]) -> dict[str, str] | None:
    """The currency column of a table and the date to convert its amounts at: its own, or
    those of a table it refers to (an invoice line's amount is in its invoice's currency)."""
    if child == rates["rates"]:
        return None
    to_currency = [j for j in draft.joins if j.child.lower() == child and j.parent.lower() == rates["currencies"]]
    if not to_currency:
        for join in draft.joins:
            if join.child.lower() != child or join.parent.lower() == child:
                continue
            parent = _currency_of(draft, join.parent.lower(), {**rates, "nested": True}, logical) \
                if not rates.get("nested") else None
            if parent is not None:
                prefix = logical[join.parent.lower()]
                column = parent["column"] if "." in parent["column"] else f"{prefix}.{parent['column']}"
                date = parent["date"] if "." in parent["date"] else f"{prefix}.{parent['date']}"
                return {"column": column, "date": date}
        return None
    if len(to_currency) != 1:
        return None
    table = draft.schema.table(child)
    own = [c for c, is_date in periods(table) if is_date] if table is not None else []
    if own:
        return {"column": to_currency[0].child_column, "date": _latest_date(own).name}
    for join in draft.joins:
        if join.child.lower() != child or join.parent.lower() == rates["currencies"]:
            continue
        parent = draft.schema.table(join.parent)
        dates = [c for c, is_date in periods(parent) if is_date] if parent is not None else []
        if dates:
            return {"column": to_currency[0].child_column,
                    "date": f"{logical[join.parent.lower()]}.{_latest_date(dates).name}"}
    return None


def _latest_date(columns: list[Any]) -> Any:
    """Of several dates, the one an amount is as of: a period's end before its filing."""
    for word in ("end", "as", "period", "date"):
        for column in columns:
            if word in _words(column.name):
                return column
    return columns[0]


# -- measured, and refused entries left out ---------------------------------------------------


def _measure_cardinality(db: Database, model: dict[str, Any]) -> list[str]:
    """A relationship the data repeats (a foreign key to a column that is not unique) is
    one_to_many, so the compiler never double-counts across it."""
    from groundsql.semantic.load import _repeated

    notes = []
    try:
        parsed = SemanticModel.model_validate(model)
    except ValueError:
        return notes
    for i, rel in enumerate(parsed.relationships):
        if _repeated(db, parsed, rel):
            model["relationships"][i]["type"] = "one_to_many"
            notes.append(f"{rel.name} repeats rows in the data: drafted one_to_many")
    return notes


def _drop(model: dict[str, Any], where: tuple[Any, ...]) -> bool:
    """Remove the entry `where` points into (a field of a table, a relationship, the currency
    section); False when it points at nothing that can go."""
    if where[:1] == ("currency",):
        model.pop("currency", None)
        for table in model["tables"]:
            for measure in table.get("measures", []):
                measure.pop("currency", None)
        return True
    if len(where) >= 2 and where[0] == "relationships":
        removed = model["relationships"].pop(where[1])
        for table in model["tables"]:
            for part in ("dimensions", "time_dimensions", "facts"):
                table[part] = [f for f in table.get(part, []) if removed["name"] not in _listed(f.get("via"))]
        return True
    if len(where) >= 4 and where[0] == "tables" and where[2] in ("dimensions", "time_dimensions", "facts",
                                                                   "measures", "filters"):
        entries = model["tables"][where[1]].get(where[2], [])
        if where[3] < len(entries):
            entries.pop(where[3])
            return True
    return False


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def render_semantic_yaml(draft: SemanticDraft) -> str:
    head = [
        "# Semantic model drafted by `groundsql init`: what the numbers and words of this database mean,",
        "# for the compiled path (the model chooses a request in these names; groundsql writes the SQL).",
        "# Every entry is a guess from names and data: rename fields to the words your questions use,",
        "# add synonyms and descriptions, write measures (revenue = SUM(value) of one data item), and",
        "# delete what is wrong. Then set drafted: false. See the README, \"Semantic models\".",
    ]
    for note in draft.notes[:20]:
        head.append("# note: " + "".join(ch if ch.isprintable() else "?" for ch in note)[:200])
    return "\n".join(head) + "\n" + yaml.safe_dump(draft.model, sort_keys=False, allow_unicode=True, width=100)
