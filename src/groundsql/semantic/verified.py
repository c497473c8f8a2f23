"""Verified queries: solved questions a person checked, reused with other values.

A bank example names its parameters, the values of its question that its SQL depends on:

    {"question": "What was the annual net income of Northwind Logistics Inc. in fiscal year
                  2022, in millions of US dollars?",
     "sql": "SELECT ... WHERE c.company_name = 'Northwind Logistics Inc.' AND fp.fiscal_year = 2022 ...",
     "params": [{"name": "company", "kind": "entity", "value": "Northwind Logistics Inc."},
                {"name": "year", "kind": "year", "value": 2022}],
     "verified_by": "...", "verified_at": "2026-12-04"}

Each parameter's value is a literal of the SQL (checked when the pack loads). A question fits
a verified query when, with the values of both replaced by their kinds, the two read the same
(`"what was the annual net income of <entity> in fiscal year <year> ..."`) and the question
names exactly as many values of each kind as the query has parameters. Then the SQL is run
with the question's values in place of the example's: no SQL written by a model, and the
answer says which verified query, with which values ("trusted"). A false match is worse than
none, so the threshold is high and measured (BENCHMARKS.md).

Kinds: `entity` (a name entity linking resolves), `label` (a value of a reference table, by
its label), `year`, `date` (ISO, or "30 June 2023"), `number`, `limit` (a top-N).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlglot
from rapidfuzz import fuzz
from sqlglot import exp
from sqlglot.errors import SqlglotError

__all__ = ["Mention", "Param", "TemplateMatch", "fill", "find_mentions", "infer_params", "match_template",
           "params_problem"]

Kind = Literal["entity", "label", "year", "date", "number", "limit"]
KINDS = ("entity", "label", "year", "date", "number", "limit")
THRESHOLD = 0.9  # masked-question similarity a match needs (BENCHMARKS.md, verified queries)


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    value: Any


@dataclass(frozen=True)
class Mention:
    """A value the question names, and where."""

    kind: Kind
    value: Any  # as the SQL holds it: the entity's name, the label, the year, the ISO date
    start: int
    end: int
    table: str = ""  # an entity's or a label's table

    def text(self, question: str) -> str:
        return question[self.start:self.end]


@dataclass(frozen=True)
class TemplateMatch:
    example: Any  # the bank Example
    score: float
    values: dict[str, Any]  # parameter -> the question's value
    sql: str


_YEAR = re.compile(r"\b(1[89]\d{2}|20\d{2})\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTHS = {m.lower(): i for i, m in enumerate(
    "January February March April May June July August September October November December".split(), 1)}
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})\s+(" + "|".join(_MONTHS) + r")\s+(\d{4})\b", re.I)
_MONTH_DAY_YEAR = re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2}),?\s+(\d{4})\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")
_COUNT_WORDS = {w: n for n, w in enumerate("one two three four five six seven eight nine ten".split(), 1)}
_TOP = re.compile(r"\b(top|first|largest|biggest|highest|lowest|smallest|best|worst)\s+(\d+|" +
                  "|".join(_COUNT_WORDS) + r")\b|\b(\d+|" + "|".join(_COUNT_WORDS) +
                  r")\s+(?:\w+\s+){0,2}?(?:companies|deals|firms|banks|tickers|countries|people|sectors)\b", re.I)


def find_mentions(question: str, entities: Sequence[Any] = (), labels: Sequence[tuple[str, str]] = ()) -> list[Mention]:
    """The values a question names: linked entities (grounding's EntityMatch), reference
    labels (`labels`: (table, label) pairs, found as whole words), dates, years, a top-N and
    other numbers; none overlapping, in the order of the question."""
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []

    def add(mention: Mention) -> None:
        if any(mention.start < e and s < mention.end for s, e in taken):
            return
        taken.append((mention.start, mention.end))
        found.append(mention)

    for match in entities:
        at = question.find(match.mention)
        if at >= 0:
            add(Mention("entity", match.name, at, at + len(match.mention), match.table))
    lowered = question.lower()
    for table, label in sorted(labels, key=lambda tl: -len(tl[1])):
        for hit in re.finditer(rf"(?<!\w){re.escape(label.lower())}(?!\w)", lowered):
            add(Mention("label", label, hit.start(), hit.end(), table))
    for pattern, order in ((_ISO, "ymd"), (_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        for hit in pattern.finditer(question):
            iso = _iso_date(hit.groups(), order)
            if iso is not None:
                add(Mention("date", iso, hit.start(), hit.end()))
    for hit in _YEAR.finditer(question):
        add(Mention("year", int(hit.group(1)), hit.start(), hit.end()))
    for hit in _TOP.finditer(question):
        word = hit.group(2) or hit.group(3)
        group = 2 if hit.group(2) else 3
        n = int(word) if word.isdigit() else _COUNT_WORDS[word.lower()]
        add(Mention("limit", n, hit.start(group), hit.end(group)))
    for hit in _NUMBER.finditer(question):
        text = hit.group(1)
        add(Mention("number", float(text) if "." in text else int(text), hit.start(), hit.end()))
    return sorted(found, key=lambda m: m.start)


def _iso_date(groups: tuple[str, ...], order: str) -> str | None:
    try:
        if order == "ymd":
            year, month, day = int(groups[0]), int(groups[1]), int(groups[2])
        elif order == "dmy":
            day, month, year = int(groups[0]), _MONTHS[groups[1].lower()], int(groups[2])
        else:
            month, day, year = _MONTHS[groups[0].lower()], int(groups[1]), int(groups[2])
        return dt.date(year, month, day).isoformat()
    except (ValueError, KeyError):
        return None


def masked(question: str, mentions: Sequence[Mention]) -> str:
    """The question with each mention replaced by its kind, lower case, punctuation dropped."""
    parts, at = [], 0
    for mention in sorted(mentions, key=lambda m: m.start):
        parts += [question[at:mention.start], f" <{mention.kind}> "]
        at = mention.end
    parts.append(question[at:])
    text = "".join(parts).lower().replace("'s ", " ")
    return " ".join(re.sub(r"[^\w<> ]+", " ", text).split())


# Words that carry no meaning a query depends on; every other word of the two questions must
# be the same (in any order), so that a paraphrase matches only in its function words.
_FUNCTION_WORDS = frozenset("""
a an the of in on at to for from by with and or as is are was were be been being do does did done
what which who whom whose when where how much many that this these those it its their there than
s please show give list tell me find name get what's whats
""".split())


def _content(text: str) -> Counter:
    return Counter(w for w in text.split() if w not in _FUNCTION_WORDS)


def _key(mention: Mention | Param, table: str = "") -> tuple[str, str]:
    return (mention.kind, table if mention.kind in ("entity", "label") else "")


def match_template(question: str, mentions: Sequence[Mention], examples: Sequence[Any],
                   template_mentions: dict[int, list[Mention]], dialect: str,
                   threshold: float = THRESHOLD) -> TemplateMatch | None:
    """The verified query the question fits best, filled with the question's values; None
    when none fits. `template_mentions[i]`: the values example i's own question names (found
    once, when the bank loads): its parameters', and the others, fixed text of the query."""
    best: TemplateMatch | None = None
    for index, example in enumerate(examples):
        params: tuple[Param, ...] = example.params
        named = template_mentions.get(index)
        if not params or named is None:
            continue
        own = parameter_mentions(params, named)
        if own is None:
            continue
        fixed = {(m.kind, m.value) for m in named if m not in own}
        wanted = Counter(_key(m, m.table) for m in own)
        # Every other value the question names is one the query holds as it is ("annual",
        # "net income"); a number may be plain text of it.
        used = [m for m in mentions if (m.kind, m.value) not in fixed and (m.kind != "number" or _key(m) in wanted)]
        if Counter(_key(m, m.table) for m in used) != wanted:
            continue  # a value more or less than the query has parameters for
        theirs, ours = masked(example.question, own), masked(question, used)
        if _content(theirs) != _content(ours):
            continue  # another word that matters: "Japanese" for "German", "billions" for "millions"
        score = fuzz.ratio(theirs, ours) / 100
        if score < threshold or (best is not None and score <= best.score):
            continue
        values = _assign(params, own, used)
        if values is None:
            continue
        try:
            sql = fill(example.sql, params, values, dialect)
        except ValueError:
            continue
        best = TemplateMatch(example, round(score, 3), values, sql)
    return best


