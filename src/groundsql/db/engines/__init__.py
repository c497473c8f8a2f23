"""One small interface per database engine, one implementation per vendor.

An `Engine` knows how to open a connection to its database that can only read, how to run
one statement on it under a time limit and fetch a bounded result, how to interrupt it, and
what the parent process must ask of the database before trusting it (the functions it
defines; for PostgreSQL and MySQL, whether the account may write). The connection side runs
inside a query worker process (db/worker.py); nothing here imports a driver until it is used,
so the parent process never loads DuckDB, psycopg or pymysql only to list the engines.
"""

from __future__ import annotations

from typing import Callable

from groundsql.db.engines.base import Engine, Limits, QueryTimedOut, ResultTooLarge, fetch_bounded, plain_value

__all__ = ["Engine", "Limits", "QueryTimedOut", "ResultTooLarge", "fetch_bounded", "plain_value", "engine_for",
           "ENGINES"]


def _sqlite() -> Engine:
    from groundsql.db.engines.sqlite import SQLiteEngine

    return SQLiteEngine()


def _duckdb() -> Engine:
    from groundsql.db.engines.duckdb import DuckDBEngine

    return DuckDBEngine()


def _postgres() -> Engine:
    from groundsql.db.engines.postgres import PostgresEngine

    return PostgresEngine()


def _mysql() -> Engine:
    from groundsql.db.engines.mysql import MySQLEngine

    return MySQLEngine()


def _spark() -> Engine:
    from groundsql.db.engines.spark import SparkEngine

    return SparkEngine()


# SQLAlchemy backend name -> engine factory.
ENGINES: dict[str, Callable[[], Engine]] = {
    "sqlite": _sqlite, "duckdb": _duckdb, "postgresql": _postgres, "mysql": _mysql, "mariadb": _mysql,
    "hive": _spark,
}


def engine_for(backend: str) -> Engine:
    return ENGINES[backend]()
