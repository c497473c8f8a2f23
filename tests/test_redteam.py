"""Red team (issue 22): the corpus in tests/redteam/ thrown at real databases.

Through the validator (`Session.run_sql`) on SQLite, DuckDB, PostgreSQL and MariaDB (as superuser,
with `allow_privileged_role`, and as a SELECT-only role) and Spark (the narrowed Thrift server of
`groundsql spark serve`), and straight to the executor
(`Database.execute`): whatever is accepted must change nothing and leak no planted secret.
Statements run in chunks, one test per chunk, each failure listing every offending statement.
The figures: `python -m tests.redteam`.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from groundsql.config import DatabaseConfig
from groundsql.db import Database
from groundsql.errors import ConfigError, DatabaseError
from tests.redteam import corpus
from tests.redteam.harness import OPEN, Target, database_config, report, run_all, try_attack
from tests.conftest import mysql_connect
from tests.redteam.victims import (PRIVILEGED_GRANTS, close_all, file_victims, mysql_victims, postgres_victims,
                                   spark_victims)

CHUNK = 400
PROPERTY_EXAMPLES = 300

# target name -> (fixture, engine)
TARGETS = {
    "sqlite": ("sqlite_target", "sqlite"),
    "duckdb": ("duckdb_target", "duckdb"),
    "postgres-superuser": ("pg_superuser", "postgres"),
    "postgres-reader": ("pg_reader", "postgres"),
    "mysql-superuser": ("mysql_superuser", "mysql"),
    "mysql-reader": ("mysql_reader", "mysql"),
    "spark": ("spark_target", "spark"),
}
RAW_TARGETS = ("sqlite", "duckdb", "postgres-reader", "mysql-reader", "spark")
SERVER_MARKS = {"postgres": pytest.mark.postgres, "mysql": pytest.mark.mysql}


def _marks(name: str) -> list[pytest.MarkDecorator]:
    server = name.split("-")[0]
    return [SERVER_MARKS[server]] if server in SERVER_MARKS else []


def _target_params(names) -> list:
    return [pytest.param(name, id=name, marks=_marks(name)) for name in names]


def _chunk_params(names, attacks_of) -> list:
    return [
        pytest.param(name, i, id=f"{name}-{i:02d}", marks=_marks(name))
        for name in names
        for i in range(len(corpus.chunks(attacks_of(TARGETS[name][1]), CHUNK)))
    ]


# --------------------------------------------------------------------------------------------
# Victims and targets (one of each per module: each test starts from a fresh fingerprint)
# --------------------------------------------------------------------------------------------


def _file_target(engine: str):
    victims = file_victims(engine)
    target = Target(engine, victims, "file")
    yield target
    target.close()
    close_all(victims)


@pytest.fixture(scope="module")
def sqlite_target():
    yield from _file_target("sqlite")


@pytest.fixture(scope="module")
def duckdb_target():
    pytest.importorskip("duckdb")
    yield from _file_target("duckdb")


@pytest.fixture(scope="module")
def pg_victims():
    psycopg = pytest.importorskip("psycopg")
    try:
        victims = postgres_victims()
    except psycopg.OperationalError as err:
        pytest.fail(f"PostgreSQL is not running on 127.0.0.1:5432 ({err}); .ci/run starts it")
    yield victims
    close_all(victims)


def _server_target(victims, engine: str, role: str):
    target = Target(f"{engine}-{role}", victims, role, privileged=role == "superuser")
    yield target
    target.close()


@pytest.fixture(scope="module")
def pg_superuser(pg_victims):
    yield from _server_target(pg_victims, "postgres", "superuser")


@pytest.fixture(scope="module")
def pg_reader(pg_victims):
    yield from _server_target(pg_victims, "postgres", "reader")


@pytest.fixture(scope="module")
def mariadb_victims():
    mysql_connect().close()  # skips (fails in CI) where no server answers
    victims = mysql_victims()
    yield victims
    close_all(victims)


@pytest.fixture(scope="module")
def mysql_superuser(mariadb_victims):
    yield from _server_target(mariadb_victims, "mysql", "superuser")


@pytest.fixture(scope="module")
def mysql_reader(mariadb_victims):
    yield from _server_target(mariadb_victims, "mysql", "reader")


@pytest.fixture(scope="module")
def spark_target():
    pytest.importorskip("pyhive")
    victims = spark_victims()
    target = Target("spark", victims, "reader")
    yield target
    target.close()
    close_all(victims)
    victims[0].server.close()


def _target(request: pytest.FixtureRequest, name: str) -> Target:
    return request.getfixturevalue(TARGETS[name][0])


def _assert_usable(target: Target, through: str) -> None:
    """A target that refused or failed everything would pass every test here: it must answer."""
    if through == "validator":
        result = target.session(OPEN).run_sql("SELECT count(*) FROM t")
    else:
        result = target.database().execute("SELECT count(*) FROM t")
    assert result.rows == ((10,),)


def _assert_no_violations(target: Target, attacks, *, through: str) -> None:
    _assert_usable(target, through)
    outcomes = run_all(target, attacks, through=through)
    if bad := [o for o in outcomes if o.violations]:
        pytest.fail(
            f"{len(bad)} of {len(outcomes)} statements through the {through} on {target.name} "
            f"had an effect, leaked or misbehaved:\n{report(bad)}",
            pytrace=False,
        )


# --------------------------------------------------------------------------------------------
# Through the validator
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", _target_params(TARGETS))
def test_issue22_statements_through_the_validator(request: pytest.FixtureRequest, name: str) -> None:
    target = _target(request, name)
    _assert_no_violations(target, corpus.issue22(target.engine), through="validator")


@pytest.mark.parametrize("name, chunk", _chunk_params(TARGETS, corpus.generated))
def test_corpus_through_the_validator(request: pytest.FixtureRequest, name: str, chunk: int) -> None:
    target = _target(request, name)
    _assert_no_violations(target, corpus.chunks(corpus.generated(target.engine), CHUNK)[chunk], through="validator")


@pytest.mark.parametrize("name", _target_params(TARGETS))
def test_accepted_generated_statements_are_harmless(request: pytest.FixtureRequest, name: str) -> None:
    from hypothesis import HealthCheck, Phase, given, settings

    target = _target(request, name)
    _assert_usable(target, "validator")
    target.snapshot = target.observe()

    # Every example touches a real database, so no shrinking (its replays would multiply the
    # cost; the grammar's statements are short anyway) and no example database on disk.
    @settings(max_examples=PROPERTY_EXAMPLES, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(corpus.statements(target.engine))
    def check(attack: corpus.Attack) -> None:
        outcome = try_attack(target, attack, through="validator")
        if outcome.violations:
            pytest.fail(report([outcome]), pytrace=False)

    check()


_OR_CHAIN_SCRIPT = """
import sys, time
from groundsql.errors import UnsafeSQLError
from groundsql.safety import validate_sql

