"""The tables and columns a query reads, against the database's catalog and the policy.

A table must be one the database has (when its catalog is known), never a system catalog
except the introspection views a policy opens, and on the table allow-list when there is one.

`allowed_columns` restricts only the tables it names. Qualified columns are resolved through
aliases; an unqualified one binds where the database would bind it: in the innermost scope
whose FROM items have a column of that name (the catalog says which), then outward
(correlated subqueries). A hidden column is refused wherever it binds. Anything that reads
columns without naming them (`*`, `t.*`, a bare alias as a whole row, DuckDB's COLUMNS() and
#n, NATURAL JOIN, column-renaming aliases) is refused on restricted tables, and so is a
GROUP BY name that is both an output alias and a hidden column: the engines group by the
column (`SELECT count(*) AS hid_ssn FROM users GROUP BY hid_ssn`).

Every helper here visits each node a bounded number of times: a 6,000-term OR chain is as
deep as it is long, and walking up to the root from every column would be quadratic.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.optimizer.scope import Scope

from groundsql.config import SafetyConfig
from groundsql.errors import UnsafeSQLError

if TYPE_CHECKING:
    from groundsql.db.introspect import Catalog
    from groundsql.schema.model import Schema

# Schemas whose tables compare by bare name against the allow-list and the catalog.
DEFAULT_SCHEMAS: dict[str, frozenset[str]] = {
    "sqlite": frozenset({"main"}),
    "postgres": frozenset({"public"}),
    "duckdb": frozenset({"main"}),
    # MySQL's default schema is the database in the URL: only bare names compare.
    "mysql": frozenset(),
}
# System catalogs: schemas, and name prefixes that resolve to a catalog even unqualified
# (PostgreSQL searches pg_catalog before public; SQLite reserves sqlite_). MySQL's grant
# tables, server state and its views are databases of their own (mysql.user holds hashes).
_CATALOG_SCHEMAS = frozenset({"pg_catalog", "information_schema", "temp", "pg_temp", "system",
                              "mysql", "performance_schema", "sys"})
_CATALOG_PREFIXES = {"sqlite": ("sqlite_", "pragma_"), "postgres": ("pg_",),
                     "duckdb": ("duckdb_", "pg_", "sqlite_", "pragma_")}
# The views introspection reads, opened by `SafetyConfig.catalog_views`.
CATALOG_VIEWS = {
    "sqlite": frozenset({"sqlite_master", "sqlite_schema"}),
    "postgres": frozenset({"information_schema.tables", "information_schema.columns"}),
    "duckdb": frozenset({"information_schema.tables", "information_schema.columns"}),
    "mysql": frozenset({"information_schema.tables", "information_schema.columns"}),
}


def table_key(table: exp.Table, dialect: str) -> str:
    name, db, catalog = table.name.lower(), table.db.lower(), table.catalog.lower()
    if catalog:
        return f"{catalog}.{db}.{name}"
    if db and db not in DEFAULT_SCHEMAS.get(dialect, frozenset()):
        return f"{db}.{name}"
    return name


@dataclass
class Owners:
    """For each node, the scope it belongs to; and the columns that are lambda parameters."""

    scope: dict[int, Scope] = field(default_factory=dict)
    lambda_params: set[int] = field(default_factory=set)


def scope_owners(root: exp.Expression, scopes: list[Scope]) -> Owners:
    """One walk down the tree, carrying the innermost scope and the lambda parameters."""
    scope_of = {id(s.expression): s for s in scopes}
    owners = Owners()
    stack: list[tuple[exp.Expression, Scope | None, frozenset[str]]] = [(root, None, frozenset())]
    while stack:
        node, scope, params = stack.pop()
        owners.scope[id(node)] = scope  # type: ignore[assignment]
        scope = scope_of.get(id(node), scope)
        if isinstance(node, exp.Lambda):
            params = params | {p.name.lower() for p in node.expressions}
        elif isinstance(node, exp.Column) and not node.table and node.name.lower() in params:
            owners.lambda_params.add(id(node))
        for child in node.iter_expressions():
            stack.append((child, scope, params))
    return owners


class _Names:
    """The allow-lists and the catalog, normalised to the keys `table_key` produces."""

    def __init__(self, policy: SafetyConfig, dialect: str, catalog: "Catalog | None") -> None:
        self.dialect = dialect
        self.tables = None if policy.allowed_tables is None else frozenset(
            self.normalize(t) for t in policy.allowed_tables)
        self.columns = None if policy.allowed_columns is None else {
            self.normalize(t): frozenset(c.lower() for c in cols) for t, cols in policy.allowed_columns.items()}
        self.catalog = catalog
        self.catalog_views = CATALOG_VIEWS.get(dialect, frozenset()) if (
            policy.catalog_views and policy.allowed_tables is None) else frozenset()

    def normalize(self, name: str) -> str:
        parts = [p.strip().strip('"`[]').lower() for p in name.split(".")]
        if len(parts) == 2 and parts[0] in DEFAULT_SCHEMAS.get(self.dialect, frozenset()):
            parts = parts[1:]
        return ".".join(parts)

    def restricted(self, source: object) -> tuple[str, frozenset[str]] | None:
        """(key, allowed columns) when `source` is a base table with a column allow-list."""
        if not _is_base_table(source) or self.columns is None:
            return None
        key = table_key(source, self.dialect)  # type: ignore[arg-type]
        allowed = self.columns.get(key)
        return (key, allowed) if allowed is not None else None

    def has_column(self, source: object, name: str) -> bool | None:
        """Whether a base table has a column; None when the catalog does not say."""
        if self.catalog is None or not _is_base_table(source):
            return None
        columns = self.catalog.tables.get(table_key(source, self.dialect))  # type: ignore[arg-type]
        return None if columns is None else name in columns


def visible_schema(schema: "Schema", policy: SafetyConfig) -> "Schema":
    """The schema as the allow-lists let it be seen: tables off the list and hidden columns
    are left out, with their example values and the foreign keys that name them. What no
    query may read is then shown nowhere either (the model's prompt, `groundsql schema`, the
    API's schema, MCP's describe_schema, the web page's schema browser)."""
    if policy.allowed_tables is None and policy.allowed_columns is None:
        return schema
    from groundsql.schema.model import Schema

    names = _Names(policy, schema.dialect, None)
    shown = {}
    for table in schema.tables:
        key = names.normalize(table.name)
        if names.tables is not None and key not in names.tables:
            continue
        allowed = names.columns.get(key) if names.columns is not None else None
        shown[table.name.lower()] = replace(table, columns=tuple(
            c for c in table.columns if allowed is None or c.name.lower() in allowed))
    visible = {name: {c.name.lower() for c in table.columns} for name, table in shown.items()}

    def seen(table: str, columns: tuple[str, ...]) -> bool:
        return table.lower() in visible and all(c.lower() in visible[table.lower()] for c in columns)

    tables = tuple(replace(t, foreign_keys=tuple(fk for fk in t.foreign_keys if seen(t.name, fk.columns)
                                                 and seen(fk.ref_table, fk.ref_columns)))
                   for t in shown.values())
    return Schema(schema.dialect, tables, schema.name)


def check_tables_and_columns(
    root: exp.Expression, scopes: list[Scope], owners: Owners, dialect: str, policy: SafetyConfig,
    catalog: "Catalog | None",
) -> tuple[str, ...]:
    names = _Names(policy, dialect, catalog)
    cte_refs = _cte_references(scopes, names)
    tables: set[str] = set()
    # Every Table node not positively resolved to a CTE counts as a base table, so a table
    # in a position scope analysis does not model is checked rather than skipped.
    for table in root.find_all(exp.Table):
        if id(table) in cte_refs or not isinstance(table.this, exp.Identifier):
            continue
        key = table_key(table, dialect)
        _check_table(table, key, names)
        tables.add(key)
    if names.columns is not None:
        _check_columns(root, owners, names)
    return tuple(sorted(tables))


def _check_table(table: exp.Table, key: str, names: _Names) -> None:
    if key in names.catalog_views:
        return
    name, schema = table.name.lower(), table.db.lower()
    if schema in _CATALOG_SCHEMAS or name.startswith(_CATALOG_PREFIXES.get(names.dialect, ())):
        hint = " unless safety.catalog_views is set" if key in CATALOG_VIEWS.get(names.dialect, ()) else ""
        raise UnsafeSQLError(f"table {key}", f"{key} is a system catalog, which queries may not read{hint}")
    if names.tables is not None and key not in names.tables:
        raise UnsafeSQLError(f"table {key}", f"{key} is not in the allowed tables")
    if names.catalog is not None and key not in names.catalog.tables:
        raise UnsafeSQLError(f"table {key}", f"there is no table {key} in this database")


def _is_base_table(source: object) -> bool:
    return isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier)


