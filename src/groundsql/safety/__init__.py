"""Safety validation of untrusted SQL (FLINT 3.5 / H.1): see `groundsql.safety.validator`."""

from __future__ import annotations

from dataclasses import replace

from groundsql.config import SafetyConfig
from groundsql.db import Database, QueryResult
from groundsql.safety.validator import ValidatedSQL, parse_untrusted, validate_sql

__all__ = ["ValidatedSQL", "parse_untrusted", "validate_sql", "run_validated"]


def run_validated(db: Database, sql: str, policy: SafetyConfig) -> tuple[ValidatedSQL, QueryResult]:
    """Validate against the database's own catalog, then execute read-only: the only way
    untrusted SQL reaches a database."""
    checked = validate_sql(sql, db.dialect, policy, db.catalog())
    result = db.execute(checked.fetch_sql)
    if checked.limit_added and len(result.rows) > policy.default_limit:
        # The added LIMIT cut the result: say so, rather than let it look complete.
        result = replace(result, rows=result.rows[:policy.default_limit], truncated=True)
    return checked, result
