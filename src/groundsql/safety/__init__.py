"""Safety validation of model-written SQL (FLINT 3.5 / H.1): see `groundsql.safety.validator`."""

from __future__ import annotations

from groundsql.safety.validator import ValidatedSQL, validate_sql

__all__ = ["ValidatedSQL", "validate_sql"]
