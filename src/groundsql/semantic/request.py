"""A semantic request: what a question asks for, in the semantic model's own names.

    {"measures": ["revenue"], "dimensions": ["fiscal_quarter"],
     "filters": [{"field": "company", "value": "Helios Energy AG"},
                 {"field": "period_type", "value": "Quarterly"},
                 {"field": "fiscal_year", "value": 2022}],
     "currency": "EUR", "scale": "millions", "order_by": [{"field": "fiscal_quarter"}]}

The model fills it under a JSON schema built from the catalog (`request_schema`): every
measure, dimension and filter name is an enum of what the model holds, a small dimension's
values are an enum of its values, and an entity's values are the names linking found in the
question, so the model cannot name a field or a value that does not exist. The compiler
(semantic/compile.py) turns it into SQL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from groundsql.semantic.catalog import Catalog
from groundsql.semantic.model import SCALES

Scalar = str | int | float
OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in", "between", "is null", "is not null")
MAX_FIELDS = 4
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
    measures: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    filters: tuple[Filter, ...] = ()
    currency: str | None = None  # convert amounts into this currency (its code)
    scale: Literal["thousands", "millions", "billions", "trillions"] | None = None
    order_by: tuple[Order, ...] = ()
    limit: int | None = Field(None, ge=1, le=10_000)

    def to_json(self) -> dict[str, Any]:
        """The request as the model wrote it, without the parts left empty."""
        return self.model_dump(mode="json", exclude_defaults=True)


# -- the JSON schema a model's answer must satisfy ---------------------------------------------


def named_scales(question: str) -> list[str]:
    """The scales a question names ("in millions", "bn")."""
    text = question.lower()
    words = {"thousands": r"\bthousands?\b", "millions": r"\bmillions?\b|\d\s*mn\b",
             "billions": r"\bbillions?\b|\d\s*bn\b", "trillions": r"\btrillions?\b|\d\s*tn\b"}
    return [scale for scale, pattern in words.items() if re.search(pattern, text)]


def named_currencies(question: str, catalog: Catalog) -> list[str]:
    """The currency codes a question names, by code or by a name the model gives it; the most
    specific name wins ("Canadian dollars" is CAD, not dollars)."""
    conv = catalog.model.currency
    if conv is None:
        return []
    text = question.lower()
    names = [(code, code) for code in catalog.currency_keys]
    names += [(code, name) for code, listed in conv.names.items() for name in listed]
    found: list[str] = []
    taken: list[tuple[int, int]] = []
    for code, name in sorted(names, key=lambda cn: -len(cn[1])):
        pattern = re.escape(name.lower())
        if name[:1].isalnum():
            pattern = rf"(?<![\w$]){pattern}(?:s|es)?(?!\w)"
        for hit in re.finditer(pattern, text):
            if any(hit.start() < end and start < hit.end() for start, end in taken):
                continue
            taken.append((hit.start(), hit.end()))
            if code in catalog.currency_keys and code not in found:
                found.append(code)
    return found


def request_schema(catalog: Catalog, found: Mapping[str, Sequence[str]] | None = None,
                   question: str | None = None) -> dict[str, Any]:
    """The JSON schema of a request over `catalog`. `found`: for a dimension whose values are
    too many to list (an entity's names), the values found in the question; such a dimension
    is filtered only by them, and not at all when none was found. With `question`, the
    currency and the scale are only those it names (none: the request cannot set them)."""
    found = found or {}
    measures = [f.name for f in catalog.of_kind("measure", "derived", "aggregate")]
    dimensions = [f.name for f in catalog.of_kind("dimension", "time", "fact")]
    orderable = measures + dimensions
    filters = [_filter_schema(catalog, ref.name, found) for ref in catalog.fields.values()]
    properties: dict[str, Any] = {
        "measures": _names(measures, MAX_FIELDS),
        "dimensions": _names(dimensions, MAX_FIELDS),
        "filters": {"type": "array", "items": {"anyOf": [f for f in filters if f]}, "maxItems": MAX_FILTERS},
    }
    currencies = sorted(catalog.currency_keys) if question is None else named_currencies(question, catalog)
    if catalog.model.currency is not None and currencies:
        properties["currency"] = {"enum": currencies}
    scales = list(SCALES) if question is None else named_scales(question)
    if scales and any(f.kind in ("measure", "derived") and f.source.amount for f in catalog.fields.values()):  # type: ignore[union-attr]
        properties["scale"] = {"enum": scales}
    properties["order_by"] = {"type": "array", "maxItems": 2, "items": {
        "type": "object", "additionalProperties": False, "required": ["field"],
        "properties": {"field": {"enum": orderable}, "desc": {"type": "boolean"}}}}
    properties["limit"] = {"type": "integer", "minimum": 1, "maximum": 1000}
    return {"type": "object", "additionalProperties": False, "required": ["measures", "dimensions", "filters"],
            "properties": properties}


def _names(names: Sequence[str], most: int) -> dict[str, Any]:
    return {"type": "array", "items": {"enum": list(names)}, "maxItems": most}


def _filter_schema(catalog: Catalog, name: str, found: Mapping[str, Sequence[str]]) -> dict[str, Any] | None:
    ref = catalog.fields[name]
    head = {"field": {"const": name}}
    if ref.kind == "filter":
        return _object(head, ["field"])
    if ref.kind in ("measure", "derived", "aggregate", "fact"):
        number = {"type": "number"}
        return _object({**head, "op": {"enum": ["=", "!=", "<", "<=", ">", ">="]}, "value": number},
                       ["field", "op", "value"])
    if ref.kind == "time":
        year = ref.source.type == "year" or ref.grain == "year"  # type: ignore[union-attr]
        one = {"type": "integer", "minimum": 1000, "maximum": 9999} if year else \
            {"type": "string", "pattern": r"^\d{4}(-Q[1-4]|-\d{2}(-\d{2})?)?$"}
        if ref.grain == "quarter":
            one = {"type": "integer", "minimum": 1, "maximum": 4}
        elif ref.grain == "month" and ref.source.type != "year":  # type: ignore[union-attr]
            one = {"type": "string", "pattern": r"^\d{4}-\d{2}$"}
        return _object({**head, "op": {"enum": ["=", "<", "<=", ">", ">=", "between"]},
                        "value": {"anyOf": [one, {"type": "array", "items": one, "minItems": 2, "maxItems": 2}]}},
                       ["field", "value"])
    # A dimension: its values, when they can be listed or were found in the question.
    values = catalog.values.get(name)
    if values is None and ref.source.entity:  # type: ignore[union-attr]
        values = tuple(found.get(name, ()))
        if not values:
            return None  # nothing in the question names one: it cannot be filtered by
    if values is None:
        values = tuple(found.get(name, ()))
    if values:
        one: dict[str, Any] = {"enum": list(values)}
    else:
        one = {"type": "string", "maxLength": 80}
    return _object({**head, "op": {"enum": ["=", "!=", "in", "not in"]},
                    "value": {"anyOf": [one, {"type": "array", "items": one, "minItems": 1, "maxItems": MAX_VALUES}]}},
                   ["field", "value"])


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": required, "properties": properties}