def _cte_references(scopes: list[Scope], names: _Names) -> set[int]:
    """The Table nodes that read a CTE, by the database's rule for comparing names: sqlglot's
    scopes match names as written, but SQLite, DuckDB and Spark compare them without case,
    and PostgreSQL folds unquoted names to lower case (`WITH Abc ...` is read `FROM abc`,
    while a quoted "Abc" is another name than abc)."""
    refs: set[int] = set()
    for scope in scopes:
        visible = {_folded(_cte_name(cte), names.dialect): cte for cte in scope.cte_sources.values()}
        for table in scope.tables:
            if table.db:
                continue
            folded = _folded(table.this, names.dialect)
            source = scope.sources.get(table.alias_or_name)
            if isinstance(source, Scope):
                if folded not in visible:
                    # Spelt as the CTE, yet another name to the database (PostgreSQL: the CTE
                    # "Users" read as Users, which is the table users): the scopes would check
                    # the CTE's columns while the database reads the table's.
                    key = table_key(table, names.dialect)
                    raise UnsafeSQLError(f"table {key}", f"{table.sql(dialect=names.dialect)} is the table {key}, "
                                                         f"not the CTE {_cte_name(source).sql(dialect=names.dialect)}; "
                                                         "write the CTE's name as its WITH clause does")
                refs.add(id(table))
            elif folded in visible and _reads_cte(folded, names):
                refs.add(id(table))
    return refs


