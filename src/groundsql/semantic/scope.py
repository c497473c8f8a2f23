"""The part of a large semantic model one question needs: the compiled path's prompt on a warehouse.

A semantic model drafted for a warehouse of 500 tables has thousands of fields. Shown whole, it
is some sixty thousand tokens, past the model's context, and the JSON schema of a request over
it as long. Up to `compiled.whole_catalog_fields` fields the model reads the whole catalog
(once per database: its prompt state is cached); above, each question reads the logical tables
it speaks of:

- every table, ranked by how much of the question their words cover (schema/shortlist.py:
  the table's name and its fields' names, synonyms and descriptions, each word weighted by
  how few tables use it), with a bonus for the tables of the fields terms.py found in the question
  (named by their name or a synonym, a named filter) and for those holding a value it names;
- the best `compiled.scope_tables`, whole: every field of each, so that a measure keeps its
  time dimensions and filters.

The request may use only those fields, so the prompt and the schema grow with the question, not
with the warehouse. The tables chosen are the answer's `grounds.scope`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from groundsql.schema.shortlist import Shortlist, words
from groundsql.semantic.catalog import Catalog
from groundsql.semantic.terms import Terms

__all__ = ["scoped"]

_RELATED = 3  # tables added beyond the best for a value the question names


def _shortlist(catalog: Catalog) -> Shortlist:
    """Each logical table as its stemmed words: its name and its fields' names, synonyms and
    descriptions. Built once per catalog."""
    if "shortlist" not in catalog.derived:
        bags: dict[str, set[str]] = defaultdict(set)
        for table in catalog.model.tables:
            bags[table.name] |= words(f"{table.name} {table.description}")
        for ref in catalog.fields.values():
            bags[ref.table] |= words(" ".join([ref.name, *ref.synonyms, ref.description]))
        catalog.derived["shortlist"] = Shortlist(bags)
    return catalog.derived["shortlist"]  # type: ignore[return-value]


def _related(catalog: Catalog) -> set[tuple[str, str]]:
    """Pairs of logical tables a relationship joins, both ways. Built once per catalog."""
    if "related" not in catalog.derived:
        pairs = {(r.from_, r.to) for r in catalog.model.relationships}
        catalog.derived["related"] = pairs | {(b, a) for a, b in pairs}
    return catalog.derived["related"]  # type: ignore[return-value]


def scoped(catalog: Catalog, question: str, terms: Terms, tables: int) -> tuple[Catalog, Terms, tuple[str, ...]]:
    """The catalog restricted to the question's best `tables` logical tables, the terms
    restricted to it, and those tables."""
    valued = {catalog.fields[name].table for name, values in terms.values.items()
              if values and name in catalog.fields}
    spoken = {catalog.fields[name].table for name in (*(terms.select or ()), *(terms.filters or ()))
              if name in catalog.fields}
    ranked = [name for name, _ in _shortlist(catalog).ranked(words(question), valued, spoken)]
    kept = ranked[:tables]
    # A table holding a value the question names, related to a kept one, comes too: "closed
    # shipments" needs the shipments' own status table, whichever status table ranked first.
    related = _related(catalog)
    kept += [t for t in ranked[tables:] if t in valued and any((t, k) in related for k in kept)][:_RELATED]
    kept = tuple(kept)
    inside = set(kept)
    fields = {name: ref for name, ref in catalog.fields.items() if ref.table in inside}
    values = {name: v for name, v in catalog.values.items() if name in fields}
    part = replace(catalog, fields=fields, values=values, derived={})
    # The words of the whole model stay known words: a field left out is still no unknown word.
    part.derived.update({k: v for k, v in catalog.derived.items() if k in ("vocabulary", "clarify_vocabulary")})

    def within(names: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if names is None else tuple(n for n in names if n in fields)

    # Nothing it speaks of is left (it named only values): anything of the kept tables.
    select = within(terms.select) or None
    narrowed = replace(terms, select=select, filters=within(terms.filters),
                       values={k: v for k, v in terms.values.items() if k in fields},
                       counted=within(terms.counted) or (), grouped=within(terms.grouped) or (),
                       measures=within(terms.measures) or (), per=within(terms.per))
    return part, narrowed, kept
