"""The rule base: units pint lacks, named quantities with their dimensions, and formulas.

IESR's largest error class is wrong units and formulas. A relation proposed for a question
("wind_load = 0.5 * air_density * wind_speed ** 2 * area") is checked here by pint's
dimensional analysis before anything is computed, and relations that cannot be right are
filtered out. The data lives in `rules.yaml` so a domain can extend it without code; it is
validated on load (pydantic for the shape, pint for every unit, dimension and formula), and
every error names the file, the line and the field.

A relation is text, "left = right" in the calculator's syntax (numbers, names, + - * / **,
sqrt and friends), or a `Relation`. Names resolve, in order, to: the caller's `symbols`
(a unit such as "kWh", a named quantity such as "energy", or an extracted `Quantity`), a
named quantity by name or word ("air_density" -> density), the same with leading words
dropped ("blade_kinetic_energy" -> kinetic energy -> energy).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

import pint
from pint.util import ParserHelper, UnitsContainer
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from groundsql.errors import ConfigError
from groundsql.understanding.expressions import CalculatorError, expression_names, run
from groundsql.yamlfile import Where, line_of, read_yaml

DEFAULT_RULES = Path(__file__).with_name("rules.yaml")

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]*$")]
Status = Literal["consistent", "inconsistent", "rescale", "unknown", "invalid"]


# ------------------------------------------------------------------------------------------
# The file format
# ------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    # Unknown keys are typos in a hand-written file; refuse them rather than ignore them.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Settings(_Strict):
    scale_tolerance: float = Field(default=1e-6, ge=0.0, le=1.0)
    unknown_names: Literal["accept", "reject"] = "accept"


class NamedQuantity(_Strict):
    dimension: str
    display: str
    # False: a number of this kind is computed with as written, not in `display` (a number
    # of years is a count of periods: 100 years of a yearly cost is 100, not 3.16e9 s).
    convert: bool = True
    units: tuple[str, ...] = ()
    words: tuple[str, ...] = ()


class Formula(_Strict):
    name: Identifier
    relation: str
    description: str = ""


class RulesFile(_Strict):
    version: Literal[1]
    settings: Settings = Settings()
    definitions: tuple[str, ...] = ()
    aliases: dict[str, str] = {}
    not_units: tuple[str, ...] = ()
    count_nouns: tuple[str, ...] = ()
    quantities: dict[Identifier, NamedQuantity]
    formulas: tuple[Formula, ...] = ()


# ------------------------------------------------------------------------------------------
# Relations and verdicts
# ------------------------------------------------------------------------------------------


class _HasUnit(Protocol):
    """Anything with a pint unit string, e.g. an extracted `Quantity` or a `CalcResult`."""

    @property
    def unit(self) -> str: ...


Symbol = str | _HasUnit


@dataclass(frozen=True)
class Relation:
    """`left = right`; `symbols` give names their units or named quantities."""

    left: str
    right: str
    symbols: Mapping[str, Symbol] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, symbols: Mapping[str, Symbol] | None = None) -> Relation:
        """Split "left = right" at its one `=` (a ValueError if there is not exactly one)."""
        parts = re.split(r"(?<![<>=!])=(?!=)", text)
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise ValueError(f"a relation is 'left = right' with one '=', got {text!r}")
        return cls(parts[0].strip(), parts[1].strip(), dict(symbols or {}))

    def __str__(self) -> str:
        return f"{self.left} = {self.right}"


@dataclass(frozen=True)
class Verdict:
    """Whether a relation's sides agree. `factor` is what the right side, computed with the
    symbols' units, must be multiplied by to be in the left side's unit (1 when it needs no
    conversion; only meaningful when symbols carry concrete units)."""

    ok: bool
    status: Status
    reason: str
    left: str = ""
    right: str = ""
    factor: float = 1.0


# ------------------------------------------------------------------------------------------
# The rule base
# ------------------------------------------------------------------------------------------


class RuleBase:
    """Validated rules plus the pint registry that knows their units (one per rule base:
    pint quantities from different registries cannot be combined)."""

    def __init__(self, data: RulesFile, registry: pint.UnitRegistry, source: Path) -> None:
        self.data = data
        self.registry = registry
        self.source = source

    # --- loading ------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path | None = None) -> RuleBase:
        """The rules in `path` (default: the packaged rules.yaml); a ConfigError naming the
        file, line and field of the first mistake."""
        source = Path(path) if path is not None else DEFAULT_RULES
        data, lines = read_yaml(source)

        def fail(where: Where, message: str) -> ConfigError:
            name = ".".join(str(p) for p in where) or "(top level)"
            return ConfigError(f"{source}:{line_of(lines, where)}: {name}: {message}")

        try:
            model = RulesFile.model_validate(data)
        except ValidationError as err:
            # A misspelt key also makes the real one "missing"; the misspelling is the news.
            errors = sorted(err.errors(), key=lambda e: e["type"] != "extra_forbidden")
            raise fail(tuple(errors[0]["loc"]), errors[0]["msg"]) from err
        registry = pint.UnitRegistry()
        for i, line in enumerate(model.definitions):
            try:
                registry.define(line)
            except Exception as err:  # pint raises several unrelated types here
                raise fail(("definitions", i), f"not a pint definition ({err})") from err
        rules = cls(model, registry, source)
        rules._validate(fail)
        return rules

    def with_settings(self, **changes: Any) -> RuleBase:
        """The same rules and registry with some settings changed (validated)."""
        try:
            settings = Settings.model_validate(self.data.settings.model_dump() | changes)
        except ValidationError as err:
            first = err.errors()[0]
            raise ConfigError(f"settings.{'.'.join(map(str, first['loc']))}: {first['msg']}") from err
        return RuleBase(self.data.model_copy(update={"settings": settings}), self.registry, self.source)

    def _validate(self, fail: Callable[[Where, str], ConfigError]) -> None:
        """Check with pint what pydantic cannot: units, dimensions, formulas."""
        for key, target in self.data.aliases.items():
            if self._pint_unit(target) is None:
                raise fail(("aliases", key), f"{target!r} is not a unit pint knows")
        owner: dict[str, str] = {}
        for name, spec in self.data.quantities.items():
            try:
                dimension = self.dimension(spec.dimension)
            except ValueError as err:
                raise fail(("quantities", name, "dimension"), str(err)) from err
            for where, text in [(("display",), spec.display)] + [
                    (("units", j), u) for j, u in enumerate(spec.units)]:
                unit = self.parse_unit(text)
                if unit is None:
                    raise fail(("quantities", name, *where), f"{text!r} is not a unit pint knows")
                if unit.dimensionality != dimension:
                    raise fail(("quantities", name, *where),
                               f"{text!r} is {unit.dimensionality}, not {spec.dimension}")
            for j, word in enumerate(spec.words):
                key = _normal(word)
                if key in owner and owner[key] != name:
                    raise fail(("quantities", name, "words", j),
                               f"{word!r} already names {owner[key]!r}; a word names one quantity")
                owner[key] = name
        for i, formula in enumerate(self.data.formulas):
            verdict = self.check_relation(formula.relation)
            if verdict.status != "consistent":
                raise fail(("formulas", i, "relation"), verdict.reason)

    # --- units --------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.data.settings

    @property
    def formulas(self) -> tuple[Formula, ...]:
        return self.data.formulas

    @property
    def quantities(self) -> Mapping[str, NamedQuantity]:
        return self.data.quantities

    @cached_property
    def _aliases(self) -> tuple[dict[str, str], dict[str, str]]:
        # A key with a capital matches exactly ("Nm" is not "nm"); lowercase keys any case.
        exact = {k: v for k, v in self.data.aliases.items() if k != k.lower()}
        folded = {k: v for k, v in self.data.aliases.items() if k == k.lower()}
        return exact, folded

    def alias(self, written: str) -> str | None:
        """The pint expression for a written unit the rules define, else None."""
        written = re.sub(r"\s+", " ", written.strip())
        exact, folded = self._aliases
        return exact.get(written) or folded.get(written.lower())

    @cached_property
    def alias_pattern(self) -> re.Pattern[str]:
        """One regex matching any alias at a position, longest first (Python's alternation
        takes the first alternative that matches, not the longest)."""
        parts = []
        for key in sorted(self.data.aliases, key=len, reverse=True):
            body = r"\s+".join(re.escape(w) for w in key.split())
            parts.append(f"(?i:{body})" if key == key.lower() else body)
        if not parts:
            return re.compile(r"(?!)")  # no aliases: never match (an empty group would)
        return re.compile("(?:" + "|".join(parts) + r")(?![A-Za-z0-9])")

    @cached_property
    def _not_units(self) -> tuple[frozenset[str], frozenset[str]]:
        exact = frozenset(w for w in self.data.not_units if w != w.lower())
        folded = frozenset(w for w in self.data.not_units if w == w.lower())
        return exact, folded

    def is_not_unit(self, word: str) -> bool:
        """Whether `word` after a number is English, not a unit (per `not_units`)."""
        exact, folded = self._not_units
        return word in exact or word.lower() in folded

    @cached_property
    def count_nouns(self) -> frozenset[str]:
        return frozenset(w.lower() for w in self.data.count_nouns)

    def _pint_unit(self, text: str) -> pint.Unit | None:
        try:
            unit = self.registry.parse_units(text)
        except Exception:  # pint raises many types for unparsable text; all mean "no unit"
            return None
        return unit if isinstance(unit, pint.Unit) else None

    def parse_unit(self, text: str) -> pint.Unit | None:
        """A unit written by a person or a rule ("rpm", "Nm", "L/100km", "kg/m³"), alias-aware;
        None if it is not one."""
        text = text.strip()
        if not text:
            return None
        if (target := self.alias(text)) is not None:
            return self._pint_unit(target)
        if "/" in text:
            # "L/100km": pint cannot read the whole, but each part is an alias or a unit.
            head, *rest = re.split(r"\s*/\s*", text)
            units = [self.parse_unit(p) for p in [head, *rest]]
            if all(u is not None for u in units) and units:
                result = units[0]
                for unit in units[1:]:
                    result = result / unit  # type: ignore[operator]
                return result
        return self._pint_unit(text)

    def dimension(self, text: str) -> UnitsContainer:
        """A dimension written like "[mass] / [length] ** 3" or "dimensionless"."""
        if text.strip() == "dimensionless":
            return UnitsContainer()
        helper = ParserHelper.from_string(text)
        if helper.scale != 1:
            raise ValueError(f"a dimension has no number in it: {text!r}")
        return self.registry.get_dimensionality(UnitsContainer(dict(helper)))

    # --- named quantities ---------------------------------------------------------------

    @cached_property
    def _words(self) -> dict[str, str]:
        words = {}
        for name, spec in self.data.quantities.items():
            words[_normal(name)] = name
            for word in spec.words:
                words.setdefault(_normal(word), name)
        return words

    def quantity_named(self, name: str) -> str | None:
        """The named quantity a name or phrase refers to, dropping leading words until one
        matches ("max_rotor_disk_loading" -> area_loading); None if none does."""
        words = _normal(name).split()
        for start in range(len(words)):
            if (found := self._words.get(" ".join(words[start:]))) is not None:
                return found
        return None

    @cached_property
    def _typical(self) -> list[tuple[str, pint.Unit]]:
        return [(name, unit) for name, spec in self.data.quantities.items()
                for unit in map(self.parse_unit, spec.units) if unit is not None]

    def kind_of(self, unit: str | pint.Unit) -> str | None:
        """The named quantity a unit measures: a typical unit first (N*m is torque, J is
        energy: both have one dimension), else the first quantity of that dimension."""
        parsed = self.parse_unit(unit) if isinstance(unit, str) else unit
        if parsed is None:
            return None
        for name, typical in self._typical:
            if typical == parsed:
                return name
        for name, spec in self.data.quantities.items():
            if self.dimension(spec.dimension) == parsed.dimensionality:
                return name
        return None

    def placeholder(self, symbol: Symbol) -> pint.Quantity | None:
        """A magnitude-1 quantity standing for `symbol` in a dimensional check: a named
        quantity in coherent base units (so formulas need no factors), a unit as written."""
        text = symbol if isinstance(symbol, str) else symbol.unit
        if not text:
            return self.registry.Quantity(1.0)
        if isinstance(symbol, str) and (named := self.data.quantities.get(symbol)) is not None:
            unit = self.parse_unit(named.display)
            assert unit is not None  # checked on load
            return self.registry.Quantity(1.0, self.registry.Quantity(1.0, unit).to_base_units().units)
        unit = self.parse_unit(text)
        if unit is None:
            named_as = self.quantity_named(text) if isinstance(symbol, str) else None
            return None if named_as is None else self.placeholder(named_as)
        if unit.dimensionality == UnitsContainer():
            # percent, turns: the calculator uses them as plain factors (15% -> 0.15), so a
            # check must not call their scale a missing conversion.
            return self.registry.Quantity(1.0)
        quantity = self.registry.Quantity(1.0, unit)
        try:
            quantity * 2.0
        except pint.OffsetUnitCalculusError:
            # °C cannot be multiplied; its dimension is what a check needs, so use kelvin.
            return self.registry.Quantity(1.0, quantity.to_base_units().units)
        return quantity

    # --- relations ----------------------------------------------------------------------

    def check_relation(self, relation: str | Relation,
                       symbols: Mapping[str, Symbol] | None = None) -> Verdict:
        """Whether the relation's two sides have the same dimension (and, when symbols carry
        concrete units, the same unit up to `settings.scale_tolerance`)."""
        try:
            rel = Relation.parse(relation, symbols) if isinstance(relation, str) else relation
            if symbols:
                rel = Relation(rel.left, rel.right, {**rel.symbols, **symbols})
            names = expression_names(rel.left) | expression_names(rel.right)
        except (ValueError, CalculatorError) as err:
            return Verdict(False, "invalid", str(err))
        concrete: dict[str, pint.Quantity] = {}
        base: dict[str, pint.Quantity] = {}
        unknown = []
        for name in sorted(names):
            symbol = rel.symbols.get(name)
            if symbol is None:
                symbol = self.quantity_named(name)
            value = None if symbol is None else self.placeholder(symbol)
            if value is None:
                unknown.append(name)
                continue
            concrete[name] = value
            base[name] = self.registry.Quantity(1.0, value.to_base_units().units)
        if unknown:
            # A side whose names are all known can still prove the relation wrong on its own
            # ("speed + time"); otherwise nothing can be said and the policy decides.
            for side in (rel.left, rel.right):
                if not expression_names(side) & set(unknown):
                    try:
                        run(side, concrete)
                    except CalculatorError as err:
                        if err.dimensional:
                            return Verdict(False, "inconsistent", str(err))
            accept = self.settings.unknown_names == "accept"
            return Verdict(accept, "unknown", f"no known dimension for {', '.join(unknown)}")
        try:
            left, right = run(rel.left, concrete), run(rel.right, concrete)
            left_b, right_b = run(rel.left, base), run(rel.right, base)
        except CalculatorError as err:
            status: Status = "inconsistent" if err.dimensional else "invalid"
            return Verdict(False, status, str(err))
        dims = [str(_dimensionality(left)), str(_dimensionality(right))]
        if dims[0] != dims[1]:
            return Verdict(False, "inconsistent",
                           f"{rel.left} is {dims[0]} but {rel.right} is {dims[1]}", *dims)
        factor = _ratio(right, left) / _ratio(right_b, left_b)
        if not math.isfinite(factor) or abs(factor - 1.0) > self.settings.scale_tolerance:
            return Verdict(False, "rescale",
                           f"same dimension ({dims[0]}), but in these units the right side "
                           f"must be multiplied by {factor:.6g}", *dims, factor)
        return Verdict(True, "consistent", f"both sides are {dims[0]}", *dims)

    def filter_relations(
            self, relations: Iterable[str | Relation], symbols: Mapping[str, Symbol] | None = None,
    ) -> list[tuple[str | Relation, Verdict]]:
        """The relations whose verdict is ok, each with its verdict (IESR: drop relations
        that fail the consistency check before they reach SQL)."""
        checked = [(r, self.check_relation(r, symbols)) for r in relations]
        return [(r, v) for r, v in checked if v.ok]

    def formulas_for(self, known: Iterable[str]) -> tuple[Formula, ...]:
        """The formulas whose right side uses only these named quantities (e.g. the kinds of a
        question's quantities): candidates for what the question asks to compute."""
        have = set(known)
        return tuple(f for f in self.formulas
                     if expression_names(Relation.parse(f.relation).right) <= have)

    def formulas_applying(self, question: str, quantities: Iterable[Any], limit: int = 3) -> tuple[Formula, ...]:
        """The formulas a question's quantities fit, for the prompt (IESR's rule base gives the
        model its formulas; the 1.5B model otherwise invents them: `Max_Gross_Weight *
        Max_Disk_Loading` for the lift of a rotor of stated disk area and disk loading).

        A formula fits when the question's numbers measure (by their units) two of its
        quantities and at most one of the others is neither measured nor named by one of its
        words ("gross weight", "wind speed"), or one, with every other named; of those, only the
        formulas measured most are kept (a word alone is weak evidence: "battery capacity"
        names a volume).
        """
        measured = {kind for q in quantities if getattr(q, "physical", False)
                    and (kind := self.kind_of(q.unit)) is not None}
        text = f" {_normal(question)} "
        named = {name for word, name in self._words.items() if f" {word} " in text}
        ranked = []
        for formula in self.formulas:
            relation = Relation.parse(formula.relation)
            kinds = (expression_names(relation.left) | expression_names(relation.right)) & set(self.data.quantities)
            unknown = kinds - measured - named
            fit = len(kinds & measured)
            if len(kinds) >= 2 and fit and len(unknown) <= 1 and (fit >= 2 or not unknown):
                ranked.append((fit, formula))
        best = max((fit for fit, _ in ranked), default=0)
        return tuple(formula for fit, formula in ranked if fit == best)[:limit]


@lru_cache(maxsize=1)
def default_rules() -> RuleBase:
    """The packaged rule base, loaded once (a pint registry takes a few hundred ms)."""
    return RuleBase.load()


# ------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------


def _normal(text: str) -> str:
    return " ".join(re.split(r"[\s_]+", text.strip().lower()))


def _dimensionality(value: Any) -> UnitsContainer:
    return value.dimensionality if isinstance(value, pint.Quantity) else UnitsContainer()


def _ratio(right: Any, left: Any) -> float:
    """right / left as a plain number, right converted to left's unit first."""
    unit = left.units if isinstance(left, pint.Quantity) else "dimensionless"
    if isinstance(left, pint.Quantity):
        left = left.magnitude
    if isinstance(right, pint.Quantity):
        right = right.to(unit).magnitude
    return float(right) / float(left) if left else math.inf
