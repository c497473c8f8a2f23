"""MySQL and MariaDB: the validator's MySQL rules, the engine on a real server, the CLI.

The server is the local MariaDB on 127.0.0.1:3306 (root without a password; .ci/run starts it):
a uuid-named database per session (tests/conftest.py), read as `groundsql_reader`, an account
with SELECT on that database only, or as root where a test needs an account that could write.
Where no server answers the server tests skip (in CI they fail); `-m "not mysql"` leaves them
out.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from groundsql.config import DatabaseConfig, SafetyConfig
from groundsql.db import Database
from groundsql.db.engines import Limits, QueryTimedOut
from groundsql.db.engines.mysql import MySQLEngine
from groundsql.db.introspect import Catalog
from groundsql.errors import ConfigError, DatabaseError, QueryTimeoutError, UnsafeSQLError
from groundsql.safety import run_validated, validate_sql
from tests.conftest import mysql_connect, mysql_url, ok_answer
from tests.test_end_to_end import _cli

PRIVILEGED = DatabaseConfig(allow_privileged_role=True)
COUNTS = "SELECT (SELECT COUNT(*) FROM city), (SELECT COUNT(*) FROM country), (SELECT SUM(population) FROM city)"
BEFORE = ((3, 2, 5370000),)


def _admin(database: str):
    return mysql_connect(database)


def _rows(database: str, sql: str) -> list[tuple]:
    admin = _admin(database)
    try:
        with admin.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        admin.close()


# -- the validator (no server) ------------------------------------------------------------------


REFUSED = [
    ("SELECT name FROM city INTO OUTFILE '/tmp/groundsql_out'", "unparseable SQL"),
    ("SELECT name INTO DUMPFILE '/tmp/groundsql_out' FROM city", "unparseable SQL"),
    ("SELECT name INTO @x FROM city", "SELECT INTO"),
    ("LOAD DATA INFILE '/etc/passwd' INTO TABLE city", "unparseable SQL"),
    ("LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE city", "unparseable SQL"),
    ("SET GLOBAL read_only = 0", "SET"),
    ("SET SESSION sql_mode = 'ANSI_QUOTES'", "SET"),
    ("SET @x = 1", "SET"),
    ("HANDLER city OPEN", "unparseable SQL"),
    ("DO SLEEP(1)", "unparseable SQL"),
    ("SELECT @x := 1", "variable assignment"),
    ("SELECT name FROM city WHERE (@n := COALESCE(@n, 0) + 1) > 0", "variable assignment"),
    ("SELECT @x", "parameter"),
    ("SELECT @@version", "session variable"),
    ("SELECT @@global.secure_file_priv", "session variable"),
    ("LOCK TABLES city WRITE", "LOCK TABLES"),
    ("SELECT name FROM city FOR UPDATE", "FOR UPDATE lock"),
    ("SELECT name FROM city LOCK IN SHARE MODE", "FOR SHARE lock"),
    ("CALL groundsql_nothing()", "CALL"),
    ("PREPARE s FROM 'DELETE FROM city'", "PREPARE"),
    ("EXECUTE s", "EXECUTE"),
    ("KILL QUERY 1", "KILL"),
    ("SHOW GRANTS", "SHOW"),
    ("REPLACE INTO city VALUES (9, 'x', 1, 1)", "REPLACE"),
    ("SELECT 1; DELETE FROM city", "multiple statements"),
    ("SELECT 1 /*! , (SELECT authentication_string FROM mysql.user LIMIT 1) */", "executable comment"),
    ("SELECT name FROM city /*!50000 UNION SELECT user FROM mysql.user */", "executable comment"),
    ("SELECT 1 /*M! , 2 */", "executable comment"),
    ("/*! DELETE FROM city */ SELECT 1", "executable comment"),
    ("SELECT /*+ MAX_EXECUTION_TIME(100000) */ name FROM city", "optimizer hint"),
    ("SELECT name FROM city USE INDEX (PRIMARY)", "index hint"),
    ("SELECT _latin1'x'", "character set introducer"),
    ("SELECT LOAD_FILE('/etc/passwd')", "function load_file"),
    ("SELECT SLEEP(5)", "function sleep"),
    ("SELECT BENCHMARK(100000000, MD5('x'))", "function benchmark"),
    ("SELECT GET_LOCK('x', 0)", "function get_lock"),
    ("SELECT RELEASE_LOCK('x')", "function release_lock"),
    ("SELECT IS_FREE_LOCK('x')", "function is_free_lock"),
    ("SELECT RELEASE_ALL_LOCKS()", "function release_all_locks"),
    ("SELECT MASTER_POS_WAIT('log', 4)", "function master_pos_wait"),
    ("SELECT MASTER_GTID_WAIT('0-1-1')", "function master_gtid_wait"),
    ("SELECT sys_exec('touch /tmp/groundsql_pwned')", "function sys_exec"),
    ("SELECT sys_eval('id')", "function sys_eval"),
    ("SELECT NEXTVAL(s)", "function nextval"),
    ("SELECT user, authentication_string FROM mysql.user", "table mysql.user"),
    ("SELECT * FROM MYSQL.USER", "table mysql.user"),
    ("SELECT * FROM `mysql`.`global_priv`", "table mysql.global_priv"),
    ("SELECT * FROM performance_schema.threads", "table performance_schema.threads"),
    ("SELECT info FROM information_schema.processlist", "table information_schema.processlist"),
    ("SELECT * FROM sys.session", "table sys.session"),
]


@pytest.mark.parametrize("sql, construct", REFUSED)
def test_mysql_dangers_are_refused(sql: str, construct: str) -> None:
    with pytest.raises(UnsafeSQLError) as info:
        validate_sql(sql, "mysql")
    assert construct in info.value.construct, str(info.value)


def test_a_function_the_database_defines_is_refused() -> None:
    catalog = Catalog(tables={"city": frozenset({"name"})}, user_functions=frozenset({"concat_ws"}))
    with pytest.raises(UnsafeSQLError, match="defined by this database"):
        validate_sql("SELECT CONCAT_WS('-', name, name) FROM city", "mysql", SafetyConfig(), catalog)
    with pytest.raises(UnsafeSQLError, match="qualified name"):
        validate_sql("SELECT test.concat_ws(name) FROM city", "mysql")


def test_the_validator_names_mariadb_as_mysql() -> None:
    assert validate_sql("SELECT 1", "mariadb").sql == validate_sql("SELECT 1", "mysql").sql


# -- the engine on the server --------------------------------------------------------------------


@pytest.mark.mysql
def test_introspection_and_a_validated_query(mysql_reader_url: str) -> None:
    db = Database(mysql_reader_url)
    schema = db.introspect()
    assert schema.dialect == "mysql" and schema.name == db.url.database
    city = schema.table("city")
    assert city is not None and city.row_count == 3 and city.primary_key == ("city_id",)
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in city.foreign_keys] == [
        (("country_id",), "country", ("country_id",))]
    checked, result = run_validated(db, "SELECT c.name FROM city c JOIN country k ON k.country_id = c.country_id "
                                       "WHERE k.name = 'France' ORDER BY c.name", SafetyConfig())
    assert result.rows == (("Lyon",), ("Paris",)) and checked.limit_added


@pytest.mark.mysql
@pytest.mark.parametrize("scheme", ["mysql", "mysql+pymysql", "mariadb", "mariadb+pymysql"])
def test_every_spelling_of_the_url(mysql_reader_url: str, scheme: str) -> None:
    url = scheme + mysql_reader_url.removeprefix("mysql+pymysql")
    with Database(url) as db:
        assert db.dialect == "mysql"
        assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)
        assert "city" in db.catalog().tables


def test_a_url_without_a_database_is_refused() -> None:
    with pytest.raises(ConfigError, match="name the database"):
        Database("mysql+pymysql://groundsql_reader@127.0.0.1:3306")


@pytest.mark.mysql
def test_an_account_that_can_write_is_refused(mysql_admin_url: str) -> None:
    with pytest.raises(ConfigError, match=r"the role root may write \(it has the SUPER privilege") as info:
        Database(mysql_admin_url)
    assert "GRANT SELECT ON" in str(info.value) and "--allow-privileged-role" in str(info.value)
    assert Database(mysql_admin_url, PRIVILEGED).execute("SELECT 1").rows == ((1,),)


# One write (or server) privilege each, and what the refusal says about it.
GRANTS = {
    "file": ("GRANT FILE ON *.* TO {user}", "it has the FILE privilege"),
    "process": ("GRANT PROCESS ON *.* TO {user}", "it has the PROCESS privilege"),
    "shutdown": ("GRANT SHUTDOWN ON *.* TO {user}", "it has the SHUTDOWN privilege"),
    "insert": ("GRANT INSERT ON `{db}`.* TO {user}", "it has the INSERT privilege on database {db}"),
    "temporary": ("GRANT CREATE TEMPORARY TABLES ON `{db}`.* TO {user}",
                  "it has the CREATE TEMPORARY TABLES privilege on database {db}"),
    "delete": ("GRANT DELETE ON `{db}`.city TO {user}", "it has the DELETE privilege on table {db}.city"),
    "update": ("GRANT UPDATE (name) ON `{db}`.city TO {user}", "it has the UPDATE privilege on column {db}.city.name"),
    "grant": ("GRANT SELECT ON `{db}`.* TO {user} WITH GRANT OPTION", "it has the GRANT OPTION privilege"),
    "role": ("GRANT groundsql_test_writer TO {user}", "it acts with role groundsql_test_writer"),
}


@pytest.mark.mysql
@pytest.mark.parametrize("kind", GRANTS)
def test_an_account_with_one_write_privilege_is_refused(mysql_database: str, kind: str) -> None:
    grant, reason = GRANTS[kind]
    # An account of its own per kind: query workers keep their connections open.
    name = f"groundsql_test_{kind}"
    user = f"'{name}'@'%'"
    admin = _admin(mysql_database)
    try:
        with admin.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS {user}")
            cur.execute("DROP ROLE IF EXISTS groundsql_test_writer")
            cur.execute(f"CREATE USER {user}")
            cur.execute(f"GRANT SELECT ON `{mysql_database}`.* TO {user}")
            cur.execute("CREATE ROLE groundsql_test_writer")
            cur.execute(f"GRANT INSERT ON `{mysql_database}`.* TO groundsql_test_writer")
            cur.execute(grant.format(user=user, db=mysql_database))
            if grant.startswith("GRANT groundsql_test_writer"):
                cur.execute(f"SET DEFAULT ROLE groundsql_test_writer FOR {user}")
        url = mysql_url(mysql_database, name)
        with pytest.raises(ConfigError, match=r"may write \(") as info:
            Database(url)
        assert reason.format(db=mysql_database) in str(info.value)
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS {user}")
            cur.execute("DROP ROLE IF EXISTS groundsql_test_writer")
        admin.close()


# Straight to the executor (no validator), as root: the server refuses every write whatever
# the account may do, and the statements that are not a query never reach execution.
RAW_WRITES = [
    "INSERT INTO country VALUES (3, 'Chile')",
    "UPDATE city SET population = 0",
    "DELETE FROM city",
    "DROP TABLE city",
    "CREATE TABLE groundsql_evil (a INT)",
    "CREATE TEMPORARY TABLE groundsql_evil (a INT)",
    "SELECT 1; DELETE FROM city",
    "COMMIT; DELETE FROM city",
    "COMMIT",
    "START TRANSACTION READ WRITE",
    "SET SESSION TRANSACTION READ WRITE",
    "SET GLOBAL max_connections = 1",
    "SET @@SESSION.sql_mode = 'ANSI_QUOTES'",
    "SELECT name FROM city INTO OUTFILE '/tmp/groundsql_test_outfile'",
    "SELECT name FROM city LIMIT 1 INTO @groundsql_x",
    "LOAD DATA INFILE '/etc/passwd' INTO TABLE country",
    "HANDLER city OPEN",
    "DO GET_LOCK('groundsql_test', 0)",
    "LOCK TABLES city WRITE",
    "FLUSH TABLES",
    "KILL QUERY 999999999",
    "PREPARE s FROM 'DELETE FROM city'",
    "CALL groundsql_nothing()",
    "/*! DELETE FROM city */",
    "/*!50000 SET GLOBAL max_connections = 1 */ SELECT 1",
    "OPTIMIZE TABLE city",
    "WITH c AS (SELECT 1) DELETE FROM city",
    "SELECT groundsql_test_writes()",
]


@pytest.fixture
def writing_function(mysql_database: str):
    """A stored function that deletes rows: a SELECT that calls it is a query to the parser."""
    admin = _admin(mysql_database)
    with admin.cursor() as cur:
        cur.execute("CREATE FUNCTION groundsql_test_writes() RETURNS INT MODIFIES SQL DATA "
                    "BEGIN DELETE FROM city; RETURN 1; END")
    yield
    with admin.cursor() as cur:
        cur.execute("DROP FUNCTION groundsql_test_writes")
    admin.close()


@pytest.mark.mysql
def test_writes_are_refused_by_the_server_even_as_root(mysql_admin_url: str, mysql_database: str,
                                                       writing_function: None) -> None:
    db = Database(mysql_admin_url, PRIVILEGED)
    for statement in RAW_WRITES:
        with pytest.raises(DatabaseError):
            db.execute(statement)
        assert db.execute(COUNTS).rows == BEFORE, statement
    assert not Path("/tmp/groundsql_test_outfile").exists()
    assert _rows(mysql_database, "SELECT @@GLOBAL.max_connections")[0][0] != 1
    assert _rows(mysql_database, "SELECT IS_USED_LOCK('groundsql_test')") == [(None,)]
    tables = _rows(mysql_database, "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
    assert sorted(t for (t,) in tables) == ["city", "country"]


@pytest.mark.mysql
def test_the_reader_cannot_write_even_on_its_own_connection(mysql_reader_url: str, mysql_database: str) -> None:
    """Without groundsql at all: the account's grants refuse every write."""
    import pymysql

    conn = pymysql.connect(host="127.0.0.1", port=3306, user="groundsql_reader", database=mysql_database)
    try:
        for statement in ("INSERT INTO country VALUES (3, 'Chile')", "DELETE FROM city", "CREATE TABLE x (a INT)",
                          "CREATE TEMPORARY TABLE x (a INT)", "SELECT 1 INTO OUTFILE '/tmp/groundsql_test_r'",
                          "SET GLOBAL max_connections = 1"):
            with pytest.raises(pymysql.err.MySQLError), conn.cursor() as cur:
                cur.execute(statement)
    finally:
        conn.close()
    assert _rows(mysql_database, COUNTS) == list(BEFORE)


