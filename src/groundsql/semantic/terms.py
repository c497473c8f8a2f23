"""What a question names, and so what a request for it may use.

A small model that may choose any name of a semantic model chooses some the question never
mentions: an extra column, a filter on a value from its own knowledge ("country = United
States" for "which country has the most companies"), a scale nobody asked for. The request's
grammar therefore admits, per question, only what the question grounds:

- to select: the dimensions and measures it speaks of, by a word of their name, a synonym or
  one of their values (every measure when it speaks of none, so a drafted model without
  synonyms still works); an aggregated fact only with a word for its aggregation ("average");
- to filter on: the values of a dimension the question names (by the value's most telling
  word, "Toronto" of "Toronto Stock Exchange", or a synonym the model gives the value:
  "Swiss" for Switzerland), the names entity linking found, the years and numbers it states;
- a currency and a scale only when named; ordering and a limit only when it ranks, in the
  direction its words say ("lowest": ascending); a count only when it asks how many (or
  ranks or compares); a comparison (<, >, before, after) only with a word for one, a negation
  only with a word that negates; a change between two periods only when it asks for one.

Everything here is deterministic and cheap (no model); the lists are what the JSON schema of
semantic/request.py enumerates.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx
from sqlglot import exp

from groundsql.semantic.catalog import Catalog, FieldRef

__all__ = ["Terms", "counts_rows", "direction", "named_by", "named_currencies", "named_scales", "ranks", "terms_of", "top_n", "year_ranges"]

AREA_MIN = 5  # tables whose names begin with one word that make it a subject area's code
_GENERIC = frozenset("name names number total count value values id the of a an and in".split())
# A superlative ("largest", "latest"), not a noun that ends like one ("work requests").
_SUPERLATIVE = r"(?!(?:requ|inter|for|harv|inv|cont|sugg|manif|prot|dig|arr|beh|hon|mod|conqu)est\b)\w{3,}est"
_RANKING = re.compile(r"\b(most|least|fewest|top|bottom|best|worst|first|last|maximum|minimum|rank\w*|"
                      r"order(?:ed|ing)?\s+(?:by|of)|ordered|sort\w*|alphabetical\w*|ascending|descending|"
                      rf"{_SUPERLATIVE})\b", re.I)
_AGGREGATION_WORDS = {
    "avg": ("average", "mean", "avg", "typical"),
    "min": ("lowest", "minimum", "min", "smallest", "least", "cheapest", "bottom"),
    "max": ("highest", "maximum", "max", "largest", "biggest", "peak", "top", "most"),
    "sum": ("total", "sum", "combined", "altogether", "overall", "aggregate"),
}
_LOSS_WORDS = re.compile(r"\b(loss|losses|negative|deficit|unprofitable|positive|below zero|above zero)\b", re.I)
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9, "trillion": 1e12, "tn": 1e12}
_NUMBER_WORDS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "q1": 1, "q2": 2, "q3": 3, "q4": 4}
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*(%|percent|thousands?|millions?|mn|"
                     r"billions?|bn|trillions?|tn)?(?![\w])", re.I)
_WORD_NUMBER = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\s+(thousands?|millions?|billions?|trillions?)?",
                          re.I)
_YEAR = re.compile(r"\b(1[89]\d{2}|20\d{2})\b")
_FISCAL = r"(?:(?:fiscal|financial|calendar)\s+(?:year\s+)?|fy\s*|the\s+year\s+)?"
_YEAR_RANGE = re.compile(rf"\b(?:from|between)?\s*{_FISCAL}(1[89]\d{{2}}|20\d{{2}})\s*(?:to|and|through|thru|until|till|-|–)"
                         rf"\s*{_FISCAL}(1[89]\d{{2}}|20\d{{2}})\b", re.I)
_QUANTITY = re.compile(r"\b(how much|how many|total|sum|average|mean|amount|value|number|count|percent\w*|ratio|"
                       r"rate|growth|worth|cost|spen[dt]|earn\w*|paid|pay\w*|most|least|more|less|" + _SUPERLATIVE + r")\b", re.I)
_COUNT_WORDS = re.compile(r"\b(how many|number of|count\w*|tally|how often|more than|fewer than|less than|"
                          r"at least|at most|or more|or fewer|several|multiple|\d+ or more)\b", re.I)
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t|tember)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
_ONE = re.compile(r"^\W*(?:in |on |for |at )?(?:which|what) (?!(?:is|are|was|were|did|do|does|has|have|had|of)\b)"
                  r"[a-z]+(?<!s) (?!and\b)", re.I)
_GROUPING = re.compile(r"\b(each|every|per|by|which|what|whose|who|where|when|list|show|breakdown|respective\w*|"
                       r"group\w*|split)\b", re.I)
_EACH = re.compile(r"\b(?:each|every|per|by)\s+((?:[\w-]+\s+)?[\w-]+)", re.I)
# "Which Japanese companies ...": the thing asked for is plural (not "which country").
_PLURAL_ASKED = re.compile(r"^\W*(?:in |on |for |at )?(?:which|what)\s+(?:[a-z-]+\s+)?[a-z-]{2,}[^s\W]s\b", re.I)
_WHICH = re.compile(r"\b(which|what|each|every|per)\s+((?:[\w-]+\s+)?[\w-]+)", re.I)
_ASCENDING = re.compile(r"\b(lowest|least|fewest|smallest|oldest|earliest|cheapest|bottom|minimum|ascending|"
                        r"shortest|weakest|worst)\b", re.I)
_DESCENDING = re.compile(r"\b(highest|most|largest|biggest|greatest|top|maximum|descending|latest|newest|"
                         r"longest|strongest|best|most recent|leading)\b", re.I)
_COMPARING = re.compile(r"\b(more|less|fewer|greater|larger|smaller|higher|lower|above|below|over|under|exceed\w*|"
                        r"at least|at most|or later|or earlier|before|after|since|until|till|prior|beyond|up to|"
                        r"within|older|younger|newer|earlier|later|between|through|minimum|maximum|outside|"
                        r"loss|losses|negative|positive|deficit|profitable|unprofitable|zero)\b|[<>≤≥]", re.I)
_NEGATING = re.compile(r"\b(not|no|never|except|excluding|exclude\w*|other than|outside|besides|without|"
                       r"non|neither|nor|unpaid|un(?!ited)\w{3,}ed|missing|pending)\b|n't\b", re.I)
_CHANGING = re.compile(r"\b(change\w*|grow\w*|growth|increas\w*|decreas\w*|declin\w*|ris[ei]\w*|rose|fall\w*|"
                       r"fell|drop\w*|gain\w*|compar\w*|versus|vs|year[- ]over[- ]year|yoy|differ\w*|jump\w*|"
                       r"shr[iu]nk\w*)\b", re.I)


@dataclass(frozen=True)
class Terms:
    """What a request for one question may use; None: anything (no question to ground in)."""

    select: tuple[str, ...] | None = None
    filters: tuple[str, ...] | None = None  # the named filters ("current": current_role)
    values: dict[str, tuple[object, ...]] = field(default_factory=dict)  # dimension -> its values named
    years: tuple[int, ...] | None = None
    numbers: tuple[float, ...] | None = None
    currencies: tuple[str, ...] | None = None
    scales: tuple[str, ...] | None = None
    ranks: bool = True
    direction: str | None = None  # "asc" or "desc" when the question's ranking words agree
    compares: bool = True  # a word for <, >, before, after...
    negates: bool = True  # a word for "not"
    changes: bool = True  # asks for the change between two periods
    year_ranges: tuple[tuple[int, int], ...] = ()  # "from 2019 to 2023"
    counted: tuple[str, ...] = ()  # the counts it asks for ("how many companies": company_count)
    grouped: tuple[str, ...] = ()  # the fields it asks for one row per ("in each year": a year)
    dated: frozenset[str] = frozenset({"quarter", "month", "day"})  # what its dates name below a year
    measures: tuple[str, ...] = ()  # the measures it names (by name or synonym)
    one: bool = False  # it ranks and asks for one thing ("Which country has the most ...")
    top: int | None = None  # the rows a ranking asks for ("the three largest deals": 3)
    percent: bool | None = None  # it asks for a percentage ("by what percentage", "in percent")
    grows: bool = False  # it asks by how much something changed (not only to compare two values)
    per: tuple[str, ...] | None = None  # the fields an average is taken over ("average quarterly": quarters)
    reports: bool = False  # it speaks of the currency figures are reported in


def terms_of(question: str, catalog: Catalog, found: Mapping[str, Sequence[str]] | None = None,
             mentions: Sequence[str] = ()) -> Terms:
    """The terms `question` grounds; `found`: the names entity linking resolved, by dimension,
    and `mentions`, the words of the question they were found in (the words of a name name
    nothing else: "Tenryu Retail K.K." names no retail industry)."""
    for mention in sorted(mentions, key=len, reverse=True):
        if mention.strip():
            question = question.replace(mention, " ")
    said = stems(question)
    dimensions = [ref.name for ref in catalog.of_kind("dimension", "time", "fact") if _speaks_of(said, catalog, ref)]
    measures = [ref.name for ref in catalog.of_kind("measure", "derived") if _speaks_of(said, catalog, ref)]
    # "free cash flow" names free_cash_flow, not also cash; "free cash flow margin" (a synonym
    # of fcf_margin) names fcf_margin, not also free_cash_flow.
    phrases = {name: [stems(p) for p in (name.replace("_", " "), *catalog.fields[name].synonyms)
                      if re.search(rf"\b{re.escape(p)}", question, re.I)] for name in measures}
    said_phrases = [words for found in phrases.values() for words in found]
    measures = [name for name in measures
                if not phrases[name] or not all(any(own < words for words in said_phrases) for own in phrases[name])]
    measures += [ref.name for ref in catalog.of_kind("aggregate") if _aggregated(question, said, catalog, ref)]
    # "the total freight cost" asks for the sum: each row's freight cost is not what to show.
    # (Not so "the highest close" or "employs the most": a row ranked by its own value.)
    summed = [catalog.fields[name].source for name in measures
              if catalog.fields[name].kind == "aggregate" and catalog.fields[name].aggregation == "sum"]
    dimensions = [name for name in dimensions
                  if not (catalog.fields[name].kind == "fact" and any(catalog.fields[name].source is s for s in summed))]
    spoken_measures = tuple(measures)
    if not measures and (not dimensions or _QUANTITY.search(question)):
        # Nothing recognisable, where the question asks for a figure or names nothing else:
        # every measure (a drafted model has few words). A listing ("Which tickers were
        # delisted in 2023?") gets none.
        measures = [ref.name for ref in catalog.of_kind("measure", "derived")]
    asked_counts = counted(question, catalog)
    if re.search(r"\bhow many\b", question, re.I) and not _GROUPING.search(question) and not ranks(question):
        # "How many companies were founded in 2000 or later?" is one number, not one per year;
        # nor a count of anything else beside it ("How many work orders in the category X":
        # not also how many categories).
        dimensions = [name for name in dimensions if catalog.fields[name].kind == "fact"]
        if asked_counts:
            measures = [name for name in measures if name in asked_counts or not counts_rows(catalog.fields[name])]
    if not _COUNT_WORDS.search(question) and not ranks(question):
        # "Which chemicals makers are British?" asks for the makers, not for how many there are.
        counts = [name for name in measures if counts_rows(catalog.fields[name])]
        if len(counts) < len(measures) or dimensions:
            measures = [name for name in measures if name not in counts]
    many = re.search(r"\bhow many ([a-z-]+)", question, re.I)
    if many and any(not counts_rows(ref) and named_by(stems(many.group(1)), name_phrases(catalog, ref))
                    for ref in catalog.of_kind("fact", "measure", "derived")):
        # "How many employees does it have?" asks for a figure the data holds, not a count of
        # rows, nor every measure for want of one named.
        measures = [name for name in spoken_measures if not counts_rows(catalog.fields[name])]
    values: dict[str, tuple[object, ...]] = {name: tuple(names) for name, names in (found or {}).items()}
    currencies = named_currencies(question, catalog)
    vocabulary = _vocabulary(catalog)
    for name, listed in catalog.values.items():
        ref = catalog.fields[name]
        own = set(stems(ref.source.name.replace("_", " ")))
        # A word that is also a field's name ("announced" of announced_year, "securities",
        # "operating" of operating_income) names the value only where the question names its
        # dimension too.
        spoken = _speaks_of(said, catalog, ref, values=False)
        fields = frozenset() if spoken else vocabulary
        named = named_values(question, said, listed, ref.source.value_synonyms, own, fields,  # type: ignore[union-attr]
                             vocabulary)
        if not spoken:  # a bare number names no quarter ("more than one listing")
            named = [v for v in named if not isinstance(v, (int, float))]
        # A dimension of currency codes: the currencies the question names ("Swiss francs").
        named += [code for code in currencies if code in listed and code not in named]
        values[name] = tuple(named)
    _label_or_code(catalog, values)
    _within_longer(question, values)
    written = written_values(question)
    for ref in catalog.of_kind("dimension"):
        if ref.name in values or ref.source.entity or len(ref.exprs) != 1:  # type: ignore[union-attr]
            continue
        # A dimension of free text (a website, a tracking number): only a value the question
        # writes out (a small model otherwise fills in one of its own), and where the question
        # does not name the dimension, only a code ("MCG24002742", not "EBITDA").
        spoken = _speaks_of(said, catalog, ref, values=False)
        values[ref.name] = tuple(w for w in written if spoken or (re.search(r"\d", w) and re.search(r"[A-Za-z]", w)))
    # "Which bank ...", "each automaker": a value named as a noun speaks of the rows it
    # describes (companies, by their industry): their name may be shown, and after "each",
    # is one row each.
    labels = _labels_described(catalog, [name for name, named in values.items() if named])
    each: list[str] = []
    for m in _WHICH.finditer(question):
        for name, label in labels.items():
            if named_values(m.group(2), stems(m.group(2)), values[name]):
                if label not in dimensions:
                    dimensions.append(label)
                if m.group(1).lower() not in ("which", "what") and label not in each:
                    each.append(label)
    filters = [ref.name for ref in catalog.of_kind("filter") if _speaks_of(said, catalog, ref)]
    numbers = stated_numbers(question)
    top = top_n(question)
    if top is not None:  # "the three largest deals": three rows, not a value of three
        numbers = [n for n in numbers if n != top]
    years = {int(y) for y in _YEAR.findall(question)}
    if _LOSS_WORDS.search(question):
        numbers.append(0.0)
    return Terms(
        select=tuple(dimensions + measures),
        filters=tuple(filters),
        values=values,
        years=tuple(int(y) for y in _YEAR.findall(question)),
        numbers=tuple(dict.fromkeys(numbers)),
        currencies=tuple(currencies),
        scales=tuple(named_scales(question)),
        ranks=ranks(question),
        direction=direction(question),
        compares=bool(_COMPARING.search(question)),
        negates=bool(_NEGATING.search(question)),
        changes=bool(_CHANGING.search(question)),
        percent=bool(re.search(r"\bpercent\w*|%", question, re.I)),
        per=averaged_over(question, catalog),
        grows=bool(_CHANGING.search(re.sub(r"\b(compar\w*|versus|vs)\b", " ", question, flags=re.I))),
        top=top,
        reports=bool(re.search(r"\breport\w*", question, re.I)),
        year_ranges=year_ranges(question),
        counted=tuple(name for name in measures if name in asked_counts),
        grouped=tuple(dict.fromkeys([*grouped(question, catalog, dimensions), *each])),
        measures=spoken_measures,
        dated=dated(question),
        one=ranks(question) and bool(_ONE.search(question)) and not _question_ints(question) - years - {1}
        and not _PLURAL_ASKED.search(question),
    )


def _label_or_code(catalog: Catalog, values: dict[str, tuple[object, ...]]) -> None:
    """A status named "closed" is the label Closed and the code CLOSED of one table: offered
    once, as the first of its dimensions (a small model given both filled its filters with
    copies of the code until the limit, leaving out a filter the question states)."""
    def plain(v: object) -> str:
        return re.sub(r"[\W_]+", "", str(v)).lower()

    seen: dict[tuple[str, frozenset[str]], str] = {}
    for name, named in values.items():
        ref = catalog.fields[name]
        if not named or name not in catalog.values or ref.via or any(isinstance(v, (int, float)) for v in named):
            continue  # a name entity linking found may be a company's and its buyer's
        key = (ref.table, frozenset(plain(v) for v in named))
        if key in seen:
            values[name] = ()
        else:
            seen[key] = name


def _within_longer(question: str, values: dict[str, tuple[object, ...]]) -> None:
    """A value the question writes only inside a longer value of another field names nothing
    ("at Krakow Plant" is a site, not also the site type Plant): the words of a name name
    nothing else."""
    text = question.lower()
    spans: dict[tuple[str, object], list[tuple[int, int]]] = {}
    for name, named in values.items():
        for value in named:
            if isinstance(value, str) and value.strip():
                spans[(name, value)] = [(m.start(), m.end()) for m in
                                        re.finditer(rf"(?<!\w){re.escape(value.lower())}(?!\w)", text)]
    others = [(s, e, name) for (name, _), found in spans.items() for s, e in found]
    for name, named in values.items():
        kept = []
        for value in named:
            own = spans.get((name, value), [])
            if own and all(any(s2 <= s1 and e1 <= e2 and e2 - s2 > e1 - s1 and other != name
                               for s2, e2, other in others) for s1, e1 in own):
                continue
            kept.append(value)
        if len(kept) < len(named):
            values[name] = tuple(kept)


def counted(question: str, catalog: Catalog) -> list[str]:
    """The count measures a question asks for by what they count: "how many companies",
    "the number of deals" (company_count, deal_count), not "how many employees" (a number
    the data holds). Of several, those that name the most of what it counts, its last word
    first: "how many work orders" counts work orders, not orders of any kind; "how many
    customer invoices" counts invoices, not customers."""
    asked = [m.group(1) for m in re.finditer(r"\b(?:how many|number of|count)((?:\W+\w+){1,3})", question, re.I)]
    things = {_stem(word) for phrase in asked for word in re.findall(r"[A-Za-z]+", phrase)
              if word.lower() not in _GENERIC}
    heads = {_stem(head) for head in map(_thing_counted, asked) if head}
    said = stems(question)
    for fact in catalog.of_kind("fact"):
        # "How many people work at X": a number the data holds (a phrase that ends in what is
        # counted: "order value" is no number of orders).
        phrases = [p for p in name_phrases(catalog, fact) if not heads or _stem(p.split()[-1]) in heads]
        if named_by(said, phrases) and any(stems(p) & things for p in phrases):
            return []
    found: dict[str, tuple[bool, int]] = {}
    for ref in catalog.of_kind("measure"):
        if not counts_rows(ref):
            continue
        words = stems(" ".join([ref.source.name.replace("_", " "), ref.table.replace("_", " "), *ref.synonyms]))
        if things & words:
            found[ref.name] = (bool(heads & words), len(things & words))
    best = max(found.values(), default=None)
    return [name for name, score in found.items() if score == best]


