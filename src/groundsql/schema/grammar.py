"""The SQL a model may write over a schema, as a grammar its decoder enforces (llguidance).

PICARD's lesson (Scholak et al. 2021): a small model gains most when the tokens that would
name something that does not exist are never on offer. The grammar built here admits a SELECT
subset of the dialect whose table names are the schema's, whose columns are the schema's, and
whose qualified columns `table.column` pair a table with one of its own columns; a table may be
aliased by its initials (`fd` for financial_data, bound to that table like its name) or by
`T1`..`T9`, the Spider habit of small models, which the grammar cannot bind to a table (the
query's FROM comes after its SELECT list): such a qualifier admits any column of the schema, and
a column on the wrong table is left to the repair of misqualified columns
(strategies/feedback.py). Where lookup resolved a reference key (`metric_id` is 7 or 12), a
comparison of that column with a literal admits only the resolved values.

What it leaves out, so that nothing it admits can name a missing object: common table
expressions and derived tables (their names and columns are the model's own), and ORDER BY a
column alias. Names that are not plain identifiers (spaces, quotes, non-ASCII letters, reserved
words) are admitted only quoted as the dialect quotes them. Keywords are case-insensitive, as
are plain identifiers where the database folds them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groundsql.safety.functions import SYNTAX, allowed_functions
from groundsql.schema.model import Schema, Table

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words the grammar itself uses: a name spelled like one must be quoted.
_RESERVED = frozenset("""
select distinct from where group by having order limit offset union all intersect except join
inner left right full outer cross on as and or not in is null like glob between exists case when
then else end asc desc cast true false over partition filter with using natural values
""".split())
_T_ALIAS = r"[Tt][1-9]"  # T1..T9, the aliases small models write
_BACKTICKS = frozenset({"mysql", "spark", "databricks", "hive", "bigquery"})
# The aggregates the grammar lets take `*` or DISTINCT; other functions take a list of arguments.
_AGGREGATES = ("count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg")


@dataclass(frozen=True)
class SqlGrammar:
    """A grammar and what it admits, for the grounds."""

    text: str  # an llguidance (Lark) grammar
    tables: int
    columns: int
    resolved: int  # key columns whose literals are the resolved values


def sql_grammar(schema: Schema, resolved: Mapping[str, Sequence[Any]] | None = None) -> SqlGrammar:
    """The grammar of the queries a model may write over `schema`. `resolved` maps a key
    column's name to the values lookup resolved for it: compared with a literal, that column
    admits only those.

    A T-alias (T1, T2, ...) is admitted before any column of any table, since the FROM clause
    that binds it comes after the SELECT list. Binding each to one table takes a copy of the
    rules per assignment, beyond llguidance's budget per token; numbering the tables in the
    prompt (T1 is the first table) made the model join them all: 46 EX against 70 on Spider
    100 (BENCHMARKS.md). Misbound aliases are repaired by code instead (strategies/feedback.py)."""
    dialect = schema.dialect
    pinned = {name.lower(): list(values) for name, values in (resolved or {}).items()
              if values and any(t.column(name) is not None for t in schema.tables)}
    # Names are terminals (one lexeme each, however many alternatives): as rules, a schema of
    # a thousand columns overflows the parser's row of items.
    rules: list[str] = []
    table_refs: list[str] = []
    columns: list[str] = []  # the forms of a column that is not pinned
    pinned_forms: dict[str, list[str]] = {name: [] for name in pinned}
    spelled: dict[str, str] = {}  # lower-case column name -> its spellings
    t_alias = "TALIAS"
    for i, table in enumerate(schema.tables):
        names = [f'"{a}"' for a in _initials(table, schema.tables)]
        aliases = " | ".join(names)
        rules.append(f"TN{i}: {' | '.join(_spellings(table.name, dialect))}")
        rules.append(f"tq{i}: TN{i}" + (f" | {aliases}" if aliases else ""))
        bound = " | ".join(n for n in (aliases, t_alias) if n)
        table_refs.append(f'TN{i} ("AS"i? ({bound}))?' if bound else f"TN{i}")
        plain = [s for c in table.columns if c.name.lower() not in pinned for s in _spellings(c.name, dialect)]
        if plain:
            rules.append(f"TC{i}: {' | '.join(plain)}")
            columns.append(f'tq{i} "." TC{i}')
        for column in table.columns:
            spelled.setdefault(column.name.lower(), " | ".join(_spellings(column.name, dialect)))
            if column.name.lower() in pinned:
                pinned_forms[column.name.lower()].append(f"tq{i}")
    rules.append("table_ref: " + " | ".join(table_refs))
    rules.append("qualified_star: (" + " | ".join([*(f"tq{i}" for i in range(len(schema.tables))), *[t_alias] * bool(t_alias)])
                 + ') "." "*"')
    plain_names = [forms for name, forms in spelled.items() if name not in pinned]
    if plain_names:
        rules.append(f"ANY: {' | '.join(plain_names)}")
        columns += ["ANY", *['TALIAS "." ANY'] * bool(t_alias)]
    rules.append("column: " + " | ".join(columns))
    if pinned:
        for j, (name, values) in enumerate(pinned.items()):
            rules.append(f"PIN{j}: {spelled[name]}")
            qualifiers = " | ".join([*pinned_forms[name], *[t_alias] * bool(t_alias)])
            rules.append(f'pin{j}: PIN{j} | ({qualifiers}) "." PIN{j}')
            rules.append(f"PV{j}: {' | '.join(_literal(v) for v in values)}")
        refs = range(len(pinned))
        rules.append("pinned: " + " | ".join(f"pin{j}" for j in refs))
        rules.append("pinned_test: " + " | ".join(
            f'pin{j} (("=" | "!=" | "<>") PV{j} | "NOT"i? "IN"i "(" PV{j} ("," PV{j})* ")")' for j in refs))
    allowed = allowed_functions(dialect)
    rules.append("FUNC: " + " | ".join(_keyword(f) for f in sorted(allowed - set(_AGGREGATES) - SYNTAX)))
    rules.append("AGG: " + " | ".join(_keyword(f) for f in _AGGREGATES if f in allowed))
    rules.append(f"TALIAS: /{_T_ALIAS}/")
    # SQLite and MySQL read a double-quoted word that names no column as a string, and small
    # models trained on Spider write strings so; PostgreSQL and DuckDB read it as a name.
    strings = _STRINGS + (r"|/\"([^\"\\\n]|\"\")*\"/" if dialect in ("sqlite", "mysql") else "")
    rules.append(f"STRING: {strings}")
    text = _CORE.replace("%PINNED_EXPR%", " | pinned" if pinned else "") \
                .replace("%PINNED_TEST%", " | pinned_test | pinned CMP (pinned | column) | column CMP pinned"
                         ' | pinned "NOT"i? "IN"i "(" query ")"'
                         if pinned else "")
    return SqlGrammar(text="%llguidance {}\n" + text + "\n".join(rules) + "\n",
                      tables=len(schema.tables), columns=sum(len(t.columns) for t in schema.tables),
                      resolved=len(pinned))


_STRINGS = r"/'([^'\\\n]|'')*'/"

# The statement, as the generation prompts ask for it: one query in a ```sql block.
_CORE = r"""
%ignore /[ \t\r\n]+/
start: "```sql" query ";"? "```"
query: select_core (set_op select_core)* order_by? limit?
set_op: "UNION"i "ALL"i? | "INTERSECT"i | "EXCEPT"i
select_core: "SELECT"i "DISTINCT"i? select_item ("," select_item)* from_clause? where? group_by? having?
select_item: "*" | qualified_star | expr ("AS"i? ALIAS)?
from_clause: "FROM"i table_ref (join | "," table_ref)*
join: ("INNER"i | "LEFT"i "OUTER"i? | "CROSS"i)? "JOIN"i table_ref ("ON"i condition)?
where: "WHERE"i condition
group_by: "GROUP"i "BY"i expr ("," expr)*
having: "HAVING"i condition
order_by: "ORDER"i "BY"i order_item ("," order_item)*
order_item: expr ("ASC"i | "DESC"i)?
limit: "LIMIT"i INT ("OFFSET"i INT)?
condition: conjunction ("OR"i conjunction)*
conjunction: negation ("AND"i negation)*
negation: "NOT"i? test
test: "(" condition ")" | value CMP value | value "NOT"i? "IN"i "(" (query | expr ("," expr)*) ")"
    | value "NOT"i? "BETWEEN"i value "AND"i value | value "NOT"i? ("LIKE"i | "GLOB"i) value
    | expr "IS"i "NOT"i? "NULL"i | "EXISTS"i "(" query ")"%PINNED_TEST%
