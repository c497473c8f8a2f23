"""Apache Spark SQL through its Thrift JDBC/ODBC server (HiveServer2's protocol, PyHive's DB-API).

Spark has no read-only mode and no accounts to narrow, so this engine is a wall of its own,
behind the validator: a statement runs only if Spark's dialect parses it as one query (SELECT,
a set operation, a WITH whose body is a query) with no TRANSFORM script and no function in
FROM (range(), explode()), or as the catalog reads introspection needs (SHOW TABLES, DESCRIBE
TABLE, SHOW TBLPROPERTIES). SET, CACHE, ADD JAR, INSERT, `FROM t INSERT ...` and every other
statement are refused before they are sent. The server must be the narrowed one `groundsql spark serve` starts (db/sparkserver.py):
each connection reads back its settings and is refused, with the one that is missing, when
they are not there. A query runs asynchronously and is polled: at the time limit it is
cancelled on the server (which interrupts its tasks), and the server's own query timeout
stands behind that. Rows are fetched in batches up to the row and byte caps.
"""

from __future__ import annotations

import re
import time
from typing import Any

from groundsql.db.engines.base import Limits, QueryTimedOut, fetch_bounded

_METADATA = re.compile(r"\s*(SHOW\s+TABLES\s+IN|SHOW\s+TBLPROPERTIES|DESCRIBE\s+TABLE)\s+(`[^`]+`|\w+)(\.(`[^`]+`|\w+))?\s*", re.IGNORECASE)
_POLL_S = 0.05


class SparkRefused(Exception):
    """A statement this engine does not send to Spark."""


class SparkEngine:
    dialect = "spark"
    # Spark's in-memory catalog holds no user functions (CREATE FUNCTION is never sent).
    user_functions_sql = None
    privilege_sql = None  # no accounts: the server's narrowing is checked in connect()
    reader_grants = ""

    def connect(self, spec: dict[str, Any]) -> Any:
        from pyhive import exc, hive

        from groundsql.db.sparkserver import NARROWING, QUERY_TIMEOUT_SETTING

        try:
            conn = hive.connect(host=spec["host"], port=spec["port"], username=spec["user"] or "groundsql",
                                database=spec["database"])
        except exc.OperationalError as err:  # no such database: Spark's sentence, not its stack trace
            raise SparkRefused(spark_message(err)) from None
        try:
            cursor = conn.cursor()
            settings = {}
            for key in [*NARROWING, QUERY_TIMEOUT_SETTING]:
                cursor.execute(f"SET {key}")
                settings.update(dict(cursor.fetchall()))
            missing = [f"{key} is {settings.get(key, '<undefined>')!s} (it must be {value}: {why})"
                       for key, (value, why) in NARROWING.items() if settings.get(key) != value]
            if settings.get(QUERY_TIMEOUT_SETTING, "<undefined>") in ("<undefined>", "0", "0s", "0ms"):
                missing.append(f"{QUERY_TIMEOUT_SETTING} is not set (a query could run for ever)")
            if missing:
                raise SparkRefused(f"the Spark server at {spec['host']}:{spec['port']} is not narrowed for groundsql: "
                                   f"{missing[0]}; start it with `groundsql spark serve`")
        except Exception:
            conn.close()
            raise
        return conn

    def run(self, conn: Any, sql: str, limits: Limits) -> tuple[tuple[str, ...], list[tuple[Any, ...]], bool]:
        from pyhive import exc
        from TCLIService.ttypes import TOperationState

        check_statement(sql)
        cursor = conn.cursor(arraysize=64)
        try:
            cursor.execute(sql, async_=True)
            # Before the worker's own timer (db/worker.py), whose interrupt can only close the
            # socket: the cancel must go out on a live connection to stop the query's tasks.
            deadline = time.monotonic() + max(limits.timeout_s - 1.0, limits.timeout_s * 0.8)
            running = (TOperationState.INITIALIZED_STATE, TOperationState.PENDING_STATE, TOperationState.RUNNING_STATE)
            status = cursor.poll()
            while status.operationState in running:
                if time.monotonic() > deadline:
                    cursor.cancel()
                    raise QueryTimedOut(f"query cancelled after {limits.timeout_s:g} s")
                time.sleep(_POLL_S)
                status = cursor.poll()
            if status.operationState != TOperationState.FINISHED_STATE:
                raise SparkRefused(spark_message(status.errorMessage or f"the query ended in state {status.operationState}"))
            columns = tuple(d[0] for d in cursor.description or ())
            rows, truncated = fetch_bounded(cursor.fetchmany, limits)
            return columns, rows, truncated
        except (exc.OperationalError, exc.ProgrammingError) as err:
            raise SparkRefused(spark_message(err)) from None
        finally:
            try:
                cursor.close()
            except Exception:  # noqa: BLE001 - a cancelled or failed operation may already be closed
                pass

    def usable(self, conn: Any) -> bool:
        return bool(conn._transport.isOpen())

    def interrupt(self, conn: Any) -> None:
        # The worker's timer: the poll loop cancels on time; a hung fetch ends with the socket.
        conn._transport.close()

    def close(self, conn: Any) -> None:
        conn.close()


def check_statement(sql: str) -> None:
    """Refuse anything but one query (or a catalog read), whatever the validator let through."""
    import sqlglot
    from sqlglot import exp

    if _METADATA.fullmatch(sql):
        return
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except sqlglot.errors.SqlglotError as err:
        raise SparkRefused(f"not a query Spark's dialect reads: {str(err).splitlines()[0]}") from None
    if len(statements) != 1:
        raise SparkRefused(f"one statement at a time ({len(statements)} given)")
    root = statements[0]
    if not isinstance(root, (exp.Select, exp.SetOperation)) or root.find(exp.QueryTransform):
        kind = "a TRANSFORM script" if root.find(exp.QueryTransform) else type(root).__name__.upper()
        raise SparkRefused(f"only a query may run on Spark, not {kind}")
    writes = root.find(exp.Insert, exp.Create, exp.Drop, exp.Cache, exp.Command, exp.Set)
    if writes is not None:
        raise SparkRefused(f"only a query may run on Spark, not {type(writes).__name__.upper()}")
    # A query reads tables: a function in FROM (range(10000000000), explode ...) makes rows of
    # its own, in loops Spark's cancellation reaches only between batches.
    made = next((t for t in root.find_all(exp.Table) if not isinstance(t.this, exp.Identifier)), None)
    if made is not None:
        raise SparkRefused(f"only tables may be read on Spark, not {made.this.sql(dialect='spark')[:60]}")


def spark_message(err: Exception | str) -> str:
    """Spark's own sentence from a Thrift error response (PyHive passes the whole response)."""
    response = err.args[0] if isinstance(err, Exception) and err.args else None
    status = getattr(response, "status", None)
    text = getattr(status, "errorMessage", None) or str(err)
    # "org.apache.hive.service.cli.HiveSQLException: Error running query: org.apache...: [CODE] ..."
    text = re.sub(r"(([\w$]+\.)+[\w$]*(Exception|Error): |Error running query: )", "", text)
    text = re.sub(r"\[([A-Z_.]+)\] (\[\1\] )?", r"[\1] ", text)
    return text.strip().splitlines()[0]
