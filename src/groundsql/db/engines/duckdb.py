"""DuckDB: a file opened read-only, external access off, memory and threads bounded."""

from __future__ import annotations

from typing import Any

from groundsql.db.engines.base import Limits, fetch_bounded


class DuckDBEngine:
    dialect = "duckdb"
    # Macros and functions created in the file can shadow a built-in (a macro named upper).
    user_functions_sql = "SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE NOT internal"
    privilege_sql = None  # opened read-only: no account to check
    reader_grants = ""

    def connect(self, spec: dict[str, Any]) -> Any:
        import duckdb

        return duckdb.connect(spec["path"], read_only=True, config={
            # A read-only file can still read and write other files (COPY ... TO, read_csv,
            # ATTACH, INSTALL): external access off, and the configuration locked against SET.
            "enable_external_access": False,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            # Memory is bounded twice: DuckDB's own limit (a clean error) and the worker's
            # address-space limit behind it. No spilling: temporary files would be writes.
            "memory_limit": f"{max(spec['memory_mb'] // 2, 256)}MB",
            "temp_directory": "",
            "threads": spec["threads"],
            "lock_configuration": True,
        })

    def run(self, conn: Any, sql: str, limits: Limits) -> tuple[tuple[str, ...], list[tuple[Any, ...]], bool]:
        import duckdb

        # DuckDB's execute() would run every statement of "SELECT 1; DELETE ...": split it
        # here and run only a single SELECT, whatever the validator let through.
        statements = conn.extract_statements(sql)
        if len(statements) != 1:
            raise duckdb.InvalidInputException(f"one statement at a time ({len(statements)} given)")
        if statements[0].type != duckdb.StatementType.SELECT:
            raise duckdb.PermissionException(f"only a query may run, not {statements[0].type.name}")
        result = conn.execute(statements[0])
        if result.description is None:
            return (), [], False
        columns = tuple(d[0] for d in result.description)
        rows, truncated = fetch_bounded(result.fetchmany, limits)
        return columns, rows, truncated

    def usable(self, conn: Any) -> bool:
        return True  # a file: nothing to lose between queries

    def interrupt(self, conn: Any) -> None:
        conn.interrupt()

    def close(self, conn: Any) -> None:
        conn.close()
