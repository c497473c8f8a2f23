"""Which column stores a number the question states.

Questions often restate what the data holds ("the Forth Bridge has a length of 2467 meters",
"a car with a cargo capacity of 500L"): the number is a column's value, and the query should
read or filter the column rather than compute with the copy. IESR's understanding step maps
numbers to candidate fields with the model; here the number's label ("length", "cargo
capacity", read by quantities.py) is matched to column names word by word, and a unit the
column name spells ("Length_Meters") must have the number's dimension. No model call.
"""

from __future__ import annotations

import pint

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
    if not quantity.label or quantity.supposed:  # "increased to 1000 kWh": no row holds it
        return []
    rules = rules or default_rules()
    label = set(name_words(quantity.label))
    target = rules.parse_unit(quantity.unit) if quantity.unit else None
    scored: list[tuple[tuple[int, bool], str]] = []
    for table in schema.tables:
        for column in table.columns:
            if column.is_text:  # "a car model of $30,000": a number is not a name
                continue
            spelled = {w: _unit(w, rules) for w in name_words(column.name)}
            units = [u for u in spelled.values() if u is not None]
            content = {w for w, u in spelled.items() if u is None}
            if not content or not content <= label or 2 * len(content) < len(label):
                continue
            if units and quantity.dimensionality and not any(
                    str(u.dimensionality) == quantity.dimensionality for u in units):
                continue
            # "2467 meters": Length_Meters before Length_Feet.
            same_unit = target is not None and target in units
            scored.append(((len(content), same_unit), f"{table.name}.{column.name}"))
    if not scored:
        return []
    best = max(score for score, _ in scored)  # only the best-matching columns: ties are told
    return [name for score, name in scored if score == best][:limit]


def _unit(word: str, rules: RuleBase) -> pint.Unit | None:
    """The unit a word of a column name spells ("meters" of Length_Meters), else None."""
    return rules.parse_unit(word) if len(word) > 1 and not rules.is_not_unit(word) else None
