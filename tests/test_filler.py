"""The database filler: synthetic variants that keep every constraint of the source schema."""

from __future__ import annotations

import hashlib
import random
import re
import sqlite3
from pathlib import Path

import pytest

from groundsql.testsuite.filler import FillPlan, fill_variants
from groundsql.testsuite.values import ColumnSpec, column_kind, fresh_values, observed_values
from tests.conftest import BENCHMARKS, spider_db

DATE = r"\d{4}-\d{2}-\d{2}"
DATETIME = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}"

# -- helpers ----------------------------------------------------------------------------------


def make_db(tmp_path: Path, script: str, name: str = "source.sqlite") -> Path:
    path = tmp_path / name
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def scalar(path: Path, sql: str, params: tuple = ()) -> object:
    return rows(path, sql, params)[0][0]


def count(path: Path, table: str) -> int:
    return scalar(path, f'SELECT COUNT(*) FROM "{table}"')


def assert_clean(path: Path) -> None:
    assert rows(path, "PRAGMA foreign_key_check") == [], path.name
    assert rows(path, "PRAGMA integrity_check") == [("ok",)], path.name


def fill(source: Path, tmp_path: Path, n: int = 3, seed: int = 0, **plan) -> list[Path]:
    paths = fill_variants(source, tmp_path / f"out_{seed}", n, seed=seed, plan=FillPlan(**plan))
    assert [p.name for p in paths] == [f"variant_{i:02d}.sqlite" for i in range(n)]
    return paths


# -- keys -------------------------------------------------------------------------------------


def test_composite_primary_keys(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE course (course_id INTEGER PRIMARY KEY, course TEXT);
        CREATE TABLE teacher (teacher_id INTEGER PRIMARY KEY, name TEXT, age INT);
        CREATE TABLE course_arrange (
            course_id INT REFERENCES course(course_id),
            teacher_id INT REFERENCES teacher(teacher_id),
            grade INT,
            PRIMARY KEY (course_id, teacher_id, grade)
        );
        CREATE TABLE flights (airline INTEGER, flight_no INTEGER, source TEXT,
                              PRIMARY KEY (airline, flight_no));
    """)
    keys = {"course_arrange": "course_id, teacher_id, grade", "flights": "airline, flight_no"}
    for path in fill(source, tmp_path, rows_per_table=40):
        assert_clean(path)
        for table, key in keys.items():
            found = rows(path, f"SELECT {key} FROM {table}")
            assert len(found) >= 5
            assert len(set(found)) == len(found)
            # SQLite lets a composite primary key hold NULLs; the filler never puts one there.
            assert all(v is not None for row in found for v in row)


def test_integer_primary_key_and_without_rowid(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE t (id INTEGER PRIMARY KEY, label TEXT);
        CREATE TABLE u (code TEXT PRIMARY KEY NOT NULL, n INT) WITHOUT ROWID;
    """)
    for path in fill(source, tmp_path):
        ids = [r[0] for r in rows(path, "SELECT id FROM t ORDER BY id")]
        assert ids and all(isinstance(i, int) for i in ids) and ids[0] == 1
        assert scalar(path, "SELECT COUNT(*) = COUNT(DISTINCT code) FROM u") == 1
        assert_clean(path)


def test_unique_column_unique_index_and_one_to_one(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE model_list (model_id INTEGER PRIMARY KEY, maker TEXT,
                                 model TEXT UNIQUE NOT NULL, email TEXT, code VARCHAR(3));
        CREATE UNIQUE INDEX ux_email ON model_list(email);
        CREATE UNIQUE INDEX ux_pair ON model_list(maker, code);
        CREATE TABLE model_detail (model_id INTEGER PRIMARY KEY REFERENCES model_list(model_id),
                                   notes TEXT);
    """)
    for path in fill(source, tmp_path, rows_per_table=60):
        assert count(path, "model_list") >= 40
        for column in ("model", "email"):
            sql = f"SELECT COUNT({column}) = COUNT(DISTINCT {column}) FROM model_list"
            assert scalar(path, sql) == 1
        pairs = rows(path, "SELECT maker, code FROM model_list "
                           "WHERE maker IS NOT NULL AND code IS NOT NULL")
        assert len(pairs) == len(set(pairs))
        # one detail per model at most, and only for models that exist
        assert 0 < count(path, "model_detail") <= count(path, "model_list")
        assert_clean(path)


def test_not_null_everywhere(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE owner (id INTEGER PRIMARY KEY NOT NULL, name TEXT NOT NULL,
                            born DATE NOT NULL);
        CREATE TABLE item (
            id INTEGER PRIMARY KEY NOT NULL, owner_id INTEGER NOT NULL REFERENCES owner(id),
            price REAL NOT NULL, qty INT NOT NULL, label VARCHAR(20) NOT NULL, flag BOOL NOT NULL
        );
    """)
    columns = {"owner": ["id", "name", "born"],
               "item": ["id", "owner_id", "price", "qty", "label", "flag"]}
    for path in fill(source, tmp_path, null_rate=0.9):
        for table, names in columns.items():
            assert count(path, table) >= 5
            for column in names:
                assert scalar(path, f"SELECT COUNT(*) FROM {table} WHERE {column} IS NULL") == 0
        assert_clean(path)