def _cte_name(cte: Scope) -> exp.Identifier:
    # The CTE's scope is its query; a recursive CTE's, inside its own body, the anchor arm.
    return cte.expression.find_ancestor(exp.CTE).args["alias"].this


def _folded(name: exp.Identifier, dialect: str) -> str:
    """A name as the dialect compares a CTE's (sqlglot knows each one's rule; MySQL's is below)."""
    if dialect == "mysql":
        return name.name.lower()
    return Dialect.get_or_raise(dialect).normalize_identifier(name.copy()).name


def _reads_cte(folded: str, names: _Names) -> bool:
    """Whether a name that matches a CTE only as the dialect compares names reads the CTE.
    MySQL compares table names as the server's lower_case_table_names says, and CTE names
    without case (MariaDB 10.11 with lower_case_table_names = 0): a reference is surely the
    CTE only where no table of that name exists; elsewhere it is checked as the table."""
    if names.dialect != "mysql":
        return True
    return names.catalog is not None and folded not in names.catalog.tables


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


def _scope_chain(scope: Scope | None):
    while scope is not None:
        yield scope
        scope = scope.parent


def _output_names(scope: Scope) -> set[str] | None:
    try:
        names = scope.expression.named_selects
    except Exception:  # noqa: BLE001 - UDTF scopes and the like have no select list
        return None
    return {n.lower() for n in names}


def _check_columns(root: exp.Expression, owners: Owners, names: _Names) -> None:
    for node in root.walk():
        scope = owners.scope.get(id(node))
        if isinstance(node, exp.Star):
            if isinstance(node.parent, (exp.Column, exp.Count)):
                continue  # t.* is checked with its column; count(*) reads no values
            for _name, source in _selected(scope):
                if hit := names.restricted(source):
                    _refuse_star(hit[0])
        elif isinstance(node, (exp.Columns, exp.PositionalColumn)):
            # DuckDB's COLUMNS('regex'), COLUMNS(lambda) and #n pick columns without naming
            # them, so the allow-list cannot vouch for what they read.
            what = "COLUMNS()" if isinstance(node, exp.Columns) else f"positional column #{node.name}"
            for _name, source in _selected(scope):
                if hit := names.restricted(source):
                    raise UnsafeSQLError(
                        f"{what} on table {hit[0]}", f"{hit[0]} has a column allow-list; name the columns instead"
                    )
        elif isinstance(node, exp.Table) and (hit := names.restricted(node)):
            alias = node.args.get("alias")
            if alias is not None and alias.columns:
                # users AS u(id, name, email) renames columns by position: an allowed name
                # could then stand for a hidden column.
                raise UnsafeSQLError(
                    f"column alias list on table {hit[0]}", "renaming a restricted table's columns by position is not allowed"
                )
        elif isinstance(node, exp.Column):
            if id(node) not in owners.lambda_params:
                _check_column(node, scope, names)
        elif isinstance(node, exp.Join):
            _check_join(node, scope, names)


