"""The HTTP API through real HTTP against a live uvicorn on 127.0.0.1.

Most tests answer from the replay backend (answers recorded from the real 0.5B model) or a
scripted model: they prove the plumbing (auth, limits, conversations, feedback, audit, errors),
never accuracy. Re-record with GROUNDSQL_RECORD=1 (it then runs the real model).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest

from groundsql.errors import LLMError
from groundsql.llm import LLM, ChatRequest, Completion
from tests.conftest import spider_db
from tests.server_harness import REPLAY_LLM, live_server
from tests.test_validator import HOSTILE


class Slow(LLM):
    """Answers every request with `sql` after `delay_s` (or fails): for limits and deadlines."""

    def __init__(self, sql: str = "SELECT COUNT(*) FROM singer", delay_s: float = 0.0) -> None:
        self.sql, self.delay_s, self.model_id, self.retries = sql, delay_s, "slow", 0
        self.calls = 0
        self.requests: list[ChatRequest] = []

    def _complete(self, request: ChatRequest) -> Completion:
        self.calls += 1
        self.requests.append(request)
        time.sleep(self.delay_s)
        if self.sql.startswith("!"):
            raise LLMError(self.sql[1:], retryable=False)
        return Completion(text=f"```sql\n{self.sql}\n```", model=self.model_id, prompt_tokens=11, completion_tokens=5)


@pytest.fixture
def singers(tmp_path: Path) -> Path:
    copy = tmp_path / "concert_singer.sqlite"
    shutil.copy(spider_db("concert_singer"), copy)
    return copy


def config(tmp_path: Path, db: Path, **extra) -> dict:
    return {"state_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "auth": False, "llm": REPLAY_LLM,
            "databases": {"singers": {"url": str(db), "strategy": "zero-shot"}}, **extra}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- metadata, errors ---------------------------------------------------------------------------------


def test_metadata_endpoints_and_clear_errors(tmp_path: Path, singers: Path) -> None:
    with live_server(config(tmp_path, singers)) as (url, _):
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok", "databases": 1}
        assert httpx.get(f"{url}/v1/databases").json() == [
            {"name": "singers", "dialect": "sqlite", "strategy": "zero-shot", "tables": 4, "learned_examples": 0,
             "onboarding": []}]
        schema = httpx.get(f"{url}/v1/databases/singers/schema").json()
        assert "# Table: singer" in schema["schema"] and schema["format"] == "m-schema"
        assert "CREATE TABLE singer" in httpx.get(f"{url}/v1/databases/singers/schema?format=ddl").json()["schema"]
        assert "/v1/ask" in httpx.get(f"{url}/openapi.json").json()["paths"]
        assert httpx.get(f"{url}/docs").status_code == 200
        for response, status, code in [
            (httpx.get(f"{url}/v1/databases/nope/schema"), 404, "not_found"),
            (httpx.get(f"{url}/nowhere"), 404, "http_404"),
            (httpx.post(f"{url}/v1/sql", content=b"{not json", headers={"content-type": "application/json"}),
             422, "invalid_request"),
            (httpx.post(f"{url}/v1/sql", json={"database": "singers", "sql": "SELECT 1", "extra": 1}),
             422, "invalid_request"),
            (httpx.post(f"{url}/v1/ask", json={"database": "singers", "question": "x" * 2001}), 422, "invalid_request"),
            (httpx.post(f"{url}/v1/sql", json={"database": "singers", "sql": "SELECT 1 -- " + "x" * 300_000}),
             413, "too_large"),
            # The same body in chunks, without a Content-Length: refused as it arrives, as 413 too.
            (httpx.post(f"{url}/v1/sql", content=_chunked('{"database": "singers", "sql": "SELECT 1 -- ', 30, '"}'),
                        headers={"content-type": "application/json"}), 413, "too_large"),
            (httpx.get(f"{url}/v1/conversations/nope"), 404, "not_found"),
        ]:
            body = response.json()
            assert (response.status_code, body["error"]["code"]) == (status, code), body
            assert "Traceback" not in body["error"]["message"] and "\n" not in body["error"]["message"]
        within = httpx.post(f"{url}/v1/sql", content=_chunked('{"database": "singers", "sql": "SELECT 1 -- ', 3, '"}'),
                            headers={"content-type": "application/json"})
        assert within.status_code == 200 and within.json()["rows"] == [[1]]


def _chunked(head: str, chunks: int, tail: str):
    """A body sent in chunks of 10,000 bytes (httpx sends a generator chunked, with no length)."""
    yield head.encode()
    for _ in range(chunks):
        yield b"x" * 10_000
    yield tail.encode()


@pytest.mark.parametrize(("message", "said"), [
    # A server path becomes its last part, wherever it is in the message and however written.
    ("could not open Database('sqlite:////srv/data/concert_singer.sqlite'): unable to open database file",
     "could not open Database('concert_singer.sqlite'): unable to open database file"),
    ("no SQLite database at /home/ana/data/x.db", "no SQLite database at x.db"),
    ("not saved: /srv/packs/sales/bank.jsonl:3: sql: refused table planets",
     "not saved: bank.jsonl:3: sql: refused table planets"),
    ("the server may not write to the pack's folder /srv/packs/sales", "the server may not write to the pack's folder sales"),
    ("[PATH_NOT_FOUND] Path does not exist: file:/data/spark/warehouse/t.parquet.",
     "[PATH_NOT_FOUND] Path does not exist: t.parquet."),
    ('cannot read "/my data/x.db": permission denied', 'cannot read "x.db": permission denied'),
    ("C:\\Users\\ana\\x.db is locked", "x.db is locked"),
    ("~/.cache/groundsql/server/state.sqlite is busy", "state.sqlite is busy"),
    # What only looks like one stays: an endpoint, a URL, division, a date, a MIME type.
    ("no such endpoint (see /docs)", "no such endpoint (see /docs)"),
    ("could not reach http://model-host:8080/v1/chat/completions", "could not reach http://model-host:8080/v1/chat/completions"),
    ("near \"/\": syntax error in SELECT a/b, 2024/01/02, text/csv", "near \"/\": syntax error in SELECT a/b, 2024/01/02, text/csv"),
    # One line: a driver's multi-line dump keeps its first; a JVM's class names and frames go.
    ('column "x" does not exist\nLINE 1: SELECT x FROM t\n               ^\nHINT: Perhaps you meant "t.y".',
     'column "x" does not exist'),
    ("org.apache.spark.sql.AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] The table t cannot be found.\n"
     "\tat org.apache.spark.sql.catalyst.Foo.bar(Foo.scala:12)", "[TABLE_OR_VIEW_NOT_FOUND] The table t cannot be found."),
    ("org.apache.hive.service.cli.HiveSQLException: Error running query: "
     "java.util.concurrent.ExecutionException: Boxed Exception", "the database failed while running the query"),
    ("java.lang.OutOfMemoryError: Java heap space\n\tat java.util.Arrays.copyOf(Arrays.java:3236)",
     "the database ran out of memory for this query"),
    ("java.lang.NullPointerException", "the database failed while running the query"),
    ("refused function pg_sleep: pg_sleep() is not on the list", "refused function pg_sleep: pg_sleep() is not on the list"),
    # Bounded: a long one is cut at a word, and says so.
    ("word " * 200, ("word " * 80).strip()[:399].rsplit(" ", 1)[0] + "\u2026"),
])
def test_a_message_leaves_the_service_as_one_line_without_server_paths(message: str, said: str) -> None:
    from groundsql.server.views import MAX_MESSAGE_CHARS, public_message

    assert public_message(message) == said and len(said) <= MAX_MESSAGE_CHARS


def failing_database(where: str):
    """A run_validated whose database fails with a driver's message that names a server file."""
    from groundsql.errors import DatabaseError

    def failing(*_args):
        raise DatabaseError(f"could not open {where}: disk I/O error\nDETAIL: the file is gone")

    return failing


