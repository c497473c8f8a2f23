"""The SQL safety validator (FLINT 3.5 / H.1).

SQL written by a language model, or sent by a person through the service, is untrusted: it
may be wrong, and it may be hostile (prompt injection can put any text in the model's mouth).
`validate_sql` parses it with sqlglot in the database's own dialect and accepts it only if
every part of it is on a list of things a read-only question may do:

* exactly one statement, a SELECT (or set operation, or WITH ... SELECT) at the root;
* every syntax node of a kind listed in `_ALLOWED_NODES` (a query's clauses, operators,
  literals, CASE, CAST, window specifications ...): anything else, a write, a setting, a
  lock, PIVOT, a qualified function name, is refused by not being listed;
* every function call on the dialect's allow-list (safety/functions.py), by the name the
  database will call, and not defined by the database itself;
* every table one the database has (its catalog, when the caller gives it), never a system
  catalog except the introspection views a policy opens, and within the policy's table and
  column allow-lists (safety/columns.py);
* at most `max_tokens` tokens and `max_depth` levels of nesting, checked in linear time;
* joins within the policy's fan-out limit and no unconstrained cartesian explosion.

It returns SQL *re-rendered from the checked tree*, with a LIMIT added where there is none,
and checks that rendering again, so what runs is what was checked even where sqlglot's
tokenizer and the database's disagree about quoting or comments.

The validator is one layer; the executor is the other (db/): a read-only connection or
transaction, a role that cannot write, a timeout, a row and byte cap and a memory bound.

Choices worth knowing (each also explained where it is made):
* Catalogs (pg_catalog, information_schema, sqlite_master, duckdb_* ...) are refused, except
  the views introspection needs when `SafetyConfig.catalog_views` is set and no table
  allow-list is: they hold role passwords, server settings and file paths.
* A schema-qualified table compares by bare name only when the schema is the dialect's
  default one (main, public); any other schema must be listed as "schema.table".
* A construct the dialect's own generator cannot render is refused as "unsupported SQL".
* MySQL's executable comments (/*! ... */, MariaDB's /*M! ... */) are refused, not dropped:
  the server runs what they hold, so the statement means something other than it reads.
* An existing LIMIT is kept even when larger than `default_limit` (the executor caps rows
  anyway, and changing an explicit LIMIT would change the answer); LIMIT ALL, LIMIT NULL and
  negative limits count as none.
"""

from __future__ import annotations

import logging
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.optimizer.scope import Scope, traverse_scope

from groundsql.config import SafetyConfig
from groundsql.errors import ConfigError, UnsafeSQLError
from groundsql.safety import functions
from groundsql.safety.tables import Owners, check_tables_and_columns, scope_owners

if TYPE_CHECKING:
    from groundsql.db.introspect import Catalog

__all__ = ["ValidatedSQL", "validate_sql", "parse_untrusted"]


# --------------------------------------------------------------------------------------------
# What a query may contain
# --------------------------------------------------------------------------------------------


def _classes(*names: str) -> tuple[type[exp.Expression], ...]:
    # A name this sqlglot lacks is skipped; a test asserts none is missing, so an upgrade that
    # renames a class fails loudly instead of silently refusing (or allowing) a construct.
    return tuple(getattr(exp, name) for name in names if hasattr(exp, name))


_ALLOWED_NODE_NAMES = (
    # Query structure
    "Select", "Union", "Intersect", "Except", "With", "CTE", "Subquery", "From", "Join", "Where",
    "Group", "Having", "Qualify", "Order", "Ordered", "Limit", "Offset", "Fetch", "Distinct",
    "Values", "Tuple", "TableAlias", "Alias", "Star", "Column", "Identifier", "Table", "Lateral",
    "Window", "WindowSpec", "Filter", "WithinGroup", "IgnoreNulls", "RespectNulls", "Cube",
    "Rollup", "GroupingSets", "LimitOptions",
    # DuckDB's COLUMNS('regex') and #n: columns chosen without naming them (refused on tables
    # with a column allow-list in safety/tables.py).
    "Columns", "PositionalColumn",
    # Values
    "Literal", "Null", "Boolean", "Var", "DataType", "DataTypeParam", "Interval", "IntervalSpan",
    "HexString", "ByteString", "BitString", "National", "RawString", "UnicodeString", "Heredoc",
    "JSONPath", "JSONPathKey", "JSONPathRoot", "JSONPathSubscript", "JSONPathWildcard",
    "JSONPathSlice", "Bracket", "Slice", "Lambda", "Kwarg", "AtTimeZone",
    # Operators
    "Paren", "Not", "Neg", "And", "Or", "Xor", "EQ", "NEQ", "NullSafeEQ", "NullSafeNEQ", "GT",
    "GTE", "LT", "LTE", "Is", "In", "Between", "Like", "ILike", "SimilarTo", "Glob", "Escape",
    "Collate", "Any", "All", "Add", "Sub", "Mul", "Div", "IntDiv", "Mod", "Pow", "DPipe",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitwiseLeftShift",
    "BitwiseRightShift",
)
_ALLOWED_NODES = _classes(*_ALLOWED_NODE_NAMES)
# Operators that sqlglot models as functions (Or is a Func there); they call nothing.
_OPERATORS = tuple(c for c in _ALLOWED_NODES if issubclass(c, exp.Func))

