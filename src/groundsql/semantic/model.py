"""A semantic model: what the numbers and words of a database mean, as plain data.

It is a pack's `semantic.yaml`, in the spirit of Snowflake Cortex Analyst's semantic-model
spec and dbt MetricFlow: logical tables over the database's tables, each with

    dimensions       what rows are grouped, listed and filtered by (a company's name, a
                     country, a deal's target through the participants table)
    time_dimensions  dates and years, with the grains a question may group by
    facts            row-level numbers, listed or compared as they are, or aggregated
    measures         named aggregates (revenue = SUM(value * multiplier) of one data item),
                     with the rows they read, the filters they default to and the currency
                     they are in; a measure may also be an expression of other measures
    filters          named row conditions ("current roles": end_year IS NULL)

and relationships between logical tables: the only joins the compiler ever writes, each with
its cardinality (measured from the data by `groundsql init` and checked on load). A
relationship may go through a bridge table with a condition (a deal's target is the company
whose participant row has the Target role); a field reaches another table through named
relationships with `via`, so one table can play several roles (buyer, target, advisor).

Expressions are SQL of the database's own dialect over the logical table's base table;
`other_table.column` names a column of another logical table reached by a relationship.
Field names are unique across the model: they are what a request names (semantic/request.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

GRAINS = ("year", "quarter", "month", "day")
AGGREGATIONS = ("sum", "avg", "min", "max")
SCALES = {"thousands": 1e3, "millions": 1e6, "billions": 1e9, "trillions": 1e12}


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def _listed(value: object) -> object:
    """A single string where a list is expected is a list of one."""
    return (value,) if isinstance(value, str) else value


class _Field(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)
    description: str = ""
    synonyms: tuple[str, ...] = ()

    @field_validator("synonyms", mode="before")
    @classmethod
    def _synonyms(cls, value: object) -> object:
        return _listed(value)


class _Placed(_Field):
    # Relationships from this table, in order: the expression is read on the table they lead
    # to, under an alias of its own (the parent company, a deal's target company).
    via: tuple[str, ...] = ()

    @field_validator("via", mode="before")
    @classmethod
    def _via(cls, value: object) -> object:
        return _listed(value)


class Dimension(_Placed):
    """What rows are grouped, listed or filtered by. Several expressions make one dimension of
    several columns (a person's first and last name)."""

    expr: tuple[str, ...] = Field(min_length=1)
    # An entity table of pack.yaml: its values are names that entity linking resolves.
    entity: str | None = None
    # Values shown to the model; a small dimension's values are all read from the data.
    sample_values: tuple[str, ...] = ()
    # What questions call a value besides its own words: Switzerland: [Swiss], Chief
    # Executive Officer: [CEO].
    value_synonyms: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    @field_validator("expr", "sample_values", mode="before")
    @classmethod
    def _lists(cls, value: object) -> object:
        return _listed(value)


class TimeDimension(_Placed):
    expr: str
    type: Literal["date", "datetime", "year"] = "date"  # year: a whole-number year column
    grains: tuple[Literal["year", "quarter", "month", "day"], ...] = ()
    fiscal: bool = False  # a fiscal year: named after the calendar year in which it ends

    def grain_name(self, grain: str) -> str:
        """The field name of this dimension at a grain: announced_date -> announced_year."""
        stem = self.name
        for suffix in ("_date", "_time", "_at", "_on", "date"):
            if stem.endswith(suffix) and len(stem) > len(suffix):
                stem = stem[: -len(suffix)].rstrip("_")
                break
        return f"{stem}_{grain}"


class Fact(_Placed):
    """A row-level number: listed or compared as stored, or aggregated by name (max_close_price)."""

    expr: str
    aggregations: tuple[Literal["sum", "avg", "min", "max"], ...] = AGGREGATIONS

    def aggregate_name(self, aggregation: str) -> str:
        """total_volume, avg_close_price: the words a question uses, not SQL's SUM."""
        return f"{'total' if aggregation == 'sum' else aggregation}_{self.name}"


class DefaultFilter(_Strict):
    """A filter a measure applies unless the request filters or groups by the same field
    ("a figure for fiscal 2023" is the annual one unless quarters are asked for)."""

    field: str
    value: str | int | float | None = None  # none for a named filter (primary_listing)
    # Other fields whose use also sets it aside (grouping by fiscal_quarter asks for quarters).
    unless: tuple[str, ...] = ()

    @field_validator("unless", mode="before")
    @classmethod
    def _lists(cls, value: object) -> object:
        return _listed(value)


class CurrencyOf(_Strict):
    """Where a measure's amounts say their currency and the date to convert them at."""

    column: str  # the currency key of each row: a column, or other_table.column (an invoice's)
    date: str  # the date a rate applies to: a column, or other_table.column


class Measure(_Field):
    """An aggregate over the rows of its table (SUM(data_value * units.multiplier)), or an
    expression of other measures (net_income * 100.0 / revenue)."""

    expr: str
    filter: str | None = None  # the rows this measure reads: a conditional aggregate
    defaults: tuple[DefaultFilter, ...] = ()
    currency: CurrencyOf | None = None  # amounts that can be converted (and scaled)
    scalable: bool = False  # amounts that can be scaled ("in millions") without a currency
    # A time dimension of the table: the measure reads the last (or first) row of each series
    # (the rows that share the table's key but for this column) within the request's filters
    # on it, as a closing price at the end of a year or a balance at the end of a month is read.
    last: str | None = None
    first: str | None = None

    @property
    def edge(self) -> tuple[str, str] | None:
        """("last", column) or ("first", column): the rows a last- or first-value measure reads."""
        return ("last", self.last) if self.last else ("first", self.first) if self.first else None

    @property
    def amount(self) -> bool:
        return self.scalable or self.currency is not None


class NamedFilter(_Field):
    expr: str


class LogicalTable(_Field):
    table: str  # the database table
    key: tuple[str, ...] = ()  # the columns that identify a row
    dimensions: tuple[Dimension, ...] = ()
    time_dimensions: tuple[TimeDimension, ...] = ()
    facts: tuple[Fact, ...] = ()
    measures: tuple[Measure, ...] = ()
    filters: tuple[NamedFilter, ...] = ()

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, value: object) -> object:
        return _listed(value)