def test_errors_a_key_sees_name_no_server_path(tmp_path: Path, singers: Path, monkeypatch, caplog) -> None:
    """A database error names no folder of the server's in /v1/sql's error, an answer's error,
    its stream's step details or the conversation's turns; the server's log has the whole."""
    import logging

    from groundsql.server import service as service_module
    from groundsql.strategies import context as context_module

    where = f"{tmp_path}/secret/place/data.sqlite"
    monkeypatch.setattr(service_module, "run_validated", failing_database(where))
    monkeypatch.setattr(context_module, "run_validated", failing_database(where))
    caplog.set_level(logging.INFO, logger="groundsql")
    ask = {"database": "singers", "question": "Singers?"}
    with live_server(config(tmp_path, singers), llm=Slow("SELECT Name FROM singer")) as (url, _):
        told = httpx.post(f"{url}/v1/sql", json={"database": "singers", "sql": "SELECT 1"}).json()["error"]
        answer = httpx.post(f"{url}/v1/ask", json=ask).json()
        with httpx.stream("POST", f"{url}/v1/ask", json=ask, headers={"accept": "text/event-stream"}) as stream:
            events = _events(stream.iter_lines())
        turns = httpx.get(f"{url}/v1/conversations/{answer['conversation_id']}").json()["turns"]
    assert told == {"code": "database_error", "message": "could not open data.sqlite: disk I/O error"}
    assert answer["error"].endswith("could not open data.sqlite: disk I/O error")
    shown = json.dumps([answer, events, turns])
    assert str(tmp_path) not in shown and "secret" not in shown and "DETAIL" not in shown
    assert [e for name, e in events if name == "step" and "error" in e]  # the stream's steps said it too
    assert any(where in r.getMessage() for r in caplog.records)