def test_check_constraints_are_kept_and_impossible_ones_do_not_hang(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE person (id INTEGER PRIMARY KEY,
                             age INT NOT NULL CHECK (age BETWEEN 30 AND 40),
                             salary REAL CHECK (salary > 100000));
        CREATE TABLE never (id INTEGER PRIMARY KEY, x INT CHECK (0));
    """)
    for path in fill(source, tmp_path):  # an impossible CHECK must not make the filler loop
        assert count(path, "person") >= 5
        broken = "SELECT COUNT(*) FROM person WHERE age NOT BETWEEN 30 AND 40 OR salary <= 100000"
        assert scalar(path, broken) == 0
        assert count(path, "never") == 0
        assert_clean(path)


def test_weird_type_spellings(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE "weird" (
            "a" int, "b" bool, "c" number, "d" varchar(255), "e" TEXT NOT NULL, "f" DATETIME,
            "g" DATE, "h" DECIMAL(19,4), "i" REAL, "j", "k" NUMERIC, "l" CHAR(3),
            "m" double precision, "n" BIGINT, "o" TIMESTAMP, "p" VARCHAR(1)
        );
    """)
    for path in fill(source, tmp_path, null_rate=0.0):
        found = rows(path, "SELECT * FROM weird")
        assert len(found) >= 5
        for a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p in found:
            assert isinstance(a, int) and isinstance(n, int)
            assert b in (0, 1)
            assert all(isinstance(v, (int, float)) for v in (c, h, k))
            assert isinstance(i, float) and isinstance(m, float)
            assert isinstance(d, str) and len(d) <= 255 and isinstance(e, str)
            assert re.fullmatch(DATETIME, f) and re.fullmatch(DATE, g) and re.fullmatch(DATETIME, o)
            assert isinstance(l, str) and len(l) <= 3 and isinstance(p, str) and len(p) == 1
            assert j is not None


# -- references -------------------------------------------------------------------------------


def test_self_reference_makes_a_tree(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE employee (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
                               manager_id INTEGER REFERENCES employee(id));
        CREATE TABLE node (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES node(id));
    """)
    for path in fill(source, tmp_path, rows_per_table=40):
        links = rows(path, "SELECT id, manager_id FROM employee")
        managed = [(i, m) for i, m in links if m is not None]
        assert len(managed) >= len(links) // 2
        assert all(m < i for i, m in managed)  # each refers to an earlier row: no loops
        assert any(m is None for _, m in links)  # the top of the tree
        assert scalar(path, "SELECT COUNT(*) FROM node WHERE parent_id IS NULL") == 0
        assert count(path, "node") >= 5
        assert_clean(path)


def test_two_table_cycles(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE dept (id INTEGER PRIMARY KEY, name TEXT, head_id INTEGER REFERENCES emp(id));
        CREATE TABLE emp (id INTEGER PRIMARY KEY, name TEXT,
                          dept_id INTEGER NOT NULL REFERENCES dept(id));
        -- a cycle with no nullable edge at all
        CREATE TABLE a (id INTEGER PRIMARY KEY, b_id INTEGER NOT NULL REFERENCES b(id));
        CREATE TABLE b (id INTEGER PRIMARY KEY, a_id INTEGER NOT NULL REFERENCES a(id));
    """)
    for path in fill(source, tmp_path):
        for table in ("dept", "emp", "a", "b"):
            assert count(path, table) >= 5
        assert scalar(path, "SELECT COUNT(head_id) > 0 FROM dept") == 1
        assert scalar(path, "SELECT COUNT(*) FROM a WHERE b_id IS NULL") == 0
        assert scalar(path, "SELECT COUNT(*) FROM b WHERE a_id IS NULL") == 0
        assert_clean(path)