sql, timings = sys.stdin.read(), []
for dialect in ("sqlite", "postgres", "duckdb", "mysql"):
    validate_sql("SELECT a FROM t WHERE a = 0 OR a = 1", dialect)  # warm-up: imports, caches
    start = time.perf_counter()
    try:
        validate_sql(sql, dialect)
    except UnsafeSQLError:
        pass  # refusing is an answer too: only the time counts
    timings.append(time.perf_counter() - start)
print(*timings)
"""


def test_a_6000_term_or_chain_is_validated_in_well_under_a_second() -> None:
    # In a subprocess: a quadratic validator would otherwise hang the suite for minutes.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        done = subprocess.run([sys.executable, "-c", _OR_CHAIN_SCRIPT], input=corpus.or_chain(6000),
                              capture_output=True, text=True, timeout=20, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("validate_sql took more than 20 s over a 6,000-term OR chain (quadratic or worse)")
    assert done.returncode == 0, done.stderr[-3000:]
    timings = dict(zip(("sqlite", "postgres", "duckdb", "mysql"), map(float, done.stdout.split())))
    assert max(timings.values()) < 1.0, f"seconds per dialect: {timings}"


# --------------------------------------------------------------------------------------------
# Straight to the executor
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, chunk", _chunk_params(RAW_TARGETS, corpus.raw_corpus))
def test_corpus_straight_to_the_executor(request: pytest.FixtureRequest, name: str, chunk: int) -> None:
    target = _target(request, name)
    _assert_no_violations(target, corpus.chunks(corpus.raw_corpus(target.engine), CHUNK)[chunk], through="executor")


@pytest.mark.parametrize("name", _target_params(["postgres-reader", "postgres-superuser"]))
def test_issue22_raw_statements_leave_no_trace(request: pytest.FixtureRequest, name: str) -> None:
    """COMMIT; DELETE ... and friends: the executor's READ ONLY transaction must hold even
    for a privileged role, and nothing may stay behind on the pooled connection."""
    _assert_no_violations(_target(request, name), corpus.RAW_POSTGRES, through="executor")


@pytest.mark.parametrize("name", _target_params(["mysql-reader", "mysql-superuser"]))
def test_mysql_raw_statements_leave_no_trace(request: pytest.FixtureRequest, name: str) -> None:
    """COMMIT, SET GLOBAL, INTO OUTFILE, user variables and locks straight to the executor:
    nothing changes and nothing stays behind on the pooled connection, even as root."""
    _assert_no_violations(_target(request, name), corpus.RAW_MYSQL, through="executor")


def _fresh_database(target: Target) -> Database:
    return Database(target.url(), database_config(privileged=target.privileged))


@pytest.mark.parametrize("name", _target_params(["postgres-reader", "postgres-superuser"]))
def test_a_prepared_statement_does_not_outlive_its_query(request: pytest.FixtureRequest, name: str) -> None:
    with _fresh_database(_target(request, name)) as db:
        try:
            db.execute("PREPARE p AS SELECT 1")
        except DatabaseError:
            pass  # refusing to prepare is fine; what matters is the next query
        with pytest.raises(DatabaseError):
            db.execute("EXECUTE p")


@pytest.mark.parametrize("name", _target_params(["postgres-reader", "postgres-superuser"]))
def test_an_advisory_lock_does_not_outlive_its_query(request: pytest.FixtureRequest, name: str) -> None:
    import psycopg

    target = _target(request, name)
    with _fresh_database(target) as db:
        try:
            db.execute("SELECT pg_advisory_lock(1)")
        except DatabaseError:
            pass  # refusing to lock is fine; what matters is that no lock is held now
        with psycopg.connect(target.victim.url("superuser"), autocommit=True) as other:
            held = other.execute(
                "SELECT pid, objid FROM pg_locks WHERE locktype = 'advisory' "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchall()
    assert held == []


@pytest.mark.postgres
@pytest.mark.parametrize("kind", ["superuser", *PRIVILEGED_GRANTS])
def test_a_role_that_can_write_needs_allow_privileged_role(pg_victims, kind: str) -> None:
    victim = pg_victims[0]
    url = victim.url("superuser") if kind == "superuser" else victim.url(kind)
    with pytest.raises(ConfigError):
        with Database(url, DatabaseConfig()) as db:
            db.execute("SELECT count(*) FROM t")  # the refusal may come on opening or on first use


@pytest.mark.postgres
def test_a_select_only_role_needs_no_permission(pg_victims) -> None:
    with Database(pg_victims[0].url("reader"), DatabaseConfig()) as db:
        assert db.execute("SELECT count(*) FROM t").rows == ((10,),)