# Refusals a reader recognises: the statements that write, change the session or are not a
# query, by their keyword ...
_STATEMENT_NAMES = {
    "Insert": "INSERT", "Update": "UPDATE", "Delete": "DELETE", "Merge": "MERGE", "Create": "CREATE",
    "Drop": "DROP", "Alter": "ALTER", "TruncateTable": "TRUNCATE", "Copy": "COPY", "Set": "SET",
    "Pragma": "PRAGMA", "Attach": "ATTACH", "Detach": "DETACH", "Use": "USE", "Transaction": "BEGIN",
    "Commit": "COMMIT", "Rollback": "ROLLBACK", "Grant": "GRANT", "Revoke": "REVOKE",
    "LoadData": "LOAD DATA", "Into": "SELECT INTO", "Install": "INSTALL", "Describe": "DESCRIBE",
    "Summarize": "SUMMARIZE", "Show": "SHOW", "Analyze": "ANALYZE", "Kill": "KILL",
    "Execute": "EXECUTE", "ExecuteSql": "EXECUTE", "Export": "EXPORT", "Comment": "COMMENT",
    "Declare": "DECLARE", "Returning": "RETURNING", "OnConflict": "ON CONFLICT",
    "Semicolon": "empty statement",
}
# ... and the other constructs a query may not use, by their name. Anything else not allowed
# is named after its sqlglot class.
_CONSTRUCT_NAMES = {
    **_STATEMENT_NAMES, "Dot": "qualified name", "Operator": "OPERATOR()", "Placeholder": "parameter",
    "Parameter": "parameter", "SessionParameter": "session variable", "TableSample": "TABLESAMPLE",
    "Hint": "optimizer hint", "Comprehension": "list comprehension", "IndexTableHint": "index hint",
    "PropertyEQ": "variable assignment (:=)", "Introducer": "character set introducer",
}
_CONSTRUCT_REASONS = {
    "SELECT INTO": "SELECT ... INTO creates a table (or, in MySQL, writes a file or variables)",
    "FOR UPDATE lock": "locking clauses take row locks; only plain reads may run",
    "FOR SHARE lock": "locking clauses take row locks; only plain reads may run",
    "RETURNING": "RETURNING belongs to a data-modifying statement",
    "PIVOT": "PIVOT is not supported; use GROUP BY with CASE",
    "UNPIVOT": "UNPIVOT is not supported; use UNION ALL of the columns",
    "qualified name": "name functions and columns without a schema prefix",
    "parameter": "the statement must be complete, without parameters",
}

# SQLAlchemy and sqlglot spell some dialects differently.
_DIALECT_ALIASES = {"postgresql": "postgres", "pg": "postgres", "sqlite3": "sqlite", "mariadb": "mysql"}

# One statement can spread joins over many SELECTs (CTEs, subqueries, UNION arms); beyond
# this many times max_joins in total it is a fan-out hazard even if each SELECT is within it.
_TOTAL_JOIN_FACTOR = 4

# Dialects whose servers substitute ${...} variables into a statement's text, and whose file
# tables have a hidden column of the files' paths, sizes and times (`_metadata`).
_SUBSTITUTING = frozenset({"spark", "spark2", "databricks", "hive"})
_FILE_METADATA = frozenset({"spark", "spark2", "databricks"})

# Longer than any useful question's SQL; bounds parser time and memory on hostile input.
_MAX_SQL_CHARS = 100_000

# C0 controls other than ordinary whitespace, and DEL: never in legitimate SQL, and NUL in
# particular truncates the statement in some drivers, so what runs would differ from what
# was checked.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ROUGH_TOKEN = re.compile(r"[\w$]+|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\S")
# MySQL runs the text of a /*! ... */ comment as SQL (MariaDB also of /*M! ... */); the checked
# rendering leaves comments out, so what ran would not be what the statement says.
_EXECUTABLE_COMMENT = re.compile(r"M?!")


