"""One deadline for a whole question: every model call and query made while answering it stops
when the question's time is up, whatever their own timeouts allow.

The deadline lives in a context variable, so it follows the question into the calls below it
without being passed through every signature; work handed to a thread pool takes it along with
`in_context` (a new thread starts with an empty context).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from groundsql.errors import QuestionTimeoutError

T = TypeVar("T")

# (monotonic end, the seconds it was given) of the question being answered.
_QUESTION: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "groundsql_question_deadline", default=None)


@contextmanager
def question_deadline(seconds: float | None) -> Iterator[None]:
    """Answer within `seconds` (None: no bound beyond each call's own). A deadline already in
    force (a server's, around a session's) is kept when it is the earlier one."""
    if not seconds:
        yield
        return
    end = time.monotonic() + seconds
    outer = _QUESTION.get()
    token = _QUESTION.set(outer if outer is not None and outer[0] <= end else (end, seconds))
    try:
        yield
    finally:
        _QUESTION.reset(token)


def question_left_s() -> float | None:
    """Seconds left for the question (None outside a deadline); raises once it has passed."""
    current = _QUESTION.get()
    if current is None:
        return None
    left = current[0] - time.monotonic()
    if left <= 0:
        raise QuestionTimeoutError(f"the question was not answered within its {current[1]:g} s")
    return left


def bounded(seconds: float) -> float:
    """`seconds`, or less when the question has less left."""
    left = question_left_s()
    return seconds if left is None else min(seconds, left)


def in_context(function: Callable[..., T]) -> Callable[..., T]:
    """`function`, run in a copy of the caller's context (for a thread pool's worker)."""
    context = contextvars.copy_context()

    def run(*args: Any) -> T:
        return context.copy().run(function, *args)

    return run
