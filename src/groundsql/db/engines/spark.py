"""Apache Spark SQL through its Thrift JDBC/ODBC server (HiveServer2's protocol, PyHive's DB-API).

Spark has no read-only mode and no accounts to narrow, so this engine is a wall of its own,
behind the validator: a statement runs only if Spark's dialect parses it as one query (SELECT,
a set operation, a WITH whose body is a query) with no TRANSFORM script, no function in FROM
(range(), explode()) and no `${` (Spark would substitute its variables into the text), or as
the catalog reads introspection needs (SHOW TABLES, DESCRIBE TABLE, SHOW TBLPROPERTIES). SET,
CACHE, ADD JAR, INSERT, `FROM t INSERT ...` and every other statement are refused before they
are sent. The server must be the walled one `groundsql spark serve` starts (db/sparkserver.py):
the engine signs in with its password (from the URL, or the file `serve` wrote) and reads back
its narrowing settings, refusing a server without them. A query runs asynchronously and is
polled: at the time limit it is cancelled on the server (which interrupts its tasks), and the
server's own query timeout and watchdog stand behind that. Rows are fetched in batches up to
the row and byte caps; Spark's internal failures reach the caller as one sentence.
"""

from __future__ import annotations

import re
import time
from typing import Any

from groundsql.db.engines.base import Limits, QueryTimedOut, fetch_bounded

_METADATA = re.compile(r"\s*(SHOW\s+TABLES\s+IN|SHOW\s+TBLPROPERTIES|DESCRIBE\s+TABLE)\s+(`[^`]+`|\w+)(\.(`[^`]+`|\w+))?\s*", re.IGNORECASE)
_POLL_S = 0.05
# Any one call on the Thrift socket; a query itself is polled, so no call waits for it.
_RPC_TIMEOUT_S = 120


class SparkRefused(Exception):
    """A statement this engine does not send to Spark."""


class SparkEngine:
    dialect = "spark"
    # Spark's in-memory catalog holds no user functions (CREATE FUNCTION is never sent).
    user_functions_sql = None
    privilege_sql = None  # no accounts: the server's narrowing is checked in connect()
    reader_grants = ""

    def connect(self, spec: dict[str, Any]) -> Any:
        from pyhive import exc

        from groundsql.db.sparkserver import NARROWING, QUERY_TIMEOUT_SETTING, password_for, secret_file

        password = spec.get("password") or password_for(spec["host"], spec["port"])
        if not password:
            raise SparkRefused(f"no password for the Spark server at {spec['host']}:{spec['port']}: "
                               f"`groundsql spark serve` keeps it in {secret_file(spec['host'], spec['port'])} for the "
                               "account that started it; from another account give it in the URL "
                               "(hive://groundsql:PASSWORD@host:port/db)")
        try:
            conn = open_connection(spec["host"], spec["port"], spec["user"] or "groundsql", password, spec["database"],
                                   timeout_s=_RPC_TIMEOUT_S)
        except exc.OperationalError as err:  # no such database: Spark's sentence, not its stack trace
            raise SparkRefused(spark_message(err)) from None
        except Exception as err:  # noqa: BLE001 - thrift_sasl and the socket raise their own kinds
            raise SparkRefused(_connect_failure(err, spec)) from None
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
        from thrift.transport.TTransport import TTransportException

        check_statement(sql)
        # Before the worker's own timer (db/worker.py), whose interrupt can only close the
        # socket: the cancel must go out on a live connection to stop the query's tasks (a
        # closed socket leaves them running on the server).
        deadline = time.monotonic() + max(limits.timeout_s - 0.5, limits.timeout_s * 0.8)
        cursor = conn.cursor(arraysize=64)
        try:
            cursor.execute(sql, async_=True)
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
        except TTransportException:
            raise SparkRefused("the Spark server closed the connection during the query (it may have stopped; "
                               "`groundsql spark serve` starts it again)") from None
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


