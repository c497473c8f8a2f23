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


class Request(_Strict):
    # Measures and dimensions (and stored numbers) to show; next to a measure, the others
    # group it, as in SQL.
    select: tuple[str, ...] = ()
    where: tuple[Filter, ...] = ()
    currency: str | None = None  # convert amounts into this currency (its code)
    scale: Literal["thousands", "millions", "billions", "trillions"] | None = None
    order_by: tuple[Order, ...] = ()
    limit: int | None = Field(None, ge=1, le=10_000)

    def to_json(self) -> dict[str, Any]:
        """The request as the model wrote it, without the parts left empty."""
        return self.model_dump(mode="json", exclude_defaults=True)


# -- the JSON schema a model's answer must satisfy ---------------------------------------------


def request_schema(catalog: Catalog, terms: Terms | None = None) -> dict[str, Any]:
    """The JSON schema of a request over `catalog`; with `terms` (semantic/terms.py), only what
    a question grounds: the fields it speaks of, the values, years and numbers it names, its
    currency and scale, an order and a limit only when it ranks. A dimension whose values are
    too many to list (an entity's names) is filtered only by the names linking found."""
    terms = terms or Terms()
    fields = [f.name for f in catalog.of_kind("dimension", "time", "fact", "measure", "derived", "aggregate")]
    selectable = [name for name in fields if terms.select is None or name in terms.select]
    filters = [_filter_schema(catalog, ref, terms) for ref in catalog.fields.values()]
    properties: dict[str, Any] = {
        "select": {"type": "array", "items": {"enum": selectable}, "minItems": 1, "maxItems": MAX_FIELDS},
        "where": {"type": "array", "items": {"anyOf": [f for f in filters if f]}, "maxItems": MAX_FILTERS},
    }
    currencies = sorted(catalog.currency_keys) if terms.currencies is None else list(terms.currencies)
    if catalog.model.currency is not None and currencies:
        properties["currency"] = {"enum": currencies}
    scales = list(SCALES) if terms.scales is None else list(terms.scales)
    if scales and any(f.kind in ("measure", "derived") and f.source.amount for f in catalog.fields.values()):  # type: ignore[union-attr]
        properties["scale"] = {"enum": scales}
    if terms.ranks:
        properties["order_by"] = {"type": "array", "maxItems": 2, "items": {
            "type": "object", "additionalProperties": False, "required": ["field"],
            "properties": {"field": {"enum": selectable}, "desc": {"type": "boolean"}}}}
        properties["limit"] = {"type": "integer", "minimum": 1, "maximum": 1000}
    return {"type": "object", "additionalProperties": False, "required": ["select", "where"],
            "properties": properties}


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
        return _object({**head, "op": {"enum": ["=", "!=", "<", "<=", ">", ">="]}, "value": number},
                       ["field", "op", "value"])
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
        elif ref.grain == "month":
            one = {"type": "string", "pattern": r"^\d{4}-\d{2}$"}
        else:
            one = {"type": "string", "pattern": r"^\d{4}(-Q[1-4]|-\d{2}(-\d{2})?)?$"}
        return _object({**head, "op": {"enum": ["=", "<", "<=", ">", ">=", "between"]},
                        "value": {"anyOf": [one, {"type": "array", "items": one, "minItems": 2, "maxItems": 2}]}},
                       ["field", "value"])
    # A dimension: the values the question names (all, without a question), or free text for
    # a dimension that is neither small nor an entity's; one of several columns is shown only.
    if len(ref.exprs) != 1:
        return None
    listed = catalog.values.get(ref.name)
    entity = ref.source.entity  # type: ignore[union-attr]
    if listed is not None or entity:
        values = terms.values.get(ref.name, ()) if (terms.select is not None or entity) else listed
        if not values:
            return None
        one = {"enum": list(values)}
    else:
        one = {"type": "string", "maxLength": 80}
    return _object({**head, "op": {"enum": ["=", "!=", "in", "not in"]},
                    "value": {"anyOf": [one, {"type": "array", "items": one, "minItems": 1, "maxItems": MAX_VALUES}]}},
                   ["field", "value"])


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": required, "properties": properties}
