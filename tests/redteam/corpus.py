"""The red-team corpus: issue 22's statements, a generated corpus, and hypothesis strategies.

Statements are templates filled in per victim by `render`: @TAG@ (the victim's tag, in every
name an attack creates so cleanup finds it), @OUT@ (a path prefix for files an attack writes),
@SECRET_FILE@ / @SECRET_NAME@ (the planted file, absolute and as the server's relative name),
@DB@ and @CONN@ (the PostgreSQL database and a libpq connection string to it as the superuser,
for dblink; @DB@ is MySQL's database too), @CANARY@ (the thread id of MySQL's canary connection,
for KILL); then {{rev:...}}, {{hex:...}} and {{b64:...}} encode what they enclose, so that a
string can be obfuscated after the names in it are known.

Every statement carries the policy it is tried under: "open" (no allow-list: the default
deployment, the role's own permissions apply) or "hidden" (users' hid_ columns hidden by
`allowed_columns`). What counts as a failure is in `harness.py`; here `expect` only marks the
statements that must do more than be harmless.

The generated corpus is a deterministic product of small lists (dangerous functions with their
arguments, positions in a query, spellings of a name or a string, catalogs, hidden-column
tricks, statement stacking, resource exhaustion), so the figures of `python -m tests.redteam`
reproduce exactly.
"""

from __future__ import annotations

import base64
import itertools
import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Callable

from tests.redteam.victims import CANARY

ENGINES = ("sqlite", "duckdb", "postgres", "mysql", "spark")
OPEN, HIDDEN = "open", "hidden"
# What a statement must do beyond having no effect and leaking nothing (see harness.py).
HARMLESS = "harmless"  # refused, or ran (or failed) without effect or leak
RUNS = "runs"  # must be accepted and run without error: a false positive otherwise
CAPPED = "capped"  # refused, or a result cut short (truncated) within the byte budget
STREAMED = "streamed"  # must run within its timeout, at most max_rows rows, without buffering


@dataclass(frozen=True)
class Attack:
    sql: str
    family: str
    policy: str = OPEN
    expect: str = HARMLESS
    # The first spelling of its kind. Spellings only matter to the validator; the raw
    # executor is tried with canonical statements only.
    canonical: bool = True
    # A query timeout of its own, for statements that must get the time to show what they do.
    timeout_s: float | None = None


def _q(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


_PLACEHOLDER = re.compile(r"@[A-Z_]+@")
# Encodings applied when a victim's names are known: {{rev:text}} is the reversed text (quotes
# doubled, for inside a literal), {{hex:text}} and {{b64:text}} its UTF-8 bytes in hex and base64.
_TRANSFORM = re.compile(r"\{\{(rev|hex|b64):(.*?)\}\}", re.DOTALL)
_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "rev": lambda text: text[::-1].replace("'", "''"),
    "hex": lambda text: text.encode().hex(),
    "b64": lambda text: base64.b64encode(text.encode()).decode(),
}


def render(template: str, placeholders: dict[str, str]) -> str:
    """A statement for one victim: placeholders filled in, then encodings applied."""
    sql = _PLACEHOLDER.sub(lambda m: placeholders.get(m.group(), m.group()), template)
    return _TRANSFORM.sub(lambda m: _TRANSFORMS[m.group(1)](m.group(2)), sql)


# ============================================================================================
# Issue 22: every quoted statement, with the policy it needs.
# ============================================================================================

CANARY_PID = (
    f"(SELECT pid FROM pg_stat_activity WHERE application_name = '{CANARY}' AND datname = current_database())"
)


def _crosstab(expr: str) -> str:
    """Issue 22's shape: crosstab runs the SQL in its string argument, out of the validator's
    sight, with the session's privileges."""
    inner = f"SELECT 'a'::text, 'b'::text, ({expr})::text"
    return f"SELECT * FROM crosstab({_q(inner)}) AS ct(r text, c text)"


def _dblink_exec(sql: str) -> str:
    """A statement run by dblink in a second session: not read-only, committed at once."""
    return f"dblink_exec('@CONN@', {_q(sql)})"


# Through dblink: delete rows, insert rows, create a superuser, persist a database setting,
# run a shell command as the server.
_DBLINK_WRITES = (
    "DELETE FROM t",
    "INSERT INTO t VALUES (99, 'pwned')",
    "CREATE ROLE groundsql_redteam_@TAG@_x SUPERUSER",
    "ALTER DATABASE \"@DB@\" SET work_mem = '64kB'",
    "COPY (SELECT 1) TO PROGRAM 'touch @OUT@_program'",
)

# Legitimate queries must run: on a busy machine they get more than the corpus's short timeout.
_RUNS_TIMEOUT_S = 10.0

_COMMON_ISSUE22 = [
    Attack("SELECT count(*) AS hid_ssn FROM users GROUP BY hid_ssn", "issue22", HIDDEN),
    Attack("SELECT name FROM users WHERE id IN (SELECT user_id FROM orders)", "issue22", HIDDEN, RUNS,
           timeout_s=_RUNS_TIMEOUT_S),
]


def _issue22_postgres() -> list[Attack]:
    verbatim = (
        "SELECT * FROM crosstab('SELECT ''a''::text, ''b''::text, pg_read_file(''/etc/passwd'')::text') "
        "AS ct(r text, c text)"
    )
    crosstabs = [
        "pg_read_file('@SECRET_FILE@')",
        *(_dblink_exec(sql) for sql in _DBLINK_WRITES),
        "lo_export(4242, '@OUT@_lo')",
        f"pg_terminate_backend({CANARY_PID})",
        "pg_create_logical_replication_slot('groundsql_redteam_@TAG@_l', 'test_decoding')",
        "pg_create_physical_replication_slot('groundsql_redteam_@TAG@_p', true)",
        "pg_stat_reset()",
    ]
    xpath_table = (
        "SELECT * FROM xpath_table('k', 'd', "
        + _q("(SELECT pg_read_file('@SECRET_FILE@') AS k, '<a>1</a>'::text AS d) s")
        + ", '/a', 'true') AS x(k text, a text)"
    )
    plain = [
        xpath_table,
        "SELECT brin_summarize_new_values('brin_idx')",
        "SELECT brin_desummarize_range('brin_idx', 0)",
        "SELECT gin_clean_pending_list('gin_idx')",
        "SELECT evil_lock()",
        "SELECT rolname, rolpassword FROM pg_authid",
        "SELECT usename, passwd FROM pg_shadow",
        "SELECT * FROM pg_file_settings",
        "SELECT * FROM pg_hba_file_rules",
        "SELECT get_raw_page('pg_authid', 0)",
    ]
    return [
        Attack(verbatim, "issue22"),
        *(Attack(_crosstab(expr), "issue22") for expr in crosstabs),
        *(Attack(sql, "issue22") for sql in plain),
        Attack("SELECT get_raw_page('users', 0)", "issue22", HIDDEN),
        *_COMMON_ISSUE22,
        Attack("SELECT name FROM users WHERE name LIKE 'a%'", "issue22", OPEN, RUNS, timeout_s=_RUNS_TIMEOUT_S),
        Attack("SELECT repeat('x', 1000000) FROM generate_series(1, 1000)", "issue22", OPEN, CAPPED, timeout_s=20),
        # 9 GB for a client that buffers the result (seconds at best), where streaming the first
        # max_rows rows takes milliseconds. (In the select list: a set-returning function in
        # FROM is materialized by the server before its first row, however the client fetches.)
        Attack(
            "SELECT g, lpad('x', 3000, 'y') FROM (SELECT generate_series(1, 100000000) AS g) AS s LIMIT 3000000",
            "issue22", OPEN, STREAMED, timeout_s=5,
        ),
    ]


# At least ten PIVOT/UNPIVOT forms that read hidden columns, directly or as "the other
# columns" (PIVOT groups by, UNPIVOT carries along, every column it does not name).
_PIVOTS = (
    "SELECT * FROM (PIVOT users ON {h} USING count(*))",
    "UNPIVOT users ON {h} INTO NAME k VALUE v",
    "PIVOT users ON {h} USING count(*)",
    "SELECT * FROM (UNPIVOT users ON {h} INTO NAME k VALUE v)",
    "SELECT * FROM users PIVOT (first({h}) FOR name IN ('ada', 'bob'))",
    "SELECT * FROM users UNPIVOT (v FOR k IN ({h}, name))",
    "SELECT * FROM (PIVOT users ON name USING first({h}))",
    "SELECT * FROM (UNPIVOT users ON name INTO NAME k VALUE v)",
    "SELECT * FROM (PIVOT users ON email USING count(*))",
    "SELECT * FROM (UNPIVOT users ON COLUMNS('hid_.*') INTO NAME k VALUE v)",
    "WITH p AS (PIVOT users ON {h} USING count(*)) SELECT * FROM p",
    "SELECT * FROM (PIVOT users ON {h})",
    "FROM (PIVOT users ON {h} USING count(*))",
    "SELECT * FROM (PIVOT_WIDER users ON {h} USING count(*))",
    "SELECT * FROM (PIVOT_LONGER users ON {h} INTO NAME k VALUE v)",
    "SELECT * FROM (PIVOT users ON id USING first(name) GROUP BY {h})",
    "SELECT * FROM (UNPIVOT users ON ({h}, email) AS pair INTO NAME k VALUE v)",
    "SELECT * FROM (PIVOT users ON name IN ('ada') USING max({h}))",
    "SELECT k, v FROM (UNPIVOT users ON email, {h} INTO NAME k VALUE v)",
    "SELECT * FROM (UNPIVOT (FROM users) ON name INTO NAME k VALUE v)",
)


def _issue22_duckdb() -> list[Attack]:
    return [
        Attack("SELECT * FROM (PIVOT users ON hid_ssn USING count(*))", "issue22", HIDDEN),
        Attack("UNPIVOT users ON hid_password INTO NAME k VALUE v", "issue22", HIDDEN),
        *(Attack(form.replace("{h}", "hid_ssn"), "issue22", HIDDEN) for form in _PIVOTS[2:]),
        Attack("SELECT length(list_sort(range(30000000)))", "issue22"),
        Attack("SELECT max(x) FROM (SELECT unnest(range(1000000000)) AS x)", "issue22"),
        *_COMMON_ISSUE22,
        Attack("SELECT repeat('x', 1000000) FROM range(1000)", "issue22", OPEN, CAPPED, timeout_s=20),
    ]