class Through(_Strict):
    """A bridge table between two logical tables: from.key = bridge.from_column and
    bridge.to_column = to.key, the bridge rows narrowed by `where`."""

    table: str
    from_column: str
    to_column: str
    where: str | None = None


class Relationship(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)
    from_: str = Field(alias="from")
    to: str
    # Column pairs (from-table column, to-table column); with `through`, the key columns of
    # each end that the bridge refers to.
    columns: tuple[tuple[str, str], ...] = ()
    through: Through | None = None
    # many_to_one: each row of `from` has at most one row of `to` (a join that never repeats a
    # `from` row); one_to_many: it may have several. Measured from the data.
    type: Literal["many_to_one", "one_to_one", "one_to_many"] = "many_to_one"
    # Taken by the compiler to reach a table no field names a path to; False for a role (a
    # self-join, a bridge with a condition), joined only where a field's `via` names it.
    automatic: bool = True
    description: str = ""

    @field_validator("columns", mode="before")
    @classmethod
    def _pairs(cls, value: object) -> object:
        # [country_id, country_id] for one pair, [[a, b], [c, d]] for several
        if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, str) for v in value):
            return (tuple(value),)
        return value

    @model_validator(mode="after")
    def _one_way(self) -> "Relationship":
        if bool(self.columns) == bool(self.through):
            raise ValueError("give either 'columns' (pairs of from and to columns) or 'through' (a bridge "
                             "table), not both")
        return self

    @property
    def fans_out(self) -> bool:
        """Whether following it may repeat a row of its `from` table."""
        return self.type == "one_to_many"


class CurrencyConversion(_Strict):
    """A rate table that converts amounts between currencies at a date: the rate of a currency
    is `base` units per one unit of it (rate_to_usd), the latest rate on or before the date."""

    table: str  # the rates (a database table)
    currency_column: str
    date_column: str
    rate_column: str
    base: str  # the code of the currency the rates are in ("USD")
    # What a question calls each currency, besides its code ("yen", "Swiss franc", "€"): a
    # request converts only into a currency the question names.
    names: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    # How a currency is named: the reference table of currencies, its key and its code.
    currencies: str
    key: str
    code: str


class Area(_Strict):
    """A subject area of a large model (sales: orders, their lines, their statuses): what a
    question about it reads whole, with the tables no area owns that these reach (a customer,
    its country). Declared where the names do not show areas (semantic/scope.py)."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)
    description: str = ""
    tables: tuple[str, ...] = Field(min_length=1)  # logical tables


class SemanticModel(_Strict):
    name: str = ""
    description: str = ""
    drafted: bool = False  # written by `groundsql init`, for a person to review
    tables: tuple[LogicalTable, ...] = Field(min_length=1)
    relationships: tuple[Relationship, ...] = ()
    # Subject areas; without them, a large model's areas are read from its tables' names.
    areas: tuple[Area, ...] = ()
    currency: CurrencyConversion | None = None
    # Instructions for the model choosing requests, in the words of the people who know the data.
    rules: tuple[str, ...] = ()

    def table(self, name: str) -> LogicalTable | None:
        return next((t for t in self.tables if t.name == name), None)

    def relationship(self, name: str) -> Relationship | None:
        return next((r for r in self.relationships if r.name == name), None)