def _check_join(join: exp.Join, scope: Scope | None, names: _Names) -> None:
    sources = [src for _n, src in _selected(scope)]
    if (join.method or "").upper() == "NATURAL":
        for source in sources:
            if hit := names.restricted(source):
                raise UnsafeSQLError(
                    f"NATURAL JOIN on table {hit[0]}",
                    "a natural join compares every same-named column, including hidden ones",
                )
    for ident in join.args.get("using") or []:
        name = ident.name.lower()
        for source in sources:
            if (hit := names.restricted(source)) and name not in hit[1]:
                _refuse_column(hit[0], name)


def _refuse_star(key: str) -> None:
    raise UnsafeSQLError(f"SELECT * on table {key}", f"{key} has a column allow-list; name the columns instead")


def _refuse_column(key: str, name: str, extra: str = "") -> None:
    raise UnsafeSQLError(f"column {key}.{name}", f"{name} is not an allowed column of {key}{extra}")


def _check_column(column: exp.Column, scope: Scope | None, names: _Names) -> None:
    name = column.name.lower()
    if column.table:
        sources = _lookup(scope, column.table)
        if not sources:
            raise UnsafeSQLError(
                f"column {column.table.lower()}.{name or '*'}", f"{column.table} does not name a table in scope"
            )
        for source in sources:
            if hit := names.restricted(source):
                if isinstance(column.this, exp.Star):
                    _refuse_star(hit[0])
                if name not in hit[1]:
                    _refuse_column(hit[0], name)
        return
    if isinstance(column.this, exp.Star) or _is_output_alias_ref(column, scope, names):
        return
    # PostgreSQL and DuckDB read a bare table alias as the whole row (SELECT u FROM users u).
    for source in _lookup(scope, name):
        if hit := names.restricted(source):
            raise UnsafeSQLError(
                f"whole-row reference to table {hit[0]}",
                f"{name} stands for every column of {hit[0]}, which has a column allow-list",
            )
    _check_binding(name, scope, names)


def _check_binding(name: str, scope: Scope | None, names: _Names) -> None:
    """Follow the database's binding of an unqualified column: the innermost scope with a FROM
    item that has the column. Where none there has it but a restricted table hides it, or
    might hide it where the catalog cannot tell, the column is refused (qualify it)."""
    for level in _scope_chain(scope):
        binds = False
        blocking = None
        for _n, source in _selected(level):
            hit = names.restricted(source)
            has = names.has_column(source, name)
            if hit is not None:
                if name in hit[1]:
                    binds = True
                elif has is not False:  # hidden, or the catalog cannot rule it out
                    blocking = blocking or hit
            elif isinstance(source, Scope):
                outputs = _output_names(source)
                binds = binds or (outputs is not None and name in outputs)
            elif has:
                binds = True
        if binds:
            # Where another source also has it, the database refuses the name as ambiguous.
            return
        if blocking:
            several = len(_selected(level)) > 1
            _refuse_column(blocking[0], name, "; qualify it if it belongs to another table" if several else "")


def _is_output_alias_ref(column: exp.Column, scope: Scope | None, names: _Names) -> bool:
    # ORDER BY and GROUP BY may name an output column by its alias ("GROUP BY year"). Only a
    # bare reference counts; inside an expression the name binds to input columns. In GROUP
    # BY the engines prefer an input column of the same name, so an alias that is also a
    # column of a FROM item is checked as that column.
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
    name = column.name.lower()
    if name not in aliases:
        return False
    if isinstance(parent, exp.Group):
        for _n, source in _selected(scope):
            has = names.has_column(source, name)
            hit = names.restricted(source)
            if hit and name not in hit[1] and has is not False:
                # The engines group by an input column of this name before the alias.
                raise UnsafeSQLError(
                    f"column {hit[0]}.{name}",
                    f"GROUP BY {name} " + ("groups" if has else "may group") + f" by a hidden column of "
                    f"{hit[0]} rather than by the alias; group by the expression itself",
                )
    return True
