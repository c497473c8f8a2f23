"""Ask back instead of guessing: the triggers of a clarifying question, and of "out of scope".

An answer that runs, looks plausible and is wrong is the worst kind for an analyst. Cortex
Analyst, Genie and WrenAI answer an ambiguous question with a question and its options, and say
when the data cannot answer. Each trigger here is a measured decision (BENCHMARKS.md, "Ask
back"), deterministic and without a model call, checked in this order:

- the data ends before the year asked for ("revenue in fiscal 2027" of data that ends in
  2024): out of scope, a forecast is not in the data;
- a name two entities share: "Photonics" is in "Belcourt Photonics" and "Kroonstad Photonics
  N.V.", and the question names neither in full;
- a word two measures share and neither is named: "income" (net income, operating income),
  "margin" (five of them). Where the semantic model gives the word as a synonym of one measure
  ("profit" for net income), the team has answered the question already: no ask; nor where it
  is a word of a value the question names ("closed shipments": a status, not closing balances);
- a judgement with no measure to judge by: "the biggest company", "the best exchange";
- what the question asks for is a word the domain knows nothing of ("the average salary of",
  "how many patents") and holds no other word the domain uses ("quality inspections" asks for
  inspections, whatever a drafted model calls quality): out of scope. (Offering the 1.5B model
  `{"out_of_scope": word}` as an answer instead was tried: it never chose it, on 6 such
  questions of 6.)

A clarification's options carry the question each stands for: a reply that picks one (its
number, its label, or words of it) asks that question, with no model call
(conversation/__init__.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from groundsql.errors import GroundsqlError
from groundsql.grounding.entities import EntityIndex, EntityMatch
from groundsql.semantic.catalog import Catalog, FieldRef
from groundsql.semantic.terms import Terms, counts_rows, named_by, stems
from groundsql.strategies.answer import Clarification, Option

__all__ = ["ask_back", "asked_for", "unknown_words", "chosen_option", "last_year_of", "MOST_OPTIONS"]

MOST_OPTIONS = 5
_SPAN_WORD = re.compile(r"[\w&.'-]+", re.UNICODE)
_CONNECTORS = frozenset({"&", "and", "of", "de", "du", "des", "la", "le", "von", "van", "der", "y", "e"})
# Words that start a question or join its parts: capitalised at the start, they name nothing.
_FUNCTION_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each either else ever every few for from
further had has have having he her here hers him his how i if in into is it its itself just least less
many me might more most much must my neither no nor not now of off on once only or other our ours out
over own per please same shall she should show so some such than that the their theirs them then there
these they this those through to too under until up upon us very was we were what when where which while
who whom whose why will with within without would you your list give tell find name names named get got
make made know show shown display return count number total amount value values many much how
""".split())
# Words of questions about any data: verbs of owning, reporting and ranking, and words about
# the asking itself. Not knowing them says nothing about what the data holds.
_GENERAL_WORDS = frozenset("""
act acted advise advised announce base call carry classify combine compare convert cover covered declare
declared did different earn earned file files generate generated grow grew have hold issue issued list
measure measured offer own owned pay post posted rank ranked report reported serve served sit sits trade
traded use used using database data table tables record records row rows result results order
alphabetical ascending descending first second third fourth fifth last next previous latest earliest
one two three four five six seven eight nine ten hundred thousand million billion trillion
time times minute minutes hour hours day days week weeks
""".split())
_GENERAL_STEMS = frozenset(w for word in _GENERAL_WORDS for w in stems(word))
# Words of aggregation and proportion: they say how to sum up what is asked ("the percentage
# of the shipments"), not what it is.
_AGGREGATION_WORDS = frozenset("""average mean median sum minimum maximum min max overall typical percentage
percent proportion share fraction ratio""".split())
# Where the words of what a question asks for end.
_ASKED_ENDS = frozenset("""
of in for at on by from with to per does did do is are was were has have had will would be been being
that which who whom whose during between since before after and or than as under over across
""".split())
# Words that ask for a judgement the data must define a measure for.
_JUDGEMENT = re.compile(r"\b(best|worst|biggest|largest|greatest|smallest|leading|strongest|weakest|"
                        r"most (?:important|successful|valuable|significant)|top)\b", re.I)


def ask_back(question: str, catalog: Catalog, terms: Terms, entities: EntityIndex | None,
             matches: Sequence[EntityMatch], last_year: int | None) -> Clarification | None:
    """The clarification `question` calls for, or None when it is clear enough to answer."""
    return (_beyond_the_data(question, last_year)
            or _shared_name(question, entities, matches)
            or _unknown_subject(question, catalog, entities, matches)
            or _shared_word(question, catalog, terms, matches)
            or _judgement(question, catalog, terms))


