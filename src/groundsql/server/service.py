"""The service: what the HTTP API and the MCP server both call, so there is one way of asking.

It holds one `Session` per configured database (its model loaded once and its prompt prefix
kept warm between requests), the state store, and the bounds on work at once (questions, and
the queries people write).
Every operation checks what the caller's key may use, and every statement it runs is audited.

A database's domain pack is edited here too (packs/edit.py): only with an editor's key, each
edit checked against the database before its file is written, recorded in the pack's history
and the audit log, and the session reading the pack again from the next question on. Its
benchmark (evaluation/pack_benchmark.py) runs in the background on the service's own model.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groundsql.deadline import question_deadline
from groundsql.api import Session, connect
from groundsql.config import LLMConfig
from groundsql.conversation import Turn
from groundsql.db import QueryResult
from groundsql.errors import ConfigError, DatabaseError, GroundsqlError, UnsafeSQLError
from groundsql.evaluation import pack_benchmark
from groundsql.llm import LLM, build_llm
from groundsql.packs import edit as pack_edit
from groundsql.safety import ValidatedSQL, run_validated
from groundsql.schema import render_schema
from groundsql.server.config import ServeConfig
from groundsql.server.state import ApiKey, AuditEntry, StateStore
from groundsql.strategies import Answer, Step
from groundsql.strategies.grounded import demo_pack_path, pack_folder

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


class Conflict(ServiceError):
    """An edit of an entry someone changed since: `current` is the entry as it is now."""

    status, code = 409, "conflict"

    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.extra = extra or {}


class InvalidEdit(ServiceError):
    status, code = 422, "invalid_edit"


class Busy(ServiceError):
    status, code = 429, "busy"

    def __init__(self, message: str, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message)


class Slots:
    """Places for work that runs at once: at most `total`, and `per_key` of them for one API key
    (None: no bound per key; without keys there is one caller, bound by the total). One more
    is refused (Busy, with how long to wait from a running estimate of how long one takes),
    never queued: a caller is told at once rather than held behind others' slow work."""

    def __init__(self, what: str, total: int, per_key: int | None = None, seconds: float = 1.0) -> None:
        self.what, self.total, self.per_key = what, total, per_key  # what: "queries are running"
        self._lock = threading.Lock()
        self._running = 0
        self._by_key: dict[str, int] = {}
        self._seconds = seconds

    def take(self, key: ApiKey | None) -> None:
        """Claim a place for the key's work, or raise Busy."""
        name = _name(key)
        with self._lock:
            mine = self._by_key.get(name, 0) if name is not None else 0
            if self._running >= self.total:
                raise self._busy(f"{self.total} {self.what}")
            if self.per_key is not None and name is not None and mine >= self.per_key:
                raise self._busy(f"{self.per_key} {self.what} for the key {name!r}")
            self._running += 1
            if name is not None:
                self._by_key[name] = mine + 1

    def release(self, key: ApiKey | None) -> None:
        name = _name(key)
        with self._lock:
            self._running -= 1
            if name is not None:
                self._by_key[name] -= 1
                if not self._by_key[name]:
                    del self._by_key[name]

    def took(self, seconds: float) -> None:
        """How long one more took: the estimate Retry-After is made from."""
        with self._lock:
            self._seconds = 0.8 * self._seconds + 0.2 * seconds

    @contextlib.contextmanager
    def held(self, key: ApiKey | None) -> Iterator[None]:
        self.take(key)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.release(key)
            self.took(time.perf_counter() - start)

    def _busy(self, why: str) -> Busy:
        wait = max(1, round(self._seconds))
        return Busy(f"{why}; try again in {wait} s", wait)


@dataclass
class Served:
    """A configured database and its session."""

    name: str
    strategy: str
    session: Session
    examples_seen: int = 0  # the last learned example this process has given the session
    lock: threading.Lock = field(default_factory=threading.Lock)
    benchmark: "Benchmarking | None" = None  # the run under way


