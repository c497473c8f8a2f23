"""Schema compression (IESR): only the tables and columns a question is likely to need.

A large schema drowns a small model in columns it does not need, so IESR compresses the schema
before its search. Every column is scored against the question by three kinds of evidence:
- its name (split on _ and camelCase), its table's name and its description, word by word
  against the question's words;
- the distinct text values it holds, against the question's word spans: a value the question
  names (cars.Model = 'Tesla Model S') is the strongest evidence there is;
- the cosine of the question's embedding to "table.column: description", when an embedder is
  given (it finds "driving mileage in urban conditions" -> Fuel_Consumption_City, which shares
  no word with the question).
Words and values are found by their character 3-grams (grounding/trigrams.py) and confirmed by
rapidfuzz, as entity linking does (grounding/entities.py): a plural or a misspelling still
matches, in milliseconds however many values a database holds.

A table is kept when its name or one of its columns is salient; the bridge tables that join the
kept ones are added over the foreign-key graph (schema/linking.py), and every kept table keeps
its primary key and the foreign-key columns between kept tables, so the result still joins. A
small schema is returned whole: cutting it saves few tokens and risks the one column needed.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import networkx as nx
from rapidfuzz import fuzz

from groundsql.config import CompressionConfig
from groundsql.db import Database
from groundsql.errors import GroundsqlError
from groundsql.grounding.entities import normalize_name
from groundsql.grounding.trigrams import TrigramIndex
from groundsql.retrieval.embeddings import Embedder, cosine
from groundsql.schema.linking import connect, join_graph
from groundsql.schema.model import Column, Schema, Table
from groundsql.schema.render import render_schema

__all__ = ["ColumnScore", "CompressedSchema", "CompressionConfig", "SchemaIndex", "ValueMatch",
           "compress", "name_words"]


# -- words -----------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPAN_TOKEN = re.compile(r"[\w&.'/-]+")  # keeps "R-22", "Prof.", "O'Brien" whole for values
# Function words only: "name", "count", "number", "total", "year" are column words and stay.
_STOP = frozenset("""
a an the of in on at to for from by with without and or not no nor is are was were be been being
do does did has have had what which who whom whose when where why how there that this these those
it its their them they his her he she we our you your i me my all any each every as than then
into onto per show list give find tell please many much more most less least some same also
other others only just both either neither if but so such can could would should will shall may
""".split())
# Names abbreviate what questions spell out ("FlightNo" is asked as "flight number").
# British spellings are read as American ones ("rotor disc area" is Total_Disk_Area).
_ABBREVIATIONS = {"no": "number", "num": "number", "nbr": "number", "qty": "quantity",
                  "amt": "amount", "dept": "department", "addr": "address", "desc": "description",
                  "max": "maximum", "min": "minimum", "avg": "average", "disc": "disk",
                  "metre": "meter", "litre": "liter", "colour": "color", "tyre": "tire",
                  "centre": "center"}
_EXACT_ONLY = 4  # strings this short (codes, "M", "USA") match exactly or not at all


def _singular(word: str) -> str:
    # Crude on purpose, applied alike to names and questions: "singers" ~ "singer".
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def name_words(name: str) -> tuple[str, ...]:
    """Content words of a name or text: 'Song_release_year' -> (song, release, year),
    'FlightNo' -> (flight, number), lower case, singular, function words left out."""
    words = (_singular(w.lower()) for w in _WORD.findall(_CAMEL.sub(" ", name)))
    return tuple(_ABBREVIATIONS.get(w, w) for w in words if w in _ABBREVIATIONS or w not in _STOP)


def _question_words(question: str) -> set[str]:
    words = [_singular(w.lower()) for w in _WORD.findall(question)]
    content = {w for w in words if w not in _STOP}
    # "home town" is the column Hometown: adjacent words are tried joined as well.
    content |= {a + b for a, b in zip(words, words[1:]) if a not in _STOP and b not in _STOP}
    return content


def _spans(question: str, longest: int) -> list[str]:
    """Normalized word spans of the question that could name a value (no function word at
    either end, no bare short number: "3" is a count, not a value)."""
    tokens = [t.strip(".'") for t in _SPAN_TOKEN.findall(question)]
    tokens = [t for t in tokens if t]
    spans = set()
    for start in range(len(tokens)):
        for end in range(start + 1, min(len(tokens), start + longest) + 1):
            words = tokens[start:end]
            if words[0].lower() in _STOP or words[-1].lower() in _STOP:
                continue
            span = re.sub(r"'s$", "", " ".join(words))
            plain = normalize_name(span)
            if plain and not (plain.replace(".", "").isdigit() and len(plain) < 4):
                spans.add(plain)
    return sorted(spans)


# -- the index -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Posting:
    kind: str  # "name", "description" or "value"
    table: str
    column: str
    text: str  # as the schema or the data spells it


class _Fuzzy:
    """Strings matched approximately: shared 3-grams propose candidates, rapidfuzz's ratio
    confirms them."""

    def __init__(self, plains: Iterable[str], threshold: float) -> None:
        self.plains = sorted(set(plains))
        self._exact = set(self.plains)
        self._threshold = threshold
        self._long = [p for p in self.plains if len(p) > _EXACT_ONLY]
        self._index = TrigramIndex(self._long)

    def match(self, plain: str, min_score: float) -> list[tuple[str, float]]:
        if plain in self._exact:
            return [(plain, 1.0)]
        if len(plain) <= _EXACT_ONLY or not self._long:
            return []
        found = (self._long[i] for i, _ in self._index.similar(plain, self._threshold, _CANDIDATES))
        scored = ((c, fuzz.ratio(plain, c) / 100) for c in found)
        return [(c, s) for c, s in scored if s >= min_score]


_CANDIDATES = 64  # most similar strings by 3-grams that rapidfuzz confirms


def _distinct_values(db: Database, table: Table, column: Column, limit: int) -> list[str]:
    if limit <= 0:
        return []
    sql = (f"SELECT DISTINCT {db.quote(column.name)} FROM {db.quote(table.name)} "
           f"WHERE {db.quote(column.name)} IS NOT NULL LIMIT {limit}")
    try:
        rows = db.execute(sql, max_rows=limit).rows
    except GroundsqlError:  # an unreadable column costs its value evidence, not the index
        return []
    # Long texts are prose (notes, addresses), not something a question names whole.
    return [v for (v,) in rows if isinstance(v, str) and 1 < len(v.strip()) <= 80]


def _column_text(table: Table, column: Column) -> str:
    text = f"{' '.join(name_words(table.name))}.{' '.join(name_words(column.name))}"
    return f"{text}: {column.description}" if column.description else text


@dataclass(frozen=True, eq=False)  # eq=False: holds indexes and a graph, compared by identity
class SchemaIndex:
    """What compression matches a question against; built once per database."""

    schema: Schema
    words: _Fuzzy  # name and description words of every table and column
    values: _Fuzzy  # distinct text values
    postings: Mapping[str, tuple[_Posting, ...]]  # word or value -> where it occurs
    idf: Mapping[str, float]  # over columns: "id" in every table weighs little in a name
    spread: Mapping[str, float]  # 0..1, 1 for a word of one table only (it points at a table)
    name_spread: Mapping[str, float]  # the same over table names alone
    vectors: Mapping[tuple[str, str], Sequence[float]]  # (table, column) -> unit vector
    embedder: Embedder | None
    graph: nx.Graph  # the foreign-key graph (linking.join_graph)

    @classmethod
    def build(cls, db: Database, schema: Schema, embedder: Embedder | None = None, *,
              config: CompressionConfig | None = None,
              values_per_column: int | None = None) -> "SchemaIndex":
        """Read the schema's words and its text columns' distinct values (plain SELECTs), and
        embed every column when an embedder is given. `config` gives the 3-gram threshold."""
        config = config or CompressionConfig()
        limit = config.values_per_column if values_per_column is None else values_per_column
        postings: dict[str, list[_Posting]] = defaultdict(list)
        column_df: dict[str, int] = defaultdict(int)  # columns whose name has the word
        tables_of: dict[str, set[str]] = defaultdict(set)  # tables with the word anywhere
        named: dict[str, set[str]] = defaultdict(set)  # tables with the word in their name
        values: set[str] = set()
        for table in schema.tables:
            for word in name_words(table.name):
                named[word].add(table.name)
                tables_of[word].add(table.name)
            for column in table.columns:
                for kind, text in (("name", column.name), ("description", column.description)):
                    for word in dict.fromkeys(name_words(text)):
                        postings[word].append(_Posting(kind, table.name, column.name, text))
                        column_df[word] += kind == "name"
                        tables_of[word].add(table.name)
                for value in _distinct_values(db, table, column, limit) if column.is_text else ():
                    plain = normalize_name(value)
                    if plain and plain not in _STOP:
                        postings[plain].append(_Posting("value", table.name, column.name, value))
                        values.add(plain)
        n_columns = sum(len(t.columns) for t in schema.tables) or 1
        return cls(
            schema=schema,
            words=_Fuzzy(tables_of, config.trigram_threshold),
            values=_Fuzzy(values, config.trigram_threshold),
            postings={k: tuple(v) for k, v in postings.items()},
            idf={w: math.log(1 + n_columns / max(column_df.get(w, 0), 1)) for w in tables_of},
            spread=_spread(tables_of, len(schema.tables)),
            # "car" of table cars names that table though every Car_ID column shares the word.
            name_spread=_spread(named, len(schema.tables)),
            vectors=_embed_columns(schema, embedder),
            embedder=embedder,
            graph=join_graph(schema),
        )


def _spread(tables_of: Mapping[str, set[str]], n_tables: int) -> dict[str, float]:
    if n_tables < 2:
        return {w: 1.0 for w in tables_of}
    return {w: math.log(1 + n_tables / len(ts)) / math.log(1 + n_tables) for w, ts in tables_of.items()}


def _embed_columns(schema: Schema, embedder: Embedder | None) -> dict[tuple[str, str], Sequence[float]]:
    if embedder is None:
        return {}
    keys = [(t, c) for t in schema.tables for c in t.columns]
    vectors = embedder.embed([_column_text(t, c) for t, c in keys])
    return {(t.name, c.name): v for (t, c), v in zip(keys, vectors)}


# -- the result ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ValueMatch:
    table: str
    column: str
    value: str  # as the database spells it
    mention: str  # the question's words (normalized)
    score: float

    def __str__(self) -> str:
        quoted = self.value.replace("'", "''")
        return f"{self.table}.{self.column} = '{quoted}'"


@dataclass(frozen=True)
class ColumnScore:
    table: str
    column: str
    score: float  # relevance, ranks the columns of a kept table
    salience: float  # relevance discounted for words many tables share: keeps a table
    reasons: tuple[str, ...]  # the evidence, readable


@dataclass(frozen=True)
class CompressedSchema:
    schema: Schema  # the kept tables and columns, matched values first among the examples
    scores: tuple[ColumnScore, ...]  # every column of the full schema, best first
    values: tuple[ValueMatch, ...]  # best first
    tables: tuple[str, ...]  # kept because salient
    bridges: tuple[str, ...]  # kept only to join them
    total_columns: int  # of the full schema
    whole: bool  # the schema was kept whole (small, or nothing pointed anywhere)

    @property
    def kept_columns(self) -> int:
        return sum(len(t.columns) for t in self.schema.tables)

    @property
    def ratio(self) -> float:
        """Kept columns over all columns: 1.0 kept everything."""
        return self.kept_columns / self.total_columns if self.total_columns else 1.0

    def render(self, fmt: str = "m-schema", *, with_examples: bool = True) -> str:
        return render_schema(self.schema, fmt, with_examples=with_examples)


# -- scoring ---------------------------------------------------------------------------------


def _coverage(words: Sequence[str], found: Mapping[str, float], index: SchemaIndex,
              spread: Mapping[str, float] | None = None) -> float:
    """The idf-weighted share of the words the question names (discounted, for salience, by
    how many tables share each word)."""
    if not words:
        return 0.0
    weights = [index.idf.get(w, 1.0) for w in words]
    hit = sum(found.get(w, 0.0) * wt * (spread.get(w, 1.0) if spread else 1.0)
              for w, wt in zip(words, weights))
    return hit / sum(weights)


def _found_words(question: str, index: SchemaIndex, threshold: float) -> dict[str, float]:
    found: dict[str, float] = {}
    for word in _question_words(question):
        for match, score in index.words.match(word, threshold):
            found[match] = max(found.get(match, 0.0), score)
    return found


def _found_values(question: str, index: SchemaIndex, config: CompressionConfig) -> list[ValueMatch]:
    best: dict[tuple[str, str, str], ValueMatch] = {}
    for span in _spans(question, config.max_span_words):
        for plain, score in index.values.match(span, config.match_threshold):
            for post in index.postings.get(plain, ()):
                if post.kind != "value":
                    continue
                key = (post.table, post.column, post.text)
                if key not in best or score > best[key].score:
                    best[key] = ValueMatch(post.table, post.column, post.text, span, round(score, 3))
    ranked = sorted(best.values(), key=lambda m: (-m.score, -len(m.mention), str(m)))
    # A span that matches a value exactly explains its words: a looser match of a shorter
    # span inside it ("model s" in "tesla model s") is noise.
    exact = [m.mention for m in ranked if m.score == 1.0]
    return [m for m in ranked if m.score == 1.0
            or not any(m.mention != e and m.mention in e for e in exact)]


def _score_columns(question: str, found: Mapping[str, float], index: SchemaIndex,
                   config: CompressionConfig, values: Sequence[ValueMatch]) -> list[ColumnScore]:
    by_column: dict[tuple[str, str], list[ValueMatch]] = defaultdict(list)
    for match in values:
        by_column[(match.table, match.column)].append(match)
    question_vector = index.embedder.embed([question])[0] if index.embedder and index.vectors else None
    scores = []
    for table in index.schema.tables:
        table_words = name_words(table.name)
        for column in table.columns:
            own, desc = name_words(column.name), name_words(column.description)
            parts = [(_coverage(own, found, index), _coverage(own, found, index, index.spread),
                      f"name {column.name}")]
            if desc:  # a description is long: naming part of it is evidence, less than a name
                parts.append((0.8 * _coverage(desc, found, index),
                              0.8 * _coverage(desc, found, index, index.spread), "description"))
            parts += [(m.score, m.score, f"value {m}") for m in by_column.get((table.name, column.name), ())]
            # The table's name counts for its columns at half weight: "singers" points at
            # every column of singer a little, at none of them in particular.
            table_cov = _coverage(table_words, found, index)
            lexical = max(p[0] for p in parts) + 0.5 * table_cov
            salience = max(p[1] for p in parts)
            reasons = [f"{why} ({p:.2f})" for p, _, why in parts if p > 0]
            if table_cov:
                reasons.append(f"table {table.name} ({table_cov:.2f})")
            if question_vector is not None:
                similarity = cosine(question_vector, index.vectors[(table.name, column.name)])
                lexical += config.embedding_weight * similarity
                salience += config.embedding_weight * similarity
                reasons.append(f"embedding ({similarity:.2f})")
            scores.append(ColumnScore(table.name, column.name, round(lexical, 4),
                                      round(salience, 4), tuple(reasons)))
    return sorted(scores, key=lambda s: (-s.score, s.table, s.column))


# -- compression -----------------------------------------------------------------------------


def compress(question: str, index: SchemaIndex, config: CompressionConfig | None = None) -> CompressedSchema:
    """The tables and columns of the index's schema this question is likely to need."""
    config = config or CompressionConfig()
    schema = index.schema
    found = _found_words(question, index, config.match_threshold)
    values = _found_values(question, index, config)
    scores = _score_columns(question, found, index, config, values)
    total = sum(len(t.columns) for t in schema.tables)

    salience = {t.name: _coverage(name_words(t.name), found, index, index.name_spread)
                for t in schema.tables}
    for s in scores:
        salience[s.table] = max(salience[s.table], s.salience)
    named = {m.table for m in values}  # a value the question names keeps its table regardless
    chosen = sorted((t.name for t in schema.tables
                     if salience[t.name] >= config.table_threshold or t.name in named),
                    key=lambda name: (name not in named, -salience[name]))
    if total <= config.whole_below_columns or not chosen:
        return CompressedSchema(_with_values(schema, values), tuple(scores), tuple(values),
                                tuple(chosen), (), total, whole=True)

    kept_tables, bridges = _link(index, chosen)
    columns = _pick_columns(schema, kept_tables, scores, config)
    restricted = schema.restrict_columns(columns)
    return CompressedSchema(_with_values(restricted, values), tuple(scores), tuple(values),
                            tuple(chosen), bridges, total, whole=False)