# The words that end what a count counts: "how many sales orders [in] ...", "[are] closed".
_AFTER_COUNTED = frozenset("""a an the in on at of for from to by with without per each every that which who whose
    where when are is was were be been being do does did have has had there their its it this these those
    than more fewer less""".split())


def _thing_counted(phrase: str) -> str:
    """The last word of what a count counts: "sales orders" of " sales orders in the
    category"; "" when none."""
    kept: list[str] = []
    for word in re.findall(r"[A-Za-z]+", phrase):
        if word.lower() in _AFTER_COUNTED:
            break
        kept.append(word)
    return kept[-1] if kept else ""


def grouped(question: str, catalog: Catalog, offered: Sequence[str]) -> tuple[str, ...]:
    """The dimensions among `offered` a question asks for one row of each ("in each year",
    "for every sector", "by region"): named by the words after each, every, per or by."""
    found: list[str] = []
    for m in _EACH.finditer(question):
        before = re.findall(r"[A-Za-z]+", question[:m.start()])
        if m.group(0).lower().startswith("by") and before and before[-1].lower().endswith("ed") \
                and before[-1].lower() != "grouped":
            continue  # "ordered by customers in Germany": who ordered, not one row per customer
        said = stems(m.group(1))
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", m.group(1))}
        for name in offered:
            ref = catalog.fields[name]
            if ref.kind not in ("dimension", "time") or name in found:
                continue
            grain = ref.grain or ("year" if ref.kind == "time" and ref.source.type == "year" else None)  # type: ignore[union-attr]
            if named_by(said, name_phrases(catalog, ref)) or (grain and grain in words):
                found.append(name)
    return tuple(found)