# -- /v1/sql: the validator and the read-only executor, audited ----------------------------------------


def test_sql_runs_validated_and_every_statement_is_audited(tmp_path: Path, singers: Path) -> None:
    before = digest(singers)
    hostile = [case.sql for case in HOSTILE if case.dialect == "sqlite"]
    with live_server(config(tmp_path, singers)) as (url, service):
        ok = httpx.post(f"{url}/v1/sql", json={"database": "singers",
                                                  "sql": "SELECT Name FROM singer WHERE Name LIKE '%e%' ORDER BY Name"})
        assert ok.status_code == 200 and ok.json()["sql"].endswith("LIMIT 1000") and ok.json()["rows"]
        for sql in hostile:
            refused = httpx.post(f"{url}/v1/sql", json={"database": "singers", "sql": sql or " "})
            assert (refused.status_code, refused.json()["error"]["code"]) == (400, "refused"), sql
        failed = httpx.post(f"{url}/v1/sql", json={"database": "singers", "sql": "SELECT nope FROM singer"})
        assert failed.json()["error"]["code"] == "database_error"
        audit = service.state.audit_rows(10_000)
        metrics = httpx.get(f"{url}/metrics").text
    assert digest(singers) == before
    refusals = [r for r in audit if r["verdict"] == "refused"]
    assert len(refusals) == len(hostile)
    assert [r["verdict"] for r in audit if r["verdict"] != "refused"] == ["failed", "ran"]
    assert f'groundsql_refusals_total{{route="/v1/sql"}} {float(len(refusals))}' in metrics


# -- /v1/ask, conversations, streaming -----------------------------------------------------------------


def test_ask_follow_up_and_stream(tmp_path: Path, singers: Path) -> None:
    with live_server(config(tmp_path, singers)) as (url, service):
        first = httpx.post(f"{url}/v1/ask", json={"database": "singers", "question": "How many singers do we have?"},
                           timeout=300).json()
        assert first["ok"] and first["rows"] == [[6]] and first["usage"]["model_calls"] == 1
        assert [t["stage"] for t in first["timings"]] == ["schema", "generate", "validate+execute"]
        follow = {"database": "singers", "question": "And how many of them are from France?",
                  "conversation_id": first["conversation_id"]}
        with httpx.stream("POST", f"{url}/v1/ask", json=follow, headers={"accept": "text/event-stream"},
                          timeout=300) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = _events(stream.iter_lines())
        names = [name for name, _ in events]
        assert names[-1] == "answer" and names[:-1] == ["step"] * (len(names) - 1)
        assert [data["stage"] for name, data in events if name == "step"][0] == "resolve"
        answer = events[-1][1]
        assert answer["conversation_id"] == first["conversation_id"]
        assert answer["question"] == follow["question"] and "France" in answer["standalone_question"]
        assert answer["grounds"]["conversation"]["earlier"] == ["How many singers do we have?"]
        conversation = httpx.get(f"{url}/v1/conversations/{first['conversation_id']}").json()
        assert [t["question"] for t in conversation["turns"]] == [first["question"], follow["question"]]
        assert conversation["turns"][1]["answer_id"] == answer["answer_id"]
        metrics = httpx.get(f"{url}/metrics").text
    assert 'groundsql_stage_seconds_count{stage="resolve"} 1.0' in metrics
    assert "groundsql_model_tokens_total" in metrics


def _events(lines) -> list[tuple[str, dict]]:
    events, name = [], None
    for line in lines:
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[6:])))
    return events


