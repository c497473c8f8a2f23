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

A question's own scope is a prompt no other question shares, computed whole every time. A
warehouse is organised in subject areas, though, and names say so (`sls_order`,
`sls_order_line` and their `ref_sls_status` are sales; `customer`, `site` serve every area).
Where they do, the question reads its area whole, the same text for every question of that
area, so the model's state for it is computed once and saved (llm/kvstore.py), and after it
only the tables it ranks high outside that area:

- an area: the model's own (`areas:` in semantic.yaml), or else the logical tables whose name
  starts with the same word, when at least `terms.AREA_MIN` do (a word that starts tables of other areas, `ref_sls_...`, `ref_pur_...`,
  qualifies them and is no area); with the tables no area owns (`customer`, its country) that
  its tables reach through relationships, at most two steps on (an area too long to show whole
  is not used: its questions read their own scope);
- the question's area: that of the best-ranked table an area owns (`mfg_work_order` for "work
  orders", not the many `sls_order...` tables that share only the word "order");
- the extras: the best-ranked tables (and those holding a named value) the area leaves out.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from groundsql.schema.shortlist import Shortlist, words
from groundsql.semantic.catalog import Catalog
from groundsql.semantic.render import render_catalog
from groundsql.semantic.terms import Terms, area_words

__all__ = ["Scope", "area_text", "areas", "scoped"]

_RELATED = 3  # tables added beyond the best for a value the question names
_SHARED_STEPS = 2  # relationships from an area's tables to the shared tables it shows
# An area shown longer than this (about 6,000 tokens) would leave the question too little of an
# 8,192-token context: its questions read their own scope instead.
_AREA_MAX_CHARS = 22_000


@dataclass(frozen=True)
class Scope:
    """What one question reads of a large semantic model."""

    catalog: Catalog  # the part a request may use: the area's and the extras' fields
    terms: Terms  # the question's terms, restricted to it
    tables: tuple[str, ...]  # every logical table shown (the answer's grounds.scope)
    area: str | None = None  # the subject area read whole, if the model has areas
    shared: str | None = None  # the area's part, rendered: the same text for every question of it
    extra: Catalog | None = None  # the question's own tables beyond the area


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


def _part(catalog: Catalog, tables: set[str]) -> Catalog:
    """The catalog restricted to `tables`; the words of the whole model stay known words (a
    field left out is still no unknown word)."""
    fields = {name: ref for name, ref in catalog.fields.items() if ref.table in tables}
    values = {name: v for name, v in catalog.values.items() if name in fields}
    part = replace(catalog, fields=fields, values=values, derived={})
    part.derived.update({k: v for k, v in catalog.derived.items() if k in ("vocabulary", "clarify_vocabulary", "area_words")})
    return part


