"""Databases: the one interface (`Database`) over SQLAlchemy URLs, read-only by construction.

Imported lazily: a query worker process (db/worker.py) imports this package and needs none
of SQLAlchemy.
"""

from typing import Any

__all__ = ["Database", "QueryResult"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from groundsql.db import database

        return getattr(database, name)
    raise AttributeError(name)
