"""The introspected shape of a database, as immutable values every stage can share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # as the database spells it, e.g. "INTEGER", "VARCHAR(40)"
    nullable: bool = True
    primary_key: bool = False
    description: str = ""
    examples: tuple[object, ...] = ()  # a few distinct non-null values, for the prompt

    @property
    def is_text(self) -> bool:
        """Holds text (an untyped SQLite column counts: it holds whatever was put in)."""
        kind = self.type.upper()
        return not kind or any(t in kind for t in ("CHAR", "TEXT", "CLOB", "STRING"))


@dataclass(frozen=True)
class ForeignKey:
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    row_count: int | None = None
    description: str = ""

    @property
    def primary_key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.primary_key)

    def column(self, name: str) -> Column | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass(frozen=True)
class Schema:
    dialect: str  # sqlglot dialect name: "sqlite", "postgres", "duckdb", ...
    tables: tuple[Table, ...]
    name: str = ""
    _index: dict[str, Table] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {t.name.lower(): t for t in self.tables})

    def table(self, name: str) -> Table | None:
        return self._index.get(name.lower())

    def restrict(self, names: set[str] | list[str] | tuple[str, ...]) -> "Schema":
        """The same schema with only the named tables (schema linking narrows with this)."""
        wanted = {n.lower() for n in names}
        return Schema(self.dialect, tuple(t for t in self.tables if t.name.lower() in wanted), self.name)

    def restrict_columns(self, columns: Mapping[str, Iterable[str]]) -> "Schema":
        """Only the named tables, each with the named columns plus what keeps it joinable: its
        primary key, and both ends of every foreign key between two kept tables. Foreign keys to
        tables left out are dropped, so no rendering names a column the schema no longer has."""
        wanted = {t.lower(): {c.lower() for c in cols} for t, cols in columns.items()}
        kept = [t for t in self.tables if t.name.lower() in wanted]
        keep = {t.name.lower(): wanted[t.name.lower()] | {c.lower() for c in t.primary_key} for t in kept}
        links = {t.name.lower(): tuple(fk for fk in t.foreign_keys if fk.ref_table.lower() in keep)
                 for t in kept}
        for table in kept:
            for fk in links[table.name.lower()]:
                keep[table.name.lower()] |= {c.lower() for c in fk.columns}
                keep[fk.ref_table.lower()] |= {c.lower() for c in fk.ref_columns}
        tables = tuple(
            replace(t, columns=tuple(c for c in t.columns if c.name.lower() in keep[t.name.lower()]),
                    foreign_keys=links[t.name.lower()])
            for t in kept
        )
        return Schema(self.dialect, tables, self.name)
