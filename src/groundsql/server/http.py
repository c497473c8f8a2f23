"""The HTTP API (FastAPI): `/v1/ask`, `/v1/sql`, `/v1/databases` (with each one's pack, its
edits and history, and its benchmark runs), `/v1/feedback`, `/v1/answers/{id}/result.csv`,
`/v1/conversations/{id}`, `/healthz`, `/metrics`; the OpenAPI schema at `/docs`; the MCP server
(mcp.py) over streamable HTTP at `/mcp`, under the same keys; the web page (static/) at `/`, a
client of these endpoints like any other.

Every error is JSON `{"error": {"code", "message"}}` with one sentence a person can act on,
never a traceback. A question runs in a worker thread under the service's concurrency limit
(more at once: 429 with Retry-After) and a deadline (504); with `Accept: text/event-stream`
the same request streams one event per finished stage and the answer last.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Annotated, Any, AsyncIterator, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from groundsql.errors import ConfigError, DatabaseError, GroundsqlError, QuestionTimeoutError, UnsafeSQLError
from groundsql.packs.model import DomainPack, ReferenceTable
from groundsql.schema.model import Table
from groundsql.server.mcp import mcp_http_app
from groundsql.server.metrics import Metrics
from groundsql.packs.edit import Edit
from groundsql.server.service import Asked, Busy, Served, Service, ServiceError, Unauthorized
from groundsql.server.state import ApiKey
from groundsql.server.views import AnswerView, csv_text, json_rows, public_errors, public_message
from groundsql.strategies import Step
from groundsql.strategies.answer import json_value
from groundsql.strategies.grounded import pack_for

log = logging.getLogger("groundsql")


# -- request and response models ----------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskRequest(_Strict):
    question: str = Field(min_length=1, max_length=2000)
    database: str = Field(min_length=1, max_length=64)
    strategy: str | None = Field(None, description="auto, zero-shot, few-shot, self-consistency, grounded, compiled or search; "
                                                   "default: the database's")
    conversation_id: str | None = Field(None, max_length=64, description="continue this conversation")


class StageTiming(BaseModel):
    stage: str
    seconds: float


class Usage(BaseModel):
    model_calls: int
    prompt_tokens: int
    cached_prompt_tokens: int
    completion_tokens: int


class AskResponse(AnswerView):
    timings: list[StageTiming]
    usage: Usage


class SqlRequest(_Strict):
    database: str = Field(min_length=1, max_length=64)
    sql: str = Field(min_length=1, max_length=100_000)


class SqlResponse(BaseModel):
    database: str
    sql: str  # as validated and run (a LIMIT added where there was none)
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    elapsed_s: float


class DatabaseInfo(BaseModel):
    name: str
    dialect: str
    strategy: str
    tables: int
    learned_examples: int  # answers confirmed or corrected through /v1/feedback, by any server
    # The pack's verified queries marked `onboarding`: questions a newcomer may start with.
    onboarding: list[str] = Field(default_factory=list)


class SchemaResponse(BaseModel):
    database: str
    format: str
    schema_text: str = Field(alias="schema")

    model_config = ConfigDict(populate_by_name=True)


class ColumnInfo(BaseModel):
    name: str
    type: str
    nullable: bool
    primary_key: bool
    description: str
    examples: list[Any] = Field(description="A few distinct values (when the schema shows examples).")


class ForeignKeyInfo(BaseModel):
    columns: list[str]
    ref_table: str
    ref_columns: list[str]


class TableInfo(BaseModel):
    name: str
    description: str
    row_count: int | None
    columns: list[ColumnInfo]
    foreign_keys: list[ForeignKeyInfo]


class ReferenceInfo(BaseModel):
    table: str
    key: str
    label: str
    description: str
    columns: list[str]
    rows: list[list[Any]] | None = Field(description="None when the validator does not let them be read.")
    truncated: bool


class TablesResponse(BaseModel):
    database: str
    dialect: str
    pack: str | None = Field(description="The domain pack's name; None when the database has none.")
    description: str
    tables: list[TableInfo]
    references: list[ReferenceInfo] = Field(description="The pack's reference tables, with their rows.")


class FeedbackRequest(_Strict):
    answer_id: str = Field(min_length=1, max_length=64)
    verdict: Literal["right", "wrong"]
    corrected_sql: str | None = Field(None, max_length=100_000)
    comment: str | None = Field(None, max_length=2000)


class FeedbackResponse(BaseModel):
    feedback_id: int
    learned: bool
    question: str
    sql: str | None
    columns: list[str] | None = None
    rows: list[list[Any]] | None = None


class TurnView(BaseModel):
    answer_id: str
    question: str
    standalone_question: str
    sql: str | None
    columns: list[str]
    row_count: int
    error: str | None
    created_at: str


class ConversationView(BaseModel):
    id: str
    database: str
    created_at: str
    turns: list[TurnView]


class PackEntry(BaseModel):
    id: str = Field(description="file:place, e.g. semantic.yaml:tables.companies.measures.revenue")
    kind: str = Field(description="table, rules, dimension, time_dimension, fact, measure, filter, "
                                  "verified_query or example")
    file: str
    title: str
    value: Any = Field(description="The entry as its file holds it, as JSON.")
    version: str = Field(description="Send it back with an edit: an entry changed since is not overwritten.")


class PackView(BaseModel):
    database: str
    read_only: str | None = Field(description="Why the pack cannot be edited here; None when it can.")
    may_edit: bool = Field(description="Whether this key may edit it (an editor's key, the pack writable).")
    entries: list[PackEntry]
    collections: list[str] = Field(description="Where entries may be added (add_to).")


class PackEditRequest(_Strict):
    entry: str | None = Field(None, max_length=500, description="The entry to change or remove.")
    base: str | None = Field(None, max_length=32, description="The entry's version the edit was made from.")
    add_to: str | None = Field(None, max_length=500, description="A collection to add `value` to.")
    value: Any = Field(None, description="The entry's new value (JSON, as in the pack view).")
    remove: bool = Field(False, description="Remove the entry instead.")
    note: str | None = Field(None, max_length=2000, description="Why, for the pack's history.")


class PackEditResponse(BaseModel):
    entry: str
    action: str
    file: str
    version: str | None
    value: Any


class PackChange(BaseModel):
    at: str
    key_name: str | None
    entry: str
    action: str
    file: str
    before: Any
    after: Any
    note: str | None


class BenchmarkRequest(_Strict):
    edit: PackEditRequest | None = Field(None, description="Run the pack with this edit, not saved: a trial.")


class BenchmarkRunInfo(BaseModel):
    run: str = Field(description="Its start time; a trial of an unsaved edit ends in -trial.")
    earlier: str | None
    right: int
    counted: int = Field(description="Answers scored: a question whose gold fails to run is not counted.")
    gold_failed: int
    regressions: int = Field(description="Answers right in the run before and not in this one.")
    trial: dict[str, Any] | None = Field(None, description="The unsaved edit a trial ran with (entry, action, by, after).")


class BenchmarkRunning(BaseModel):
    run: str
    total: int
    done: int
    started_at: str
    key_name: str | None
    error: str | None
    finished: bool


class BenchmarksView(BaseModel):
    database: str
    running: BenchmarkRunning | None = Field(description="The run under way, or the last one this server ran.")
    runs: list[BenchmarkRunInfo]
    may_run: bool = Field(description="Whether this key may run it (an editor's key, the pack writable).")


class BenchmarkAnswer(BaseModel):
    item_id: str
    question: str
    category: str
    reason: str = Field(description="right, error, asked_back, empty_result, missing_columns, extra_columns, "
                                    "missing_rows, extra_rows, wrong_order, wrong_values; judged_wrong when a "
                                    "person scored a matching answer wrong; empty when the gold failed")
    model_reason: str = Field(description="The comparison's reason, before any override.")
    before: str = Field(description="The reason in the run before; empty when the question is new.")
    regression: bool
    gold_sql: str | None
    gold_error: str | None = Field(description="Why the gold failed to run: listed, never counted.")
    sql: str | None
    error: str | None
    override: dict[str, Any] | None
    verified_by: str | None = Field(None, description="Who verified the verified query that answered it (the pack's, "
                                                      "or an answer an editor confirmed).")


class BenchmarkRunView(BenchmarkRunInfo):
    answers: list[BenchmarkAnswer]


class OverrideRequest(_Strict):
    item_id: str = Field(min_length=1, max_length=64)
    verdict: Literal["right", "wrong"]
    note: str = Field(min_length=1, max_length=2000, description="Why the score is overridden.")


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    error: ErrorBody


# -- the caller ------------------------------------------------------------------------------------


def caller(request: Request, authorization: Annotated[str | None, Header()] = None,
           x_api_key: Annotated[str | None, Header()] = None) -> ApiKey | None:
    """The caller's key; None when the server runs without auth."""
    service: Service = request.app.state.service
    return service.authenticate(authorization, x_api_key)


