"""Schema renderings, checked against expected files (one loop over formats).

The schema is built by hand so every feature appears once: a description, a composite primary
key, a NOT NULL column, a foreign key, text examples, and integer key examples (left out: they
cost tokens and say nothing).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundsql.schema import Column, ForeignKey, Schema, Table, render_schema

EXPECTED = Path(__file__).parent / "fixtures" / "render"

SCHEMA = Schema(
    dialect="sqlite",
    name="shop",
    tables=(
        Table(
            name="customer",
            description="people who bought something",
            columns=(
                Column("customer_id", "INTEGER", primary_key=True, nullable=False, examples=(1, 2, 3)),
                Column("name", "TEXT", nullable=False, examples=("Ada", "Grace")),
                Column("country", "TEXT", description="ISO 3166 alpha-2", examples=("FR", "JP")),
            ),
        ),
        Table(
            name="order_line",
            columns=(
                Column("order_id", "INTEGER", primary_key=True, nullable=False, examples=(10, 11)),
                Column("line_no", "INTEGER", primary_key=True, nullable=False, examples=(1, 2)),
                Column("customer_id", "INTEGER", examples=(1, 2)),
                Column("amount", "DECIMAL(10, 2)", examples=(12.5, 7.25)),
            ),
            foreign_keys=(ForeignKey(("customer_id",), "customer", ("customer_id",)),),
        ),
    ),
)


@pytest.mark.parametrize(
    "fmt, examples, expected_file",
    [
        ("m-schema", True, "shop.m-schema.txt"),
        ("m-schema", False, "shop.m-schema.no-examples.txt"),
        ("ddl", True, "shop.ddl.txt"),
        ("ddl", False, "shop.ddl.no-examples.txt"),
    ],
)
def test_rendering(fmt: str, examples: bool, expected_file: str) -> None:
    expected = (EXPECTED / expected_file).read_text(encoding="utf-8").rstrip("\n")
    assert render_schema(SCHEMA, fmt, with_examples=examples) == expected


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown schema format"):
        render_schema(SCHEMA, "yaml")


def test_restrict_keeps_only_named_tables() -> None:
    assert [t.name for t in SCHEMA.restrict({"ORDER_LINE"}).tables] == ["order_line"]