def _labels_described(catalog: Catalog, names: Sequence[str]) -> dict[str, str]:
    """For each dimension in `names` (a company's industry), the name of the entity its
    values describe: the label of the nearest table whose many-to-one relationships reach
    the dimension's table (company, for companies -> industries)."""
    graph = catalog.graph
    entities = [ref for ref in catalog.of_kind("dimension") if ref.source.entity and not ref.via]  # type: ignore[union-attr]
    found: dict[str, str] = {}
    for name in names:
        ref = catalog.fields[name]
        if ref.kind != "dimension" or ref.source.entity or ref.via:  # type: ignore[union-attr]
            continue
        reach = [(nx.shortest_path_length(graph, e.table, ref.table), e.name) for e in entities
                 if e.table != ref.table and nx.has_path(graph, e.table, ref.table)]
        if reach:
            found[name] = min(reach)[1]
    return found


_PERIODS = {"daily": "day", "weekly": "week", "monthly": "month", "quarterly": "quarter", "yearly": "year",
            "annual": "year", "annually": "year"}


def averaged_over(question: str, catalog: Catalog) -> tuple[str, ...]:
    """The fields a question averages a measure over: "average quarterly revenue", "revenue
    per month on average" (the fields of that period: fiscal_quarter, booked_month)."""
    grains = [_PERIODS[w.lower()] for w in re.findall(r"\b(?:average|mean|typical)\s+(daily|weekly|monthly|quarterly|"
                                                       r"yearly|annual|annually)\b", question, re.I)]
    grains += [w.lower() for w in re.findall(r"\b(?:average|mean|on average)\b.*\bper\s+(day|week|month|quarter|year)\b",
                                             question, re.I)]
    grains += [w.lower() for w in re.findall(r"\bper\s+(day|week|month|quarter|year)\b.*\bon average\b", question, re.I)]
    found = []
    for grain in dict.fromkeys(grains):
        for ref in catalog.of_kind("dimension", "time"):
            year = ref.kind == "time" and ref.source.type == "year"  # type: ignore[union-attr]
            if ref.grain == grain or (grain == "year" and year) or \
                    (ref.kind == "dimension" and grain in ref.source.name.split("_")):
                found.append(ref.name)
    return tuple(dict.fromkeys(found))