Caller = Annotated[ApiKey | None, Depends(caller)]


# -- the app --------------------------------------------------------------------------------------


def create_app(service: Service) -> FastAPI:
    mcp = mcp_http_app(service)
    app = FastAPI(
        title="groundsql",
        version="1",
        summary="Ask a database a question in plain language; get safe SQL, its result and its grounds.",
        responses={400: {"model": ErrorResponse}, 401: {"model": ErrorResponse}, 403: {"model": ErrorResponse},
                   404: {"model": ErrorResponse}, 429: {"model": ErrorResponse}},
        # A route does not run its app's lifespan: the MCP session manager runs in this one's.
        lifespan=lambda _app: mcp.router.lifespan_context(mcp),
    )
    app.add_route("/mcp", mcp, include_in_schema=False)
    app.state.service = service
    app.state.metrics = metrics = Metrics()
    _install_error_handlers(app, metrics)
    app.add_middleware(_BodyLimit, limit=service.config.max_body_bytes)

    @app.middleware("http")
    async def count(request: Request, call_next: Any) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        metrics.requests.labels(route, str(response.status_code)).inc()
        metrics.latency.labels(route).observe(time.perf_counter() - start)
        return response

    @app.post("/v1/ask", response_model=AskResponse,
              responses={200: {"content": {"text/event-stream": {}},
                               "description": "JSON, or with Accept: text/event-stream one `step` event "
                                              "per finished stage and an `answer` event last"},
                         504: {"model": ErrorResponse}})
    async def ask(body: AskRequest, key: Caller, accept: Annotated[str | None, Header()] = None) -> Any:
        """Answer a question about a database (or continue a conversation)."""
        service.database(key, body.database)  # 404/403 before a slot is taken
        service.questions.take(key)
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Step] = asyncio.Queue()

        def run() -> Asked:
            try:
                return service.ask(key, body.database, body.question, strategy=body.strategy,
                                   conversation_id=body.conversation_id,
                                   on_step=lambda step: loop.call_soon_threadsafe(events.put_nowait, step))
            finally:
                service.questions.release(key)  # when the work ends, even after the client got a 504

        work = loop.run_in_executor(None, run)
        if accept and "text/event-stream" in accept:
            return StreamingResponse(_stream(work, events, service.config.deadline_s, metrics),
                                     media_type="text/event-stream")
        try:
            asked = await asyncio.wait_for(asyncio.shield(work), service.config.deadline_s)
        except TimeoutError:
            raise _DeadlinePassed(service.config.deadline_s) from None
        metrics.observe_answer(asked.answer)
        return _ask_response(asked)

    @app.post("/v1/sql", response_model=SqlResponse)
    def run_sql(body: SqlRequest, key: Caller) -> SqlResponse:
        """Run your own SQL through the same validator and read-only executor."""
        start = time.perf_counter()
        checked, result = service.run_sql(key, body.database, body.sql)
        return SqlResponse(database=body.database, sql=checked.sql, columns=list(result.columns),
                           rows=json_rows(result.rows), truncated=result.truncated,
                           elapsed_s=round(time.perf_counter() - start, 4))

    @app.get("/v1/databases", response_model=list[DatabaseInfo])
    def databases(key: Caller) -> list[DatabaseInfo]:
        """The databases this key may use."""
        return [DatabaseInfo(name=s.name, dialect=s.session.db.dialect, strategy=s.strategy,
                             tables=len(s.session.db.catalog().tables),
                             learned_examples=service.learned_examples(s), onboarding=_onboarding(s))
                for s in service.visible(key)]

    @app.get("/v1/databases/{name}/schema", response_model=SchemaResponse)
    def schema(name: str, key: Caller,
               format: Annotated[Literal["m-schema", "ddl"], Query()] = "m-schema") -> SchemaResponse:
        """The schema as the model sees it (M-Schema or DDL)."""
        return SchemaResponse(database=name, format=format, schema=service.schema(key, name, format))

    @app.get("/v1/databases/{name}/tables", response_model=TablesResponse)
    def tables(name: str, key: Caller) -> TablesResponse:
        """The schema as data: tables, columns, keys and row counts, with the domain pack's
        descriptions and its reference tables' rows (what the web page's schema browser shows)."""
        return _tables_response(service.database(key, name))

    @app.post("/v1/feedback", response_model=FeedbackResponse)
    def give_feedback(body: FeedbackRequest, key: Caller) -> FeedbackResponse:
        """Mark an answer right (it becomes a solved example) or wrong, with an optional
        corrected SQL that is validated and run before it is kept."""
        done = service.feedback(key, body.answer_id, body.verdict, body.corrected_sql, body.comment)
        result = done.pop("result")
        return FeedbackResponse(**done, columns=list(result.columns) if result else None,
                                rows=json_rows(result.rows) if result else None)

    @app.get("/v1/answers/{answer_id}/result.csv", response_class=Response,
             responses={200: {"content": {"text/csv": {}}}})
    def result_csv(answer_id: str, key: Caller) -> Response:
        """An answer's result as CSV (its SQL run again, read-only). A result cut at the row cap
        says so: in its file name (`...-first-1000-rows.csv`) and `X-Groundsql-Truncated: true`."""
        _, result = service.result(key, answer_id)
        name = f"answer-{answer_id[:8]}" + (f"-first-{len(result.rows)}-rows" if result.truncated else "")
        return Response(csv_text(result.columns, result.rows), media_type="text/csv; charset=utf-8", headers={
            "Content-Disposition": f'attachment; filename="{name}.csv"',
            "X-Groundsql-Truncated": "true" if result.truncated else "false"})

    @app.get("/v1/conversations/{conversation_id}", response_model=ConversationView)
    def conversation(conversation_id: str, key: Caller) -> ConversationView:
        found = service.conversation(key, conversation_id)
        return ConversationView(
            id=found["id"], database=found["database"], created_at=found["created_at"].isoformat(),
            turns=[TurnView(answer_id=t["id"], question=t["question"], standalone_question=t["standalone"],
                            sql=t["sql"], columns=json.loads(t["columns"]), row_count=t["row_count"],
                            error=public_message(t["error"]) if t["error"] else None,
                            created_at=t["created_at"].isoformat()) for t in found["turns"]])

    _add_page(app)

    @app.get("/v1/databases/{name}/pack", response_model=PackView)
    def pack(name: str, key: Caller) -> PackView:
        """The database's pack as entries a person may read and (with an editor's key) edit."""
        found = service.pack(key, name)
        read_only = public_message(found["read_only"]) if found["read_only"] else None
        return PackView(database=name, read_only=read_only, may_edit=found["may_edit"],
                        entries=[PackEntry(**e.to_dict()) for e in found["entries"]],
                        collections=found["collections"])

    @app.post("/v1/databases/{name}/pack/edits", response_model=PackEditResponse,
              responses={403: {"model": ErrorResponse}, 409: {"model": ErrorResponse},
                         422: {"model": ErrorResponse}})
    def edit_pack(name: str, body: PackEditRequest, key: Caller) -> PackEditResponse:
        """Change, add or remove one entry; checked against the database before its file is
        written. 409 when the entry changed since `base` (the entry as it is now in the error),
        422 when the pack with the edit would not load (file, line and field in the message)."""
        saved = service.edit_pack(key, name, _edit(body), body.note)
        return PackEditResponse(entry=saved.entry, action=saved.action, file=saved.file, version=saved.version,
                                value=saved.after)

    @app.get("/v1/databases/{name}/pack/history", response_model=list[PackChange])
    def pack_history(name: str, key: Caller, entry: Annotated[str | None, Query(max_length=500)] = None
                     ) -> list[PackChange]:
        """Who changed what in the pack, the latest first."""
        return [PackChange(**{**c, "at": c["at"].isoformat(timespec="seconds")})
                for c in service.pack_history(key, name, entry)]

    @app.post("/v1/databases/{name}/benchmarks", response_model=BenchmarkRunning, status_code=202)
    def start_benchmark(name: str, key: Caller, body: BenchmarkRequest | None = None) -> BenchmarkRunning:
        """Run the pack's benchmark in the background (an editor's key); poll the list. With an
        `edit`: a trial of the pack with it, checked as a save is, and not saved."""
        edit = _edit(body.edit) if body is not None and body.edit is not None else None
        return BenchmarkRunning(**vars(service.start_benchmark(key, name, edit)))

    @app.get("/v1/databases/{name}/benchmarks", response_model=BenchmarksView)
    def benchmarks(name: str, key: Caller) -> BenchmarksView:
        return BenchmarksView(**public_errors(service.benchmarks(key, name)))

    @app.get("/v1/databases/{name}/benchmarks/{run}", response_model=BenchmarkRunView)
    def benchmark(name: str, run: str, key: Caller) -> BenchmarkRunView:
        """One run: each answer with its reason, the reason in the run before, and regressions."""
        return BenchmarkRunView(**public_errors(service.benchmark(key, name, run)))

    @app.post("/v1/databases/{name}/benchmarks/{run}/overrides")
    def override(name: str, run: str, body: OverrideRequest, key: Caller) -> dict[str, Any]:
        """Score one answer by hand, with a note (an editor's key)."""
        return service.override(key, name, run, body.item_id, body.verdict, body.note)

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {"status": "ok", "databases": len(service.databases)}

    @app.get("/metrics", response_class=PlainTextResponse)
    def prometheus() -> Response:
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return app