@pytest.mark.mysql
def test_one_statement_per_request_and_no_local_files(mysql_reader_url: str) -> None:
    from pymysql.constants import CLIENT

    spec = Database(mysql_reader_url)._spec()
    engine = MySQLEngine()
    session = engine.connect(spec)
    try:
        assert not session.conn.client_flag & (CLIENT.MULTI_STATEMENTS | CLIENT.LOCAL_FILES)
        with session.conn.cursor() as cur:
            cur.execute("SELECT @@SESSION.tx_read_only, @@SESSION.sql_mode")
            assert cur.fetchall() == ((1, ""),)
    finally:
        engine.close(session)


@pytest.mark.mysql
def test_a_query_is_stopped_at_its_timeout(mysql_reader_url: str) -> None:
    db = Database(mysql_reader_url)
    start = time.perf_counter()
    with pytest.raises(QueryTimeoutError):
        db.execute("SELECT SLEEP(5)", timeout_s=0.5)
    assert time.perf_counter() - start < 3
    assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)


@pytest.mark.mysql
def test_the_server_stops_a_query_by_itself(mysql_reader_url: str) -> None:
    """No timer here: the server's own limit (max_statement_time) ends the query."""
    engine = MySQLEngine()
    session = engine.connect(Database(mysql_reader_url)._spec())
    try:
        start = time.perf_counter()
        with pytest.raises(QueryTimedOut):
            engine.run(session, "SELECT SLEEP(5)", Limits(0.5, 10, 2**20))
        assert time.perf_counter() - start < 3
        assert engine.run(session, "SELECT COUNT(*) FROM city", Limits(5, 10, 2**20))[1] == [(3,)]
    finally:
        engine.close(session)


