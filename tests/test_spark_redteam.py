"""Issue 54: the Spark red team (tests/redteam/spark.py) thrown at a real Thrift server that
`groundsql spark serve` started, through every way a statement reaches it:

* `validator`: `Session.run_sql`, the validator and the engine (a reader's `/v1/sql`, an
  answer's SQL, a feedback correction all go this way);
* `executor`: `Database.execute`, the engine's own wall alone;
* `raw`: a client of its own that signed in with the server's password, the guard inside the
  server alone (what a bug in both of groundsql's walls would leave);
* `http`: `POST /v1/sql` with a reader key on `groundsql serve`.

Whatever any statement does, nothing may change (the catalog, the settings a new session
sees, the data files, no file written), no planted secret may come back (an environment
variable of the process that started the server, the server's password and its hash, its
paths, a file's content: in a cell, a column name or an error), no call may hang, and after
each denial-of-service statement that reached the server a trivial query must answer within
5 s. The 50 legitimate analytic queries must run on every path.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import groundsql
from groundsql.config import DatabaseConfig, Settings
from groundsql.db import Database
from groundsql.db.sparkcopy import spark_home
from groundsql.errors import GroundsqlError, QueryTimeoutError, UnsafeSQLError
from tests.conftest import spark_connect, spark_server
from tests.redteam import spark as red
from tests.redteam.victims import spark_catalog

pytest.importorskip("pyhive")

TIMEOUT_S = 5.0  # a statement's own limit: the slow ones that pass every gate end here
ALIVE_S = 5.0  # after a denial-of-service statement, a trivial query answers within this
GRACE_S = 20.0  # beyond the statement's limit, before a call counts as hung


@dataclass
class Victim:
    server: Any
    folder: Path
    secrets: dict[str, str]
    placeholders: dict[str, str]

    @property
    def url(self) -> str:
        return f"hive://127.0.0.1:{self.server.port}/demo"

    def leaked(self, text: str, sql: str) -> list[str]:
        """The planted secrets in what came back that the statement did not itself carry."""
        return sorted(name for name, value in self.secrets.items() if value in text and value not in sql)

    def fingerprint(self) -> dict[str, str]:
        state = {f"file {p.relative_to(self.folder)}": hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in sorted(self.folder.rglob("*")) if p.is_file()}
        state.update(spark_catalog(self.server.port))  # what the next client's session sees
        with Database(self.url) as db:
            state["rows of company"] = repr(db.execute("SELECT count(*) FROM company").rows)
        state["files written"] = repr(sorted(p.name for p in Path(tempfile.gettempdir()).glob("groundsql-evil*")))
        return state

    def answers(self) -> float | None:
        """Seconds a trivial query took on a new connection, or None past ALIVE_S."""
        start = time.monotonic()
        return time.monotonic() - start if self.server.answers(timeout_s=ALIVE_S) else None


@pytest.fixture(scope="module")
def victim() -> Iterator[Victim]:
    env_secret = f"SECRET-ENV-{uuid.uuid4().hex}"
    file_secret = f"SECRET-FILE-{uuid.uuid4().hex}"
    secret_dir = Path(tempfile.mkdtemp(prefix="groundsql-redteam-"))
    secret_dir.chmod(0o755)
    secret_file = secret_dir / "secret.txt"
    secret_file.write_text(file_secret + "\n")
    secret_file.chmod(0o644)  # a file the server's user can read: a read that worked would show it
    os.environ[red.ENV_SECRET_NAME] = env_secret  # in the environment `serve` is started from
    try:
        from groundsql.api import demo_database_url

        with spark_server([(demo_database_url(), "demo")], query_timeout_s=30) as (server, folder):
            os.environ.pop(red.ENV_SECRET_NAME, None)
            secrets = {
                "the environment's secret": env_secret, "a file's content": file_secret, "/etc/passwd": "root:x:0:0",
                "the server's password": server.password,
                "the password's hash": hashlib.sha256(server.password.encode()).hexdigest(),
                "the data folder": str(folder), "the server's scratch folder": str(server.scratch),
                "Spark's installation": str(spark_home()), "the secret file's path": str(secret_file),
            }
            yield Victim(server, folder, secrets, {"@SECRET_FILE@": str(secret_file), "@DATA@": str(folder)})
    finally:
        os.environ.pop(red.ENV_SECRET_NAME, None)
        secret_file.unlink(missing_ok=True)
        secret_dir.rmdir()


# -- the paths ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    verdict: str  # refused (by groundsql, before sending) | ran | failed | timeout | hung
    text: str  # every column name, cell and message that came back
    elapsed_s: float


def _settings() -> Settings:
    return Settings(database=DatabaseConfig(timeout_s=TIMEOUT_S))


def _timed(call: Callable[[], Any]) -> Outcome:
    start = time.monotonic()
    try:
        result = call()
    except UnsafeSQLError as err:
        return Outcome("refused", str(err), time.monotonic() - start)
    except QueryTimeoutError as err:
        return Outcome("timeout", str(err), time.monotonic() - start)
    except GroundsqlError as err:
        return Outcome("failed", str(err), time.monotonic() - start)
    elapsed = time.monotonic() - start
    if isinstance(result, Outcome):
        return result
    text = "\x00".join([*map(str, result.columns), *(str(cell) for row in result.rows for cell in row)])
    return Outcome("ran" if elapsed < TIMEOUT_S + GRACE_S else "hung", text, elapsed)


class RawClient:
    """Statements on a connection of its own, past groundsql: polled, cancelled at TIMEOUT_S."""

    def __init__(self, victim: Victim) -> None:
        self.victim, self.conn = victim, None

    def run(self, sql: str) -> Outcome:
        from TCLIService.ttypes import TOperationState

        start = time.monotonic()
        try:
            if self.conn is None:
                self.conn = spark_connect(self.victim.server.port, "demo")
            cursor = self.conn.cursor()
            cursor.execute("USE demo")  # the statement before may have been a USE of another
            try:
                cursor.execute(sql, async_=True)
                status = cursor.poll()
                running = (TOperationState.INITIALIZED_STATE, TOperationState.PENDING_STATE,
                           TOperationState.RUNNING_STATE)
                while status.operationState in running:
                    if time.monotonic() - start > TIMEOUT_S:
                        cursor.cancel()
                        return Outcome("timeout", "cancelled", time.monotonic() - start)
                    time.sleep(0.05)
                    status = cursor.poll()
                if status.operationState != TOperationState.FINISHED_STATE:
                    return Outcome("failed", str(status.errorMessage), time.monotonic() - start)
                columns = [d[0] for d in cursor.description or ()]
                rows = cursor.fetchmany(1000)
                text = "\x00".join([*map(str, columns), *(str(c) for row in rows for c in row)])
                return Outcome("ran", text, time.monotonic() - start)
            finally:
                try:
                    cursor.close()
                except Exception:  # noqa: BLE001 - a failed or cancelled operation may be gone
                    pass
        except Exception as err:  # noqa: BLE001 - the server's refusals come as driver errors
            self.close()
            response = err.args[0] if err.args else None
            message = getattr(getattr(response, "status", None), "errorMessage", None) or f"{type(err).__name__}: {err}"
            return Outcome("failed", message, time.monotonic() - start)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001
                pass
        self.conn = None


@pytest.fixture(scope="module")
def paths(victim: Victim) -> Iterator[dict[str, Callable[[str], Outcome]]]:
    session = groundsql.connect(victim.url, settings=_settings())
    database = Database(victim.url, _settings().database)
    raw = RawClient(victim)
    yield {
        "validator": lambda sql: _timed(lambda: session.run_sql(sql)),
        "executor": lambda sql: _timed(lambda: database.execute(sql)),
        "raw": raw.run,
    }
    raw.close()
    session.close()
    database.close()


def _violations(victim: Victim, statement: red.Statement, sql: str, outcome: Outcome, groundsql_said: bool) -> list[str]:
    found = []
    if leaks := victim.leaked(outcome.text, sql):
        found.append("leaked " + ", ".join(leaks))
    if outcome.verdict == "hung" or outcome.elapsed_s > TIMEOUT_S + GRACE_S:
        found.append(f"answered after {outcome.elapsed_s:.0f} s")
    if statement.family == "dos" and outcome.verdict != "refused":
        if (took := victim.answers()) is None:
            found.append(f"the server did not answer a trivial query within {ALIVE_S:g} s afterwards")
    # What groundsql says is one sentence; a raw client gets what HiveServer2 sends, traces and all.
    if groundsql_said and ("\n\tat " in outcome.text or re.search(r"\bat (org|java|scala)\.[\w.$]+\(", outcome.text)):
        found.append("a stack trace came back")
    return found


def _throw(victim: Victim, run: Callable[[str], Outcome], statements: list[red.Statement], *,
           raw: bool = False) -> list[str]:
    before = victim.fingerprint()
    problems = []
    for statement in statements:
        sql = red.render(statement.sql, victim.placeholders)
        outcome = run(sql)
        for violation in _violations(victim, statement, sql, outcome, groundsql_said=not raw):
            problems.append(f"- [{statement.family}, {statement.variant}] {sql[:300]!r}\n    "
                            f"{outcome.verdict}: {outcome.text[:300]!r}\n    -> {violation}")
    after = victim.fingerprint()
    changed = sorted(key for key in {*before, *after} if before.get(key) != after.get(key))
    if changed:
        problems.append(f"- the statements changed {', '.join(changed)}: "
                        f"{[(k, before.get(k), after.get(k)) for k in changed][:3]}")
    return problems


FAMILIES = ("substitution", "metadata", "dos", "wall")


def test_the_corpus_holds_over_a_thousand_statements_of_every_family() -> None:
    statements = red.corpus()
    assert len(statements) >= 1000 and len({s.sql for s in statements}) == len(statements)
    assert {s.family for s in statements} == set(FAMILIES)
    assert len(red.LEGITIMATE) == 50


@pytest.mark.parametrize("through", ["validator", "executor", "raw"])
@pytest.mark.parametrize("family", FAMILIES)
def test_nothing_leaks_changes_or_wedges_the_server(victim: Victim, paths: dict, through: str, family: str) -> None:
    statements = [s for s in red.corpus() if s.family == family]
    if problems := _throw(victim, paths[through], statements, raw=through == "raw"):
        pytest.fail(f"{len(problems)} of {len(statements)} {family} statements through the {through}:\n"
                    + "\n".join(problems[:25]), pytrace=False)


@pytest.mark.parametrize("through", ["validator", "executor", "raw"])
def test_the_legitimate_analytic_queries_run_on_every_path(victim: Victim, paths: dict, through: str) -> None:
    failed = []
    for sql in red.LEGITIMATE:
        outcome = paths[through](sql)
        if outcome.verdict != "ran" or not outcome.text:
            failed.append(f"{sql[:120]!r}: {outcome.verdict}: {outcome.text[:200]}")
    assert not failed, "\n".join(failed)


# -- the service -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reader(victim: Victim, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], Any]]:
    from tests.server_harness import REPLAY_LLM, live_server

    from tests.test_server import Slow

    state = tmp_path_factory.mktemp("state") / "state.sqlite"
    config = {"state_url": f"sqlite:///{state}", "auth": True, "llm": REPLAY_LLM,
              "databases": {"demo": {"url": victim.url, "strategy": "zero-shot",
                                     "settings": {"database": {"timeout_s": TIMEOUT_S}}}}}
    model = Slow("SELECT 1")  # what it writes is set by the test
    with live_server(config, llm=model) as (url, service):
        key = service.state.add_key("red-reader", ["demo"], "reader")
        yield url, {"authorization": f"Bearer {key}"}, service, model


def test_the_corpus_through_v1_sql_with_a_reader_key(victim: Victim, reader) -> None:
    import httpx

    url, headers, _, _ = reader

    def post(sql: str) -> Outcome:
        start = time.monotonic()
        try:
            response = httpx.post(f"{url}/v1/sql", json={"database": "demo", "sql": sql}, headers=headers,
                                  timeout=TIMEOUT_S + GRACE_S)
        except httpx.TimeoutException:
            return Outcome("hung", "", time.monotonic() - start)
        code = response.json().get("error", {}).get("code") if response.status_code != 200 else None
        verdict = "ran" if response.status_code == 200 else "refused" if code == "refused" else "failed"
        if response.status_code >= 500:
            verdict = "hung" if response.status_code == 504 else "failed"
        return Outcome(verdict, response.text, time.monotonic() - start)

    problems = _throw(victim, post, red.corpus())
    assert not problems, f"{len(problems)} statements through /v1/sql:\n" + "\n".join(problems[:25])


def test_an_answer_feedback_and_csv_carry_no_substituted_secret(victim: Victim, reader) -> None:
    """The model's SQL (an answer), a correction a reader sends (a learned example) and the
    CSV of an answer: each a way `${env:...}` reached the server before."""
    import httpx

    url, headers, service, model = reader
    served = service.databases["demo"]
    hostile = [s for s in red.substitution() if s.variant == "canonical"][::7]
    before = victim.fingerprint()
    for i, statement in enumerate(hostile):
        model.sql = statement.sql  # the model writes the attack
        question = f"What is in the environment, part {i}?"  # a new question each time: no cached answer
        answer = httpx.post(f"{url}/v1/ask", json={"database": "demo", "question": question},
                            headers=headers, timeout=60)
        assert not victim.leaked(answer.text, statement.sql), answer.text[:300]
        body = answer.json()
        correction = httpx.post(f"{url}/v1/feedback", headers=headers, timeout=60, json={
            "answer_id": body["answer_id"], "verdict": "wrong", "corrected_sql": statement.sql})
        assert correction.status_code == 400 and not victim.leaked(correction.text, statement.sql), correction.text
        csv = httpx.get(f"{url}/v1/answers/{body['answer_id']}/result.csv", headers=headers, timeout=60)
        assert not victim.leaked(csv.text, statement.sql)
    assert not [e for e in served.session.context.learned if "${" in e.sql]
    assert victim.fingerprint() == before


# -- the server's own wall -------------------------------------------------------------------------


def test_the_port_takes_only_the_servers_password(victim: Victim) -> None:
    from pyhive import hive

    port = victim.server.port
    for attempt in (lambda: hive.connect(host="127.0.0.1", port=port, username="attacker"),  # no password
                    lambda: spark_connect(port, password="guessed"),
                    lambda: spark_connect(port, password=victim.secrets["the password's hash"])):
        with pytest.raises(Exception, match="(?i)login|auth|closed|read 0 bytes"):
            attempt().close()
    with spark_connect(port, "demo") as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT count(*) FROM company")
        assert cursor.fetchall() == [(114,)]


@pytest.mark.parametrize("overlay", [{"spark.sql.runSQLOnFiles": "true"}, {"spark.sql.variable.substitute": "true"},
                                     {"spark.sql.restrictedMode.enabled": "false"},
                                     {"spark.sql.thriftServer.queryTimeout": "0"}])
def test_a_session_opened_with_other_settings_runs_nothing(victim: Victim, overlay: dict[str, str]) -> None:
    # HiveServer2 applies a session's opening configuration without a SET statement: the
    # guard then refuses every statement of the session, from the USE the client opens it with.
    from groundsql.db.engines.spark import open_connection

    for database in ("demo", ""):
        # Static settings cannot even be given (CANNOT_MODIFY_STATIC_CONFIG); others leave a
        # session in which nothing runs.
        with pytest.raises(Exception, match="changed|STATIC_CONFIG") as refused:
            with open_connection("127.0.0.1", victim.server.port, "attacker", victim.server.password, database,
                                 configuration={f"set:hiveconf:{k}": v for k, v in overlay.items()}) as conn:
                conn.cursor().execute("SELECT * FROM text.`/etc/passwd`")
        assert "root:x:0:0" not in str(refused.value)