@dataclass
class Benchmarking:
    """A run of a pack's benchmark under way in the background."""

    run: str
    total: int
    started_at: str
    key_name: str | None
    done: int = 0
    error: str | None = None
    finished: bool = False


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
        # Questions (and benchmark runs) hold the model; queries a person writes (/v1/sql, a
        # correction, a CSV download) hold the database's workers: each is bounded on its own.
        self.questions = Slots("questions are being answered", config.max_concurrent, seconds=10.0)
        self.queries = Slots("queries are running", config.max_concurrent_sql, config.max_concurrent_sql_per_key)

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
        self.questions.took(time.perf_counter() - start)
        turn = Turn(question, answer.question, answer.sql if answer.ok else None, answer.columns, len(answer.rows),
                    answer.clarification)
        answer_id = self.state.add_turn(conversation_id, turn, answer.error, answer.truncated)
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
            for found in self.state.examples_since(served.name, served.examples_seen):
                # An editor's confirmation (or the local user's, without keys) verifies it.
                key_name = found["key_name"]
                by = "local" if key_name is None else key_name if found["role"] == "editor" else ""
                try:
                    served.session.learn(found["question"], found["sql"], verified_by=by,  # validated and run again
                                         verified_at=found["created_at"].date().isoformat() if by else "")
                except (GroundsqlError, ValueError) as err:
                    log.warning("example %d of %s is not used: %s", found["id"], served.name, err)
                served.examples_seen = found["id"]

    def run_sql(self, key: ApiKey | None, name: str, sql: str) -> tuple[ValidatedSQL, QueryResult]:
        """A person's SQL (/v1/sql, MCP's run_sql, a correction, a CSV download), validated, run
        read-only under the bound on queries at once, and audited."""
        served = self.database(key, name)
        start = time.perf_counter()
        try:
            with self.queries.held(key):  # Busy beyond the bound: before anything is audited
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
        checked, result = self.run_sql(key, turn["database"], turn["sql"])
        # The SQL is kept as it ran, with the LIMIT the validator added: run again, that LIMIT
        # is the statement's own, and a result it cuts no longer says so (run_validated tells
        # only of a LIMIT it adds). The answer knew: as many rows as the cut answer had are cut.
        if turn["truncated"] and not result.truncated and len(result.rows) >= turn["row_count"]:
            result = replace(result, truncated=True)
        return checked, result

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

    # -- the pack --------------------------------------------------------------------------

    def pack_folder(self, served: Served) -> tuple[Path | None, str | None]:
        """The folder of the database's pack, and why it may not be edited here (None: it may)."""
        folder = pack_folder(served.session.context)
        if folder is None:
            return None, ("this database has no domain pack: draft one with `groundsql init --db URL --out DIR` "
                          "and serve it as the database's pack")
        if folder.resolve() == demo_pack_path().resolve():
            # Named within the package: a caller is never shown where the server keeps its files.
            return folder, ("the demo's own pack is part of groundsql, so it is read-only here; copy the folder "
                            "groundsql/demo/pack of the installed package and serve the copy as the database's "
                            "pack (databases: demo: pack: DIR) to edit it")
        if not os.access(folder, os.W_OK):
            return folder, f"the server may not write to the pack's folder {folder}"
        return folder, None

    def pack(self, key: ApiKey | None, name: str) -> dict[str, Any]:
        served = self.database(key, name)
        folder, read_only = self.pack_folder(served)
        return {"database": name, "folder": folder, "read_only": read_only, "may_edit": _may_edit(key, read_only),
                "entries": pack_edit.entries(folder) if folder else [],
                "collections": pack_edit.collections(folder) if folder and read_only is None else []}

    def _editable(self, key: ApiKey | None, name: str, what: str) -> tuple[Served, Path]:
        served = self.database(key, name)
        if key is not None and not key.may_edit:
            self.state.audit([AuditEntry(key.name, name, "pack", None, None, "refused", detail=f"{what}: not an editor")])
            raise Forbidden(f"the key {key.name!r} is a reader's: only an editor's key may change a pack "
                            "(`groundsql keys add NAME --role editor`)")
        folder, read_only = self.pack_folder(served)
        if read_only is not None or folder is None:
            raise ServiceError(read_only or "no pack")
        return served, folder

    def edit_pack(self, key: ApiKey | None, name: str, edit: pack_edit.Edit, note: str | None = None) -> pack_edit.Saved:
        """Save one edit of the database's pack; refused (and nothing written) when the entry
        changed since `edit.base`, or when the pack with it fails the checks of a loaded pack."""
        served, folder = self._editable(key, name, edit.entry or f"add to {edit.add_to}")
        session = served.session
        saved = self._checked_edit(key, name, edit, lambda check: pack_edit.save(
            folder, edit, check, editor=_name(key) or "local"))
        self.state.add_pack_change(name, _name(key), saved.entry, saved.action, saved.file, saved.before,
                                   saved.after, saved.version, note)
        self.state.audit([AuditEntry(_name(key), name, "pack", None, None, "saved",
                                     detail=f"{saved.action} {saved.entry}" + (f": {note}" if note else ""))])
        with served.lock:
            session.reload_pack()
        return saved

    def _checked_edit(self, key: ApiKey | None, name: str, edit: pack_edit.Edit,
                      apply: Callable[[pack_edit.Check], pack_edit.Saved]) -> pack_edit.Saved:
        """`apply` (a save, or a trial) with the database's checks; a refusal audited and said."""
        session = self.databases[name].session
        target = edit.entry or edit.add_to
        try:
            return apply(pack_edit.checker(session.db, session.schema, session.settings.safety))
        except pack_edit.EditConflict as err:
            self.state.audit([AuditEntry(_name(key), name, "pack", None, None, "refused", detail=f"{target}: {err}")])
            raise self._conflict(name, edit, err) from None
        except ConfigError as err:
            self.state.audit([AuditEntry(_name(key), name, "pack", None, None, "refused", detail=f"{target}: {err}")])
            raise InvalidEdit(f"not saved: {err}") from None

    def _conflict(self, name: str, edit: pack_edit.Edit, err: pack_edit.EditConflict) -> Conflict:
        """What changed since the version the edit was made from, and who changed it."""
        current = err.current
        if current is None:
            return Conflict(f"not saved: {err}", {"current": None})
        history = self.state.pack_changes(name, current.id)
        since = []
        for change in history:  # the latest first, back to the version the edit was made from
            if change["version"] == edit.base:
                break
            since.append(change)
        # The entry as the edit's author saw it: what the oldest change since started from.
        base_value = since[-1]["before"] if since and pack_edit.version_of(since[-1]["before"]) == edit.base else None
        changed = pack_edit.changed_fields(base_value, current.value) if base_value is not None else []
        who = ", ".join(dict.fromkeys(c["key_name"] or "local" for c in since)) if since else None
        when = since[0]["at"].isoformat(timespec="seconds") if since else None
        message = (f"not saved: {current.id} was changed since you opened it"
                   + (f" by {who} at {when}" if who else " (in its file)")
                   + (f": {', '.join(changed)}" if changed else "")
                   + "; your edit is kept in the form: compare it with the entry as it is now, then save again")
        return Conflict(message, {"current": current.to_dict(), "changed": changed, "by": who, "at": when})

    def pack_history(self, key: ApiKey | None, name: str, entry: str | None = None) -> list[dict[str, Any]]:
        self.database(key, name)
        return self.state.pack_changes(name, entry)

    # -- the pack's benchmark --------------------------------------------------------------

    def start_benchmark(self, key: ApiKey | None, name: str, edit: pack_edit.Edit | None = None) -> Benchmarking:
        """Run the pack's benchmark in the background on this database's model and strategy,
        with the examples people confirmed; it holds one of the question slots until done.
        With `edit`: a trial of the pack with that edit (checked as a save is), which is not
        saved: so an edit that breaks an answer shows before it is shared."""
        served, folder = self._editable(key, name, "benchmark")
        with served.lock:
            if served.benchmark is not None and not served.benchmark.finished:
                raise Conflict(f"a run of the benchmark is under way (started {served.benchmark.started_at})")
            session = served.session
            scratch = Path(tempfile.mkdtemp(prefix="groundsql-trial-")) if edit is not None else None
            try:
                tried = None if edit is None or scratch is None else self._checked_edit(
                    key, name, edit, lambda check: pack_edit.trial(folder, edit, check, scratch,
                                                                    editor=_name(key) or "local"))
                run = pack_benchmark.benchmark_run(
                    scratch or folder, session.db.url.render_as_string(hide_password=False), session.settings,
                    served.strategy, llm=session.llm, learned=list(session.context.learned),
                    out_dir=pack_benchmark.new_run_folder(folder, trial=edit is not None))
            except ConfigError as err:
                _remove(scratch)
                raise ServiceError(str(err)) from None
            except ServiceError:
                _remove(scratch)
                raise
            if tried is not None:
                pack_benchmark.write_trial(run.out_dir, {"entry": tried.entry, "action": tried.action,
                                                         "by": _name(key) or "local", "after": tried.after})
            try:
                self.questions.take(key)
            except Busy:
                _remove(scratch)
                raise
            job = Benchmarking(run.out_dir.name, len(run.items), dt.datetime.now(dt.timezone.utc).isoformat(
                timespec="seconds"), _name(key))
            served.benchmark = job

        def on_record(_record: dict[str, Any]) -> None:
            job.done += 1

        def work() -> None:
            try:
                run.on_record = on_record
                run.run()
            except Exception as err:  # the page shows it; the server goes on
                log.exception("the benchmark of %s failed", name)
                job.error = str(err) or type(err).__name__
            finally:
                run.close()
                _remove(scratch)
                self.questions.release(key)
                job.finished = True
                self.state.audit([AuditEntry(job.key_name, name, "pack", None, None,
                                             "failed" if job.error else "ran", job.done, detail=f"benchmark {job.run}")])

        threading.Thread(target=work, name=f"benchmark-{name}", daemon=True).start()
        return job

    def benchmarks(self, key: ApiKey | None, name: str) -> dict[str, Any]:
        """The runs of the database's pack benchmark, the latest first, and the one under way."""
        served = self.database(key, name)
        folder, read_only = self.pack_folder(served)
        runs_folder = folder / pack_benchmark.RUNS_FOLDER if folder else None
        runs = sorted((p for p in runs_folder.glob("*") if p.is_dir()), reverse=True) \
            if runs_folder and runs_folder.is_dir() else []
        listed = []
        for run in runs:
            summary = pack_benchmark.run_summary(run, pack_benchmark.last_run_before(run.parent, run.name))
            listed.append({k: summary[k] for k in ("run", "earlier", "right", "counted", "gold_failed", "regressions",
                                                   "trial")})
        return {"database": name, "running": vars(served.benchmark) if served.benchmark else None, "runs": listed,
                "may_run": _may_edit(key, read_only)}

    def benchmark(self, key: ApiKey | None, name: str, run: str) -> dict[str, Any]:
        folder, _ = self.pack_folder(self.database(key, name))
        found = _run_folder(folder, name, run)
        return pack_benchmark.run_summary(found, pack_benchmark.last_run_before(found.parent, run))

    def override(self, key: ApiKey | None, name: str, run: str, item_id: str, verdict: str,
                 note: str) -> dict[str, Any]:
        """A person's score of one answer of a run, with a note saying why."""
        _, folder = self._editable(key, name, f"override in benchmark {run}")
        found = _run_folder(folder, name, run)
        try:
            entry = pack_benchmark.override(found, item_id, verdict, note, _name(key) or "local")
        except ConfigError as err:
            raise ServiceError(str(err)) from None
        self.state.audit([AuditEntry(_name(key), name, "pack", None, None, "saved",
                                     detail=f"benchmark {run}: {item_id} scored {verdict}: {note}")])
        return entry

    def close(self) -> None:
        for served in self.databases.values():
            served.session.close()
        self.state.close()


def _may_edit(key: ApiKey | None, read_only: str | None) -> bool:
    """Whether the caller may change the pack (and run its benchmark): an editor's key (or no
    keys at all), on a pack the server may write."""
    return read_only is None and (key is None or key.may_edit)


def _run_folder(folder: Path | None, name: str, run: str) -> Path:
    """The folder of a run of the pack's benchmark, by its name (never a path of the caller's)."""
    if folder is None or not pack_benchmark.RUN_NAME.match(run) or not (folder / pack_benchmark.RUNS_FOLDER / run).is_dir():
        raise NotFound(f"no benchmark run {run!r} of {name!r}")
    return folder / pack_benchmark.RUNS_FOLDER / run


def _remove(folder: Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


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
