"""Information understanding (IESR-style): the numbers and units a question states, a rule
base of named quantities and formulas checked by dimensional analysis, and a safe,
unit-aware calculator, so the model never does arithmetic or unit conversion itself.

  quantities.py  extract_quantities(question) -> [Quantity]   (pint; roles for ids, years...)
  rulebase.py    RuleBase.load(path) / check_relation(...)    (rules.yaml, validated)
                 formulas_applying(question, quantities): the formulas its numbers fit
  expressions.py parse(expr), run(expr, names): the safe arithmetic both the rule base and
                 the calculator use (no units of its own)
  calculator.py  evaluate(expr, constants), convert(q, unit), sql_constants(quantities)
  fields.py      columns_for(quantity, schema): the columns that store a stated number
  unstated.py    unstated_numbers(sql, question): numbers a query compares with but nobody gave
  binding.py     bind_constants(sql, values, schema): constant names written as columns -> numbers
                 read_stored(sql, stated, schema): the question's copies of stored values -> columns
                 drop_restated_filters(sql, stated, schema): a named row's restated values, unfiltered
  state.py       semantic_state(reply, request, question): the model's semantic state, less echoes
"""

from __future__ import annotations

from groundsql.understanding.calculator import (
    CalcResult,
    CalculatorError,
    convert,
    evaluate,
    named_constants,
    sql_constants,
    sql_value,
)
from groundsql.understanding.binding import bind_constants, drop_restated_filters, read_stored
from groundsql.understanding.fields import columns_for
from groundsql.understanding.state import STATE_SCHEMA, semantic_state
from groundsql.understanding.unstated import unstated_numbers
from groundsql.understanding.quantities import Quantity, Role, extract_quantities
from groundsql.understanding.rulebase import (
    Formula,
    NamedQuantity,
    Relation,
    RuleBase,
    Settings,
    Verdict,
    default_rules,
)

__all__ = [
    "STATE_SCHEMA",
    "CalcResult",
    "CalculatorError",
    "Formula",
    "NamedQuantity",
    "Quantity",
    "Relation",
    "Role",
    "RuleBase",
    "Settings",
    "Verdict",
    "bind_constants",
    "columns_for",
    "convert",
    "default_rules",
    "drop_restated_filters",
    "evaluate",
    "extract_quantities",
    "named_constants",
    "read_stored",
    "semantic_state",
    "sql_constants",
    "sql_value",
    "unstated_numbers",
]