@pytest.mark.mysql
def test_kill_query_interrupts_from_a_second_connection(mysql_reader_url: str, mysql_database: str) -> None:
    engine = MySQLEngine()
    session = engine.connect(Database(mysql_reader_url)._spec())
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            engine.run(session, "SELECT SLEEP(20)", Limits(60, 10, 2**20))
        except BaseException as err:  # noqa: BLE001 - the interrupt is the outcome looked for
            outcome.append(err)

    try:
        thread = threading.Thread(target=run)
        thread.start()
        time.sleep(0.5)
        start = time.perf_counter()
        engine.interrupt(session)
        thread.join(10)
        assert not thread.is_alive() and time.perf_counter() - start < 3
        assert outcome and isinstance(outcome[0], QueryTimedOut)
        running = _rows(mysql_database, f"SELECT COUNT(*) FROM information_schema.processlist "
                                        f"WHERE id = {session.conn.thread_id()} AND info LIKE '%SLEEP%'")
        assert running == [(0,)]
        assert engine.run(session, "SELECT COUNT(*) FROM country", Limits(5, 10, 2**20))[1] == [(2,)]
    finally:
        engine.close(session)


@pytest.mark.mysql
def test_row_cap_truncation_and_streaming(mysql_reader_url: str) -> None:
    db = Database(mysql_reader_url, DatabaseConfig(max_rows=2, workers=1))
    result = db.execute("SELECT name FROM city ORDER BY name")
    assert result.rows == (("Lyon",), ("Osaka",)) and result.truncated
    assert not db.execute("SELECT name FROM city", max_rows=3).truncated
    start = time.perf_counter()
    # Three million rows of 100 bytes from MariaDB's sequence engine: an unbuffered cursor
    # fetches a thousand and ends the connection, which stops the server.
    big = db.execute("SELECT seq, REPEAT('x', 100) FROM seq_1_to_3000000 LIMIT 3000000", max_rows=1000, timeout_s=10)
    assert len(big.rows) == 1000 and big.truncated
    assert time.perf_counter() - start < 5
    assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)  # on a new connection