@dataclass(frozen=True)
class ValidatedSQL:
    """A statement the validator accepted.

    `sql` is the statement as checked: re-rendered by sqlglot in the same dialect from the
    checked tree, with `LIMIT default_limit` added when the outermost query had none.
    `fetch_sql` is what is executed: the same with one row more under an added LIMIT, so that
    the caller can tell a complete result from one the added LIMIT cut (`run_validated`).
    """

    sql: str
    tables: tuple[str, ...]
    limit_added: bool
    fetch_sql: str = ""

    def __post_init__(self) -> None:
        if not self.fetch_sql:
            object.__setattr__(self, "fetch_sql", self.sql)


def validate_sql(
    sql: str, dialect: str, policy: SafetyConfig = SafetyConfig(), catalog: "Catalog | None" = None
) -> ValidatedSQL:
    """Check one untrusted statement and return the SQL that may run.

    `catalog` (the database's tables, columns and own functions, `Database.catalog()`) makes
    the check exact: tables the database lacks are refused, unqualified columns resolve as
    the database resolves them, and functions the database defines are refused. Without it
    the syntax, function and catalog rules still hold.

    Raises `UnsafeSQLError` naming the refused construct in one sentence; never lets a
    sqlglot exception or traceback through, since the message is shown to the user and fed
    back to the model. An unknown `dialect` is the caller's mistake and raises `ConfigError`.
    """
    dialect_name = _normalize_dialect(dialect)
    try:
        with _quiet_sqlglot():
            return _validate(sql, dialect_name, policy, catalog)
    except UnsafeSQLError:
        raise
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as err:
        raise UnsafeSQLError("unparseable SQL", _syntax_reason(err)) from None
    except RecursionError:
        raise UnsafeSQLError("unparseable SQL", "the statement is nested too deeply") from None
    except Exception:  # noqa: BLE001 - hostile input may trip any sqlglot code path
        raise UnsafeSQLError("unsupported SQL", "the statement uses a form the validator cannot analyse") from None


def parse_untrusted(sql: str, dialect: str) -> exp.Expression | None:
    """The syntax tree of model-written SQL for the checks that read it, or None when it does
    not parse: a degenerate reply (hundreds of nested parentheses) exhausts sqlglot's
    recursion, and a check must then pass it by, not stop the question."""
    try:
        with _quiet_sqlglot():
            return sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, RecursionError):
        return None


# --------------------------------------------------------------------------------------------
# Pipeline
# --------------------------------------------------------------------------------------------


def _validate(sql: str, dialect: str, policy: SafetyConfig, catalog: "Catalog | None") -> ValidatedSQL:
    if not isinstance(sql, str):
        raise UnsafeSQLError("unparseable SQL", "the statement is not text")
    if len(sql) > _MAX_SQL_CHARS:
        raise UnsafeSQLError("oversized SQL", f"the statement is longer than {_MAX_SQL_CHARS:,} characters")
    if match := _CONTROL_CHARS.search(sql):
        raise UnsafeSQLError("control character", f"the statement contains {match.group()!r}")
    if _count_tokens(sql) > policy.max_tokens:
        raise UnsafeSQLError("oversized SQL", f"the statement has more than {policy.max_tokens:,} tokens")
    _refuse_substitution(sql, dialect)

    if dialect == "mysql":
        _refuse_executable_comments(sql)
    root = _unwrap_parens(_parse_single(sql, dialect))
    if (command := _duckdb_command(root, dialect, policy, catalog)) is not None:
        return command
    tables = _analyse(root, dialect, policy, catalog)

    root, limit_added = _ensure_limit(root, policy.default_limit)
    if dialect == "sqlite":
        _restore_comma_joins(root)
    rendered = _render_checked(root, dialect, policy, catalog, tables)
    fetch = rendered
    if limit_added:
        root.set("limit", None)
        fetch = _render_checked(root.limit(policy.default_limit + 1, copy=False),  # type: ignore[attr-defined]
                                dialect, policy, catalog, tables)
    return ValidatedSQL(sql=rendered, tables=tables, limit_added=limit_added, fetch_sql=fetch)


