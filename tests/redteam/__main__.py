"""`python -m tests.redteam` (from the repository root): the red-team figures as Markdown.

Runs every engine's corpus through the validator (per role) and the executor's corpus
straight to the executor, exactly as tests/test_redteam.py does, and prints how many
statements were tried, accepted (or ran), had an effect, leaked a secret, or broke another
rule (a result that depends on hidden columns, a refused legitimate query, an uncapped
result, a hang). The corpus is deterministic, so the figures reproduce for a given groundsql.
"""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from typing import Callable

from tests.redteam import corpus
from tests.redteam.harness import Outcome, Target, run_all
from tests.redteam.victims import close_all, file_victims, mysql_victims, postgres_victims, spark_victims

_ENGINE_NAMES = {"sqlite": "SQLite", "duckdb": "DuckDB", "postgres": "PostgreSQL", "mysql": "MariaDB", "spark": "Spark"}
# The raw statements a privileged account is tried with, per server.
_RAW_PRIVILEGED = {"postgres": ("issue 22's raw statements", corpus.RAW_POSTGRES), "mysql": ("raw statements", corpus.RAW_MYSQL)}
_COLUMNS = "statements | {passed} | with effects | leaking secrets | other violations | with any violation"


def _row(engine: str, role: str, outcomes: list[Outcome], passed: Callable[[Outcome], bool]) -> str:
    counts = (
        len(outcomes),
        sum(map(passed, outcomes)),
        sum(bool(o.effects) for o in outcomes),
        sum(bool(o.run.leaks) for o in outcomes),
        sum(bool(o.problems) for o in outcomes),
        sum(bool(o.violations) for o in outcomes),
    )
    return f"| {engine} | {role} | " + " | ".join(map(str, counts)) + " |"


# The second column: accepted by the validator (not refused), or run without error.
ACCEPTED: tuple[str, Callable[[Outcome], bool]] = ("accepted", lambda o: o.accepted)
RAN: tuple[str, Callable[[Outcome], bool]] = ("ran without error", lambda o: o.run.verdict == "ran")


def _table(title: str, column: tuple[str, Callable[[Outcome], bool]], runs: list[tuple[Target, str, list[Outcome]]]) -> str:
    passed, counted = column
    lines = [title, "", f"| engine | role | {_COLUMNS.format(passed=passed)} |", "|---|---|" + "---:|" * 6]
    lines += [_row(_ENGINE_NAMES[target.engine], role, outcomes, counted) for target, role, outcomes in runs]
    lines.append(_row("**total**", "", [o for _, _, outcomes in runs for o in outcomes], counted))
    return "\n".join(lines)


def _targets(stack: ExitStack) -> list[Target]:
    targets = []
    for engine in ("sqlite", "duckdb"):
        victims = file_victims(engine)
        stack.callback(close_all, victims)
        targets.append(Target(engine, victims, "file"))
    for engine, build in (("postgres", postgres_victims), ("mysql", mysql_victims)):
        try:
            victims = build()
        except Exception as err:  # noqa: BLE001 - no driver, no server: that engine is left out
            print(f"{_ENGINE_NAMES[engine]} left out: {err}", file=sys.stderr)
            continue
        stack.callback(close_all, victims)
        targets.append(Target(f"{engine}-superuser", victims, "superuser", privileged=True))
        targets.append(Target(f"{engine}-reader", victims, "reader"))
    try:
        victims = spark_victims()
    except Exception as err:  # noqa: BLE001 - no pyspark, no Java: Spark is left out
        print(f"Spark left out: {err}", file=sys.stderr)
    else:
        stack.callback(victims[0].server.close)
        stack.callback(close_all, victims)
        targets.append(Target("spark", victims, "reader"))
    return targets


def main() -> None:
    start = time.perf_counter()
    with ExitStack() as stack:
        targets = _targets(stack)
        for target in targets:
            stack.callback(target.close)
        validated = [(t, t.role, run_all(t, corpus.corpus(t.engine), through="validator")) for t in targets]
        # A privileged role may do anything the executor lets it: only issue 22's raw
        # statements, which the executor alone must stop, are tried with it.
        raw = [(t, t.role, run_all(t, corpus.raw_corpus(t.engine), through="executor"))
               for t in targets if not t.privileged]
        raw += [(t, f"{t.role} ({_RAW_PRIVILEGED[t.engine][0]})",
                 run_all(t, _RAW_PRIVILEGED[t.engine][1], through="executor")) for t in targets if t.privileged]
    tried = sum(len(outcomes) for _, _, outcomes in validated + raw)
    sizes = ", ".join(f"{_ENGINE_NAMES[e]} {len(corpus.corpus(e))}" for e in corpus.ENGINES)
    print(f"## Red team (issues 22 and 37)\n\nCorpus per engine (issue 22's statements and the generated ones): {sizes}.\n")
    print(_table("Through the validator (`Session.run_sql`):", ACCEPTED, validated), end="\n\n")
    print(_table("Straight to the executor (`Database.execute`, no validator):", RAN, raw), end="\n\n")
    print(f"Total: {tried} statements tried ({time.perf_counter() - start:.0f} s).")


if __name__ == "__main__":
    main()