@pytest.mark.mysql
def test_the_result_byte_cap_holds(mysql_reader_url: str) -> None:
    db = Database(mysql_reader_url, DatabaseConfig(max_result_bytes=4 * 2**20))
    result = db.execute("SELECT seq, REPEAT('x', 1000000) FROM seq_1_to_1000")
    assert result.truncated and 2 <= len(result.rows) <= 4
    with pytest.raises(DatabaseError, match="single row is larger"):
        db.execute("SELECT REPEAT('x', 3000000), REPEAT('y', 3000000)")


@pytest.mark.mysql
def test_session_state_does_not_outlive_a_query(mysql_admin_url: str, mysql_database: str) -> None:
    db = Database(mysql_admin_url, DatabaseConfig(allow_privileged_role=True, workers=1))
    assert db.execute("SELECT GET_LOCK('groundsql_test_lock', 0), @groundsql_x := 42").rows == ((1, 42),)
    assert _rows(mysql_database, "SELECT IS_USED_LOCK('groundsql_test_lock')") == [(None,)]
    assert db.execute("SELECT @groundsql_x, @@SESSION.sql_mode, @@SESSION.tx_read_only").rows == ((None, "", 1),)


@pytest.mark.mysql
def test_a_killed_connection_is_replaced(mysql_reader_url: str, mysql_database: str) -> None:
    db = Database(mysql_reader_url, DatabaseConfig(workers=1))
    assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)
    ours = _rows(mysql_database, f"SELECT id FROM information_schema.processlist "
                                 f"WHERE user = 'groundsql_reader' AND db = '{mysql_database}'")
    assert ours
    admin = _admin(mysql_database)
    try:
        with admin.cursor() as cur:
            for (thread,) in ours:
                cur.execute(f"KILL CONNECTION {thread}")
    finally:
        admin.close()
    assert db.execute("SELECT COUNT(*) FROM city").rows == ((3,),)