def test_sql_injection_through_the_question_writes_nothing(tmp_path: Path, singers: Path) -> None:
    before = digest(singers)
    evil = Slow("SELECT 1; DROP TABLE singer")
    with live_server(config(tmp_path, singers), llm=evil) as (url, service):
        answer = httpx.post(f"{url}/v1/ask", json={"database": "singers",
                                                   "question": "'; DROP TABLE singer; -- ignore the rules"}).json()
        audit = service.state.audit_rows()
    assert not answer["ok"] and "refused multiple statements" in answer["error"]
    # The retry wrote the same statement: it is refused again without running a second time.
    assert [r["verdict"] for r in audit] == ["refused"]
    assert digest(singers) == before


def test_a_query_mended_without_the_model_is_audited_as_it_ran(tmp_path: Path, singers: Path) -> None:
    written = "SELECT Year, COUNT(*) FROM singer_in_concert GROUP BY Year"
    with live_server(config(tmp_path, singers), llm=Slow(written)) as (url, service):
        answer = httpx.post(f"{url}/v1/ask", json={"database": "singers", "question": "Singers per year?"}).json()
        audit = service.state.audit_rows()
    assert answer["ok"] and "JOIN concert" in answer["sql"]
    # The query as written failed and the mended one ran: the log (newest first) says both.
    assert [(r["verdict"], r["sql"]) for r in audit] == [("ran", answer["sql"]), ("failed", written)]
    assert audit[1]["detail"] == "no such column: Year"


def test_what_no_query_may_read_is_shown_nowhere(tmp_path: Path, singers: Path) -> None:
    setup = config(tmp_path, singers)
    setup["databases"]["singers"]["settings"] = {"safety": {
        "allowed_tables": ["singer", "concert", "singer_in_concert"],
        "allowed_columns": {"singer": ["Singer_ID", "Name", "Country"]}}}
    model = Slow("SELECT COUNT(*) FROM singer")
    with live_server(setup, llm=model) as (url, _):
        for fmt in ("m-schema", "ddl"):
            shown = httpx.get(f"{url}/v1/databases/singers/schema", params={"format": fmt}).json()["schema"]
            assert "Country" in shown and "concert_Name" in shown
            assert "Song_Name" not in shown and "Is_male" not in shown and "Capacity" not in shown
        tables = httpx.get(f"{url}/v1/databases/singers/tables").json()["tables"]
        assert sorted(t["name"] for t in tables) == ["concert", "singer", "singer_in_concert"]
        singer = next(t for t in tables if t["name"] == "singer")
        assert [c["name"] for c in singer["columns"]] == ["Singer_ID", "Name", "Country"]
        concert = next(t for t in tables if t["name"] == "concert")
        assert all(fk["ref_table"] != "stadium" for fk in concert["foreign_keys"])  # its key leads nowhere shown
        httpx.post(f"{url}/v1/ask", json={"database": "singers", "question": "How many singers?"})
    prompt = "".join(m.content for m in model.requests[0].messages)
    assert "Country" in prompt and "Song_Name" not in prompt and "Capacity" not in prompt


# -- keys ---------------------------------------------------------------------------------------------


def with_pets(tmp_path: Path, singers: Path) -> dict:
    """Two databases behind keys: the singers and a copy of pets_1 (for keys allowed one)."""
    pets = tmp_path / "pets.sqlite"
    shutil.copy(spider_db("pets_1"), pets)
    setup = config(tmp_path, singers, auth=True)
    setup["databases"]["pets"] = {"url": str(pets), "strategy": "zero-shot"}
    return setup


def test_keys_allow_their_databases_only(tmp_path: Path, singers: Path) -> None:
    with live_server(with_pets(tmp_path, singers)) as (url, service):
        pets_only = service.state.add_key("pets-app", ["pets"])
        everything = service.state.add_key("admin", [])
        missing = httpx.get(f"{url}/v1/databases")
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{url}/v1/databases", headers={"authorization": "Bearer gsql_stolen"}).status_code == 401
        mine = {"authorization": f"Bearer {pets_only}"}
        assert [d["name"] for d in httpx.get(f"{url}/v1/databases", headers=mine).json()] == ["pets"]
        for response in (httpx.post(f"{url}/v1/sql", json={"database": "singers", "sql": "SELECT 1"}, headers=mine),
                         httpx.get(f"{url}/v1/databases/singers/schema", headers=mine),
                         httpx.post(f"{url}/v1/ask", json={"database": "singers", "question": "hi"}, headers=mine)):
            assert response.status_code == 403 and "may not use" in response.json()["error"]["message"]
        assert httpx.post(f"{url}/v1/sql", json={"database": "pets", "sql": "SELECT COUNT(*) FROM pets"},
                          headers={"x-api-key": pets_only}).json()["rows"] == [[3]]
        admin = {"authorization": f"Bearer {everything}"}
        assert len(httpx.get(f"{url}/v1/databases", headers=admin).json()) == 2
        audit = service.state.audit_rows()
    assert [(r["key_name"], r["database"]) for r in audit] == [("pets-app", "pets")]


