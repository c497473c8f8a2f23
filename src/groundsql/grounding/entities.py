"""Entity linking: names in the question resolved to keys of the pack's entity tables.

FLINT (3.3) resolves "Apple" to a company ID before generation, so the model never guesses a
key or spells a name the data spells otherwise ("Albion Technologies" is stored as "Albion
Technologies Limited"). Every name of every entity table is indexed by its character 3-grams
(grounding/trigrams.py), which finds candidate names for each word span of the question in
milliseconds among a million names; rapidfuzz then scores the candidates, and a span links when
its score passes the threshold. The confidence is that score.

A capitalised span that links to nothing and is no known word of the domain (a reference
label, a table or column name) is reported as unresolved, with the closest name: the grounded
strategy then says the entity is not in the database instead of inventing a key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz
from sqlglot import exp

from groundsql.db import Database
from groundsql.grounding.trigrams import TrigramIndex
from groundsql.packs.model import EntityTable

__all__ = ["EntityIndex", "EntityMatch", "Unresolved", "names_a_value", "normalize_name"]

_TOKEN = re.compile(r"[\w&.'-]+", re.UNICODE)
_WORD = re.compile(r"[\w&]+", re.UNICODE)
_LEGAL_SUFFIXES = re.compile(
    r"\s+(limited|ltd|plc|inc|incorporated|corp|corporation|co|llc|llp|lp|ag|gmbh|sa|sas|s\.a|se|nv|"
    r"n\.v|bv|b\.v|spa|s\.p\.a|ab|\(publ\)|asa|oyj|kk|k\.k|pty|pte|private|"
    # A holding or a group is named without the word as often as with it ("Foxhollow Systems"
    # for "Foxhollow Systems Holdings, Inc.").
    r"holdings?|group)\.?$", re.IGNORECASE)
# Capitalised words that name no entity: calendar words, and the words that start questions.
_CALENDAR = frozenset("""
january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
saturday sunday q1 q2 q3 q4 h1 h2 fy ytd ltm
""".split())
_QUESTION_WORDS = frozenset("""
what which who whom whose when where why how list show give find name count tell is are was were
do does did the a an in on of for by to from with and or per each all any total average between
during since before after than top bottom highest lowest most least please i me my our we
""".split())

# A span's candidate names: those sharing this 3-gram similarity with it, the most similar first
# (rapidfuzz scores them; a match needs the entity threshold, far above this).
_CANDIDATE_SIMILARITY = 0.3
_CANDIDATES = 64

_NATIONALITIES = frozenset("french dutch greek swiss thai welsh danish irish scottish czech".split())
_PUNCTUATION = " '\"`.,;:!?()[]"
# Words before a quoted value that make it a pattern to search for rather than a name.
_SEARCH_WORDS = re.compile(r"\b(contain\w*|substring|includ\w*|word|words|like|start\w*|begin\w*|"
                           r"end\w*|letter\w*|pattern|having)\b[^'\"]*$", re.I)


def _tokens(question: str) -> list[tuple[str, int, int]]:
    """The question's words with their spans, edge dots and quotes stripped."""
    tokens = [(m.group(0).strip(".'"), m.start(), m.end()) for m in _TOKEN.finditer(question)]
    return [t for t in tokens if t[0]]


def _sentence_start(question: str, tokens, i: int) -> bool:
    """The first word of the question or of a sentence in it (capitalised for that reason)."""
    if i == 0:
        return True
    before = question[:tokens[i][1]].rstrip(" \t\n'\"")
    return before.endswith((".", "?", "!", ":"))


def names_a_value(question: str) -> bool:
    """Whether the question mentions something a filter could compare with: a number, a
    quoted string or a capitalised word that does not start a sentence ("Where is the
    youngest teacher from?" mentions none: extracting filter values from it invents them)."""
    if any(ch.isdigit() for ch in question) or re.search(r"[\"“‘]|(?:^|\s)'", question):
        return True
    tokens = _tokens(question)
    return any(word[:1].isupper() and not _sentence_start(question, tokens, i)
               and word.lower() not in _QUESTION_WORDS for i, (word, _, _) in enumerate(tokens))


def _searched_for(question: str, start: int) -> bool:
    """Whether the mention at `start` is quoted and follows a word such as "containing"."""
    if question[start:start + 1] not in ("'", '"') and question[start - 1:start] not in ("'", '"'):
        return False
    return bool(_SEARCH_WORDS.search(question[:start]))


@dataclass(frozen=True)
class EntityMatch:
    mention: str  # the words of the question
    table: str
    key_column: str
    key: object
    name_column: str
    name: str  # as the database spells it
    kind: str
    confidence: float  # 0..1


@dataclass(frozen=True)
class Unresolved:
    mention: str
    kind: str | None  # the kind of the closest name's table
    closest: str | None
    confidence: float  # of the closest name, 0..1