def dated(question: str) -> frozenset[str]:
    """What a question's dates name below a year: a quarter ("Q2", "second quarter"), a month
    ("June 2024"), a day ("30 June 2023", "2023-06-30")."""
    found = set()
    if re.search(r"\bq[1-4]\b|\bquarter|-q[1-4]\b", question, re.I):
        found.add("quarter")
    if re.search(rf"\b{_MONTH}|\b\d{{4}}-\d{{2}}\b", question, re.I):
        found.add("month")
    if re.search(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|\b{_MONTH}\w*\.?\s+\d{{1,2}}\b|"
                 r"\b\d{4}-\d{2}-\d{2}\b", question, re.I):
        found.add("day")
    return frozenset(found)


def direction(question: str) -> str | None:
    """"asc" when the question ranks only by words for the low end ("lowest", "oldest") or
    lists in alphabetical order, "desc" for the high end ("highest", "most") or a reverse
    alphabetical order; None for both or neither."""
    if re.search(r"\balphabetic\w*|\bA-Z\b|\bby name\b", question, re.I):
        return "desc" if re.search(r"\b(reverse|descending|Z-A)\b", question, re.I) else "asc"
    low, high = bool(_ASCENDING.search(question)), bool(_DESCENDING.search(question))
    return None if low == high else "asc" if low else "desc"


