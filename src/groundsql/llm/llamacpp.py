"""In-process llama.cpp through xllamacpp.

The model is loaded once per process and shared by every session that asks for the same file
and settings, because loading costs seconds and hundreds of megabytes. Prompt-prefix caching is
on: on two CPU cores prompt processing dominates, so the shared part of our prompts
(instructions, schema) is computed once and reused.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from groundsql.errors import LLMError
from groundsql.llm.base import LLM, ChatRequest, Completion
from groundsql.llm.models import lookup, resolve_gguf

_SERVERS: dict[tuple[str, int, int], Any] = {}
_SERVERS_LOCK = threading.Lock()


def _load_server(path: Path, n_ctx: int, n_threads: int) -> Any:
    key = (str(path), n_ctx, n_threads)
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
            params.n_ctx = n_ctx
            params.n_parallel = 1
            params.cache_prompt = True
            params.cpuparams.n_threads = n_threads
            params.cpuparams_batch.n_threads = n_threads
            params.verbosity = -1  # llama.cpp's own log would drown the user's output
            try:
                _SERVERS[key] = xllamacpp.Server(params)
            except Exception as err:  # the runtime raises plain exceptions on bad files
                raise LLMError(f"could not load {path}: {err}", retryable=False) from err
        return _SERVERS[key]


class LlamaCppLLM(LLM):
    def __init__(
        self,
        model: str,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        timeout_s: float = 300.0,
        retries: int = 2,
    ) -> None:
        spec = lookup(model)
        self.model_id = spec.name if spec else Path(model).name
        self.path = resolve_gguf(model)
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 2
        self.timeout_s = timeout_s
        self.retries = retries
        self._server = _load_server(self.path, n_ctx, self.n_threads)
        # One request at a time: the server has one slot, and the prefix cache is per slot.
        self._lock = threading.Lock()

    def _complete(self, request: ChatRequest) -> Completion:
        body: dict[str, Any] = {
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "cache_prompt": True,
            # llama.cpp's own bound on generation time, so a runaway answer cannot hang us.
            "t_max_predict_ms": int(self.timeout_s * 1000),
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        if request.json_schema is not None:
            body["json_schema"] = request.json_schema
        start = time.perf_counter()
        with self._lock:
            try:
                response = self._server.handle_chat_completions(body)
            except Exception as err:
                raise LLMError(f"local model {self.model_id} failed: {err}") from err
        return parse_chat_response(response, self.model_id, time.perf_counter() - start)


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
