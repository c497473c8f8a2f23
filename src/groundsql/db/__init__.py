"""Databases: the one interface (`Database`) over SQLAlchemy URLs, read-only by construction."""

from groundsql.db.database import Database, QueryResult

__all__ = ["Database", "QueryResult"]