def top_n(question: str) -> int | None:
    """How many rows a ranking asks for, where it says: "top 5", "the three largest deals",
    "which two companies earned the most"; None without a ranking or a count of rows."""
    if not ranks(question):
        return None
    number = r"(\d{1,4}|" + "|".join(w for w in _NUMBER_WORDS if w not in ("zero", "one")) + ")"
    superlative = rf"(?:{_SUPERLATIVE}|most|least|fewest|best|worst)\b"
    for pattern in (rf"\b(?:top|bottom|first|last)\s+{number}\b(?!\s*(?:%|percent|thousand|million|billion))",
                    rf"\b{number}\s+(?:[a-z-]+\s+){{0,3}}?{superlative}",
                    rf"^\W*(?:which|what|list|name|show|find|give)\s+(?:the\s+)?{number}\s+[a-z]"):
        m = re.search(pattern, question, re.I)
        if m:
            text = m.group(1).lower()
            value = int(text) if text.isdigit() else _NUMBER_WORDS[text]
            if not _YEAR.fullmatch(text) and 1 < value <= 1000:
                return value
    return None


def year_ranges(question: str) -> tuple[tuple[int, int], ...]:
    """The spans of years a question states: "from 2019 to 2023", "fiscal 2019-2023"."""
    return tuple((int(a), int(b)) for a, b in _YEAR_RANGE.findall(question) if int(a) < int(b))


