"""Apache Spark SQL (issue 37): a copy of the demo database on the narrowed Thrift server that
`groundsql spark serve` starts (tests/conftest.py's spark_url, started once per session), the
engine's own wall, and the validator's Spark dialect."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlglot

from groundsql.api import demo_database_url
from groundsql.db import Database
from groundsql.db.engines.spark import SparkEngine, SparkRefused, check_statement
from groundsql.db.sparkcopy import spark_type
from groundsql.db.sparkserver import NARROWING, QUERY_TIMEOUT_SETTING
from groundsql.errors import ConfigError, DatabaseError, QueryTimeoutError, UnsafeSQLError
from groundsql.safety.validator import validate_sql
from tests.conftest import REPO, spark_connect

pytest.importorskip("pyhive")

# Statements that write, change the session or reach the JVM, files or the network.
NOT_QUERIES = [
    "INSERT INTO company SELECT * FROM company",
    "FROM company INSERT INTO company SELECT *",
    "WITH a AS (SELECT * FROM company) INSERT INTO company SELECT * FROM a",
    "CACHE TABLE company",
    "SET spark.sql.runSQLOnFiles=true",
    "ADD JAR /tmp/evil.jar",
    "CREATE FUNCTION f AS 'org.example.Evil'",
    "CREATE TEMPORARY VIEW v AS SELECT 1",
    "REFRESH TABLE company",
    "MSCK REPAIR TABLE company",
    "ANALYZE TABLE company COMPUTE STATISTICS",
    "LOAD DATA LOCAL INPATH '/etc/passwd' INTO TABLE company",
    "SELECT TRANSFORM(company_id) USING 'cat' AS (x) FROM company",
    "DROP TABLE company",
    "SELECT 1; DROP TABLE company",
    "UNCACHE TABLE company",
    "RESET",
]
# Rows the engine does not read from a table (the validator refuses range() as a function
# it does not list, and lets explode() make its two rows).
MADE_ROWS = ["SELECT COUNT(*) FROM range(10000000000)", "SELECT * FROM explode(array(1, 2))"]


@pytest.mark.parametrize("sql", NOT_QUERIES + MADE_ROWS)
def test_the_engine_refuses_anything_but_a_query_before_it_is_sent(sql) -> None:
    with pytest.raises(SparkRefused):
        check_statement(sql)


@pytest.mark.parametrize("sql", [
    "SELECT 1", "SELECT a FROM t UNION SELECT b FROM u", "WITH a AS (SELECT 1 AS x) SELECT x FROM a",
    "SHOW TABLES IN `demo`", "DESCRIBE TABLE `demo`.`company`", "SHOW TBLPROPERTIES `demo`.`company`",
])
def test_the_engine_sends_queries_and_catalog_reads(sql) -> None:
    check_statement(sql)


@pytest.mark.parametrize("sql", [
    *NOT_QUERIES,
    "SELECT reflect('java.lang.System', 'exit', 0)",
    "SELECT java_method('java.lang.Runtime', 'getRuntime')",
    "SELECT try_reflect('java.lang.System', 'exit', 0)",
    "SELECT input_file_name() FROM company",
    "SELECT * FROM text.`/etc/passwd`",
    "SELECT * FROM parquet.`/tmp`",
])
def test_the_validator_refuses_them_in_sparks_dialect_too(sql) -> None:
    with pytest.raises(UnsafeSQLError):
        validate_sql(sql, "spark", catalog=_DEMO.catalog())


def test_a_server_without_the_narrowing_settings_is_refused_in_one_sentence(monkeypatch) -> None:
    from groundsql.db.engines import spark

    settings = {key: value for key, (value, _) in NARROWING.items()}
    settings[QUERY_TIMEOUT_SETTING] = "60s"
    settings["spark.sql.restrictedMode.enabled"] = "false"

    class Cursor:
        def execute(self, sql):
            self.key = sql.split()[1]

        def fetchall(self):
            return [(self.key, settings.get(self.key, "<undefined>"))]

    closed = []
    connection = SimpleNamespace(cursor=Cursor, close=lambda: closed.append(True))
    monkeypatch.setattr(spark, "open_connection", lambda *_, **__: connection)
    spec = {"host": "spark.example", "port": 10000, "user": "", "password": "x", "database": "demo"}
    with pytest.raises(SparkRefused, match="spark.sql.restrictedMode.enabled is false .*groundsql spark serve"):
        SparkEngine().connect(spec)
    assert closed
    settings["spark.sql.restrictedMode.enabled"] = "true"
    del settings[QUERY_TIMEOUT_SETTING]
    with pytest.raises(SparkRefused, match="queryTimeout is not set"):
        SparkEngine().connect(spec)


@pytest.mark.parametrize("declared, kinds, expected", [
    ("INTEGER", {"int"}, "BIGINT"), ("INTEGER", {"int", "float"}, "DOUBLE"), ("REAL", {"float"}, "DOUBLE"),
    ("INTEGER", {"int", "str"}, "STRING"),  # SQLite keeps text in an INTEGER column: kept as text
    ("TEXT", {"int"}, "STRING"), ("VARCHAR(20)", {"str"}, "STRING"), ("numeric(10,2)", set(), "DOUBLE"),
    ("DATE", {"date"}, "DATE"), ("DATE", {"date", "str"}, "STRING"), ("datetime", {"timestamp", "date"}, "TIMESTAMP"),
    ("BOOLEAN", {"bool"}, "BOOLEAN"), ("", {"int"}, "BIGINT"), ("", set(), "STRING"),
])
def test_a_columns_spark_type_follows_its_values(declared, kinds, expected) -> None:
    assert spark_type(declared, kinds) == expected


# -- on the server ----------------------------------------------------------------------------

_DEMO = Database(demo_database_url())


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="runs a command as nobody")
def test_spark_installed_in_a_private_folder_is_staged_where_the_servers_user_reaches_it(tmp_path) -> None:
    # A virtual environment under `mktemp -d` or a home folder (0700): the server, run as
    # nobody, could not start spark-submit there; its scripts and jars are linked into the
    # scratch folder the server owns.
    from groundsql.db.sparkserver import _reaches, _staged

    private = tmp_path / "private"
    (private / "spark" / "bin").mkdir(parents=True)
    (private / "spark" / "jars").mkdir()
    script = private / "spark" / "bin" / "spark-submit"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    (private / "spark" / "jars" / "spark-core.jar").write_bytes(b"jar")
    private.chmod(0o700)
    scratch = Path(tempfile.mkdtemp(prefix="groundsql-spark-"))  # as serve() makes its own
    try:
        shutil.chown(scratch, "nobody")
        assert not _reaches(script, "nobody")
        staged = _staged(private / "spark", scratch)
        assert _reaches(staged / "bin" / "spark-submit", "nobody")
        assert (staged / "jars" / "spark-core.jar").read_bytes() == b"jar"
    finally:
        shutil.rmtree(scratch)


def test_the_copy_keeps_tables_columns_keys_and_row_counts(spark_url) -> None:
    with Database(spark_url) as spark:
        copy = spark.introspect()
    original = _DEMO.introspect()
    assert copy.dialect == "spark"
    assert [t.name for t in copy.tables] == [t.name for t in original.tables]
    for mine, theirs in zip(copy.tables, original.tables):
        assert [c.name for c in mine.columns] == [c.name for c in theirs.columns]
        assert mine.foreign_keys == theirs.foreign_keys
        assert {c.name for c in mine.columns if c.primary_key} == {c.name for c in theirs.columns if c.primary_key}
        assert mine.row_count == theirs.row_count


def test_the_demos_gold_queries_give_sqlites_results(spark_url) -> None:
    gold = [json.loads(line)["gold_sql"] for line in (REPO / "src/groundsql/demo/eval.jsonl").open()][:25]
    differ = []
    with Database(spark_url) as spark:
        for sql in gold:
            expected = _DEMO.execute(sql, max_rows=10_000).rows
            got = spark.execute(sqlglot.transpile(sql, read="sqlite", write="spark")[0], max_rows=10_000).rows
            if sorted(map(_rounded, got)) != sorted(map(_rounded, expected)):
                differ.append(sql)
    assert not differ, differ[:3]


def test_the_engine_alone_refuses_a_write_and_nothing_changes(spark_url) -> None:
    with Database(spark_url) as spark:
        before = spark.execute("SELECT COUNT(*) FROM company").rows
        for sql in NOT_QUERIES:
            with pytest.raises(DatabaseError):
                spark.execute(sql)
        assert spark.execute("SELECT COUNT(*) FROM company").rows == before


def test_the_server_refuses_what_reaches_the_jvm_or_files_even_sent_directly(spark_url) -> None:
    # Past groundsql's walls (a client of its own): restricted mode and no SQL on files.
    url = Database(spark_url).url
    with spark_connect(url.port, "demo") as conn:
        cursor = conn.cursor()
        for sql in ["SELECT reflect('java.lang.System', 'exit', 0)",
                    "SELECT TRANSFORM(company_id) USING 'cat' AS (x) FROM company",
                    "SELECT * FROM text.`/etc/passwd`",
                    "INSERT INTO company SELECT * FROM company"]:
            with pytest.raises(Exception):
                cursor.execute(sql)
        cursor.execute("SELECT COUNT(*) FROM company")
        assert cursor.fetchall() == [(114,)]


def test_a_slow_query_is_cancelled_at_the_time_limit(spark_url) -> None:
    with Database(spark_url) as spark:
        start = time.monotonic()
        with pytest.raises(QueryTimeoutError):
            # Within the server's cost gate (3e8 pairs), and minutes of md5 on two cores.
            spark.execute("SELECT COUNT(*) FROM price_daily AS a JOIN price_daily AS b "
                          "ON md5(CAST(a.close_price + b.close_price AS STRING)) < 'a'", timeout_s=3)
        assert time.monotonic() - start < 30
        assert spark.execute("SELECT COUNT(*) FROM company").rows == ((114,),)  # the server goes on


def test_rows_stop_at_the_cap(spark_url) -> None:
    with Database(spark_url) as spark:
        result = spark.execute("SELECT company_name FROM company", max_rows=5)
    assert len(result.rows) == 5 and result.truncated


def test_a_server_that_is_down_is_one_sentence() -> None:
    with pytest.raises(DatabaseError, match="could not open"):
        Database("hive://127.0.0.1:9/demo").execute("SELECT 1")


def _rounded(row: tuple) -> tuple:
    return tuple(round(v, 6) if isinstance(v, float) else str(v) if v is not None else None for v in row)


def test_a_database_the_server_does_not_hold_is_one_line_not_a_stack_trace(spark_url) -> None:
    missing = spark_url.rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(DatabaseError) as refused:
        Database(missing).execute("SELECT 1")
    message = str(refused.value)
    assert "SCHEMA_NOT_FOUND" in message and "no_such_database" in message
    assert "\n" not in message and "org.apache" not in message and len(message) < 400


# -- `groundsql spark serve` as a service ---------------------------------------------------------


class _Stop(Exception):
    pass


def _supervised(answers: list[bool], exits: list[int | None]) -> tuple[list[str], list[str]]:
    """Server.supervise over a scripted server: what it said and did."""
    from groundsql.db.sparkserver import Server

    server = Server.__new__(Server)
    server.log = Path("/nowhere/server.log")
    done: list[str] = []
    codes = iter(exits)

    def poll() -> int | None:
        try:
            return next(codes)
        except StopIteration:
            raise _Stop from None

    server.process = SimpleNamespace(poll=poll)
    replies = iter(answers)
    server.answers = lambda timeout_s=20: next(replies, True)
    server.restart = lambda: done.append("restart")
    server._kill = lambda: done.append("kill")
    server.tail = lambda: "Terminating due to java.lang.OutOfMemoryError: Java heap space"
    said: list[str] = []
    with pytest.raises((_Stop, ConfigError)) as ended:
        server.supervise(said.append, every_s=0, timeout_s=1, misses=2, max_restarts=2, within_s=600)
    if isinstance(ended.value, ConfigError):
        said.append(f"gave up: {ended.value}")
    return said, done


def test_a_server_that_stops_answering_is_restarted_after_two_missed_probes() -> None:
    said, done = _supervised(answers=[True, False, True, False, False], exits=[None] * 5)
    assert done == ["restart"]  # one miss alone is not enough
    assert "did not answer 2 probes" in said[0] and "answers again" in said[1]


def test_a_server_that_exits_is_restarted_and_one_that_keeps_dying_is_left_stopped() -> None:
    said, done = _supervised(answers=[], exits=[3, 3, 3])
    assert done == ["restart", "restart", "kill"]
    assert "exited with code 3 (Terminating due to java.lang.OutOfMemoryError" in said[0]
    assert said[-1].startswith("gave up:") and "restarted 2 times" in said[-1]


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _listening(pid: int) -> set[tuple[str, int]]:
    """The (address, port) pairs process `pid` listens on, from /proc (IPv4 and IPv6)."""
    import ipaddress

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            if table == "tcp":
                ip = ipaddress.IPv4Address(raw[::-1])
            else:  # four little-endian words
                ip = ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
                ip = ip.ipv4_mapped or ip
            found.add((str(ip), int(port, 16)))
    return found


def test_spark_serve_binds_loopback_hides_its_environment_restarts_and_stops_with_sigterm(tmp_path) -> None:
    import signal
    import subprocess
    import sys
    import threading

    from groundsql.db.sparkserver import secret_file
    from tests.conftest import spark_folder, spark_user
    from tests.server_harness import free_port

    port, log = free_port(), tmp_path / "spark.log"
    secret = f"SECRET-{os.getpid()}-{time.time_ns()}"
    with spark_folder([(demo_database_url(), "demo")]) as folder:
        command = [sys.executable, "-m", "groundsql.cli", "spark", "serve", str(folder), "--port", str(port),
                   "--query-timeout", "5", "--log", str(log)] + (["--user", spark_user()] if spark_user() else [])
        serve = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, "GROUNDSQL_T": secret})
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(serve.stderr), daemon=True)
        reader.start()

        def said(text: str, within_s: float) -> str:
            deadline = time.monotonic() + within_s
            while time.monotonic() < deadline:
                if found := [line for line in lines if text in line]:
                    return found[-1]
                assert serve.poll() is None, "".join(lines)
                time.sleep(0.5)
            pytest.fail(f"`spark serve` did not say {text!r} within {within_s:g} s: {''.join(lines)[-2000:]}")

        try:
            ready = said("Spark SQL on", 300)
            assert f"hive://127.0.0.1:{port}/demo" in ready and str(log) in ready
            [jvm] = _children(serve.pid)
            listening = _listening(jvm)
            assert ("127.0.0.1", port) in listening
            assert {address for address, _ in listening} == {"127.0.0.1"}, listening
            environment = dict(v.split(b"=", 1) for v in Path(f"/proc/{jvm}/environ").read_bytes().split(b"\0") if b"=" in v)
            assert not [v for v in environment.values() if secret.encode() in v]
            # Nothing of the caller's environment but what Spark needs (its scripts add their own).
            inherited = {k.decode() for k, v in environment.items() if os.environ.get(k.decode()) == v.decode()}
            assert inherited <= {"PATH", "LANG", "JAVA_HOME", "SHLVL", "_"}, inherited
            url = f"hive://127.0.0.1:{port}/demo"

            # A query its client abandoned (the socket closed, no cancel) ends at the server's limit.
            with spark_connect(port, "demo") as conn:
                conn.cursor().execute("SELECT count(*) FROM price_daily AS a JOIN price_daily AS b "
                                      "ON md5(CAST(a.close_price + b.close_price AS STRING)) < 'a'", async_=True)
            time.sleep(5 + 5 + 2)  # its limit, the watchdog's grace, a poll
            start = time.monotonic()
            with Database(url) as db:
                assert db.execute("SELECT count(*) FROM company", timeout_s=10).rows == ((114,),)
            assert time.monotonic() - start < 5

            # The server dies: `serve` starts it again, with the same password.
            os.kill(jvm, signal.SIGKILL)
            assert "exited" in said("restarting it", 60)
            said("answers again", 300)
            with Database(url) as db:
                assert db.execute("SELECT count(*) FROM company", timeout_s=30).rows == ((114,),)
            [jvm] = _children(serve.pid)
        finally:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(timeout=90)
            except subprocess.TimeoutExpired:
                serve.kill()
                pytest.fail("`spark serve` did not stop on SIGTERM")
        reader.join(timeout=5)
        assert not Path(f"/proc/{jvm}").exists(), "the server outlived `spark serve`"
        assert "stopped" in lines[-1] and log.stat().st_size > 0  # its log kept
        assert not secret_file("127.0.0.1", port).exists()
        with pytest.raises(DatabaseError):
            Database(f"hive://127.0.0.1:{port}/demo").execute("SELECT 1")


def test_serve_refuses_a_port_in_use_and_leaves_its_servers_password_alone(tmp_path) -> None:
    import socket

    from groundsql.db.sparkserver import secret_file, serve

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        secret = secret_file("127.0.0.1", port)
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_text("the running server's\n")
        try:
            with pytest.raises(ConfigError, match="in use"):
                serve(tmp_path, port=port)
            assert secret.read_text() == "the running server's\n"
        finally:
            secret.unlink()


@pytest.mark.parametrize("values, low, high", [
    ([], 0, 0), ([None, None], 0, 0), ([1, 1, 2, "2", 2.0], 4, 4),  # exact below the sketch's size
    (list(range(1000)) * 3, 1000, 1000), (list(range(200_000)), 180_000, 220_000),
    ([i % 50_000 for i in range(300_000)], 45_000, 55_000),
])
def test_a_copy_counts_each_columns_distinct_values_in_constant_memory(values, low, high) -> None:
    from groundsql.db.sparkcopy import _Column

    column = _Column()
    for value in values:
        column.add(value)
    assert low <= column.distinct() <= high


@pytest.mark.parametrize("raw, said", [
    ("org.apache.hive.service.cli.HiveSQLException: Error running query: groundsql.spark.GuardException: "
     "${...} variable substitution is not allowed on this server\n\tat org.apache.spark.Foo(Foo.scala:1)",
     "${...} variable substitution is not allowed on this server"),
    ("Error running query: java.lang.OutOfMemoryError: Java heap space", "the Spark server ran out of memory"),
    ("Error running query: java.util.concurrent.ExecutionException: Boxed Exception", "internal error"),
    ("Job aborted: Total size of serialized results of 3 tasks (300.0 MiB) is bigger than spark.driver.maxResultSize",
     "larger than the Spark server returns at once"),
    ("[SPARK_JOB_CANCELLED] Job 115 cancelled groundsql: the query ran past the server's limit of 35 s",
     "cancelled the query at its time limit"),
    ("Error running query: org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table or view `x` "
     "cannot be found.\n\tat org.apache.spark.sql.Foo", "[TABLE_OR_VIEW_NOT_FOUND] The table or view `x` cannot be found."),
])
def test_sparks_errors_reach_a_person_as_one_sentence(raw: str, said: str) -> None:
    from groundsql.db.engines.spark import spark_message

    message = spark_message(raw)
    assert said in message and "\n" not in message and "org.apache" not in message and "java." not in message
