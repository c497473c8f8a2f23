"""A safe, unit-aware calculator, so arithmetic is done by code and not by the model.

Expressions are parsed and evaluated by expressions.py (numbers, the names of given
constants, + - * / **, a whitelist of functions; nothing is ever passed to eval/exec);
this module gives the constants and the result their units.

Constants that carry units (extracted `Quantity`s) become pint quantities, so the result has
a unit and a wrong formula fails loudly ("cannot add [length] and [time]"). Note pint's
convention: a revolution is 2*pi (dimensionless) radians, so rpm -> rad/s is 2*pi*n/60,
torque * rpm gives watts and radius * rpm the tip speed directly (writing 2*pi*r*n as well
would count 2*pi twice); ask for "revolution / second", not "Hz", to get turns per second.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pint

# CalculatorError, expression_names and parse are imported from here too (as before the
# expression engine moved to expressions.py).
from groundsql.understanding.expressions import FUNCTIONS, NAMED_NUMBERS, Value, run
from groundsql.understanding.expressions import CalculatorError as CalculatorError
from groundsql.understanding.expressions import expression_names as expression_names
from groundsql.understanding.expressions import parse as parse
from groundsql.understanding.quantities import Quantity
from groundsql.understanding.rulebase import RuleBase, default_rules

Constant = Quantity | float | int


@dataclass(frozen=True)
class CalcResult:
    """A computed value in `unit` ("" when dimensionless)."""

    value: float
    unit: str = ""
    dimensionality: str = "dimensionless"
    rules: RuleBase = field(default_factory=default_rules, repr=False, compare=False)

    def quantity(self) -> Value:
        return self.rules.registry.Quantity(self.value, self.unit) if self.unit else self.value

    def to(self, target: str) -> CalcResult:
        """The same value in `target` (any unit the rules understand: "km/h", "rpm", "hp")."""
        unit = self.rules.parse_unit(target)
        if unit is None:
            raise CalculatorError(f"unknown unit {target!r}")
        try:
            converted = self.rules.registry.Quantity(self.value, self.unit or "dimensionless").to(unit)
        except pint.PintError as err:
            raise CalculatorError(f"cannot convert {self} to {target}: {err}", dimensional=True) from err
        return _result(converted, self.rules, collapse=False)

    def to_base(self) -> CalcResult:
        """The same value in SI base units (kg, m, s, ...)."""
        if not self.unit:
            return self
        return _result(self.rules.registry.Quantity(self.value, self.unit).to_base_units(), self.rules)

    def __str__(self) -> str:
        return f"{_number(self.value)} {_symbol(self.rules, self.unit)}".strip()


# ------------------------------------------------------------------------------------------
# Public functions
# ------------------------------------------------------------------------------------------


def evaluate(expression: str, constants: Mapping[str, Constant | CalcResult] | None = None,
             *, rules: RuleBase | None = None) -> CalcResult:
    """The value of `expression` over `constants` (name -> Quantity, CalcResult or number).
    A percentage constant counts as its fraction (15% -> 0.15)."""
    rules = rules or default_rules()
    names: dict[str, Value] = {}
    for name, constant in (constants or {}).items():
        if not name.isidentifier() or name in FUNCTIONS or name in NAMED_NUMBERS:
            raise CalculatorError(f"{name!r} cannot name a constant")
        names[name] = _value(constant, rules)
    return _result(run(expression, names), rules)


def convert(quantity: Quantity | CalcResult, target_unit: str, *,
            rules: RuleBase | None = None) -> CalcResult:
    """`quantity` in `target_unit` ("15%" -> "dimensionless" is 0.15)."""
    rules = rules or default_rules()
    if isinstance(quantity, Quantity):
        start = CalcResult(quantity.value, quantity.unit, quantity.dimensionality or "dimensionless", rules)
    else:
        start = quantity
    return start.to(target_unit)


def named_constants(quantities: Iterable[Quantity]) -> dict[str, Quantity]:
    """The quantities worth computing with, by a name for formulas ("wind_speed"; unnamed
    ones by their kind of number, "q1", "q2"...). Names are unique."""
    out: dict[str, Quantity] = {}
    for i, q in enumerate((q for q in quantities if q.role in CONSTANT_ROLES), 1):
        name = q.name or f"q{i}"
        while name in out or name in FUNCTIONS or name in NAMED_NUMBERS:
            name = f"{name}_{i}"
        out[name] = q
    return out


CONSTANT_ROLES = frozenset({"physical", "percent", "money", "count", "plain"})


def sql_constants(quantities: Iterable[Quantity], *, rules: RuleBase | None = None,
                  stored: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """Short lines for an SQL prompt's context: each constant as written, and converted to
    the unit its kind is computed in when that differs ("rotational_speed = 10000 rpm =
    1047.2 rad/s", "15% = 0.15"), and the columns that store it when `stored` names them
    (by constant name, see fields.py). Years, IDs and limits are filter literals, not constants."""
    rules = rules or default_rules()
    lines = []
    for name, q in named_constants(quantities).items():
        line = _constant_line(name, q, rules)
        if line is None:
            continue
        if stored and stored.get(name):
            line += f" (a value of {' or '.join(stored[name])})"
        lines.append(line)
    return lines


def sql_value(q: Quantity, *, rules: RuleBase | None = None) -> float:
    """The number a query computes with for `q`, the last one its `sql_constants` line shows:
    a percentage as its fraction, a measurement in the unit its kind is computed in."""
    rules = rules or default_rules()
    if q.percent:
        return q.fraction
    converted = _in_display_unit(q, rules)
    return converted.value if converted is not None else q.value


def _constant_line(name: str, q: Quantity, rules: RuleBase) -> str | None:
    label = f"{name} = " if q.name else ""
    if q.percent:
        return f"{label}{_number(q.value)}% = {_number(q.fraction)}"
    if not q.unit:
        return f"{label}{_number(q.value)}" if q.name else None  # an unnamed bare number tells nothing
    line = f"{label}{CalcResult(q.value, q.unit, q.dimensionality, rules)}"
    converted = _in_display_unit(q, rules)
    return f"{line} = {converted}" if converted is not None else line


def _in_display_unit(q: Quantity, rules: RuleBase) -> CalcResult | None:
    """`q` in the unit the rule base computes its kind in; None when it is in it already."""
    kind = rules.kind_of(q.unit) if q.unit else None
    display = rules.quantities[kind].display if kind and rules.quantities[kind].convert else None
    if not display or rules.parse_unit(display) == rules.parse_unit(q.unit):
        return None
    return CalcResult(q.value, q.unit, q.dimensionality, rules).to(display)


# ------------------------------------------------------------------------------------------
# Conversions between the three shapes of a number
# ------------------------------------------------------------------------------------------


def _value(constant: Constant | CalcResult, rules: RuleBase) -> Value:
    if isinstance(constant, CalcResult):
        return constant.quantity()
    if isinstance(constant, Quantity):
        if constant.percent:
            return constant.fraction
        if not constant.unit:
            return float(constant.value)
        return rules.registry.Quantity(float(constant.value), constant.unit)
    if isinstance(constant, bool) or not isinstance(constant, (int, float)):
        raise CalculatorError(f"a constant is a number or a Quantity, not {type(constant).__name__}")
    return float(constant)


def _result(value: Value, rules: RuleBase, *, collapse: bool = True) -> CalcResult:
    if isinstance(value, pint.Quantity):
        if collapse and value.dimensionless:
            # km / m and percent collapse to a plain number; a unit left over would mislead.
            return CalcResult(float(value.to("dimensionless").magnitude), "", "dimensionless", rules)
        return CalcResult(float(value.magnitude), str(value.units), str(value.dimensionality), rules)
    return CalcResult(float(value), "", "dimensionless", rules)


def _number(value: float) -> str:
    """Short, exact enough for a prompt: 6 significant digits, no trailing zeros."""
    return f"{value:.6g}"


# pint's abbreviations where people write something else ("l", "turn / min", "m·N").
_SYMBOL_TOKENS = {"l": "L", "hkm": "100km", "turn": "rev", "a": "year", "d": "day"}  # pint: annum, day
_SYMBOL_WHOLE = {"rev/min": "rpm", "m·N": "N·m", "m·kN": "kN·m"}


def _symbol(rules: RuleBase, unit: str) -> str:
    """'meter / second' -> 'm/s': units as people write them."""
    if not unit:
        return ""
    parsed = rules.parse_unit(unit)
    if parsed is None:
        return unit
    text = format(parsed, "~").replace(" / ", "/").replace(" * ", "·").replace(" ** ", "^")
    text = re.sub(r"[A-Za-z_]+", lambda m: _SYMBOL_TOKENS.get(m.group(), m.group()), text)
    return _SYMBOL_WHOLE.get(text, text)