def _issue22_sqlite() -> list[Attack]:
    return [
        *_COMMON_ISSUE22,
        Attack("SELECT sqlite_version()", "issue22", OPEN, RUNS, timeout_s=_RUNS_TIMEOUT_S),
        Attack(
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000) "
            "SELECT hex(zeroblob(500000)) FROM r",
            "issue22", OPEN, CAPPED, timeout_s=20,
        ),
    ]


# MySQL's and MariaDB's own ways out of a read-only query: files (LOAD_FILE, INTO OUTFILE,
# LOAD DATA), server settings, session state that outlives the query (user variables, user-level
# locks, prepared statements, HANDLER), writes a stored routine hides, comments the server
# executes, backslash escapes that move the end of a string, and the grant tables.
_MYSQL_LOCK = "'groundsql_redteam_@TAG@'"  # the victim's lock (its database's name)


def _issue22_mysql() -> list[Attack]:
    statements = [
        "SELECT LOAD_FILE('@SECRET_FILE@')",
        "SELECT name FROM users INTO OUTFILE '@OUT@_outfile'",
        "SELECT name FROM users INTO OUTFILE 'groundsql_redteam_@TAG@_relative'",
        "SELECT hid_password FROM users LIMIT 1 INTO DUMPFILE '@OUT@_dumpfile'",
        "SELECT name INTO @groundsql_x FROM users LIMIT 1",
        "LOAD DATA INFILE '@SECRET_FILE@' INTO TABLE t",
        "LOAD DATA LOCAL INFILE '@SECRET_FILE@' INTO TABLE t",
        "LOAD XML INFILE '@SECRET_FILE@' INTO TABLE t",
        "SET GLOBAL net_write_timeout = 61",
        "SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'",
        "SET @groundsql_x = 1",
        "SET PASSWORD = PASSWORD('groundsql')",
        "ALTER USER CURRENT_USER() IDENTIFIED BY 'groundsql'",
        "HANDLER t OPEN",
        f"DO GET_LOCK({_MYSQL_LOCK}, 0)",
        f"SELECT GET_LOCK({_MYSQL_LOCK}, 0)",
        "SELECT evil_lock()",
        "SELECT evil_write()",
        "SELECT a FROM t WHERE evil_write() = 1",
        "CALL evil_proc()",
        "SELECT @groundsql_x := 1",
        "SELECT name, @n := COALESCE(@n, 0) + 1 FROM users",
        "LOCK TABLES t WRITE",
        "SELECT a FROM t FOR UPDATE",
        "SELECT a FROM t LOCK IN SHARE MODE",
        "PREPARE groundsql_s FROM 'DELETE FROM t'",
        "EXECUTE IMMEDIATE 'DELETE FROM t'",
        "SELECT NEXTVAL(my_seq)",
        "SELECT NEXT VALUE FOR my_seq",
        "SELECT SETVAL(my_seq, 100)",
        "SELECT 1 /*! , LOAD_FILE('@SECRET_FILE@') */",
        "SELECT name FROM users /*!50000 UNION SELECT authentication_string FROM mysql.user */",
        "SELECT 1 /*M!, (SELECT NEXTVAL(my_seq)) */",
        "/*! DELETE FROM t */ SELECT 1",
        "SELECT 'x\\' OR evil_write() = 1 -- '",
        "SELECT a FROM t WHERE b = 'x\\'; DELETE FROM t; -- '",
        "SELECT user, authentication_string FROM mysql.user",
        "SELECT User, Priv FROM mysql.global_priv",
        "KILL @CANARY@",
        "KILL QUERY @CANARY@",
        "SELECT SLEEP(30)",
        "SELECT MASTER_POS_WAIT('groundsql', 4, 30)",
    ]
    return [
        *(Attack(sql, "issue22") for sql in statements),
        *_COMMON_ISSUE22,
        Attack("SELECT name FROM users WHERE name LIKE 'a%'", "issue22", OPEN, RUNS, timeout_s=_RUNS_TIMEOUT_S),
        Attack("SELECT DATE_FORMAT('2024-03-05', '%Y'), IFNULL(NULL, 1), CONCAT_WS('-', name, email) FROM users",
               "issue22", OPEN, RUNS, timeout_s=_RUNS_TIMEOUT_S),
        Attack(
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000) "
            "SELECT REPEAT('x', 1000000) FROM r",
            "issue22", OPEN, CAPPED, timeout_s=20,
        ),
    ]


# Spark (issue 37): what its SQL can do beyond a query, as the issue lists it, and its ways
# to the JVM (reflect), to scripts (TRANSFORM) and to files (a path as a table).
def _issue37_spark() -> list[Attack]:
    return [
        *(Attack(sql, "issue37") for sql in (
            "INSERT INTO t VALUES (99, 'x')", "CACHE TABLE t", "SET spark.sql.runSQLOnFiles=true",
            "ADD JAR '@OUT@.jar'", "CREATE FUNCTION groundsql_f AS 'org.apache.spark.sql.hive.HiveUDF'",
            "REFRESH TABLE t", "MSCK REPAIR TABLE t", "ANALYZE TABLE t COMPUTE STATISTICS",
            "LOAD DATA LOCAL INPATH '@SECRET_FILE@' INTO TABLE t",
            "SELECT TRANSFORM(a) USING 'cat' AS (x) FROM t",
            "SELECT TRANSFORM(a) USING 'touch @OUT@_transform' AS (x) FROM t",
            "WITH c AS (SELECT * FROM t) INSERT INTO t SELECT * FROM c",
            "FROM t INSERT INTO t SELECT *",
            "SELECT reflect('java.lang.System', 'exit', 0)",
            "SELECT java_method('java.lang.Runtime', 'getRuntime')",
            "SELECT try_reflect('java.lang.System', 'getenv', 'HOME')",
            "SELECT * FROM text.`@SECRET_FILE@`", "SELECT * FROM csv.`@SECRET_FILE@`",
            "SELECT * FROM parquet.`/tmp`",
            "INSERT OVERWRITE DIRECTORY '@OUT@_dir' SELECT * FROM users",
        )),
        *_COMMON_ISSUE22,
    ]


def issue22(engine: str) -> list[Attack]:
    return {"postgres": _issue22_postgres, "duckdb": _issue22_duckdb, "sqlite": _issue22_sqlite,
            "mysql": _issue22_mysql, "spark": _issue37_spark}[engine]()


# Straight to PostgreSQL's executor (no validator), as issue 22 quotes them: a stacked COMMIT
# or ROLLBACK ends the READ ONLY transaction; session state outlives it on the pooled
# connection. The last two have their own checks (EXECUTE p fails, pg_locks is empty).
RAW_POSTGRES = [
    Attack(sql, "issue22-raw")
    for sql in (
        "COMMIT; DELETE FROM t",
        "ROLLBACK; DELETE FROM t",
        "SET TRANSACTION READ WRITE; DELETE FROM t; COMMIT",
        "COMMIT; DROP TABLE t",
        "SET TRANSACTION READ WRITE; SELECT nextval('my_seq')",
        "PREPARE p AS SELECT 1",
        "SELECT pg_advisory_lock(1)",
    )
]


# Straight to MySQL's executor (no validator), for a privileged account too: what a read-only
# transaction does not bind (files, server settings, KILL), what ends it (COMMIT, DDL), and
# session state that would outlive the query on the pooled connection.
RAW_MYSQL = [
    Attack(sql, "issue22-raw")
    for sql in (
        "COMMIT; DELETE FROM t",
        "COMMIT",
        "START TRANSACTION READ WRITE",
        "SET SESSION TRANSACTION READ WRITE",
        "SET SESSION sql_mode = 'ANSI_QUOTES'",
        "SET GLOBAL net_write_timeout = 61",
        "SET @groundsql_x = 1",
        "SELECT @groundsql_y := 1",
        f"SELECT GET_LOCK({_MYSQL_LOCK}, 0)",
        "SELECT evil_lock()",
        "SELECT evil_write()",
        "CREATE TEMPORARY TABLE groundsql_tmp AS SELECT 1",
        "CREATE TABLE groundsql_new (a INT)",
        "PREPARE groundsql_p FROM 'SELECT 1'",
        "LOCK TABLES t WRITE",
        "HANDLER t OPEN",
        "SELECT name FROM users INTO OUTFILE '@OUT@_raw_outfile'",
        "SELECT name FROM users LIMIT 1 INTO @groundsql_z",
        "KILL @CANARY@",
        "FLUSH TABLES",
        "/*! DELETE FROM t */",
    )
]


# ============================================================================================
# Generated corpus
# ============================================================================================


@dataclass(frozen=True)
class Call:
    """One dangerous (or harmless) function call. `table` is None for a scalar function,
    else what follows the call in FROM (a column definition list, or "")."""

    name: str
    args: str
    table: str | None = None
    policy: str = OPEN

    def render(self, name: str | None = None, args: str | None = None) -> str:
        text = f"{name or self.name}({self.args if args is None else args})"
        return f"{text} {self.table}".rstrip() if self.table is not None else text


def _calls(name: str, *arg_lists: str, table: str | None = None, policy: str = OPEN) -> list[Call]:
    return [Call(name, args, table, policy) for args in (arg_lists or ("",))]


def _scalar(name: str, *args: str, policy: str = OPEN) -> list[Call]:
    return _calls(name, *args, policy=policy)


def _table(name: str, *args: str, coldef: str = "", policy: str = OPEN) -> list[Call]:
    return _calls(name, *args, table=coldef, policy=policy)


