"""A semantic request from a solved example's SQL, kept only where it gives the SQL's rows.

The compiled path shows the model solved examples as requests (the bank's `request`); a small
model given none fills its first requests poorly (it leaves out the filters a question
states). A drafted bank has SQL only, so `groundsql init` reads each example's SQL back into
the semantic model's names: a column is the field declared on it, an aggregate the measure
(or aggregated fact) with that expression, a comparison with a literal a filter, a year's two
date bounds the year. A request that the compiler does not turn into the same rows as the
SQL is dropped: a wrong example would teach the model the wrong request.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError

from groundsql.db import Database
from groundsql.errors import GroundsqlError
from groundsql.evaluation.execution_match import gold_orders, results_match
from groundsql.semantic.catalog import Catalog, FieldRef, _via_end, parse
from groundsql.semantic.compile import CompileError, compile_request
from groundsql.semantic.request import Filter, Order, Request

__all__ = ["request_from_sql", "verified_request"]

_OPS = {exp.EQ: "=", exp.NEQ: "!=", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "=", "!=": "!="}


class _Unreadable(Exception):
    """A part of the SQL that has no request to say it."""


def request_from_sql(sql: str, catalog: Catalog) -> Request | None:
    """The request that says what `sql` asks, in `catalog`'s names; None when some part of it
    (a subquery, a join condition between two columns, a HAVING) has none."""
    try:
        query = parse(sql, catalog.dialect)
    except SqlglotError:
        return None
    if not isinstance(query, exp.Select) or query.args.get("having") or query.args.get("with") \
            or any(isinstance(node, exp.Select) for node in query.find_all(exp.Select) if node is not query):
        return None
    try:
        return _Reader(catalog, query).request()
    except (_Unreadable, ValueError):  # ValueError: pydantic's, a value no request field takes
        return None


def verified_request(sql: str, catalog: Catalog, db: Database) -> Request | None:
    """`request_from_sql`, kept only when its compiled query gives the rows `sql` gives."""
    request = request_from_sql(sql, catalog)
    if request is None:
        return None
    try:
        compiled = compile_request(catalog, request)
        want, got = db.execute(sql).rows, db.execute(compiled.sql).rows
    except (CompileError, GroundsqlError):  # a request that does not compile or run is no example
        return None
    return request if want and results_match(want, got, gold_orders(sql)) else None


class _Reader:
    def __init__(self, catalog: Catalog, query: exp.Select) -> None:
        self.catalog = catalog
        self.query = query
        self.tables: dict[str, str] = {}  # alias (or name) -> physical table, lower case
        for table in query.find_all(exp.Table):
            self.tables[(table.alias_or_name or table.name).lower()] = table.name.lower()
        source = query.args.get("from_")
        self.base = source.this.name.lower() if source is not None and isinstance(source.this, exp.Table) else None
        if self.base is None:
            raise _Unreadable("no table")
        self.columns = _columns(catalog)
        self.measures = _measures(catalog)

    def request(self) -> Request:
        select: list[str] = []
        named: dict[str, str] = {}  # an output's alias or SQL -> its field
        for projection in self.query.expressions:
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            name = self._field(inner)
            if name not in select:
                select.append(name)
            named[projection.alias_or_name.lower()] = name
            named[inner.sql().lower()] = name
        where = self._filters(self.query.args.get("where"))
        order = []
        for ordered in (self.query.args.get("order") or exp.Order()).expressions:
            key = ordered.this
            name = named.get(key.sql().lower()) or named.get(key.name.lower() if isinstance(key, exp.Column) else "")
            if name is None:
                name = self._field(key)
            order.append(Order(field=name, desc=bool(ordered.args.get("desc"))))
        limit = self.query.args.get("limit")
        count = int(limit.expression.name) if limit is not None and limit.expression.is_int else None
        return Request(select=tuple(select), where=tuple(where), order_by=tuple(order[:1]), limit=count)

    # -- fields ------------------------------------------------------------------------------

    def _table_of(self, column: exp.Column) -> str:
        if column.table:
            table = self.tables.get(column.table.lower())
            if table is None:
                raise _Unreadable(column.sql())
            return table
        if len(set(self.tables.values())) != 1:
            raise _Unreadable(f"{column.sql()}: which table")
        return self.base  # type: ignore[return-value]

    def _field(self, node: exp.Expression) -> str:
        if isinstance(node, exp.Column):
            names = self.columns.get((self._table_of(node), node.name.lower()))
            if not names:
                raise _Unreadable(node.sql())
            return names[0]
        if isinstance(node, exp.AggFunc):
            columns = list(node.find_all(exp.Column))
            tables = {self._table_of(c) for c in columns} or {self.base}
            if len(tables) != 1 or isinstance(node.this, exp.Distinct):
                raise _Unreadable(node.sql())
            bare = node.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n)
            key = (tables.pop(), _normal(bare.sql(dialect=self.catalog.dialect)))
            if key in self.measures:
                return self.measures[key][0]
        raise _Unreadable(node.sql())

    # -- filters -----------------------------------------------------------------------------

    def _filters(self, where: exp.Where | None) -> list[Filter]:
        if where is None:
            return []
        found: list[Filter] = []
        for part in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
            found.append(self._filter(part))
        return _years(found)

    def _filter(self, part: exp.Expression) -> Filter:
        if isinstance(part, exp.Paren):
            return self._filter(part.this)
        if isinstance(part, tuple(_OPS)):
            op = _OPS[type(part)]
            left, right = part.this, part.expression
            if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
                left, right, op = right, left, _FLIPPED[op]
            return Filter(field=self._filter_field(left), op=op, value=_literal(right))  # type: ignore[arg-type]
        if isinstance(part, exp.In) and not part.args.get("query"):
            return Filter(field=self._filter_field(part.this), op="in",
                          value=[_literal(v) for v in part.expressions])  # type: ignore[misc]
        if isinstance(part, exp.Between):
            return Filter(field=self._filter_field(part.this), op="between",
                          value=[_literal(part.args["low"]), _literal(part.args["high"])])  # type: ignore[misc]
        if isinstance(part, exp.Is) and isinstance(part.expression, exp.Null):
            return Filter(field=self._filter_field(part.this), op="is null")
        if isinstance(part, exp.Not) and isinstance(part.this, exp.Is) and isinstance(part.this.expression, exp.Null):
            return Filter(field=self._filter_field(part.this.this), op="is not null")
        raise _Unreadable(part.sql())

    def _filter_field(self, node: exp.Expression) -> str:
        if not isinstance(node, exp.Column):
            raise _Unreadable(node.sql())
        return self._field(node)


def _literal(node: exp.Expression) -> Any:
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return -_literal(node.this)
    if not isinstance(node, exp.Literal):
        raise _Unreadable(node.sql())
    if node.is_string:
        return node.this
    number = float(node.this)
    return int(number) if number.is_integer() and "." not in node.this else number


def _years(filters: list[Filter]) -> list[Filter]:
    """`d >= '2023-01-01' AND d < '2024-01-01'` is the year 2023 of d."""
    out = list(filters)
    for low in filters:
        if low.op != ">=" or not re.fullmatch(r"\d{4}-01-01", str(low.value)):
            continue
        year = int(str(low.value)[:4])
        high = next((f for f in filters if f.field == low.field and f.op == "<" and f.value == f"{year + 1}-01-01"), None)
        if high is not None and low in out and high in out:
            at = out.index(low)
            out = [f for f in out if f not in (low, high)]
            out.insert(at, Filter(field=low.field, op="=", value=str(year)))
    return out


def _normal(sql: str) -> str:
    return re.sub(r"\s+", "", sql).lower()


def _physical(catalog: Catalog, ref: FieldRef) -> str:
    return _via_end(catalog.model, catalog.table(ref.table), ref.via, ()).table.lower()


def _columns(catalog: Catalog) -> dict[tuple[str, str], list[str]]:
    """(table, column) -> the fields that show it, a field of the column's own table first."""
    found: dict[tuple[str, str], list[FieldRef]] = {}
    for ref in catalog.of_kind("dimension", "time", "fact"):
        if len(ref.exprs) != 1 or not isinstance(ref.exprs[0], exp.Column) or ref.grain is not None:
            continue
        found.setdefault((_physical(catalog, ref), ref.exprs[0].name.lower()), []).append(ref)
    return {key: [r.name for r in sorted(refs, key=lambda r: (len(r.via), r.kind != "dimension"))]
            for key, refs in found.items()}


def _measures(catalog: Catalog) -> dict[tuple[str, str], list[str]]:
    """(table, the aggregate's SQL) -> the measures (and aggregated facts) that compute it."""
    found: dict[tuple[str, str], list[str]] = {}
    for ref in catalog.of_kind("measure", "aggregate"):
        if len(ref.exprs) != 1 or ref.via or getattr(ref.source, "filter", None):
            continue
        expr = ref.exprs[0]
        if ref.kind == "aggregate":
            expr = exp.func(ref.aggregation or "sum", expr.copy())
        if any(c.table for c in expr.find_all(exp.Column)):
            continue  # reads another table's column: not the plain aggregate of one table
        found.setdefault((catalog.table(ref.table).table.lower(), _normal(expr.sql(dialect=catalog.dialect))),
                         []).append(ref.name)
    return found


def attach_requests(examples: Sequence[Any], catalog: Catalog, db: Database) -> list[dict[str, Any] | None]:
    """For each example (with a `sql`), its verified request as JSON, or None."""
    out = []
    for example in examples:
        request = verified_request(example.sql, catalog, db)
        out.append(request.to_json() if request is not None else None)
    return out
