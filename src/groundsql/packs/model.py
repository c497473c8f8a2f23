"""A domain pack: everything groundsql knows about one database, as plain data (FLINT 3.1).

A pack is a folder a person edits:

    pack.yaml     name, description, reference tables, entity tables, domain rules
    schema.yaml   table and column descriptions, documented join paths
    bank.jsonl    the query bank: one {"question", "reasoning", "sql"} object a line
    semantic.yaml the semantic model (optional): measures, dimensions, relationships

`packs.load.load_pack` reads and validates it; `packs.draft.draft_pack` writes a first draft
from any database (`groundsql init`). Names of tables and columns compare case-insensitively.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from groundsql.retrieval.bank import Example
from groundsql.semantic.model import SemanticModel


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TableDoc(_Strict):
    description: str = ""
    columns: dict[str, str] = Field(default_factory=dict)  # column -> description


class JoinPath(_Strict):
    """A documented join: `left` and `right` are `table.column`."""

    left: str
    right: str
    description: str = ""

    @field_validator("left", "right")
    @classmethod
    def _qualified(cls, value: str) -> str:
        table, dot, column = value.partition(".")
        if not (dot and table and column):
            raise ValueError(f"expected 'table.column', got {value!r}")
        return value


class SchemaDocs(_Strict):
    tables: dict[str, TableDoc] = Field(default_factory=dict)
    joins: tuple[JoinPath, ...] = ()


class ReferenceTable(_Strict):
    """A lookup table of concepts (metrics, period types, currencies): the lookup agent reads
    its rows and turns phrases of the question into its keys."""

    table: str
    key: str  # the column other tables refer to
    label: str  # the column a person would recognise ("EBITDA", "Quarterly")
    description: str = ""
    extra: tuple[str, ...] = ()  # more columns shown next to the label (a category, a code)


class EntityTable(_Strict):
    """A table of named things (companies, people, places) that questions mention by name."""

    table: str
    key: str
    names: tuple[str, ...] = Field(min_length=1)  # columns holding names (a name, a ticker)
    kind: str = "entity"  # what to call one in messages: "company", "person"


class Rules(_Strict):
    """Domain instructions, in the words of the people who know the data."""

    schema_linking: tuple[str, ...] = ()
    generation: tuple[str, ...] = ()


class PackFile(_Strict):
    """The contents of pack.yaml."""

    name: str
    description: str = ""
    references: tuple[ReferenceTable, ...] = ()
    entities: tuple[EntityTable, ...] = ()
    rules: Rules = Rules()


class DomainPack(_Strict):
    name: str
    description: str = ""
    schema_docs: SchemaDocs = SchemaDocs()
    references: tuple[ReferenceTable, ...] = ()
    entities: tuple[EntityTable, ...] = ()
    rules: Rules = Rules()
    bank: tuple[Example, ...] = ()
    semantic: SemanticModel | None = None  # semantic.yaml: the compiled path's model
    semantic_path: Path | None = None  # where it was read from, for messages

    def reference(self, table: str) -> ReferenceTable | None:
        return next((r for r in self.references if r.table.lower() == table.lower()), None)

    def table_doc(self, table: str) -> TableDoc | None:
        return next((d for t, d in self.schema_docs.tables.items() if t.lower() == table.lower()),
                    None)
