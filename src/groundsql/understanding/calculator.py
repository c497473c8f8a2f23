"""A safe, unit-aware calculator, so arithmetic is done by code and not by the model.

Expressions are parsed with `ast` and walked by hand: numbers, the names of given
constants, + - * / ** (bounded exponent), parentheses, unary minus, and a whitelist of
functions. Nothing is ever passed to eval/exec, so attribute access, other calls,
subscripts, strings and lambdas are refused with a CalculatorError naming what was refused.

Constants that carry units (extracted `Quantity`s) become pint quantities, so the result has
a unit and a wrong formula fails loudly ("cannot add [length] and [time]"). Note pint's
convention: a revolution is 2*pi (dimensionless) radians, so rpm -> rad/s is 2*pi*n/60,
torque * rpm gives watts and radius * rpm the tip speed directly (writing 2*pi*r*n as well
would count 2*pi twice); ask for "revolution / second", not "Hz", to get turns per second.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pint

from groundsql.errors import GroundsqlError
from groundsql.understanding.quantities import Quantity
from groundsql.understanding.rulebase import RuleBase, default_rules

MAX_LENGTH = 1000  # characters: a formula for one question is far shorter
MAX_NODES = 400  # AST nodes, so deep or wide expressions cannot exhaust time or stack
MAX_EXPONENT = 100  # |b| in a ** b; 10 ** 100 is already beyond any physical question

Value = float | pint.Quantity
Constant = Quantity | float | int


class CalculatorError(GroundsqlError):
    """An expression was refused or could not be computed. `dimensional` is True when the
    cause is a unit mismatch (the formula is wrong, not the syntax)."""

    def __init__(self, message: str, *, dimensional: bool = False) -> None:
        self.dimensional = dimensional
        super().__init__(message)


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
# The evaluator
# ------------------------------------------------------------------------------------------


def _dimensionless(name: str) -> Callable[[Value], float]:
    """Wrap a math function so it takes a plain number or a dimensionless quantity."""
    function = getattr(math, name)

    def call(x: Value) -> float:
        return float(function(_plain(x, name)))

    return call


def _sqrt(x: Value) -> Value:
    if not isinstance(x, pint.Quantity) and x < 0:
        raise CalculatorError("sqrt of a negative number")
    if isinstance(x, pint.Quantity) and x.magnitude < 0:
        raise CalculatorError("sqrt of a negative quantity")
    return x ** 0.5


def _round(x: Value, digits: Value = 0.0) -> Value:
    places = _plain(digits, "round")
    if places != int(places) or abs(places) > 15:
        raise CalculatorError("round takes a whole number of places between -15 and 15")
    return round(x, int(places)) if isinstance(x, pint.Quantity) else float(round(x, int(places)))


def _log(x: Value, base: Value | None = None) -> float:
    if base is None:
        return math.log(_plain(x, "log"))
    return math.log(_plain(x, "log"), _plain(base, "log"))


FUNCTIONS: dict[str, Callable[..., Value]] = {
    "sqrt": _sqrt,
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "log": _log,
    "exp": _dimensionless("exp"),
    "sin": _dimensionless("sin"),
    "cos": _dimensionless("cos"),
    "tan": _dimensionless("tan"),
    "radians": _dimensionless("radians"),
}
_ARITY = {"sqrt": (1, 1), "abs": (1, 1), "round": (1, 2), "min": (1, 20), "max": (1, 20),
          "log": (1, 2), "exp": (1, 1), "sin": (1, 1), "cos": (1, 1), "tan": (1, 1),
          "radians": (1, 1)}
NAMED_NUMBERS = {"pi": math.pi}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}


def parse(expression: str) -> ast.expr:
    """The checked syntax tree of an expression (CalculatorError on anything not allowed)."""
    if not isinstance(expression, str):
        raise CalculatorError("an expression is text")
    if len(expression) > MAX_LENGTH:
        raise CalculatorError(f"expression longer than {MAX_LENGTH} characters")
    if not expression.strip():
        raise CalculatorError("empty expression")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        raise CalculatorError(f"not an arithmetic expression: {_short(expression)}") from err
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise CalculatorError(f"expression has more than {MAX_NODES} parts")
    for node in nodes:
        _check(node)
    return tree.body


def _check(node: ast.AST) -> None:
    """Refuse every node that is not plain arithmetic, naming what it is."""
    if isinstance(node, (ast.Expression, ast.Load, ast.operator, ast.unaryop)):
        if isinstance(node, ast.operator) and type(node) not in (*_BINARY, ast.Pow):
            hint = " (use ** for powers)" if isinstance(node, ast.BitXor) else ""
            raise CalculatorError(f"operator {type(node).__name__} is not allowed{hint}")
        if isinstance(node, ast.unaryop) and not isinstance(node, (ast.USub, ast.UAdd)):
            raise CalculatorError(f"operator {type(node).__name__} is not allowed")
        return
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Name)):
        return
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise CalculatorError(f"only numbers are allowed, not {node.value!r}"[:120])
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            shown = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise CalculatorError(f"function {shown!r} is not allowed "
                                  f"(allowed: {', '.join(sorted(FUNCTIONS))})")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise CalculatorError(f"{node.func.id} takes plain arguments only")
        low, high = _ARITY[node.func.id]
        if not low <= len(node.args) <= high:
            raise CalculatorError(f"{node.func.id} takes {low}..{high} arguments")
        return
    if isinstance(node, ast.Attribute):
        raise CalculatorError("attribute access is not allowed")
    raise CalculatorError(f"{type(node).__name__} is not allowed in a calculation")


def expression_names(expression: str) -> frozenset[str]:
    """The constant names an expression uses (not functions, not pi)."""
    return frozenset(n.id for n in ast.walk(parse(expression))
                     if isinstance(n, ast.Name) and n.id not in FUNCTIONS
                     and n.id not in NAMED_NUMBERS)


def run(expression: str, names: Mapping[str, Value]) -> Value:
    """Evaluate over plain numbers and pint quantities (the rule base uses this with
    placeholder quantities to check dimensions)."""
    tree = parse(expression)
    try:
        value = _eval(tree, names)
    except CalculatorError:
        raise
    except pint.DimensionalityError as err:
        raise CalculatorError(f"units do not agree: {err}", dimensional=True) from err
    except pint.PintError as err:
        raise CalculatorError(f"unit error: {err}", dimensional=True) from err
    except ZeroDivisionError as err:
        raise CalculatorError("division by zero") from err
    except (OverflowError, ValueError, TypeError) as err:
        raise CalculatorError(f"cannot compute {_short(expression)}: {err}") from err
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    if isinstance(magnitude, complex) or not math.isfinite(float(magnitude)):
        raise CalculatorError(f"{_short(expression)} has no finite real value")
    return value


def _short(expression: str) -> str:
    """The expression for a message, cut so hostile input does not flood logs."""
    return repr(expression if len(expression) <= 60 else expression[:57] + "...")


def _eval(node: ast.expr, names: Mapping[str, Value]) -> Value:
    if isinstance(node, ast.Constant):
        return float(node.value)  # floats, so ** cannot build a huge integer
    if isinstance(node, ast.Name):
        if node.id in NAMED_NUMBERS:
            return NAMED_NUMBERS[node.id]
        if node.id not in names:
            raise CalculatorError(f"unknown name {node.id!r}")
        return names[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, names)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, names), _eval(node.right, names)
        if isinstance(node.op, ast.Pow):
            exponent = _plain(right, "an exponent")
            if abs(exponent) > MAX_EXPONENT:
                raise CalculatorError(f"exponent {exponent:g} is beyond ±{MAX_EXPONENT}")
            base = left.magnitude if isinstance(left, pint.Quantity) else left
            if base < 0 and exponent != int(exponent):
                raise CalculatorError("a negative number to a fractional power")
            return left ** exponent
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)  # checked by parse
        return FUNCTIONS[node.func.id](*(_eval(a, names) for a in node.args))
    raise CalculatorError(f"{type(node).__name__} is not allowed")  # unreachable after parse


def _plain(x: Value, what: str) -> float:
    """A plain number from a number or a dimensionless quantity (degrees become radians)."""
    if isinstance(x, pint.Quantity):
        if not x.dimensionless:
            raise CalculatorError(f"{what} needs a dimensionless number, got {x.dimensionality}",
                                  dimensional=True)
        return float(x.to("dimensionless").magnitude)
    return float(x)


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