# -- feedback -------------------------------------------------------------------------------------------


def test_feedback_teaches_the_database(tmp_path: Path, singers: Path) -> None:
    model = Slow("SELECT Name FROM singer ORDER BY Age DESC LIMIT 1")
    with live_server(config(tmp_path, singers), llm=model) as (url, service):
        ask = {"database": "singers", "question": "Who is the oldest singer?"}
        answer = httpx.post(f"{url}/v1/ask", json=ask).json()
        right = httpx.post(f"{url}/v1/feedback", json={"answer_id": answer["answer_id"], "verdict": "right"}).json()
        assert right["learned"] and right["sql"] == answer["sql"]
        wrong = httpx.post(f"{url}/v1/ask", json={**ask, "question": "Who is the youngest singer?"}).json()
        hostile = httpx.post(f"{url}/v1/feedback", json={"answer_id": wrong["answer_id"], "verdict": "wrong",
                                                         "corrected_sql": "DELETE FROM singer"})
        assert hostile.status_code == 400 and hostile.json()["error"]["code"] == "refused"
        fixed = httpx.post(f"{url}/v1/feedback", json={
            "answer_id": wrong["answer_id"], "verdict": "wrong",
            "corrected_sql": "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1"}).json()
        assert fixed["learned"] and fixed["rows"] == [["Tribal King"]]
        assert httpx.post(f"{url}/v1/feedback", json={"answer_id": "nope", "verdict": "right"}).status_code == 404
        learned = [(e.question, e.sql) for e in service.databases["singers"].session.context.learned]
    assert learned == [("Who is the oldest singer?", answer["sql"]),
                       ("Who is the youngest singer?", "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1")]


@pytest.mark.parametrize("cap", [{"database": {"max_rows": 3}}, {"safety": {"default_limit": 3}}],
                         ids=["row cap", "added LIMIT"])
def test_a_result_downloads_as_csv_and_a_cut_one_says_so(tmp_path: Path, singers: Path, cap: dict) -> None:
    """The answer's SQL runs again, read-only, under the row cap: a result cut (by the row cap,
    or by the LIMIT the validator added, which the SQL kept then carries as its own) says it
    is cut (file name, header); a text a spreadsheet would run as a formula is quoted; an
    unknown answer is not found."""
    import csv
    import io
    import sqlite3

    with sqlite3.connect(singers) as conn:
        conn.execute("UPDATE singer SET Country = '=HYPERLINK(\"http://x\")' WHERE Singer_ID = 1")
    capped = {"databases": {"singers": {"url": str(singers), "strategy": "zero-shot", "settings": cap}}}
    model = Slow("SELECT Singer_ID, Name, Country FROM singer ORDER BY Singer_ID")
    with live_server({**config(tmp_path, singers), **capped}, llm=model) as (url, _):
        answer = httpx.post(f"{url}/v1/ask", json={"database": "singers", "question": "List the singers"}).json()
        assert answer["ok"] and answer["truncated"]
        got = httpx.get(f"{url}/v1/answers/{answer['answer_id']}/result.csv")
        assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
        assert got.headers["x-groundsql-truncated"] == "true"
        assert 'filename="answer-' in got.headers["content-disposition"]
        assert "-first-3-rows.csv" in got.headers["content-disposition"]
        rows = list(csv.reader(io.StringIO(got.text)))
        assert rows[0] == ["Singer_ID", "Name", "Country"] and len(rows) == 4
        assert rows[1][2] == "'=HYPERLINK(\"http://x\")" and rows[2][1] == answer["rows"][1][1]
        missing = httpx.get(f"{url}/v1/answers/nope/result.csv")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(("value", "written"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"),
    # Spreadsheets skip leading whitespace: any kind, Unicode too.
    (" =1+1", "' =1+1"), ("\n=1+1", "'\n=1+1"), ("\r\n@x", "'\r\n@x"), ("\xa0=1", "'\xa0=1"),
    ("\u3000+1", "'\u3000+1"), ("\u2003 -1", "'\u2003 -1"),
    # ... and invisible format characters; and they read full-width (and small) signs as ASCII ones.
    ("\u200b=1", "'\u200b=1"), ("\ufeff=1", "'\ufeff=1"),
    ("\uff1d1+1", "'\uff1d1+1"), ("\uff0b1", "'\uff0b1"), ("\uff0d1", "'\uff0d1"), ("\uff20x", "'\uff20x"),
    ("\ufe66cmd", "'\ufe66cmd"), (" \uff1dx", "' \uff1dx"),
    # Text that is not a formula stays as it is.
    ("a=1", "a=1"), ("1-2", "1-2"), ("x@y.z", "x@y.z"), ("  plain", "  plain"), ("", ""), ("\uff41", "\uff41"),
])
def test_a_csv_cell_a_spreadsheet_would_run_is_quoted(value: str, written: str) -> None:
    import csv
    import io

    from groundsql.server.views import csv_text

    rows = list(csv.reader(io.StringIO(csv_text([value], [(value, 5)]), newline="")))
    assert rows == [[written], [written, "5"]]


