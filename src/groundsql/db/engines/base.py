"""What every engine shares: the limits of one query and the bounded fetch."""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass
from typing import Any, Iterable, Protocol

# Rows are fetched in batches this size: a round trip each on PostgreSQL, and small enough
# that the byte cap is checked before a batch of huge rows piles up.
_BATCH = 64
_PLAIN_TYPES = (str, int, float, bool, bytes, decimal.Decimal, datetime.date, datetime.time,
                datetime.timedelta, type(None))


@dataclass(frozen=True)
class Limits:
    """The bounds of one query, as the worker enforces them."""

    timeout_s: float
    max_rows: int
    max_bytes: int


class ResultTooLarge(Exception):
    """A single row is larger than the result's byte cap: there is nothing useful to return."""


class QueryTimedOut(Exception):
    """The database itself stopped the query at its time limit (before the worker's timer)."""


class Engine(Protocol):
    """One database engine, as a query worker and the parent process use it."""

    dialect: str  # sqlglot's name

    # -- in the worker: `spec` is the plain dict `Database` builds for it (picklable)
    def connect(self, spec: dict[str, Any]) -> Any: ...
    def run(self, conn: Any, sql: str, limits: Limits) -> tuple[tuple[str, ...], list[tuple[Any, ...]], bool]: ...
    def usable(self, conn: Any) -> bool: ...  # False: open a new connection
    def interrupt(self, conn: Any) -> None: ...
    def close(self, conn: Any) -> None: ...

    # -- in the parent: SQL whose single column lists the lower-case names of the functions
    # and macros the database itself defines (they may shadow a built-in), or None
    user_functions_sql: str | None
    # SQL whose single column lists why the connecting account may write (nothing: it may
    # only read), or None where the connection itself cannot write (a file opened read-only);
    # and how to create an account that may only read, for the refusal ({database}: its name)
    privilege_sql: str | None
    reader_grants: str


def plain_value(value: Any) -> Any:
    """A value the parent can unpickle safely: the driver's own types become plain ones."""
    if isinstance(value, datetime.datetime):
        offset = value.utcoffset()
        # zoneinfo zones would need their module on the other side; a fixed offset is exact.
        return value if offset is None else value.astimezone(datetime.timezone(offset))
    if isinstance(value, _PLAIN_TYPES):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return tuple(plain_value(v) for v in value)
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
    return str(value)  # UUIDs, network addresses, ranges, JSON wrappers: their text form


def value_size(value: Any) -> int:
    """Bytes a value costs the caller, near enough to bound memory (not to bill it)."""
    if isinstance(value, (str, bytes)):
        return len(value) + 16
    if isinstance(value, tuple):
        return sum(value_size(v) for v in value) + 16
    if isinstance(value, dict):
        return sum(len(k) + value_size(v) for k, v in value.items()) + 16
    return 16


def fetch_bounded(fetchmany: Any, limits: Limits) -> tuple[list[tuple[Any, ...]], bool]:
    """At most `max_rows` rows and `max_bytes` bytes from a cursor; True when more existed."""
    rows: list[tuple[Any, ...]] = []
    size = 0
    while len(rows) <= limits.max_rows:
        batch: Iterable[Any] = fetchmany(min(_BATCH, limits.max_rows + 1 - len(rows)))
        got = False
        for raw in batch:
            got = True
            row = tuple(plain_value(v) for v in raw)
            size += value_size(row)
            if size > limits.max_bytes:
                if not rows:
                    raise ResultTooLarge(f"a single row is larger than the {limits.max_bytes:,}-byte result cap")
                return rows, True
            rows.append(row)
        if not got:
            break
    return rows[: limits.max_rows], len(rows) > limits.max_rows