@pytest.mark.mysql
def test_percent_and_backslash_are_characters(mysql_reader_url: str) -> None:
    db = Database(mysql_reader_url)
    rows = db.execute("SELECT name FROM city WHERE name LIKE 'L%' OR name LIKE '%r%' ORDER BY name").rows
    assert rows == (("Lyon",), ("Paris",))
    assert db.execute("SELECT 'a\\\\b', 'it''s', \"q\"").rows == (("a\\b", "it's", "q"),)


# What the server runs is the validated rendering: for these statements it must evaluate to
# what the statement the validator was given evaluates to (MariaDB's lexer and sqlglot's agree
# on where strings, identifiers and comments begin and end, backslash escapes included).
LEXING = [
    r"'a\'b'", r"'a\\'", r"'a\\\'b'", r"'\\'' OR 1=1 -- '", r"'x\' OR 1=1 #'", r"'a\nb'", r"'a\0b'", r"'a\Zb'",
    r"'a\%b'", r"'a\_b'", r"'a\xb'", r"'a\"b'", r'"a\"b"', r'"a""b"', r'"a\'b"', r"'a''b'", r"'a' 'b'",
    r"'/*' '*/'", r"'--'", r"'#'", r"'/*!50000 x */'", r"N'a\'b'", r"X'41'", r"0x41", r"'\t\r\b'", "'a\\\nb'",
    r"'\\\\'", r'"\\"', r'"\\\""', r"'\"'", r"1 AS `x``y`", r"'a_' LIKE 'a\_'", r"'%' LIKE '\%'",
    r"'ab' LIKE 'a\b'", "'x' /* ' */", "'x' -- '\n", "1--1", "1 -- 1\n+2", "'x' # '\n", "!1", "1 || 0",
    "'a' || 'b'", "1 && 0", "5 DIV 2", "0b101", r"'\\'' '",
]