def parameter_mentions(params: Sequence[Param], named: Sequence[Mention]) -> list[Mention] | None:
    """Where each parameter's value is named in its query's own question; None when one is
    not (the query cannot be matched by its question)."""
    chosen: list[Mention] = []
    for param in params:
        hit = next((m for m in named if m.kind == param.kind and m.value == param.value and m not in chosen), None)
        if hit is None:
            return None
        chosen.append(hit)
    return chosen


def _assign(params: Sequence[Param], own: Sequence[Mention], used: Sequence[Mention]) -> dict[str, Any] | None:
    """Each parameter takes the question's value of its kind in the same order of appearance."""
    by_key: dict[tuple[str, str], list[Mention]] = {}
    for mention in used:
        by_key.setdefault(_key(mention, mention.table), []).append(mention)
    values: dict[str, Any] = {}
    ordered = sorted(zip(params, own), key=lambda pm: pm[1].start)
    for param, mention in ordered:
        queue = by_key.get(_key(mention, mention.table))
        if not queue:
            return None
        values[param.name] = queue.pop(0).value
    return values


def fill(sql: str, params: Sequence[Param], values: dict[str, Any], dialect: str) -> str:
    """`sql` with every literal that is a parameter's value replaced by its new value."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError as err:
        raise ValueError(f"the verified query does not parse: {err}") from None
    replaced = set()
    for literal in list(tree.find_all(exp.Literal)):
        for param in params:
            if param.name in values and _is(literal, param.value):
                literal.replace(_literal_like(literal, values[param.name]))
                replaced.add(param.name)
                break
    limit = tree.args.get("limit")
    for param in params:
        if param.kind == "limit" and param.name not in replaced and limit is not None:
            limit.set("expression", exp.Literal.number(int(values[param.name])))
            replaced.add(param.name)
    missing = [p.name for p in params if p.name not in replaced]
    if missing:
        raise ValueError(f"parameters not in the SQL: {', '.join(missing)}")
    return tree.sql(dialect=dialect)


def infer_params(question: str, sql: str, dialect: str | None, label_columns: frozenset[str] = frozenset()) -> tuple[Param, ...]:
    """The parameters of a solved question whose values its SQL holds as literals: a text the
    question names word for word (a label when the SQL compares it with a reference label
    column, else a name), a year, a top-N. What `groundsql init` marks in a drafted bank."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return ()
    labels = {lit.this for eq in tree.find_all(exp.EQ) for col, lit in [(eq.this, eq.expression)]
              if isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and lit.is_string
              and col.name.lower() in label_columns}
    found: list[tuple[int, int, Param]] = []
    for literal in tree.find_all(exp.Literal):
        value = literal.this
        if literal.is_string:
            hits = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", question)] if value.strip() else []
            if len(hits) != 1:
                continue
            kind = "date" if _ISO.fullmatch(value) else "label" if value in labels else "entity"
            found.append((hits[0], hits[0] + len(value), Param(kind, kind, value)))  # type: ignore[arg-type]
        elif re.fullmatch(r"\d+", value) and _YEAR.fullmatch(value):
            hits = [m.start() for m in re.finditer(rf"(?<![\w.]){value}(?![\w.])", question)]
            if len(hits) == 1:
                found.append((hits[0], hits[0] + len(value), Param("year", "year", int(value))))
    limit = tree.args.get("limit")
    if limit is not None and isinstance(limit.expression, exp.Literal):
        n = limit.expression.this
        hit = re.search(rf"(?<![\w.]){n}(?![\w.])", question)
        if hit is not None and not any(p.value == int(n) for _, _, p in found):
            found.append((hit.start(), hit.end(), Param("limit", "limit", int(n))))
    # Two texts side by side ("Birgit Lehmann" as first and last name) are one name: not a
    # value a question's linking would give back whole.
    found.sort(key=lambda f: f[0])
    kept = []
    for i, (start, end, param) in enumerate(found):
        neighbours = [f for f in found if f is not found[i] and isinstance(f[2].value, str) and isinstance(param.value, str)
                      and (question[end:f[0]].strip() == "" and f[0] >= end or question[f[1]:start].strip() == "" and f[1] <= start)]
        if not neighbours:
            kept.append(param)
    values = [p.value for p in kept]
    kept = [p for p in kept if values.count(p.value) == 1]
    named, counts = [], Counter()
    for param in kept:
        counts[param.name] += 1
        named.append(Param(param.name if counts[param.name] == 1 else f"{param.name}_{counts[param.name]}",
                           param.kind, param.value))
    return tuple(named) if params_problem(sql, named, dialect) is None else ()


def params_problem(sql: str, params: Sequence[Param], dialect: str) -> str | None:
    """Why these parameters do not fit this SQL (a value that is not one of its literals, a
    name used twice), or None."""
    names = [p.name for p in params]
    if len(set(names)) != len(names):
        return "two parameters have the same name"
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError as err:
        return f"the sql does not parse ({str(err).splitlines()[0][:120]})"
    literals = list(tree.find_all(exp.Literal))
    for param in params:
        if not any(_is(literal, param.value) for literal in literals):
            return f"{param.name}: {param.value!r} does not occur in the sql"
    values = [p.value for p in params]
    for param in params:
        if sum(_same(param.value, v) for v in values) > 1:
            return f"{param.name}: another parameter has the same value {param.value!r}, so they cannot be told apart"
    return None


def _is(literal: exp.Literal, value: Any) -> bool:
    if literal.is_string:
        return isinstance(value, str) and literal.this == value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return float(literal.this) == float(value)
    except ValueError:
        return False


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _literal_like(literal: exp.Literal, value: Any) -> exp.Literal:
    if literal.is_string:
        return exp.Literal.string(str(value))
    return exp.Literal.number(value)