def area_words(catalog: Catalog) -> frozenset[str]:
    """The words that begin the names of at least `AREA_MIN` logical tables (`sls` of
    `sls_order`, `sls_order_line`, ...; `ref` of the reference tables): a warehouse's codes for
    its subject areas. Computed once per catalog."""
    if "area_words" not in catalog.derived:
        first = Counter(t.name.split("_")[0].lower() for t in catalog.model.tables if "_" in t.name)
        catalog.derived["area_words"] = frozenset(w for w, n in first.items() if n >= AREA_MIN)
    return catalog.derived["area_words"]  # type: ignore[return-value]


def name_phrases(catalog: Catalog, ref: FieldRef) -> list[str]:
    """The phrases a question may name a field by: its name, its synonyms, and where a model
    has subject areas, its name without the area's code (`rsk_incident_count` is also
    "incident count": a question says "compliance incidents", never "rsk")."""
    name = ref.source.name.replace("_", " ")
    phrases = [name, *ref.synonyms]
    codes = area_words(catalog)
    if len(codes) >= 2:
        plain = " ".join(w for w in name.split() if w.lower() not in codes)
        if plain != name and stems(plain):
            phrases.append(plain)
    return phrases


def counts_rows(ref: FieldRef) -> bool:
    return ref.kind == "measure" and bool(ref.exprs) and isinstance(ref.exprs[0], exp.Count)


def _vocabulary(catalog: Catalog) -> frozenset[str]:
    """The words of every field's and logical table's name, whole (singular): "industry" is
    one, "Industrials" (a sector) is not. Computed once per catalog."""
    if "vocabulary" not in catalog.derived:
        names = [ref.source.name for ref in catalog.fields.values()] + [t.name for t in catalog.model.tables]
        catalog.derived["vocabulary"] = frozenset(_singular(w) for name in names for w in name.split("_") if len(w) > 2)
    return catalog.derived["vocabulary"]  # type: ignore[return-value]


