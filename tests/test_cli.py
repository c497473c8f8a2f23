"""The command line on bad input: one clear sentence and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import spider_db
from tests.test_end_to_end import _cli


@pytest.mark.parametrize(
    "args, message",
    [
        (["ask", "--db", "sqlite:////nonexistent/x.sqlite", "hi"], "no SQLite database"),
        (["ask", "--db", "oracle://u@h/db", "hi"], "no read-only support"),
        (["ask", "--model", "gpt-17", "--db", "DB", "How many singers?"], "unknown model"),
        (["ask", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--db", "DB", "hi"], "cannot reach"),
        (["models", "pull", "nope"], "unknown model"),
        (["ask", "--backend", "nope", "--db", "DB", "hi"], "error: backend: Input should be 'local', 'openai' or 'replay'"),
        (["ask", "--model", "/nonexistent/model.gguf", "--db", "DB", "hi"], "no model file at /nonexistent/model.gguf"),
        (["ask", "--db", "DB", "caf\udce9"], "the question is not UTF-8 text (byte 0xe9 at character 4)"),
        (["ask", "--timeout", "0", "--db", "DB", "hi"], "question_timeout_s: Input should be greater than 0"),
        (["schema", "--db", "postgresql://u:p@ss@127.0.0.1/db"], "must be percent-encoded: @ as %40"),
        (["ask", "--strategy", "few-shot", "--bank", "/nonexistent/bank.jsonl", "--db", "DB", "hi"],
         "cannot read /nonexistent/bank.jsonl: No such file or directory"),
        (["warm", "--db", "DB", "--model", "qwen2.5-coder-0.5b"], "needs a domain pack for this database: --pack DIR"),
    ],
)
def test_errors_are_one_sentence(args: list[str], message: str) -> None:
    db = str(spider_db("concert_singer"))
    done = _cli(*[db if a == "DB" else a for a in args], env={"GROUNDSQL_HOME": "/tmp/groundsql-cli-test"})
    assert done.returncode != 0
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1  # one sentence, not a dump


def test_schema_command_prints_m_schema_and_ddl() -> None:
    db = str(spider_db("concert_singer"))
    m = _cli("schema", "--db", db)
    assert m.returncode == 0 and "# Table: singer" in m.stdout and "【Foreign keys】" in m.stdout
    d = _cli("schema", "--db", db, "--format", "ddl", "--no-examples")
    assert d.returncode == 0 and "CREATE TABLE singer (" in d.stdout and "e.g." not in d.stdout


def test_schema_command_loads_no_model(monkeypatch) -> None:
    from typer.testing import CliRunner

    import groundsql.api
    from groundsql.cli import app

    def no_model(*_):
        raise AssertionError("the schema command loaded a model")

    monkeypatch.setattr(groundsql.api, "build_llm", no_model)
    done = CliRunner().invoke(app, ["schema", "--db", str(spider_db("concert_singer"))])
    assert done.exit_code == 0 and "# Table: singer" in done.output, done.output


def test_models_list() -> None:
    done = _cli("models", "list")
    assert done.returncode == 0 and "qwen2.5-coder-0.5b" in done.stdout


def test_eval_command_writes_three_reports_and_resumes(tmp_path: Path) -> None:
    db = spider_db("concert_singer")
    bench = tmp_path / "mini.jsonl"
    bench.write_text(
        "\n".join(
            json.dumps({"db": str(db), "question": q, "gold_sql": sql, "category": cat})
            for q, sql, cat in [
                ("How many singers?", "SELECT count(*) FROM singer", "easy"),
                ("Singer names by age", "SELECT name FROM singer ORDER BY age", "medium"),
                ("Broken gold", "SELECT nope FROM singer", "easy"),
            ]
        )
    )
    out = tmp_path / "run"
    first = _cli("eval", str(bench), "--config", "gold", "--out", str(out))
    assert first.returncode == 0, first.stderr
    shown = {p.name for p in out.iterdir() if not p.name.startswith(".")}  # .lock: one run at a time
    assert shown == {"results.jsonl", "report.json", "report.md", "report.html"}
    assert "| gold | 2 |" in first.stdout  # two scored items; the broken gold is listed apart
    assert "no such column" in first.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["configs"]["gold"]["ex"] == 100.0
    again = _cli("eval", str(bench), "--config", "gold", "--out", str(out))
    assert again.returncode == 0 and len((out / "results.jsonl").read_text().splitlines()) == 3


def test_ask_help_names_every_strategy() -> None:
    from groundsql.strategies import STRATEGIES

    done = _cli("ask", "--help", env={"COLUMNS": "200"})
    assert done.returncode == 0
    assert all(name in done.stdout for name in STRATEGIES), done.stdout


def test_grounds_list_the_candidates_voted_on(capsys) -> None:
    from groundsql import cli

    cli._print_grounds({"candidates": [{"sql": "SELECT 1", "votes": 2}, {"sql": "SELECT 2", "votes": 1, "score": 0.4}]})
    printed = capsys.readouterr().out
    assert "candidate (2 votes): SELECT 1" in printed and "candidate (1 votes, score 0.4): SELECT 2" in printed
    # Grounds with nothing to show print no empty heading.
    cli._print_grounds({"schema": {"tables": ["singer"]}})
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("admin, why", [
    pytest.param("postgres_admin_url", "may write (it is a superuser)", marks=pytest.mark.postgres),
    pytest.param("mysql_admin_url", "may write (it has the SUPER privilege", marks=pytest.mark.mysql),
])
def test_a_privileged_role_is_refused_unless_allowed(request, admin: str, why: str) -> None:
    url = request.getfixturevalue(admin)
    refused = _cli("schema", "--db", url)
    assert refused.returncode != 0 and why in refused.stderr
    assert "Traceback" not in refused.stderr
    allowed = _cli("schema", "--db", url, "--allow-privileged-role")
    assert allowed.returncode == 0 and "# Table: city" in allowed.stdout


# While importing the command line's modules (Python's own start-up, before any code of ours,
# cannot be covered), starting, working.
@pytest.mark.parametrize("after_s", [0.6, 2.0, 5.0])
def test_ctrl_c_is_said_and_obeyed(tmp_path: Path, after_s: float) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import shared_benchmark

    command = [sys.executable, "-m", "groundsql", "eval", str(shared_benchmark("spider_dev")), "--config", "gold",
               "--out", str(tmp_path / "out")]
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after_s)  # starting, or busy with the worker threads (the whole run takes longer)
    running.send_signal(signal.SIGINT)
    _, stderr = running.communicate(timeout=60)
    assert running.returncode == 130 and "interrupted" in stderr, stderr
    assert "Traceback" not in stderr


def test_demo_out_never_replaces_a_file_without_force(tmp_path: Path) -> None:
    mine = tmp_path / "mine.sqlite"
    mine.write_bytes(b"my own data")
    done = _cli("demo", "--out", str(mine))
    assert done.returncode != 0 and "exists; add --force to replace it" in done.stderr
    assert mine.read_bytes() == b"my own data"
    assert _cli("demo", "--out", str(mine), "--force").returncode == 0
    assert mine.read_bytes().startswith(b"SQLite format 3")


# Every command with arguments that are wrong in the ways people get them wrong.
BAD_ARGUMENTS = [
    [], ["nope"], ["ask"], ["ask", "--db", "nope.sqlite", "hi"], ["ask", "--db", "", "hi"], ["ask", "--db", "DB", ""],
    ["ask", "--strategy", "nope", "--db", "DB", "hi"], ["ask", "--timeout", "soon", "--db", "DB", "hi"],
    ["ask", "--pack", "/nonexistent", "--strategy", "grounded", "--db", "DB", "hi"],
    ["ask", "--pack", "DB", "--strategy", "grounded", "--db", "DB", "hi"],
    ["schema", "--format", "xml", "--db", "DB"], ["schema", "--db", "/etc/passwd"], ["schema", "--db", "/tmp"],
    ["schema", "--db", "postgresql+psycopg2://u@127.0.0.1:1/db"], ["schema", "--db", "mysql://u@127.0.0.1:1/db"],
    ["demo", "--out", "/tmp"], ["init"], ["init", "--db", "DB", "--out", "DB"],
    ["eval"], ["eval", "/nonexistent", "--config", "gold"], ["eval", "DB", "--config", "gold"],
    ["eval", "src/groundsql/demo/eval.jsonl", "--config", "nope"],
    ["eval", "src/groundsql/demo/eval.jsonl", "--config", "gold", "--limit", "-1"],
    ["eval", "src/groundsql/demo/eval.jsonl", "--config", "gold", "--workers", "0"],
    ["eval", "src/groundsql/demo/eval.jsonl", "--config", "zero-shot:k=x"],
    ["eval", "src/groundsql/demo/eval.jsonl", "--config", "gold", "--bank", "/nonexistent"],
    ["testsuite", "--sql", "SELECT nope", "--out", "TMP", "--db", "DB"],
    ["testsuite", "--sql", "DROP TABLE singer", "--out", "TMP", "--db", "DB"],
    ["testsuite", "--sql", "SELECT 1", "--out", "DB", "--db", "DB"],
    ["serve", "--config", "/nonexistent.yaml"], ["serve", "--config", "DB"], ["serve", "--port", "99999"],
    ["serve", "--config", "CONFIG"], ["mcp", "--transport", "nope"], ["mcp", "--config", "/nonexistent"],
    ["models", "frob"], ["models", "pull"], ["models", "pull", "nope"],
    ["keys", "add"], ["keys", "remove", "nobody"], ["keys", "list", "--config", "/nonexistent"],
]


def test_no_command_shows_a_traceback_for_bad_arguments(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    config = tmp_path / "serve.yaml"
    config.write_text("databases:\n  shop:\n    url: sqlite:///nowhere.sqlite\n  ports: 1\n")
    places = {"DB": str(spider_db("concert_singer")), "CONFIG": str(config)}

    def run(i: int, args: list[str]):
        args = [places.get(a, str(tmp_path / f"out{i}") if a == "TMP" else a) for a in args]
        return args, _cli(*args, env={"GROUNDSQL_HOME": str(tmp_path / "home"), "COLUMNS": "200"})

    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(run, range(len(BAD_ARGUMENTS)), BAD_ARGUMENTS))
    failures = [f"{args}: exit {d.returncode}\n{d.stderr}" for args, d in done
                if d.returncode == 0 or "Traceback" in d.stderr or not (d.stderr + d.stdout).strip()]
    assert not failures, "\n\n".join(failures)


def test_schema_command_shows_a_values_escape_sequences_instead_of_obeying_them(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "hostile.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (name TEXT)")
        conn.execute("INSERT INTO t VALUES (?)", ("red\x1b[31malert\x07",))
    done = _cli("schema", "--db", str(path))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "\\x1b[31malert\\x07" in done.stdout


def _ask_demo(monkeypatch, *args: str, replies: tuple[str, ...], interactive: bool = False, reply: str = ""):
    from typer.testing import CliRunner

    import groundsql.api
    import groundsql.cli
    from tests.test_compiled import Scripted

    llm = Scripted(*replies)
    monkeypatch.setattr(groundsql.api, "build_llm", lambda *_: llm)
    monkeypatch.setattr(groundsql.cli, "_interactive", lambda: interactive)
    done = CliRunner().invoke(groundsql.cli.app, ["ask", *args], input=reply)
    return done, llm


def test_ask_shows_the_question_asked_back_and_json_lists_its_options(monkeypatch) -> None:
    done, llm = _ask_demo(monkeypatch, "When was Reinsurance founded?", replies=("not used",))
    assert done.exit_code == 0 and "Asked back: Which company do you mean by 'Reinsurance'?" in done.output
    assert "1. Banksia Reinsurance Ltd" in done.output and "2. Marlow Reinsurance plc" in done.output
    assert not llm.requests
    done, _ = _ask_demo(monkeypatch, "--json", "When was Reinsurance founded?", replies=("not used",))
    answer = json.loads(done.stdout)
    assert answer["ok"] and answer["sql"] is None
    options = answer["clarification"]["options"]
    assert [o["question"] for o in options] == ["When was Banksia Reinsurance Ltd founded?",
                                                "When was Marlow Reinsurance plc founded?"]


def test_ask_in_a_terminal_takes_the_reply_and_answers_it(monkeypatch) -> None:
    request = json.dumps({"select": ["founded_year"], "where": [{"field": "company", "value": "Marlow Reinsurance plc"}]})
    done, llm = _ask_demo(monkeypatch, "When was Reinsurance founded?", replies=(request,), interactive=True,
                          reply="2\n")
    assert done.exit_code == 0, done.output
    from groundsql.api import demo_database_url
    from groundsql.db import Database

    with Database(demo_database_url()) as db:
        (year,), = db.execute("SELECT founded_year FROM company WHERE company_name = 'Marlow Reinsurance plc'").rows
    assert str(year) in done.output.split("Your choice")[-1]
    assert len(llm.requests) == 1 and "Marlow Reinsurance plc" in llm.requests[0].messages[-1].content
