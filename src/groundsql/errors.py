"""Errors a user may see.

Every error groundsql raises on purpose derives from `GroundsqlError` and carries a message
written for the person at the keyboard; the CLI prints that message instead of a traceback.
"""

from __future__ import annotations


class GroundsqlError(Exception):
    """Base of all expected failures; `str(err)` is the user-facing message."""


class ConfigError(GroundsqlError):
    """A setting, URL, model name or file given by the user is wrong."""


class LLMError(GroundsqlError):
    """The language model backend is down, timed out or returned something unusable.

    `retryable` is False for failures another attempt cannot fix (bad API key, unknown model).
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        self.retryable = retryable
        super().__init__(message)


class ModelProvisioningError(LLMError):
    """The local model weights could not be found, joined or verified."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


class DatabaseError(GroundsqlError):
    """The database refused a query, or could not be reached or introspected."""


class QueryTimeoutError(DatabaseError):
    """A query ran longer than its wall-clock budget and was interrupted."""


class UnsafeSQLError(GroundsqlError):
    """The safety validator refused a statement.

    `construct` names what was refused (e.g. "INSERT", "ATTACH", "function load_extension")
    so the refusal can be shown, logged and tested precisely.
    """

    def __init__(self, construct: str, reason: str) -> None:
        self.construct = construct
        self.reason = reason
        super().__init__(f"refused {construct}: {reason}")


class GenerationError(GroundsqlError):
    """The model produced no usable SQL, even after the allowed retries."""


class QuestionTimeoutError(GroundsqlError):
    """A question's own deadline passed before it was answered (deadline.py)."""