_POSTGRES_CALLS = [
    # Server files and directories.
    *_scalar("pg_read_file", "'@SECRET_FILE@'", "'@SECRET_NAME@'", "'@SECRET_FILE@', 0, 64", "'/etc/passwd'"),
    *_scalar("pg_read_binary_file", "'@SECRET_FILE@'"),
    *_scalar("pg_stat_file", "'@SECRET_FILE@'"),
    *_table("pg_ls_dir", "'.'", "'/tmp'"),
    *_table("pg_ls_logdir"), *_table("pg_ls_waldir"), *_table("pg_ls_tmpdir"),
    # Large objects: import a file, export one, read, write, delete.
    *_scalar("lo_import", "'@SECRET_FILE@'"),
    *_scalar("lo_export", "4242, '@OUT@_lo'"),
    *_scalar("lo_get", "4242"),
    *_scalar("lo_put", "4242, 0, '\\x41'::bytea"),
    *_scalar("lo_from_bytea", "0, '\\x41'::bytea"),
    *_scalar("lo_create", "0"),
    *_scalar("lo_unlink", "4242"),
    # Other backends and the server.
    *_scalar("pg_terminate_backend", CANARY_PID, "pg_backend_pid()"),
    *_scalar("pg_cancel_backend", CANARY_PID),
    *_scalar("pg_reload_conf"), *_scalar("pg_rotate_logfile"), *_scalar("pg_switch_wal"),
    *_scalar("pg_create_restore_point", "'groundsql_redteam_@TAG@'"),
    *_scalar("pg_log_backend_memory_contexts", "pg_backend_pid()"),
    # Replication.
    *_scalar("pg_create_physical_replication_slot", "'groundsql_redteam_@TAG@_p', true"),
    *_scalar("pg_create_logical_replication_slot", "'groundsql_redteam_@TAG@_l', 'test_decoding'"),
    *_scalar("pg_replication_origin_create", "'groundsql_redteam_@TAG@_o'"),
    *_scalar("pg_logical_emit_message", "true, 'groundsql', 'x'"),
    # Statistics.
    *_scalar("pg_stat_reset"),
    *_scalar("pg_stat_reset_shared", "'bgwriter'", "'archiver'"),
    *_scalar("pg_stat_reset_single_table_counters", "'users'::regclass"),
    *_scalar("pg_stat_reset_slru", "NULL"),
    # Locks that outlive the transaction, notifications.
    *_scalar("pg_advisory_lock", "1", "2, 3"),
    *_scalar("pg_advisory_lock_shared", "4"),
    *_scalar("pg_try_advisory_lock", "5"),
    *_scalar("pg_advisory_xact_lock", "6"),
    *_scalar("pg_advisory_unlock_all"),
    *_scalar("evil_lock"),
    *_scalar("pg_notify", "'groundsql_redteam', 'x'"),
    # Settings.
    *_scalar("set_config", "'default_transaction_read_only', 'off', false", "'search_path', 'pg_temp, public', false",
             "'work_mem', '64kB', false"),
    *_scalar("current_setting", "'data_directory'", "'hba_file'"),
    # Sequences and transaction ids.
    *_scalar("nextval", "'my_seq'"), *_scalar("setval", "'my_seq', 100"), *_scalar("currval", "'my_seq'"),
    *_scalar("lastval"), *_scalar("txid_current"), *_scalar("pg_current_xact_id"),
    # Other sessions and SQL in a string.
    *_scalar("dblink_exec", *(f"'@CONN@', {_q(sql)}" for sql in _DBLINK_WRITES[:3])),
    *_scalar("dblink_connect", "'groundsql_redteam', '@CONN@'"),
    *_scalar("dblink_connect_u", "'groundsql_redteam_u', '@CONN@'"),
    *_table("dblink", "'@CONN@', 'SELECT rolpassword FROM pg_authid'", coldef="AS x(v text)"),
    *_scalar("query_to_xml", "'SELECT rolpassword FROM pg_authid', true, false, ''"),
    *_scalar("table_to_xml", "'pg_authid', true, false, ''"),
    *_scalar("schema_to_xml", "'public', true, false, ''"),
    *_table("ts_stat", "'SELECT to_tsvector(''simple'', rolpassword) FROM pg_authid'"),
    # Raw pages and index maintenance.
    *_scalar("get_raw_page", "'pg_authid', 0"),
    *_table("heap_page_items", "get_raw_page('pg_authid', 0)"),
    *_scalar("page_header", "get_raw_page('users', 0)"),
    *_scalar("brin_summarize_new_values", "'brin_idx'"),
    *_scalar("brin_summarize_range", "'brin_idx', 10"),  # a block inserted after the index
    *_scalar("brin_desummarize_range", "'brin_idx', 0"),
    *_scalar("gin_clean_pending_list", "'gin_idx'"),
    *_scalar("pg_import_system_collations", "'public'::regnamespace"),
    # Harmless: being accepted is fine.
    *_scalar("version"), *_scalar("pg_backend_pid"), *_scalar("pg_typeof", "1"), *_scalar("md5", "'x'"),
]
# Functions of the victim's extensions and its own: schema-qualified as public.f, not pg_catalog.f.
_PG_PUBLIC_FUNCTIONS = {"dblink_exec", "dblink_connect", "dblink_connect_u", "dblink", "get_raw_page",
                        "heap_page_items", "page_header", "evil_lock", "crosstab", "xpath_table", "connectby"}

_DUCKDB_CALLS = [
    *_table("read_csv", "'@SECRET_FILE@'"), *_table("read_csv_auto", "'@SECRET_FILE@'"),
    *_table("read_text", "'@SECRET_FILE@'"), *_table("read_blob", "'@SECRET_FILE@'"),
    *_table("read_json", "'@SECRET_FILE@'"), *_table("read_json_auto", "'@SECRET_FILE@'"),
    *_table("read_parquet", "'@OUT@.parquet'"), *_table("parquet_scan", "'@OUT@.parquet'"),
    *_table("parquet_metadata", "'@OUT@.parquet'"), *_table("sniff_csv", "'@SECRET_FILE@'"),
    *_table("glob", "'/tmp/*'", "'@OUT@*'"),
    *_table("sqlite_scan", "'@SECRET_FILE@', 't'"), *_table("iceberg_scan", "'@OUT@'"),
    *_table("delta_scan", "'@OUT@'"), *_table("postgres_scan", "'dbname=postgres', 'public', 'users'"),
    *_table("query", "'SELECT hid_password FROM users'", policy=HIDDEN),
    *_table("query_table", "'users'", policy=HIDDEN),
    *_table("json_execute_serialized_sql", "json_serialize_sql('SELECT hid_password FROM users')", policy=HIDDEN),
    *_scalar("getenv", "'HOME'"), *_scalar("current_setting", "'temp_directory'", "'home_directory'"),
    *_scalar("nextval", "'my_seq'"), *_scalar("currval", "'my_seq'"), *_scalar("setseed", "0.5"),
    *_scalar("set_variable", "'x', 1"), *_scalar("getvariable", "'x'"),
    *_table("duckdb_secrets"), *_scalar("which_secret", "'s3://x/y', 's3'"), *_table("duckdb_settings"),
    *_table("duckdb_temporary_files"), *_table("duckdb_extensions"), *_table("duckdb_databases"),
    *_table("checkpoint"), *_table("force_checkpoint"),
    *_table("pragma_storage_info", "'users'", policy=HIDDEN),
    *_table("pragma_table_info", "'users'"), *_table("pragma_database_size"), *_table("pragma_show", "'users'"),
    *_scalar("version"), *_scalar("md5", "'x'"),
]

_SQLITE_CALLS = [
    *_scalar("load_extension", "'@OUT@'", "'@OUT@', 'sqlite3_extension_init'"),
    *_scalar("readfile", "'@SECRET_FILE@'"), *_scalar("writefile", "'@OUT@', 'x'"), *_scalar("edit", "'x'"),
    *_scalar("fts3_tokenizer", "'simple'"),
    *_table("fsdir", "'/tmp'"), *_table("zipfile", "'@OUT@.zip'"),
    *_scalar("sqlite_version"), *_scalar("sqlite_source_id"),
    *_scalar("sqlite_compileoption_used", "'ENABLE_DBSTAT_VTAB'"), *_scalar("sqlite_compileoption_get", "0"),
    *_scalar("randomblob", "16"), *_scalar("zeroblob", "16"),
    *_scalar("changes"), *_scalar("total_changes"), *_scalar("last_insert_rowid"),
    *_scalar("likelihood", "1, 0.5"), *_scalar("unlikely", "1"),
    *_table("pragma_table_info", "'users'"), *_table("pragma_database_list"), *_table("pragma_function_list"),
    *_table("pragma_compile_options"), *_table("pragma_module_list"), *_table("dbstat", "'main'"),
    *_table("json_each", "'[1, 2]'"), *_scalar("printf", "'%s', 'x'"),
]

_MYSQL_CALLS = [
    # Files, and time and locks that outlive a query.
    *_scalar("load_file", "'@SECRET_FILE@'", "'/etc/passwd'"),
    *_scalar("sleep", "30"), *_scalar("benchmark", "1000000000, md5('x')"),
    *_scalar("get_lock", _MYSQL_LOCK + ", 0"), *_scalar("release_lock", _MYSQL_LOCK),
    *_scalar("is_free_lock", _MYSQL_LOCK), *_scalar("is_used_lock", _MYSQL_LOCK), *_scalar("release_all_locks"),
    *_scalar("master_pos_wait", "'groundsql', 4, 1"), *_scalar("master_gtid_wait", "'0-1-1', 1"),
    # Sequences, the victim's own functions, loadable functions people install.
    *_scalar("nextval", "my_seq"), *_scalar("setval", "my_seq, 100"), *_scalar("lastval", "my_seq"),
    *_scalar("evil_lock"), *_scalar("evil_write"),
    *_scalar("sys_exec", "'touch @OUT@_sys_exec'"), *_scalar("sys_eval", "'id'"),
    # What the server and the session are.
    *_scalar("connection_id"), *_scalar("current_user"), *_scalar("database"), *_scalar("last_insert_id"),
    *_scalar("row_count"), *_scalar("found_rows"), *_scalar("uuid_short"), *_scalar("binlog_gtid_pos", "'x', 4"),
    *_scalar("name_const", "'a', 1"), *_scalar("password", "'x'"), *_scalar("des_encrypt", "'x'"),
    # Harmless: being accepted is fine.
    *_scalar("version"), *_scalar("md5", "'x'"), *_scalar("concat_ws", "'-', 'a', 'b'"),
    *_scalar("date_format", "'2024-01-02', '%Y'"), *_scalar("repeat", "'x', 3"),
]

