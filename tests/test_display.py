"""What the command line shows is literal text: values, messages and paths are never markup,
and control characters are made visible, not obeyed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import groundsql.api
from groundsql.cli import _result_table, app
from groundsql.display import show, visible
from tests.test_end_to_end import _cli
from tests.test_llm import Scripted

HOSTILE = ["[/bold]", "[red]x[/red]", "\x1b[31mred\x1b[0m", "a\u202eb", "tab\there"]


def test_control_characters_are_shown_not_obeyed() -> None:
    assert visible("\x1b[31mred") == "\\x1b[31mred"
    assert visible("bell\x07 del\x7f csi\x9b") == "bell\\x07 del\\x7f csi\\x9b"
    assert visible("right-to-left \u202e") == "right-to-left \\u202e"
    assert visible("line\nnext\ttab") == "line\nnext\ttab"  # layout characters stay


def test_a_result_of_hostile_values_is_printed_as_it_is() -> None:
    console = Console(record=True, width=200, color_system=None)
    console.print(_result_table(("[b]name[/b]",), tuple((v,) for v in HOSTILE) + ((None,),)))
    shown = console.export_text()
    for text in ["[b]name[/b]", "[/bold]", "[red]x[/red]", "\\x1b[31mred\\x1b[0m", "a\\u202eb", "NULL"]:
        assert text in shown, shown
    assert "\x1b" not in shown


def test_messages_are_literal() -> None:
    console = Console(record=True, width=200, color_system=None)
    show(console, ("error: ", "red"), "no SQLite database at /tmp/[bold]x[/bold]/db.sqlite")
    assert "error: no SQLite database at /tmp/[bold]x[/bold]/db.sqlite" in console.export_text()


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (v TEXT)")
        db.executemany("INSERT INTO t VALUES (?)", [(v,) for v in HOSTILE])
    return path


def test_ask_shows_a_hostile_answer_instead_of_losing_it(hostile_db: Path, monkeypatch) -> None:
    monkeypatch.setattr(groundsql.api, "build_llm", lambda _: Scripted("```sql\nSELECT v FROM t\n```"))
    done = CliRunner().invoke(app, ["ask", "--db", str(hostile_db), "--strategy", "zero-shot", "--no-cache", "What is in t?"])
    assert done.exit_code == 0, done.output
    assert "[/bold]" in done.output and "[red]x[/red]" in done.output and "\\x1b[31mred" in done.output
    assert "\x1b[31m" not in done.output


def test_a_path_with_markup_is_named_as_it_is(tmp_path: Path) -> None:
    done = _cli("ask", "--db", str(tmp_path / "[bold]x[/bold]" / "no.sqlite"), "hi",
                env={"GROUNDSQL_HOME": str(tmp_path / "home")})
    assert done.returncode != 0 and "[bold]x[/bold]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_refused_query_is_not_printed_as_an_answer(hostile_db: Path, monkeypatch) -> None:
    refused = "```sql\nDELETE FROM t\n```"
    monkeypatch.setattr(groundsql.api, "build_llm", lambda _: Scripted(refused, refused))
    done = CliRunner().invoke(
        app, ["ask", "--db", str(hostile_db), "--strategy", "zero-shot", "--no-cache", "--trace", "Empty t"])
    assert done.exit_code == 1
    assert done.stdout == ""  # standard output carries answers only
    assert "Last query tried (not an answer): DELETE FROM t" in done.stderr
    assert "No answer:" in done.stderr and "refused DELETE" in done.stderr
    assert "generate" in done.stderr and "reflect" in done.stderr  # --trace on a failed answer
