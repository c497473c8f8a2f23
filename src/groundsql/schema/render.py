"""Schema as prompt text: M-Schema (XiYan-SQL's format, used by IESR) and plain DDL.

Which one a model reads best is measured by the evaluation harness, not assumed; both render
from the same introspected `Schema`, so a comparison differs in format only.
"""

from __future__ import annotations

from groundsql.schema.model import Column, Schema, Table


def _example_text(value: object) -> str:
    return str(value).replace("\n", " ")


def _shown_examples(table: Table, col: Column) -> tuple[object, ...]:
    """Examples worth their prompt tokens: integer keys (1, 2, 3 or opaque IDs) say nothing."""
    is_key = col.primary_key or any(col.name in fk.columns for fk in table.foreign_keys)
    if is_key and all(isinstance(v, int) for v in col.examples):
        return ()
    return col.examples


def m_schema(schema: Schema, *, with_examples: bool = True) -> str:
    lines = [f"【DB_ID】 {schema.name or 'database'}", "【Schema】"]
    for table in schema.tables:
        header = f"# Table: {table.name}"
        if table.description:
            header += f", {table.description}"
        lines += [header, "["]
        lines += [f"({_m_column(table, col, with_examples)})," for col in table.columns]
        lines.append("]")
    # Only keys between the tables shown: a linked subset would otherwise name tables the
    # prompt does not describe.
    foreign_keys = [
        f"{table.name}.{col}={fk.ref_table}.{ref}"
        for table in schema.tables
        for fk in table.foreign_keys
        if schema.table(fk.ref_table) is not None
        for col, ref in zip(fk.columns, fk.ref_columns)
    ]
    if foreign_keys:
        lines.append("【Foreign keys】")
        lines += foreign_keys
    return "\n".join(lines)


def _m_column(table: Table, col: Column, with_examples: bool) -> str:
    parts = [f"{col.name}:{col.type}"]
    if col.primary_key:
        parts.append("Primary Key")
    if col.description:
        parts.append(col.description)
    examples = _shown_examples(table, col) if with_examples else ()
    if examples:
        parts.append("Examples: [" + ", ".join(_example_text(v) for v in examples) + "]")
    return ", ".join(parts)


def ddl(schema: Schema, *, with_examples: bool = True) -> str:
    return "\n\n".join(_ddl_table(table, with_examples) for table in schema.tables)


def _ddl_table(table: Table, with_examples: bool) -> str:
    body = []
    for col in table.columns:
        line = f"  {col.name} {col.type}"
        if not col.nullable and not col.primary_key:
            line += " NOT NULL"
        notes = [col.description] if col.description else []
        examples = _shown_examples(table, col) if with_examples else ()
        if examples:
            notes.append("e.g. " + ", ".join(_example_text(v) for v in examples))
        body.append((line, "; ".join(notes)))
    if table.primary_key:
        body.append((f"  PRIMARY KEY ({', '.join(table.primary_key)})", ""))
    for fk in table.foreign_keys:
        body.append(
            (
                f"  FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.ref_table}"
                f"({', '.join(fk.ref_columns)})",
                "",
            )
        )
    rendered = []
    for i, (line, note) in enumerate(body):
        comma = "," if i < len(body) - 1 else ""
        rendered.append(f"{line}{comma}" + (f" -- {note}" if note else ""))
    head = f"CREATE TABLE {table.name} ("
    if table.description:
        head = f"-- {table.description}\n{head}"
    return "\n".join([head, *rendered, ");"])


def render_schema(schema: Schema, fmt: str = "m-schema", *, with_examples: bool = True) -> str:
    if fmt == "m-schema":
        return m_schema(schema, with_examples=with_examples)
    if fmt == "ddl":
        return ddl(schema, with_examples=with_examples)
    raise ValueError(f"unknown schema format {fmt!r} (use 'm-schema' or 'ddl')")