_SPARK_CALLS = [
    # The JVM, files and the session.
    *_scalar("reflect", "'java.lang.System', 'getProperty', 'user.home'", "'java.lang.System', 'exit', 0"),
    *_scalar("java_method", "'java.lang.System', 'getenv', 'HOME'"),
    *_scalar("try_reflect", "'java.lang.System', 'getProperty', 'user.home'"),
    *_scalar("input_file_name"), *_scalar("input_file_block_start"), *_scalar("input_file_block_length"),
    *_table("read_files", "'@SECRET_FILE@'"), *_table("range", "10"),
    *_scalar("current_user"), *_scalar("current_catalog"), *_scalar("spark_partition_id"),
    *_scalar("raise_error", "'x'"), *_scalar("assert_true", "false"), *_scalar("uuid"),
    # Harmless: being accepted is fine.
    *_scalar("version"), *_scalar("md5", "'x'"), *_scalar("concat_ws", "'-', 'a', 'b'"),
]

_CALLS = {"postgres": _POSTGRES_CALLS, "duckdb": _DUCKDB_CALLS, "sqlite": _SQLITE_CALLS, "mysql": _MYSQL_CALLS,
          "spark": _SPARK_CALLS}

# Positions a scalar call {e} can take in a query, first the plainest.
_SCALAR_POSITIONS = (
    "SELECT {e}",
    "SELECT {e} AS x",
    "SELECT (SELECT {e})",
    "SELECT x FROM (SELECT {e} AS x) AS s",
    "WITH c AS (SELECT {e} AS x) SELECT x FROM c",
    "SELECT CASE WHEN a > 0 THEN {e} END FROM t",
    "SELECT COALESCE(NULL, {e})",
    "SELECT a FROM t WHERE a = 1 AND {e} IS NOT NULL",
    "SELECT a FROM t ORDER BY {e}",
    "SELECT a, count(*) OVER (PARTITION BY {e}) FROM t",
    "SELECT a FROM t GROUP BY a HAVING count({e}) >= 0",
    "SELECT a FROM t LIMIT (SELECT count(*) FROM (SELECT {e} AS x) AS s)",
    "SELECT CAST({e} AS TEXT)",
    "SELECT a FROM t WHERE a IN (SELECT {e})",
)
_LATERAL_POSITION = "SELECT s.x FROM t, LATERAL (SELECT {e} AS x) AS s"
# Positions of a table function {f} (with its column definition list, if any).
_TABLE_POSITIONS = (
    "SELECT * FROM {f}",
    "SELECT count(*) FROM {f}",
    "WITH c AS (SELECT * FROM {f}) SELECT * FROM c",
    "SELECT * FROM (SELECT * FROM {f}) AS s",
    "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM {f})",
    "SELECT (SELECT count(*) FROM {f})",
)


def _positions(engine: str, call: Call) -> tuple[str, ...]:
    if call.table is not None:
        return _TABLE_POSITIONS + (("FROM {f}",) if engine == "duckdb" else ())
    positions = _SCALAR_POSITIONS
    if engine != "sqlite":
        positions += (_LATERAL_POSITION,)
    if engine == "postgres":  # PostgreSQL takes any function in FROM
        positions += ("SELECT * FROM {e} AS f",)
    return positions


def _name_forms(engine: str, name: str) -> list[str]:
    """Ways of writing the same function name: case, quoting, comments and line breaks before
    the parenthesis, schema qualification, PostgreSQL's Unicode escapes."""
    forms = [name.upper(), name.capitalize(), f'"{name}"', f"{name} /* x */", f"{name}\n"]
    if engine == "postgres":
        schema = "public" if name in _PG_PUBLIC_FUNCTIONS else "pg_catalog"
        forms += [f"{schema}.{name}", f'{schema}."{name}"', f'U&"\\{ord(name[0]):04x}{name[1:]}"']
    elif engine == "duckdb":
        forms += [f"main.{name}", f"system.main.{name}"]
    elif engine == "mysql":
        # Backquoted and qualified names call a stored function of that name (of the victim's
        # database, or of the system schema); a name inside /*! */ is a call MySQL executes.
        forms += [f"`{name}`", f"@DB@.{name}", f"`@DB@`.`{name}`", f"mysql.{name}", f"/*!{name}*/"]
    elif engine == "spark":
        forms += [f"`{name}`", f"@DB@.{name}", f"system.builtin.{name}", f"builtin.{name}"]
    else:
        forms += [f"[{name}]", f"`{name}`"]
    return forms


_LITERAL = re.compile(r"'((?:[^']|'')*)'")


def _split_point(text: str) -> int:
    """The middle of `text`, moved past any placeholder it would cut in two."""
    middle = len(text) // 2
    for match in _PLACEHOLDER.finditer(text):
        if match.start() < middle < match.end():
            return match.end()
    return middle


def _string_forms(engine: str, literal: str) -> list[str]:
    """Expressions that evaluate to the string `literal` (a SQL literal, quotes included)
    without containing it: concatenation, a marker replaced away, reversal, hex or base64
    decoding, and each engine's own string syntaxes."""
    text = literal[1:-1].replace("''", "'")
    cut = _split_point(text)
    forms = [
        f"{_q(text[:cut])} || {_q(text[cut:])}",
        f"replace({_q(text[:cut] + '#~#' + text[cut:])}, '#~#', '')",
        f"CAST({literal} AS {'VARCHAR' if engine == 'duckdb' else 'STRING' if engine == 'spark' else 'TEXT'})",
        f"trim({literal})",
    ]
    if engine == "postgres":
        forms += [
            "$q$" + text + "$q$",
            "E" + _q(text.replace("\\", "\\\\")),
            f"convert_from(decode('{{{{b64:{text}}}}}', 'base64'), 'UTF8')",
            f"reverse('{{{{rev:{text}}}}}')",
            f"format('%s', {literal})",
            f"concat({literal})",
        ]
    elif engine == "duckdb":
        forms += [f"decode(unhex('{{{{hex:{text}}}}}'))", f"reverse('{{{{rev:{text}}}}}')", f"concat({literal})",
                  f"printf('%s', {literal})"]
    elif engine == "mysql":
        forms += [f"concat({_q(text[:cut])}, {_q(text[cut:])})", f"{_q(text[:cut])} {_q(text[cut:])}",
                  f"unhex('{{{{hex:{text}}}}}')", f"X'{{{{hex:{text}}}}}'", f"from_base64('{{{{b64:{text}}}}}')",
                  f"reverse('{{{{rev:{text}}}}}')", '"' + text.replace('"', '""') + '"']
    elif engine == "spark":
        forms += [f"decode(unhex('{{{{hex:{text}}}}}'), 'UTF-8')", f"CAST(unbase64('{{{{b64:{text}}}}}') AS STRING)",
                  f"reverse('{{{{rev:{text}}}}}')", f"concat({_q(text[:cut])}, {_q(text[cut:])})",
                  f"format_string('%s', {literal})"]
    else:
        forms += [f"CAST(X'{{{{hex:{text}}}}}' AS TEXT)", f"printf('%s', {literal})", f"ltrim({literal})"]
    return forms


def _function_attacks(engine: str) -> list[Attack]:
    """Every call in every position, under every spelling of its name and of its first string
    argument (in the plainest position), and with a spelled name in every other position
    (rotating, so every spelling meets several positions)."""
    attacks: list[Attack] = []
    for call in _CALLS[engine]:
        positions = _positions(engine, call)
        names = _name_forms(engine, call.name)
        slot = "{f}" if call.table is not None else "{e}"
        variants = [(position, None, None) for position in positions]
        variants += [(positions[0], name, None) for name in names]
        if literal := _LITERAL.search(call.args):
            head, tail = call.args[: literal.start()], call.args[literal.end():]
            variants += [(positions[0], None, head + form + tail) for form in _string_forms(engine, literal.group())]
        variants += [(position, names[i % len(names)], None) for i, position in enumerate(positions[1:])]
        for i, (position, name, args) in enumerate(variants):
            sql = position.replace(slot, call.render(name, args))
            attacks.append(Attack(sql, "function", call.policy, canonical=i == 0))
    return attacks


# -- SQL in a string ---------------------------------------------------------------------------

# PostgreSQL functions that run SQL handed to them as text: each builds a statement around
# an expression {x}, and the statement (or the part of one they paste into theirs) is passed
# as the string {s}.
_PG_CARRIERS: dict[str, tuple[str, str]] = {
    "crosstab": ("SELECT 'a'::text, 'b'::text, ({x})::text", "SELECT * FROM crosstab({s}) AS ct(r text, c text)"),
    "crosstab_categories": (
        "SELECT 'a'::text, 'b'::text, ({x})::text", "SELECT * FROM crosstab({s}, 'SELECT ''b''') AS ct(r text, c text)"
    ),
    "crosstab2": ("SELECT 'a'::text, 'b'::text, ({x})::text", "SELECT * FROM crosstab2({s})"),
    "crosstab4": ("SELECT 'a'::text, 'b'::text, ({x})::text", "SELECT * FROM crosstab4({s})"),
    "xpath_table": (
        "(SELECT ({x})::text AS k, '<a>1</a>'::text AS d) s",
        "SELECT * FROM xpath_table('k', 'd', {s}, '/a', 'true') AS x(k text, a text)",
    ),
    "xpath_table_criteria": (
        "({x}) IS NOT NULL", "SELECT * FROM xpath_table('id', 'email', 'users', '/a', {s}) AS x(id int, a text)"
    ),
    "connectby": (
        "(SELECT ({x})::text AS k, NULL::text AS p) s",
        "SELECT * FROM connectby({s}, 'k', 'p', 'k', 0) AS c(k text, p text, level int)",
    ),
    "ts_stat": ("SELECT to_tsvector('simple', ({x})::text)", "SELECT * FROM ts_stat({s})"),
    "query_to_xml": ("SELECT ({x})::text AS v", "SELECT query_to_xml({s}, true, false, '')"),
    "dblink": ("SELECT ({x})::text", "SELECT * FROM dblink('@CONN@', {s}) AS x(v text)"),
}
_PG_PAYLOADS: tuple[tuple[str, str], ...] = (
    ("pg_read_file('@SECRET_FILE@')", OPEN),
    ("(SELECT string_agg(rolpassword, ',') FROM pg_authid)", OPEN),
    ("(SELECT string_agg(passwd, ',') FROM pg_shadow)", OPEN),
    ("(SELECT string_agg(hid_password, ',') FROM users)", HIDDEN),
    ("encode(get_raw_page('pg_authid', 0), 'hex')", OPEN),
    ("lo_get(4242)", OPEN),
    *((_dblink_exec(sql), OPEN) for sql in _DBLINK_WRITES),
    ("lo_export(4242, '@OUT@_lo')", OPEN),
    ("lo_unlink(4242)", OPEN),
    (f"pg_terminate_backend({CANARY_PID})", OPEN),
    ("pg_create_physical_replication_slot('groundsql_redteam_@TAG@_p', true)", OPEN),
    ("pg_stat_reset()", OPEN),
    ("set_config('default_transaction_read_only', 'off', false)", OPEN),
    ("nextval('my_seq')", OPEN),
    ("pg_advisory_lock(77)", OPEN),
    ("brin_summarize_new_values('brin_idx')", OPEN),
    ("gin_clean_pending_list('gin_idx')", OPEN),
)

