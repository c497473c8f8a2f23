"""The MCP server (the official SDK's `MCPServer`): the tools `ask`, `run_sql`, `list_databases`,
`describe_schema` and `lookup`, each a thin call of the service, so an MCP client meets the same
validator, read-only executor, keys, audit log and concurrency limit as the HTTP API.

Who is calling: over stdio, the person who started the process (no key: every configured
database); over streamable HTTP (at /mcp, in `groundsql serve` or `groundsql mcp --transport
http`), the API key the request carries, read as the HTTP API reads it. The key reaches the
tools through a context variable the SDK carries from the HTTP request to the tool call.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from groundsql.errors import GroundsqlError
from groundsql.server.config import ServeConfig
from groundsql.server.service import Asked, Service, ServiceError, Unauthorized
from groundsql.server.state import ApiKey
from groundsql.server.views import AnswerView, json_rows, public_message
from groundsql.strategies import STRATEGIES
from groundsql.strategies.answer import json_value

log = logging.getLogger("groundsql")

# The caller of the request being served, set by `_KeyCheck` (HTTP) or `run` (stdio). Unset
# means nobody vouched for the caller, and the tools refuse: an app that forgets to set it
# fails closed instead of opening every database.
_CALLER: ContextVar[ApiKey | None] = ContextVar("groundsql_mcp_caller")

INSTRUCTIONS = """\
Read-only access to SQL databases. list_databases names them; describe_schema shows a
database's tables and columns. ask answers a question in plain language with validated SQL,
its result and its grounds (pass conversation_id back for a follow-up). run_sql runs your own
query: exactly one read-only SELECT, checked by the same validator; anything else is refused.
lookup resolves a phrase ("quarterly", "EBITDA", a company name) to the IDs of reference and
entity tables, with their rows. Nothing here can change a database."""

# -- the tools' inputs ----------------------------------------------------------------------------
# (`pattern=r"\S"`: a blank question or phrase is refused by the schema, before the service.)

DatabaseName = Annotated[str, Field(min_length=1, max_length=64,
                                    description="The database, by the name list_databases gives it.")]
Question = Annotated[str, Field(min_length=1, max_length=2000, pattern=r"\S",
                                description="A question about the data, in plain language.")]
Sql = Annotated[str, Field(min_length=1, max_length=100_000, description=(
    "Exactly one read-only query in the database's dialect: a SELECT, a set operation of SELECTs, "
    "or WITH ... SELECT. Anything else (a write, a second statement, a setting, a system catalog, "
    "a function not on the allow-list) is refused with the reason. A LIMIT is added where there is none."))]
Strategy = Annotated[Literal[tuple(sorted(STRATEGIES))] | None, Field(description=(  # type: ignore[valid-type]
    "How to answer: auto (what measures best for the database: compiled with a semantic model, "
    "grounded with a domain pack, else search), zero-shot (one call), few-shot (with solved "
    "examples), self-consistency (a vote of samples), grounded (domain pack: IDs looked up, "
    "entities linked), compiled (a verified query or a semantic request; groundsql writes the "
    "SQL), search (a tree search with verification). Default: the database's own."))]
ConversationId = Annotated[str | None, Field(max_length=64, description=(
    "Continue this conversation (the conversation_id of an earlier answer): the question may "
    "then refer to earlier ones."))]
SchemaFormat = Annotated[Literal["m-schema", "ddl"], Field(description=(
    "m-schema (tables, columns with types, keys and example values) or ddl (CREATE TABLE statements)."))]
Phrase = Annotated[str, Field(min_length=1, max_length=500, pattern=r"\S", description=(
    "Words to resolve, e.g. 'quarterly EBITDA of Aurora Therapeutics'."))]

# -- the tools' outputs ---------------------------------------------------------------------------


AskResult = AnswerView


class SqlResult(BaseModel):
    database: str
    sql: str = Field(description="The SQL as validated and run (a LIMIT added where there was none).")
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = Field(description="The row cap cut the rows.")
    elapsed_s: float


class DatabaseInfo(BaseModel):
    name: str
    dialect: str
    strategy: str = Field(description="The strategy ask uses by default.")
    tables: int


class Databases(BaseModel):
    databases: list[DatabaseInfo]


class SchemaResult(BaseModel):
    # "schema" on the wire (structured and text alike), a name pydantic's BaseModel keeps for itself
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    database: str
    format: str
    schema_text: str = Field(alias="schema")


class LookupResult(BaseModel):
    database: str
    phrase: str
    constraints: list[dict[str, Any]] = Field(description=(
        "What the phrase resolves to: filter (the SQL condition), table, column, id, label, the "
        "phrase, source (lookup or entity), confidence and row (the row it came from)."))
    unresolved: list[dict[str, Any]] = Field(description="Names that matched nothing, with the closest name.")
    errors: list[str] = Field(description="Stages whose model call failed (what they would have found is missing).")


# -- the server ------------------------------------------------------------------------------------

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


def create_mcp(service: Service) -> MCPServer:
    server = MCPServer("groundsql", instructions=INSTRUCTIONS, log_level="WARNING")

    async def ask(question: Question, database: DatabaseName, strategy: Strategy = None,
                  conversation_id: ConversationId = None) -> AskResult:
        """Answer a question about a database: validated read-only SQL, its result and its grounds.
        When the answer's kind is "clarification", the question was ambiguous: ask the person which
        option they mean (or choose one) and call ask again with its label, or words of their own,
        and the same conversation_id. "out_of_scope": the data cannot answer; error says why."""
        key = _caller()
        service.database(key, database)  # not found or forbidden before a slot is taken
        service.questions.take(key)  # Busy (all places taken) says when to try again

        def run() -> Asked:
            try:
                return service.ask(key, database, question, strategy=strategy, conversation_id=conversation_id)
            finally:
                service.questions.release(key)  # when the work ends, even after the caller was told of the deadline

        work = asyncio.get_running_loop().run_in_executor(None, run)
        try:
            asked = await asyncio.wait_for(asyncio.shield(work), service.config.deadline_s)
        except TimeoutError:
            raise ServiceError(f"the answer took longer than the {service.config.deadline_s:g} s deadline") from None
        return _ask_result(asked)

    async def run_sql(database: DatabaseName, sql: Sql) -> SqlResult:
        """Run one read-only SELECT through the validator and the read-only executor."""
        start = time.perf_counter()
        checked, result = await anyio.to_thread.run_sync(service.run_sql, _caller(), database, sql)
        return SqlResult(database=database, sql=checked.sql, columns=list(result.columns),
                         rows=json_rows(result.rows), truncated=result.truncated,
                         elapsed_s=round(time.perf_counter() - start, 4))

    async def list_databases() -> Databases:
        """The databases you may use: name, SQL dialect, default strategy and number of tables."""
        key = _caller()

        def infos() -> list[DatabaseInfo]:
            return [DatabaseInfo(name=s.name, dialect=s.session.db.dialect, strategy=s.strategy,
                                 tables=len(s.session.db.catalog().tables)) for s in service.visible(key)]

        return Databases(databases=await anyio.to_thread.run_sync(infos))

    async def describe_schema(database: DatabaseName, format: SchemaFormat = "m-schema") -> SchemaResult:
        """A database's schema as the model sees it: tables, columns, types, keys, example values."""
        text = await anyio.to_thread.run_sync(service.schema, _caller(), database, format)
        return SchemaResult(database=database, format=format, schema_text=text)

    async def lookup(database: DatabaseName, phrase: Phrase) -> LookupResult:
        """Resolve a phrase to IDs of the database's reference tables and entities, with their rows
        (needs the database's domain pack)."""
        found = await anyio.to_thread.run_sync(service.lookup, _caller(), database, phrase)
        return LookupResult(database=database, phrase=phrase, constraints=json_value(found["constraints"]),
                            unresolved=json_value(found["unresolved"]), errors=found["errors"])

    for tool in (ask, run_sql, list_databases, describe_schema, lookup):
        server.add_tool(_one_sentence_errors(tool), annotations=_READ_ONLY)
    return server


