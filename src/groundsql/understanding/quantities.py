"""Numbers and units in a question, read deterministically with pint.

The model is bad at units (IESR's largest error class), so the numbers a question states are
read here, not by the model: "a fuel tank capacity of 60L" is 60 liter, "1,000 meters per
second" is 1000 m/s, "15%" is 15 percent, "6.5L/100km" is 6.5 liter per hundred km. Numbers
that are not measurements are kept but flagged by `role`: "ID 1" (id), "top 5" (limit),
"in 2023" (year), "4 cylinders" (count), a bare "0.3" (plain). An unknown unit word never
raises: the number is kept as a bare number. Ranges ("0-100") are skipped.

Units are read atom by atom (an alias from the rules, "square X", or one token pint knows)
joined by "/", "per", "·" or "*", never by spaces: pint reads "m/s at" as metres per
second times technical atmospheres, so handing it free text would invent units.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

import pint

from groundsql.understanding.rulebase import RuleBase, default_rules

Role = Literal["physical", "percent", "money", "count", "limit", "id", "year", "ordinal",
               "ratio", "plain"]


@dataclass(frozen=True)
class Quantity:
    """A number as the question states it.

    `value` is as written (multipliers such as "million" applied; a percentage stays 15, see
    `fraction`); `unit` is pint's name for the unit ("meter / second") or "" for a bare
    number; `dimensionality` is pint's ("[length] / [time]", "dimensionless") or "";
    `start`/`end` index `text` in the question; `label` is the phrase naming it ("wind
    speed"), "" when none was found; `supposed` marks a value the question changes a
    quantity to ("increased to 1000 kWh"), which no row stores."""

    text: str
    value: float
    unit: str = ""
    dimensionality: str = ""
    percent: bool = False
    start: int = 0
    end: int = 0
    role: Role = "plain"
    label: str = ""
    supposed: bool = False

    @property
    def physical(self) -> bool:
        """A measurement with a unit (not money, not a percentage, not an id or a year)."""
        return self.role == "physical"

    @property
    def fraction(self) -> float:
        """The value as a plain factor: 15% -> 0.15; other quantities unchanged."""
        return self.value / 100.0 if self.percent else self.value

    @property
    def name(self) -> str:
        """The label as an identifier for formulas ("wind speed" -> "wind_speed")."""
        name = re.sub(r"\W+", "_", self.label.lower()).strip("_")
        return f"q_{name}" if name[:1].isdigit() else name


# ------------------------------------------------------------------------------------------
# Patterns
# ------------------------------------------------------------------------------------------

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")

# Not inside a word or a model name (A320, R-22), not the end of a range (0-100).
_NUMBER = re.compile(r"""
    (?<![\w.$€£])(?<![A-Za-z]-)(?<!\d[-–])
    (?P<currency>[$€£])?
    (?P<sign>[-−])?
    (?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
    (?:[eE](?P<exp>[-+]?\d{1,3}))?
    (?:\s*[×x*·]\s*10\s*(?:\^|\*\*)\s*(?P<pow>[-+−]?\d{1,3})
      |\s*[×x*·]\s*10(?P<sup>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}))?
    (?:\s+(?P<scale>thousand|million|billion|trillion)\b)?
    """, re.VERBOSE)
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_MONEY_SUFFIX = re.compile(r"(?P<s>k|K|M|bn|B)(?![A-Za-z])")
_MONEY_SCALES = {"k": 1e3, "K": 1e3, "M": 1e6, "bn": 1e9, "B": 1e9}

_RANGE_REST = re.compile(r"\s*[-–]\s*\d[\d,]*(?:\.\d+)?(?![\d.])")
_RATIO_REST = re.compile(r":\s?\d+(?:\.\d+)?(?![\d:])")
_ORDINAL_REST = re.compile(r"(?:st|nd|rd|th)\b")
_DECADE_REST = re.compile(r"'?s\b")

_GAP = re.compile(r"[ \t\u00a0\u202f]{0,3}")
_HYPHEN = re.compile(r"-(?=[A-Za-z])")  # "a 2.0-liter engine", "23-year-old"
_SEPARATOR = re.compile(r"[ \t]*(?P<op>/)[ \t]*|[ \t]+(?P<per>per)[ \t]+|[ \t]*(?P<times>[·⋅*])[ \t]*")
_POWER_WORD = re.compile(r"(?P<w>square|sq\.?|cubic)[ \t]+", re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-zµμΩ°%][A-Za-zµμΩ°]*(?:[²³¹⁻]+|\^-?\d|\*\*-?\d|[23](?![\w.]))?(?!\w)")

_ID_BEFORE = re.compile(r"(?:\b(?:[A-Za-z]\w*_)?id|#|\bnumber|\bno\.)\s*(?:of|=|:|is|equals?)?\s*$",
                        re.IGNORECASE)
_LIMIT_BEFORE = re.compile(r"\b(?:top|bottom|first|last|best|worst|highest|lowest|leading)\s+$",
                           re.IGNORECASE)
_YEAR_BEFORE = re.compile(r"\b(?:in|since|from|during|until|till|by|before|after|between|year|"
                          r"years|fiscal|fy|compared\s+(?:to|with))\s+$", re.IGNORECASE)
_YEAR_JOIN = re.compile(r"\b(?:and|or|to|through)\s+$", re.IGNORECASE)
_YEAR_AFTER = re.compile(r"\s*(?:season|model\s+year|fiscal|financial|census|edition|"
                         r"olympics|championship|grand\s+prix)\b", re.IGNORECASE)
_COUNT_AFTER = re.compile(r"\s+(?:(?P<these>of\s+(?:these|those|them|the|its|their|which)\b)"
                          r"|(?P<w1>[A-Za-z][A-Za-z-]*)(?:\s+(?P<w2>[A-Za-z][A-Za-z-]*))?)")
_NOT_PLURAL = frozenset({"this", "thus", "plus", "less", "was", "has", "does", "its", "always",
                         "perhaps", "across", "unless", "whereas", "besides", "towards", "as",
                         "is", "his", "hers", "ours", "yours", "theirs", "respectively"})

# Words that end a label looking backwards, and words between a label and its number.
_CONNECTORS = frozenset({"of", "is", "was", "are", "were", "be", "equals", "equal", "at", "to",
                         "by", "about", "approximately", "around", "roughly", "nearly", "exactly",
                         "only", "just", "set", "fixed", "estimated", "measured", "rated",
                         "priced", "valued", "totaling", "totalling", "reaching", "reaches",
                         "becomes", "increased", "decreased", "reduced", "raised", "changed",
                         "increases", "decreases", "grows", "drops", "falls", "rises", "=", ":"})
# Connectors that make the number a supposed new value, not what the data holds.
_CHANGES = frozenset({"becomes", "increased", "decreased", "reduced", "raised", "changed", "increases",
                      "decreases", "grows", "drops", "falls", "rises"})
_STOPS = frozenset("""a an the this that these those its their his her our your my it they
    with and or but has have had is was are were be been when if what which who whose where
    how each every per in on for from by to as assuming given known suppose supposing that
    than all any some both certain while whereas respectively then also multiplied divided
    times plus minus""".split())
_ARTICLES = frozenset({"a", "an", "the", "its", "their", "this", "that"})


# ------------------------------------------------------------------------------------------
# Extraction
# ------------------------------------------------------------------------------------------


def extract_quantities(question: str, rules: RuleBase | None = None) -> list[Quantity]:
    """Every number in `question` with its unit and role, in order of appearance."""
    rules = rules or default_rules()
    found: list[Quantity] = []
    pos = 0
    while (match := _NUMBER.search(question, pos)) is not None:
        quantity, pos = _read(question, match, rules, found)
        if quantity is not None:
            found.append(quantity)
    return found


def _read(text: str, match: re.Match[str], rules: RuleBase,
          before: list[Quantity]) -> tuple[Quantity | None, int]:
    """The quantity at `match` (None to skip it) and where reading continues."""
    start, end = match.start(), match.end()
    value = _number_value(match)
    if value is None:
        return None, end
    if (rest := _RANGE_REST.match(text, end)) is not None:
        return None, rest.end()  # ranges are out of scope: skip both ends
    if (rest := _RATIO_REST.match(text, end)) is not None:
        second = float(rest.group().lstrip(": "))
        ratio = value / second if second else value
        return _make(text, start, rest.end(), ratio, role="ratio"), rest.end()
    if (rest := _ORDINAL_REST.match(text, end)) is not None:
        return _make(text, start, rest.end(), value, role="ordinal"), rest.end()

    floor = before[-1].end if before else 0  # a label never reaches over an earlier number
    preceding = text[max(0, start - 40):start]
    whole = match["digits"].isdigit() and not (match["exp"] or match["pow"] or match["sup"]
                                               or match["scale"])
    if match["currency"] is None:
        if _ID_BEFORE.search(preceding):
            return _make(text, start, end, value, role="id"), end
        if _LIMIT_BEFORE.search(preceding):
            return _make(text, start, end, value, role="limit"), end
        if whole and len(match["digits"]) == 4 and (rest := _DECADE_REST.match(text, end)):
            return _make(text, start, rest.end(), value, role="year"), rest.end()

    unit: pint.Unit | None = None
    if match["currency"] is not None:
        if (suffix := _MONEY_SUFFIX.match(text, end)) is not None and not match["scale"]:
            value *= _MONEY_SCALES[suffix["s"]]
            end = suffix.end()
        unit = rules.parse_unit(match["currency"])
        per, per_end = _read_unit(text, end, rules, leading_per=True)
        if unit is None:  # rules without this currency: still money, just without a unit
            return _make(text, start, end, value, role="money", label=_label(text, floor, start)), end
        if per is not None:
            unit, end = unit * per, per_end
    else:
        unit, end = _read_unit(text, end, rules)

    if unit is not None:
        dimensionality = str(unit.dimensionality)
        if unit == rules.registry.percent:
            role: Role = "percent"
        elif "[currency" in dimensionality:
            role = "money"
        else:
            role = "physical"
        return _make(text, start, end, value, str(unit), dimensionality, role=role,
                     label=_label(text, floor, start)), end

    following = text[end:end + 60]
    label = _label(text, floor, start)
    previous_year = bool(before) and before[-1].role == "year"
    if whole and 1000 <= value <= 2100 and "," not in match["digits"] and (
            _YEAR_BEFORE.search(preceding) or _YEAR_AFTER.match(following)
            or (previous_year and _YEAR_JOIN.search(preceding)) or label.endswith("year")):
        return _make(text, start, end, value, role="year", label=label), end
    if (noun := _count_noun(following, rules)) is not None:
        return _make(text, start, end, value, role="count", label=label or noun), end
    return _make(text, start, end, value, label=label), end


def _make(text: str, start: int, end: int, value: float, unit: str = "", dimensionality: str = "",
          *, role: Role = "plain", label: str = "") -> Quantity:
    return Quantity(text=text[start:end], value=value, unit=unit, dimensionality=dimensionality,
                    percent=role == "percent", start=start, end=end, role=role, label=label,
                    supposed=_supposed(text, start))


def _words_before(text: str, floor: int, start: int) -> list[str]:
    """The words of the clause just before `start` (back to punctuation, `floor` or 100 characters)."""
    return re.findall(r"[\w'-]+|[=:]", re.split(r"[,;.!?()\n]", text[max(floor, start - 100):start])[-1])


def _supposed(text: str, start: int) -> bool:
    """The words just before the number change a quantity ("is increased to", "rises by")."""
    words = _words_before(text, 0, start)
    while words and words[-1].lower() in _CONNECTORS:
        if words.pop().lower() in _CHANGES:
            return True
    return False


def _number_value(match: re.Match[str]) -> float | None:
    """The number a match writes, or None when it is not finite (1e999)."""
    value = float(match["digits"].replace(",", ""))
    if match["exp"]:
        value *= 10.0 ** int(match["exp"])
    power = match["pow"] or (match["sup"] or "").translate(_SUPERSCRIPT)
    if power:
        value *= 10.0 ** int(power.replace("−", "-"))
    if match["scale"]:
        value *= _SCALES[match["scale"].lower()]
    if match["sign"]:
        value = -value
    return value if math.isfinite(value) else None


# ------------------------------------------------------------------------------------------
# Units
# ------------------------------------------------------------------------------------------


def _read_unit(text: str, pos: int, rules: RuleBase, *,
               leading_per: bool = False) -> tuple[pint.Unit | None, int]:
    """The unit written at `pos` and where it ends; (None, pos) when there is none.
    `leading_per` reads only a "per X" / "/X" tail (after "$1.2": "per liter")."""
    if leading_per:
        unit: pint.Unit = rules.registry.dimensionless
        end = pos
    else:
        gap = _HYPHEN.match(text, pos) or _GAP.match(text, pos)
        assert gap is not None  # _GAP matches the empty string
        atom = _atom(text, gap.end(), rules)
        if atom is None:
            return None, pos
        unit, end = atom
    joined = False
    while (sep := _SEPARATOR.match(text, end)) is not None:
        atom = _atom(text, sep.end(), rules)
        if atom is None:
            break
        unit = unit * atom[0] if sep["times"] else unit / atom[0]
        end, joined = atom[1], True
    if leading_per and not joined:
        return None, pos
    return unit, end


def _atom(text: str, pos: int, rules: RuleBase) -> tuple[pint.Unit, int] | None:
    """One unit at `pos`: an alias, "square/cubic X", or one token pint knows."""
    if (alias := rules.alias_pattern.match(text, pos)) is not None:
        unit = rules.parse_unit(alias.group())
        if unit is not None:
            return unit, alias.end()
    if (word := _POWER_WORD.match(text, pos)) is not None:
        inner = _atom(text, word.end(), rules)
        if inner is None:
            return None
        return inner[0] ** (3 if word["w"].lower() == "cubic" else 2), inner[1]
    token = _TOKEN.match(text, pos)
    if token is None or rules.is_not_unit(token.group()):
        return None
    written = token.group().replace("^", "**")
    if written[-1] in "23" and written[-2:-1].isalpha():
        written = f"{written[:-1]}**{written[-1]}"  # "m2" as people type m²
    unit = rules.parse_unit(written)
    return None if unit is None else (unit, token.end())


# ------------------------------------------------------------------------------------------
# Context: counts and labels
# ------------------------------------------------------------------------------------------


def _count_noun(following: str, rules: RuleBase) -> str | None:
    """The noun that makes a bare number a count ("4 cylinders"), or None."""
    match = _COUNT_AFTER.match(following)
    if match is None:
        return None
    if match["these"]:
        return ""
    first, second = (match["w1"] or "").lower(), (match["w2"] or "").lower()
    if first in rules.count_nouns:
        return first
    if second in rules.count_nouns and first not in _STOPS:
        return second
    if len(first) >= 4 and first.endswith("s") and first not in _NOT_PLURAL and first not in _STOPS:
        return first
    return None


def _label(text: str, floor: int, start: int) -> str:
    """The phrase naming the number just before it: "a wind speed of 15 m/s" -> "wind
    speed", "the length of the Brooklyn Bridge is" -> "length". "" when there is none."""
    words = _words_before(text, floor, start)
    connected = False
    while words and words[-1].lower() in _CONNECTORS:
        words.pop()
        connected = True
    if not connected:
        return ""
    label = _words_back(words)
    stop = len(words) - len(label)
    # "the length of the Brooklyn Bridge is": the name stops at "of (the)"; the label is before.
    if stop >= 1 and (words[stop - 1].lower() == "of" or (
            stop >= 2 and words[stop - 1].lower() in _ARTICLES and words[stop - 2].lower() == "of")):
        head = words[:stop - 1] if words[stop - 1].lower() == "of" else words[:stop - 2]
        label = _words_back(head) or label
    return " ".join(label).lower()


def _words_back(words: list[str]) -> list[str]:
    """Up to four trailing words before a stop word or a number."""
    label: list[str] = []
    for word in reversed(words):
        if word.lower() in _STOPS or word.lower() in _CONNECTORS or any(c.isdigit() for c in word):
            break
        label.insert(0, word)
        if len(label) == 4:
            break
    return label