def open_connection(host: str, port: int, user: str, password: str, database: str, *,
                    timeout_s: float | None = None, configuration: dict[str, str] | None = None) -> Any:
    """A PyHive connection to the password-protected Thrift server, every call on its socket
    bounded by `timeout_s` (a server that accepts and never answers cannot hang the caller).
    `configuration` is the session's opening configuration (groundsql sends none)."""
    import logging

    import thrift_sasl
    from pyhive import hive
    from thrift.transport import TSocket

    # TSocket logs every refused connection as an error of its own; the caller says what failed.
    logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)
    sock = TSocket.TSocket(host, port)
    if timeout_s is not None:
        sock.setTimeout(int(timeout_s * 1000))
    transport = thrift_sasl.TSaslClientTransport(
        lambda: hive.get_installed_sasl(host=host, sasl_auth="PLAIN", username=user, password=password), "PLAIN", sock)
    return hive.connect(thrift_transport=transport, username=user, database=database, configuration=configuration)


def _connect_failure(err: Exception, spec: dict[str, Any]) -> str:
    text = str(err)
    where = f"the Spark server at {spec['host']}:{spec['port']}"
    if "wrong password" in text or "Error validating the login" in text or "authentication" in text.lower():
        return f"{where} refused the password (a server started again has a new one: `groundsql spark serve` writes it)"
    if isinstance(err, (ConnectionError, OSError)) or "Could not connect" in text:
        return f"could not open a connection to {where}: is `groundsql spark serve` running?"
    return f"could not open a connection to {where}: {text.splitlines()[0][:200] if text else type(err).__name__}"


def check_statement(sql: str) -> None:
    """Refuse anything but one query (or a catalog read), whatever the validator let through."""
    import sqlglot
    from sqlglot import exp

    if "${" in sql:  # Spark would substitute its variables and environment into the text
        raise SparkRefused("${...} variable substitution is not sent to Spark")
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


# Spark's internal failures, in a sentence a person can act on (the server's log has the rest).
_INTERNAL = (
    (re.compile(r"OutOfMemoryError|Java heap space|GC overhead limit"), "the Spark server ran out of memory on this "
     "query; ask for fewer rows or columns, or aggregate first"),
    (re.compile(r"maxResultSize|Total size of serialized results"), "the query's result is larger than the Spark "
     "server returns at once; ask for fewer rows or columns, or aggregate first"),
    (re.compile(r"ran past the server's limit|cancelled because|Job \d+ cancelled|OperationCanceled|TIMEDOUT",
                re.IGNORECASE), "the Spark server cancelled the query at its time limit"),
    (re.compile(r"Boxed (Exception|Error)|INTERNAL_ERROR|NullPointerException|StackOverflowError"),
     "the Spark server failed on this query with an internal error (its log has the details)"),
)
_CLASS_NAME = re.compile(r"(([\w$]+\.)+[\w$]*(Exception|Error): |Error running query: )")


def spark_message(err: Exception | str) -> str:
    """Spark's own sentence from a Thrift error response (PyHive passes the whole response):
    the guard's refusals and Spark's error classes as they are, its internal failures as one
    sentence of their own, never a Java class name or a stack trace."""
    response = err.args[0] if isinstance(err, Exception) and err.args else None
    status = getattr(response, "status", None)
    text = getattr(status, "errorMessage", None) or str(err)
    guard = re.search(r"GuardException: ([^\n]*)", text)
    if guard:
        return guard.group(1).strip()
    for pattern, sentence in _INTERNAL:
        if pattern.search(text):
            return sentence
    # "org.apache.hive.service.cli.HiveSQLException: Error running query: org.apache...: [CODE] ..."
    text = _CLASS_NAME.sub("", text)
    text = re.sub(r"\[([A-Z_.]+)\] (\[\1\] )?", r"[\1] ", text)
    first = (text.strip().splitlines() or ["the Spark server refused the query"])[0]
    return first if len(first) <= 400 else first[:397] + "..."
