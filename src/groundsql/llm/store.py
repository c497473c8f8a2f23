"""Answers kept on disk, keyed by the full request.

Two uses of one mechanism: the answer cache (a miss falls through to the real model) and the
record/replay backend for deterministic tests (a miss is an error). Each answer is a small,
readable JSON file holding the request too, so a recording can be reviewed in a diff.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Sequence

from groundsql.errors import LLMError
from groundsql.files import cache_failed, write_text_atomic
from groundsql.llm.base import LLM, ChatRequest, Completion


class ResponseStore:
    """`cache=True`: a write that fails is a warning (the answer is the point, keeping it an
    optimisation); recordings for replay must be written, so there it is an error."""

    def __init__(self, directory: Path, *, cache: bool = False) -> None:
        self.directory = Path(directory)
        self.cache = cache

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        path = self._path(key)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            return Completion.model_validate(record["completion"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError):
            # A truncated or hand-edited file is treated as absent rather than trusted.
            return None

    def put(self, key: str, request: ChatRequest, completion: Completion) -> None:
        path = self._path(key)
        record = {
            "request": request.model_dump(mode="json"),
            "completion": completion.model_dump(mode="json", exclude={"from_cache"}),
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, json.dumps(record, indent=1, ensure_ascii=False, sort_keys=True))
        except OSError as err:
            if not self.cache:
                raise
            cache_failed("the answer cache", self.directory, err)


class CachedLLM(LLM):
    """Serves repeated requests from disk; only misses reach the wrapped backend."""

    def __init__(self, inner: LLM, store: ResponseStore) -> None:
        self.inner = inner
        self.store = store
        self.model_id = inner.model_id
        self.grammars = inner.grammars
        self.retries = 0  # the inner backend retries; a cache hit cannot fail

    def _complete(self, request: ChatRequest) -> Completion:
        start = time.perf_counter()
        key = request.fingerprint(self.model_id)
        hit = self.store.get(key)
        if hit is not None:
            return hit.model_copy(
                update={"from_cache": True, "latency_s": time.perf_counter() - start}
            )
        completion = self.inner.complete(request)
        self.store.put(key, request, completion)
        return completion

    def complete_all(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        return _hits_then_misses(self.store, self.model_id, requests, self.inner.complete_all)

    def close(self) -> None:
        self.inner.close()


class ReplayLLM(LLM):
    """Answers only from recordings; with `record_from`, records what is missing.

    Recordings are made from the real model and committed, so tests of the plumbing are exact
    and fast. They prove nothing about accuracy.
    """

    def __init__(self, store: ResponseStore, model_id: str, record_from: LLM | None = None):
        self.store = store
        self.model_id = model_id
        self.record_from = record_from
        # Recordings are made with the local backend, which enforces grammars.
        self.grammars = record_from.grammars if record_from is not None else True
        self.retries = 0

    def _complete(self, request: ChatRequest) -> Completion:
        key = request.fingerprint(self.model_id)
        hit = self.store.get(key)
        if hit is not None:
            return hit.model_copy(update={"from_cache": True})
        if self.record_from is None:
            raise LLMError(
                f"no recording of this request for {self.model_id} in {self.store.directory} "
                "(re-record with GROUNDSQL_RECORD=1)",
                retryable=False,
            )
        completion = self.record_from.complete(request)
        self.store.put(key, request, completion)
        return completion

    def complete_all(self, requests: Sequence[ChatRequest]) -> list[Completion | LLMError]:
        if self.record_from is None:
            return super().complete_all(requests)
        return _hits_then_misses(self.store, self.model_id, requests, self.record_from.complete_all)

    def close(self) -> None:
        if self.record_from is not None:
            self.record_from.close()


def _hits_then_misses(
    store: ResponseStore, model_id: str, requests: Sequence[ChatRequest],
    answer_all: Callable[[Sequence[ChatRequest]], list[Completion | LLMError]],
) -> list[Completion | LLMError]:
    """Stored answers for the requests that have one; the rest answered together and stored."""
    keys = [request.fingerprint(model_id) for request in requests]
    answers: list[Completion | LLMError | None] = []
    for key in keys:
        hit = store.get(key)
        answers.append(hit.model_copy(update={"from_cache": True}) if hit is not None else None)
    missing = [i for i, answer in enumerate(answers) if answer is None]
    for i, answer in zip(missing, answer_all([requests[i] for i in missing])):
        if isinstance(answer, Completion):
            store.put(keys[i], requests[i], answer)
        answers[i] = answer
    return [answer for answer in answers if answer is not None]
