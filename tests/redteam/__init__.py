"""Red-team harness for groundsql's safety layers (issue 22).

* `victims.py`: victim databases (SQLite, DuckDB, PostgreSQL with contrib extensions, roles,
  a planted file), each with a twin and a clone; fingerprints of everything an attack could
  change, restoring, and a detector of planted secrets in results.
* `corpus.py`: issue 22's statements, a deterministic generated corpus per engine, and
  hypothesis strategies over the same pieces.
* `harness.py`: one statement through the validator (`Session.run_sql`) or straight to the
  executor (`Database.execute`), judged: no effect, no leak, no dependence on hidden columns,
  bounded time and memory.

`pytest tests/test_redteam.py` runs it as tests; `python -m tests.redteam` prints the figures.
"""