@dataclass(frozen=True)
class _Name:
    table: EntityTable
    column: str
    key: object
    name: str
    plain: str  # normalized


def _spelling(name: str) -> str:
    return " ".join(re.findall(r"\w+", str(name).lower()))


def normalize_name(name: str) -> str:
    """Lower case, single spaces, legal-form suffixes ("Ltd", "plc", "Inc.") dropped."""
    text = " ".join(str(name).lower().replace(",", " ").split())
    previous = None
    while previous != text:
        previous, text = text, _LEGAL_SUFFIXES.sub("", text).strip()
    return text


_CHUNK = 50_000  # rows a read of names asks for: well under the result byte cap
# Rows of one entity table read into the index: a million names take about 1.7 GB of memory
# (measured with 1M company names); a table with more is listed in `truncated`, not cut silently.
MAX_NAMES = 2_000_000


def _name_rows(db: Database, entity: EntityTable, max_names: int) -> list[tuple]:
    """The key and name columns of every row, read in chunks of keys in ascending order (one
    read of a million names would pass the row and byte caps every query has)."""
    key = db.quote(entity.key)
    select = f"SELECT {key}, {', '.join(db.quote(c) for c in entity.names)} FROM {db.quote(entity.table)}"
    rows: list[tuple] = []
    while len(rows) < max_names:
        after = "" if not rows else f" WHERE {key} > {exp.convert(rows[-1][0]).sql(db.dialect)}"
        chunk = db.execute(f"{select}{after} ORDER BY {key} LIMIT {_CHUNK}", max_rows=_CHUNK).rows
        rows += chunk
        if len(chunk) < _CHUNK or rows[-1][0] is None:
            break
    return rows[:max_names]


