"""Any OpenAI-compatible chat-completions server: OpenAI, vLLM, Ollama, llama.cpp's server,
LM Studio. Only `/chat/completions` is used, so the common subset of all of them suffices."""

from __future__ import annotations

import os
import time
from typing import Any

import httpx

from groundsql.errors import LLMError
from groundsql.llm.base import LLM, ChatRequest, Completion
from groundsql.llm.llamacpp import parse_chat_response

DEFAULT_BASE_URL = "https://api.openai.com/v1"


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
        try:
            response = self._client.post("/chat/completions", json=body)
        except httpx.TimeoutException as err:
            raise LLMError(f"{url} timed out ({type(err).__name__})") from err
        except httpx.HTTPError as err:
            raise LLMError(f"cannot reach {url}: {err}") from err
        latency = time.perf_counter() - start
        if response.status_code in (401, 403, 404):
            raise LLMError(
                f"{url} answered HTTP {response.status_code} for model {self.model_id!r}: "
                f"{response.text[:200]}",
                retryable=False,
            )
        if response.status_code >= 400:
            raise LLMError(f"{url} answered HTTP {response.status_code}: {response.text[:200]}")
        try:
            payload = response.json()
        except ValueError as err:
            raise LLMError(f"{url} returned something that is not JSON: {response.text[:200]!r}") from err
        return parse_chat_response(payload, self.model_id, latency)

    def close(self) -> None:
        self._client.close()
