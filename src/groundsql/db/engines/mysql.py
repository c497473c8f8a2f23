"""MySQL and MariaDB: one query per request, inside a READ ONLY transaction with the server's
own time limit, as an account that cannot write.

The connection is opened without CLIENT.MULTI_STATEMENTS and without LOCAL INFILE (pymysql's
defaults, kept), so the server runs at most one statement per request: `COMMIT; DELETE ...`
is a syntax error there. Before a statement runs it must begin with SELECT, WITH or "(", and
the server's own parser must prepare it as one that returns rows (COM_STMT_PREPARE reports its
columns): SET GLOBAL, KILL, FLUSH, CALL, DO, HANDLER, LOAD DATA and SELECT ... INTO OUTFILE,
DUMPFILE or @variable are refused before anything runs, whatever the account may do. It then
runs in `START TRANSACTION READ ONLY` on a session whose every transaction is read-only (`SET
SESSION TRANSACTION READ ONLY`), under the server's time limit (MariaDB's `SET STATEMENT
max_statement_time=... FOR`, MySQL's `max_execution_time`), and is stopped from a second
connection (`KILL QUERY`) when the worker's timer fires. Rows come from an unbuffered cursor,
so LIMIT 3000000 is not buffered in the client; a result read only in part ends its
connection, which stops the server sending. Afterwards the transaction is rolled back and the
session reset (COM_RESET_CONNECTION: user variables, temporary tables, prepared statements,
GET_LOCK locks, settings), so nothing one query does outlives it on the pooled connection.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

from groundsql.db.engines.base import Limits, QueryTimedOut, fetch_bounded

# Why an account may not be used (one row per reason), read by the parent before any query
# runs. A READ ONLY transaction binds table writes only: SET GLOBAL, FILE (INTO OUTFILE,
# LOAD_FILE), KILL, SHUTDOWN or GRANT are not transactional at all. Everything but reading is
# a reason; the privileges of a role are not listed to the account that has it (MariaDB shows
# only the account's own grants), so an enabled role is a reason too.
PRIVILEGE_SQL = """
WITH me AS (
  SELECT CONCAT('''', LEFT(u, CHAR_LENGTH(u) - CHAR_LENGTH(SUBSTRING_INDEX(u, '@', -1)) - 1), '''@''',
                SUBSTRING_INDEX(u, '@', -1), '''') AS grantee
  FROM (SELECT CURRENT_USER() AS u) AS cu
), grants AS (
  SELECT PRIVILEGE_TYPE AS privilege, IS_GRANTABLE AS grantable, '' AS object
    FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = (SELECT grantee FROM me)
  UNION ALL SELECT PRIVILEGE_TYPE, IS_GRANTABLE, CONCAT(' on database ', TABLE_SCHEMA)
    FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = (SELECT grantee FROM me)
  UNION ALL SELECT PRIVILEGE_TYPE, IS_GRANTABLE, CONCAT(' on table ', TABLE_SCHEMA, '.', TABLE_NAME)
    FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = (SELECT grantee FROM me)
  UNION ALL SELECT PRIVILEGE_TYPE, IS_GRANTABLE, CONCAT(' on column ', TABLE_SCHEMA, '.', TABLE_NAME, '.', COLUMN_NAME)
    FROM information_schema.COLUMN_PRIVILEGES WHERE GRANTEE = (SELECT grantee FROM me)
)
SELECT reason FROM (
  SELECT CASE WHEN privilege = 'SUPER' THEN 0 ELSE 1 END AS rank,
         CONCAT('it has the ', privilege, ' privilege', object) AS reason
    FROM grants WHERE privilege NOT IN ('USAGE', 'SELECT', 'SHOW VIEW', 'SHOW DATABASES')
  UNION ALL SELECT DISTINCT 2, 'it has the GRANT OPTION privilege' FROM grants WHERE grantable = 'YES'
  UNION ALL SELECT 3, CONCAT('it acts with role ', ROLE_NAME, ', whose privileges it cannot list')
    FROM information_schema.ENABLED_ROLES WHERE ROLE_NAME IS NOT NULL
) AS reasons
ORDER BY rank, reason
LIMIT 5
"""

# What the server must see first: a query, never SET, CALL, SHOW, OPTIMIZE TABLE ... (some of
# which return rows too), and never a comment, which MySQL may execute (/*! ... */).
_QUERY_START = re.compile(r"(SELECT|WITH)\b|\(", re.IGNORECASE)
# Protocol commands pymysql has no public call for.
_COM_STMT_PREPARE, _COM_STMT_CLOSE, _COM_RESET_CONNECTION = 0x16, 0x19, 0x1F
# The server stopped the query: MariaDB's max_statement_time, MySQL's max_execution_time,
# KILL QUERY.
_TIMED_OUT = {1969, 3024, 1317}


class NotAQuery(Exception):
    """The statement is not one query that returns rows: it was not run."""


@dataclass
class _Session:
    conn: Any  # pymysql.connections.Connection
    mariadb: bool
    spec: dict[str, Any]  # to open the second connection that interrupts


class MySQLEngine:
    dialect = "mysql"
    # Stored functions of the database (an unqualified call of a name that is not built in
    # resolves to one); routines elsewhere can only be called qualified, which is refused.
    user_functions_sql = (
        "SELECT DISTINCT LOWER(ROUTINE_NAME) FROM information_schema.ROUTINES "
        "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'FUNCTION'"
    )
    privilege_sql = PRIVILEGE_SQL
    reader_grants = "CREATE USER reader IDENTIFIED BY '...'; GRANT SELECT ON {database}.* TO reader"

    def connect(self, spec: dict[str, Any]) -> _Session:
        conn = _open(spec)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT VERSION()")
                version = str(cur.fetchone()[0])
            _start_session(conn)
        except BaseException:
            conn.close()
            raise
        return _Session(conn, "mariadb" in version.lower(), spec)

    def run(self, session: _Session, sql: str, limits: Limits) -> tuple[tuple[str, ...], list[tuple[Any, ...]], bool]:
        import pymysql

        conn = session.conn
        cursor = conn.cursor(pymysql.cursors.SSCursor)
        try:
            _check_query(conn, sql)
            with conn.cursor() as cur:
                cur.execute("START TRANSACTION READ ONLY")
                if not session.mariadb:
                    cur.execute(f"SET SESSION max_execution_time = {max(int(limits.timeout_s * 1000), 1)}")
            try:
                cursor.execute(_timed(sql, session, limits))  # no parameters: '%' is only a character
                if cursor.description is None:
                    return (), [], False
                columns = tuple(d[0] for d in cursor.description)
                rows, truncated = fetch_bounded(cursor.fetchmany, limits)
                return columns, rows, truncated
            except pymysql.err.OperationalError as err:
                if err.args and err.args[0] in _TIMED_OUT:
                    raise QueryTimedOut(str(err.args[-1])) from None
                raise
        finally:
            _end(session, cursor)

    def usable(self, session: _Session) -> bool:
        # pymysql closes its socket when the server goes away (a restart, a killed connection).
        return bool(session.conn.open)

    def interrupt(self, session: _Session) -> None:
        killer = _open(session.spec, connect_timeout=5)
        try:
            with killer.cursor() as cur:
                cur.execute(f"KILL QUERY {int(session.conn.thread_id())}")
        finally:
            killer.close()

    def close(self, session: _Session) -> None:
        if session.conn.open:
            session.conn.close()


def _open(spec: dict[str, Any], connect_timeout: int = 10) -> Any:
    import pymysql

    return pymysql.connect(
        host=spec["host"], port=spec["port"], user=spec["user"], password=spec["password"],
        database=spec["database"], unix_socket=spec.get("unix_socket"), charset="utf8mb4",
        connect_timeout=connect_timeout, local_infile=False, program_name="groundsql",
        autocommit=None,  # the server's default, as after each reset: every query opens its own transaction
    )


def _start_session(conn: Any) -> None:
    """Settings every query's session starts from (again after each reset). sql_mode is
    cleared so that the server reads a statement as the validator did (sqlglot's MySQL):
    without ANSI_QUOTES, NO_BACKSLASH_ESCAPES, PIPES_AS_CONCAT, IGNORE_SPACE or ORACLE, which
    change where a string, an identifier or a comment ends."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION READ ONLY")
        cur.execute("SET SESSION sql_mode = ''")


def _check_query(conn: Any, sql: str) -> None:
    if not _QUERY_START.match(sql.lstrip()):
        raise NotAQuery("only a query may run here: a statement beginning with SELECT, WITH or (")
    if not _prepared_columns(conn, sql):
        raise NotAQuery("only a query that returns rows may run here (not SELECT ... INTO, or any other statement)")


def _prepared_columns(conn: Any, sql: str) -> int:
    """How many columns the server's parser says the statement returns; preparing runs
    nothing. An error packet (a syntax error, a second statement) raises the server's error."""
    conn._execute_command(_COM_STMT_PREPARE, sql)
    statement, columns, params = struct.unpack_from("<xIHH", conn._read_packet().get_all_data())
    # The parameter and column definitions follow, each list closed by an EOF packet
    # (pymysql does not ask for CLIENT_DEPRECATE_EOF).
    for count in (params, columns):
        for _ in range(count + 1 if count else 0):
            conn._read_packet()
    conn._execute_command(_COM_STMT_CLOSE, struct.pack("<I", statement))  # no reply
    return columns


def _timed(sql: str, session: _Session, limits: Limits) -> str:
    if session.mariadb:  # MySQL's limit was set on the session (it has no SET STATEMENT)
        return f"SET STATEMENT max_statement_time={max(limits.timeout_s, 0.001):.3f} FOR {sql}"
    return sql


def _end(session: _Session, cursor: Any) -> None:
    """Roll back and reset the session; or, while the server is still sending rows that will
    not be read, end the connection, which stops the query (the server rolls back and forgets
    the session itself), and open the next query's. (A connection left closed would look
    broken to the worker, which runs a query again on a new one.)"""
    conn = session.conn
    if not conn.open:
        return
    result = getattr(cursor, "_result", None)  # pymysql's unbuffered result
    if result is not None and result.unbuffered_active:
        result.unbuffered_active = False  # or pymysql would read the rest when it is collected
        conn.close()
        session.conn = _open(session.spec)
        _start_session(session.conn)
        return
    conn.rollback()
    conn._execute_command(_COM_RESET_CONNECTION, b"")
    conn._read_ok_packet()
    _start_session(conn)
