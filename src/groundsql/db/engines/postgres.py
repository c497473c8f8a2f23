"""PostgreSQL: one SELECT per round trip, inside a READ ONLY transaction, as a role that
cannot write.

Each query is sent as `DECLARE cursor CURSOR FOR <sql>` over the extended protocol, so by
construction it is exactly one statement and a query (PostgreSQL declares cursors only for
SELECT and VALUES, and refuses a data-modifying WITH there): `COMMIT; DELETE ...` or
`SET TRANSACTION READ WRITE; ...` cannot even be sent. Rows are fetched from the server-side
cursor in batches, so an explicit LIMIT 3000000 does not buffer three million rows in the
client. After each query the transaction is rolled back and the session reset (DISCARD ALL:
advisory locks, prepared statements, settings, temporary tables), so nothing one query does
outlives it on the pooled connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groundsql.db.engines.base import Limits, fetch_bounded

# Why a role may not be used (one row per reason), read by the parent before any query runs.
# A READ ONLY transaction does not bind a superuser (pg_read_file, COPY TO PROGRAM), and
# functions such as dblink open connections of their own that are not read-only at all.
PRIVILEGE_SQL = """
SELECT 'it is a superuser' WHERE (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
UNION ALL SELECT 'it may create roles' WHERE (SELECT rolcreaterole FROM pg_roles WHERE rolname = current_user)
UNION ALL SELECT 'it may bypass row-level security' WHERE (SELECT rolbypassrls FROM pg_roles WHERE rolname = current_user)
UNION ALL SELECT 'it may create databases' WHERE (SELECT rolcreatedb FROM pg_roles WHERE rolname = current_user)
UNION ALL SELECT 'it may replicate (and stream every row, whatever the grants)'
  WHERE (SELECT rolreplication FROM pg_roles WHERE rolname = current_user)
UNION ALL SELECT 'it may create schemas in this database' WHERE has_database_privilege(current_database(), 'CREATE')
UNION ALL SELECT 'it is a member of ' || r.rolname FROM pg_roles r
  WHERE r.rolname IN ('pg_write_all_data', 'pg_write_server_files', 'pg_execute_server_program',
                      'pg_read_server_files', 'pg_signal_backend')
    AND pg_has_role(current_user, r.oid, 'MEMBER')
UNION ALL SELECT 'it may write to table ' || n.nspname || '.' || c.relname
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
    AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
    AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')
UNION ALL SELECT 'it may advance sequence ' || n.nspname || '.' || c.relname
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind = 'S' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(c.oid, 'USAGE, UPDATE') END
UNION ALL SELECT 'it may create objects in schema ' || n.nspname
  FROM pg_namespace n
  WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
    AND n.nspname NOT LIKE 'pg_temp%' AND has_schema_privilege(n.oid, 'CREATE')
LIMIT 5
"""


@dataclass
class _Session:
    conn: Any  # psycopg.Connection
    settings: dict[str, str]  # set locally in every query's transaction


class PostgresEngine:
    dialect = "postgres"
    # Functions outside the system schemas: user-defined ones and those of extensions
    # (crosstab, dblink, ...), which can overload a built-in's name for other argument types.
    user_functions_sql = (
        "SELECT DISTINCT lower(p.proname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
    )
    privilege_sql = PRIVILEGE_SQL
    reader_grants = ("CREATE ROLE reader LOGIN; GRANT USAGE ON SCHEMA public TO reader; GRANT SELECT ON "
                     "ALL TABLES IN SCHEMA public TO reader")

    def connect(self, spec: dict[str, Any]) -> _Session:
        import psycopg

        conn = psycopg.connect(
            spec["conninfo"], autocommit=False, connect_timeout=10, application_name="groundsql",
            # No automatic server-side prepared statements: DISCARD ALL after each query
            # would drop them under psycopg's feet.
            prepare_threshold=None,
        )
        conn.read_only = True  # every transaction psycopg starts is BEGIN READ ONLY
        # temp_file_limit may only be set by a superuser or a role granted SET on it.
        with conn.cursor() as cur:
            cur.execute("SELECT has_parameter_privilege('temp_file_limit', 'SET')"
                        if conn.info.server_version >= 150000 else
                        "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            may_limit_temp = bool((cur.fetchone() or (False,))[0])
        conn.rollback()
        settings = {"work_mem": f"{spec['work_mem_mb']}MB"}
        if may_limit_temp:
            settings["temp_file_limit"] = f"{spec['temp_file_limit_mb']}MB"
        return _Session(conn, settings)

    def run(self, session: _Session, sql: str, limits: Limits) -> tuple[tuple[str, ...], list[tuple[Any, ...]], bool]:
        conn = session.conn
        budget = f"{max(int(limits.timeout_s * 1000), 1)}ms"
        settings = {**session.settings, "statement_timeout": budget, "lock_timeout": budget}
        try:
            with conn.cursor() as cur:
                for name, value in settings.items():  # SET LOCAL: gone with the transaction
                    cur.execute("SELECT set_config(%s, %s, true)", (name, value))
            cursor = conn.cursor(name="groundsql_query")
            try:
                cursor.execute(sql)  # no parameters: a '%' in the SQL is only a character
                columns = tuple(d.name for d in cursor.description or ())
                rows, truncated = fetch_bounded(cursor.fetchmany, limits)
                return columns, rows, truncated
            finally:
                cursor.close()
        finally:
            conn.rollback()
            conn.autocommit = True  # DISCARD ALL cannot run inside a transaction
            try:
                conn.execute("DISCARD ALL")
            finally:
                conn.autocommit = False

    def usable(self, session: _Session) -> bool:
        # A backend that was terminated, or a server that restarted, leaves a broken connection.
        return not (session.conn.closed or session.conn.broken)

    def interrupt(self, session: _Session) -> None:
        session.conn.cancel_safe(timeout=5.0)

    def close(self, session: _Session) -> None:
        session.conn.close()
