"""The service: what the HTTP API and the MCP server both call, so there is one way of asking.

It holds one `Session` per configured database (its model loaded once and its prompt prefix
kept warm between requests), the state store, and the limit on questions answered at once.
Every operation checks what the caller's key may use, and every statement it runs is audited.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groundsql.deadline import question_deadline
from groundsql.api import Session, connect
from groundsql.config import LLMConfig
from groundsql.conversation import Turn
from groundsql.db import QueryResult
from groundsql.errors import DatabaseError, GroundsqlError, UnsafeSQLError
from groundsql.llm import LLM, build_llm
from groundsql.safety import ValidatedSQL, run_validated
from groundsql.schema import render_schema
from groundsql.server.config import ServeConfig
from groundsql.server.state import ApiKey, AuditEntry, StateStore
from groundsql.strategies import Answer, Step

log = logging.getLogger("groundsql")


class ServiceError(GroundsqlError):
    """A request the service cannot serve; `status` is the HTTP status that says why."""

    status = 400
    code = "bad_request"


class NotFound(ServiceError):
    status, code = 404, "not_found"


class Forbidden(ServiceError):
    status, code = 403, "forbidden"


class Unauthorized(ServiceError):
    status, code = 401, "unauthorized"


class Busy(ServiceError):
    status, code = 429, "busy"

    def __init__(self, message: str, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message)


@dataclass
class Served:
    """A configured database and its session."""

    name: str
    strategy: str
    session: Session
    examples_seen: int = 0  # the last learned example this process has given the session
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class Asked:
    answer: Answer
    answer_id: str
    conversation_id: str
    database: str


class Service:
    def __init__(self, config: ServeConfig, *, llm: LLM | None = None) -> None:
        """`llm` replaces every database's model (tests use a replay backend)."""
        self.config = config
        self.state = StateStore(config.state)
        self._llms: dict[str, LLM] = {}
        self._given_llm = llm
        # Opened now, so a wrong URL or a role that may write stops the server at start.
        self.databases = {name: self._open(name) for name in config.databases}
        self._slots = threading.BoundedSemaphore(config.max_concurrent)
        self._seconds_per_question = 10.0  # a running estimate, for Retry-After

    def _open(self, name: str) -> Served:
        entry = self.config.databases[name]
        settings = self.config.settings_for(name)
        session = connect(entry.url, settings=settings, llm=self._llm(settings.llm))
        session.db.catalog()  # reads the database now: a mistake shows at start, not on a question
        return Served(name, entry.strategy, session)

    def _llm(self, config: LLMConfig) -> LLM:
        # Databases that name the same model share it: it is loaded once.
        if self._given_llm is not None:
            return self._given_llm
        key = config.model_dump_json()
        if key not in self._llms:
            self._llms[key] = build_llm(config)
        return self._llms[key]

    # -- access ----------------------------------------------------------------------------

    def authenticate(self, authorization: str | None, api_key: str | None) -> ApiKey | None:
        """The caller's key, from `Authorization: Bearer KEY` or `X-API-Key: KEY` (the HTTP API
        and MCP over HTTP read it alike); None when the service runs without auth."""
        if not self.config.auth:
            return None
        secret = (api_key or "").strip() or None
        if secret is None and authorization:
            scheme, _, value = authorization.partition(" ")
            secret = (value.strip() or None) if scheme.lower() == "bearer" else None
        if secret is None:
            raise Unauthorized("an API key is required: send 'Authorization: Bearer KEY'")
        key = self.state.key_for(secret)
        if key is None:
            raise Unauthorized("the API key is not valid")
        return key

    def database(self, key: ApiKey | None, name: str) -> Served:
        served = self.databases.get(name)
        if served is None:
            raise NotFound(f"no database named {name!r} (the list of databases names those there are)")
        if key is not None and not key.may_use(name):
            raise Forbidden(f"the key {key.name!r} may not use the database {name!r}")
        return served

    def visible(self, key: ApiKey | None) -> list[Served]:
        return [s for name, s in self.databases.items() if key is None or key.may_use(name)]

    def take_slot(self) -> None:
        """Claim one of the `max_concurrent` places, or raise Busy: never wait in line."""
        if not self._slots.acquire(blocking=False):
            wait = max(1, round(self._seconds_per_question))
            raise Busy(f"{self.config.max_concurrent} questions are being answered; try again in {wait} s", wait)

    def release_slot(self) -> None:
        self._slots.release()

    # -- operations ------------------------------------------------------------------------

    def ask(self, key: ApiKey | None, name: str, question: str, *, strategy: str | None = None,
            conversation_id: str | None = None, on_step: Callable[[Step], None] | None = None) -> Asked:
        served = self.database(key, name)
        if conversation_id is None:
            history: list[Turn] = []
            conversation_id = self.state.start_conversation(name, _name(key))
        else:
            history = self._history(key, name, conversation_id)
        self._learn_new_examples(served)
        start = time.perf_counter()
        # The work stops at the deadline too, rather than holding a slot after the client's 504.
        with question_deadline(self.config.deadline_s):
            answer = served.session.ask(question, strategy=strategy or served.strategy, history=history,
                                        on_step=on_step)
        self._seconds_per_question = 0.8 * self._seconds_per_question + 0.2 * (time.perf_counter() - start)
        turn = Turn(question, answer.question, answer.sql if answer.ok else None, answer.columns, len(answer.rows),
                    answer.clarification)
        answer_id = self.state.add_turn(conversation_id, turn, answer.error)
        self.state.audit(_audit_entries(answer, _name(key), name, question))
        return Asked(answer, answer_id, conversation_id, name)

    def _history(self, key: ApiKey | None, name: str, conversation_id: str) -> list[Turn]:
        found = self.state.conversation(conversation_id)
        # Another key's conversation is as absent as one that never was.
        if found is None or (key is not None and found["key_name"] != key.name):
            raise NotFound(f"no conversation {conversation_id!r}")
        if found["database"] != name:
            raise ServiceError(f"conversation {conversation_id!r} is about the database {found['database']!r}")
        if len(found["turns"]) >= self.config.max_turns:
            raise ServiceError(f"the conversation has {self.config.max_turns} turns already; start a new one")
        return self.state.history(conversation_id)

    def learned_examples(self, served: Served) -> int:
        """How many confirmed examples the database's session uses (after reading new ones)."""
        self._learn_new_examples(served)
        return len(served.session.context.learned)

    def _learn_new_examples(self, served: Served) -> None:
        """Give the session the examples confirmed since it last looked (by any server)."""
        with served.lock:
            for example_id, question, sql in self.state.examples_since(served.name, served.examples_seen):
                try:
                    served.session.learn(question, sql)  # validated and run again, here
                except (GroundsqlError, ValueError) as err:
                    log.warning("example %d of %s is not used: %s", example_id, served.name, err)
                served.examples_seen = example_id

    def run_sql(self, key: ApiKey | None, name: str, sql: str) -> tuple[ValidatedSQL, QueryResult]:
        served = self.database(key, name)
        start = time.perf_counter()
        try:
            checked, result = run_validated(served.session.db, sql, served.session.settings.safety)
        except (UnsafeSQLError, DatabaseError) as err:
            verdict = "refused" if isinstance(err, UnsafeSQLError) else "failed"
            self.state.audit([AuditEntry(_name(key), name, "sql", None, sql, verdict,
                                         elapsed_ms=_ms(start), detail=str(err))])
            raise
        self.state.audit([AuditEntry(_name(key), name, "sql", None, checked.sql, "ran", len(result.rows), _ms(start))])
        return checked, result

    def feedback(self, key: ApiKey | None, answer_id: str, verdict: str, corrected_sql: str | None,
                 comment: str | None) -> dict[str, Any]:
        """Right: the answer becomes a solved example. Wrong with a corrected SQL: the SQL is
        validated and run first, and the correction becomes the example."""
        turn = self.state.turn(answer_id)
        if turn is None or (key is not None and turn["key_name"] != key.name):
            raise NotFound(f"no answer {answer_id!r}")
        served = self.database(key, turn["database"])
        question = turn["standalone"]
        if verdict == "right" and turn["sql"] is None:
            raise ServiceError("that answer has no SQL to confirm; mark it wrong with a corrected SQL")
        to_learn = turn["sql"] if verdict == "right" else corrected_sql
        sql, result = None, None
        if to_learn is not None:
            # Validated and run before it is stored (refusals and errors raise here); what is
            # kept is the SQL as validated.
            checked, result = self.run_sql(key, served.name, to_learn)
            sql = checked.sql
        feedback_id = self.state.add_feedback(answer_id, verdict, corrected_sql, comment, _name(key),
                                              (served.name, question, sql) if sql else None)
        self._learn_new_examples(served)
        return {"feedback_id": feedback_id, "learned": sql is not None, "question": question, "sql": sql,
                "result": result}

    def result(self, key: ApiKey | None, answer_id: str) -> tuple[ValidatedSQL, QueryResult]:
        """An answer's result, its SQL run again (validated, read-only, audited, under the row
        cap): for a download, which the answer itself does not keep."""
        turn = self.state.turn(answer_id)
        if turn is None or (key is not None and turn["key_name"] != key.name):
            raise NotFound(f"no answer {answer_id!r}")
        if turn["sql"] is None:
            raise ServiceError("that answer has no SQL, so no result to download")
        return self.run_sql(key, turn["database"], turn["sql"])

    def conversation(self, key: ApiKey | None, conversation_id: str) -> dict[str, Any]:
        found = self.state.conversation(conversation_id)
        if found is None or (key is not None and found["key_name"] != key.name):
            raise NotFound(f"no conversation {conversation_id!r}")
        return found

    def schema(self, key: ApiKey | None, name: str, fmt: str) -> str:
        served = self.database(key, name)
        if fmt not in ("m-schema", "ddl"):
            raise ServiceError(f"unknown schema format {fmt!r} (m-schema or ddl)")
        return render_schema(served.session.schema, fmt,
                             with_examples=served.session.settings.generation.with_examples)

    def lookup(self, key: ApiKey | None, name: str, phrase: str) -> dict[str, Any]:
        return self.database(key, name).session.lookup(phrase)

    def close(self) -> None:
        for served in self.databases.values():
            served.session.close()
        self.state.close()


