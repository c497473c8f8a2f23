"""Tests of the understanding layer: quantity extraction, the rule base, the calculator.

Most cases are rows in the tables below (one loop each); phrasings follow LogicCat's
questions without copying any. Every row asserts something that a regression would break.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundsql.errors import ConfigError
from groundsql.schema import Column, Schema, Table
from groundsql.understanding import (
    CalcResult,
    CalculatorError,
    Quantity,
    RuleBase,
    bind_constants,
    columns_for,
    convert,
    default_rules,
    evaluate,
    extract_quantities,
    named_constants,
    drop_restated_filters,
    read_stored,
    semantic_state,
    sql_constants,
    sql_value,
    unstated_numbers,
)
from tests.conftest import BENCHMARKS, shared_file

# ------------------------------------------------------------------------------------------
# Extraction: question -> every quantity as (text, value, unit, role)
# ------------------------------------------------------------------------------------------

EXTRACTION: list[tuple[str, list[tuple[str, float, str, str]]]] = [
    ("A petrol car holds 60L and burns 6.5L/100km on the motorway.",
     [("60L", 60, "liter", "physical"), ("6.5L/100km", 6.5, "liter / hundred_kilometer", "physical")]),
    ("When the gauge shows 15% remaining, how far can it go?",
     [("15%", 15, "percent", "percent")]),
    ("Suppose a deck span of 100,000 meters and a gust of 1,000 meters per second.",
     [("100,000 meters", 100000, "meter", "physical"),
      ("1,000 meters per second", 1000, "meter / second", "physical")]),
    ("Take an air density of 1.225 kg/m³ and a frontal area of 2.5 m².",
     [("1.225 kg/m³", 1.225, "kilogram / meter ** 3", "physical"),
      ("2.5 m²", 2.5, "meter ** 2", "physical")]),
    ("A pack of 1000kWh gives a range of 1000km.",
     [("1000kWh", 1000, "kilowatt_hour", "physical"), ("1000km", 1000, "kilometer", "physical")]),
    ("The sails turn at 20 revolutions per minute while the engine idles at 800 rpm.",
     [("20 revolutions per minute", 20, "turn / minute", "physical"),
      ("800 rpm", 800, "turn / minute", "physical")]),
    ("It cruises at 120 km/h with a torque of 450 Nm and 300 hp.",
     [("120 km/h", 120, "kilometer / hour", "physical"), ("450 Nm", 450, "meter * newton", "physical"),
      ("300 hp", 300, "horsepower", "physical")]),
    ("A motor rated 250 N·m delivers 150 horsepower, or 5 HP at idle.",
     [("250 N·m", 250, "meter * newton", "physical"), ("150 horsepower", 150, "horsepower", "physical"),
      ("5 HP", 5, "horsepower", "physical")]),
    ("The cabin is kept at 21 °C and the coolant at 90℃.",
     [("21 °C", 21, "degree_Celsius", "physical"), ("90℃", 90, "degree_Celsius", "physical")]),
    ("List the cars of the manufacturer with ID 1 and show the top 5 models made in 2023.",
     [("1", 1, "", "id"), ("5", 5, "", "limit"), ("2023", 2023, "", "year")]),
    ("What is the braking distance of Car_ID 123 from the 2019 season?",
     [("123", 123, "", "id"), ("2019", 2019, "", "year")]),
    ("The rotor disc loading is 14 kilograms per square meter over 46.2 square meters.",
     [("14 kilograms per square meter", 14, "kilogram / meter ** 2", "physical"),
      ("46.2 square meters", 46.2, "meter ** 2", "physical")]),
    ("Research cost $200 million, fuel costs $1.2 per liter and the margin is 8%.",
     [("$200 million", 2e8, "US_dollar", "money"), ("$1.2 per liter", 1.2, "US_dollar / liter", "money"),
      ("8%", 8, "percent", "percent")]),
    ("Traffic reaches 5.1 × 10¹⁴ passengers; the blade spins at 1e12 revolutions per minute.",
     [("5.1 × 10¹⁴", 5.1e14, "", "count"),
      ("1e12 revolutions per minute", 1e12, "turn / minute", "physical")]),
    ("An engine with 4 cylinders, a 10:1 compression ratio and 0-100 time of 8 seconds.",
     [("4", 4, "", "count"), ("10:1", 10, "", "ratio"), ("8 seconds", 8, "second", "physical")]),
    ("The Robinson R-22 can lift 635 kg; a fleet of 500 of these models flies.",
     [("635 kg", 635, "kilogram", "physical"), ("500", 500, "", "count")]),
    ("It hauls 1,397,054 metric tons, or 600 tons a day, weighing 1,000,000 lb.",
     [("1,397,054 metric tons", 1397054, "metric_ton", "physical"),
      ("600 tons", 600, "metric_ton", "physical"), ("1,000,000 lb", 1e6, "pound", "physical")]),
    ("Gravity is 9.81 m/s², each box is 0.6m × 0.4m.",
     [("9.81 m/s²", 9.81, "meter / second ** 2", "physical"), ("0.6m", 0.6, "meter", "physical"),
      ("0.4m", 0.4, "meter", "physical")]),
    ("It uses 15 kWh per 100 km, or 500Wh/km at top speed, and drives 30 km per day.",
     [("15 kWh per 100 km", 15, "kilowatt_hour / hundred_kilometer", "physical"),
      ("500Wh/km", 500, "watt_hour / kilometer", "physical"),
      ("30 km per day", 30, "kilometer / day", "physical")]),
    ("A drag coefficient of 0.3 and 5 units in stock, at 5 at most, 12 foobars.",
     [("0.3", 0.3, "", "plain"), ("5", 5, "", "count"), ("5", 5, "", "plain"), ("12", 12, "", "count")]),
    ("Between 2019 and 2023 sales fell by -1.5% in the 3rd quarter.",
     [("2019", 2019, "", "year"), ("2023", 2023, "", "year"), ("-1.5%", -1.5, "percent", "percent"),
      ("3rd", 3, "", "ordinal")]),
    ("A 2.0-liter engine and a 23-year-old pilot; the model A320 is not a number.",
     [("2.0-liter", 2.0, "liter", "physical"), ("23-year", 23, "year", "physical")]),
]


@pytest.mark.parametrize("question, expected", EXTRACTION, ids=[q[:40] for q, _ in EXTRACTION])
def test_extraction(question: str, expected: list[tuple[str, float, str, str]]) -> None:
    found = extract_quantities(question)
    assert [(q.text, q.unit, q.role) for q in found] == [(t, u, r) for t, _, u, r in expected]
    for quantity, (_, value, _, _) in zip(found, expected):
        assert quantity.value == pytest.approx(value)
        assert question[quantity.start:quantity.end] == quantity.text
        assert quantity.percent == (quantity.role == "percent")
        assert bool(quantity.dimensionality) == bool(quantity.unit)
        assert quantity.physical == (quantity.role == "physical")


DIMENSIONS = [
    ("6.5L/100km", "[length] ** 2"),
    ("1000 m/s", "[length] / [time]"),
    ("1.225 kg/m³", "[mass] / [length] ** 3"),
    ("10000 rpm", "1 / [time]"),
    ("500 Nm", "[mass] * [length] ** 2 / [time] ** 2"),
    ("15%", "dimensionless"),
    ("$3", "[currency]"),
    ("top 5", ""),
]


@pytest.mark.parametrize("written, dimensionality", DIMENSIONS)
def test_dimensionality(written: str, dimensionality: str) -> None:
    (quantity,) = extract_quantities(written)
    assert quantity.dimensionality == dimensionality


LABELS = [
    ("a fuel tank capacity of 60L", "fuel tank capacity"),
    ("with a wind speed of 1,000 meters per second", "wind speed"),
    ("the length of the Brooklyn Bridge is 1834 meters", "length"),
    ("the power output of Moulin de Fexhe is 7.5 kilowatts", "power output"),
    ("the battery capacity of a Tesla Model S is increased to 1000 kWh", "battery capacity"),
    ("the fuel price set at $1.2 per liter", "fuel price"),
    ("an engine torque of 250 Nm at 20 °C", "engine torque"),  # the first one; see below
    ("If a car weighs 1500kg", ""),
    ("a car with 4 cylinders", "cylinders"),
]


@pytest.mark.parametrize("text, label", LABELS)
def test_labels(text: str, label: str) -> None:
    first = extract_quantities(text)[0]
    assert first.label == label
    assert first.name == label.replace(" ", "_")


def test_label_never_reaches_over_an_earlier_number() -> None:
    quantities = extract_quantities("an engine torque of 250 N·m at 20 °C")
    assert [q.label for q in quantities] == ["engine torque", ""]


def test_unknown_unit_words_fall_back_to_bare_numbers() -> None:
    for text in ["12 zorks of power", "3 blorbs/s", "7 at noon", "5 in total", "9 units"]:
        (quantity,) = extract_quantities(text)
        assert quantity.unit == "" and quantity.dimensionality == ""
        assert not quantity.physical


def test_all_logiccat_questions_extract_consistently() -> None:
    path = shared_file(BENCHMARKS / "logiccat" / "dev.json")
    questions = [item["question"] for item in json.loads(path.read_text(encoding="utf-8"))]
    physical = 0
    for question in questions:
        found = extract_quantities(question)
        for quantity in found:
            assert question[quantity.start:quantity.end] == quantity.text
        assert [q.start for q in found] == sorted(q.start for q in found)
        physical += sum(q.physical for q in found)
    assert physical >= len(questions)  # most questions state at least one measurement


# ------------------------------------------------------------------------------------------
# Calculator: conversions, arithmetic, hostile input
# ------------------------------------------------------------------------------------------

CONVERSIONS = [
    ("100 km/h", "m/s", 27.77778),
    ("1 kWh", "J", 3.6e6),
    ("10000 rpm", "rad/s", 1047.19755),
    ("20 rpm", "revolution / second", 0.333333),
    ("1 hp", "W", 745.69987),
    ("1 HP", "kW", 0.74569987),
    ("15%", "dimensionless", 0.15),
    ("6.5L/100km", "L/km", 0.065),
    ("2.5 tons", "kg", 2500),
    ("500 Nm", "kN*m", 0.5),
    ("0 °C", "K", 273.15),
    ("14 kg/square meter", "lb/ft**2", 2.867411),
    ("1 km/L", "mpg", 2.352146),
]


@pytest.mark.parametrize("written, target, value", CONVERSIONS)
def test_convert(written: str, target: str, value: float) -> None:
    (quantity,) = extract_quantities(written)
    result = convert(quantity, target)
    assert result.value == pytest.approx(value, rel=1e-5)
    assert result.unit == str(default_rules().parse_unit(target))


EVALUATIONS: list[tuple[str, dict[str, str | float], str | None, float]] = [
    ("2 + 3 * 4", {}, None, 14),
    ("(2 + 3) * 4", {}, None, 20),
    ("-2 ** 2", {}, None, -4),
    ("2 ** 3 ** 2", {}, None, 512),
    ("10 / 4 - 1", {}, None, 1.5),
    ("sqrt(16) + abs(-2) + max(1, 3) + min(4, 5)", {}, None, 13),
    ("round(pi, 2)", {}, None, 3.14),
    ("sin(radians(90)) + cos(0) + tan(0)", {}, None, 2),
    ("log(exp(2)) + log(8, 2)", {}, None, 5),
    ("x / y", {"x": 7, "y": 2.0}, None, 3.5),
    ("0.5 * m * v ** 2", {"m": "1500 kg", "v": "100 km/h"}, "J", 578703.7037),
    ("tank * left / use", {"tank": "60L", "left": "15%", "use": "6.5L/100km"}, "km", 138.461538),
    ("torque * speed", {"torque": "500 Nm", "speed": "10000 rpm"}, "kW", 523.598776),
    ("0.5 * rho * v ** 2 * span * height",
     {"rho": "1.225 kg/m³", "v": "10 meters per second", "span": "342 meters", "height": "343 meters"},
     "N", 7184992.5),
    ("battery / power", {"battery": "1000 kWh", "power": "500 kW"}, "h", 2),
    ("a + b", {"a": "1 km", "b": "500 m"}, "m", 1500),
    ("area * loading", {"area": "46.2 square meters", "loading": "14 kilograms per square meter"},
     "kg", 646.8),
    # pint counts a revolution as 2*pi radians, so rpm * radius is already the tip speed
    ("r * n", {"r": "14 meters", "n": "20 rpm"}, "m/s", 29.3215314),
    ("2 * pi * r * n / 60", {"r": 14, "n": 20}, None, 29.3215314),
]


@pytest.mark.parametrize("expression, constants, target, value", EVALUATIONS,
                         ids=[e for e, *_ in EVALUATIONS])
def test_evaluate(expression: str, constants: dict[str, str | float], target: str | None,
                  value: float) -> None:
    given = {name: c if isinstance(c, (int, float)) else extract_quantities(c)[0]
             for name, c in constants.items()}
    result = evaluate(expression, given)
    if target is not None:
        result = result.to(target)
    else:
        assert result.unit == ""
    assert result.value == pytest.approx(value, rel=1e-6)


def test_result_units_and_base() -> None:
    speed = evaluate("d / t", {"d": extract_quantities("100 km")[0], "t": extract_quantities("2 h")[0]})
    assert (speed.value, speed.unit, speed.dimensionality) == (50, "kilometer / hour", "[length] / [time]")
    base = speed.to_base()
    assert base.unit == "meter / second" and base.value == pytest.approx(13.888889)
    assert str(speed.to("m/s")) == "13.8889 m/s"
    with pytest.raises(CalculatorError, match="cannot convert"):
        speed.to("kg")
    with pytest.raises(CalculatorError, match="unknown unit"):
        speed.to("furlongs per zork")
    chained = evaluate("s * 2", {"s": speed})  # a result can be a constant again
    assert chained.value == 100 and chained.unit == "kilometer / hour"


HOSTILE = [
    ("__import__('os').system('id')", "not allowed"),
    ("().__class__.__bases__", "attribute access"),
    ("speed.real", "attribute access"),
    ("open('/etc/passwd')", "function 'open' is not allowed"),
    ("eval('1')", "function 'eval' is not allowed"),
    ("(lambda: 1)()", "not allowed"),
    ("[1, 2][0]", "not allowed"),
    ("'text'", "only numbers"),
    ("True + 1", "only numbers"),
    ("1j * 2", "only numbers"),
    ("2 ** 1000", "beyond"),
    ("9 ** 9 ** 9", "beyond"),
    ("10 ** 99 * 10 ** 99 * 10 ** 99 * 10 ** 99", "finite"),
    ("2 ^ 3", "use \\*\\* for powers"),
    ("7 % 3", "Mod is not allowed"),
    ("1 < 2", "Compare is not allowed"),
    ("1 / 0", "division by zero"),
    ("sqrt(-4)", "negative"),
    ("(-8) ** 0.5", "fractional power"),
    ("log(0)", "cannot compute"),
    ("exp(1000)", "cannot compute"),
    ("min()", "arguments"),
    ("round(1.5, ndigits=1)", "plain arguments"),
    ("1 +", "not an arithmetic expression"),
    ("1; import os", "not an arithmetic expression"),
    ("x = 1", "not an arithmetic expression"),
    ("unknown_name * 2", "unknown name"),
    ("(" * 300 + "1" + ")" * 300, "not an arithmetic expression"),
    ("1+" * 600 + "1", "longer than"),
    ("+".join(["1"] * 450), "more than"),
    ("", "empty"),
]


@pytest.mark.parametrize("expression, message", HOSTILE, ids=[h[0][:30] for h in HOSTILE])
def test_hostile_expressions_are_refused(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=message) as info:
        evaluate(expression, {"speed": 3.0})
    assert len(str(info.value)) < 200  # a clear sentence, not an echo of the input


UNIT_MISMATCHES = [
    ("a + b", {"a": "1 m", "b": "1 s"}),
    ("max(a, b)", {"a": "1 kg", "b": "1 m"}),
    ("exp(a)", {"a": "3 m"}),
    ("2 ** a", {"a": "2 s"}),
    ("t + c", {"t": "20 °C", "c": "5 °C"}),
]


@pytest.mark.parametrize("expression, constants", UNIT_MISMATCHES, ids=[e for e, _ in UNIT_MISMATCHES])
def test_unit_mismatches_are_dimensional_errors(expression: str, constants: dict[str, str]) -> None:
    given = {name: extract_quantities(c)[0] for name, c in constants.items()}
    with pytest.raises(CalculatorError) as info:
        evaluate(expression, given)
    assert info.value.dimensional


def test_constant_names_are_checked() -> None:
    for name in ["sqrt", "pi", "not valid", "2x"]:
        with pytest.raises(CalculatorError, match="cannot name a constant"):
            evaluate("1", {name: 1.0})
    with pytest.raises(CalculatorError, match="a constant is a number"):
        evaluate("x", {"x": "12"})  # type: ignore[dict-item]


SQL_CONSTANTS = [
    ("A car has a fuel tank capacity of 60L and a highway fuel consumption of 6.5L/100km; "
     "the gauge shows 15% remaining.",
     ["fuel_tank_capacity = 60 L", "highway_fuel_consumption = 6.5 L/100km = 0.065 L/km", "15% = 0.15"]),
    ("a wind speed of 1,000 meters per second and a rotational speed of 10000 rpm",
     ["wind_speed = 1000 m/s", "rotational_speed = 10000 rpm = 1047.2 rad/s"]),
    ("a top speed of 240 km/h, a drag coefficient of 0.3, for the manufacturer with ID 1 in 2023",
     ["top_speed = 240 km/h = 66.6667 m/s", "drag_coefficient = 0.3"]),
    ("an engine torque of 500 Nm and an output of 300 hp", ["engine_torque = 500 N·m",
                                                             "output = 300 hp = 223710 W"]),
    ("an outside temperature of 68 °F, the maker with ID 7 and the top 3",
     ["outside_temperature = 68 °F = 20 °C"]),
    ("a price of $30,000 and a fleet of 500 of these models", ["price = 30000 USD", "fleet = 500"]),
    # Calendar periods count periods: kept as written (in seconds they were multiplied into a
    # yearly cost); hours and minutes are still durations in seconds.
    ("an annual maintenance cost of $2,000,000 over a maintenance period of 100 years, 30 days and 1 hour",
     ["annual_maintenance_cost = 2e+06 USD", "maintenance_period = 100 year", "30 day", "1 h = 3600 s"]),
]


@pytest.mark.parametrize("question, lines", SQL_CONSTANTS, ids=[q[:30] for q, _ in SQL_CONSTANTS])
def test_sql_constants(question: str, lines: list[str]) -> None:
    assert sql_constants(extract_quantities(question)) == lines


def test_named_constants_are_unique_identifiers() -> None:
    quantities = extract_quantities("a speed of 3 m/s, a speed of 4 m/s, 15%, top 5, and 2 kg")
    names = named_constants(quantities)
    assert list(names) == ["speed", "speed_2", "q3", "q4"]
    assert evaluate("speed + speed_2", names).value == 7


# ------------------------------------------------------------------------------------------
# Rule base: relations, the packaged rules, broken rules files
# ------------------------------------------------------------------------------------------

RELATIONS: list[tuple[str, dict[str, str], str]] = [
    ("energy = power * time", {}, "consistent"),
    ("wind_load = 0.5 * air_density * wind_speed ** 2 * span * height", {}, "consistent"),
    ("kinetic_energy = 0.5 * mass * speed ** 2", {}, "consistent"),
    ("power = torque * rotational_speed", {}, "consistent"),
    ("fuel = fuel_consumption * distance", {}, "consistent"),
    ("force = mass * acceleration", {}, "consistent"),
    ("speed = distance / time", {}, "consistent"),
    ("force = pressure * area", {}, "consistent"),
    ("tip_speed = 2 * pi * blade_length * rpm", {}, "consistent"),
    ("range = battery_capacity / energy_consumption", {}, "consistent"),
    ("lift = disk_area * disk_loading * g", {"g": "m/s**2"}, "consistent"),
    ("energy = power * distance", {}, "inconsistent"),
    ("force = mass * speed", {}, "inconsistent"),
    ("speed = distance * time", {}, "inconsistent"),
    ("kinetic_energy = 0.5 * mass * speed", {}, "inconsistent"),
    ("power = torque * time", {}, "inconsistent"),
    ("lift = disk_area * disk_loading", {}, "inconsistent"),
    ("x = speed + time", {}, "inconsistent"),
    ("e = p * t", {"e": "kWh", "p": "kW", "t": "h"}, "consistent"),
    ("e = p * t", {"e": "kWh", "p": "kW", "t": "min"}, "rescale"),
    ("t = e / p", {"e": "energy", "p": "power", "t": "h"}, "rescale"),
    ("fuel = tank * share", {"fuel": "L", "tank": "L", "share": "percent"}, "consistent"),
    ("w = 0.5 * rho * v ** 2 * a", {"w": "wind load", "rho": "air density", "v": "m/s", "a": "m**2"},
     "consistent"),
    ("w = 0.5 * rho * v ** 2 * a", {"w": "wind load", "rho": "air density", "v": "km/h", "a": "m**2"},
     "rescale"),
    ("heat = m * c * dt", {"heat": "J", "m": "kg", "c": "J/(kg*K)", "dt": "degC"}, "consistent"),
    ("foo = bar * 2", {}, "unknown"),
    ("a == b", {}, "invalid"),
    ("energy = __import__('os')", {}, "invalid"),
]


@pytest.mark.parametrize("relation, symbols, status", RELATIONS, ids=[r for r, *_ in RELATIONS])
def test_check_relation(relation: str, symbols: dict[str, str], status: str) -> None:
    verdict = default_rules().check_relation(relation, symbols)
    assert verdict.status == status, verdict.reason
    assert verdict.ok == (status in ("consistent", "unknown"))  # unknown: accepted by default
    assert verdict.reason


def test_verdict_details() -> None:
    rules = default_rules()
    wrong = rules.check_relation("energy = power * distance")
    assert wrong.left == "[mass] * [length] ** 2 / [time] ** 2"
    assert wrong.right == "[mass] * [length] ** 3 / [time] ** 3"
    rescale = rules.check_relation("e = p * t", {"e": "kWh", "p": "kW", "t": "min"})
    assert rescale.factor == pytest.approx(1 / 60)
    (quantity,) = extract_quantities("10000 rpm")
    assert rules.check_relation("p = q * n", {"p": "kW", "q": "kN*m", "n": quantity}).status == "rescale"


def test_settings_change_the_verdicts() -> None:
    strict = default_rules().with_settings(unknown_names="reject")
    assert not strict.check_relation("foo = bar * 2").ok
    loose = default_rules().with_settings(scale_tolerance=1.0)
    assert loose.check_relation("e = p * t", {"e": "kWh", "p": "kW", "t": "min"}).ok
    with pytest.raises(ConfigError, match="scale_tolerance"):
        default_rules().with_settings(scale_tolerance=-1)


def test_filter_relations_drops_what_cannot_be_right() -> None:
    kept = default_rules().filter_relations([
        "energy = power * time", "energy = power * distance", "speed = distance / time", "x = y"])
    assert [relation for relation, _ in kept] == ["energy = power * time", "speed = distance / time", "x = y"]


def test_packaged_rules() -> None:
    rules = RuleBase.load()
    names = {f.name for f in rules.formulas}
    assert {"energy_from_power", "force_from_pressure", "newton_second_law", "average_speed",
            "wind_load", "kinetic_energy", "shaft_power", "fuel_used"} <= names
    for formula in rules.formulas:
        assert rules.check_relation(formula.relation).status == "consistent", formula.name
    assert {"power", "energy", "force", "torque", "pressure", "speed", "mass", "length", "area",
            "volume", "density", "fuel_consumption", "fuel_efficiency"} <= set(rules.quantities)
    assert [f.name for f in rules.formulas_for(["mass", "speed"])] == ["kinetic_energy"]


# (question, the formulas the rule base offers it): the question's numbers measure two of a
# formula's quantities, or one with every other named; only the best-measured are kept.
APPLYING = [
    ("If a Robinson R-22 helicopter has a total rotor disc area of 46.2 square meters and a maximum "
     "rotor disc loading of 14 kilograms per square meter, what is its lift?", ["lift_from_disk_loading"]),
    ("A car of 1500 kg travels at 100 km/h: what is its kinetic energy in joules?", ["kinetic_energy"]),
    ("If the battery capacity of a Tesla Model S is increased to 1000 kWh, will its range exceed "
     "10,000 km at an energy consumption of 0.2 kWh per kilometer?", ["electric_range"]),
    # One number, its formula's other quantities named: "traction force", "acceleration".
    ("If a car weighs 1500kg, what traction force gives it an acceleration of 3?", ["newton_second_law"]),
    # Numbers without physical units, and no numbers: nothing (no Spider question gets one).
    ("How many cars have more than 150 horsepower and a weight below 3000?", []),
    ("What is the average speed of the trains?", []),
    ("A bridge is 1834 meters long: how many bridges are longer?", []),
]


@pytest.mark.parametrize("question, names", APPLYING, ids=[q[:40] for q, _ in APPLYING])
def test_the_formulas_a_questions_quantities_fit(question: str, names: list[str]) -> None:
    rules = default_rules()
    offered = rules.formulas_applying(question, extract_quantities(question, rules))
    assert [f.name for f in offered] == names


KINDS = [
    ("N*m", "torque"), ("J", "energy"), ("kWh", "energy"), ("L/100km", "fuel_consumption"),
    ("m**2", "area"), ("Hz", "frequency"), ("rpm", "angular_speed"), ("kg/m³", "density"),
    ("km/L", "fuel_efficiency"), ("kWh/km", "energy_consumption"), ("USD", "money"),
    ("furlong", "length"), ("zork", None),
]


@pytest.mark.parametrize("unit, kind", KINDS)
def test_kind_of(unit: str, kind: str | None) -> None:
    assert default_rules().kind_of(unit) == kind


NAMES = [
    ("air_density", "density"), ("max_rotor_disk_loading", "area_loading"),
    ("blade_kinetic_energy", "energy"), ("Wind Load", "force"), ("fuel_tank_capacity", "volume"),
    ("zork", None),
]


@pytest.mark.parametrize("name, quantity", NAMES)
def test_quantity_named(name: str, quantity: str | None) -> None:
    assert default_rules().quantity_named(name) == quantity


MINIMAL_RULES = """\
version: 1
settings:
  scale_tolerance: 1.0e-6