# -- answers as JSON and as events ------------------------------------------------------------------


def _edit(body: PackEditRequest) -> Edit:
    if body.remove == (body.value is not None):
        raise ServiceError("give the entry's new value, or remove: true, not both")
    return Edit(value=body.value, entry=body.entry, base=body.base, add_to=body.add_to)


def _ask_response(asked: Asked) -> AskResponse:
    answer = asked.answer
    return AskResponse(
        **AnswerView.fields_of(asked),
        timings=[StageTiming(stage=s.name, seconds=round(s.elapsed_s, 4)) for s in answer.steps],
        usage=Usage(model_calls=len(answer.calls), prompt_tokens=answer.prompt_tokens,
                    cached_prompt_tokens=sum(c.cached_prompt_tokens for c in answer.calls),
                    completion_tokens=answer.completion_tokens),
    )


def _event(name: str, data: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode("utf-8")


def _step_event(step: Step) -> bytes:
    # Its details too (the SQL tried, its rows or error): the page shows each attempt from them.
    return _event("step", {"stage": step.name, "seconds": round(step.elapsed_s, 4),
                           **public_errors({k: json_value(v) for k, v in step.detail.items()})})


async def _stream(work: asyncio.Future[Asked], events: asyncio.Queue[Step], deadline_s: float,
                  metrics: Metrics) -> AsyncIterator[bytes]:
    end = time.monotonic() + deadline_s
    while True:
        getter = asyncio.ensure_future(events.get())
        done, _ = await asyncio.wait({getter, work}, timeout=max(0.0, end - time.monotonic()),
                                     return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            yield _step_event(getter.result())
            continue
        getter.cancel()
        if work not in done:
            yield _event("error", {"code": "deadline", "message": _DeadlinePassed.sentence(deadline_s)})
            return
        while not events.empty():  # steps that finished just before the answer
            yield _step_event(events.get_nowait())
        try:
            asked = work.result()
        except GroundsqlError as err:
            status, code = _status_of(err)
            yield _event("error", {"code": code, "message": _told(err, "/v1/ask")})
            return
        except Exception:  # noqa: BLE001 - a bug must not leak a traceback into the stream
            log.exception("internal error while answering")
            metrics.errors.labels("/v1/ask").inc()
            yield _event("error", {"code": "internal", "message": "an internal error stopped the answer"})
            return
        metrics.observe_answer(asked.answer)
        yield _event("answer", _ask_response(asked).model_dump(mode="json"))
        return


# -- the schema as data ----------------------------------------------------------------------------

_REFERENCE_ROWS = 500  # a reference table is a list of concepts; a longer one is cut, and says so


def _tables_response(served: Served) -> TablesResponse:
    session = served.session
    pack = _pack_of(served)
    with_examples = session.settings.generation.with_examples
    return TablesResponse(
        database=served.name, dialect=session.db.dialect, pack=pack.name if pack else None,
        description=_said(pack.description) if pack else "",
        tables=[_table_info(t, pack, with_examples) for t in session.schema.tables],
        references=[_reference_info(served, ref) for ref in pack.references] if pack else [])


def _pack_of(served: Served) -> DomainPack | None:
    # The grounded strategy's own rule for which pack a database has (configured, or the demo's).
    try:
        return pack_for(served.session.context)
    except ConfigError:  # no pack: a database served with another strategy
        return None


def _onboarding(served: Served) -> list[str]:
    resources = served.session.context.resources
    if "onboarding" not in resources:  # read once: a pack is loaded from its files
        pack = _pack_of(served)
        resources["onboarding"] = [e.question for e in pack.bank if e.onboarding and not e.drafted] if pack else []
    return list(resources["onboarding"])


def _said(text: str) -> str:
    """A description, or nothing for a drafted one (`groundsql init` writes TODO placeholders)."""
    return "" if text.upper().startswith("TODO") else text


def _table_info(table: Table, pack: DomainPack | None, with_examples: bool) -> TableInfo:
    doc = pack.table_doc(table.name) if pack else None
    notes = {k.lower(): v for k, v in doc.columns.items()} if doc else {}
    return TableInfo(
        name=table.name, description=_said(doc.description if doc and doc.description else table.description),
        row_count=table.row_count,
        columns=[ColumnInfo(name=c.name, type=c.type, nullable=c.nullable, primary_key=c.primary_key,
                            description=_said(notes.get(c.name.lower(), c.description)),
                            examples=[json_value(v) for v in c.examples] if with_examples else [])
                 for c in table.columns],
        foreign_keys=[ForeignKeyInfo(columns=list(fk.columns), ref_table=fk.ref_table, ref_columns=list(fk.ref_columns))
                      for fk in table.foreign_keys])


def _reference_info(served: Served, ref: ReferenceTable) -> ReferenceInfo:
    db = served.session.db
    columns = [ref.key, ref.label, *ref.extra]
    sql = (f"SELECT {', '.join(db.quote(c) for c in columns)} FROM {db.quote(ref.table)} "
           f"ORDER BY {db.quote(ref.key)} LIMIT {_REFERENCE_ROWS + 1}")
    try:  # through the validator, so a table or column allow-list keeps its rows back here too
        rows = json_rows(served.session.run_sql(sql).rows)
    except (UnsafeSQLError, DatabaseError):
        rows = None
    return ReferenceInfo(table=ref.table, key=ref.key, label=ref.label, description=_said(ref.description),
                         columns=columns, rows=rows[:_REFERENCE_ROWS] if rows is not None else None,
                         truncated=rows is not None and len(rows) > _REFERENCE_ROWS)


# -- the web page -------------------------------------------------------------------------------------

_STATIC = Path(__file__).parent / "static"
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
# Everything the page loads is its own (no CDN, no inline script or style; a blob: image is a
# chart the page drew, made into a PNG); it may call only this server, and no other site may
# frame it. Trusted Types: in browsers that have them, a string put
# into innerHTML or another markup sink throws, so hostile values can only ever be text.
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
                               "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
                               "require-trusted-types-for 'script'; trusted-types 'none'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"}


def _add_page(app: FastAPI) -> None:
    """The page at `/` and its assets at `/static/NAME`, outside auth: the page asks for the
    key, and every API call it makes carries it. Assets are served by name from a list made
    at start, so no part of a request's path reaches the file system."""
    assets = {p.name: p for p in _STATIC.iterdir() if p.suffix in _TYPES and p.name != "index.html"}

    # HEAD too: link checkers and `curl -I` ask for the headers alone.
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(_STATIC / "index.html", media_type=_TYPES[".html"], headers=_PAGE_HEADERS)

    @app.api_route("/static/{name}", methods=["GET", "HEAD"], include_in_schema=False)
    def asset(name: str) -> FileResponse:
        path = assets.get(name)
        if path is None:
            raise StarletteHTTPException(404)
        return FileResponse(path, media_type=_TYPES[path.suffix], headers=_PAGE_HEADERS)


# -- errors -------------------------------------------------------------------------------------------


class _DeadlinePassed(ServiceError):
    status, code = 504, "deadline"

    def __init__(self, deadline_s: float) -> None:
        super().__init__(self.sentence(deadline_s))

    @staticmethod
    def sentence(deadline_s: float) -> str:
        return f"the answer took longer than the {deadline_s:g} s deadline"


class _BodyLimit:
    """Refuses a body over `limit` bytes as JSON 413: by its Content-Length before reading it,
    and while reading it when it comes in chunks (Transfer-Encoding: chunked, no length).

    The body is read here, whole, before the app sees it: raised from inside the app's
    `receive`, the refusal would reach FastAPI's body parsing, which takes any exception
    there for a malformed body and answers 400. A body within the limit is handed on as
    one message; what the client sends after it (a disconnect) comes as before."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await self._refuse(scope, receive, send)
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left before the body ended
                return await self.app(scope, _replay([message], receive), send)
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.limit:
                return await self._refuse(scope, receive, send)
            if not message.get("more_body", False):
                break
        whole = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([whole], receive), send)

    async def _refuse(self, scope: Any, receive: Any, send: Any) -> None:
        response = _error(413, "too_large", f"the request body is larger than {self.limit:,} bytes")
        await response(scope, receive, send)


def _replay(messages: list[Any], receive: Any) -> Any:
    """A `receive` that gives `messages` first, then what the client sends next."""

    async def replayed() -> Any:
        return messages.pop(0) if messages else await receive()

    return replayed


def _status_of(err: GroundsqlError) -> tuple[int, str]:
    if isinstance(err, ServiceError):
        return err.status, err.code
    if isinstance(err, UnsafeSQLError):
        return 400, "refused"
    if isinstance(err, QuestionTimeoutError):
        return 504, "deadline"
    if isinstance(err, DatabaseError):
        return 400, "database_error"
    return 400, "bad_request"


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None,
           extra: dict[str, Any] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": public_message(message), **(extra or {})}},
                        status_code=status, headers=headers)


def _told(err: GroundsqlError, route: str) -> str:
    """The caller's sentence for an error; the whole of it, server paths and all, goes to the
    server's log when the caller's is shorter."""
    said = public_message(str(err))
    if said != str(err):
        log.info("%s: told the caller %r for: %s", route, said, err)
    return said


def _install_error_handlers(app: FastAPI, metrics: Metrics) -> None:
    @app.exception_handler(GroundsqlError)
    async def expected(request: Request, err: GroundsqlError) -> JSONResponse:
        status, code = _status_of(err)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        if isinstance(err, UnsafeSQLError):
            metrics.refusals.labels(route).inc()
        headers = {"Retry-After": str(err.retry_after_s)} if isinstance(err, Busy) else None
        if isinstance(err, Unauthorized):
            headers = {"WWW-Authenticate": "Bearer"}
        return _error(status, code, _told(err, route), headers, getattr(err, "extra", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0] if err.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "the request"
        message = "the body is not valid JSON" if first.get("type") == "json_invalid" else \
            f"{where}: {first.get('msg', 'invalid')}"
        return _error(422, "invalid_request", message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, err: StarletteHTTPException) -> JSONResponse:
        messages = {404: "no such endpoint (see /docs)", 405: "this endpoint does not take that method",
                    413: "the request body is too large"}
        return _error(err.status_code, "http_" + str(err.status_code), messages.get(err.status_code, str(err.detail)))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, _err: Exception) -> JSONResponse:
        log.exception("internal error")
        metrics.errors.labels(getattr(request.scope.get("route"), "path", "unmatched")).inc()
        return _error(500, "internal", "an internal error stopped the request; it is in the server's log")