def _name(key: ApiKey | None) -> str | None:
    return key.name if key is not None else None


def _ms(start: float) -> int:
    return int((time.perf_counter() - start) * 1000)


def _audit_entries(answer: Answer, key_name: str | None, database: str, question: str) -> list[AuditEntry]:
    """One entry per statement the answer ran or tried (each validate+execute step, and the
    queries mended there without the model), or the answer itself where its strategy records
    statements otherwise."""
    entries = []
    for step in answer.steps:
        sql = step.detail.get("sql")
        if step.name == "validate+execute" and sql:
            entries.extend(AuditEntry(key_name, database, "ask", question, mended["sql"], "failed", None, None,
                                      mended["error"]) for mended in step.detail.get("repaired", ()))
            error = step.detail.get("error")
            verdict = "failed" if error else "ran"
            if error and error.startswith("refused "):
                verdict = "refused"
            entries.append(AuditEntry(key_name, database, "ask", question, sql, verdict, step.detail.get("rows"),
                                      int(step.elapsed_s * 1000), error))
    if not entries:
        entries.append(AuditEntry(key_name, database, "ask", question, answer.sql, "ran" if answer.ok else "failed",
                                  len(answer.rows) if answer.ok else None, int(answer.elapsed_s * 1000),
                                  answer.error))
    return entries