expr: value%PINNED_EXPR%
value: operand (OP operand)*
operand: column | literal | call | "(" value ")" | "(" query ")" | case | "-" operand
    | "CAST"i "(" expr "AS"i TYPE ")" | "EXTRACT"i "(" WORD "FROM"i expr ")"
call: AGG "(" ("*" | "DISTINCT"i? expr) ")" window? | FUNC "(" (expr ("," expr)*)? ")" window?
window: "OVER"i "(" ("PARTITION"i "BY"i expr ("," expr)*)? order_by? ")"
case: "CASE"i expr? ("WHEN"i (condition | expr) "THEN"i expr)+ ("ELSE"i expr)? "END"i
literal: NUMBER | STRING | "NULL"i | "TRUE"i | "FALSE"i | ("DATE"i | "TIMESTAMP"i | "INTERVAL"i) STRING
CMP: "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
OP: "+" | "-" | "*" | "/" | "%" | "||"
INT: /[0-9]+/
NUMBER: /[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?|\.[0-9]+/
TYPE: /[A-Za-z][A-Za-z ]*(\([0-9]+(, *[0-9]+)?\))?/
WORD: /[A-Za-z]+/
ALIAS: /[A-Za-z_][A-Za-z0-9_]*/
"""


def grammar_problem(text: str) -> str | None:
    """Why llguidance cannot compile `text`, or None when it can. The model runtime ignores a
    grammar it cannot compile without a word (measured with xllamacpp), so it is checked first."""
    try:
        import llguidance
    except ImportError:
        return "the llguidance package, which checks grammars, is not installed"
    failed, messages = llguidance.LLMatcher.validate_grammar_with_warnings(text)
    return (messages[0].strip().splitlines()[0] if messages else "invalid grammar") if failed else None


def admitted(text: str, grammar: str) -> str | None:
    """How a model's answer stands to `grammar`: "admitted" (whole), "cut off" (a beginning the
    grammar admits: the answer ran into max_tokens while under the grammar) or "outside" (the
    runtime let the grammar go: past llguidance's limits it decodes freely with no more than a
    log line, "Too many items (limit 50000; mask) ... stopping", measured with xllamacpp).
    None when llguidance is not installed."""
    try:
        import llguidance
    except ImportError:
        return None
    tokenizer = llguidance.LLTokenizer("byte")
    matcher = llguidance.LLMatcher(tokenizer, grammar)
    tokens = tokenizer.tokenize_str(text.strip())
    if matcher.try_consume_tokens(tokens) < len(tokens):
        return "outside"
    return "admitted" if matcher.is_accepting() else "cut off"


def _spellings(name: str, dialect: str) -> list[str]:
    """How a query may write this name: bare where the database reads it so (case-insensitive
    where it folds case), and quoted as the dialect quotes."""
    mark = "`" if dialect in _BACKTICKS else '"'
    quoted = _lark_string(mark + name.replace(mark, mark + mark) + mark)
    # PostgreSQL folds an unquoted name to lower case: `Name` must be quoted there.
    bare = _PLAIN.fullmatch(name) and name.lower() not in _RESERVED \
        and (dialect != "postgres" or name == name.lower())
    return [_lark_string(name) + "i", quoted] if bare else [quoted]


def _initials(table: Table, tables: Iterable[Table]) -> list[str]:
    """Short aliases bound to this table: its initials (`fd`), when no other table of the
    schema has the same and they are not a word the grammar uses or a T-alias."""
    def initials(name: str) -> str:
        parts = [p for p in re.split(r"[_\W]+", name) if p]
        return "".join(p[0] for p in parts).lower() if len(parts) >= 2 else ""

    mine = initials(table.name)
    if not mine or mine in _RESERVED or re.fullmatch(_T_ALIAS, mine) or not _PLAIN.fullmatch(mine):
        return []
    others = [initials(t.name) for t in tables if t is not table]
    names = {t.name.lower() for t in tables}
    if mine in others or mine in names:
        return []
    return [mine]


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return _lark_string("1" if value else "0")
    if isinstance(value, (int, float)):
        return _lark_string(repr(value) if isinstance(value, float) else str(value))
    return _lark_string("'" + str(value).replace("'", "''") + "'")


def _keyword(word: str) -> str:
    return _lark_string(word) + "i"


def _lark_string(text: str) -> str:
    # llguidance reads a Lark string literal as JSON does.
    return json.dumps(text, ensure_ascii=False)
