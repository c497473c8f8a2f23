"""Reading a domain pack, with errors that name the file, the line and the field.

A pack is written by hand, so every mistake must be easy to find: YAML is parsed into nodes
that remember their lines, pydantic validates the data, and each error is mapped back to the
line of the field it is about. `check_pack` then compares the pack with the real database
(every table and column it names must exist) with the same kind of message.
"""

from __future__ import annotations

from pathlib import Path


from groundsql.errors import ConfigError
from groundsql.jsonl import read_jsonl
from groundsql.packs.model import DomainPack, PackFile, SchemaDocs
from groundsql.retrieval.bank import QueryBank
from groundsql.schema.model import Schema
from groundsql.semantic.load import SEMANTIC_FILE, load_semantic

__all__ = ["BANK_FILE", "BENCHMARK_FILE", "PACK_FILE", "SCHEMA_FILE", "SEMANTIC_FILE", "benchmark_questions", "check_pack",
           "load_pack"]
from groundsql.yamlfile import Where, line_of, read_model, read_yaml

PACK_FILE, SCHEMA_FILE, BANK_FILE = "pack.yaml", "schema.yaml", "bank.jsonl"
# The team's own benchmark questions with their gold SQL (evaluation/pack_benchmark.py).
BENCHMARK_FILE = "benchmark.jsonl"



def load_pack(folder: str | Path) -> DomainPack:
    """The pack in `folder`; raises ConfigError naming file:line and field on any mistake."""
    folder = Path(folder)
    if not (folder / PACK_FILE).is_file():
        raise ConfigError(f"{folder}: not a domain pack (no {PACK_FILE}); "
                          f"`groundsql init --db URL --out {folder}` drafts one")
    head = read_model(folder / PACK_FILE, PackFile)
    docs = read_model(folder / SCHEMA_FILE, SchemaDocs) if (folder / SCHEMA_FILE).is_file() else SchemaDocs()
    bank = QueryBank.load(folder / BANK_FILE).examples if (folder / BANK_FILE).is_file() else ()
    for number, example in enumerate(bank, 1):
        if not example.question.strip() or not example.sql.strip():
            raise ConfigError(f"{folder / BANK_FILE}: example {number} has an empty question or sql")
    semantic_path = folder / SEMANTIC_FILE
    semantic = load_semantic(semantic_path) if semantic_path.is_file() else None
    return DomainPack(name=head.name, description=head.description, schema_docs=docs,
                      references=head.references, entities=head.entities, rules=head.rules,
                      bank=bank, semantic=semantic, semantic_path=semantic_path if semantic else None)


def benchmark_questions(folder: str | Path) -> list[tuple[str, str]]:
    """The team's benchmark questions beside the pack (benchmark.jsonl), with their gold SQL."""
    path = Path(folder) / BENCHMARK_FILE
    if not path.is_file():
        return []
    found = []
    for number, raw in read_jsonl(path, "a benchmark question"):
        question, sql = raw.get("question"), raw.get("sql")
        for name, value in (("question", question), ("sql", sql)):
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{path}:{number}: {name}: a non-empty text is required")
        found.append((question, sql))
    return found


def check_pack(pack: DomainPack, schema: Schema, folder: str | Path) -> None:
    """Every table and column the pack names exists in `schema`; else a ConfigError that
    names the file, line and field of the first mistake."""
    folder = Path(folder)
    columns = {t.name.lower(): {c.name.lower() for c in t.columns} for t in schema.tables}
    problems: list[tuple[str, Where, str]] = []

    def need(file: str, where: Where, table: str, column: str | None = None) -> None:
        if table.lower() not in columns:
            problems.append((file, where, f"no table {table!r} in the database"))
        elif column is not None and column.lower() not in columns[table.lower()]:
            problems.append((file, where, f"table {table!r} has no column {column!r}"))

    for i, ref in enumerate(pack.references):
        need(PACK_FILE, ("references", i, "table"), ref.table)
        for field in ("key", "label"):
            need(PACK_FILE, ("references", i, field), ref.table, getattr(ref, field))
        for j, extra in enumerate(ref.extra):
            need(PACK_FILE, ("references", i, "extra", j), ref.table, extra)
    for i, entity in enumerate(pack.entities):
        need(PACK_FILE, ("entities", i, "table"), entity.table)
        need(PACK_FILE, ("entities", i, "key"), entity.table, entity.key)
        for j, name in enumerate(entity.names):
            need(PACK_FILE, ("entities", i, "names", j), entity.table, name)
    for table, doc in pack.schema_docs.tables.items():
        need(SCHEMA_FILE, ("tables", table), table)
        for column in doc.columns:
            need(SCHEMA_FILE, ("tables", table, "columns", column), table, column)
    for i, join in enumerate(pack.schema_docs.joins):
        for side in ("left", "right"):
            table, _, column = getattr(join, side).partition(".")
            need(SCHEMA_FILE, ("joins", i, side), table, column)
    if problems:
        file, where, message = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(f"{_locate(folder / file, where)}: {message}{more}")


def _locate(path: Path, where: Where) -> str:
    _, lines = read_yaml(path)
    field = ".".join(str(p) for p in where)
    return f"{path}:{line_of(lines, where)}: {field}"