def _singular(word: str) -> str:
    word = word.lower()
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


# -- fields ------------------------------------------------------------------------------------


def _stem(word: str) -> str:
    """A crude stem, enough to tell "headcounts" is "headcount" and "statuses" "status"."""
    word = word.lower()
    if word.endswith("ies") and len(word) > 5:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "ches", "shes", "uses")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        word = word[:-1]
    elif word.endswith("ing") and len(word) > 6:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 5:
        word = word[:-2]
    return word[:6]


def stems(text: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[A-Za-z]+", text) if w.lower() not in _GENERIC and len(w) > 2}


def named_by(said: set[str], phrases: Sequence[str]) -> bool:
    """Every word of one of the phrases is in the question ("company type": both words)."""
    return any(words and words <= said for words in (stems(p) for p in phrases))


def _speaks_of(said: set[str], catalog: Catalog, ref: FieldRef, values: bool = True) -> bool:
    """Whether the question names the field: by its name, a synonym or (with `values`) one of
    its values that is more than words of the model's own names (the status "Announced" is
    not spoken of by "announced in 2023", which speaks of announced_year)."""
    phrases = name_phrases(catalog, ref)
    if ref.grain is not None:  # "booked in each month" speaks of booked_date's month
        phrases.append(re.sub(r"\b(date|time|timestamp|datetime|at|on)\b", " ", phrases[0]))
    if values:
        vocabulary = _vocabulary(catalog)
        phrases += [str(v) for v in catalog.values.get(ref.name, ())
                    if not all(_singular(w) in vocabulary for w in re.findall(r"[A-Za-z]+", str(v)))]
    if not named_by(said, phrases):
        return False
    return ref.grain is None or named_by(said, [ref.grain, f"{ref.grain}ly", "annual" if ref.grain == "year" else ""])


def _aggregated(question: str, said: set[str], catalog: Catalog, ref: FieldRef) -> bool:
    """An aggregated fact (avg_volume): its fact is named, and so is its aggregation."""
    if not named_by(said, name_phrases(catalog, ref)):
        return False
    words = _AGGREGATION_WORDS[ref.aggregation or "sum"]
    return any(re.search(rf"\b{w}\b", question, re.I) for w in words)


def ranks(question: str) -> bool:
    """Whether the question asks for rows ranked, ordered or cut to the top few."""
    return bool(_RANKING.search(question))


# -- values ------------------------------------------------------------------------------------


def named_values(question: str, said: set[str], values: Sequence[object],
                 synonyms: Mapping[str, Sequence[str]] | None = None, own: set[str] = frozenset(),
                 fields: frozenset[str] = frozenset(), vocabulary: frozenset[str] = frozenset()) -> list[object]:
    """The values of a small dimension a question names: by the value's most telling word
    (the one fewest of the values share: "Toronto" of "Toronto Stock Exchange"; never a word of
    the dimension's own name, `own`: "Company" of "Private Company" as a company type),
    matched on its first letters ("Japanese" names Japan), or by one of its synonyms. A word
    among `fields` (the names of the model's fields) tells nothing; a question's word in
    `vocabulary` names its field, not a value ("customers" does not name "Customs Clearance")."""
    every = {v: [w for w in re.findall(r"[A-Za-z]+", str(v)) if w.lower() not in _GENERIC and _stem(w) not in own]
             for v in values}
    words = {v: [w for w in ws if _singular(w) not in fields] for v, ws in every.items()}
    # Rarity among all the words: with "Financial" left out (a field's word), "Chief" does not
    # tell Chief Financial Officer from the other chiefs.
    counts = Counter(w.lower() for ws in every.values() for w in set(ws))
    asked = [w for w in re.findall(r"[A-Za-z]+", question.lower()) if len(w) >= 4 and _singular(w) not in vocabulary]
    named_fields = [_singular(w) for w in re.findall(r"[A-Za-z]+", question) if _singular(w) in vocabulary]
    if named_fields:
        plain = stems(" ".join(w for w in re.findall(r"[A-Za-z]+", question) if _singular(w) not in vocabulary))

        def says(word: str) -> bool:  # "quarter" says "Quarterly"; "customers" not "Customs"
            stem = _stem(word)
            return stem in plain or any(_stem(f) == stem and word.lower().startswith(f) for f in named_fields)
    else:
        def says(word: str) -> bool:
            return _stem(word) in said
    lowered = question.lower()
    named = []
    for value in values:
        if isinstance(value, (int, float)):
            if value in _question_ints(question):
                named.append(value)
            continue
        own = words[value]
        rare = min((counts[w.lower()] for w in every[value]), default=0)
        telling = [w for w in own if counts[w.lower()] == rare]
        if any(says(w) or _begins(w.lower(), asked) for w in telling):
            named.append(value)
        elif any(re.search(rf"(?<!\w){re.escape(s.lower())}(?!\w)", lowered) for s in (synonyms or {}).get(str(value), ())):
            named.append(value)
    return named


def _begins(word: str, asked: Sequence[str]) -> bool:
    """A question's word made from `word` ("Japanese" from Japan, "Peruvian" from Peru): it
    begins with the word's first five letters (four of a word of five or fewer), never fewer
    ("Count" does not name "Counsel", nor "companies" "Completed"), and is at most four
    letters longer ("classified" does not name "Class B") and at most two shorter ("German"
    names Germany, "stock" does not name "Nasdaq Stockholm")."""
    if len(word) < 4:
        return False
    head = word[:5] if len(word) > 5 else word[:4]
    # "highest" does not name the priority High, nor "larger" the size Large.
    return any(w.startswith(head) and len(word) - 2 <= len(w) <= len(word) + 4
               and w not in (word + "est", word + "er", word + "st", word + "r") for w in asked)


def written_values(question: str) -> tuple[str, ...]:
    """The values a question writes out for a field of free text: what it quotes, and words
    that are not prose ("www.example.com", "MCG24002742", "ZELL")."""
    quoted = re.findall(r"\"([^\"]{1,80})\"|“([^”]{1,80})”|(?<!\w)'([^']{1,80})'(?!\w)", question)
    found = [part for parts in quoted for part in parts if part.strip()]
    for word in re.findall(r"[\w.@/:+-]+", question):
        word = word.strip(".:-")
        if re.fullmatch(r"[\d.,]+", word) or len(word) < 2 or len(word) > 80:
            continue
        if re.search(r"\d|[@/]\w|\w{2}\.\w{2}", word) or re.fullmatch(r"[A-Z][A-Z0-9]{2,}", word):
            found.append(word)
    return tuple(dict.fromkeys(found))


def _question_ints(question: str) -> set[int]:
    found = {int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", question)}
    found |= {n for w, n in {**_NUMBER_WORDS, **_ORDINALS}.items() if re.search(rf"\b{w}\b", question, re.I)}
    return found


def stated_numbers(question: str) -> list[float]:
    """The numbers a question states, in figures or words, each also at its scale ("one
    trillion": 1 and 1e12, "200 million": 200 and 2e8); years are not among them (they are
    the years of Terms)."""
    found: list[float] = []
    for text, unit in _NUMBER.findall(question):
        value = float(text.replace(",", ""))
        if not unit and _YEAR.fullmatch(text):
            continue  # a year is a period, compared as one, not a number to compare a measure with
        found.append(value)
        scale = _SCALE_WORDS.get(unit.lower().rstrip("s")) if unit else None
        if scale:
            found.append(value * scale)
    for word, unit in _WORD_NUMBER.findall(question):
        value = float(_NUMBER_WORDS[word.lower()])
        scale = _SCALE_WORDS.get(unit.lower().rstrip("s")) if unit else None
        found += [value, value * scale] if scale else [value]  # "more than one listing"
    return found


def named_scales(question: str) -> list[str]:
    """The scales a question names ("in millions", "bn")."""
    text = question.lower()
    words = {"thousands": r"\bthousands?\b", "millions": r"\bmillions?\b|\d\s*mn\b",
             "billions": r"\bbillions?\b|\d\s*bn\b", "trillions": r"\btrillions?\b|\d\s*tn\b"}
    return [scale for scale, pattern in words.items() if re.search(pattern, text)]


def named_currencies(question: str, catalog: Catalog) -> list[str]:
    """The currency codes a question names, by code or by a name the model gives it, in the
    order the question names them; the most specific name wins ("Canadian dollars" is CAD, not
    dollars)."""
    conv = catalog.model.currency
    if conv is None:
        return []
    text = question.lower()
    names = [(code, code) for code in catalog.currency_keys]
    names += [(code, name) for code, listed in conv.names.items() for name in listed]
    first: dict[str, int] = {}  # code -> where the question first names it
    taken: list[tuple[int, int]] = []
    for code, name in sorted(names, key=lambda cn: -len(cn[1])):
        pattern = re.escape(name.lower())
        if name[:1].isalnum():
            pattern = rf"(?<![\w$]){pattern}(?:s|es)?(?!\w)"
        for hit in re.finditer(pattern, text):
            if any(hit.start() < end and start < hit.end() for start, end in taken):
                continue
            taken.append((hit.start(), hit.end()))
            if code in catalog.currency_keys:
                first[code] = min(first.get(code, hit.start()), hit.start())
    return sorted(first, key=first.__getitem__)