def _render_checked(root: exp.Expression, dialect: str, policy: SafetyConfig, catalog: "Catalog | None",
                    tables: tuple[str, ...]) -> str:
    try:
        # Where the dialect's generator cannot express what its parser accepted, it would drop
        # or approximate the construct; the SQL that ran would then not be the SQL checked.
        rendered = root.sql(dialect=dialect, comments=False, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.UnsupportedError as err:
        raise UnsafeSQLError("unsupported SQL", _plain(str(err))) from None

    _refuse_substitution(rendered, dialect)
    # The executed text comes from sqlglot's generator, so check it too: whatever the
    # generator emits must parse back to one statement that passes the same rules and
    # reads the same tables.
    reparsed = _unwrap_parens(_parse_single(rendered, dialect, rendered=True))
    if _analyse(reparsed, dialect, policy, catalog) != tables:
        raise UnsafeSQLError("unsupported SQL", "the normalised statement reads different tables")
    return rendered


def _refuse_substitution(sql: str, dialect: str) -> None:
    # Spark (and Hive) replace ${env:NAME}, ${system:...} and ${spark.conf} in the statement's
    # text before parsing it, inside strings, names and comments alike: a literal would carry
    # the server's environment back in the result.
    if dialect in _SUBSTITUTING and "${" in sql:
        raise UnsafeSQLError("variable substitution",
                             "Spark replaces ${...} with the server's variables and environment before it reads a "
                             "statement; write the text without ${")


def _refuse_executable_comments(sql: str) -> None:
    try:
        tokens = Dialect.get_or_raise("mysql").tokenize(sql)
    except sqlglot.errors.TokenError:
        return  # parsing says where the statement stops being SQL
    if any(_EXECUTABLE_COMMENT.match(comment) for token in tokens for comment in token.comments):
        raise UnsafeSQLError("executable comment",
                             "MySQL runs the SQL inside /*! ... */ comments; write it outside a comment")


def _count_tokens(sql: str) -> int:
    # Words, quoted strings and single symbols: near enough to sqlglot's count, at a tenth of
    # its cost, to bound what the parser is given.
    return sum(1 for _ in _ROUGH_TOKEN.finditer(sql))


def _analyse(root: exp.Expression, dialect: str, policy: SafetyConfig, catalog: "Catalog | None") -> tuple[str, ...]:
    _check_root(root)
    _check_nodes(root, dialect, policy, catalog)
    scopes = traverse_scope(root)
    owners = scope_owners(root, scopes)
    _check_joins(root, scopes, owners, policy)
    return check_tables_and_columns(root, scopes, owners, dialect, policy, catalog)


def _restore_comma_joins(root: exp.Expression) -> None:
    # sqlglot reads SQLite's comma joins as CROSS JOIN, but in SQLite CROSS JOIN also pins the
    # join order for the planner; rendering the comma back keeps the plan the model's SQL had.
    for join in root.find_all(exp.Join):
        if (join.kind or "").upper() == "CROSS" and not join.args.get("on") and not join.args.get("using"):
            join.set("kind", None)


def _normalize_dialect(dialect: str) -> str:
    name = (dialect or "").strip().lower().split("+", 1)[0]
    name = _DIALECT_ALIASES.get(name, name)
    if not name:
        raise ConfigError("a SQL dialect is required to validate SQL")
    try:
        Dialect.get_or_raise(name)
    except Exception:  # noqa: BLE001 - sqlglot raises ValueError with a long suggestion list
        raise ConfigError(f"unknown SQL dialect {dialect!r}") from None
    return name


def _parse_single(sql: str, dialect: str, rendered: bool = False) -> exp.Expression:
    text = sql.strip()
    # One trailing semicolon (or several) is how people end a statement, not a second one.
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise UnsafeSQLError("empty statement", "there is no SQL to run")
    try:
        statements = sqlglot.parse(text, read=dialect)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as err:
        if rendered:
            raise UnsafeSQLError("unsupported SQL", "the normalised statement does not parse back") from None
        raise UnsafeSQLError("unparseable SQL", _syntax_reason(err)) from None
    # Empty statements (only comments or separators, e.g. a "-- note" after the final
    # semicolon) carry nothing to execute and are dropped; any second real statement is not.
    real = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if len(real) > 1:
        raise UnsafeSQLError("multiple statements", f"found {len(real)} statements; exactly one query is allowed")
    if not real:
        raise UnsafeSQLError("empty statement", "the text holds only comments or separators")
    return real[0]


_QUIET = threading.local()


class _DropWhileValidating(logging.Filter):
    # sqlglot logs about statements it does not model ("Falling back to parsing as a
    # 'Command'") and scopes it cannot traverse; each such statement is refused here with a
    # sentence of its own, so the log would only echo hostile text to the user's terminal.
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_QUIET, "on", False)


logging.getLogger("sqlglot").addFilter(_DropWhileValidating())


@contextmanager
def _quiet_sqlglot() -> Iterator[None]:
    before = getattr(_QUIET, "on", False)
    _QUIET.on = True
    try:
        yield
    finally:
        _QUIET.on = before


