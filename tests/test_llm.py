"""The LLM interface: retries, accounting, the disk cache, replay, the HTTP backend, weights."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from groundsql.config import LLMConfig
from groundsql.errors import LLMError, ModelProvisioningError
from groundsql.llm import build_llm, chat
from groundsql.llm.base import LLM, ChatRequest, Completion
from groundsql.llm.models import ModelSpec, _write_verified, provision_from_parts, resolve_gguf
from groundsql.llm.openai_http import OpenAICompatibleLLM
from groundsql.llm.store import CachedLLM, ReplayLLM, ResponseStore
from tests.conftest import ok_answer as _ok


class Scripted(LLM):
    """Answers from a list; an Exception in the list is raised instead. Counts attempts."""

    def __init__(self, *answers: str | Exception, retries: int = 2) -> None:
        self.answers = list(answers)
        self.attempts = 0
        self.requests: list[ChatRequest] = []  # as asked, for tests of what a prompt shows
        self.model_id = "scripted"
        self.retries = retries
        self.retry_backoff_s = 0.0

    def _complete(self, request: ChatRequest) -> Completion:
        self.attempts += 1
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return Completion(text=answer, model=self.model_id, prompt_tokens=7, completion_tokens=3)


REQUEST = chat("You write SQL.", "Count the singers.")


def test_retries_are_bounded_and_errors_are_clear() -> None:
    flaky = Scripted(LLMError("connection reset"), "", "SELECT 1")
    assert flaky.complete(REQUEST).text == "SELECT 1"
    assert flaky.attempts == 3

    down = Scripted(*[LLMError("connection refused")] * 5)
    with pytest.raises(LLMError, match="connection refused.*gave up after 3 attempts"):
        down.complete(REQUEST)
    assert down.attempts == 3

    fatal = Scripted(LLMError("bad API key", retryable=False), "SELECT 1")
    with pytest.raises(LLMError, match="bad API key"):
        fatal.complete(REQUEST)
    assert fatal.attempts == 1


def test_disk_cache_is_keyed_by_the_full_request(tmp_path: Path) -> None:
    inner = Scripted("SELECT 1", "SELECT 2")
    cached = CachedLLM(inner, ResponseStore(tmp_path))
    first = cached.complete(REQUEST)
    again = cached.complete(REQUEST)
    assert (first.text, first.from_cache) == ("SELECT 1", False)
    assert (again.text, again.from_cache, again.prompt_tokens) == ("SELECT 1", True, 7)
    hotter = cached.complete(REQUEST.model_copy(update={"temperature": 0.7}))
    assert hotter.text == "SELECT 2" and inner.attempts == 2
    # A damaged cache file is a miss, not a crash.
    for path in tmp_path.rglob("*.json"):
        path.write_text("{not json")
    inner.answers.append("SELECT 3")
    assert cached.complete(REQUEST).text == "SELECT 3"


def test_independent_requests_are_answered_each_in_its_place(tmp_path: Path) -> None:
    hot = [REQUEST.model_copy(update={"temperature": 0.8, "seed": i}) for i in range(3)]
    inner = Scripted("SELECT 1", LLMError("bad API key", retryable=False), "SELECT 3", retries=0)
    answers = inner.complete_all(hot)
    assert [getattr(a, "text", None) for a in answers] == ["SELECT 1", None, "SELECT 3"]
    assert isinstance(answers[1], LLMError)  # one failure does not lose the others

    # Through the cache: stored answers are served, only the misses reach the model, together.
    batches: list[int] = []

    class Counting(Scripted):
        def complete_all(self, requests):
            batches.append(len(requests))
            return super().complete_all(requests)

    cached = CachedLLM(Counting("SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4"), ResponseStore(tmp_path))
    cached.complete(hot[1])
    answers = cached.complete_all(hot)
    assert [a.text for a in answers] == ["SELECT 2", "SELECT 1", "SELECT 3"]
    assert [a.from_cache for a in answers] == [False, True, False] and batches == [2]


def test_replay_refuses_unknown_requests_and_records_on_demand(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path)
    with pytest.raises(LLMError, match="no recording"):
        ReplayLLM(store, "scripted").complete(REQUEST)
    recorder = ReplayLLM(store, "scripted", record_from=Scripted("SELECT 42"))
    assert recorder.complete(REQUEST).text == "SELECT 42"
    replayed = ReplayLLM(store, "scripted").complete(REQUEST)
    assert replayed.text == "SELECT 42" and replayed.from_cache
    recording = json.loads(next(tmp_path.rglob("*.json")).read_text())
    assert recording["request"]["messages"][1]["content"] == "Count the singers."


# -- OpenAI-compatible HTTP backend against a real local HTTP server ---------------------------


def test_http_backend_answers_and_accounts(http_server) -> None:
    url, handler = http_server
    handler.script += [(500, "overloaded", 0), (200, _ok("```sql\nSELECT 1\n```"), 0)]
    llm = OpenAICompatibleLLM("my-model", base_url=url, api_key="sk-test", retries=1)
    llm.retry_backoff_s = 0
    completion = llm.complete(REQUEST)
    assert completion.text.startswith("```sql")
    assert (completion.prompt_tokens, completion.completion_tokens) == (120, 9)
    assert completion.latency_s > 0
    assert handler.seen[-1]["path"] == "/v1/chat/completions"
    assert handler.seen[-1]["body"]["model"] == "my-model"
    assert handler.seen[-1]["auth"] == "Bearer sk-test"


@pytest.mark.parametrize(
    "script, message",
    [
        ([(200, "<html>gateway</html>", 0)] * 2, "not JSON"),
        ([(200, json.dumps({"choices": []}), 0)] * 2, "without a message"),
        ([(200, json.dumps({"error": {"message": "model exploded"}}), 0)] * 2, "model exploded"),
        ([(200, _ok("late"), 2.0)] * 2, "timed out"),
    ],
)
def test_http_backend_garbage_and_timeouts_fail_clearly(http_server, script, message) -> None:
    url, handler = http_server
    handler.script += script
    llm = OpenAICompatibleLLM("m", base_url=url, timeout_s=0.5, retries=1)
    llm.retry_backoff_s = 0
    with pytest.raises(LLMError, match=message):
        llm.complete(REQUEST)


def test_http_backend_has_one_deadline_for_all_attempts(http_server) -> None:
    url, handler = http_server
    handler.script += [(200, _ok("late"), 3.0)] * 3
    llm = OpenAICompatibleLLM("m", base_url=url, timeout_s=1.0, retries=2)
    llm.retry_backoff_s = 0
    start = time.perf_counter()
    with pytest.raises(LLMError, match="gave no answer within 1 s"):
        llm.complete(REQUEST)
    assert time.perf_counter() - start < 2.5  # not 3 attempts of 1 s each (nor of 300 s)
    assert len(handler.seen) == 1


class _Trickle(BaseHTTPRequestHandler):
    """Answers one byte at a time, forever: a read timeout alone never fires."""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            for _ in range(100):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.1)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: object) -> None:
        pass


def test_http_backend_stops_a_trickling_answer_at_its_deadline() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        llm = OpenAICompatibleLLM("m", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
                                  timeout_s=1.0, retries=2)
        start = time.perf_counter()
        with pytest.raises(LLMError, match="did not finish its answer within 1 s"):
            llm.complete(REQUEST)
        assert time.perf_counter() - start < 2.5
    finally:
        server.shutdown()


def test_http_backend_auth_errors_are_not_retried(http_server) -> None:
    url, handler = http_server
    handler.script += [(401, '{"error": "bad key"}', 0)]
    with pytest.raises(LLMError, match="401"):
        OpenAICompatibleLLM("m", base_url=url, retries=3).complete(REQUEST)
    assert len(handler.seen) == 1


def test_http_backend_down_fails_fast() -> None:
    llm = OpenAICompatibleLLM("m", base_url="http://127.0.0.1:9/v1", timeout_s=2, retries=1)
    llm.retry_backoff_s = 0
    start = time.perf_counter()
    with pytest.raises(LLMError, match="cannot reach"):
        llm.complete(REQUEST)
    assert time.perf_counter() - start < 10


def test_build_llm_wraps_the_cache(tmp_path: Path, http_server) -> None:
    url, handler = http_server
    handler.script += [(200, _ok("SELECT 7"), 0)]
    config = LLMConfig(backend="openai", model="m", base_url=url, cache_dir=tmp_path)
    llm = build_llm(config)
    assert llm.complete(REQUEST).text == "SELECT 7"
    assert build_llm(config).complete(REQUEST).from_cache  # a new process would hit it too
    assert len(handler.seen) == 1


# -- weights provisioning ----------------------------------------------------------------------


def _fake_parts(tmp_path: Path, monkeypatch, chunks: list[bytes]) -> ModelSpec:
    import hashlib

    for number, chunk in enumerate(chunks, 1):
        package = tmp_path / "site" / f"fake_weights_part{number}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{number:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(chunks)
    return ModelSpec(
        name="fake",
        filename="fake.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        part_module="fake_weights_part",
        n_parts=len(chunks),
        extra="model-fake",
        hub_repo="none/none",
    )


def test_parts_are_joined_in_order_and_verified(tmp_path: Path, monkeypatch) -> None:
    spec = _fake_parts(tmp_path, monkeypatch, [b"GGUF", b"-second", b"-third"])
    target = tmp_path / "models" / "fake.gguf"
    assert provision_from_parts(spec, target).read_bytes() == b"GGUF-second-third"


def test_hash_mismatch_is_refused_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    spec = _fake_parts(tmp_path, monkeypatch, [b"GGUF", b"-tampered"])
    bad = ModelSpec(**{**spec.__dict__, "sha256": "0" * 64})
    target = tmp_path / "models" / "fake.gguf"
    with pytest.raises(ModelProvisioningError, match="does not match"):
        provision_from_parts(bad, target)
    assert list((tmp_path / "models").iterdir()) == []


def test_missing_parts_and_unknown_names_explain_the_fix(tmp_path: Path) -> None:
    spec = ModelSpec("ghost", "ghost.gguf", 1, "0" * 64, "no_such_package_part", 2, "model-ghost", "x/y")
    with pytest.raises(ModelProvisioningError, match=r"pip install 'groundsql\[model-ghost\]'"):
        provision_from_parts(spec, tmp_path / "ghost.gguf")
    with pytest.raises(ModelProvisioningError, match="unknown model"):
        resolve_gguf("gpt-17")
    any_gguf = tmp_path / "mine.gguf"
    any_gguf.write_bytes(b"GGUF")
    assert resolve_gguf(str(any_gguf)) == any_gguf


def test_write_verified_checks_streamed_chunks(tmp_path: Path, monkeypatch) -> None:
    spec = _fake_parts(tmp_path, monkeypatch, [b"abc"])
    out = _write_verified(iter([b"a", b"bc"]), spec, tmp_path / "m" / "x.gguf")
    assert out.read_bytes() == b"abc"


# -- the real local model ----------------------------------------------------------------------


@pytest.mark.model
def test_local_model_answers_with_prefix_cache() -> None:
    pytest.importorskip("xllamacpp")
    from groundsql.llm.llamacpp import LlamaCppLLM

    llm = LlamaCppLLM("qwen2.5-coder-0.5b", n_ctx=2048)
    system = "You write SQLite SQL. Table singer(singer_id, name, country, age). " * 5
    first = llm.complete(chat(system, "How many singers are there? Answer with SQL only."))
    second = llm.complete(chat(system, "What is the average age of singers? Answer with SQL only."))
    assert "select" in first.text.lower() and "singer" in first.text.lower()
    assert first.prompt_tokens > 50 and first.completion_tokens > 0 and first.latency_s > 0
    assert second.cached_prompt_tokens > 50  # the shared system prompt was reused


@pytest.mark.model
def test_local_model_decodes_independent_samples_from_one_prefix(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    from groundsql.llm.llamacpp import LlamaCppLLM

    llm = LlamaCppLLM("qwen2.5-coder-0.5b", n_ctx=2048, parallel=3)
    greedy = chat("You write SQLite SQL. Table singer(singer_id, name, country, age). " * 5,
                  "How many singers are there? Answer with SQL only.", max_tokens=32)
    samples = [greedy] + [greedy.model_copy(update={"temperature": 0.8, "seed": i}) for i in range(4)]
    answers = llm.complete_all(samples)
    assert all(isinstance(a, Completion) and "select" in a.text.lower() for a in answers)
    # The first computed the shared prompt; every other slot started from a copy of it.
    assert answers[0].prompt_tokens > 50
    assert all(a.cached_prompt_tokens > 50 for a in answers[1:])
