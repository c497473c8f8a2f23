"""Which column stores a number the question states.

Questions often restate what the data holds ("the Forth Bridge has a length of 2467 meters",
"a car with a cargo capacity of 500L"): the number is a column's value, and the query should
read or filter the column rather than compute with the copy. IESR's understanding step maps
numbers to candidate fields with the model; here the number's label ("length", "cargo
capacity", read by quantities.py) is matched to column names word by word, and a unit the
column name spells ("Length_Meters") must have the number's dimension. No model call.
"""

from __future__ import annotations

from groundsql.schema import Schema
from groundsql.schema.compress import name_words
from groundsql.understanding.quantities import Quantity
from groundsql.understanding.rulebase import RuleBase, default_rules

__all__ = ["columns_for"]


def columns_for(quantity: Quantity, schema: Schema, rules: RuleBase | None = None,
                *, limit: int = 2) -> list[str]:
    """"table.column" names whose words the number's label covers (every content word of the
    column name, the unit words aside, and at least half the label's words): the best
    matches, more than one only when they tie."""
    if not quantity.label:
        return []
    rules = rules or default_rules()
    label = set(name_words(quantity.label))
    scored: list[tuple[tuple[int, bool], str]] = []
    for table in schema.tables:
        for column in table.columns:
            if column.is_text:  # "a car model of $30,000": a number is not a name
                continue
            words = name_words(column.name)
            units = [w for w in words if _unit_word(w, rules)]
            content = set(words) - set(units)
            if not content or not content <= label or 2 * len(content) < len(label):
                continue
            if units and quantity.dimensionality and not any(
                    _dimension(u, rules) == quantity.dimensionality for u in units):
                continue
            # "2467 meters": Length_Meters before Length_Feet.
            same_unit = bool(quantity.unit) and any(rules.parse_unit(u) == rules.parse_unit(quantity.unit)
                                                    for u in units)
            scored.append(((len(content), same_unit), f"{table.name}.{column.name}"))
    if not scored:
        return []
    best = max(score for score, _ in scored)  # only the best-matching columns: ties are told
    return [name for score, name in scored if score == best][:limit]


def _unit_word(word: str, rules: RuleBase) -> bool:
    return len(word) > 1 and not rules.is_not_unit(word) and rules.parse_unit(word) is not None


def _dimension(word: str, rules: RuleBase) -> str:
    try:
        return str(rules.dimension(word))
    except Exception:  # noqa: BLE001 - a word pint reads but cannot place has no dimension
        return ""