def _beyond_the_data(question: str, last_year: int | None) -> Clarification | None:
    asked = [int(y) for y in re.findall(r"\b(1[89]\d{2}|20\d{2})\b", question)]
    if last_year is None or not asked or max(asked) <= last_year:
        return None
    return Clarification("out_of_scope", f"Out of scope: the data ends in {last_year}; it holds no "
                                         f"figures for {max(asked)} (no forecasts).",
                         about=str(max(asked)), why="a year after the last in the data")


def _shared_name(question: str, entities: EntityIndex | None,
                 matches: Sequence[EntityMatch]) -> Clarification | None:
    """A capitalised span of the question that is a part of two or more entities' names."""
    if entities is None:
        return None
    linked = [(question.find(m.mention), len(m.mention)) for m in matches]
    for mention, words in _capitalised_spans(question):
        at = question.find(mention)
        if any(start <= at < start + length for start, length in linked if start >= 0):
            continue
        names = entities.containing(words)
        if len(names) < 2:
            continue
        options = tuple(Option(n.name, _replaced(question, mention, n.name), n.key, "entity")
                        for n in names[:MOST_OPTIONS])
        more = f" (the first {MOST_OPTIONS} of {len(names)})" if len(names) > MOST_OPTIONS else ""
        kind = names[0].table.kind or "entity"
        return Clarification("ambiguous", f"Which {kind} do you mean by {mention!r}?{more}", options,
                             about=mention, why=f"{len(names)} {kind} names contain {mention!r}")
    return None