# -- limits -----------------------------------------------------------------------------------------------


def test_beyond_max_concurrent_is_429_never_a_hang(tmp_path: Path, singers: Path) -> None:
    model = Slow(delay_s=2.0)
    with live_server(config(tmp_path, singers, max_concurrent=1), llm=model) as (url, _):
        ask = {"database": "singers", "question": "How many singers?"}
        first: list[httpx.Response] = []
        runner = threading.Thread(target=lambda: first.append(httpx.post(f"{url}/v1/ask", json=ask, timeout=30)))
        runner.start()
        time.sleep(0.5)
        busy = httpx.post(f"{url}/v1/ask", json=ask, timeout=5)
        runner.join()
    assert busy.status_code == 429 and int(busy.headers["retry-after"]) >= 1
    assert first[0].status_code == 200 and first[0].json()["ok"]


def test_queries_at_once_are_bounded_per_key_and_in_all(tmp_path: Path, singers: Path, monkeypatch) -> None:
    """A person's SQL (/v1/sql, a correction, a CSV download) takes one of the places for
    queries: beyond its key's share or the total it is told 429 with Retry-After at once,
    never held behind the slow ones; the places come back when those end."""
    from groundsql.server import service as service_module

    gate, started = threading.Event(), threading.Semaphore(0)
    run_validated = service_module.run_validated

    def held_open(db, sql, policy):  # a slow query: runs until the test lets it end
        if "slow" in sql:
            started.release()
            gate.wait(30)
        return run_validated(db, sql, policy)

    monkeypatch.setattr(service_module, "run_validated", held_open)
    setup = config(tmp_path, singers, auth=True, max_concurrent_sql=3, max_concurrent_sql_per_key=2)
    with live_server(setup, llm=Slow("SELECT Name FROM singer")) as (url, service):
        a, b, c = ({"authorization": f"Bearer {service.state.add_key(name, [])}"} for name in "abc")
        answer = httpx.post(f"{url}/v1/ask", json={"database": "singers", "question": "Singers?"}, headers=a).json()

        def sql(headers: dict, text: str = "SELECT 1") -> httpx.Response:
            return httpx.post(f"{url}/v1/sql", json={"database": "singers", "sql": text}, headers=headers, timeout=30)

        slow: list[httpx.Response] = []
        runners = [threading.Thread(target=lambda: slow.append(sql(a, "SELECT 1 AS slow"))) for _ in range(2)]
        try:
            for runner in runners:
                runner.start()
                assert started.acquire(timeout=10)
            over_key = [sql(a), httpx.get(f"{url}/v1/answers/{answer['answer_id']}/result.csv", headers=a),
                        httpx.post(f"{url}/v1/feedback", headers=a, json={
                            "answer_id": answer["answer_id"], "verdict": "wrong", "corrected_sql": "SELECT 2"})]
            other_key = sql(b)  # the third place, free for another key
            runners.append(threading.Thread(target=lambda: slow.append(sql(b, "SELECT 1 AS slow"))))
            runners[-1].start()
            assert started.acquire(timeout=10)
            over_all = sql(c)
        finally:
            gate.set()
            for runner in runners:
                runner.join()
        after = sql(a)
    for busy, says in [*((r, "2 queries are running for the key 'a'") for r in over_key),
                       (over_all, "3 queries are running")]:
        error = busy.json()["error"]
        assert (busy.status_code, error["code"]) == (429, "busy") and int(busy.headers["retry-after"]) >= 1
        assert error["message"].startswith(says + "; try again in ") and "\n" not in error["message"]
    assert other_key.status_code == 200 and after.status_code == 200
    assert [r.status_code for r in slow] == [200, 200, 200]


