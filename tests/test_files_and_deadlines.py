"""Disks that say no and questions that run out of time: a clear sentence, nothing lost.

A read-only folder is one under /sys (not writable even by root); a full disk is /dev/full.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path

import pytest

from groundsql.config import DatabaseConfig, LLMConfig, Settings
from groundsql.db import Database
from groundsql.deadline import in_context, question_deadline
from groundsql.errors import ConfigError, GroundsqlError, LLMError, QuestionTimeoutError
from groundsql.files import writable_folder, write_text_atomic
from groundsql.llm.base import Completion
from groundsql.llm.store import CachedLLM, ResponseStore
from tests.conftest import ok_answer, spider_db
from tests.test_end_to_end import _cli
from tests.test_llm import REQUEST, Scripted

READ_ONLY = Path("/sys/groundsql-test")


def _read_only() -> Path:
    try:
        READ_ONLY.mkdir()
    except OSError:
        return READ_ONLY
    READ_ONLY.rmdir()
    pytest.skip("/sys takes folders here; no read-only place to test with")


def _file(tmp_path: Path) -> Path:
    """A file where a folder is expected (GROUNDSQL_HOME=a file)."""
    path = tmp_path / "not-a-folder"
    path.write_text("mine")
    return path


def _one_sentence(done, *expected: str) -> None:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert all(text in lines[0] for text in expected), done.stderr


# -- caches: a warning, never a lost answer ------------------------------------------------------


def test_an_answer_cache_that_cannot_be_written_costs_a_warning_not_the_answer(tmp_path: Path, caplog) -> None:
    cached = CachedLLM(Scripted("SELECT 1", "SELECT 2"), ResponseStore(_file(tmp_path) / "cache", cache=True))
    assert cached.complete(REQUEST).text == "SELECT 1"
    assert "the answer cache is not kept" in caplog.text and "Not a directory" in caplog.text


def test_a_full_disk_under_the_answer_cache_costs_a_warning(tmp_path: Path, monkeypatch, caplog) -> None:
    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("groundsql.files.tempfile.mkstemp", full)
    monkeypatch.setattr("groundsql.files._warned", set())
    cached = CachedLLM(Scripted("SELECT 1"), ResponseStore(tmp_path, cache=True))
    assert cached.complete(REQUEST).text == "SELECT 1"
    assert "No space left on device" in caplog.text
    # Recordings for replay are not an optimisation: there the same failure is an error.
    with pytest.raises(OSError):
        ResponseStore(tmp_path).put("k" * 64, REQUEST, Completion(text="SELECT 1", model="m"))


def test_an_ask_whose_data_folder_is_a_file_still_answers(tmp_path: Path, http_server) -> None:
    url, handler = http_server
    handler.script.append((200, ok_answer("SELECT count(*) FROM singer"), 0.0))
    done = _cli("ask", "--backend", "openai", "--base-url", url, "--model", "m", "--json", "--strategy", "zero-shot",
                "--db", str(spider_db("concert_singer")), "How many singers?",
                env={"GROUNDSQL_HOME": str(_file(tmp_path))})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == [[6]]
    assert "warning: the answer cache is not kept" in done.stderr and "Traceback" not in done.stderr


def test_a_test_suite_is_built_when_its_cache_cannot_be(tmp_path: Path, monkeypatch, caplog) -> None:
    from groundsql.testsuite.suite import build_suite, run_on_suite

    monkeypatch.setenv("GROUNDSQL_HOME", str(_file(tmp_path)))
    suite = build_suite(spider_db("concert_singer"), "SELECT count(*) FROM singer WHERE age > 40")
    assert suite.paths and all(p.is_file() for p in suite.paths)
    assert not str(suite.directory).startswith(str(tmp_path))
    assert run_on_suite(suite, "SELECT count(*) FROM singer WHERE age > 40")
    assert "the test-suite cache is not kept" in caplog.text


# -- folders and files the user names ------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["schema"],  # the demo database is built under the data folder
    ["ask", "--db", "DB", "How many singers?"],  # the local model's weights are joined there
    ["keys", "list"],  # the service's state lives there
])
def test_a_data_folder_that_is_a_file_is_one_sentence(tmp_path: Path, command: list[str]) -> None:
    args = [str(spider_db("concert_singer")) if a == "DB" else a for a in command]
    home = _file(tmp_path)
    _one_sentence(_cli(*args, env={"GROUNDSQL_HOME": str(home)}), "cannot write", str(home), "Not a directory")


def test_a_read_only_data_folder_is_one_sentence() -> None:
    home = _read_only()
    _one_sentence(_cli("schema", env={"GROUNDSQL_HOME": str(home)}),
                  f"cannot write the demo database in {home}", "set GROUNDSQL_HOME")


@pytest.mark.parametrize("command", [
    ["eval", "src/groundsql/demo/eval.jsonl", "--config", "gold", "--limit", "2", "--out", "OUT"],
    ["init", "--db", "DB", "--out", "OUT"],
    ["demo", "--out", "OUT/demo.sqlite"],
])
def test_a_read_only_out_is_one_sentence(command: list[str]) -> None:
    out = _read_only() / "out"
    args = [str(spider_db("concert_singer")) if a == "DB" else a.replace("OUT", str(out)) for a in command]
    _one_sentence(_cli(*args, env={"COLUMNS": "300"}), "cannot write", str(out.parent))


def test_a_full_disk_stops_an_eval_with_what_to_do(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.jsonl").symlink_to("/dev/full")
    done = _cli("eval", "src/groundsql/demo/eval.jsonl", "--config", "gold", "--limit", "2", "--out", str(out))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "No space left on device" in done.stderr and "the same command resumes" in done.stderr


def test_reports_and_drafts_are_written_whole(tmp_path: Path, monkeypatch) -> None:
    from groundsql.evaluation.report import write_reports
    from groundsql.packs.draft import draft_pack

    (tmp_path / "report.md").write_text("the last good report")

    def fail_rename(*_args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("groundsql.files.os.replace", fail_rename)
    with pytest.raises(GroundsqlError, match="No space left on device.*the results are kept"):
        write_reports([], tmp_path)
    assert (tmp_path / "report.md").read_text() == "the last good report"  # not half a new one
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]  # no debris
    with Database(f"sqlite:///{spider_db('concert_singer')}") as db, \
            pytest.raises(GroundsqlError, match="cannot write .*pack.yaml: No space left on device"):
        draft_pack(db, tmp_path / "pack")


def test_a_drafted_pack_never_replaces_a_bank(tmp_path: Path) -> None:
    from groundsql.packs.draft import draft_pack

    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "bank.jsonl").write_text('{"question": "mine", "sql": "SELECT 1"}\n')
    with Database(f"sqlite:///{spider_db('concert_singer')}") as db:
        summary = draft_pack(db, pack)
        assert pack / "bank.jsonl" in summary.kept and (pack / "pack.yaml").is_file()
        with pytest.raises(ConfigError, match="already exists; use --force"):
            draft_pack(db, pack)
        draft_pack(db, pack, force=True)
    assert "mine" in (pack / "bank.jsonl").read_text()


def test_writable_folder_names_what_it_was_for(tmp_path: Path) -> None:
    assert writable_folder(tmp_path / "a" / "b", "x") == tmp_path / "a" / "b"
    with pytest.raises(ConfigError, match=r"cannot write the results \(--out\) in .*: Not a directory; try"):
        writable_folder(_file(tmp_path) / "run", "the results (--out)", "try")
    write_text_atomic(tmp_path / "t.txt", "whole")
    assert (tmp_path / "t.txt").read_text() == "whole"


# -- one deadline per question -------------------------------------------------------------------


class Slow(Scripted):
    def _complete(self, request):
        time.sleep(0.3)
        return super()._complete(request)


def test_a_question_deadline_bounds_every_call_and_retry() -> None:
    llm = Slow(*["SELECT 1"] * 20)
    start = time.monotonic()
    with question_deadline(1.0), pytest.raises(QuestionTimeoutError, match="not answered within its 1 s"):
        for _ in range(20):
            llm.complete(REQUEST)
    assert time.monotonic() - start < 1.5 and llm.attempts < 5
    assert llm.complete(REQUEST).text == "SELECT 1"  # outside the question, no bound


def test_the_earlier_deadline_wins_and_threads_inherit_it() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from groundsql.deadline import question_left_s

    with question_deadline(0.5), question_deadline(60):
        left = question_left_s()
        assert left is not None and left <= 0.5
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(question_left_s).result() is None  # a bare thread knows nothing
            inherited = pool.submit(in_context(question_left_s)).result()
            assert inherited is not None and inherited <= 0.5


def test_a_query_gets_no_more_than_the_question_has_left() -> None:
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    with Database(f"sqlite:///{spider_db('concert_singer')}", DatabaseConfig(timeout_s=30)) as db:
        start = time.monotonic()
        with question_deadline(1.0), pytest.raises(GroundsqlError):
            db.execute(slow)
        assert time.monotonic() - start < 5  # the query's own 30 s would have run on


def test_a_session_question_stops_at_its_deadline() -> None:
    from groundsql.api import Session

    settings = Settings(llm=LLMConfig(question_timeout_s=0.5))
    with Database(f"sqlite:///{spider_db('concert_singer')}") as db:
        session = Session(db, Slow(*["```sql\nSELECT nope FROM singer\n```"] * 20), settings)
        start = time.monotonic()
        with pytest.raises(QuestionTimeoutError):
            session.ask("How many singers?", strategy="self-consistency")
        assert time.monotonic() - start < 2.0


def test_ask_timeout_bounds_the_whole_question(http_server) -> None:
    url, handler = http_server
    handler.script += [(200, ok_answer("SELECT 1"), 5.0)] * 3  # each attempt would take 5 s
    start = time.monotonic()
    done = _cli("ask", "--backend", "openai", "--base-url", url, "--model", "m", "--timeout", "1", "--strategy", "zero-shot",
                "--no-cache", "--db", str(spider_db("concert_singer")), "How many singers?")
    _one_sentence(done, "within")
    assert time.monotonic() - start < 5 + 4  # one second of asking, the rest is start-up
    assert len(handler.seen) == 1


def test_llm_errors_are_not_question_timeouts() -> None:
    assert not issubclass(QuestionTimeoutError, LLMError)  # a pool's per-request catch lets it through
