"""A semantic request: what a question asks for, in the semantic model's own names.

    {"select": ["fiscal_quarter", "revenue"],
     "where": [{"field": "company", "value": "Helios Energy AG"},
               {"field": "period_type", "value": "Quarterly"},
               {"field": "fiscal_year", "value": 2022}],
     "currency": "EUR", "scale": "millions", "order_by": [{"field": "fiscal_quarter"}]}

The keys are SQL's (a code model knows SELECT, WHERE, ORDER BY and LIMIT); the names are the
semantic model's: measures and dimensions side by side in `select`, as in a SELECT with a
GROUP BY, which the compiler writes.

The model fills it under a JSON schema built from the catalog (`request_schema`): every
measure, dimension and filter name is an enum of what the model holds, a small dimension's
values are an enum of its values, and an entity's values are the names linking found in the
question, so the model cannot name a field or a value that does not exist. The compiler
(semantic/compile.py) turns it into SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from groundsql.semantic.catalog import Catalog, FieldRef
from groundsql.semantic.model import SCALES
from groundsql.semantic.terms import Terms

Scalar = str | int | float
OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in", "between", "is null", "is not null")
MAX_FIELDS = 5
MAX_FILTERS = 6
MAX_VALUES = 5


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Filter(_Strict):
    field: str
    op: Literal["=", "!=", "<", "<=", ">", ">=", "in", "not in", "between", "is null", "is not null"] = "="
    # A named filter takes no value; `in` and `between` take a list.
    value: Scalar | list[Scalar] | None = None


class Order(_Strict):
    field: str
    desc: bool = False


class Change(_Strict):
    """The change of the selected measures from one period to another ("from fiscal 2022 to
    2023"): their value at `to` less their value at `from`, or that difference in percent of
    the value at `from`."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    field: str  # a time dimension
    from_: Scalar = Field(alias="from")
    to: Scalar
    percent: bool = False


class Request(_Strict):
    # Measures and dimensions (and stored numbers) to show; next to a measure, the others
    # group it, as in SQL.
    select: tuple[str, ...] = ()
    where: tuple[Filter, ...] = ()
    # Convert amounts into this currency (its code); two codes show each amount in both
    # ("in millions of Singapore dollars, and in US dollars").
    currency: str | tuple[str, str] | None = None
    scale: Literal["thousands", "millions", "billions", "trillions"] | None = None
    order_by: tuple[Order, ...] = ()
    limit: int | None = Field(None, ge=1, le=10_000)
    change: Change | None = None
    # The measures' average over the values of this field ("average quarterly revenue": each
    # quarter's revenue, averaged).
    per: str | None = None
    # Written by code, never by the model: the tables the question speaks of, which decide
    # between two equally short joins the request's own fields leave open ("ordered by
    # customers in Italy": a sale's country through its customer, not its site).
    through: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The request as the model wrote it, without the parts left empty."""
        return self.model_dump(mode="json", exclude_defaults=True, by_alias=True)


def with_ranges(request: Request, terms: Terms, catalog: Catalog | None = None) -> Request:
    """The request as its question reads: the two years of a span the question states ("from
    2019 to 2023") filtered on one field are the span, not the two years alone; and a request
    that shows a yearly field ("every fiscal year from 2019 to 2023") but filters one end of
    the span on a date is the span of that field."""
    where = list(request.where)
    for low, high in terms.year_ranges:
        for name in dict.fromkeys(f.field for f in where):
            ends = [f for f in where if f.field == name and f.op in ("=", "in")]
            values = {v for f in ends for v in (f.value if isinstance(f.value, list) else [f.value])}
            if ends and values == {low, high}:
                at = where.index(ends[0])
                where = [f for f in where if f not in ends]
                where.insert(at, Filter(field=name, op="between", value=[low, high]))
        if catalog is None or any(f.op == "between" for f in where):
            continue
        yearly = [name for name in request.select if _yearly(catalog, name)]
        one_end = [f for f in where if f.op == "=" and _is_time(catalog, f.field)
                   and str(f.value) in (str(low), str(high))]
        if yearly and one_end:
            at = where.index(one_end[0])
            where = [f for f in where if f not in one_end]
            where.insert(at, Filter(field=yearly[0], op="between", value=[low, high]))
    return request if where == list(request.where) else request.model_copy(update={"where": tuple(where)})


def _is_time(catalog: Catalog, name: str) -> bool:
    ref = catalog.fields.get(name)
    return ref is not None and ref.kind == "time"


def _yearly(catalog: Catalog, name: str) -> bool:
    ref = catalog.fields.get(name)
    return ref is not None and ref.kind == "time" and (ref.source.type == "year" or ref.grain == "year")  # type: ignore[union-attr]


def with_ranked_order(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """"In which quarter ... its highest EBITDA": a ranking the question states in one
    direction, of the one measure the request shows, orders by it."""
    measures = [name for name in request.select if (ref := catalog.fields.get(name)) is not None
                and ref.kind in ("measure", "derived", "aggregate")]
    if request.order_by or not terms.ranks or terms.direction is None or len(measures) != 1 \
            or (request.limit is None and not terms.one and terms.top is None):
        return request
    return request.model_copy(update={"order_by": (Order(field=measures[0], desc=terms.direction == "desc"),)})


def as_asked(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """The request as its question reads (the repairs below, in turn)."""
    for repair in (with_fields_once, with_ranges, with_change, with_named_measure, with_ranked_order, with_one_row,
                   with_top, with_names_once, with_named_currency, with_both_currencies, with_ties_broken):
        request = repair(request, terms, catalog)
    return request


def with_fields_once(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """A field selected twice is one column ("free_cash_flow" four times is a small model
    filling the array up to its bound)."""
    select = tuple(dict.fromkeys(request.select))
    return request if select == request.select else request.model_copy(update={"select": select})


def with_top(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """"The three largest deals" is three rows of the order."""
    if terms.top is not None and request.order_by and request.limit is None:
        return request.model_copy(update={"limit": terms.top})
    return request


def with_change(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """"How did X change from 2022 to 2023" is a change, not the two years' sum: a measure
    filtered on both years of a yearly field it does not show becomes their difference (in
    percent when the question asks for one)."""
    if request.change is not None or not terms.grows or terms.years is None:
        return request
    said = list(dict.fromkeys(terms.years))
    measures = [name for name in request.select
                if (ref := catalog.fields.get(name)) is not None and ref.kind in ("measure", "derived", "aggregate")]
    if len(said) < 2 or not measures:
        return request
    for flt in request.where:
        ref = catalog.fields.get(flt.field)
        yearly = ref is not None and ref.kind == "time" and (ref.source.type == "year" or ref.grain == "year")  # type: ignore[union-attr]
        values = flt.value if isinstance(flt.value, list) else [flt.value]
        if not yearly or flt.field in request.select or flt.op not in ("=", "in", "between") or len(values) != 2:
            continue
        if set(values) != {said[0], said[1]}:
            continue
        change = Change(field=flt.field, to=said[1], percent=bool(terms.percent), **{"from": said[0]})
        where = tuple(f for f in request.where if f is not flt)
        return request.model_copy(update={"change": change, "where": where})
    return request


def with_named_currency(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """"Net income in US dollars" converts the amounts into dollars: the currency the question
    names is the request's, and not a filter on the currency the figures are reported in
    (unless the question speaks of reporting)."""
    if request.currency is not None or len(terms.currencies or ()) != 1 or terms.reports:
        return request
    code = (terms.currencies or ())[0]
    if not _shows_amounts(request, catalog):
        return request
    where = tuple(f for f in request.where if not (f.value == code and _is_currency_code(catalog, f.field)))
    return request.model_copy(update={"currency": code, "where": where})


def with_both_currencies(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """"Revenue in millions of Singapore dollars, and how much is that in US dollars" shows each
    amount in both currencies, in the order the question names them: a small model fills one
    (measured: the 1.5B model gave one code on each of the demo's two such questions)."""
    named = terms.currencies or ()
    if len(named) != 2 or terms.reports or isinstance(request.currency, tuple) \
            or request.currency not in (None, *named):
        return request
    if not _shows_amounts(request, catalog):
        return request
    where = tuple(f for f in request.where if not (f.value in named and _is_currency_code(catalog, f.field)))
    return request.model_copy(update={"currency": (named[0], named[1]), "where": where})


def _shows_amounts(request: Request, catalog: Catalog) -> bool:
    """Whether the request shows a measure in a currency (one a currency converts)."""
    return any((ref := catalog.fields.get(name)) is not None and ref.kind in ("measure", "derived")
               and getattr(ref.source, "currency", None) is not None for name in request.select)


def _is_currency_code(catalog: Catalog, name: str) -> bool:
    listed = catalog.values.get(name) or ()
    return bool(listed) and all(v in catalog.currency_keys for v in listed)


def with_one_row(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """"Which country has the most companies?" asks for one row: the first of the order (a
    limit the model gives such a question is its own: the question states no number)."""
    if terms.one and request.order_by and request.limit != 1 and terms.top is None:
        return request.model_copy(update={"limit": 1})
    return request


def with_names_once(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """A name entity linking found filters one field, the first the model gave it: not the
    company and the buyer and the target and the advisor at once."""
    seen: set[tuple[str, str]] = set()
    where = []
    for flt in request.where:
        ref = catalog.fields.get(flt.field)
        entity = getattr(ref.source, "entity", None) if ref is not None else None
        if entity and flt.op == "=" and isinstance(flt.value, str):
            key = (entity.lower(), flt.value)
            if key in seen:
                continue
            seen.add(key)
        where.append(flt)
    return request if len(where) == len(request.where) else request.model_copy(update={"where": tuple(where)})


def with_ties_broken(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """A filter or field reached from the request's rows in two equally short ways that its own
    fields do not decide ("pumps ordered by customers in Italy": a sale's country is its
    customer's and its site's) is reached through the tables the question speaks of."""
    from groundsql.semantic.compile import AmbiguousJoin, CompileError, compile_request

    spoken = tuple(dict.fromkeys(catalog.fields[name].table for name in terms.select or () if name in catalog.fields))
    if not spoken or request.through:
        return request
    try:
        compile_request(catalog, request)
    except AmbiguousJoin:
        return request.model_copy(update={"through": spoken})
    except CompileError:
        pass
    return request


def with_named_measure(request: Request, terms: Terms, catalog: Catalog) -> Request:
    """A request that shows only periods ("fiscal_year" for "free cash flow in every fiscal
    year") shows the one measure the question names beside them."""
    shown = [catalog.fields.get(name) for name in request.select]
    if not shown or request.change is not None or any(ref is None or ref.kind != "time" for ref in shown) \
            or len(terms.measures) != 1:
        return request
    return request.model_copy(update={"select": (*request.select, terms.measures[0])})


# -- the JSON schema a model's answer must satisfy ---------------------------------------------


def request_schema(catalog: Catalog, terms: Terms | None = None, rows: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON schema of a request over `catalog`; with `terms` (semantic/terms.py), only what
    a question grounds: the fields it speaks of, the values, years and numbers it names, its
    currency and scale, an order and a limit only when it ranks. A dimension whose values are
    too many to list (an entity's names) is filtered only by the names linking found. With
    `rows` (tables), only filters the rows of one of them are joined to."""
    terms = terms or Terms()
    fields = [f.name for f in catalog.of_kind("dimension", "time", "fact", "measure", "derived", "aggregate")]
    selectable = [name for name in fields if terms.select is None or name in terms.select]
    refs = list(catalog.fields.values())
    filters = [_filter_schema(catalog, ref, terms) for ref in refs]
    # A date's filter takes a year or a month ("2023", "2023-03"): the same column at a year's
    # or a month's grain would be the same filter twice (the 1.5B model wrote both, then the
    # year again until the limit, and left out the status the question named).
    dates = {id(ref.source) for ref, f in zip(refs, filters) if f and ref.kind == "time" and ref.grain is None}
    filters = [None if ref.grain in ("year", "month") and id(ref.source) in dates else f for ref, f in zip(refs, filters)]
    if terms.negates:  # "still unpaid", "without a parent": a column left empty, or filled
        filters += [_object({"field": {"const": ref.name}, "op": {"enum": ["is null", "is not null"]}},
                            ["field", "op"]) for ref in catalog.of_kind("dimension", "time", "fact")
                    if len(ref.exprs) == 1 and ref.grain is None]
    if terms.counted and not rows:
        # The count comes first: a filter its rows cannot be joined to would not compile (on
        # a warehouse, "closed" is a status of every area's orders, and a small model took the
        # sales status for work orders).
        rows = [catalog.fields[name].table for name in terms.counted]
    if rows:
        filters = _joinable(catalog, rows, filters)
    select: dict[str, Any] = {"type": "array", "items": {"enum": selectable}, "minItems": 1, "maxItems": MAX_FIELDS}
    # "How many companies ... in each year": the count comes first, then what groups it.
    prefix = [{"enum": list(names)} for names in (terms.counted, terms.grouped) if names]
    if prefix:
        select.update(prefixItems=prefix, minItems=len(prefix))
    properties: dict[str, Any] = {
        "select": select,
        "where": {"type": "array", "items": {"anyOf": [f for f in filters if f]}, "maxItems": MAX_FILTERS},
    }
    currencies = sorted(catalog.currency_keys) if terms.currencies is None else list(terms.currencies)
    if catalog.model.currency is not None and currencies:
        properties["currency"] = {"enum": currencies}
        if len(currencies) >= 2 and terms.currencies is not None:  # the question names both
            properties["currency"] = {"anyOf": [properties["currency"], {
                "type": "array", "items": {"enum": currencies}, "minItems": 2, "maxItems": 2}]}
    scales = list(SCALES) if terms.scales is None else list(terms.scales)
    if scales and any(f.kind in ("measure", "derived") and f.source.amount for f in catalog.fields.values()):  # type: ignore[union-attr]
        properties["scale"] = {"enum": scales}
    if terms.ranks:
        # A question that ranks only by "lowest" (or only by "highest") says the direction.
        desc = {"type": "boolean"} if terms.direction is None else {"const": terms.direction == "desc"}
        properties["order_by"] = {"type": "array", "maxItems": 2, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["field"] if terms.direction is None else ["field", "desc"],
            "properties": {"field": {"enum": selectable}, "desc": desc}}}
        properties["limit"] = {"type": "integer", "minimum": 1, "maximum": 1000} if terms.top is None \
            else {"const": terms.top}
    change = _change_schema(catalog, terms)
    if change is not None:
        properties["change"] = change
    per = [name for name in terms.per if name in catalog.fields] if terms.per is not None else \
        [f.name for f in catalog.of_kind("dimension", "time")]
    if per:
        properties["per"] = {"enum": per}
    return {"type": "object", "additionalProperties": False, "required": ["select", "where"],
            "properties": properties}


def unjoined_filters(catalog: Catalog, request: Request) -> tuple[list[str], list[str]]:
    """The tables of the request's measures, and its filters their rows are not joined to (a
    sales order's date asked of purchase orders): a request that cannot compile."""
    from groundsql.semantic.compile import joined_tables, measure_tables

    rows = measure_tables(catalog, request)
    if not rows:  # no measure: nothing the filters must reach
        return rows, []
    refs = [(f.field, catalog.fields[f.field]) for f in request.where if f.field in catalog.fields]
    reached = joined_tables(catalog, rows, [ref.table for _, ref in refs])
    return rows, [name for name, ref in refs if ref.table not in reached]


def _joinable(catalog: Catalog, tables: list[str], filters: list[dict[str, Any] | None]) -> list[dict[str, Any] | None]:
    """The filters (their schemas) on fields the rows of one of `tables` are joined to."""
    from groundsql.semantic.compile import joined_tables  # compile.py builds on this module

    def table_of(schema: dict[str, Any]) -> str:
        return catalog.fields[schema["properties"]["field"]["const"]].table

    reached = joined_tables(catalog, tables, [table_of(f) for f in filters if f])
    return [f for f in filters if f and table_of(f) in reached]


def _change_schema(catalog: Catalog, terms: Terms) -> dict[str, Any] | None:
    """A change between two of the years the question names, of a yearly time dimension;
    None when the question asks for no change or names fewer than two years."""
    years = list(dict.fromkeys(terms.years)) if terms.years is not None else None
    if not terms.changes or (years is not None and len(years) < 2):
        return None
    fields = [f.name for f in catalog.of_kind("time") if f.source.type == "year" or f.grain == "year"]  # type: ignore[union-attr]
    if not fields:
        return None
    year: dict[str, Any] = {"type": "integer", "minimum": 1000, "maximum": 9999} if years is None else {"enum": years}
    percent = {"type": "boolean"} if terms.percent is None else {"const": terms.percent}
    return _object({"field": {"enum": fields}, "from": year, "to": year, "percent": percent},
                   ["field", "from", "to"])


def _filter_schema(catalog: Catalog, ref: FieldRef, terms: Terms) -> dict[str, Any] | None:
    """What a filter on `ref` may say; None when the question names nothing it could compare."""
    head = {"field": {"const": ref.name}}
    if ref.kind == "filter":
        return _object(head, ["field"]) if terms.filters is None or ref.name in terms.filters else None
    if ref.kind in ("measure", "derived", "aggregate", "fact"):
        number: dict[str, Any] = {"type": "number"}
        if terms.numbers is not None:
            if not terms.numbers:
                return None
            number = {"enum": [int(n) if float(n).is_integer() else n for n in terms.numbers]}
        ops = ["=", "!=", "<", "<=", ">", ">="] if terms.compares else ["=", "!="] if terms.negates else ["="]
        return _object({**head, "op": {"enum": ops}, "value": number}, ["field", "op", "value"])
    if ref.kind == "time":
        year = ref.source.type == "year" or ref.grain == "year"  # type: ignore[union-attr]
        if ref.grain == "quarter":
            one: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 4}
        elif year:
            if terms.years is not None and not terms.years:
                return None
            one = {"type": "integer", "minimum": 1000, "maximum": 9999} if terms.years is None \
                else {"enum": list(dict.fromkeys(terms.years))}
        elif terms.years is not None and not terms.years:
            return None  # every date the question could mean names its year
        elif ref.grain in ("month", "day") and terms.years is not None and not terms.dated & {"month", "day"}:
            # "in 2023" names no month: a month's field could only be filled by a guess (or by
            # each of the twelve, until the tokens run out).
            return None
        else:
            one = {"type": "string", "pattern": _date_pattern(ref.grain, terms)}
        ops = ["=", "<", "<=", ">", ">=", "between"] if terms.compares or terms.year_ranges else ["="]
        return _object({**head, "op": {"enum": ops},
                        "value": {"anyOf": [one, {"type": "array", "items": one, "minItems": 2, "maxItems": 2}]}},
                       ["field", "value"])
    # A dimension: the values the question names (all, without a question; free text for one
    # that is neither small nor an entity's); one of several columns is shown only.
    if len(ref.exprs) != 1:
        return None
    listed = catalog.values.get(ref.name)
    entity = ref.source.entity  # type: ignore[union-attr]
    if listed is not None or entity or terms.select is not None:
        values = terms.values.get(ref.name, ()) if (terms.select is not None or entity) else listed
        if not values:
            return None
        one = {"enum": list(values)}
    else:
        one = {"type": "string", "maxLength": 80}
    return _object({**head, "op": {"enum": ["=", "!=", "in", "not in"] if terms.negates else ["=", "in"]},
                    "value": {"anyOf": [one, {"type": "array", "items": one, "minItems": 1, "maxItems": MAX_VALUES}]}},
                   ["field", "value"])


def _date_pattern(grain: str | None, terms: Terms) -> str:
    """A date a filter may name: in one of the question's years, to no finer a part than the
    question names ("booked in 2023" is 2023, not 2023-01-01)."""
    year = r"\d{4}" if terms.years is None else "(" + "|".join(str(y) for y in dict.fromkeys(terms.years)) + ")"
    if grain == "month":
        return rf"^{year}-\d{{2}}$"
    parts = [part for part, kind in ((r"-Q[1-4]", "quarter"), (r"-\d{2}", "month"), (r"-\d{2}-\d{2}", "day"))
             if terms.years is None or kind in terms.dated]
    return rf"^{year}" + (f"({'|'.join(parts)})?" if parts else "") + "$"


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": required, "properties": properties}