# DuckDB's: query() runs a statement, query_table() reads a table named by a string,
# json_execute_serialized_sql() a serialized statement.
_DUCKDB_CARRIERS: dict[str, tuple[str, str]] = {
    "query": ("{x}", "SELECT * FROM query({s})"),
    "json_execute_serialized_sql": ("{x}", "SELECT * FROM json_execute_serialized_sql(json_serialize_sql({s}))"),
}
_DUCKDB_PAYLOADS: tuple[tuple[str, str], ...] = (
    ("SELECT hid_password FROM users", HIDDEN),
    ("SELECT * FROM users", HIDDEN),
    ("SELECT * FROM read_text('@SECRET_FILE@')", OPEN),
    ("SELECT nextval('my_seq')", OPEN),
    ("SELECT * FROM duckdb_secrets()", OPEN),
    ("SELECT getenv('HOME')", OPEN),
    ("SELECT * FROM pragma_storage_info('users')", HIDDEN),
)


def _carrier_attacks(engine: str) -> list[Attack]:
    """Each carrier with each payload, the statement spelled plainly and in two of the
    engine's string forms (rotating, so every form meets every carrier)."""
    carriers = {"postgres": _PG_CARRIERS, "duckdb": _DUCKDB_CARRIERS}.get(engine, {})
    payloads = {"postgres": _PG_PAYLOADS, "duckdb": _DUCKDB_PAYLOADS}.get(engine, ())
    attacks = []
    n = 0
    for inner, outer in carriers.values():
        for expr, policy in payloads:
            literal = _q(inner.replace("{x}", expr))
            forms = _string_forms(engine, literal)
            spellings = [literal, forms[n % len(forms)], forms[(n + 1) % len(forms)]]
            n += 2
            for i, spelling in enumerate(spellings):
                attacks.append(Attack(outer.replace("{s}", spelling), "sql-in-string", policy, canonical=i == 0))
    if engine == "duckdb":
        for form in [_q("users"), *_string_forms(engine, _q("users"))]:
            attacks.append(Attack(f"SELECT * FROM query_table({form})", "sql-in-string", HIDDEN, canonical=False))
    return attacks


# -- Catalogs ----------------------------------------------------------------------------------

# (relation, the columns worth reading). PostgreSQL's are in pg_catalog unless qualified.
_PG_CATALOGS = (
    ("pg_authid", "rolname, rolpassword"), ("pg_shadow", "usename, passwd"), ("pg_user", "*"),
    ("pg_roles", "*"), ("pg_file_settings", "*"), ("pg_hba_file_rules", "*"), ("pg_ident_file_mappings", "*"),
    ("pg_stat_activity", "query"), ("pg_settings", "name, setting"), ("pg_config", "*"),
    ("pg_user_mappings", "umoptions"), ("pg_statistic", "stavalues1::text"), ("pg_stats", "most_common_vals::text"),
    ("pg_largeobject", "data"), ("pg_proc", "prosrc"), ("pg_db_role_setting", "setconfig"),
    ("pg_replication_slots", "*"), ("pg_locks", "*"), ("pg_views", "definition"), ("pg_class", "relname"),
    ("information_schema.tables", "table_name"), ("information_schema.columns", "column_name"),
    ("information_schema.routines", "routine_definition"), ("information_schema.role_table_grants", "*"),
    ("information_schema.user_mapping_options", "*"),
)
_DUCKDB_CATALOGS = (
    ("duckdb_settings()", "*"), ("duckdb_secrets()", "*"), ("duckdb_extensions()", "*"),
    ("duckdb_functions()", "function_name"), ("duckdb_tables()", "sql"), ("duckdb_columns()", "*"),
    ("duckdb_databases()", "*"), ("duckdb_views()", "sql"), ("duckdb_sequences()", "*"),
    ("duckdb_temporary_files()", "*"), ("duckdb_memory()", "*"), ("duckdb_variables()", "*"),
    ("duckdb_constraints()", "*"), ("duckdb_indexes()", "*"), ("duckdb_schemas()", "*"),
    ("pragma_storage_info('users')", "*"), ("pragma_table_info('users')", "*"), ("pragma_database_size()", "*"),
    ("pragma_metadata_info()", "*"), ("information_schema.tables", "*"), ("information_schema.columns", "*"),
    ("sqlite_master", "*"), ("pg_catalog.pg_class", "*"), ("duckdb_tables", "*"), ("duckdb_columns", "*"),
)
_SQLITE_CATALOGS = (
    ("sqlite_master", "*"), ("sqlite_schema", "sql"), ("sqlite_temp_master", "*"), ("main.sqlite_master", "*"),
    ("temp.sqlite_master", "*"), ("pragma_table_info('users')", "*"), ("pragma_table_xinfo('users')", "*"),
    ("pragma_index_list('users')", "*"), ("pragma_database_list", "*"), ("pragma_function_list", "*"),
    ("pragma_compile_options", "*"), ("pragma_module_list", "*"), ("pragma_pragma_list", "*"),
    ("pragma_collation_list", "*"), ("dbstat", "*"), ("sqlite_dbpage", "*"), ("sqlite_stat1", "*"),
    ("sqlite_sequence", "*"),
)
_MYSQL_CATALOGS = (
    ("mysql.user", "User, authentication_string"), ("mysql.global_priv", "User, Priv"), ("mysql.db", "*"),
    ("mysql.tables_priv", "*"), ("mysql.proc", "body"), ("mysql.func", "*"), ("mysql.plugin", "*"),
    ("mysql.servers", "*"), ("mysql.general_log", "argument"), ("mysql.roles_mapping", "*"),
    ("information_schema.processlist", "info"), ("information_schema.user_privileges", "*"),
    ("information_schema.global_variables", "*"), ("information_schema.routines", "routine_definition"),
    ("information_schema.user_variables", "*"), ("information_schema.tables", "table_name"),
    ("information_schema.columns", "column_name"), ("information_schema.plugins", "*"),
    ("performance_schema.threads", "*"), ("sys.session", "*"), ("seq_1_to_10", "*"),
)
_SPARK_CATALOGS = (
    ("information_schema.tables", "*"), ("information_schema.columns", "*"), ("system.information_schema.tables", "*"),
    ("global_temp.users", "*"), ("spark_catalog.@DB@.users", "*"), ("default.users", "*"),
    ("text.`@SECRET_FILE@`", "*"), ("json.`@SECRET_FILE@`", "*"), ("binaryFile.`@SECRET_FILE@`", "*"),
)
_CATALOGS = {"postgres": _PG_CATALOGS, "duckdb": _DUCKDB_CATALOGS, "sqlite": _SQLITE_CATALOGS, "mysql": _MYSQL_CATALOGS,
             "spark": _SPARK_CATALOGS}

_CATALOG_FORMS = (
    "SELECT {cols} FROM {rel}",
    "SELECT {cols} FROM {qualified}",
    "SELECT {cols} FROM {quoted}",
    "SELECT {cols} FROM {upper}",
    "SELECT count(*) FROM {rel}",
    "SELECT * FROM (SELECT {cols} FROM {rel}) AS s",
    "WITH c AS (SELECT {cols} FROM {rel}) SELECT * FROM c",
    "SELECT name FROM users WHERE EXISTS (SELECT 1 FROM {rel})",
    "SELECT CAST(count(*) AS TEXT) FROM users UNION ALL SELECT CAST({first} AS TEXT) FROM {rel}",
)


def _catalog_attacks(engine: str) -> list[Attack]:
    """Catalog reads in several spellings, under both policies: an allow-list on columns must
    not open catalogs that describe (or, like pg_stats and pragma_storage_info, hold) them."""
    attacks = []
    for rel, cols in _CATALOGS[engine]:
        is_call = "(" in rel
        schema = {"postgres": "pg_catalog", "duckdb": "main", "sqlite": "main", "mysql": "@DB@", "spark": "@DB@"}[engine]
        qualified = rel if "." in rel else f"{schema}.{rel}"
        quote = "`" if engine in ("mysql", "spark") else '"'  # MySQL's double quotes make a string
        quoted = rel if is_call or "`" in rel else ".".join(f"{quote}{part}{quote}" for part in rel.split("."))
        first = "*" if cols == "*" else cols.split(",")[0].strip()
        first = "1" if first == "*" else first
        fields = {"rel": rel, "cols": cols, "qualified": qualified, "quoted": quoted, "upper": rel.upper(),
                  "first": first}
        for i, form in enumerate(_CATALOG_FORMS):
            sql = form
            for key, value in fields.items():
                sql = sql.replace("{" + key + "}", value)
            attacks.append(Attack(sql, "catalog", OPEN, canonical=i == 0))
            if i < 3:
                attacks.append(Attack(sql, "catalog", HIDDEN, canonical=False))
    return attacks


# -- Hidden columns ----------------------------------------------------------------------------

# Spellings of a hidden column's name.
_HIDDEN_NAMES = ("hid_ssn", "hid_password", "HID_SSN", '"hid_ssn"')


def _hidden_names(engine: str) -> tuple[str, ...]:
    # MySQL and Spark quote names in backquotes ("hid_ssn" is a string there).
    return _HIDDEN_NAMES + (("`hid_ssn`",) if engine in ("mysql", "spark") else ())

