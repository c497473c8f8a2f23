"""Reading a pack's semantic.yaml, and checking it against the database and its data.

Mistakes are reported as `file:line: entry.field: message`, like the other pack files: the
YAML keeps the line of every key, pydantic checks the shape, `build_catalog` the names and
expressions against the schema, and `check_data` the relationships' declared cardinality
against the rows (a many_to_one that the data repeats would double-count every measure).
"""

from __future__ import annotations

from pathlib import Path
from groundsql.db import Database
from groundsql.errors import ConfigError, GroundsqlError
from groundsql.schema.model import Schema
from groundsql.semantic.catalog import Catalog, SemanticError, build_catalog
from groundsql.semantic.model import LogicalTable, Relationship, SemanticModel
from groundsql.yamlfile import Where, line_of, read_model, read_yaml

SEMANTIC_FILE = "semantic.yaml"
# A dimension with at most this many distinct values has them all listed for the model (and as
# the only values its filters accept); a bigger one is filtered by what linking finds.
SMALL_DIMENSION = 60
_LONGEST_VALUE = 80


def load_semantic(path: Path) -> SemanticModel:
    """The model in `path`; a ConfigError names file:line: field on a mistake of shape."""
    return read_model(path, SemanticModel)


def catalog_for(model: SemanticModel, schema: Schema, path: Path | None,
                entity_tables: tuple[str, ...] = ()) -> Catalog:
    """The model checked against the schema; a mistake names file:line: entry.field."""
    try:
        return build_catalog(model, schema, entity_tables)
    except SemanticError as err:
        raise ConfigError(f"{locate(path, err.where)}: {err.message}") from None


def locate(path: Path | None, where: Where) -> str:
    field = ".".join(str(p) for p in where)
    if path is None or not path.is_file():
        return f"{SEMANTIC_FILE}: {field}" if path is None else f"{path}: {field}"
    _, lines = read_yaml(path)
    return f"{path}:{line_of(lines, where)}: {field}"


def check_data(catalog: Catalog, db: Database, path: Path | None) -> None:
    """Read what the compiler needs from the data (the values of small dimensions, the keys of
    currency codes) and check each relationship's declared cardinality against the rows."""
    model = catalog.model
    for i, rel in enumerate(model.relationships):
        repeated = _repeated(db, model, rel)
        if repeated and rel.type in ("many_to_one", "one_to_one"):
            raise ConfigError(f"{locate(path, ('relationships', i, 'type'))}: {rel.name} is declared {rel.type}, "
                              f"but {repeated} row(s) of {rel.from_} have more than one {rel.to} in the data "
                              "(one_to_many): a measure would be counted twice")
    for ref in catalog.of_kind("dimension"):
        if len(ref.exprs) != 1 or ref.source.entity:  # type: ignore[union-attr]
            continue
        values = _small_values(db, catalog, ref.table, ref.via, ref.exprs[0].sql(dialect=db.dialect))
        if values is not None:
            catalog.values[ref.name] = values
    conv = model.currency
    if conv is not None:
        sql = f"SELECT {db.quote(conv.code)}, {db.quote(conv.key)} FROM {db.quote(conv.currencies)}"
        catalog.currency_keys = {str(code): key for code, key in db.execute(sql, max_rows=10_000).rows
                                 if code is not None}
        if conv.base not in catalog.currency_keys:
            raise ConfigError(f"{locate(path, ('currency', 'base'))}: no currency coded {conv.base!r} in "
                              f"{conv.currencies}.{conv.code}")


def _repeated(db: Database, model: SemanticModel, rel: Relationship) -> int:
    """How many rows of the relationship's `from` table have more than one `to` row."""
    start = model.table(rel.from_)
    end = model.table(rel.to)
    assert start is not None and end is not None
    q = db.quote
    if rel.through is not None:
        bridge = rel.through
        where = f" WHERE {bridge.where}" if bridge.where else ""
        sql = (f"SELECT COUNT(*) FROM (SELECT {q(bridge.from_column)} FROM {q(bridge.table)}{where} "
               f"GROUP BY {q(bridge.from_column)} HAVING COUNT(*) > 1) AS repeated")
    else:
        keys = _row_key(start)
        on = " AND ".join(f"f.{q(a)} = t.{q(b)}" for a, b in rel.columns)
        group = ", ".join(f"f.{q(k)}" for k in keys)
        sql = (f"SELECT COUNT(*) FROM (SELECT {group} FROM {q(start.table)} AS f JOIN {q(end.table)} AS t "
               f"ON {on} GROUP BY {group} HAVING COUNT(*) > 1) AS repeated")
    try:
        rows = db.execute(sql, max_rows=1).rows
    except GroundsqlError:
        return 0  # cannot be measured here (a view, a type that will not group): trust the file
    return int(rows[0][0] or 0) if rows else 0


def _row_key(table: LogicalTable) -> tuple[str, ...]:
    return table.key or ("rowid",)


def _small_values(db: Database, catalog: Catalog, table: str, via: tuple[str, ...],
                  expr: str) -> tuple[str, ...] | None:
    """The distinct values of a dimension read on one table, if there are few."""
    model = catalog.model
    logical = model.table(table)
    assert logical is not None
    for name in via:
        rel = model.relationship(name)
        assert rel is not None
        logical = model.table(rel.to)  # type: ignore[assignment]
    sql = (f"SELECT DISTINCT {expr} FROM {db.quote(logical.table)} WHERE {expr} IS NOT NULL")  # type: ignore[union-attr]
    try:
        result = db.execute(sql, max_rows=SMALL_DIMENSION + 1)
    except GroundsqlError:
        return None
    values = [row[0] for row in result.rows]
    if len(values) > SMALL_DIMENSION or result.truncated:
        return None
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return tuple(sorted(values))  # a few whole numbers (a quarter): listed as numbers
    texts = [str(v) for v in values if isinstance(v, str) and 0 < len(v) <= _LONGEST_VALUE]
    if len(texts) != len(values):
        return None  # other numbers and long texts are compared, not listed
    return tuple(sorted(texts, key=str.lower))