def test_a_question_past_its_deadline_is_504(tmp_path: Path, singers: Path) -> None:
    with live_server(config(tmp_path, singers, deadline_s=1), llm=Slow(delay_s=3)) as (url, _):
        ask = {"database": "singers", "question": "How many singers?"}
        late = httpx.post(f"{url}/v1/ask", json=ask, timeout=10)
        assert late.status_code == 504 and "1 s deadline" in late.json()["error"]["message"]
        # The first question still runs (its slot is held until it ends); the stream takes the
        # second slot and ends with an error event when its own deadline passes.
        with httpx.stream("POST", f"{url}/v1/ask", json=ask, headers={"accept": "text/event-stream"},
                          timeout=10) as stream:
            events = _events(stream.iter_lines())
    assert events[-1] == ("error", {"code": "deadline", "message": "the answer took longer than the 1 s deadline"})


def test_work_past_its_deadline_stops_rather_than_holding_its_slot(tmp_path: Path, singers: Path) -> None:
    slow = Slow(delay_s=0.6)
    with live_server(config(tmp_path, singers, deadline_s=1), llm=slow) as (url, _):
        ask = {"database": "singers", "question": "How many singers?", "strategy": "self-consistency"}
        assert httpx.post(f"{url}/v1/ask", json=ask, timeout=10).status_code == 504
        time.sleep(2.5)  # five samples of 0.6 s would still be running without the deadline
        assert slow.calls <= 3


def test_a_model_failure_is_an_answer_not_a_crash(tmp_path: Path, singers: Path) -> None:
    with live_server(config(tmp_path, singers), llm=Slow("!the model server is down")) as (url, _):
        answer = httpx.post(f"{url}/v1/ask", json={"database": "singers", "question": "How many singers?"})
    assert answer.status_code == 200 and not answer.json()["ok"]
    assert "the model server is down" in answer.json()["error"]


# -- two processes, one PostgreSQL state store ------------------------------------------------------------


@pytest.mark.postgres
def test_two_servers_share_a_postgres_state_store(tmp_path: Path, singers: Path) -> None:
    import uuid

    import psycopg

    from groundsql.server.state import StateStore
    from tests.conftest import PG_ADMIN_URL
    from tests.server_harness import server_process

    name = f"groundsql_state_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    state_url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        store = StateStore(state_url)
        key = {"authorization": f"Bearer {store.add_key('app', ['singers'])}"}
        setup = {**config(tmp_path, singers, auth=True), "state_url": state_url}
        with server_process(setup, tmp_path) as one, server_process(setup, tmp_path) as two:
            first = httpx.post(f"{one}/v1/ask", headers=key, timeout=120,
                               json={"database": "singers", "question": "How many singers do we have?"}).json()
            # The conversation goes on at the other server, which reads it from the shared store.
            follow = httpx.post(f"{two}/v1/ask", headers=key, timeout=120, json={
                "database": "singers", "question": "And how many of them are from France?",
                "conversation_id": first["conversation_id"]}).json()
            assert follow["ok"] and "France" in follow["standalone_question"] and follow["rows"] == [[4]]
            assert httpx.post(f"{one}/v1/feedback", headers=key,
                              json={"answer_id": first["answer_id"], "verdict": "right"}).json()["learned"]
            assert httpx.get(f"{two}/v1/databases", headers=key).json()[0]["learned_examples"] == 1
            for server in (one, two) * 10:
                assert httpx.post(f"{server}/v1/sql", headers=key,
                                  json={"database": "singers", "sql": "SELECT 1"}).status_code == 200
        audit = store.audit_rows()
        turns = store.conversation(first["conversation_id"])["turns"]
    finally:
        store.close()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    assert [t["question"] for t in turns] == ["How many singers do we have?", "And how many of them are from France?"]
    assert sum(r["kind"] == "sql" for r in audit) == 20 + 1  # every statement, from both: the feedback's check too


def test_load_of_32_clients_has_no_5xx_and_loses_no_audit_row(tmp_path: Path, singers: Path) -> None:
    """1,000 requests from 32 clients on loopback (asks replayed, SQL run): every one answered
    or told 429, none failed or hung, and every statement that ran is in the audit log."""
    import asyncio

    from tests.load import run_load

    with live_server(config(tmp_path, singers, max_concurrent=8)) as (url, service):
        result = asyncio.run(run_load(url, clients=32, requests=1000, timeout_s=60))
        audited = service.state.audit_rows(10_000)
    assert result.timeouts == 0 and set(result.statuses) <= {200, 429}, result.summary()
    assert sum(result.answered.values()) == result.statuses[200] >= 500
    assert len(audited) == result.statuses[200] and {r["verdict"] for r in audited} == {"ran"}