# Reading {h} while naming it: all must be refused; here to check that every spelling is.
_HIDDEN_DIRECT = (
    "SELECT {h} FROM users",
    "SELECT name FROM users WHERE {h} LIKE 'SECRET%'",
    "SELECT name FROM users ORDER BY {h}",
    "SELECT name FROM users GROUP BY name, {h}",
    "SELECT (SELECT {h}) FROM users",
    "SELECT x.{h} FROM (SELECT * FROM users) AS x",
    "WITH x AS (SELECT * FROM users) SELECT {h} FROM x",
    "SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM users v WHERE v.{h} = u.{h} AND v.id <> u.id)",
    "SELECT u.name FROM users u JOIN users v USING ({h})",
    "SELECT name FROM users JOIN (SELECT 'x' AS {h}) AS s USING ({h})",
    "SELECT name FROM users NATURAL JOIN (SELECT 'x' AS {h}) AS s",
    "SELECT count(DISTINCT {h}) FROM users",
    "SELECT name, count(*) OVER (PARTITION BY {h}) FROM users",
    "SELECT max({h}) AS name FROM users",
)
# Reading hidden columns without naming them: stars, whole-row references, positions.
_HIDDEN_UNNAMED = (
    "SELECT * FROM users",
    "SELECT u.* FROM users u",
    "SELECT users FROM users",
    "SELECT name FROM users AS u(a, b, c, d)",
    "SELECT * FROM (SELECT * FROM users) AS s",
    "SELECT name FROM users ORDER BY 4",
)
_HIDDEN_UNNAMED_ENGINE = {
    "postgres": ("SELECT row_to_json(u) FROM users u", "SELECT u::text FROM users u", "SELECT (u).* FROM users u",
                 "TABLE users", "SELECT to_jsonb(u) - 'name' FROM users u", "SELECT (u).hid_ssn FROM users u"),
    "duckdb": ("SELECT COLUMNS('hid_.*') FROM users", "SELECT #4 FROM users", "SELECT * EXCLUDE (name) FROM users",
               "SELECT * REPLACE (1 AS name) FROM users", "FROM users", "SELECT to_json(u) FROM users u",
               "SELECT struct_extract(u, 'hid_ssn') FROM users u", "SELECT u.hid_ssn FROM (FROM users) u",
               "SELECT COLUMNS(c -> c LIKE 'hid%') FROM users"),
    "sqlite": ("SELECT json_object('x', (SELECT group_concat(hid_ssn) FROM users))",),
    "mysql": ("TABLE users", "SELECT JSON_ARRAYAGG(JSON_OBJECT('s', hid_ssn)) FROM users",
              "SELECT u.* FROM users u NATURAL JOIN users v", "SELECT * FROM users AS u WHERE u.id > 0"),
    "spark": ("TABLE users", "SELECT struct(*) FROM users", "SELECT to_json(struct(*)) FROM users",
              "SELECT * EXCEPT (name) FROM users", "SELECT `(name)?+.+` FROM users", "SELECT named_struct('a', *) FROM users",
              "SELECT u.* FROM users u NATURAL JOIN users v"),
}
# Output aliases named like a hidden column, so that GROUP BY / ORDER BY / HAVING can be read
# as the alias (harmless) or as the input column (a hidden-column read the result shows).
_ALIAS_TRICKS = (
    "SELECT count(*) AS {h} FROM users GROUP BY {h}",
    "SELECT min(name) AS {h} FROM users GROUP BY {h}",
    "SELECT max(id) AS {h} FROM users GROUP BY {h} ORDER BY {h}",
    "SELECT count(*) AS {h} FROM users GROUP BY {h} HAVING count(*) > 1",
    "SELECT count(*) AS {h} FROM users GROUP BY name HAVING {h} > 0",
    "SELECT id AS {h} FROM users ORDER BY {h}",
    "SELECT 1 AS {h}, name FROM users ORDER BY {h}, name",
    "SELECT name AS {h} FROM users ORDER BY {h} DESC",
    "SELECT name, id AS {h} FROM users GROUP BY name, {h}",
    "SELECT count(*) AS n, 0 AS {h} FROM users GROUP BY {h}",
    "SELECT DISTINCT id AS {h} FROM users ORDER BY {h}",
    "SELECT sum(id) AS {h} FROM users GROUP BY {h} ORDER BY 1",
    "SELECT count(*) AS {h} FROM users WHERE id > 0 GROUP BY {h}",
    "SELECT count(*) AS {h} FROM users GROUP BY {h}, name",
    "SELECT row_number() OVER (ORDER BY id) AS {h} FROM users ORDER BY {h}",
    "SELECT (SELECT count(*) FROM users) AS {h} FROM users GROUP BY {h}",
    "SELECT count(*) AS {h} FROM users JOIN orders ON orders.user_id = users.id GROUP BY {h}",
    "SELECT count(*) AS {h} FROM users, orders WHERE orders.user_id = users.id GROUP BY {h}",
    "SELECT min(email) AS {h} FROM users GROUP BY {h} HAVING min(email) LIKE '%'",
    "SELECT count(*) AS {h} FROM users GROUP BY {h} ORDER BY count(*) DESC",
    "SELECT name AS {h} FROM users GROUP BY {h}, name ORDER BY {h}",
    "SELECT avg(id) AS {h} FROM users GROUP BY {h} HAVING avg(id) > 0",
    "SELECT count(*) AS {h} FROM users GROUP BY ({h})",
    "SELECT count(*) AS {h} FROM (SELECT * FROM users) AS u GROUP BY {h}",
)
_ALIAS_TRICKS_ENGINE = {
    "postgres": ("SELECT count(*) AS {h} FROM users GROUP BY ROLLUP ({h})",
                 "SELECT count(*) AS {h} FROM users GROUP BY GROUPING SETS (({h}))",
                 "SELECT DISTINCT ON ({h}) name AS {h} FROM users",
                 "SELECT string_agg(name, ',') AS {h} FROM users GROUP BY {h}"),
    "duckdb": ("SELECT count(*) AS {h} FROM users GROUP BY ROLLUP ({h})",
               "SELECT count(*) AS {h} FROM users GROUP BY CUBE ({h})",
               "SELECT DISTINCT ON ({h}) name AS {h} FROM users",
               "SELECT string_agg(name, ',') AS {h} FROM users GROUP BY {h}",
               "SELECT count(*) AS {h} FROM users GROUP BY ALL",
               "SELECT name AS {h} FROM users QUALIFY row_number() OVER (PARTITION BY {h}) = 1"),
    "sqlite": ("SELECT group_concat(name) AS {h} FROM users GROUP BY {h}",
               "SELECT name AS {h} FROM users GROUP BY {h} HAVING count(*) >= 1"),
    # MySQL looks a GROUP BY or HAVING name up among the columns first, an ORDER BY name
    # among the aliases first.
    "spark": ("SELECT count(*) AS {h} FROM users GROUP BY ROLLUP ({h})",
              "SELECT count(*) AS {h} FROM users GROUP BY CUBE ({h})",
              "SELECT collect_list(name) AS {h} FROM users GROUP BY {h}",
              "SELECT count(*) AS {h} FROM users GROUP BY ALL"),
    "mysql": ("SELECT group_concat(name) AS {h} FROM users GROUP BY {h}",
              "SELECT count(*) AS {h} FROM users GROUP BY {h} WITH ROLLUP",
              "SELECT name AS {h} FROM users GROUP BY {h} HAVING count(*) >= 1",
              "SELECT min(name) AS {h} FROM users GROUP BY name HAVING {h} LIKE 'SECRET%'"),
}
_HIDDEN_WRAPPERS = (
    "{q}",
    "SELECT * FROM ({q}) AS s",
    "WITH s AS ({q}) SELECT * FROM s",
    "SELECT count(*) FROM ({q}) AS s",
)


def _hidden_attacks(engine: str) -> list[Attack]:
    """Hidden-column tricks, each with every spelling of the column in every wrapper."""
    templates = [*_HIDDEN_DIRECT, *_ALIAS_TRICKS, *_ALIAS_TRICKS_ENGINE[engine]]
    if engine == "duckdb":
        templates += _PIVOTS
    attacks = []
    for template in templates:
        for i, (name, wrapper) in enumerate(itertools.product(_hidden_names(engine), _HIDDEN_WRAPPERS)):
            sql = wrapper.replace("{q}", template.replace("{h}", name))
            attacks.append(Attack(sql, "hidden-column", HIDDEN, canonical=i == 0))
    for template in (*_HIDDEN_UNNAMED, *_HIDDEN_UNNAMED_ENGINE[engine]):
        for w, wrapper in enumerate(_HIDDEN_WRAPPERS):
            attacks.append(Attack(wrapper.replace("{q}", template), "hidden-column", HIDDEN, canonical=w == 0))
    return attacks


# -- Statements that are not one read-only query -------------------------------------------