def _syntax_reason(err: Exception) -> str:
    """Where the statement stops being SQL, without sqlglot's internals (class names,
    'Required keyword' messages) that mean nothing to the person reading it."""
    errors = getattr(err, "errors", None) or []
    first = errors[0] if errors else {}
    line, col = first.get("line"), first.get("col")
    near = _plain(str(first.get("highlight") or "")).strip()[:40]
    where = f" at line {line}, column {col}" if line is not None else ""
    # sqlglot's parser does not know every form a database accepts: the statement may be valid
    # SQL the validator cannot read, so the sentence says what is known.
    return f"the validator cannot parse the statement{where}" + (f" (near {near!r})" if near else "") + \
        "; write it in plainer SQL"


def _plain(text: str) -> str:
    lines = _ANSI.sub("", text).strip().splitlines()
    return (lines[0] if lines else "")[:200]


def _unwrap_parens(root: exp.Expression) -> exp.Expression:
    # "(SELECT ...)" is the same query; unwrapping lets the LIMIT go on the query itself.
    while isinstance(root, exp.Subquery) and not root.alias and isinstance(root.this, exp.Query):
        only_parens = all(v is None or k == "this" for k, v in root.args.items())
        if not only_parens:
            break
        root = root.this
        root.pop()
    return root


# --------------------------------------------------------------------------------------------
# Structure: the statement kind, every node, every function, every table
# --------------------------------------------------------------------------------------------


def _check_root(root: exp.Expression) -> None:
    if isinstance(root, (exp.Select, exp.SetOperation)):
        return
    if isinstance(root, exp.Subquery) and isinstance(root.unnest(), (exp.Select, exp.SetOperation)):
        return  # "(SELECT ...) ORDER BY ... LIMIT ...": parentheses with modifiers
    construct = _construct(root)
    raise UnsafeSQLError(
        construct,
        f"{construct} is not a read-only query; only a SELECT, a UNION/INTERSECT/EXCEPT of SELECTs "
        "or WITH ... SELECT may run",
    )


def _construct(node: exp.Expression) -> str:
    """What a reader calls this node: the statement keyword, or the construct's name."""
    if isinstance(node, exp.Command):
        # sqlglot falls back to an opaque Command for statements it does not model (VACUUM,
        # CALL, DO, EXPLAIN, LOCK, REPLACE ...): named by their first word.
        word = re.sub(r"[^A-Za-z_ ]", "", str(node.this or "")).strip().upper()[:30]
        return word or "unparseable SQL"
    if isinstance(node, exp.Lock):
        return "FOR UPDATE lock" if node.args.get("update") else "FOR SHARE lock"
    if isinstance(node, exp.Pivot):
        return "UNPIVOT" if node.args.get("unpivot") else "PIVOT"
    name = type(node).__name__
    if name in _CONSTRUCT_NAMES:
        return _CONSTRUCT_NAMES[name]
    if isinstance(node, exp.Values):
        return "VALUES"
    if node.parent is None:
        # Things like "LISTEN channel" or "INSTALL httpfs" parse as bare expressions in some
        # dialects; their first word is what a reader of the refusal recognises.
        match = re.match(r"\s*([A-Za-z_]+)", node.sql(comments=False))
        if match:
            return match.group(1).upper()
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).upper()


def _refuse_node(node: exp.Expression) -> None:
    construct = _construct(node)
    if construct in _CONSTRUCT_REASONS:
        reason = _CONSTRUCT_REASONS[construct]
    elif isinstance(node, exp.Command) or type(node).__name__ in _STATEMENT_NAMES:
        reason = "only read-only queries may run"
    else:
        reason = f"{construct} is not supported in the queries groundsql runs"
    raise UnsafeSQLError(construct, reason)