def test_foreign_key_to_a_composite_key(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE evaluation (employee_id TEXT, year_awarded TEXT, bonus REAL,
                                 PRIMARY KEY (employee_id, year_awarded));
        CREATE TABLE payout (
            id INTEGER PRIMARY KEY, emp TEXT NOT NULL, year TEXT NOT NULL, amount REAL,
            FOREIGN KEY (emp, year) REFERENCES evaluation (employee_id, year_awarded)
        );
    """)
    for path in fill(source, tmp_path):
        pairs = set(rows(path, "SELECT employee_id, year_awarded FROM evaluation"))
        referenced = rows(path, "SELECT emp, year FROM payout")
        assert referenced and all(pair in pairs for pair in referenced)
        assert_clean(path)


def test_sloppy_foreign_keys_do_not_crash(tmp_path: Path) -> None:
    source = make_db(tmp_path, """
        CREATE TABLE parent (x INT, label TEXT);  -- x is not a key
        CREATE TABLE child (id INTEGER PRIMARY KEY, x INT REFERENCES parent(x),
                            ghost INT REFERENCES nowhere(id), lost INT REFERENCES parent(no_such));
    """)
    for path in fill(source, tmp_path):
        assert count(path, "parent") >= 5 and count(path, "child") >= 5
        # SQLite cannot check a reference to a non-key ("foreign key mismatch"): check by hand.
        dangling = ("SELECT COUNT(*) FROM child WHERE x IS NOT NULL "
                    "AND x NOT IN (SELECT x FROM parent WHERE x IS NOT NULL)")
        assert scalar(path, dangling) == 0
        assert scalar(path, "SELECT COUNT(ghost) > 0 FROM child") == 1  # a plain column
        assert rows(path, "PRAGMA integrity_check") == [("ok",)]


# -- determinism, originals, planted values ---------------------------------------------------

SHOP = """
    CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT, age INT,
                         email TEXT UNIQUE);
    CREATE TABLE pet (id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES person(id),
                      pet_type VARCHAR(20), weight REAL);
"""
SHOP_ROWS = """
    INSERT INTO person VALUES (1, 'Ann Lee', 'France', 31, 'ann@x.org'),
                              (2, 'Bo Chen', 'China', 45, NULL),
                              (5, 'Cy Diaz', 'France', NULL, 'cy@x.org');
    INSERT INTO pet VALUES (10, 1, 'dog', 12.5), (11, 1, 'cat', 4.0), (12, 5, 'dog', 30.25);
