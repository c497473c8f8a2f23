"""In-process llama.cpp through xllamacpp.

The model is loaded once per process and shared by every session that asks for the same file
and settings, because loading costs seconds and hundreds of megabytes. On two CPU cores prompt
processing dominates, so the shared part of our prompts (the system message: instructions and
schema) is computed once and reused: within a process by llama.cpp's prompt cache, across
processes by saving the slot's state to a `PrefixStore` after computing a new prefix and
loading it back before a request that starts with it.

Independent requests (self-consistency's samples, the search's candidates) are decoded together:
the model has `parallel` slots, the first request computes the shared prefix in slot 0, its
state is copied into the other slots (a save and a load, milliseconds), and the rest run at
once with continuous batching. On a CPU, decoding a few sequences together costs little more
than one, because each step reads the weights once for all of them.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import httpx

from groundsql.deadline import in_context
from groundsql.errors import LLMError
from groundsql.llm.base import LLM, ChatRequest, Completion, remaining_s
from groundsql.llm.kvstore import PrefixStore, prefix_key
from groundsql.llm.models import ModelSpec, lookup, resolve_gguf

log = logging.getLogger("groundsql")

# A system message shorter than this is cheaper to compute than to save and load.
MIN_PREFIX_CHARS = 800
_FIRST = 0  # the slot single requests use, and whose state is saved and copied


@dataclass
class _Loaded:
    """A loaded model and what its slot holds now (shared by every LlamaCppLLM on it)."""

    server: Any
    identity: dict[str, Any]  # what shapes a saved state besides the prompt
    address: str  # the runtime's own loopback HTTP endpoint (slot save and restore)
    api_key: str
    slots: int
    state_dir: Path  # where the runtime saves and loads slot states
    lock: threading.Lock  # one batch of requests at a time: slot use is planned per batch
    slot_prefix: str | None = None  # the key of the prefix slot 0 holds


_SERVERS: dict[tuple[str, int, int, int, str | None], _Loaded] = {}
_SERVERS_LOCK = threading.Lock()


def _load_server(path: Path, identity: str, n_ctx: int, n_threads: int, slots: int,
                 state_dir: Path | None) -> _Loaded:
    key = (str(path), n_ctx, n_threads, slots, str(state_dir) if state_dir else None)
    with _SERVERS_LOCK:
        if key not in _SERVERS:
            try:
                import xllamacpp
            except ImportError as err:
                raise LLMError(
                    "the local backend needs xllamacpp: pip install 'groundsql[local]'",
                    retryable=False,
                ) from err
            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.n_ctx = n_ctx * slots  # each slot gets n_ctx of its own
            params.n_parallel = slots
            params.kv_unified = False
            params.cont_batching = True
            params.cache_prompt = True
            params.cpuparams.n_threads = n_threads
            params.cpuparams_batch.n_threads = n_threads
            params.verbosity = -1  # llama.cpp's own log would drown the user's output
            # Start-up work that buys nothing on a CPU: fitting the parameters to a device's free
            # memory loads the model a second time without its weights, and the warm-up decode
            # only moves the first request's page faults earlier (about 3 s of 7 together here).
            params.fit_params = False
            params.warmup = False
            # The runtime listens on a loopback port for its HTTP routes; a per-process key
            # keeps other local users off it (slot save and restore write files).
            api_key = secrets.token_urlsafe(24)
            params.api_keys = [api_key]
            # Without a store, slot copies still pass through files: a private folder, removed
            # when the process ends.
            if state_dir is None:
                state_dir = Path(tempfile.mkdtemp(prefix="groundsql-slots-"))
                atexit.register(shutil.rmtree, state_dir, True)
            params.slot_save_path = f"{state_dir}{os.sep}"  # the runtime joins it as a string
            params.endpoint_slots = True
            try:
                server = xllamacpp.Server(params)
            except Exception as err:  # the runtime raises plain exceptions on bad files
                raise LLMError(f"could not load {path}: {err}", retryable=False) from err
            identity = {
                "model": identity, "runtime": xllamacpp.__version__, "n_ctx": n_ctx,
                "cache": [str(params.cache_type_k), str(params.cache_type_v)],
                "flash_attn": str(params.flash_attn_type),
            }
            _SERVERS[key] = _Loaded(server, identity, server.listening_address, api_key, slots, state_dir,
                                    threading.Lock())
        return _SERVERS[key]


def _model_identity(path: Path, spec: ModelSpec | None) -> str:
    # A registered model is known by its verified SHA-256; any other file by its size and time.
    if spec is not None and path.name == spec.filename:
        return spec.sha256
    stat = path.stat()
    return f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


class LlamaCppLLM(LLM):
    grammars = True  # llguidance enforces ChatRequest.grammar

    def __init__(
        self,
        model: str,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        timeout_s: float = 300.0,
        retries: int = 2,
        parallel: int = 1,
        prefix_store: PrefixStore | None = None,
    ) -> None:
        spec = lookup(model)
        self.model_id = spec.name if spec else Path(model).name
        self.path = resolve_gguf(model)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 2
        self.timeout_s = timeout_s
        self.retries = retries
        self.prefixes = prefix_store if prefix_store is not None and prefix_store.prepare() else None
        self._model = _load_server(self.path, _model_identity(self.path, spec), n_ctx, self.n_threads,
                                   parallel, self.prefixes.directory if self.prefixes else None)

    def _complete(self, request: ChatRequest) -> Completion:
        model = self._model
        prefix = self._prefix_key(request)
        with model.lock:
            loaded = prefix is not None and prefix != model.slot_prefix and self._restore(prefix)
            computed = prefix is not None and prefix != model.slot_prefix and not loaded
            model.slot_prefix = None  # until the request succeeds, the slot's content is unknown
            completion = self._run(request, _FIRST)
            model.slot_prefix = prefix
            if computed and prefix is not None and self.prefixes is not None:
                self._save(prefix)
        return completion

    def complete_all(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        """The first request alone (it computes or loads the shared prefix in slot 0), then the
        rest in batches of the other slots, each slot starting from a copy of slot 0."""
        if len(requests) < 2 or self._model.slots < 2:
            return super().complete_all(requests)
        results: list[Completion | LLMError] = super().complete_all(requests[:1])
        model = self._model
        rest = list(requests[1:])
        with model.lock:
            copied = self._copy_first_slot()
            slots = list(range(model.slots)) if copied else [_FIRST]
            model.slot_prefix = None  # slot 0 will hold one of the batch's answers
            with ThreadPoolExecutor(len(slots)) as pool:
                for start in range(0, len(rest), len(slots)):
                    batch = rest[start:start + len(slots)]
                    results += pool.map(in_context(self._attempt_on), batch, slots)
        return results

    def _attempt_on(self, request: ChatRequest, slot: int) -> Completion | LLMError:
        try:
            completion = self._run(request, slot)
        except LLMError as err:
            return err
        return completion if completion.text.strip() else LLMError(f"{self.model_id} returned an empty answer")

    def _run(self, request: ChatRequest, slot: int) -> Completion:
        body: dict[str, Any] = {
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "cache_prompt": True,
            "id_slot": slot,
            # llama.cpp's own bound on generation time, so a runaway answer cannot hang us.
            "t_max_predict_ms": max(1, int(remaining_s(self.timeout_s) * 1000)),
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        if request.json_schema is not None:
            body["grammar"] = json_grammar(request.json_schema)
        elif request.grammar is not None:
            body["grammar"] = request.grammar
        start = time.perf_counter()
        try:
            response = self._model.server.handle_chat_completions(body)
        except Exception as err:
            raise LLMError(f"local model {self.model_id} failed: {err}") from err
        return parse_chat_response(response, self.model_id, time.perf_counter() - start)

    # -- slot states: across processes (the prefix store) and across slots -------------------------

    def _prefix_key(self, request: ChatRequest) -> str | None:
        first = request.messages[0]
        if self.prefixes is None or first.role != "system" or len(first.content) < MIN_PREFIX_CHARS:
            return None
        return prefix_key(self._model.identity, first.content)

    def _restore(self, key: str) -> bool:
        """Load slot 0 from a saved state for this prefix; False when there is none or it does
        not load (then the prompt is computed as usual)."""
        assert self.prefixes is not None
        name = self.prefixes.find(key)
        if name is None:
            return False
        return self._load_slot(_FIRST, name)

    def _save(self, key: str) -> None:
        assert self.prefixes is not None
        name = self.prefixes.temp_name()
        answer = self._slot_action(_FIRST, "save", name)
        if answer and answer.get("n_saved"):
            self.prefixes.add(key, name, {"model": self.model_id, "identity": self._model.identity,
                                          "tokens": answer["n_saved"]})
        else:
            (self.prefixes.directory / name).unlink(missing_ok=True)

    def _copy_first_slot(self) -> bool:
        """Slot 0's state into every other slot, so each starts from the shared prefix."""
        model = self._model
        name = f".tmp-copy-{os.getpid()}-{time.monotonic_ns()}.bin"
        try:
            if not self._slot_action(_FIRST, "save", name):
                return False
            return all(self._load_slot(slot, name) for slot in range(1, model.slots))
        finally:
            (model.state_dir / name).unlink(missing_ok=True)

    def _load_slot(self, slot: int, filename: str) -> bool:
        # Emptied first: the runtime wants room for the whole state, and a slot's old content
        # can leave its cells too fragmented. A state that will not load is still a good file
        # (its hash was checked): the prompt is computed this time, the file is kept.
        self._slot_action(slot, "erase")
        answer = self._slot_action(slot, "restore", filename)
        return bool(answer and answer.get("n_restored"))

    def _slot_action(self, slot: int, action: str, filename: str | None = None) -> dict[str, Any] | None:
        # Saving and loading are an optimisation: when they fail the answer is still right.
        model = self._model
        try:
            response = httpx.post(f"{model.address}/slots/{slot}", params={"action": action},
                                  json={"filename": filename} if filename else {}, timeout=60,
                                  headers={"Authorization": f"Bearer {model.api_key}"})
            answer = response.json()
        except (httpx.HTTPError, ValueError) as err:
            log.warning("slot state %s failed: %s", action, err)
            return None
        if response.status_code != 200 or not isinstance(answer, dict):
            log.warning("slot state %s failed: %s", action, str(answer)[:200])
            return None
        return answer