def _capitalised_spans(question: str) -> list[tuple[str, list[str]]]:
    """Runs of capitalised words, joined by connectors ("Power & Light"), with their words
    (connectors and a possessive 's left out)."""
    tokens = [(m.group(0), m.start(), m.end()) for m in _SPAN_WORD.finditer(question)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        word = tokens[i][0].strip(".'")
        if word[:1].isupper() and word.lower() not in _FUNCTION_WORDS:
            j = i
            while j + 1 < len(tokens):
                nxt = tokens[j + 1][0].strip(".'")
                if nxt[:1].isupper() and nxt.lower() not in _FUNCTION_WORDS:
                    j += 1
                elif nxt.lower() in _CONNECTORS and j + 2 < len(tokens) and tokens[j + 2][0][:1].isupper():
                    j += 2
                else:
                    break
            spans.append((i, j))
            i = j + 1
        else:
            i += 1
    found = []
    for start, end in spans:
        # The whole span first, then its parts between connecting words: "EBITDA of Nutrition"
        # is two things unless a name has both words.
        parts = [(start, end)]
        cuts = [k for k in range(start + 1, end) if tokens[k][0].lower() in _CONNECTORS - {"&"}]
        for left, right in zip([start, *[c + 1 for c in cuts]], [*[c - 1 for c in cuts], end]):
            if (left, right) != (start, end):
                parts.append((left, right))
        for left, right in parts:
            text = re.sub(r"'s$", "", question[tokens[left][1]:tokens[right][2]]).rstrip(".'")
            words = [re.sub(r"'s$", "", t[0]).strip(".'").lower() for t in tokens[left:right + 1]]
            found.append((text, [w for w in words if w and (w not in _CONNECTORS or w == "&")]))
    return found


def _replaced(question: str, mention: str, name: str) -> str:
    return question.replace(mention, name, 1)


def _shared_word(question: str, catalog: Catalog, terms: Terms,
                 matches: Sequence[EntityMatch]) -> Clarification | None:
    """A word of the question that belongs to two or more measures, none of which it names."""
    text = question
    for m in matches:
        text = text.replace(m.mention, " ")
    said = stems(text)
    fields = [*catalog.of_kind("measure", "derived"), *catalog.of_kind("fact")]
    named = [ref for ref in fields if named_by(said, _phrases(ref))]
    # "How many shipments are closed?": a word of a value the question names (a status
    # "Closed") filters; it means no measure ("closing balance").
    valued = {stem for listed in terms.values.values() for value in listed if isinstance(value, str)
              for stem in stems(value)}
    for word in re.findall(r"[A-Za-z]+", text):
        stem = next(iter(stems(word)), None) if word.lower() not in _FUNCTION_WORDS else None
        if stem is None or stem in valued:
            continue
        sharing = [ref for ref in fields if stem in _words_of(ref)]
        if len(sharing) < 2 or any(ref in named for ref in sharing):
            continue
        if any(stem in _words_of(ref) for ref in catalog.of_kind("dimension", "time", "filter")):
            continue  # "closing date" may name closed_date: no measure is meant
        options = tuple(Option(_label(ref), _word_replaced(question, word, _label(ref)), ref.name, "measure")
                        for ref in sharing[:MOST_OPTIONS])
        return Clarification("ambiguous", f"Which {word.lower()} do you mean?", options, about=word,
                             why=f"{len(sharing)} measures have the word {word.lower()!r} and the question "
                                 "names none of them")
    return None


def _judgement(question: str, catalog: Catalog, terms: Terms) -> Clarification | None:
    """"The biggest company": a ranking by a measure the question does not name."""
    judged = _JUDGEMENT.search(question)
    said = stems(question)
    # A count is no judgement ("company count" is named by "company" alone).
    fields = [ref for ref in (*catalog.of_kind("measure", "derived", "aggregate"), *catalog.of_kind("fact"))
              if not counts_rows(ref)]
    if judged is None or terms.top is not None or any(named_by(said, _phrases(ref)) for ref in fields):
        return None
    subjects = [ref for ref in catalog.of_kind("dimension") if named_by(said, _phrases(ref))]
    if not subjects:
        return None
    table = subjects[0].table
    own = [ref for ref in catalog.of_kind("fact") if ref.table == table and _sizes(ref)]
    own += [ref for ref in catalog.of_kind("measure", "derived") if ref.table == table and _sizes(ref)]
    amounts = [ref for ref in catalog.of_kind("measure") if ref.table != table and _sizes(ref)
               and getattr(ref.source, "amount", False)]
    options = tuple(Option(_label(ref), f"{question.rstrip(' ?')} by {_label(ref)}?", ref.name, "measure")
                    for ref in [*own, *amounts][:MOST_OPTIONS])
    if len(options) < 2:
        return None
    word = judged.group(0).lower()
    return Clarification("ambiguous", f"{word.capitalize()} by which measure?", options, about=word,
                         why=f"{word!r} ranks by a measure the question does not name")


def _unknown_subject(question: str, catalog: Catalog, entities: EntityIndex | None,
                     matches: Sequence[EntityMatch]) -> Clarification | None:
    """What the question asks for is a word nothing of the domain uses ("the average salary
    of", "how many patents"): out of scope. Only the words of what is asked count: an unknown
    word elsewhere ("... or later", "in Swedish kronor") is no reason to refuse."""
    asked = asked_for(question, matches)
    unknown = unknown_words(asked, catalog, entities)
    if not unknown or _names_something(asked, catalog):
        return None
    return Clarification("out_of_scope", f"Out of scope: the database holds nothing on {unknown[0]!r}.",
                         about=unknown[0], why=f"what the question asks for ({', '.join(unknown)}) is a word "
                                               "the semantic model, its values and names do not use")


def _names_something(asked: str, catalog: Catalog) -> bool:
    """Whether a word of what is asked is one the domain uses (not a word of aggregation):
    "quality inspections" asks for inspections, a thing the domain holds, whatever it calls
    quality; "handling time" is the domain's handling_minutes. An unknown word beside it
    qualifies what is asked, and the model is shown the fields to choose from."""
    known = _vocabulary(catalog)
    return any(stems(word) <= known for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", asked)
               if _says_something(word) and word.lower() not in _AGGREGATION_WORDS)


def _says_something(word: str) -> bool:
    """Whether a word of a question can name a thing of the domain: not a function word, nor
    one any question about data uses, nor one of one or two letters."""
    lower = word.lower()
    return len(lower) > 2 and lower not in _FUNCTION_WORDS and lower not in _GENERAL_WORDS \
        and not stems(word) & _GENERAL_STEMS


def asked_for(question: str, matches: Sequence[EntityMatch] = ()) -> str:
    """The words of what a question asks for: after its question words, up to the first
    preposition, verb of being or having, or linked name ("What is the average salary of ...":
    "average salary")."""
    text = question
    for m in matches:
        text = text.replace(m.mention, " § ")
    words: list[str] = []
    for word in re.findall(r"§|[\w'-]+", text):
        lower = word.lower()
        if not words and (lower in _FUNCTION_WORDS or lower in _GENERAL_WORDS or lower in _AGGREGATION_WORDS
                          or _JUDGEMENT.fullmatch(word)):
            continue
        if word == "§" or lower in _ASKED_ENDS:
            break
        words.append(word)
    return " ".join(words)


def unknown_words(question: str, catalog: Catalog, entities: EntityIndex | None,
                  matches: Sequence[EntityMatch] = ()) -> list[str]:
    """The words of `question` that nothing of the domain uses: not a field's name, synonym,
    description or value, not a word of a linked name or of the domain's labels, not a
    function word. A question with none is within the domain's vocabulary."""
    text = question
    for m in matches:
        text = text.replace(m.mention, " ")
    known = _vocabulary(catalog)
    unknown = []
    for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", text):
        lower = word.lower()
        if not _says_something(word) or re.fullmatch(r"(fy|q|h)\d*|\w+(ed|ing|est|ly)", lower):
            continue
        if lower.endswith("ves"):  # "halves": half
            lower = lower[:-3] + "f"
        if stems(lower) <= known or _JUDGEMENT.fullmatch(word) or re.fullmatch(r"\w*makers?", lower) or (
                entities is not None and (entities.is_known(lower) or entities.containing([lower]))):
            continue
        unknown.append(word)
    return list(dict.fromkeys(unknown))


def chosen_option(reply: str, options: Sequence[Option]) -> Option | None:
    """The option a reply picks: its number ("2"), its label, a reply whose words are all in
    one option's label and in no other's ("Kroonstad"), or a short reply (four words at most)
    that shares more words with one option than with any other ("net profit margin": net
    margin); None when none or several fit."""
    text = reply.strip().strip(".!").strip()
    if not text:
        return None
    if text.isdigit():
        n = int(text)
        return options[n - 1] if 1 <= n <= len(options) else None
    lowered = text.lower()
    exact = [o for o in options if o.label.lower() == lowered or str(o.key).lower() == lowered]
    if len(exact) == 1:
        return exact[0]
    said = stems(re.sub(r"\b(by|the|number of|option)\b", " ", text, flags=re.I)) or stems(text)
    fitting = [o for o in options if said and said <= stems(o.label.replace("_", " "))]
    if len(fitting) == 1:
        return fitting[0]
    if len(text.split()) > 4:  # a sentence is a new question or a reply of its own, not a pick
        return None
    overlaps = {i: len(said & stems(o.label.replace("_", " "))) for i, o in enumerate(options)}
    best = max(overlaps.values(), default=0)
    ahead = [i for i, n in overlaps.items() if n == best]
    return options[ahead[0]] if best and len(ahead) == 1 else None


def last_year_of(catalog: Catalog, db: Any) -> int | None:
    """The last year the data holds, over the semantic model's time dimensions (None when
    none can be read)."""
    from groundsql.semantic.compile import compile_request
    from groundsql.semantic.request import Request

    years: list[int] = []
    for ref in catalog.of_kind("time"):
        try:
            sql = compile_request(catalog, Request.model_validate(
                {"select": [ref.name], "order_by": [{"field": ref.name, "desc": True}], "limit": 1})).sql
            rows = db.execute(sql, max_rows=1).rows
        except (GroundsqlError, ValueError, LookupError):
            continue
        if rows and rows[0][0] is not None:
            found = re.match(r"\d{4}", str(rows[0][0]))
            if found:
                years.append(int(found.group(0)))
    return max(years) if years else None


def _phrases(ref: FieldRef) -> list[str]:
    """The words a question may name a field by: its name and its synonyms."""
    return [ref.name.replace("_", " "), *ref.synonyms]


def _words_of(ref: FieldRef) -> set[str]:
    return {w for phrase in _phrases(ref) for w in stems(phrase)}


def _label(ref: FieldRef) -> str:
    return ref.name.replace("_", " ")


def _word_replaced(question: str, word: str, label: str) -> str:
    return re.sub(rf"\b{re.escape(word)}\b", label, question, count=1)


def _sizes(ref: FieldRef) -> bool:
    """A measure of size: not a count of rows, not a ratio or a percentage."""
    from sqlglot import exp

    expr = ref.exprs[0] if ref.exprs else None
    if expr is not None and (isinstance(expr, exp.Count) or expr.find(exp.Div) is not None):
        return False
    return not any(w in ref.name for w in ("ratio", "yield", "margin", "count", "rate", "per_"))


def _vocabulary(catalog: Catalog) -> set[str]:
    """Every word the semantic model uses, stemmed; computed once per catalog."""
    if "clarify_vocabulary" in catalog.derived:
        return catalog.derived["clarify_vocabulary"]  # type: ignore[return-value]
    words: set[str] = set()
    for ref in catalog.fields.values():
        words |= _words_of(ref) | stems(ref.description or "")
        words |= {w for v in catalog.values.get(ref.name, ()) for w in stems(str(v))}
    for table in catalog.model.tables:
        words |= stems(table.name.replace("_", " ")) | stems(getattr(table, "description", "") or "")
    words |= stems(catalog.model.description or "")
    catalog.derived["clarify_vocabulary"] = words
    return words
