"""The SQL safety validator (FLINT 3.5 / H.1).

SQL written by a language model is untrusted input: it may be wrong, and it may be hostile
(prompt injection can put any text in the model's mouth). Nothing the model wrote is executed
as is. `validate_sql` parses it with sqlglot in the database's own dialect, refuses anything
that is not one plain read-only query, checks the optional table/column allow-lists, and
returns SQL *re-rendered from the checked tree*, so what runs is exactly what was checked even
where sqlglot's tokenizer and the database's disagree about quoting or comments.

The validator is one layer of defence, not the only one: the executor is expected to run
queries read-only (read-only transaction or connection, a read-only role where the database
has roles) under the wall-clock timeout and row cap of `DatabaseConfig`. For DuckDB it should
also disable external access (`enable_external_access = false`), which closes file and
network reads through routes this module cannot enumerate (replacement scans, extensions
autoloaded by name).

Choices worth knowing (each also explained where it is made):

* Catalog tables (sqlite_master, information_schema.*, pg_catalog.*, DuckDB's duckdb_*
  views) are readable when no allow-list is set: the database's own permissions apply then.
  With `allowed_tables` set they are refused like any unlisted table, because the allow-list
  is the whole world the model may see.
* A schema-qualified table compares by bare name only when the schema is the dialect's default
  one (main, public); any other schema or attached database must be listed as "schema.table".
* A construct the dialect's own generator cannot render (sqlglot would drop or approximate
  it) is refused as "unsupported SQL", so the SQL that runs always means what was checked.
* An existing LIMIT is kept even when larger than `default_limit`; the executor caps the rows
  it fetches anyway, and changing an explicit LIMIT would change the answer's meaning.
  Unbounded forms (LIMIT ALL, LIMIT NULL, negative LIMIT) count as no LIMIT.
* Resource exhaustion by computation (huge generate_series, recursive CTEs, repeat()) is left
  to the executor's timeout; only single-call allocations that the timeout cannot interrupt
  (SQLite's randomblob/zeroblob) are capped here. Joins are bounded by `max_joins` per SELECT
  (and four times that per statement), and a SELECT whose sources fall into three or more
  groups with no join condition between them is refused as a cartesian explosion.
* `allowed_columns` restricts only the tables it names. Qualified columns are resolved through
  aliases; an unqualified one binds where SQL would bind it (innermost FROM first, then
  outward), and is refused where a restricted table could be hiding it. That resolution
  trusts the allow-list to name real columns, as lists built by introspection do. Anything
  that reads columns without naming them (`*`, `t.*`, a bare alias as a whole row, DuckDB's
  COLUMNS() and #n, NATURAL JOIN, column-renaming aliases) is refused on restricted tables.
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.optimizer.scope import Scope, traverse_scope

from groundsql.config import SafetyConfig
from groundsql.errors import ConfigError, UnsafeSQLError

__all__ = ["ValidatedSQL", "validate_sql"]


# --------------------------------------------------------------------------------------------
# Deny lists. Names compare case-insensitively against the function name as written, as
# sqlglot knows it, and as it is rendered back (what the database will actually call).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Family:
    why: str
    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()


_DENIED_FUNCTION_FAMILIES: tuple[_Family, ...] = (
    _Family(
        # Loading a shared library is arbitrary native code; the fileio helpers of the sqlite3
        # shell read and write server files; fts3_tokenizer takes and returns raw function
        # pointers (a known memory-disclosure and code-execution vector); sqlite_* functions
        # expose build internals that help pick an exploit and never answer a data question.
        why="runs native code or touches files on the database host (SQLite)",
        names=frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer",
                         "fsdir", "zipfile", "lsmode"}),
        prefixes=("sqlite_",),
    ),
    _Family(
        # The pg_ namespace is PostgreSQL's administration surface: pg_sleep (DoS that ignores
        # row caps), pg_read_file / pg_ls_dir / pg_stat_file (server files), pg_terminate_backend,
        # pg_cancel_backend, pg_reload_conf, pg_advisory_lock* (locks outliving the query),
        # pg_notify, WAL and replication control. Refusing the prefix is safer than keeping up
        # with each release; harmless formatting helpers are let through below.
        why="administers the PostgreSQL server, sleeps, takes locks or reads server files",
        prefixes=("pg_",),
    ),
    _Family(
        # Large-object functions import and export files on the server (lo_import/lo_export)
        # or create and delete objects (lo_create/lo_unlink): writes hidden in a SELECT.
        why="reads or writes server files or large objects (PostgreSQL)",
        prefixes=("lo_",),
    ),
    _Family(
        # Each of these executes SQL text given as a string, which this validator cannot see
        # into, or reaches another database: dblink*, DuckDB's postgres_/mysql_ scanners and
        # query()/query_table(), query_to_xml & co., ts_stat/ts_rewrite (run a query string).
        why="executes SQL hidden in a string or reaches another database",
        names=frozenset({"query", "query_table", "json_execute_serialized_sql", "ts_stat",
                         "ts_rewrite"}),
        prefixes=("dblink", "postgres_", "mysql_", "query_to_xml", "table_to_xml",
                  "cursor_to_xml", "schema_to_xml", "database_to_xml"),
    ),
    _Family(
        # Settings and environment leak configuration and secrets (DuckDB getenv, secrets
        # metadata) or change the session for later queries (set_config).
        why="reads or changes session settings, environment or secrets",
        names=frozenset({"set_config", "current_setting", "getenv", "duckdb_secrets",
                         "which_secret", "duckdb_settings", "set_variable"}),
    ),
    _Family(
        # A read-only question must not advance sequences or burn transaction ids.
        why="has side effects on sequences or transactions",
        names=frozenset({"nextval", "setval", "txid_current", "nextvaluefor",
                         "next_value_for"}),
    ),
    _Family(
        # DuckDB reads local files, URLs and object stores through these table functions
        # (and autoloads httpfs to do it); that is data outside the database and a way to
        # exfiltrate or probe the host.
        why="reads files or URLs outside the database (DuckDB)",
        names=frozenset({"glob", "sniff_csv", "delta_scan", "load", "install",
                         "load_extension", "install_extension", "httpfs"}),
        prefixes=("read_", "parquet_", "iceberg_", "http_", "csv_scan", "json_scan"),
    ),
)

# Prefix families are broad on purpose; these members are pure formatting/introspection of a
# value and have no side effect.
_ALLOWED_DESPITE_PREFIX: frozenset[str] = frozenset({"pg_typeof", "pg_size_pretty",
                                                     "pg_column_size"})

# Catalog table functions: read-only, so allowed by default, but with a table allow-list set
# they would show tables and columns outside it.
_CATALOG_FUNCTION_PREFIXES: tuple[str, ...] = ("pragma_", "duckdb_")

# SQLite allocates and fills these in a single VM step, which the executor's progress-handler
# timeout cannot interrupt: randomblob(1e9) is a gigabyte at once. A literal size up to this
# cap is fine (hex(randomblob(16)) is a common uuid idiom); anything else is refused.
_SIZE_CAPPED_FUNCTIONS: dict[str, int] = {"randomblob": 0, "zeroblob": 0}  # name -> size arg
_MAX_BLOB_BYTES = 1_000_000

# Eponymous virtual tables usable without parentheses that give raw page or file access
# (SQLite), so a missing allow-list must not open them.
_DENIED_TABLE_NAMES: frozenset[str] = frozenset({"sqlite_dbpage", "sqlite_dbdata",
                                                 "sqlite_dbptr", "fsdir", "zipfile"})

# Node classes that write, change the session, or are not a query at all. They are refused
# anywhere in the tree, not only at the root, because PostgreSQL runs DML inside CTEs and a
# future sqlglot may accept them in more places.
_DENIED_NODES: tuple[tuple[str, str], ...] = (
    ("Insert", "INSERT"), ("Update", "UPDATE"), ("Delete", "DELETE"), ("Merge", "MERGE"),
    ("Create", "CREATE"), ("Drop", "DROP"), ("Alter", "ALTER"), ("TruncateTable", "TRUNCATE"),
    ("Copy", "COPY"), ("Set", "SET"), ("Pragma", "PRAGMA"), ("Attach", "ATTACH"),
    ("Detach", "DETACH"), ("Use", "USE"), ("Transaction", "BEGIN"), ("Commit", "COMMIT"),
    ("Rollback", "ROLLBACK"), ("Grant", "GRANT"), ("Revoke", "REVOKE"),
    ("LoadData", "LOAD DATA"), ("Into", "SELECT INTO"), ("Install", "INSTALL"),
    ("Describe", "DESCRIBE"), ("Summarize", "SUMMARIZE"), ("Analyze", "ANALYZE"),
    ("Kill", "KILL"), ("Refresh", "REFRESH"), ("Cache", "CACHE"), ("Uncache", "UNCACHE"),
    ("Execute", "EXECUTE"), ("ExecuteSql", "EXECUTE"), ("Export", "EXPORT"),
    ("Comment", "COMMENT"), ("Declare", "DECLARE"), ("Show", "SHOW"), ("Put", "PUT"),
    ("Get", "GET"), ("Returning", "RETURNING"), ("OnConflict", "ON CONFLICT"),
    ("MultitableInserts", "INSERT"), ("ConditionalInsert", "INSERT"),
    ("LockingStatement", "LOCKING"), ("StoredProcedure", "PROCEDURE"),
    ("IfBlock", "IF block"), ("WhileBlock", "WHILE block"), ("LoopBlock", "LOOP block"),
    ("RepeatBlock", "REPEAT block"), ("ForIn", "FOR block"), ("Block", "BEGIN block"),
    ("Return", "RETURN"), ("SwapTable", "SWAP"), ("Undrop", "UNDROP"),
    ("AlterSession", "ALTER SESSION"), ("Semicolon", "empty statement"),
)
# Classes this sqlglot lacks are skipped here; a test asserts that none is missing, so an
# upgrade that renames one fails loudly instead of silently dropping a rule.
_DENIED_CLASSES: tuple[tuple[type[exp.Expression], str], ...] = tuple(
    (getattr(exp, name), construct) for name, construct in _DENIED_NODES if hasattr(exp, name)
)

# Schemas whose tables compare by bare name against the allow-list.
_DEFAULT_SCHEMAS: dict[str, frozenset[str]] = {
    "sqlite": frozenset({"main"}),
    "postgres": frozenset({"public"}),
    "duckdb": frozenset({"main"}),
}

# SQLAlchemy and sqlglot spell some dialects differently.
_DIALECT_ALIASES = {"postgresql": "postgres", "pg": "postgres", "sqlite3": "sqlite"}

# One statement can spread joins over many SELECTs (CTEs, subqueries, UNION arms); beyond
# this many times max_joins in total it is a fan-out hazard even if each SELECT is within it.
_TOTAL_JOIN_FACTOR = 4

# Longer than any useful question's SQL; bounds parser time and memory on hostile input.
_MAX_SQL_CHARS = 100_000

# C0 controls other than ordinary whitespace, and DEL: never in legitimate SQL, and NUL in
# particular truncates the statement in some drivers, so what runs would differ from what
# was checked.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_SQLGLOT_LOGGER = logging.getLogger("sqlglot")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FUNC_HEAD = re.compile(r'^\s*((?:"[^"]*"|`[^`]*`|[\w$]+)(?:\s*\.\s*(?:"[^"]*"|`[^`]*`|[\w$]+))*)\s*\(')


@dataclass(frozen=True)
class ValidatedSQL:
    """A statement the validator accepted.

    `sql` is what must be executed: re-rendered by sqlglot in the same dialect from the
    checked tree, with `LIMIT default_limit` added when the outermost query had none.
    """

    sql: str
    tables: tuple[str, ...]
    limit_added: bool


def validate_sql(sql: str, dialect: str, policy: SafetyConfig = SafetyConfig()) -> ValidatedSQL:
    """Check one model-written statement and return the SQL that may run.

    Raises `UnsafeSQLError` naming the refused construct; never lets a sqlglot exception or
    traceback through, since the message is shown to the user and fed back to the model.
    An unknown `dialect` is the caller's mistake, not the SQL's, and raises `ConfigError`.
    """
    dialect_name = _normalize_dialect(dialect)
    try:
        return _validate(sql, dialect_name, policy)
    except UnsafeSQLError:
        raise
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as err:
        raise UnsafeSQLError("unparseable SQL", _short_reason(err)) from None
    except RecursionError:
        raise UnsafeSQLError("unparseable SQL", "the statement is nested too deeply") from None
    except Exception as err:  # noqa: BLE001 - hostile input may trip any sqlglot code path
        raise UnsafeSQLError(
            "unparseable SQL", f"the statement could not be analysed ({type(err).__name__})"
        ) from None


def parse_untrusted(sql: str, dialect: str) -> exp.Expression | None:
    """The syntax tree of model-written SQL for the checks that read it, or None when it does
    not parse: a degenerate reply (hundreds of nested parentheses) exhausts sqlglot's
    recursion, and a check must then pass it by, not stop the question."""
    try:
        return sqlglot.parse_one(sql, read=dialect)
    except (sqlglot.errors.SqlglotError, RecursionError):
        return None


# --------------------------------------------------------------------------------------------
# Pipeline
# --------------------------------------------------------------------------------------------


def _validate(sql: str, dialect: str, policy: SafetyConfig) -> ValidatedSQL:
    if not isinstance(sql, str):
        raise UnsafeSQLError("unparseable SQL", "the statement is not text")
    if len(sql) > _MAX_SQL_CHARS:
        raise UnsafeSQLError("oversized SQL", f"the statement is longer than {_MAX_SQL_CHARS} characters")
    if match := _CONTROL_CHARS.search(sql):
        raise UnsafeSQLError("control character", f"the statement contains {match.group()!r}")

    root = _unwrap_parens(_parse_single(sql, dialect))
    tables = _analyse(root, dialect, policy)

    root, limit_added = _ensure_limit(root, policy.default_limit)
    if dialect == "sqlite":
        _restore_comma_joins(root)
    try:
        # Where the dialect's generator cannot express what its parser accepted, it would drop
        # or approximate the construct; the SQL that ran would then not be the SQL checked.
        rendered = root.sql(dialect=dialect, comments=False, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.UnsupportedError as err:
        raise UnsafeSQLError("unsupported SQL", _short_reason(err)) from None

    # The executed text comes from sqlglot's generator, so check it too: whatever the
    # generator emits must parse back to one statement that passes the same rules and
    # reads the same tables.
    reparsed = _unwrap_parens(_parse_single(rendered, dialect, rendered=True))
    if _analyse(reparsed, dialect, policy) != tables:
        raise UnsafeSQLError("unparseable SQL", "the normalised statement reads different tables")
    return ValidatedSQL(sql=rendered, tables=tables, limit_added=limit_added)


def _analyse(root: exp.Expression, dialect: str, policy: SafetyConfig) -> tuple[str, ...]:
    _check_tree(root, dialect, policy)
    scopes = traverse_scope(root)
    _check_joins(root, scopes, policy)
    return _check_tables_and_columns(root, scopes, dialect, policy)


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
        with _quiet_command_fallback():
            statements = sqlglot.parse(text, read=dialect)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as err:
        if rendered:
            raise UnsafeSQLError("unparseable SQL", "the normalised statement does not parse back") from None
        raise UnsafeSQLError("unparseable SQL", _short_reason(err)) from None
    # Empty statements (only comments or separators, e.g. a "-- note" after the final
    # semicolon) carry nothing to execute and are dropped; any second real statement is not.
    real = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if len(real) > 1:
        raise UnsafeSQLError(
            "multiple statements", f"found {len(real)} statements; exactly one query is allowed"
        )
    if not real:
        raise UnsafeSQLError("empty statement", "the text holds only comments or separators")
    return real[0]


class _DropCommandFallbackWarning(logging.Filter):
    # sqlglot logs "... Falling back to parsing as a 'Command'" for statements it does not
    # model; every such statement is refused here with a precise message, so the warning
    # would only echo hostile text to the user's terminal.
    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


@contextmanager
def _quiet_command_fallback() -> Iterator[None]:
    log_filter = _DropCommandFallbackWarning()
    _SQLGLOT_LOGGER.addFilter(log_filter)
    try:
        yield
    finally:
        _SQLGLOT_LOGGER.removeFilter(log_filter)


def _short_reason(err: Exception) -> str:
    errors = getattr(err, "errors", None)
    if errors:
        first = errors[0]
        desc = first.get("description") or "syntax error"
        line, col = first.get("line"), first.get("col")
        where = f" at line {line}, column {col}" if line is not None else ""
        return _ANSI.sub("", f"{desc}{where}")[:200]
    message = _ANSI.sub("", str(err)).splitlines()[0] if str(err) else type(err).__name__
    return message[:200]


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
# Structure: statement kind, writes anywhere, dangerous functions, file tables
# --------------------------------------------------------------------------------------------


def _check_tree(root: exp.Expression, dialect: str, policy: SafetyConfig) -> None:
    _check_root(root)
    for cte in root.find_all(exp.CTE):
        body = cte.this
        if not isinstance(body, (exp.Query, exp.Values)):
            raise UnsafeSQLError(
                "data-modifying CTE",
                f"CTE {cte.alias or '?'} runs {_node_construct(body) or type(body).__name__}, not a query",
            )
    for node in root.walk():
        construct = _node_construct(node)
        if construct:
            raise UnsafeSQLError(construct, _NODE_REASONS.get(construct, "only read-only queries may run"))
        if isinstance(node, exp.Func):
            _check_function(node, dialect, policy)
        elif isinstance(node, exp.Table):
            _check_table_node(node, dialect)


_NODE_REASONS = {
    "SELECT INTO": "SELECT ... INTO creates a table",
    "FOR UPDATE lock": "locking clauses take row locks; only plain reads may run",
    "FOR SHARE lock": "locking clauses take row locks; only plain reads may run",
    "RETURNING": "RETURNING belongs to a data-modifying statement",
}


def _check_root(root: exp.Expression) -> None:
    if isinstance(root, (exp.Select, exp.SetOperation)):
        return
    if isinstance(root, exp.Subquery) and isinstance(root.unnest(), (exp.Select, exp.SetOperation)):
        return  # "(SELECT ...) ORDER BY ... LIMIT ...": parentheses with modifiers
    construct = _node_construct(root) or _leading_keyword(root)
    raise UnsafeSQLError(
        construct,
        f"{construct} is not a read-only query; only a SELECT, a UNION/INTERSECT/EXCEPT of SELECTs "
        "or WITH ... SELECT may run",
    )


def _node_construct(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Command):
        return _command_keyword(node)
    if isinstance(node, exp.Lock):
        return "FOR UPDATE lock" if node.args.get("update") else "FOR SHARE lock"
    for cls, construct in _DENIED_CLASSES:
        if isinstance(node, cls):
            return construct
    return None


def _command_keyword(node: exp.Command) -> str:
    # sqlglot falls back to an opaque Command for statements it does not model (VACUUM,
    # CALL, DO, EXPLAIN, LOAD, LOCK, REPLACE ...): never a query, always refused.
    word = re.sub(r"[^A-Za-z_ ]", "", str(node.this or "")).strip().upper()[:30]
    return word or "unparseable SQL"


def _leading_keyword(root: exp.Expression) -> str:
    # Things like "INSTALL httpfs" or "CHECKPOINT" parse as bare expressions in some
    # dialects; naming their first word is what a reader of the refusal recognises.
    text = root.sql(comments=False)
    if isinstance(root, exp.Values):
        return "VALUES"
    if isinstance(root, exp.Pivot):
        return "UNPIVOT" if root.args.get("unpivot") else "PIVOT"
    match = re.match(r"\s*([A-Za-z_]+)", text)
    return match.group(1).upper() if match else f"statement {type(root).__name__}"


def _function_names(node: exp.Func, dialect: str) -> set[str]:
    names: set[str] = set()
    if isinstance(node, exp.Anonymous):
        names.add(str(node.name))
    else:
        names.add(node.key)
        try:
            names.add(node.sql_name())
        except Exception:  # noqa: BLE001 - some typed functions have no single SQL name
            pass
    # The rendered call is what the database executes; sqlglot may map a name to another.
    try:
        rendered = node.sql(dialect=dialect, comments=False)
    except Exception:  # noqa: BLE001
        rendered = ""
    if match := _FUNC_HEAD.match(rendered):
        last = re.split(r"\s*\.\s*", match.group(1))[-1]
        names.add(last.strip('"`'))
    return {n.lower() for n in names if n}


def _denied_family(name: str) -> _Family | None:
    if name in _ALLOWED_DESPITE_PREFIX:
        return None
    for family in _DENIED_FUNCTION_FAMILIES:
        if name in family.names or any(name.startswith(p) for p in family.prefixes):
            return family
    return None


def _check_function(node: exp.Func, dialect: str, policy: SafetyConfig) -> None:
    names = _function_names(node, dialect)
    for name in sorted(names):
        family = _denied_family(name)
        if family:
            raise UnsafeSQLError(f"function {name}", f"{name}() {family.why}")
        if policy.allowed_tables is not None and name.startswith(_CATALOG_FUNCTION_PREFIXES):
            raise UnsafeSQLError(
                f"function {name}", "catalog functions are refused while a table allow-list is set"
            )
        if name in _SIZE_CAPPED_FUNCTIONS:
            _check_size_arg(node, name)


def _check_size_arg(node: exp.Func, name: str) -> None:
    args = [node.this] if node.this is not None and not isinstance(node, exp.Anonymous) else []
    args += list(node.expressions)
    index = _SIZE_CAPPED_FUNCTIONS[name]
    arg = args[index] if len(args) > index else None
    if isinstance(arg, exp.Literal) and not arg.is_string:
        try:
            size = int(arg.this)
        except ValueError:
            size = None
        if size is not None and size <= _MAX_BLOB_BYTES:
            return
    raise UnsafeSQLError(
        f"function {name}",
        f"{name}() allocates its whole result at once; its size must be an integer literal <= {_MAX_BLOB_BYTES}",
    )


def _check_table_node(table: exp.Table, dialect: str) -> None:
    if not isinstance(table.this, exp.Identifier):
        return  # table functions are checked as functions
    name = table.name.lower()
    if name in _DENIED_TABLE_NAMES and (not table.db or table.db.lower() in {"main", "temp"}):
        raise UnsafeSQLError(f"table {name}", f"{name} gives raw page or file access")
    if dialect == "duckdb" and not table.db and _looks_like_path(table.name):
        # DuckDB's replacement scans turn FROM 'x.csv' or FROM "https://..." into a file or
        # network read when no such table exists.
        raise UnsafeSQLError(f"file table {table.name}", "reading files or URLs as tables is not allowed")


def _looks_like_path(name: str) -> bool:
    # Unquoted names cannot hold these characters, so no ordinary table is caught; every
    # file name with an extension and every URL ("s3://", "https://") has one of them.
    return any(ch in name for ch in "./\\:*?~")


# --------------------------------------------------------------------------------------------
# Joins
# --------------------------------------------------------------------------------------------


def _check_joins(root: exp.Expression, scopes: list[Scope], policy: SafetyConfig) -> None:
    per_select: dict[int, int] = {}
    total = 0
    for join in root.find_all(exp.Join):
        owner = join.find_ancestor(exp.Select)
        key = id(owner)
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


_MAYBE_SET_RETURNING: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name)
    for name in ("Anonymous", "GenerateSeries", "GenerateDateArray", "Explode", "Unnest", "Inline", "UDTF")
    if hasattr(exp, name)
)


# --------------------------------------------------------------------------------------------
# Tables and columns
# --------------------------------------------------------------------------------------------


class _Policy:
    """The allow-lists normalised to the keys `_table_key` produces."""

    def __init__(self, policy: SafetyConfig, dialect: str) -> None:
        self.dialect = dialect
        self.tables = (
            None if policy.allowed_tables is None
            else frozenset(self.normalize_name(t) for t in policy.allowed_tables)
        )
        self.columns = (
            None if policy.allowed_columns is None
            else {self.normalize_name(t): frozenset(c.lower() for c in cols)
                  for t, cols in policy.allowed_columns.items()}
        )

    def normalize_name(self, name: str) -> str:
        parts = [p.strip().strip('"`[]').lower() for p in name.split(".")]
        if len(parts) == 2 and parts[0] in _DEFAULT_SCHEMAS.get(self.dialect, frozenset()):
            parts = parts[1:]
        return ".".join(parts)


def _table_key(table: exp.Table, dialect: str) -> str:
    name, db, catalog = table.name.lower(), table.db.lower(), table.catalog.lower()
    if catalog:
        return f"{catalog}.{db}.{name}"
    if db and db not in _DEFAULT_SCHEMAS.get(dialect, frozenset()):
        return f"{db}.{name}"
    return name


def _is_base_table(source: object) -> bool:
    return isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier)


def _cte_references(scopes: list[Scope]) -> set[int]:
    refs: set[int] = set()
    for scope in scopes:
        for table in scope.tables:
            if table.db:
                continue
            if isinstance(scope.sources.get(table.alias_or_name), Scope):
                refs.add(id(table))
    return refs


def _check_tables_and_columns(
    root: exp.Expression, scopes: list[Scope], dialect: str, config: SafetyConfig
) -> tuple[str, ...]:
    policy = _Policy(config, dialect)
    cte_refs = _cte_references(scopes)
    tables: set[str] = set()
    # Every Table node not positively resolved to a CTE counts as a base table, so a table
    # in a position scope analysis does not model is checked rather than skipped.
    for table in root.find_all(exp.Table):
        if id(table) in cte_refs or not isinstance(table.this, exp.Identifier):
            continue
        key = _table_key(table, dialect)
        if policy.tables is not None and key not in policy.tables:
            raise UnsafeSQLError(f"table {key}", f"{key} is not in the allowed tables")
        tables.add(key)
    if policy.columns is not None:
        _check_columns(root, scopes, dialect, policy)
    return tuple(sorted(tables))


def _selected(scope: Scope | None) -> list[tuple[str, object]]:
    """(name, source) for the FROM/JOIN items of one scope; CTEs merely visible are not in it."""
    if scope is None:
        return []
    return [(name, source) for name, (_node, source) in scope.selected_sources.items()]


def _lookup(scope: Scope | None, qualifier: str) -> list[object]:
    """Sources a qualifier can mean, innermost scope first (correlated references go outward)."""
    q = qualifier.lower()
    for s in _scope_chain(scope):
        hits = [src for name, src in _selected(s) if name.lower() == q]
        if hits:
            return hits
    return []


def _scope_chain(scope: Scope | None) -> Iterator[Scope]:
    while scope is not None:
        yield scope
        scope = scope.parent


def _owner_scope(node: exp.Expression, scope_of: dict[int, Scope]) -> Scope | None:
    current = node.parent
    while current is not None:
        if id(current) in scope_of:
            return scope_of[id(current)]
        current = current.parent
    return None


def _output_names(scope: Scope) -> set[str] | None:
    try:
        names = scope.expression.named_selects
    except Exception:  # noqa: BLE001 - UDTF scopes and the like have no select list
        return None
    return {n.lower() for n in names}


def _check_columns(root: exp.Expression, scopes: list[Scope], dialect: str, policy: _Policy) -> None:
    scope_of = {id(s.expression): s for s in scopes}

    def restricted(source: object) -> tuple[str, frozenset[str]] | None:
        if not _is_base_table(source):
            return None
        key = _table_key(source, dialect)  # type: ignore[arg-type]
        allowed = policy.columns.get(key) if policy.columns else None
        return (key, allowed) if allowed is not None else None

    for node in root.walk():
        if isinstance(node, exp.Star):
            if isinstance(node.parent, (exp.Column, exp.Count)):
                continue  # t.* is checked with its column; count(*) reads no values
            for _name, source in _selected(_owner_scope(node, scope_of)):
                if hit := restricted(source):
                    _refuse_star(hit[0])
        elif isinstance(node, (exp.Columns, exp.PositionalColumn)):
            # DuckDB's COLUMNS('regex'), COLUMNS(lambda) and #n pick columns without naming
            # them, so the allow-list cannot vouch for what they read.
            what = "COLUMNS()" if isinstance(node, exp.Columns) else f"positional column #{node.name}"
            for _name, source in _selected(_owner_scope(node, scope_of)):
                if hit := restricted(source):
                    raise UnsafeSQLError(
                        f"{what} on table {hit[0]}", f"{hit[0]} has a column allow-list; name the columns instead"
                    )
        elif isinstance(node, exp.Table) and (hit := restricted(node)):
            alias = node.args.get("alias")
            if alias is not None and alias.columns:
                # users AS u(id, name, email) renames columns by position: an allowed name
                # could then stand for a hidden column.
                raise UnsafeSQLError(
                    f"column alias list on table {hit[0]}", "renaming a restricted table's columns by position is not allowed"
                )
        elif isinstance(node, exp.Column):
            _check_column(node, _owner_scope(node, scope_of), restricted)
        elif isinstance(node, exp.Join):
            sources = [src for _n, src in _selected(_owner_scope(node, scope_of))]
            if (node.method or "").upper() == "NATURAL":
                for source in sources:
                    if hit := restricted(source):
                        raise UnsafeSQLError(
                            f"NATURAL JOIN on table {hit[0]}",
                            "a natural join compares every same-named column, including hidden ones",
                        )
            for ident in node.args.get("using") or []:
                name = ident.name.lower()
                for source in sources:
                    if (hit := restricted(source)) and name not in hit[1]:
                        _refuse_column(hit[0], name)


def _refuse_star(key: str) -> None:
    raise UnsafeSQLError(f"SELECT * on table {key}", f"{key} has a column allow-list; name the columns instead")


def _refuse_column(key: str, name: str, extra: str = "") -> None:
    raise UnsafeSQLError(f"column {key}.{name}", f"{name} is not an allowed column of {key}{extra}")


def _check_column(
    column: exp.Column, scope: Scope | None, restricted: Callable[[object], tuple[str, frozenset[str]] | None]
) -> None:
    name = column.name.lower()
    if column.table:
        sources = _lookup(scope, column.table)
        if not sources:
            raise UnsafeSQLError(
                f"column {column.table.lower()}.{name or '*'}",
                f"{column.table} does not name a table in scope",
            )
        for source in sources:
            if hit := restricted(source):
                if isinstance(column.this, exp.Star):
                    _refuse_star(hit[0])
                if name not in hit[1]:
                    _refuse_column(hit[0], name)
        return
    if isinstance(column.this, exp.Star) or _is_lambda_param(column) or _is_output_alias_ref(column, scope):
        return
    # PostgreSQL and DuckDB read a bare table alias as the whole row (SELECT u FROM users u).
    for source in _lookup(scope, name):
        if hit := restricted(source):
            raise UnsafeSQLError(
                f"whole-row reference to table {hit[0]}",
                f"{name} stands for every column of {hit[0]}, which has a column allow-list",
            )
    # The database binds an unqualified name in the innermost scope whose FROM items have it,
    # then outward (correlated subqueries). Without the schema we follow the same order: a
    # level where an allow-list (or a subquery's select list) names the column is where it
    # binds -- or the name is ambiguous and the database refuses it. A level with a
    # restricted table that does not allow the name may hide it, so it is refused.
    # This trusts allow-lists to name real columns, as introspection-built ones do.
    for level in _scope_chain(scope):
        blocking = None
        for _n, source in _selected(level):
            if hit := restricted(source):
                if name in hit[1]:
                    return
                blocking = blocking or hit
            elif isinstance(source, Scope):
                outputs = _output_names(source)
                if outputs is not None and name in outputs:
                    return
        if blocking:
            several = len(_selected(level)) > 1
            _refuse_column(blocking[0], name, "; qualify it if it belongs to another table" if several else "")


def _is_lambda_param(column: exp.Column) -> bool:
    lam = column.find_ancestor(exp.Lambda)
    while lam is not None:
        if any(p.name.lower() == column.name.lower() for p in lam.expressions):
            return True
        lam = lam.find_ancestor(exp.Lambda)
    return False


def _is_output_alias_ref(column: exp.Column, scope: Scope | None) -> bool:
    # ORDER BY and GROUP BY may name an output column by its alias ("GROUP BY year"). Only a
    # bare reference counts; inside an expression the name binds to input columns. Known gap:
    # PostgreSQL's GROUP BY prefers an input column over a same-named alias, so
    # "SELECT 1 AS hidden ... GROUP BY hidden" groups by a hidden column; it can reveal which
    # rows share a value, never the value, and refusing aliases would break common SQL.
    if scope is None or not isinstance(scope.expression, exp.Query):
        return False
    parent = column.parent
    if isinstance(parent, exp.Ordered):
        parent = parent.parent
    if not isinstance(parent, (exp.Order, exp.Group)) or parent.parent is not scope.expression:
        return False
    if isinstance(scope.expression, exp.SetOperation):
        return True
    aliases = {e.alias.lower() for e in scope.expression.expressions if isinstance(e, exp.Alias)}
    return column.name.lower() in aliases


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
