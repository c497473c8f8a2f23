"""The safe arithmetic engine: expressions parsed with `ast` and walked by hand.

Numbers, the names of given constants, + - * / ** (bounded exponent), parentheses, unary
minus, and a whitelist of functions. Nothing is ever passed to eval/exec, so attribute
access, other calls, subscripts, strings and lambdas are refused with a CalculatorError
naming what was refused.

It is its own module because both the rule base (rulebase.py: checking a formula's
dimensions over placeholder quantities) and the calculator (calculator.py: computing with a
question's numbers) need it, and the calculator needs the rule base. It knows nothing of
units: it computes over whatever plain numbers or pint quantities it is given.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from typing import Any

import pint

from groundsql.errors import GroundsqlError

MAX_LENGTH = 1000  # characters: a formula for one question is far shorter
MAX_NODES = 400  # AST nodes, so deep or wide expressions cannot exhaust time or stack
MAX_EXPONENT = 100  # |b| in a ** b; 10 ** 100 is already beyond any physical question

Value = float | pint.Quantity


class CalculatorError(GroundsqlError):
    """An expression was refused or could not be computed. `dimensional` is True when the
    cause is a unit mismatch (the formula is wrong, not the syntax)."""

    def __init__(self, message: str, *, dimensional: bool = False) -> None:
        self.dimensional = dimensional
        super().__init__(message)


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

