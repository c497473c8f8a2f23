"""Any OpenAI-compatible chat-completions server: OpenAI, vLLM, Ollama, llama.cpp's server,
LM Studio. Only `/chat/completions` is used, so the common subset of all of them suffices."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import httpx

from groundsql.errors import LLMError
from groundsql.llm.base import LLM, ChatRequest, Completion, remaining_s
from groundsql.llm.llamacpp import parse_chat_response

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_ANSWER_BYTES = 16 * 2**20  # a chat completion is a few kilobytes


class OpenAICompatibleLLM(LLM):
    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        retries: int = 2,
    ) -> None:
        self.model_id = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        key = api_key or os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.retries = retries
        self.timeout_s = timeout_s
        # Bounded connect and read times: a server that is down or stuck fails, never hangs.
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
        )

    def _complete(self, request: ChatRequest) -> Completion:
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": [m.model_dump() for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        if request.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": request.json_schema},
            }
        url = f"{self.base_url}/chat/completions"
        start = time.perf_counter()
        left = remaining_s(self.timeout_s)
        try:
            status, text = self._post(body, left)
        except httpx.TimeoutException as err:
            raise LLMError(f"{url} timed out ({type(err).__name__})") from err
        except httpx.HTTPError as err:
            raise LLMError(f"cannot reach {url}: {err}") from err
        latency = time.perf_counter() - start
        if status in (401, 403, 404):
            raise LLMError(f"{url} answered HTTP {status} for model {self.model_id!r}: {text[:200]}",
                           retryable=False)
        if status >= 400:
            raise LLMError(f"{url} answered HTTP {status}: {text[:200]}")
        try:
            payload = json.loads(text)
        except ValueError as err:
            raise LLMError(f"{url} returned something that is not JSON: {text[:200]!r}") from err
        return parse_chat_response(payload, self.model_id, latency)

    def _post(self, body: dict[str, Any], left_s: float) -> tuple[int, str]:
        """The answer's status and text, read in chunks against the call's deadline: a read
        timeout alone restarts with every byte, so a server that trickles one a second would
        never time out. The answer's size is bounded too."""
        url = f"{self.base_url}/chat/completions"
        deadline = time.monotonic() + left_s
        timeout = httpx.Timeout(max(left_s, 0.001), connect=min(10.0, max(left_s, 0.001)))
        with self._client.stream("POST", "/chat/completions", json=body, timeout=timeout) as response:
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if time.monotonic() > deadline:
                    raise LLMError(f"{url} did not finish its answer within {self.timeout_s:g} s", retryable=False)
                if size > MAX_ANSWER_BYTES:
                    raise LLMError(f"{url} sent an answer of over {MAX_ANSWER_BYTES // 2**20} MB", retryable=False)
            return response.status_code, b"".join(chunks).decode(response.encoding or "utf-8", "replace")

    def close(self) -> None:
        self._client.close()
