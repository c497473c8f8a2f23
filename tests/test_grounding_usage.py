"""Whether a query uses what grounding found (grounding/usage.py): resolved values it never
filters on, inner joins it reads nothing from. Data-driven, on a schema with a reference table,
a fact table, a child table and a bridge."""

from __future__ import annotations

import pytest

from groundsql.grounding.lookup import Constraint
from groundsql.grounding.usage import idle_joins, unused_constraints, unused_text
from groundsql.schema import Column, ForeignKey, Schema, Table

SCHEMA = Schema("sqlite", (
    Table("ref_commodity", (Column("commodity_id", "INTEGER", primary_key=True), Column("name", "TEXT"))),
    Table("ref_status", (Column("status_id", "INTEGER", primary_key=True), Column("label", "TEXT"))),
    Table("shipment", (Column("shipment_id", "INTEGER", primary_key=True), Column("status_id", "INTEGER"),
                       Column("shipped_on", "TEXT")),
          (ForeignKey(("status_id",), "ref_status", ("status_id",)),)),
    Table("shipment_line", (Column("line_id", "INTEGER", primary_key=True), Column("shipment_id", "INTEGER"),
                            Column("cargo_id", "INTEGER"), Column("tonnes", "REAL")),
          (ForeignKey(("shipment_id",), "shipment", ("shipment_id",)),
           ForeignKey(("cargo_id",), "ref_commodity", ("commodity_id",)))),
))
WHEAT = Constraint("ref_commodity", "commodity_id", 3, "Wheat", "wheat", "lookup")
DELAYED = Constraint("ref_status", "status_id", "6", "Delayed", "delayed", "lookup")


@pytest.mark.parametrize("sql, unused", [
    # The resolved value ignored: the sum of every commodity.
    ("SELECT SUM(tonnes) FROM shipment_line", ["Wheat", "Delayed"]),
    # By the key, through a column that references it under another name (cargo_id).
    ("SELECT SUM(tonnes) FROM shipment_line l JOIN shipment s ON s.shipment_id = l.shipment_id "
     "WHERE l.cargo_id = 3 AND s.status_id = 6", []),
    # 3.0 and '6' are the same values; IN lists count.
    ("SELECT SUM(tonnes) FROM shipment_line WHERE cargo_id IN (1, 3.0) AND shipment_id IN "
     "(SELECT shipment_id FROM shipment WHERE status_id = '6')", []),
    # By the label instead of the key: the value is used (however it is written).
    ("SELECT SUM(l.tonnes) FROM shipment_line l JOIN ref_commodity c ON c.commodity_id = l.cargo_id "
     "WHERE c.name = 'wheat' AND 6 = shipment_id", ["Delayed"]),
    # The right number on a column that is not the key does not count.
    ("SELECT SUM(tonnes) FROM shipment_line WHERE line_id = 3 LIMIT 6", ["Wheat", "Delayed"]),
    # Not SQL: nothing to say.
    ("this is not sql (", []),
])
def test_unused_constraints(sql: str, unused: list[str]) -> None:
    found = unused_constraints(sql, [WHEAT, DELAYED], SCHEMA)
    assert [c.label for c in found] == unused


def test_a_label_written_as_a_number_is_used() -> None:
    # "ticker 5516": the model compares the symbol column with the number, not the text '5516'.
    ticker = Constraint("ref_commodity", "commodity_id", 92249879, "5516", "ticker 5516", "entity")
    assert unused_constraints("SELECT COUNT(*) FROM ref_commodity WHERE name = 5516", [ticker], SCHEMA) == []
    assert unused_constraints("SELECT COUNT(*) FROM ref_commodity WHERE name = 5517", [ticker], SCHEMA) == [ticker]


@pytest.mark.parametrize("sql, idle", [
    # A count of shipments that joins its lines: counted once per line.
    ("SELECT COUNT(*) FROM shipment s JOIN shipment_line l ON l.shipment_id = s.shipment_id "
     "WHERE s.status_id = 6", ["shipment_line"]),
    ("SELECT COUNT(*) FROM shipment JOIN shipment_line ON shipment_line.shipment_id = shipment.shipment_id",
     ["shipment_line"]),
    # Read elsewhere: in the select list, in WHERE, through t.*, or by an unqualified column it has.
    ("SELECT SUM(l.tonnes) FROM shipment s JOIN shipment_line l ON l.shipment_id = s.shipment_id", []),
    ("SELECT COUNT(*) FROM shipment s JOIN shipment_line l ON l.shipment_id = s.shipment_id "
     "WHERE l.cargo_id = 3", []),
    ("SELECT l.* FROM shipment s JOIN shipment_line l ON l.shipment_id = s.shipment_id", []),
    ("SELECT * FROM shipment s JOIN shipment_line l ON l.shipment_id = s.shipment_id", []),
    ("SELECT SUM(tonnes) FROM shipment s JOIN shipment_line l ON l.shipment_id = s.shipment_id", []),
    # A bridge: read in the next join's condition.
    ("SELECT c.name FROM shipment s JOIN shipment_line l ON l.shipment_id = s.shipment_id "
     "JOIN ref_commodity c ON c.commodity_id = l.cargo_id", []),
    # An unqualified column the joined table does not have does not make it read.
    ("SELECT COUNT(*) FROM shipment s JOIN ref_status r ON r.status_id = s.status_id WHERE shipped_on > '2024'",
     ["ref_status"]),
    # Outer joins keep every row: not flagged; nor is USING (no condition of its own to read).
    ("SELECT COUNT(*) FROM shipment s LEFT JOIN shipment_line l ON l.shipment_id = s.shipment_id", []),
    ("SELECT COUNT(*) FROM shipment JOIN shipment_line USING (shipment_id)", []),
    # In a subquery too.
    ("SELECT * FROM ref_status WHERE status_id IN (SELECT s.status_id FROM shipment s "
     "JOIN shipment_line l ON l.shipment_id = s.shipment_id)", ["shipment_line"]),
])
def test_idle_joins(sql: str, idle: list[str]) -> None:
    assert idle_joins(sql, SCHEMA) == idle


def test_unused_values_are_shown_with_their_phrase_and_filter() -> None:
    assert unused_text([WHEAT, DELAYED]) == ('- "wheat" is ref_commodity.commodity_id = 3 (Wheat)\n'
                                             "- \"delayed\" is ref_status.status_id = '6' (Delayed)")