_STACKED_POSTGRES = (
    "COMMIT; DELETE FROM t", "ROLLBACK; DELETE FROM t", "END; DELETE FROM t", "ABORT; DELETE FROM t",
    "SET TRANSACTION READ WRITE; DELETE FROM t; COMMIT", "COMMIT; DROP TABLE t",
    "SET TRANSACTION READ WRITE; SELECT nextval('my_seq')", "COMMIT; SELECT nextval('my_seq')",
    "COMMIT; BEGIN READ WRITE; INSERT INTO t VALUES (99, 'x'); COMMIT", "SELECT 1; COMMIT; UPDATE t SET b = 'pwned'",
    "PREPARE groundsql_p AS SELECT 1", "PREPARE groundsql_d AS DELETE FROM t; EXECUTE groundsql_d",
    "DO $$BEGIN DELETE FROM t; END$$", "COMMIT; DO $$BEGIN DELETE FROM t; END$$",
    "COPY t TO '@OUT@_copy.csv'", "COPY (SELECT * FROM pg_authid) TO '@OUT@_copy2.csv'",
    "COPY (SELECT 1) TO PROGRAM 'touch @OUT@_program'", "COPY t FROM '@SECRET_FILE@'",
    "CALL groundsql_nonexistent()", "EXPLAIN ANALYZE DELETE FROM t",
    "EXPLAIN (ANALYZE, FORMAT JSON) INSERT INTO t VALUES (1, 'x')", "EXPLAIN ANALYZE SELECT nextval('my_seq')",
    "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "WITH d AS (UPDATE t SET b = 'x' RETURNING *) SELECT count(*) FROM d",
    "SELECT * FROM t FOR UPDATE", "LOCK TABLE t", "VACUUM t", "ANALYZE t", "CHECKPOINT",
    "LISTEN groundsql_redteam", "NOTIFY groundsql_redteam", "DISCARD ALL", "SET ROLE NONE",
    "SET SESSION AUTHORIZATION DEFAULT", "SET default_transaction_read_only = off", "RESET ALL",
    "DECLARE groundsql_c CURSOR WITH HOLD FOR SELECT 1", "COMMIT; DECLARE groundsql_c CURSOR WITH HOLD FOR SELECT 1",
    "CREATE TEMP TABLE groundsql_tmp AS SELECT 1", "COMMIT; CREATE TEMP TABLE groundsql_tmp (a int)",
    "SELECT 1 INTO groundsql_new FROM t", "CREATE TABLE groundsql_new (a int)", "ALTER TABLE t ADD COLUMN c int",
    "TRUNCATE t", "GRANT ALL ON t TO PUBLIC", "COMMIT; GRANT SELECT ON users TO PUBLIC",
    "COMMIT; SELECT lo_export(4242, '@OUT@_lo')", "COMMIT; SELECT lo_unlink(4242)",
    "COMMIT; SELECT pg_create_physical_replication_slot('groundsql_redteam_@TAG@_p', true)",
    "COMMIT; SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT pg_advisory_lock(1)", "COMMIT; SELECT pg_advisory_lock(2)", "COMMIT; SELECT evil_lock()",
    "COMMIT; SELECT dblink_connect('groundsql_redteam', '@CONN@')",
)
_STACKED_SQLITE = (
    "ATTACH '@OUT@.db' AS x", "ATTACH DATABASE ':memory:' AS m", "PRAGMA query_only = 0; DELETE FROM t",
    "PRAGMA writable_schema = 1", "DELETE FROM t", "COMMIT; DELETE FROM t", "BEGIN; DELETE FROM t; COMMIT",
    "VACUUM INTO '@OUT@_vacuum.db'", "VACUUM", "REINDEX", "ANALYZE", "CREATE TEMP TABLE x AS SELECT 1",
    "WITH d AS (SELECT 1) DELETE FROM t", "INSERT INTO t VALUES (99, 'x')", "REPLACE INTO t VALUES (1, 'x')",
    "DROP TABLE t", "SELECT 1; DROP TABLE t", "PRAGMA journal_mode = WAL", "PRAGMA user_version = 7",
    "SELECT load_extension('@OUT@')", "UPDATE t SET b = 'x' RETURNING *", "CREATE VIEW v AS SELECT 1",
    "PRAGMA locking_mode = EXCLUSIVE", "ATTACH '@OUT@.db' AS x; CREATE TABLE x.t AS SELECT * FROM users",
)
_STACKED_DUCKDB = (
    "COPY t TO '@OUT@_copy.csv'", "COPY (SELECT * FROM users) TO '@OUT@_copy.parquet' (FORMAT PARQUET)",
    "EXPORT DATABASE '@OUT@_export'", "ATTACH '@OUT@_attached.duckdb' AS x",
    "ATTACH ':memory:' AS m; CREATE TABLE m.x AS SELECT * FROM users", "INSTALL httpfs", "LOAD httpfs",
    "SET enable_external_access = true", "RESET enable_external_access", "SET threads = 1", "CHECKPOINT",
    "FORCE CHECKPOINT", "PRAGMA enable_profiling", "SUMMARIZE users", "DESCRIBE users", "CALL pragma_version()",
    "DELETE FROM t", "COMMIT; DELETE FROM t", "BEGIN TRANSACTION; DELETE FROM t; COMMIT",
    "CREATE TEMP TABLE x AS SELECT 1", "CREATE MACRO m(x) AS x", "CREATE SECRET (TYPE S3, KEY_ID 'k', SECRET 's')",
    "SELECT nextval('my_seq')", "USE memory", "DETACH victim", "SET memory_limit = '1GB'", "VACUUM t",
    "COPY t FROM '@SECRET_FILE@'", "CREATE TABLE t2 AS SELECT * FROM t", "UPDATE t SET b = 'x'",
)
_STACKED_MYSQL = (
    "COMMIT; DELETE FROM t", "SELECT 1; DELETE FROM t", "START TRANSACTION READ WRITE; DELETE FROM t; COMMIT",
    "SET SESSION TRANSACTION READ WRITE; DELETE FROM t", "DELETE FROM t", "UPDATE t SET b = 'x'",
    "INSERT INTO t VALUES (99, 'x')", "REPLACE INTO t VALUES (1, 'x')", "INSERT INTO t SELECT * FROM t",
    "TRUNCATE TABLE t", "DROP TABLE t", "CREATE TABLE t2 AS SELECT * FROM t", "ALTER TABLE t ADD COLUMN c INT",
    "CREATE TEMPORARY TABLE tmp AS SELECT * FROM users", "CREATE VIEW v AS SELECT * FROM users",
    "CREATE FUNCTION f() RETURNS INT RETURN 1", "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
    "CREATE EVENT ev ON SCHEDULE EVERY 1 SECOND DO DELETE FROM t", "CREATE DATABASE groundsql_redteam_@TAG@_x",
    "CREATE USER groundsql_redteam_@TAG@_u", "GRANT ALL ON *.* TO groundsql_reader", "SET PASSWORD = PASSWORD('x')",
    "SET GLOBAL net_write_timeout = 61", "SET @@GLOBAL.net_write_timeout = 61", "SET sql_mode = 'ANSI_QUOTES'",
    "SET NAMES latin1", "SET @x = 1; SELECT @x", "SELECT a INTO @x FROM t LIMIT 1",
    "SELECT * FROM t INTO OUTFILE '@OUT@_stacked'", "SELECT * FROM users INTO DUMPFILE '@OUT@_dump'",
    "LOAD DATA INFILE '@SECRET_FILE@' INTO TABLE t", "LOAD DATA LOCAL INFILE '@SECRET_FILE@' INTO TABLE t",
    "HANDLER t OPEN; HANDLER t READ FIRST", "DO GET_LOCK('groundsql_redteam_@TAG@', 0)", "DO SLEEP(30)",
    "LOCK TABLES t WRITE", "UNLOCK TABLES", "FLUSH PRIVILEGES", "FLUSH TABLES WITH READ LOCK", "RESET QUERY CACHE",
    "KILL @CANARY@", "KILL QUERY @CANARY@", "SHUTDOWN", "INSTALL SONAME 'ha_blackhole'",
    "CALL evil_proc()", "PREPARE s FROM 'DELETE FROM t'; EXECUTE s", "EXECUTE IMMEDIATE 'DELETE FROM t'",
    "XA START 'groundsql'", "SAVEPOINT s", "ANALYZE TABLE t", "OPTIMIZE TABLE t", "REPAIR TABLE t",
    "CHECK TABLE t", "CHECKSUM TABLE t", "RENAME TABLE t TO t2", "BINLOG 'x'", "PURGE BINARY LOGS BEFORE NOW()",
    "SHOW GRANTS", "SHOW PROCESSLIST", "EXPLAIN SELECT * FROM users", "ANALYZE SELECT * FROM users",
    "DESCRIBE users", "HELP 'select'", "USE mysql", "/*! DELETE FROM t */", "/*!50000 DROP TABLE t */ SELECT 1",
    "SELECT 1 /*! ; DELETE FROM t */", "WITH d AS (SELECT 1) DELETE FROM t", "SELECT * FROM t FOR UPDATE",
    "SELECT * FROM t LOCK IN SHARE MODE", "SELECT NEXT VALUE FOR my_seq", "ALTER SEQUENCE my_seq RESTART 100",
)
_STACKED_SPARK = (
    "SELECT 1; DROP TABLE t", "DELETE FROM t", "UPDATE t SET b = 'x'", "INSERT OVERWRITE TABLE t SELECT * FROM t",
    "INSERT INTO t SELECT * FROM t", "TRUNCATE TABLE t", "DROP TABLE t", "ALTER TABLE t ADD COLUMNS (c INT)",
    "CREATE TABLE t2 AS SELECT * FROM users", "CREATE TABLE t3 (a INT) USING parquet LOCATION '@OUT@_tbl'",
    "CREATE TEMPORARY VIEW v USING text OPTIONS (path '@SECRET_FILE@')", "CREATE VIEW v AS SELECT * FROM users",
    "CREATE GLOBAL TEMPORARY VIEW g AS SELECT * FROM users", "CREATE DATABASE groundsql_redteam_@TAG@_x",
    "CACHE LAZY TABLE c AS SELECT * FROM users", "UNCACHE TABLE t", "CLEAR CACHE", "RESET", "SET -v",
    "SET spark.sql.runSQLOnFiles=true; SELECT * FROM text.`@SECRET_FILE@`", "USE default",
    "ADD FILE '@SECRET_FILE@'", "LIST FILES", "ADD ARCHIVE '@OUT@.zip'", "DESCRIBE users", "SHOW TABLES",
    "SHOW CREATE TABLE users", "EXPLAIN SELECT * FROM users", "DECLARE VARIABLE v INT DEFAULT 1",
    "EXECUTE IMMEDIATE 'DELETE FROM t'", "MERGE INTO t USING t AS s ON t.a = s.a WHEN MATCHED THEN DELETE",
    "REPAIR TABLE t", "REFRESH FUNCTION f", "DROP FUNCTION IF EXISTS f", "CREATE TEMPORARY FUNCTION f AS 'x.Y'",
)
_STACKED = {"postgres": _STACKED_POSTGRES, "sqlite": _STACKED_SQLITE, "duckdb": _STACKED_DUCKDB,
            "mysql": _STACKED_MYSQL, "spark": _STACKED_SPARK}