"""


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    source = make_db(tmp_path, SHOP)
    plan = {"planted": {("person", "country"): ["Atlantis"]}}
    first = fill(source, tmp_path / "one", seed=7, **plan)
    again = fill(source, tmp_path / "two", seed=7, **plan)
    other = fill(source, tmp_path / "three", seed=8, **plan)
    assert [digest(p) for p in first] == [digest(p) for p in again]
    assert all(digest(a) != digest(b) for a, b in zip(first, other))
    assert len({digest(p) for p in first}) == len(first)  # the variants differ from each other


def test_variant_zero_keeps_the_original_rows_and_the_source_is_untouched(tmp_path: Path) -> None:
    source = make_db(tmp_path, SHOP + SHOP_ROWS)
    before = digest(source)
    original = {t: rows(source, f"SELECT rowid, * FROM {t} ORDER BY rowid")
                for t in ("person", "pet")}
    planted = {("PERSON", "Country"): ["Atlantis"], ("person", "country"): ["France"]}
    paths = fill(source, tmp_path, planted=planted)
    assert digest(source) == before
    zero = paths[0]
    # the original rows, unchanged, plus one new row for the planted value the source lacks
    assert rows(zero, "SELECT rowid, * FROM pet ORDER BY rowid") == original["pet"]
    people = rows(zero, "SELECT rowid, * FROM person ORDER BY rowid")
    assert people[:3] == original["person"]
    assert [p[3] for p in people[3:]] == ["Atlantis"]
    assert_clean(zero)
    for path in paths[1:]:
        # drawn afresh, from the source's distributions: its categories, its ids
        assert rows(path, "SELECT rowid, * FROM person ORDER BY rowid") != original["person"]
        countries = {r[0] for r in rows(path, "SELECT DISTINCT country FROM person")} - {None}
        assert countries <= {"France", "China", "Atlantis"}
        assert {1, 2, 5} <= {r[0] for r in rows(path, "SELECT id FROM person")}
        assert_clean(path)


def test_planted_values_appear_in_some_rows_not_all(tmp_path: Path) -> None:
    source = make_db(tmp_path, SHOP)
    planted = {
        ("Person", "COUNTRY"): ["Atlantis", "El Dorado"],
        ("person", "age"): [33, 44],
        ("person", "email"): ["x@y.z"],
        ("pet", "owner_id"): [777],  # a reference: person 777 must exist too
        ("pet", "pet_type"): ["dragon"],
        ("nowhere", "nothing"): [1],  # ignored
    }
    filters = [("country", "Atlantis"), ("country", "El Dorado"), ("age", 33), ("age", 44)]
    for path in fill(source, tmp_path, planted=planted, rows_per_table=20):
        people, pets = count(path, "person"), count(path, "pet")
        for column, value in filters:
            hits = scalar(path, f"SELECT COUNT(*) FROM person WHERE {column} = ?", (value,))
            assert 1 <= hits < people, (column, value)
        # the first planted values share a row, so a conjunction of a query's filters can match
        assert scalar(path, "SELECT COUNT(*) FROM person WHERE country = 'Atlantis' AND age = 33")
        assert scalar(path, "SELECT COUNT(*) FROM person WHERE email = 'x@y.z'") == 1
        assert scalar(path, "SELECT COUNT(*) FROM person WHERE id = 777") == 1
        assert 1 <= scalar(path, "SELECT COUNT(*) FROM pet WHERE owner_id = 777") < pets
        assert 1 <= scalar(path, "SELECT COUNT(*) FROM pet WHERE pet_type = 'dragon'") < pets
        assert_clean(path)


def test_nulls_and_duplicates_are_there(tmp_path: Path) -> None:
    source = make_db(tmp_path, SHOP)
    for path in fill(source, tmp_path, rows_per_table=60, null_rate=0.2, duplicate_rate=0.3):
        assert scalar(path, "SELECT COUNT(*) FROM person WHERE country IS NULL") > 0
        assert scalar(path, "SELECT COUNT(DISTINCT name) < COUNT(name) FROM person") == 1
        assert scalar(path, "SELECT COUNT(DISTINCT weight) < COUNT(weight) FROM pet") == 1
        assert scalar(path, "SELECT COUNT(*) FROM person WHERE name IS NULL") == 0  # NOT NULL
        assert scalar(path, "SELECT COUNT(email) = COUNT(DISTINCT email) FROM person") == 1


# -- believable values ------------------------------------------------------------------------


def draws(table: str, column: str, declared: str, n: int = 200) -> list[object]:
    make = fresh_values(ColumnSpec(table, column, declared))
    rng = random.Random(0)
    return [make(rng) for _ in range(n)]


def test_values_follow_the_column_name_and_type() -> None:
    assert all(18 <= v <= 90 and isinstance(v, int) for v in draws("pilot", "Age", "INTEGER"))
    assert all(1 <= v <= 15 for v in draws("pets", "pet_age", "INTEGER"))
    assert all(1950 <= v <= 2025 for v in draws("bridge", "Construction_Year", "INTEGER"))
    assert all(1950 <= int(v) <= 2025 for v in draws("concert", "Year", "text"))  # a TEXT year
    assert all("@" in v for v in draws("customer", "email_address", "VARCHAR(80)"))
    assert all(re.fullmatch(r"[A-Z]{3}", v) for v in draws("airports", "AirportCode", "TEXT"))
    assert all(re.fullmatch(r"[A-Z]{2}\d{2}", v) for v in draws("t", "Type_Code", "CHAR(15)"))
    assert all(re.fullmatch(DATE, v) for v in draws("match", "Date", "TEXT"))
    assert all(re.fullmatch(DATETIME, v) for v in draws("t", "date_on_market", "DATETIME"))
    assert all(v in (0, 1) for v in draws("singer", "Is_male", "bool"))
    assert all(1 <= v <= 5 for v in draws("safety", "Crash_Test_Rating", "REAL"))
    assert all(0 <= v <= 100 for v in draws("t", "discount_percent", "REAL"))
    weights = draws("aircraft", "Max_Gross_Weight", "REAL")
    assert all(v > 0 and isinstance(v, float) for v in weights)
    assert all(v > 0 for v in draws("cars", "Fuel_Tank_Capacity", "REAL"))
    assert all(v in (3, 4, 6, 8, 12) for v in draws("cars_data", "Cylinders", "INTEGER"))
    assert all(v > 0 for v in draws("car", "horsepower", "INTEGER"))
    assert all(" " in v for v in draws("pilot", "Name", "TEXT"))  # a full person name
    assert all(" " in v for v in draws("singer", "Song_Name", "TEXT"))  # a title, not a person
    assert {"Toyota", "BMW", "Tesla"} & set(draws("manufacturers", "Name", "TEXT"))
    assert all(v.endswith("%") for v in draws("airport", "Change_2019", "TEXT"))
    assert column_kind("TEXT NOT NULL") == "text" and column_kind("number") == "numeric"
    assert column_kind("varchar(255)") == "text" and column_kind("bool") == "bool"


def test_values_follow_the_original_distribution() -> None:
    rng = random.Random(1)
    spec = ColumnSpec("singer", "Is_male", "bool")
    flags = observed_values(spec, ["T", "F", "T", None, "F", "T"], fresh_values(spec))
    assert {flags(rng) for _ in range(50)} == {"T", "F"}  # the original spelling of booleans
    spec = ColumnSpec("cars_data", "MPG", "TEXT")
    mpg = observed_values(spec, ["18", "15", "31.5", "22", "null", "27"] * 3, fresh_values(spec))
    values = [mpg(rng) for _ in range(200)]
    assert all(isinstance(v, str) for v in values)  # numbers kept as the text they were
    assert all(15 <= float(v) <= 31.5 for v in values if v != "null")
    spec = ColumnSpec("Templates", "Date_Effective_From", "DATETIME")
    span = ["2005-11-12 07:09:48", "1975-05-20 22:51:19", "2010-09-24 01:15:11"]
    moments = observed_values(spec, span, fresh_values(spec))
    for _ in range(50):
        value = moments(rng)
        assert re.fullmatch(DATETIME, value) and min(span) <= value <= max(span)
    spec = ColumnSpec("shop", "Location", "text")
    towns = observed_values(spec, ["Valkeakoski", "Lahti", "Espoo", "Turku"], fresh_values(spec))
    assert all(" " in v or v[0].isupper() for v in (towns(rng) for _ in range(50)))


def test_derived_columns_agree_on_logiccat(tmp_path: Path) -> None:
    aircraft = logiccat_db("AirCraft")
    path = fill(aircraft, tmp_path / "a", n=1)[0]
    found = rows(path, "SELECT Max_Gross_Weight, Total_Disk_Area, Max_Disk_Loading FROM aircraft")
    for weight, area, loading in found:
        assert weight > 0 and area > 0 and 1 < loading < 20
        assert abs(weight / area - loading) < 0.05 * loading  # disk loading is weight / area
    assert all(18 <= age <= 90 for (age,) in rows(path, "SELECT Age FROM pilot"))
    path = fill(logiccat_db("architect"), tmp_path / "b", n=1)[0]
    for metres, feet in rows(path, "SELECT Length_Meters, Length_Feet FROM bridge"):
        assert abs(metres * 3.28084 - feet) < 0.1


# -- the real benchmark databases -------------------------------------------------------------

LOGICCAT = ["AirCraft", "architect", "car"]
SPIDER_DBS = ["concert_singer", "car_1", "flight_2", "employee_hire_evaluation"]


def logiccat_db(name: str) -> Path:
    path = BENCHMARKS / "logiccat" / "database" / name / f"{name}.sqlite"
    if not path.is_file():
        pytest.skip(f"shared benchmark database {path} is not here")
    return path


@pytest.mark.parametrize(
    ("kind", "name"), [("logiccat", n) for n in LOGICCAT] + [("spider", n) for n in SPIDER_DBS]
)
def test_real_databases(tmp_path: Path, kind: str, name: str) -> None:
    source = logiccat_db(name) if kind == "logiccat" else spider_db(name)
    before = digest(source)
    source_violations = set(rows(source, "PRAGMA foreign_key_check"))
    tables = [r[0] for r in rows(source, "SELECT name FROM sqlite_master WHERE type = 'table' "
                                         "AND name NOT LIKE 'sqlite_%'")]
    schema_sql = ("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
                  "ORDER BY name")
    paths = fill_variants(source, tmp_path, 3, seed=0)
    assert digest(source) == before
    for i, path in enumerate(paths):
        assert rows(path, schema_sql) == rows(source, schema_sql)  # the very same statements
        for table in tables:
            assert count(path, table) > 0, (path.name, table)
        assert rows(path, "PRAGMA integrity_check") == [("ok",)]
        violations = set(rows(path, "PRAGMA foreign_key_check"))
        if i == 0:
            # Variant 0 holds the source's rows with the source's own dangling references
            # (Spider's flight_2 and car_1 have some); the filler adds none.
            assert violations <= source_violations
        else:
            assert violations == set(), (path.name, sorted(violations)[:5])