definitions:
  - "hundred_kilometer = 100 * kilometer"
aliases:
  "Nm": "newton * meter"
quantities:
  length:
    dimension: "[length]"
    display: "m"
    words: [distance]
  time:
    dimension: "[time]"
    display: "s"
  speed:
    dimension: "[length] / [time]"
    display: "m / s"
    units: ["km / h"]
formulas:
  - name: average_speed
    relation: "speed = length / time"
"""

BROKEN_RULES = [
    # (what is replaced, by what, the field the error names, its line)
    ('    relation: "speed = length / time"', '    relation: "speed = length * time"',
     "formulas.0.relation", 22),
    ("quantities:", "quantites:", "quantites", 8),
    ('    dimension: "[length]"', '    dimension: "[lenth]"', "quantities.length.dimension", 10),
    ('    display: "m / s"', '    display: "kg"', "quantities.speed.display", 18),
    ('    units: ["km / h"]', '    units: ["km / h", "zorks"]', "quantities.speed.units.1", 19),
    ('"Nm": "newton * meter"', '"Nm": "newtonz"', "aliases.Nm", 7),
    ("    words: [distance]", "    words: [distance]\n    colour: red", "quantities.length.colour", 13),
    ('    display: "s"', '    display: "s"\n    words: [distance]', "quantities.time.words.0", 16),
    ("  scale_tolerance: 1.0e-6", "  scale_tolerance: -1", "settings.scale_tolerance", 3),
    ('  - "hundred_kilometer = 100 * kilometer"', '  - "= = ="', "definitions.0", 5),
    ("  - name: average_speed", "  - name: Average Speed", "formulas.0.name", 21),
    ("version: 1", "version: 2", "version", 1),
]


def test_minimal_rules_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(MINIMAL_RULES, encoding="utf-8")
    rules = RuleBase.load(path)
    assert rules.check_relation("speed = distance / time").ok
    assert rules.parse_unit("Nm") == rules.parse_unit("N*m")
    (money,) = extract_quantities("a price of $5", rules)  # no "$" alias here: money, no unit
    assert (money.role, money.unit, money.value) == ("money", "", 5.0)


@pytest.mark.parametrize("old, new, field, line", BROKEN_RULES, ids=[b[2] for b in BROKEN_RULES])
def test_broken_rules_file_names_file_line_and_field(tmp_path: Path, old: str, new: str,
                                                     field: str, line: int) -> None:
    assert old in MINIMAL_RULES
    path = tmp_path / "rules.yaml"
    path.write_text(MINIMAL_RULES.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        RuleBase.load(path)
    assert str(info.value).startswith(f"{path}:{line}: {field}: ")


def test_unreadable_rules_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        RuleBase.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nquantities: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{bad}:\d+: not valid YAML"):
        RuleBase.load(bad)


def test_results_and_quantities_are_frozen() -> None:
    quantity = Quantity("5 m", 5.0, "meter", "[length]")
    result = CalcResult(1.0)
    with pytest.raises(AttributeError):
        quantity.value = 6.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        result.value = 2.0  # type: ignore[misc]


# -- which column stores a stated number (fields.py) ----------------------------------------

STORED_SCHEMA = Schema("sqlite", (
    Table("bridge", (Column("Name", "TEXT"), Column("Length_Meters", "REAL"), Column("Length_Feet", "REAL"),
                     Column("Load_Capacity", "REAL"), Column("Height_Meters", "REAL"))),
    Table("mill", (Column("Name", "TEXT"), Column("Blade_Length", "REAL"), Column("Height_Meters", "REAL"))),
    Table("cars", (Column("Model", "TEXT"), Column("Cargo_Capacity", "REAL"), Column("Weight", "REAL"))),
    Table("aircraft", (Column("Total_Disk_Area", "REAL"), Column("Max_Disk_Loading", "REAL"))),
    Table("makers", (Column("R&D_Spending", "REAL"),)),
))

STORED = [
    ("The Forth Bridge has a length of 2467 meters.", ["bridge.Length_Meters"]),  # not _Feet
    ("a maximum load capacity of 4,000,000 kilograms", ["bridge.Load_Capacity"]),
    ("a blade length of 14 meters", ["mill.Blade_Length"]),  # two words beat Length_Meters' one
    ("a height of 343 meters", ["bridge.Height_Meters", "mill.Height_Meters"]),  # a tie is told
    ("If a car has a cargo capacity of 500L", ["cars.Cargo_Capacity"]),
    ("a car model of $30,000", []),  # Model holds text
    ("a wind speed of 10 m/s", []),  # no column says wind speed
    ("a length of 20 kilograms", []),  # Length_Meters spells a length unit
    ("a total rotor disc area of 46.2 square meters", ["aircraft.Total_Disk_Area"]),  # disc = disk
    ("a maximum rotor disc loading of 14 kilograms per square meter", ["aircraft.Max_Disk_Loading"]),
    ("If the cargo capacity of a Corolla is increased to 900L", []),  # a supposed value, not a row's
    ("if its blade length grows by 2 meters", []),
]


@pytest.mark.parametrize("question, expected", STORED, ids=[s[0][:30] for s in STORED])
def test_columns_that_store_a_stated_number(question: str, expected: list[str]) -> None:
    quantities = [q for q in extract_quantities(question) if q.label]
    assert quantities, question
    assert columns_for(quantities[-1], STORED_SCHEMA) == expected


def test_the_prompt_lines_name_the_columns_that_store_a_number() -> None:
    quantities = extract_quantities("a length of 2467 meters and a wind speed of 10 m/s")
    stored = {name: columns_for(q, STORED_SCHEMA) for name, q in named_constants(quantities).items()}
    assert sql_constants(quantities, stored=stored) == [
        "length = 2467 m (a value of bridge.Length_Meters)", "wind_speed = 10 m/s"]


# -- numbers a query compares with that the question does not state (unstated.py) ------------

UNSTATED = [
    ("singers older than average", "SELECT Name FROM singer WHERE Age > 32", ["32"]),
    ("singers older than average", "SELECT Name FROM singer WHERE Age > (SELECT AVG(Age) FROM singer)", []),
    ("concerts in 2014", "SELECT * FROM concert WHERE Year = '2014'", []),  # a number as a string
    ("aged 20 to 40", "SELECT * FROM t WHERE age BETWEEN 20 AND 40 AND x IN (3, 5)", ["3", "5"]),
    ("more than two makers", "SELECT c FROM t GROUP BY c HAVING COUNT(*) > 2", []),  # a number word
    ("the most makers", "SELECT c FROM t GROUP BY c HAVING COUNT(*) > 5", ["5"]),
    ("grew by 15%", "SELECT x FROM t WHERE rate > 0.15", []),  # the percentage as a fraction
    ("speeds", "SELECT x FROM t WHERE a > 3.6 * b AND 1 = 1 AND c <> 0", []),  # formulas, 0 and 1
    ("cars below zero", "SELECT x FROM t WHERE t.v < -2.5", ["-2.5"]),
    ("the top 5", "SELECT x FROM t ORDER BY y LIMIT 5", []),  # not a comparison
    ("not sql", "SELECT FROM WHERE", []),
]


@pytest.mark.parametrize("question, sql, expected", UNSTATED, ids=[u[1][:40] for u in UNSTATED])
def test_unstated_numbers(question: str, sql: str, expected: list[str]) -> None:
    assert unstated_numbers(sql, question, "sqlite") == expected


def test_a_computed_constant_is_stated() -> None:
    sql = "SELECT x FROM cars WHERE Range > 6666.7"
    assert unstated_numbers(sql, "a 1000 kWh battery at 0.15 kWh/km", "sqlite") == ["6666.7"]
    assert unstated_numbers(sql, "a 1000 kWh battery at 0.15 kWh/km", "sqlite", known=[6666.7]) == []


# -- constants a query names as if they were columns (binding.py) ----------------------------

BIND_VALUES = {"air_density": 1.225, "frontal_area": 2.5, "change": -0.015, "weight": 1500.0, "big": 4e6}
BINDING = [
    ("SELECT cars.Weight * air_density FROM cars", "SELECT cars.Weight * 1.225 FROM cars"),
    # qualified with a real table that has no such column; any case
    ("SELECT c.Weight * c.Frontal_Area FROM cars AS c", "SELECT c.Weight * 2.5 FROM cars AS c"),
    ("SELECT Weight - change FROM cars", "SELECT Weight - -0.015 FROM cars"),
    ("SELECT big / Weight FROM cars", "SELECT 4000000 / Weight FROM cars"),
    ("SELECT Weight FROM cars WHERE Weight = weight", None),  # a real column stays
    ("SELECT 1 AS air_density FROM cars ORDER BY air_density", None),  # an output alias stays
    ("SELECT t.air_density FROM (SELECT 1 AS a FROM cars) AS t", None),  # a derived table's
    ("SELECT x FROM (SELECT air_density AS x FROM cars) AS t", None),  # unqualified under one
    ("SELECT nope.air_density FROM cars", None),  # an unknown qualifier is the database's error
    ("SELECT FROM WHERE", None),
    # A filter on a misnamed column is not arithmetic: bound, it would compare two numbers.
    ("SELECT Model FROM cars WHERE big = 4000000 AND frontal_area = air_density", None),
    ("SELECT Model FROM cars WHERE Weight > frontal_area * 10", "SELECT Model FROM cars WHERE Weight > 2.5 * 10"),
]


# A constant the data stores is bound to its column when the query reads that column's table.
BIND_STORED = {"rotor_blade_length": ["mill.Blade_Length"], "weight": ["cars.Weight"],
               "air_density": ["mill.Blade_Length"], "rd_spending": ["makers.R&D_Spending"]}
BINDING_STORED = [
    ("SELECT rotor_blade_length * 2 FROM mill WHERE Name = 'X'", "SELECT Blade_Length * 2 FROM mill WHERE Name = 'X'"),
    ("SELECT m.Name FROM mill AS m JOIN cars AS c ON c.Weight = m.Height_Meters WHERE rotor_blade_length > 3",
     "SELECT m.Name FROM mill AS m JOIN cars AS c ON c.Weight = m.Height_Meters WHERE m.Blade_Length > 3"),
    # the comparison left alone by the numbers' binding is the filter on the stored column
    ("SELECT Model FROM cars WHERE big = 4000000 AND frontal_area = air_density", None),
    ("SELECT Height_Meters * rotor_blade_length FROM bridge", "SELECT Height_Meters * 0 FROM bridge"),  # not read
    ("SELECT rd_spending / 2 FROM makers", 'SELECT "R&D_Spending" / 2 FROM makers'),  # quoted
]


@pytest.mark.parametrize("sql, expected", BINDING_STORED, ids=[b[0][:40] for b in BINDING_STORED])
def test_bind_stored_constants_to_their_columns(sql: str, expected: str | None) -> None:
    bound, names = bind_constants(sql, {**BIND_VALUES, "rotor_blade_length": 0.0, "rd_spending": 1.0}, STORED_SCHEMA, "sqlite",
                                  stored=BIND_STORED)
    assert bound == (expected or sql) and bool(names) == (expected is not None)


# The question's copies of a row's stored values, read from the row (read_stored).
STATED = {14.0: ["mill.Blade_Length"], 2467.0: ["bridge.Length_Meters"]}
READING = [
    ("SELECT 2 * 3.14 * 14 FROM mill WHERE Name = 'X'", "SELECT 2 * 3.14 * Blade_Length FROM mill WHERE Name = 'X'"),
    ("SELECT b.Name, 2467 / m.Height_Meters FROM bridge AS b, mill AS m",
     "SELECT b.Name, b.Length_Meters / m.Height_Meters FROM bridge AS b CROSS JOIN mill AS m"),
    ("SELECT Name FROM mill WHERE Blade_Length = 14", None),  # a filter selects the row
    ("SELECT 14 * 2 FROM bridge", None),  # the storing table is not read
    ("SELECT (SELECT 14 FROM mill) AS x FROM mill", None),  # a subquery's number is its own
    ("SELECT '14' FROM mill", None),  # text
    ("SELECT 15 FROM mill", None),
    ("WITH x AS (SELECT 1) SELECT * FROM x UNION SELECT 14 FROM mill", None),  # not one SELECT
]


@pytest.mark.parametrize("sql, expected", READING, ids=[b[0][:40] for b in READING])
def test_read_stored_values_from_their_columns(sql: str, expected: str | None) -> None:
    read, columns = read_stored(sql, STATED, STORED_SCHEMA, "sqlite")
    assert read == (expected or sql) and bool(columns) == (expected is not None)


# A named row's restated measurements are not filters (drop_restated_filters).
RESTATED = {14.0: ["mill.Blade_Length"], 2467.0: ["bridge.Length_Meters"], 1500.0: ["cars.Weight"]}
UNFILTERING = [
    ("SELECT Blade_Length * 2 FROM mill WHERE Name = 'Moulin' AND Blade_Length = 14",
     "SELECT Blade_Length * 2 FROM mill WHERE Name = 'Moulin'"),
    # either way round, qualified, in parentheses, beside LIKE; other filters stay
    ("SELECT m.Blade_Length / 2 FROM mill AS m WHERE (14 = m.Blade_Length) AND m.Name LIKE '%Moulin%' AND m.Height_Meters > 3",
     "SELECT m.Blade_Length / 2 FROM mill AS m WHERE m.Name LIKE '%Moulin%' AND m.Height_Meters > 3"),
    ("SELECT b.Length_Meters * c.Weight FROM bridge AS b, cars AS c WHERE b.Name = 'Forth' AND b.Length_Meters = 2467 AND c.Weight = 1500",
     "SELECT b.Length_Meters * c.Weight FROM bridge AS b CROSS JOIN cars AS c WHERE b.Name = 'Forth'"),
    ("SELECT Name FROM mill WHERE Name = 'Moulin' AND Blade_Length = 14", None),  # lists rows: selects by it
    ("SELECT Weight * 2 FROM cars WHERE Weight = 1500", None),  # no name finds the row
    ("SELECT Weight * 2 FROM cars WHERE Model = 'X' OR Weight = 1500", None),  # not a conjunct
    ("SELECT Weight * 2 FROM cars WHERE Model = 'X' AND Weight > 1500", None),  # a range selects
    ("SELECT Weight * 2 FROM cars WHERE Model = 'X' AND Cargo_Capacity = 1500", None),  # not its column
    ("SELECT Blade_Length * 2 FROM mill AS m, bridge AS b WHERE b.Name = 'X' AND b.Length_Meters = 14", None),
    ("SELECT Weight * 2 FROM cars WHERE Model = 'X' AND Weight = '1500'", None),  # text
    ("SELECT FROM WHERE", None),
]


@pytest.mark.parametrize("sql, expected", UNFILTERING, ids=[b[0][:50] for b in UNFILTERING])
def test_a_named_rows_restated_measurements_are_not_filters(sql: str, expected: str | None) -> None:
    unfiltered, dropped = drop_restated_filters(sql, RESTATED, STORED_SCHEMA, "sqlite")
    assert unfiltered == (expected or sql) and bool(dropped) == (expected is not None)


@pytest.mark.parametrize("sql, expected", BINDING, ids=[b[0][:40] for b in BINDING])
def test_bind_constants(sql: str, expected: str | None) -> None:
    bound, names = bind_constants(sql, BIND_VALUES, STORED_SCHEMA, "sqlite")
    assert bound == (expected or sql) and bool(names) == (expected is not None)


def test_the_bound_value_is_the_last_number_of_the_prompt_line() -> None:
    quantities = extract_quantities("a power output of 7.8 kilowatts, a 15% rate and an air density of 1.2 kg/m³")
    lines = sql_constants(quantities)
    assert lines[0] == "power_output = 7.8 kW = 7800 W"
    assert [sql_value(q) for q in named_constants(quantities).values()] == [7800.0, 0.15, 1.2]


# -- the semantic state: the model's own items, not the request's wording -------------------

REQUEST = ('Describe the question as JSON with four keys: "intent", what it asks, in its own words; '
           '"entities", the names and values it mentions, as written; "relations", each formula or '
           'comparison the answer needs (e.g. energy = power * time); "fields", the table.column names.')
STATES = [
    # (question, reply, expected state)
    ("List the names of ships, by name.",
     {"intent": "what it asks, in its own words", "entities": ["names", "the names and values it mentions"],
      "relations": ["energy = power * time"], "fields": ["ship.name"]},
     {"intent": "", "entities": ["names"], "relations": [], "fields": ["ship.name"]}),
    # Words the request also uses are the question's when the question says them.
    ("How much energy = power * time does a 2 kW heater use in 3 hours?",
     {"intent": "energy used", "entities": ["2 kW", "3 hours"], "relations": ["energy = power * time"],
      "fields": []},
     {"intent": "energy used", "entities": ["2 kW", "3 hours"], "relations": ["energy = power * time"],
      "fields": []}),
    # A word of the request inside a longer item of the model's own is kept.
    ("Which battles had names?", {"entities": ["name of the battle"], "relations": "not a list"},
     {"intent": "", "entities": ["name of the battle"], "relations": [], "fields": []}),
    ("Anything", None, {"intent": "", "entities": [], "relations": [], "fields": []}),
    # A query is not a relation: a wrong guess there would anchor every later generation.
    ("For a volvo model, how many cylinders?",
     {"intent": "select cylinders from the volvo model", "relations": [
         "SELECT COUNT(T2.Cylinders) FROM cars_data AS T1 JOIN model_list AS T2 ON T1.ModelId = T2.ModelId",
         "cylinders = cars_data.Cylinders"]},
     {"intent": "select cylinders from the volvo model", "entities": [], "fields": [],
      "relations": ["cylinders = cars_data.Cylinders"]}),
    ("Anything", {"entities": ["x"] * 20, "fields": ["  ", "a.b"]},
     {"intent": "", "entities": ["x"] * 8, "relations": [], "fields": ["a.b"]}),
]


@pytest.mark.parametrize("question, reply, expected", STATES, ids=[s[0][:30] for s in STATES])
def test_semantic_state_drops_echoes_of_the_request(question: str, reply: object, expected: dict) -> None:
    assert semantic_state(reply, request=REQUEST, question=question) == expected