class EntityIndex:
    """The names of a pack's entity tables, indexed for linking."""

    def __init__(self, names: Sequence[_Name], known_words: Sequence[str] = (),
                 threshold: float = 0.85, truncated: Sequence[str] = ()) -> None:
        self.names = tuple(names)
        self.threshold = threshold
        self.truncated = tuple(truncated)  # entity tables with more names than were read
        self.known = {normalize_name(w) for w in known_words if str(w).strip()} | _CALENDAR
        self._known_parts = {part for phrase in self.known for part in phrase.split()}
        self._trigrams = TrigramIndex([n.plain for n in self.names])
        self._exact: dict[str, list[int]] = {}
        for i, entry in enumerate(self.names):
            self._exact.setdefault(entry.plain, []).append(i)
        self._by_word: dict[str, set[int]] | None = None  # word -> names with it, built when first asked

    @classmethod
    def build(cls, db: Database, entities: Sequence[EntityTable], known_words: Sequence[str] = (),
              threshold: float = 0.85, max_names: int = MAX_NAMES) -> "EntityIndex":
        """Read every name column of every entity table (plain SELECTs, read-only), up to
        `max_names` rows a table; the tables cut short are listed in `truncated`."""
        names: list[_Name] = []
        truncated: list[str] = []
        for entity in entities:
            rows = _name_rows(db, entity, max_names)
            if len(rows) >= max_names:
                truncated.append(entity.table)
            for key, *values in rows:
                spelled = [(c, str(v)) for c, v in zip(entity.names, values) if v is not None]
                if len(spelled) > 1:  # first and last name: the full name is a name too
                    spelled.append(("+".join(c for c, _ in spelled), " ".join(v for _, v in spelled)))
                for column, name in spelled:
                    plain = normalize_name(name)
                    if plain:
                        names.append(_Name(entity, column, key, name, plain))
        return cls(names, known_words, threshold, truncated)

    def containing(self, words: Sequence[str]) -> list[_Name]:
        """The names that have every one of `words` among their own ("Photonics" is in
        "Belcourt Photonics" and "Kroonstad Photonics N.V."), one per entity, in name order."""
        if self._by_word is None:
            self._by_word = {}
            for i, entry in enumerate(self.names):
                # The words as written too: "publ" of "Malaren Machinery AB (publ)".
                for word in set(_WORD.findall(entry.plain)) | set(_WORD.findall(entry.name.lower())):
                    self._by_word.setdefault(word, set()).add(i)
        wanted = [w.lower() for w in words if w.strip()]
        if not wanted:
            return []
        found = set.intersection(*(self._by_word.get(w, set()) for w in wanted))
        seen: set[tuple[str, object]] = set()
        names = []
        for entry in sorted((self.names[i] for i in found), key=lambda n: n.name):
            if (entry.table.table, entry.key) not in seen:
                seen.add((entry.table.table, entry.key))
                names.append(entry)
        return names

    def is_known(self, word: str) -> bool:
        """A word the domain uses otherwise than in a name (a reference label, a calendar word),
        or a nationality ("French", "Japanese")."""
        plain = normalize_name(word)
        return plain in self.known or self._known_part(plain) or plain in _NATIONALITIES \
            or plain.endswith(("ish", "ese", "ian", "ean"))

    def _known_part(self, word: str) -> bool:
        return word in self._known_parts or (word.endswith("s") and word[:-1] in self._known_parts)

    def _derived(self, word: str) -> bool:
        """An adjective or plural made from a known word, or a nationality adjective."""
        if word in _NATIONALITIES or word.endswith(("ish", "ese", "ian", "ean")):
            return True
        stem = max(4, len(word) - 3)
        return len(word) > stem and any(k.startswith(word[:stem]) for k in self._known_parts)

    def _score(self, mention: str, entry: _Name) -> float:
        if len(mention) <= 4 or len(entry.plain) <= 4:  # tickers, codes: exact only
            return 1.0 if mention == entry.plain else 0.0
        return fuzz.ratio(mention, entry.plain) / 100

    def candidates(self, mention: str) -> list[tuple[float, _Name]]:
        plain = normalize_name(mention)
        if not plain:
            return []
        exact = self._exact.get(plain, [])  # short names share too few 3-grams to be found
        similar = [i for i, _ in self._trigrams.similar(plain, _CANDIDATE_SIMILARITY, _CANDIDATES)]
        scored = [(1.0, self.names[i]) for i in exact]
        scored += [(self._score(plain, self.names[i]), self.names[i]) for i in similar if i not in exact]
        # Names that differ only in a legal form normalise alike: the one spelled as asked first
        # ("Inc" for "Inc.": punctuation aside).
        spelled = _spelling(mention)
        return sorted(scored, key=lambda s: (-s[0], _spelling(s[1].name) != spelled, s[1].name))

    def link(self, question: str, max_words: int = 6) -> tuple[list[EntityMatch], list[Unresolved]]:
        """Entity matches for the question's word spans (best first, not overlapping), and
        the capitalised spans that match nothing the domain knows."""
        tokens = _tokens(question)
        options = []
        for start in range(len(tokens)):
            for end in range(start + 1, min(len(tokens), start + max_words) + 1):
                words = [t[0] for t in tokens[start:end]]
                if words[0].lower() in _QUESTION_WORDS or words[-1].lower() in _QUESTION_WORDS:
                    continue
                mention = question[tokens[start][1]:tokens[end - 1][2]].rstrip(".'?,")
                mention = re.sub(r"'s$", "", mention)
                best = self.candidates(mention)
                if best and best[0][0] >= self.threshold:
                    options.append((best[0][0], end - start, start, end, mention, best[0][1]))
        taken: set[int] = set()
        matches = []
        for score, _, start, end, mention, entry in sorted(options, key=lambda o: (-o[0], -o[1])):
            if taken & set(range(start, end)):
                continue
            taken |= set(range(start, end))
            matches.append(EntityMatch(mention, entry.table.table, entry.table.key, entry.key,
                                       entry.column, entry.name, entry.table.kind, round(score, 3)))
        return matches, self._unresolved(question, tokens, taken)

    def _unresolved(self, question: str, tokens, taken: set[int]) -> list[Unresolved]:
        if not self.names:
            return []  # entity tables without rows (a schema-only database) deny no name
        spans: list[list[int]] = []
        for i, (word, start, _) in enumerate(tokens):
            proper = (not _sentence_start(question, tokens, i) and word[:1].isupper()
                      and not any(ch.isdigit() for ch in word) and word.lower() not in _QUESTION_WORDS)
            if proper and i not in taken and normalize_name(word) not in self.known:
                if spans and spans[-1][-1] == i - 1:
                    spans[-1].append(i)
                else:
                    spans.append([i])
        unresolved = []
        for span in spans:
            raw = question[tokens[span[0]][1]:tokens[span[-1]][2]]
            mention = re.sub(r"'s$", "", raw.strip(_PUNCTUATION)).strip(_PUNCTUATION)
            plain = normalize_name(mention)
            if plain in self.known or len(plain) < 3 or re.fullmatch(r"[A-Z0-9&./-]+s?", mention):
                continue  # a known word, or an abbreviation ("USA", "M&A", "IDs")
            names = [normalize_name(w) for w in re.split(r"[\s-]+", mention) if w[:1].isupper()]
            if all(self._known_part(w) for w in names):
                continue  # "Swiss" of "Swiss Franc", "Singapore-based": words the data uses
            if _searched_for(question, tokens[span[0]][1]):
                continue  # "titles containing 'Hey'": a pattern to search, not a name
            if " " not in plain and self._derived(plain):
                continue  # "French" singers, "German" companies: a word made from a known one
            near = self._trigrams.similar(plain, 0.0, _CANDIDATES)
            scored = sorted(((fuzz.ratio(plain, self.names[i].plain) / 100, self.names[i]) for i, _ in near),
                            key=lambda s: (-s[0], s[1].name))
            best = scored[0] if scored else None
            unresolved.append(Unresolved(mention, best[1].table.kind if best else None,
                                         best[1].name if best else None, round(best[0], 3) if best else 0.0))
        return unresolved