def _check_nodes(root: exp.Expression, dialect: str, policy: SafetyConfig, catalog: "Catalog | None") -> None:
    """One walk over the tree: nesting depth, allowed node kinds, functions, file tables."""
    stack: list[tuple[exp.Expression, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > policy.max_depth:
            raise UnsafeSQLError("unparseable SQL", f"the statement nests deeper than {policy.max_depth} levels")
        if isinstance(node, exp.CTE) and not isinstance(node.this, (exp.Query, exp.Values)):
            raise UnsafeSQLError(
                "data-modifying CTE", f"CTE {node.alias or '?'} runs {_construct(node.this)}, not a query"
            )
        if isinstance(node, exp.Identifier) and dialect in _FILE_METADATA and node.name.lower() == "_metadata":
            raise UnsafeSQLError("hidden column _metadata",
                                 "_metadata is Spark's hidden column of the data files' paths, sizes and times")
        if isinstance(node, exp.Func) and not isinstance(node, _OPERATORS):
            _check_function(node, dialect, policy, catalog)
        elif not isinstance(node, _ALLOWED_NODES):
            if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
                # pg_catalog.pg_sleep(1): say which function, whatever its schema
                _check_function(node.expression, dialect, policy, catalog)
            _refuse_node(node)
        elif isinstance(node, exp.Table):
            _check_table(node, dialect)
        elif isinstance(node, exp.Lateral) and not isinstance(node.this, exp.Subquery):
            _refuse_node(node)
        nested = depth + (1 if isinstance(node, (exp.Query, exp.Subquery, exp.Paren)) or (
            isinstance(node, exp.Func) and not isinstance(node, _OPERATORS)) else 0)
        # Children in reverse, so that they are visited in the order they are written and
        # the first refusal is the one a reader sees first.
        stack.extend((child, nested) for child in reversed(list(node.iter_expressions())))


def _check_function(node: exp.Func, dialect: str, policy: SafetyConfig, catalog: "Catalog | None") -> None:
    allowed = functions.allowed_functions(dialect) | policy.extra_functions
    if policy.catalog_views and policy.allowed_tables is None:
        allowed |= functions.CATALOG_FUNCTIONS.get(dialect, frozenset())
    own = catalog.user_functions if catalog is not None else frozenset()
    for name in sorted(functions.called_names(node, dialect)):
        if name in own:
            raise UnsafeSQLError(
                f"function {name}", f"{name}() is defined by this database, and functions it defines may not run"
            )
        if name not in allowed:
            raise UnsafeSQLError(f"function {name}", f"{name}() is not on the list of functions a query may call")
        if name in functions.SIZE_ARGUMENTS:
            _check_size_argument(node, name)
        if name in functions.FORMAT_FUNCTIONS and not isinstance(node, exp.NumberToStr):  # MySQL's FORMAT(x, 2)
            _check_format(node, name)


def _size_argument(node: exp.Func, name: str) -> exp.Expression | None:
    typed = {exp.Space: "this", exp.Repeat: "times", exp.Pad: "expression"}
    for kind, key in typed.items():
        if isinstance(node, kind):
            return node.args.get(key)
    args = [node.this] if node.this is not None and not isinstance(node, exp.Anonymous) else []
    args += list(node.expressions)
    for key in ("expression", "length"):  # how sqlglot names a typed call's second argument
        if (extra := node.args.get(key)) is not None and not isinstance(node, exp.Anonymous):
            args.insert(1, extra)
    index = functions.SIZE_ARGUMENTS[name]
    return args[index] if len(args) > index else None


def _literal_size(arg: exp.Expression | None) -> int | None:
    if isinstance(arg, exp.Literal) and not arg.is_string:
        try:
            return int(arg.this)
        except ValueError:
            return None
    return None


def _allocates(node: exp.Expression) -> str | None:
    """The name (as in SIZE_ARGUMENTS) of a call that allocates its result by a size argument."""
    if isinstance(node, exp.Repeat):
        return "repeat"
    if isinstance(node, exp.Space):
        return "space"
    if isinstance(node, exp.Pad):
        return "lpad" if node.args.get("is_left") else "rpad"
    if isinstance(node, exp.Anonymous) and (name := str(node.name).lower()) in functions.SIZE_ARGUMENTS:
        return name
    return None


def _enclosing_size(node: exp.Expression) -> int:
    """The product of the sizes of the allocating calls `node` is an argument of."""
    factor, parent = 1, node.parent
    while parent is not None:
        if (name := _allocates(parent)) is not None and (size := _literal_size(_size_argument(parent, name))):
            factor *= max(size, 1)
        parent = parent.parent
    return factor


def _check_size_argument(node: exp.Func, name: str) -> None:
    function = _allocates(node) or name
    size = _literal_size(_size_argument(node, name))
    limit = functions.MAX_SIZE
    if function == "repeat":
        # A literal repeated is a known size (Spark writes space(n) as repeat(' ', n)); any
        # other value's length is not known, so the count is held lower.
        text = node.this if isinstance(node, exp.Repeat) else (node.expressions or [None])[0]
        if isinstance(text, exp.Literal) and text.is_string and size is not None:
            size *= max(len(text.this), 1)
        else:
            limit = functions.MAX_REPEAT
    if size is not None and size * _enclosing_size(node) <= limit:
        return
    raise UnsafeSQLError(
        f"function {function}",
        f"{function}() allocates its whole result at once; its size must be an integer literal and at most "
        f"{limit:,} (nested calls multiplied)",
    )


_FORMAT_STAR = re.compile(r"%[^A-Za-z%]*\*")
_NUMBER = re.compile(r"\d+")


def _check_format(node: exp.Func, name: str) -> None:
    """A format's widths allocate (printf('%999999999d', 1)): a literal format, every number in
    it within the size limit, no width taken from an argument (%*d)."""
    first = node.expressions[0] if isinstance(node, exp.Anonymous) and node.expressions else node.this
    if not (isinstance(first, exp.Literal) and first.is_string):
        raise UnsafeSQLError(f"function {name}", f"{name}() needs a literal format string")
    text, factor = first.this, _enclosing_size(node)
    if _FORMAT_STAR.search(text) or any(int(n) * factor > functions.MAX_SIZE for n in _NUMBER.findall(text)):
        raise UnsafeSQLError(f"function {name}", f"{name}()'s widths allocate; each must be at most "
                                                 f"{functions.MAX_SIZE:,} and written in the format, not taken from an argument")


def _check_table(table: exp.Table, dialect: str) -> None:
    # Which tables may be read is decided in safety/tables.py, where CTE names are known.
    if dialect == "duckdb" and isinstance(table.this, exp.Identifier) and not table.db and _looks_like_path(table.name):
        # DuckDB's replacement scans turn FROM 'x.csv' or FROM "https://..." into a file or
        # network read when no such table exists.
        raise UnsafeSQLError(f"file table {table.name}", "reading files or URLs as tables is not allowed")


def _looks_like_path(name: str) -> bool:
    # Unquoted names cannot hold these characters, so no ordinary table is caught; every
    # file name with an extension and every URL ("s3://", "https://") has one of them.
    return any(ch in name for ch in "./\\:*?~")


def _duckdb_command(root: exp.Expression, dialect: str, policy: SafetyConfig,
                    catalog: "Catalog | None") -> ValidatedSQL | None:
    """DuckDB's DESCRIBE t, SUMMARIZE t and SHOW TABLES are queries there: allowed where they
    show nothing the policy hides (a column allow-list, a table allow-list for SHOW TABLES)."""
    if dialect != "duckdb" or not isinstance(root, (exp.Describe, exp.Summarize, exp.Show)):
        return None
    if isinstance(root, exp.Show):
        if str(root.name).upper() != "TABLES" or root.args.get("target") or policy.allowed_tables is not None:
            _refuse_node(root)
        return ValidatedSQL(sql="SHOW TABLES", tables=(), limit_added=False)
    table = root.this
    options = {k: v for k, v in root.args.items() if k not in ("this", "as_json", "table") and v}
    if options or not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        _refuse_node(root)
    tables = _analyse(exp.select("1").from_(table.copy()), dialect, policy, catalog)
    if policy.allowed_columns is not None and tables[0] in {k.lower() for k in policy.allowed_columns}:
        raise UnsafeSQLError(f"{_construct(root)} on table {tables[0]}",
                             f"{tables[0]} has a column allow-list; name the columns in a SELECT instead")
    keyword = "DESCRIBE" if isinstance(root, exp.Describe) else "SUMMARIZE"
    return ValidatedSQL(sql=f"{keyword} {table.sql(dialect='duckdb')}", tables=tables, limit_added=False)


# --------------------------------------------------------------------------------------------
# Joins
# --------------------------------------------------------------------------------------------


def _check_joins(root: exp.Expression, scopes: list[Scope], owners: Owners, policy: SafetyConfig) -> None:
    per_select: dict[int, int] = {}
    total = 0
    for join in root.find_all(exp.Join):
        owner = owners.scope.get(id(join))
        key = id(owner.expression) if owner is not None else id(join.parent)
        per_select[key] = per_select.get(key, 0) + 1
        total += 1
    worst = max(per_select.values(), default=0)
    if worst > policy.max_joins:
        raise UnsafeSQLError(
            f"join fan-out ({worst} joins > {policy.max_joins})",
            "one SELECT joins more tables than the policy allows",
        )
    total_cap = policy.max_joins * _TOTAL_JOIN_FACTOR
    if total > total_cap:
        raise UnsafeSQLError(
            f"join fan-out ({total} joins > {total_cap} in total)",
            "the statement joins more tables in total than the policy allows",
        )
    scope_of = {id(s.expression): s for s in scopes}
    for select in root.find_all(exp.Select):
        if select.args.get("joins"):
            _check_cartesian(select, scope_of.get(id(select)))


def _check_cartesian(select: exp.Select, scope: Scope | None) -> None:
    """Refuse a SELECT whose FROM splits into 3+ groups of sources with nothing relating them.

    Two unrelated sources (a table CROSS JOIN a parameters row) are common and bounded by the
    product of two tables; three or more multiply out of control. Sources proven to yield one
    row are harmless and ignored. Conditions with unqualified columns are given the benefit of
    the doubt (they may relate any sources), so this catches the obvious explosion only; the
    executor's timeout is the backstop.
    """
    from_ = select.args.get("from_")
    joins = select.args.get("joins") or []
    if from_ is None or len(joins) < 2:
        return
    sources = [from_.this] + [j.this for j in joins]
    keys = [(s.alias_or_name or "").lower() for s in sources]
    parent = list(range(len(sources)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        parent[find(i)] = find(j)

    def link_condition(cond: exp.Expression, fallback: int | None) -> None:
        columns = list(cond.find_all(exp.Column))
        idx = {keys.index(c.table.lower()) for c in columns if c.table and c.table.lower() in keys}
        unqualified = [c for c in columns if not c.table]
        if unqualified and len(columns) >= 2:
            if fallback is None:
                idx |= set(range(len(sources)))
            else:
                idx |= {fallback, fallback - 1}
        idx = sorted(idx)
        for i in idx[1:]:
            union(idx[0], i)

    for i, join in enumerate(joins, start=1):
        source = join.this
        if join.args.get("using") or (join.method or "").upper() == "NATURAL":
            union(i, i - 1)
        if isinstance(source, exp.Lateral):
            union(i, i - 1)  # correlated by construction
        elif isinstance(source, exp.Unnest) or (isinstance(source, exp.Table) and isinstance(source.this, exp.Func)):
            # unnest(t.tags) or json_each(t.doc) expands rows of an earlier source; a table
            # function over constants (generate_series(1, 1e6)) is a source of its own.
            if source.find(exp.Column) is not None:
                union(i, i - 1)
        if on := join.args.get("on"):
            link_condition(on, i)
    where = select.args.get("where")
    if where is not None:
        for conjunct in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
            link_condition(conjunct, None)
    for i, source in enumerate(sources):
        if _is_single_row_source(source, scope):
            union(i, 0 if i else (1 if len(sources) > 1 else 0))
    groups = {find(i) for i in range(len(sources))}
    if len(groups) >= 3:
        raise UnsafeSQLError(
            "cross join without condition",
            f"{len(sources)} sources are combined as a cartesian product ({len(groups)} unrelated groups); "
            "add join conditions",
        )


def _is_single_row_source(source: exp.Expression, scope: Scope | None) -> bool:
    query: exp.Expression | None = None
    if isinstance(source, exp.Subquery):
        query = source.this
    elif isinstance(source, exp.Table) and scope is not None and not source.db:
        target = scope.sources.get(source.alias_or_name)
        if isinstance(target, Scope):
            query = target.expression
    return isinstance(query, exp.Select) and _is_single_row(query)


def _is_single_row(select: exp.Select) -> bool:
    limit = select.args.get("limit")
    if isinstance(limit, exp.Limit) and isinstance(limit.expression, exp.Literal):
        if limit.expression.this in ("0", "1"):
            return True
    # A set-returning call in the select list (generate_series, unnest, or any function
    # sqlglot does not know) can turn even "SELECT f()" into many rows.
    if any(e.find(*_MAYBE_SET_RETURNING) is not None for e in select.expressions):
        return False
    if select.args.get("from_") is None:
        return True
    return select.args.get("group") is None and bool(select.expressions) and all(
        e.find(exp.AggFunc) is not None and e.find(exp.Window) is None for e in select.expressions
    )


_MAYBE_SET_RETURNING = _classes("Anonymous", "GenerateSeries", "GenerateDateArray", "Explode", "Unnest",
                                "Inline", "UDTF")


# --------------------------------------------------------------------------------------------
# LIMIT
# --------------------------------------------------------------------------------------------


def _ensure_limit(root: exp.Expression, default_limit: int) -> tuple[exp.Expression, bool]:
    limit = root.args.get("limit")
    if limit is not None and not _is_unbounded(limit):
        return root, False
    if limit is not None:
        root.set("limit", None)
    # On a set operation this limits the combined result, not its last arm.
    return root.limit(default_limit, copy=False), True  # type: ignore[attr-defined]


def _is_unbounded(limit: exp.Expression) -> bool:
    if isinstance(limit, exp.Fetch):
        return limit.args.get("count") is None
    value = limit.expression if isinstance(limit, exp.Limit) else None
    if value is None or isinstance(value, (exp.Null, exp.Neg)):
        return True
    return isinstance(value, (exp.Var, exp.Column)) and value.name.upper() == "ALL"