@pytest.mark.mysql
def test_what_runs_is_what_was_validated(mysql_reader_url: str) -> None:
    db = Database(mysql_reader_url)
    for literal in LEXING:
        sql = f"SELECT {literal}"
        checked = validate_sql(sql, "mysql")
        assert db.execute(checked.sql).rows == db.execute(sql).rows, (sql, checked.sql)


@pytest.mark.mysql
def test_analyst_functions_run_on_the_server(mysql_reader_url: str) -> None:
    db = Database(mysql_reader_url)
    sql = ("SELECT DATE_FORMAT('2024-03-05', '%Y-%m'), YEAR('2024-03-05'), MONTH('2024-03-05'), "
           "DATEDIFF('2024-03-05', '2024-03-01'), IFNULL(NULL, 1), CONCAT_WS('-', 'a', 'b'), "
           "GROUP_CONCAT(name ORDER BY name SEPARATOR ';'), IF(COUNT(*) > 2, 'many', 'few'), "
           "ROUND(AVG(population) / 1000), SUBSTRING_INDEX('a.b', '.', 1), TIMESTAMPDIFF(DAY, '2024-01-01', "
           "'2024-01-31'), LAST_DAY('2024-02-10') FROM city")
    _, result = run_validated(db, sql, SafetyConfig())
    assert result.rows[0][:8] == ("2024-03", 2024, 3, 4, 1, "a-b", "Lyon;Osaka;Paris", "many")
    assert result.rows[0][9:11] == ("a", 30)


@pytest.mark.mysql
def test_functions_the_database_defines_are_in_its_catalog(mysql_admin_url: str, writing_function: None) -> None:
    db = Database(mysql_admin_url, PRIVILEGED)
    assert "groundsql_test_writes" in db.catalog().user_functions
    with pytest.raises(UnsafeSQLError, match="defined by this database"):
        validate_sql("SELECT groundsql_test_writes()", "mysql", SafetyConfig(), db.catalog())


# -- the command line ---------------------------------------------------------------------------


@pytest.mark.mysql
def test_ask_through_the_cli(mysql_reader_url: str, http_server) -> None:
    url, handler = http_server
    sql = "SELECT COUNT(*) FROM city JOIN country ON country.country_id = city.country_id WHERE country.name = 'France'"
    handler.script.append((200, ok_answer(sql), 0.0))
    done = _cli("ask", "--backend", "openai", "--base-url", url, "--model", "m", "--json", "--no-cache", "--strategy", "zero-shot",
                "--db", mysql_reader_url, "How many cities are in France?")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["rows"] == [[2]] and "LIMIT 1000" in answer["sql"]
    prompt = json.dumps(handler.seen[0]["body"])
    assert "city" in prompt and "country_id" in prompt  # the schema as introspected from MariaDB

# The CLI refusing a privileged account: test_cli.py, beside PostgreSQL's.
