"""groundsql: ask a database a question in plain language, get back safe SQL, its result and its grounds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from groundsql.api import Session


def connect(url: str | None = None, **options: Any) -> "Session":
    """Open a session on a database (default: the embedded demo database); see `groundsql.api`."""
    from groundsql.api import connect as _connect

    return _connect(url, **options)


__all__ = ["connect", "__version__"]