def json_grammar(schema: dict[str, Any]) -> str:
    """A JSON schema as an llguidance grammar for compact JSON: no whitespace between tokens,
    properties in the schema's order. The runtime's own json_schema path allows any
    whitespace, and a small model fills it with newlines and indentation: a third of the
    tokens of a structured answer, each a decoding step (measured: 103 -> 59 tokens)."""
    compact = {**schema, "x-guidance": {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}}
    return "%llguidance {}\nstart: %json " + json.dumps(compact, ensure_ascii=False)


def parse_chat_response(response: Any, model_id: str, latency_s: float) -> Completion:
    """Read an OpenAI-style chat completion; anything else is a clear error, not a KeyError."""
    if not isinstance(response, dict):
        raise LLMError(f"{model_id} returned a non-JSON answer: {str(response)[:200]!r}")
    if "error" in response:
        error = response["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise LLMError(f"{model_id} returned an error: {message}")
    try:
        choice = response["choices"][0]
        text = choice["message"]["content"]
        if not isinstance(text, str):
            raise TypeError("content is not text")
    except (KeyError, IndexError, TypeError) as err:
        raise LLMError(
            f"{model_id} returned an answer without a message ({err}): {str(response)[:200]!r}"
        ) from err
    usage = response.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return Completion(
        text=text,
        model=model_id,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_prompt_tokens=int(details.get("cached_tokens") or 0),
        latency_s=latency_s,
        finish_reason=choice.get("finish_reason"),
    )