def _link(index: SchemaIndex, chosen: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """The chosen tables and the bridges that join them, one connected part of the schema at
    a time: a question may span two parts no key joins, and each part keeps its own bridges."""
    component = {n: i for i, part in enumerate(nx.connected_components(index.graph)) for n in part}
    groups: dict[int, list[str]] = defaultdict(list)
    for name in chosen:
        groups[component[name.lower()]].append(name)
    tables: list[str] = []
    bridges: list[str] = []
    for members in groups.values():
        linked = connect(index.schema, members, index.graph)
        tables += [*linked.tables, *linked.unconnected]
        bridges += linked.bridges
    return tables, tuple(bridges)


def _pick_columns(schema: Schema, tables: Sequence[str], scores: Sequence[ColumnScore],
                  config: CompressionConfig) -> dict[str, set[str]]:
    """Per kept table, its best columns: at least the minimum, then every relevant one while
    the overall budget lasts (keys are added by Schema.restrict_columns on top)."""
    kept = {t.lower() for t in tables}
    picked = {t.name: _label(t) for t in schema.tables if t.name.lower() in kept}
    ranked = [s for s in scores if s.table.lower() in kept]  # best first
    for s in ranked:
        if len(picked[s.table]) < config.min_columns_per_table:
            picked[s.table].add(s.column)
    budget = config.max_columns - sum(len(c) for c in picked.values())
    for s in ranked:
        if budget <= 0 or s.score < config.column_threshold:
            break
        if s.column not in picked[s.table]:
            picked[s.table].add(s.column)
            budget -= 1
    return picked


def _label(table: Table) -> set[str]:
    """The column that names a row (a Name or Title column, else the first text column that
    is no key): a question names rows by it ("the Golden Gate Bridge") even when the data
    holds no matching value."""
    keys = set(table.primary_key) | {c for fk in table.foreign_keys for c in fk.columns}
    texts = [c for c in table.columns if c.name not in keys and c.is_text]
    named = [c for c in texts if {"name", "title"} & set(name_words(c.name))]
    return {(named or texts)[0].name} if texts else set()


def _with_values(schema: Schema, values: Sequence[ValueMatch]) -> Schema:
    """The matched values lead each column's examples, so the prompt shows the spelling the
    data uses ('Tesla Model S', not 'Model S')."""
    if not values:
        return schema
    by_column: dict[tuple[str, str], list[str]] = defaultdict(list)
    for match in values:
        by_column[(match.table.lower(), match.column.lower())].append(match.value)
    tables = []
    for table in schema.tables:
        columns = []
        for column in table.columns:
            matched = by_column.get((table.name.lower(), column.name.lower()))
            if matched:
                shown = list(dict.fromkeys([*matched, *column.examples]))
                column = replace(column, examples=tuple(shown[:max(len(column.examples), len(matched))]))
            columns.append(column)
        tables.append(replace(table, columns=tuple(columns)))
    return Schema(schema.dialect, tuple(tables), schema.name)