def _caller() -> ApiKey | None:
    try:
        return _CALLER.get()
    except LookupError:
        raise ServiceError("this MCP server does not know who is calling; it answers nobody") from None


def _one_sentence_errors(tool: Callable[..., Any]) -> Callable[..., Any]:
    """Expected failures (a refusal, a database error, a key that may not, all places taken)
    become tool errors whose whole text is their one sentence. Anything else stays a crash,
    which the SDK reports without its text and logs with its traceback."""

    @functools.wraps(tool)  # the SDK reads the tool's signature (inputs, output schema) through it
    async def call(**arguments: Any) -> Any:
        try:
            return await tool(**arguments)
        except GroundsqlError as err:
            said = public_message(str(err))  # no server path, one line; the log keeps the whole
            if said != str(err):
                log.info("MCP %s: told the caller %r for: %s", tool.__name__, said, err)
            return CallToolResult(content=[TextContent(type="text", text=said)], is_error=True)

    return call


def _ask_result(asked: Asked) -> AskResult:
    return AskResult(**AnswerView.fields_of(asked))


def mcp_http_app(service: Service) -> Starlette:
    """MCP over streamable HTTP at /mcp, each request under its caller's API key. Its lifespan
    runs the SDK's session manager: an app that routes to it must run that lifespan too."""
    # Stateless: several servers may share one state store behind a load balancer, and no tool
    # needs a session (nothing is asked of the client during a call).
    app = create_mcp(service).streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                                  host=service.config.host)
    app.add_middleware(_KeyCheck, service=service)
    return app


class _KeyCheck:
    """Reads the caller's key as the HTTP API does (`Authorization: Bearer KEY` or `X-API-Key`)
    and sets it for the tools; without a valid key the request is answered 401 in the HTTP
    API's JSON, before MCP reads it."""

    def __init__(self, app: Any, service: Service) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        try:
            key = await run_in_threadpool(self.service.authenticate, _header(headers, b"authorization"),
                                          _header(headers, b"x-api-key"))
        except Unauthorized as err:
            response = JSONResponse({"error": {"code": err.code, "message": str(err)}}, status_code=err.status,
                                    headers={"WWW-Authenticate": "Bearer"})
            return await response(scope, receive, send)
        token = _CALLER.set(key)
        try:
            await self.app(scope, receive, send)
        finally:
            _CALLER.reset(token)


def _header(headers: dict[bytes, bytes], name: bytes) -> str | None:
    value = headers.get(name)
    return value.decode("latin-1") if value is not None else None


# -- running it ------------------------------------------------------------------------------------------


def run(config: ServeConfig, transport: Literal["stdio", "http"], *, log_level: str = "info") -> None:
    """Serve MCP: over stdio until the client closes stdin, or over HTTP until interrupted."""
    if transport == "http":
        from groundsql.server import run_http

        run_http(config, mcp_http_app, log_level=log_level)
        return
    with _stdout_to_stderr():  # the SDK guards stdout while it serves; this guards the start
        service = Service(config)
    try:
        _CALLER.set(None)  # the person who started the process: every configured database
        create_mcp(service).run("stdio")
    finally:
        service.close()


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Whatever writes to stdout meanwhile (a native library loading a model, say) goes to
    stderr: on stdio, stdout carries nothing but the protocol."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