@pytest.mark.model
def test_real_model_answers_asks_streams_and_follows_up(tmp_path: Path, singers: Path) -> None:
    """The real 0.5B model behind the live server: an ask, then a streamed follow-up."""
    setup = {**config(tmp_path, singers), "llm": {"model": "qwen2.5-coder-0.5b", "cache": False}}
    with live_server(setup) as (url, _):
        first = httpx.post(f"{url}/v1/ask", timeout=600,
                           json={"database": "singers", "question": "How many singers do we have?"}).json()
        assert first["ok"] and first["rows"] == [[6]], first
        follow = {"database": "singers", "question": "And how many of them are from France?",
                  "conversation_id": first["conversation_id"]}
        with httpx.stream("POST", f"{url}/v1/ask", json=follow, headers={"accept": "text/event-stream"},
                          timeout=600) as stream:
            events = _events(stream.iter_lines())
    stages = [data["stage"] for name, data in events if name == "step"]
    assert stages[0] == "resolve" and "generate" in stages and events[-1][0] == "answer"
    answer = events[-1][1]
    assert "France" in answer["standalone_question"] and answer["ok"], answer
    assert answer["usage"]["model_calls"] >= 2


def test_a_clarification_is_a_typed_answer_and_the_reply_continues_it(tmp_path: Path) -> None:
    from tests.test_compiled import Scripted

    request = json.dumps({"select": ["founded_year"], "where": [{"field": "company", "value": "Marlow Reinsurance plc"}]})
    llm = Scripted(request)
    setup = {"state_url": f"sqlite:///{tmp_path / 'state.sqlite'}", "auth": False,
             "databases": {"demo": {"url": None, "strategy": "compiled"}}}
    with live_server(setup, llm=llm) as (url, _):
        asked = httpx.post(f"{url}/v1/ask", json={"database": "demo", "question": "When was Reinsurance founded?"},
                           timeout=300).json()
        assert asked["kind"] == "clarification" and asked["ok"] and asked["sql"] is None
        options = asked["clarification"]["options"]
        assert [o["label"] for o in options] == ["Banksia Reinsurance Ltd", "Marlow Reinsurance plc"]
        assert not llm.requests
        reply = httpx.post(f"{url}/v1/ask", json={"database": "demo", "question": "Marlow Reinsurance plc",
                                                  "conversation_id": asked["conversation_id"]}, timeout=300).json()
        assert reply["kind"] == "answer" and reply["ok"] and reply["rows"], reply
        assert reply["standalone_question"] == "When was Marlow Reinsurance plc founded?"
        assert reply["grounds"]["conversation"]["chosen"] == "Marlow Reinsurance plc"
        outside = httpx.post(f"{url}/v1/ask", json={"database": "demo",
                                                    "question": "What will Kitano Mobility K.K.'s revenue be in 2027?"},
                             timeout=300).json()
        assert outside["kind"] == "out_of_scope" and not outside["ok"] and "ends in" in outside["error"]


def test_a_state_store_made_before_clarifications_gets_the_column(tmp_path: Path) -> None:
    import sqlalchemy as sa

    from groundsql.server.state import StateStore

    path = tmp_path / "old.sqlite"
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:  # the turns table as it was
        conn.execute(sa.text("CREATE TABLE turns (id VARCHAR(36) PRIMARY KEY, conversation_id VARCHAR(36) NOT NULL, "
                             "position INTEGER NOT NULL, question TEXT NOT NULL, standalone TEXT NOT NULL, sql TEXT, "
                             "columns TEXT NOT NULL, row_count INTEGER NOT NULL, error TEXT, created_at DATETIME NOT NULL)"))
    store = StateStore(f"sqlite:///{path}")
    conversation = store.start_conversation("demo", None)
    from groundsql.conversation import Turn

    answer = store.add_turn(conversation, Turn("q", "q", "SELECT 1"), None)
    assert store.history(conversation)[0].clarification is None and not store.turn(answer)["truncated"]
    assert {"clarification", "truncated"} <= {c["name"] for c in sa.inspect(store.engine).get_columns("turns")}
