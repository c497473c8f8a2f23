"""The one language-model interface.

A backend turns a `ChatRequest` into a `Completion`. Everything around that call that is the
same for every backend lives here, once: bounded retries, rejection of empty answers, and the
accounting (latency, prompt and generated tokens) that every call carries.
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from contextvars import ContextVar
from typing import Any, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field

from groundsql.deadline import bounded, question_left_s
from groundsql.errors import LLMError


class Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    """Everything that determines an answer; two equal requests to one model get one answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...]
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, ge=1)
    stop: tuple[str, ...] = ()
    seed: int | None = None
    # Constrain the answer to this JSON schema (structured output), when the backend can.
    json_schema: dict[str, Any] | None = None
    # Or to this llguidance (Lark) grammar, where the backend enforces one (`LLM.grammars`);
    # elsewhere the request goes out without it.
    grammar: str | None = None

    def fingerprint(self, model_id: str) -> str:
        """A stable key for this request to this model: the disk cache and recordings use it."""
        request = self.model_dump(mode="json")
        if request["grammar"] is None:  # the key of every request made before grammars existed
            del request["grammar"]
        payload = json.dumps(
            {"model": model_id, "request": request},
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Completion(BaseModel):
    """One model answer and what it cost."""

    model_config = ConfigDict(frozen=True)

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens the backend reused from its prefix cache
    latency_s: float = 0.0
    from_cache: bool = False  # answered from groundsql's disk cache or a recording
    finish_reason: str | None = None


def chat(system: str, user: str, **options: Any) -> ChatRequest:
    """The common two-message request: shared instructions first, so backends can reuse them."""
    return ChatRequest(
        messages=(Message(role="system", content=system), Message(role="user", content=user)),
        **options,
    )


# The deadline of the call in progress in this thread: its attempts share it, so a server that
# never answers costs `timeout_s` once, not once per retry.
_DEADLINE: ContextVar[float | None] = ContextVar("groundsql_llm_deadline", default=None)


def remaining_s(default: float) -> float:
    """Seconds left for the call in progress (`default` outside one), and never more than the
    question being answered has left (deadline.py)."""
    deadline = _DEADLINE.get()
    return bounded(default if deadline is None else max(0.0, deadline - time.monotonic()))


class LLM(ABC):
    """A language model backend.

    Subclasses implement `_complete` for one attempt and raise `LLMError` on failure; callers
    use `complete`, which retries a bounded number of times and never returns an empty answer.
    """

    #: Identifies the model for cache keys and reports, e.g. "qwen2.5-coder-1.5b".
    model_id: str = "unknown"
    retries: int = 2
    retry_backoff_s: float = 0.5
    #: One deadline for a call, all its attempts together; None: each attempt bounds itself.
    timeout_s: float | None = None
    #: Whether the backend enforces `ChatRequest.grammar` (a remote server may not).
    grammars: bool = False

    @abstractmethod
    def _complete(self, request: ChatRequest) -> Completion:
        """Make one attempt; raise LLMError when it fails."""

    def complete(self, request: ChatRequest) -> Completion:
        outer = _DEADLINE.get() is not None or not self.timeout_s
        token = None if outer else _DEADLINE.set(time.monotonic() + self.timeout_s)  # type: ignore[operator]
        try:
            return self._attempts(request)
        finally:
            if token is not None:
                _DEADLINE.reset(token)

    def _attempts(self, request: ChatRequest) -> Completion:
        last_error: LLMError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.retry_backoff_s * attempt)
            question_left_s()  # raises when the question's own time is up
            if self.timeout_s and remaining_s(self.timeout_s) <= 0:
                raise LLMError(f"{self.model_id} gave no answer within {self.timeout_s:g} s"
                               + (f" ({last_error})" if last_error else ""), retryable=False)
            try:
                completion = self._complete(request)
            except LLMError as err:
                if not err.retryable:
                    raise
                last_error = err
                continue
            if completion.text.strip():
                return completion
            last_error = LLMError(f"{self.model_id} returned an empty answer")
        attempts = self.retries + 1
        raise LLMError(f"{last_error} (gave up after {attempts} attempt{'s' * (attempts > 1)})")

    def complete_all(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        """Answer independent requests (samples, candidates), each failure in its place rather
        than raised, so one bad sample does not lose the others. One after another here; a
        backend that decodes several sequences at once overrides it."""
        answers: list[Completion | LLMError] = []
        for request in requests:
            try:
                answers.append(self.complete(request))
            except LLMError as err:
                answers.append(err)
        return answers

    def close(self) -> None:
        """Release the backend's resources (model memory, connections)."""

