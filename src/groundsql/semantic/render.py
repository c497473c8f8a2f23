"""The semantic model as the model choosing a request reads it: every name it may use, what it
means, and the values of the small dimensions. It is the shared part of every compiled
question's prompt (computed once per database), so it spends words on meaning, not on SQL."""

from __future__ import annotations

import re

from groundsql.semantic.catalog import Catalog, FieldRef
from groundsql.semantic.model import SCALES

_VALUES_SHOWN = 40
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([ T][\d:.]+)?")


def render_catalog(catalog: Catalog, whole: bool = True) -> str:
    """The catalog's fields; `whole=False` for a part shown after another (no description,
    currencies, scales or rules again)."""
    model = catalog.model
    lines: list[str] = []
    if whole and model.description and not model.description.upper().startswith("TODO"):
        lines += [model.description.strip(), ""]
    lines.append("Measures (numbers a question asks for, aggregated over the rows it selects):")
    for ref in catalog.of_kind("measure", "derived"):
        lines.append(f"- {ref.name}{_about(ref)}")
    facts = catalog.of_kind("fact")
    if facts:
        lines.append("- of a stored number: " + ", ".join(
            f.source.aggregate_name(a) for f in facts for a in f.source.aggregations))  # type: ignore[union-attr]
    lines += ["", "Dimensions (what to show, group by or filter on):"]
    for ref in catalog.of_kind("dimension"):
        values = catalog.values.get(ref.name)
        if values and all(_DATE.fullmatch(str(v)) for v in values):
            # A warehouse's month_start: 36 dates say no more than their first and last.
            lines.append(f"- {ref.name}{_about(ref)}: {len(values)} dates, {min(map(str, values))} to "
                         f"{max(map(str, values))}")
        elif values:
            shown = ", ".join(map(str, values[:_VALUES_SHOWN])) + (", ..." if len(values) > _VALUES_SHOWN else "")
            lines.append(f"- {ref.name}{_about(ref)}: {shown}")
        elif ref.source.entity:  # type: ignore[union-attr]
            lines.append(f"- {ref.name}{_about(ref)} (a name found in the question)")
        else:
            lines.append(f"- {ref.name}{_about(ref)}")
    for ref in facts:
        lines.append(f"- {ref.name}{_about(ref)} (a stored number: shown, or compared with a number)")
    times = [f for f in catalog.of_kind("time") if f.grain is None]
    if times:
        lines += ["", "Time (filter on a year, 2023, a month, 2023-03, or a day, 2023-03-31; group by a grain):"]
        for ref in times:
            grains = [g.name for g in catalog.of_kind("time") if g.source is ref.source and g.grain]
            kind = "a year" if ref.source.type == "year" else "a date"  # type: ignore[union-attr]
            fiscal = ", fiscal" if getattr(ref.source, "fiscal", False) else ""
            by = f"; by {', '.join(grains)}" if grains else ""
            lines.append(f"- {ref.name} ({kind}{fiscal}){_about(ref)}{by}")
    filters = catalog.of_kind("filter")
    if filters:
        lines += ["", "Named filters (no value):"]
        lines += [f"- {ref.name}{_about(ref)}" for ref in filters]
    if not whole:
        return "\n".join(lines)
    if model.currency is not None and catalog.currency_keys:
        lines += ["", f"currency (convert amounts into): {', '.join(sorted(catalog.currency_keys))}"]
    if any(f.kind in ("measure", "derived") and f.source.amount for f in catalog.fields.values()):  # type: ignore[union-attr]
        lines.append(f"scale (divide amounts by): {', '.join(SCALES)}")
    if model.rules:
        lines += ["", "Rules:", *(f"- {rule.strip()}" for rule in model.rules)]
    return "\n".join(lines)


def _about(ref: FieldRef) -> str:
    words = [ref.description.strip().rstrip(".")] if ref.description.strip() else []
    if ref.synonyms:
        words.append("also: " + ", ".join(ref.synonyms))
    return f" - {'; '.join(words)}" if words else ""