def areas(catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """Subject area -> its logical tables, shared ones included, in the model's order: the
    model's own `areas`, or those its names show; empty when they show fewer than two. Built
    once per catalog."""
    if "areas" not in catalog.derived:
        names = [t.name for t in catalog.model.tables]
        declared = {name: area.name for area in catalog.model.areas for name in area.tables}
        owner = declared or _named_areas(catalog, names)
        found = set(owner.values())
        neighbours: dict[str, set[str]] = defaultdict(set)
        if declared:
            # Tables no declared area owns may be any table (another subject's facts): an area
            # shares only those its rows refer to (a customer, its country).
            for rel in catalog.model.relationships:
                up = [(rel.from_, rel.to)] if rel.type == "many_to_one" else [(rel.to, rel.from_)] \
                    if rel.type == "one_to_many" else [(rel.from_, rel.to), (rel.to, rel.from_)]
                for a, b in up:
                    neighbours[a].add(b)
        else:
            for a, b in _related(catalog):
                neighbours[a].add(b)
        result: dict[str, tuple[str, ...]] = {}
        if len(found) >= 2 or declared:
            for area in sorted(found):
                own = {n for n, a in owner.items() if a == area}
                shown, frontier = set(own), set(own)
                for _ in range(_SHARED_STEPS):
                    frontier = {t for f in frontier for t in neighbours[f] if t not in owner and t not in shown}
                    shown |= frontier
                result[area] = tuple(n for n in names if n in shown)
        catalog.derived["areas"] = result
        catalog.derived["area_of"] = owner
    return catalog.derived["areas"]  # type: ignore[return-value]


def _named_areas(catalog: Catalog, names: list[str]) -> dict[str, str]:
    """Logical table -> the area its name shows (`sls_order`: sls; `ref_sls_status`: sls)."""
    first = Counter(n.split("_")[0] for n in names if "_" in n)
    candidates = {w for w in first if w.lower() in area_words(catalog)}

    def second(name: str) -> str | None:
        parts = name.split("_")
        return parts[1] if len(parts) > 2 else None

    qualifiers = {w for w in candidates
                  if 2 * sum(second(n) in candidates - {w} for n in names if n.startswith(w + "_")) >= first[w]}
    found = candidates - qualifiers
    owner: dict[str, str] = {}
    for name in names:
        parts = name.split("_")
        if parts[0] in found:
            owner[name] = parts[0]
        elif parts[0] in qualifiers and len(parts) > 2 and parts[1] in found:
            owner[name] = parts[1]
    return owner


def area_text(catalog: Catalog, area: str) -> str | None:
    """An area's part of the model as the model reads it, rendered once per area: the same
    text for every question of it; None when it is too long to show whole."""
    texts: dict[str, str | None] = catalog.derived.setdefault("area_texts", {})  # type: ignore[assignment]
    if area not in texts:
        text = render_catalog(_part(catalog, set(areas(catalog)[area])))
        texts[area] = text if len(text) <= _AREA_MAX_CHARS else None
    return texts[area]


def scoped(catalog: Catalog, question: str, terms: Terms, tables: int, by_area: bool = True) -> Scope:
    """The part of `catalog` the question reads: its area and the best-ranked tables beyond
    it, or (`by_area` off, or a model without areas) its best `tables` logical tables."""
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
    area = _area(catalog, ranked[:tables]) if by_area else None
    shared = area_text(catalog, area) if area else None
    area = area if shared is not None else None
    in_area = areas(catalog)[area] if area else ()
    extra = tuple(t for t in kept if t not in in_area)
    if area:
        # Beyond its area, the tables the question speaks of (a field or a value it names),
        # not every table whose words rank high ("recorded" and "total" are in many).
        extra = tuple(t for t in extra if t in spoken or t in valued)
    shown = in_area + extra if area else tuple(kept)
    part = _part(catalog, set(shown))
    fields = part.fields

    def within(names: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if names is None else tuple(n for n in names if n in fields)

    # Nothing it speaks of is left (it named only values): anything of the tables shown.
    select = within(terms.select) or None
    narrowed = replace(terms, select=select, filters=within(terms.filters),
                       values={k: v for k, v in terms.values.items() if k in fields},
                       counted=within(terms.counted) or (), grouped=within(terms.grouped) or (),
                       measures=within(terms.measures) or (), per=within(terms.per))
    return Scope(part, narrowed, shown, area, shared, _part(catalog, set(extra)) if area and extra else None)


def _area(catalog: Catalog, best: list[str]) -> str | None:
    """The area of the best-ranked table that has one, a table named by the area's word first
    (a reference table, `ref_hr_category`, matches "category" in every area's questions); None
    when the model has no areas or none of `best` is an area's table."""
    if not areas(catalog):
        return None
    owner: dict[str, str] = catalog.derived["area_of"]  # type: ignore[assignment]
    named = (owner[t] for t in best if owner.get(t) == t.split("_")[0])
    return next(named, None) or next((owner[t] for t in best if t in owner), None)
