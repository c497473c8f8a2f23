"""The MCP server through the SDK's own client: over stdio (`groundsql mcp` as a child process,
as a desktop client starts it) and over streamable HTTP (`/mcp` of a live `groundsql serve`,
with API keys; and `groundsql mcp --transport http`).

Answers come from the replay backend (recorded from the real 0.5B model) or a scripted model:
these tests prove the plumbing (tools, keys, refusals, limits), never accuracy.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import yaml
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from groundsql.server.config import ServeConfig
from groundsql.server.mcp import create_mcp
from groundsql.server.service import Service
from tests.server_harness import free_port, live_server
from tests.test_grounded import scripted
from tests.test_server import Slow, config, digest
from tests.test_validator import HOSTILE

TOOLS = {"ask", "run_sql", "list_databases", "describe_schema", "lookup"}
HOSTILE_SQLITE = [case.sql or " " for case in HOSTILE if case.dialect == "sqlite"]
# The demo database and its domain pack; no embedding model, to spare the CPU.
DEMO = {"url": None, "strategy": "grounded", "settings": {"grounded": {"embeddings": False}}}


# -- calling tools ------------------------------------------------------------------------------------


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The text of a tool error, checked to be one clear sentence."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is None, result
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text and "Error executing tool" not in text, text
    return text


async def check_tools(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.output_schema and tool.annotations.read_only_hint, tool.name
    assert tools["run_sql"].input_schema["required"] == ["database", "sql"]
    assert "one read-only query" in tools["run_sql"].input_schema["properties"]["sql"]["description"]
    assert set(tools["ask"].input_schema["properties"]["strategy"]["anyOf"][0]["enum"]) >= {"zero-shot", "grounded"}
    assert set(tools["ask"].output_schema["properties"]) >= {"sql", "columns", "rows", "truncated", "error",
                                                              "grounds", "answer_id", "conversation_id"}


async def check_hostile_corpus(client: Client) -> None:
    for sql in HOSTILE_SQLITE:
        assert (await refused(client, "run_sql", database="singers", sql=sql)).startswith("refused "), sql


# -- stdio ------------------------------------------------------------------------------------------------


def test_tools_over_stdio(tmp_path: Path, concert_singer: Path) -> None:
    before = digest(concert_singer)
    setup = config(tmp_path, concert_singer)
    setup["databases"]["demo"] = DEMO
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(setup))
    faults: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):  # e.g. a line on stdout that is not the protocol
            faults.append(message)

    async def session() -> None:
        server = StdioServerParameters(command=sys.executable, env=dict(os.environ),
                                       args=["-m", "groundsql.cli", "mcp", "--config", str(path)])
        async with Client(server, message_handler=on_message, read_timeout_seconds=120) as client:
            await check_tools(client)
            listed = await ok(client, "list_databases")
            assert sorted(d["name"] for d in listed["databases"]) == ["demo", "singers"]
            schema = await ok(client, "describe_schema", database="singers", format="ddl")
            assert "CREATE TABLE singer" in schema["schema"]
            answer = await ok(client, "ask", database="singers", question="How many singers do we have?")
            assert answer["ok"] and answer["rows"] == [[6]] and answer["sql"].upper().startswith("SELECT COUNT(*)")
            ran = await ok(client, "run_sql", database="singers", sql="SELECT Name FROM singer WHERE Age > 40 "
                                                                          "ORDER BY Name")
            assert ran["sql"].endswith("LIMIT 1000")
            assert ran["rows"] == [["Joe Sharp"], ["John Nizinik"], ["Rose White"]]
            await check_hostile_corpus(client)
            # Entity linking needs no model: the name resolves to its company row; the lookup
            # agent's call has no recording, and the result says so.
            found = await ok(client, "lookup", database="demo", phrase="Aurora Therapeutics")
            entity = next(c for c in found["constraints"] if c["source"] == "entity")
            assert entity["table"] == "company" and entity["row"]["company_name"] == "Aurora Therapeutics plc"
            assert found["errors"] and "no recording" in found["errors"][0]
            assert "needs a domain pack" in await refused(client, "lookup", database="singers", phrase="France")
            assert "no database named 'nope'" in await refused(client, "run_sql", database="nope", sql="SELECT 1")

    asyncio.run(session())
    assert faults == []
    assert digest(concert_singer) == before


# -- streamable HTTP, in `groundsql serve` ------------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_client(url: str, key: str | None = None, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
        yield client


def test_tools_over_http_under_api_keys(tmp_path: Path, concert_singer: Path) -> None:
    before = digest(concert_singer)
    with live_server(config(tmp_path, concert_singer, auth=True)) as (url, service):
        admin = service.state.add_key("admin", [])
        demo_only = service.state.add_key("demo-app", ["demo"])

        async def session(mode: str) -> None:
            async with http_client(url, admin, mode) as client:
                await check_tools(client)
                assert (await ok(client, "list_databases"))["databases"] == [
                    {"name": "singers", "dialect": "sqlite", "strategy": "zero-shot", "tables": 4}]
                assert "# Table: singer" in (await ok(client, "describe_schema", database="singers"))["schema"]
                first = await ok(client, "ask", database="singers", question="How many singers do we have?")
                assert first["ok"] and first["rows"] == [[6]]
                follow = await ok(client, "ask", database="singers", question="And how many of them are from France?",
                                  conversation_id=first["conversation_id"])
                assert follow["conversation_id"] == first["conversation_id"]
                assert "France" in follow["standalone_question"] and follow["ok"]
                await check_hostile_corpus(client)
            async with http_client(url, demo_only, mode) as client:
                assert (await ok(client, "list_databases"))["databases"] == []
                for tool, arguments in [("run_sql", {"sql": "SELECT 1"}), ("describe_schema", {}),
                                        ("ask", {"question": "How many singers?"}), ("lookup", {"phrase": "France"})]:
                    message = await refused(client, tool, database="singers", **arguments)
                    assert message == "the key 'demo-app' may not use the database 'singers'"

        # Handshake-era clients (the initialize handshake) and the SDK's newest protocol.
        for mode in ("legacy", "auto"):
            asyncio.run(session(mode))
        audit = service.state.audit_rows(10_000)
        unauthorized = [httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                        httpx.post(f"{url}/mcp", json={}, headers={"x-api-key": "gsql_stolen"})]
    assert digest(concert_singer) == before
    # One audit log for both ways of asking: every refusal, under the key that tried it.
    refusals = [r for r in audit if r["verdict"] == "refused"]
    assert len(refusals) == 2 * len(HOSTILE_SQLITE) and {r["key_name"] for r in refusals} == {"admin"}
    assert {r["key_name"] for r in audit} == {"admin"}
    for response, message in zip(unauthorized, ["an API key is required", "the API key is not valid"]):
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["code"] == "unauthorized"
        assert response.json()["error"]["message"].startswith(message)


def test_lookup_resolves_a_phrase_to_ids_with_their_rows(tmp_path: Path, concert_singer: Path) -> None:
    model = scripted(pick='{"tables": ["ref_data_item", "ref_period_type"]}',
                     constraints='{"constraints": [{"table": "ref_data_item", "id": 4051, "phrase": "EBITDA"}, '
                                 '{"table": "ref_period_type", "id": 2, "phrase": "quarterly"}]}')
    setup = {"state_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "auth": False, "databases": {"demo": DEMO}}

    async def session(url: str) -> dict[str, Any]:
        async with http_client(url) as client:
            return await ok(client, "lookup", database="demo", phrase="quarterly EBITDA of Aurora Therapeutics")

    with live_server(setup, llm=model) as (url, _):
        found = asyncio.run(session(url))
    by_filter = {c["filter"]: c for c in found["constraints"]}
    assert by_filter["ref_data_item.data_item_id = 4051"]["row"]["data_item_name"] == "EBITDA"
    quarterly = by_filter["ref_period_type.period_type_id = 2"]
    assert (quarterly["label"], quarterly["phrase"], quarterly["source"]) == ("Quarterly", "quarterly", "lookup")
    assert any(c["source"] == "entity" and c["label"] == "Aurora Therapeutics plc" for c in found["constraints"])
    assert model.stages() == ["pick", "constraints"]


def test_ask_shares_the_concurrency_limit_and_the_deadline(tmp_path: Path, concert_singer: Path) -> None:
    setup = config(tmp_path, concert_singer, max_concurrent=1, deadline_s=1)

    async def session(url: str) -> tuple[str, str]:
        async with http_client(url) as client:
            async def later() -> str:
                await asyncio.sleep(0.5)  # while the first question holds the one place
                return await refused(client, "ask", database="singers", question="How many singers?")

            return await asyncio.gather(refused(client, "ask", database="singers", question="How many singers?"),
                                        later())

    with live_server(setup, llm=Slow(delay_s=2)) as (url, _):
        late, busy = asyncio.run(session(url))
    assert late == "the answer took longer than the 1 s deadline"
    assert busy.startswith("1 questions are being answered; try again in ")


def test_a_tool_error_and_an_answers_error_name_no_server_path(tmp_path: Path, concert_singer: Path,
                                                              monkeypatch) -> None:
    from groundsql.server import service as service_module
    from groundsql.strategies import context as context_module
    from tests.test_server import failing_database

    where = f"{tmp_path}/secret/place/data.sqlite"
    monkeypatch.setattr(service_module, "run_validated", failing_database(where))
    monkeypatch.setattr(context_module, "run_validated", failing_database(where))

    async def session(url: str) -> tuple[str, dict[str, Any]]:
        async with http_client(url) as client:
            return (await refused(client, "run_sql", database="singers", sql="SELECT 1"),
                    await ok(client, "ask", database="singers", question="How many singers?"))

    with live_server(config(tmp_path, concert_singer), llm=Slow()) as (url, _):
        told, answer = asyncio.run(session(url))
    assert told == "could not open data.sqlite: disk I/O error"
    assert answer["error"].endswith("could not open data.sqlite: disk I/O error") and "secret" not in str(answer)


# -- who may call ----------------------------------------------------------------------------------------


def test_without_a_caller_the_tools_answer_nobody(tmp_path: Path, concert_singer: Path) -> None:
    # In process, outside both transports: nothing set the caller, so nothing is served.
    settings = ServeConfig.model_validate(config(tmp_path, concert_singer))
    service = Service(settings)

    async def session() -> str:
        async with Client(create_mcp(service)) as client:
            return await refused(client, "run_sql", database="singers", sql="SELECT 1")

    try:
        assert "does not know who is calling" in asyncio.run(session())
    finally:
        service.close()


# -- `groundsql mcp --transport http` ----------------------------------------------------------------------


def test_the_mcp_command_serves_http(tmp_path: Path, concert_singer: Path) -> None:
    port = free_port()
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, concert_singer, auth=True)))
    command = [sys.executable, "-m", "groundsql.cli", "mcp", "--transport", "http", "--port", str(port),
               "--no-auth", "--config", str(path)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    async def session() -> dict[str, Any]:
        async with http_client(f"http://127.0.0.1:{port}") as client:
            return await ok(client, "run_sql", database="singers", sql="SELECT COUNT(*) FROM singer")

    try:
        _wait_for_port(port, process)
        assert asyncio.run(session())["rows"] == [[6]]
    finally:
        process.terminate()
        output = process.communicate(timeout=15)[0]
    assert f"on http://127.0.0.1:{port}/mcp" in output


def _wait_for_port(port: int, process: subprocess.Popen[str], timeout_s: float = 60) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        assert process.poll() is None, process.communicate()[0]
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {timeout_s} s")
