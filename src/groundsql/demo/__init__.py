"""The embedded demo financial database (a deterministic, FLINT-style normalized schema)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from groundsql.demo.findb import (
    DEMO_DB_FILENAME,
    DEMO_QUESTIONS,
    DEMO_SCHEMA_VERSION,
    build_demo_database,
)


def demo_database_version(path: Path) -> int | None:
    """The generator version of the demo database at `path`; None if absent or outdated."""
    if not path.is_file():
        return None
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return version if version == DEMO_SCHEMA_VERSION else None


__all__ = ["DEMO_DB_FILENAME", "DEMO_QUESTIONS", "build_demo_database", "demo_database_version"]