def _stacked_spellings(sql: str) -> list[str]:
    """The statement as written, lower case, with block comments around its separators and
    with a line comment and line break after them."""
    return [sql, sql.lower() if "'" not in sql else sql, sql.replace("; ", " /* x */; /* y */ "),
            sql.replace("; ", ";\n-- x\n")]


def _stacked_attacks(engine: str) -> list[Attack]:
    attacks = []
    for sql in _STACKED[engine]:
        for i, spelling in enumerate(dict.fromkeys(_stacked_spellings(sql))):
            attacks.append(Attack(spelling, "statement", canonical=i == 0))
    return attacks


# -- Resource exhaustion ---------------------------------------------------------------------


def or_chain(terms: int) -> str:
    """`SELECT a FROM t WHERE a = 0 OR a = 1 ...`: quadratic work for a careless validator."""
    return "SELECT a FROM t WHERE " + " OR ".join(f"a = {i}" for i in range(terms))


_NESTED = "SELECT " + "(" * 2000 + "1" + ")" * 2000 + " FROM t"
_RESOURCE_COMMON = (
    or_chain(3000),
    "SELECT a FROM t WHERE a IN (" + ", ".join(map(str, range(5000))) + ")",
    _NESTED,
    "SELECT count(*) FROM t a, t b, t c, t d, t e, t f, t g, t h",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
)
_RESOURCE_ENGINE = {
    "postgres": (
        "SELECT pg_sleep(30)",
        "SELECT * FROM crosstab('SELECT ''a''::text, ''b''::text, pg_sleep(30)::text') AS ct(r text, c text)",
        "SELECT count(*) FROM generate_series(1, 10000000000)",
        "SELECT repeat('x', 1000000000)",
        "SELECT lpad('x', 1000000000, 'y')",
        "SELECT string_agg(repeat('x', 100000), '') FROM generate_series(1, 10000)",
        "SELECT array_agg(g) FROM generate_series(1, 100000000) g",
        "SELECT g, lpad('x', 300, 'y') FROM generate_series(1, 100000000) g LIMIT 3000000",
    ),
    "duckdb": (
        "SELECT count(*) FROM range(10000000000)",
        "SELECT repeat('x', 1000000000)",
        "SELECT lpad('x', 1000000000, 'y')",
        "SELECT list_sort(range(100000000))[1]",
        "SELECT count(*) FROM range(100000) a, range(100000) b",
        "SELECT string_agg(repeat('x', 100000), '') FROM range(10000)",
    ),
    "sqlite": (
        "SELECT randomblob(1000000000)",
        "SELECT zeroblob(1000000000)",
        "SELECT length(randomblob(900000000))",
        "SELECT printf('%.*c', 1000000000, 'x')",
        "WITH RECURSIVE r(n, s) AS (SELECT 1, 'x' UNION ALL SELECT n + 1, s || s FROM r WHERE n < 40) "
        "SELECT length(s) FROM r",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000) "
        "SELECT group_concat(hex(zeroblob(1000000)), '') FROM r",
    ),
    "mysql": (
        "SELECT SLEEP(30)",
        "SELECT BENCHMARK(10000000000, MD5('x'))",
        "SELECT COUNT(*) FROM seq_1_to_10000000000",
        "SELECT REPEAT('x', 1000000000)",
        "SELECT LPAD('x', 1000000000, 'y')",
        "SELECT GROUP_CONCAT(REPEAT('x', 100000)) FROM seq_1_to_10000",
        "SELECT seq, LPAD('x', 300, 'y') FROM seq_1_to_100000000 LIMIT 3000000",
        "WITH RECURSIVE r(n, s) AS (SELECT 1, CAST('x' AS CHAR(1000)) UNION ALL "
        "SELECT n + 1, CONCAT(s, s) FROM r WHERE n < 40) SELECT LENGTH(s) FROM r",
        "SELECT COUNT(*) FROM t a JOIN t b ON a.a <= b.a JOIN t c ON b.a <= c.a JOIN t d ON c.a <= d.a "
        "JOIN t e ON d.a <= e.a JOIN t f ON e.a <= f.a JOIN t g ON f.a <= g.a JOIN t h ON g.a <= h.a",
    ),
    "spark": (
        "SELECT count(*) FROM range(10000000000)",
        "SELECT repeat('x', 1000000000)",
        "SELECT lpad('x', 1000000000, 'y')",
        "SELECT count(*) FROM range(100000) a, range(100000) b",
        "SELECT size(sequence(1, 100000000))",
        "SELECT java_method('java.lang.Thread', 'sleep', 30000L)",
        "SELECT id, lpad('x', 300, 'y') FROM range(100000000) LIMIT 3000000",
    ),
}


def _resource_attacks(engine: str) -> list[Attack]:
    return [Attack(sql, "resource") for sql in (*_RESOURCE_COMMON, *_RESOURCE_ENGINE[engine])]


# -- The whole corpus --------------------------------------------------------------------------

_GENERATORS: tuple[Callable[[str], list[Attack]], ...] = (
    _function_attacks, _carrier_attacks, _catalog_attacks, _hidden_attacks, _stacked_attacks, _resource_attacks,
)


@cache
def generated(engine: str) -> tuple[Attack, ...]:
    """The generated corpus of one engine, without duplicates, in a fixed order."""
    seen: set[tuple[str, str]] = set()
    attacks = []
    for generate in _GENERATORS:
        for attack in generate(engine):
            if (attack.sql, attack.policy) not in seen:
                seen.add((attack.sql, attack.policy))
                attacks.append(attack)
    return tuple(attacks)


def corpus(engine: str) -> tuple[Attack, ...]:
    """Everything tried on one engine: issue 22's statements first, then the generated ones."""
    fixtures = issue22(engine)
    known = {(a.sql, a.policy) for a in fixtures}
    return (*fixtures, *(a for a in generated(engine) if (a.sql, a.policy) not in known))


def raw_corpus(engine: str) -> tuple[Attack, ...]:
    """What the raw executor is tried with: canonical statements only (spellings exist for
    the validator), plus the raw PostgreSQL and MySQL statements. Expectations about the
    validator (must be accepted) do not apply to the executor alone."""
    attacks = [replace(a, expect=HARMLESS) if a.expect == RUNS else a for a in corpus(engine) if a.canonical]
    raw = {"postgres": RAW_POSTGRES, "mysql": RAW_MYSQL}.get(engine, [])
    known = {a.sql for a in attacks}
    attacks += [a for a in raw if a.sql not in known]
    return tuple(attacks)


def chunks(attacks: tuple[Attack, ...], size: int) -> list[tuple[Attack, ...]]:
    return [attacks[i: i + size] for i in range(0, len(attacks), size)]


# ============================================================================================
# Hypothesis: statements from a small grammar of the same pieces.
# ============================================================================================


# SQL text that string arguments in generated statements may hold.
_SQL_STRINGS = {
    "postgres": tuple(inner.replace("{x}", expr) for inner, _ in list(_PG_CARRIERS.values())[:4]
                      for expr, _ in _PG_PAYLOADS),
    "duckdb": tuple(sql for sql, _ in _DUCKDB_PAYLOADS),
    "sqlite": ("SELECT hid_password FROM users", "SELECT 1"),
    "mysql": ("SELECT hid_password FROM users", "DELETE FROM t", "SELECT LOAD_FILE('@SECRET_FILE@')"),
    "spark": ("SELECT hid_password FROM users", "DELETE FROM t", "SELECT * FROM text.`@SECRET_FILE@`"),
}


def statements(engine: str):
    """A hypothesis strategy of Attacks for one engine: calls with nested arguments (strings,
    SQL in strings, columns, hidden columns, other calls, obfuscated names) in any position,
    table functions, catalog reads, PIVOT/UNPIVOT and alias tricks on hidden columns, SQL-in-
    a-string carriers; wrapped in a subquery or CTE or not; under either policy."""
    from hypothesis import strategies as st

    calls = _CALLS[engine]
    sql_strings = st.sampled_from(_SQL_STRINGS[engine]).map(_q)

    def spelled(name: str):
        return st.sampled_from([name, *_name_forms(engine, name)])

    def call_of(args):
        names = st.sampled_from(sorted({c.name for c in calls if c.table is None})).flatmap(spelled)
        return st.builds(lambda n, a: f"{n}({', '.join(a)})", names, st.lists(args, max_size=3))

    leaf = st.one_of(
        st.integers(-1, 5).map(str),
        st.sampled_from(["'@SECRET_FILE@'", "'@OUT@_hypothesis'", "'users'", "'my_seq'", "NULL", "a", "b"]),
        sql_strings,
        sql_strings.flatmap(lambda lit: st.sampled_from(_string_forms(engine, lit))),
        st.sampled_from(_hidden_names(engine)),
    )
    scalar_query = st.builds(lambda p, e: p.replace("{e}", e), st.sampled_from(_positions(engine, Call("f", ""))),
                             st.recursive(leaf, call_of, max_leaves=6))
    table_calls = [c for c in calls if c.table is not None]  # none in MySQL's list
    table_query = st.sampled_from(table_calls).flatmap(
        lambda c: st.builds(lambda n, p: p.replace("{f}", c.render(n)), spelled(c.name), st.sampled_from(_positions(engine, c)))
    )
    hidden_templates = [*_HIDDEN_DIRECT, *_ALIAS_TRICKS, *_ALIAS_TRICKS_ENGINE[engine], *(_PIVOTS if engine == "duckdb" else ())]
    hidden_query = st.builds(lambda t, h: t.replace("{h}", h), st.sampled_from(hidden_templates), st.sampled_from(_hidden_names(engine)))
    catalog_query = st.builds(lambda rc, form: form.replace("{rel}", rc[0]).replace("{cols}", rc[1]),
                              st.sampled_from(_CATALOGS[engine]), st.sampled_from(_CATALOG_FORMS[4:8]))
    queries = [scalar_query, *([table_query] if table_calls else []), hidden_query, catalog_query]
    if carriers := [a.sql for a in _carrier_attacks(engine)]:
        queries.append(st.sampled_from(carriers))
    wrapped = st.builds(lambda w, q: w.replace("{q}", q), st.sampled_from(_HIDDEN_WRAPPERS), st.one_of(queries))
    return st.builds(lambda sql, policy: Attack(sql, "property", policy), wrapped, st.sampled_from([OPEN, HIDDEN]))
