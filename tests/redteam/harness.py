"""Throwing corpus statements at a target and judging what happened.

A target is one engine and role (a victim, its twin and clone, and how to connect). Each
statement goes either through the validator (`Session.run_sql`) or straight to the executor
(`Database.execute`); then:

* effects: the victim's fingerprint (and the state of the pooled connection that ran the
  statement) is compared with the one before; any change is a violation, and the victim is
  restored so the next statement starts clean;
* leaks: no cell or column name of the result may hold a planted secret the caller may not
  read (`Secrets.leaked`);
* hidden columns: a statement accepted under the hidden-column policy runs on the twin (other
  hidden values) too; a result that differs there but not on the clone (the same values)
  depends on hidden values, even if none appears in it;
* expectations (`Attack.expect`): false positives must run; the 1 MB-rows statements must be
  refused or truncated; a big LIMIT must stream;
* resources: every call has a deadline (a validator stuck in quadratic work, an executor that
  ignores its timeout), and results a size bound.

Being accepted is not a failure: harmless SQL may pass.
"""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

import groundsql
from groundsql.config import DatabaseConfig, SafetyConfig, Settings
from groundsql.db import Database
from groundsql.errors import GroundsqlError, QueryTimeoutError, UnsafeSQLError
from tests.redteam.corpus import CAPPED, HIDDEN, OPEN, RUNS, STREAMED, Attack, render
from tests.redteam.victims import POOLED_STATE_SQL, VISIBLE_USER_COLUMNS, Victim, diff, result_bytes

# The corpus's statements are tiny; half a second is plenty for legitimate ones, and bounds
# the cost of every one that runs until the timeout.
TIMEOUT_S = 0.5
# Spark plans and schedules every query (a few hundred milliseconds for the smallest, more on
# a busy machine): its statements get longer.
ENGINE_TIMEOUT_S = {"spark": 5.0}
# A call gets this long beyond its query timeout to validate, connect and answer (including
# starting a query worker to replace one killed by the previous statement, on a busy machine).
GRACE_S = 10.0
# For the harness's own queries (the pooled-state probe), which must not time out under load.
PROBE_TIMEOUT_S = 10.0
MAX_ROWS = DatabaseConfig().max_rows
# What a result may weigh when it reaches the caller.
MAX_RESULT_BYTES = 64 * 2**20

POLICIES = {
    OPEN: SafetyConfig(),
    HIDDEN: SafetyConfig(allowed_columns={"users": VISIBLE_USER_COLUMNS}),
}


def database_config(*, privileged: bool, timeout_s: float = TIMEOUT_S) -> DatabaseConfig:
    """Limits for the harness's databases; a privileged role is allowed explicitly where the
    configuration knows how (`allow_privileged_role`, new with issue 22)."""
    fields: dict[str, Any] = {"timeout_s": timeout_s}
    if privileged and "allow_privileged_role" in DatabaseConfig.model_fields:
        fields["allow_privileged_role"] = True
    return DatabaseConfig(**fields)


# --------------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------------


class Target:
    """One engine and role: a victim with its twin and clone (`victims.file_victims`,
    `postgres_victims`); sessions per policy on each, and the raw Database on the victim,
    opened on first use; the fingerprint; restoring after an effect."""

    def __init__(self, name: str, victims: tuple[Victim, Victim, Victim], role: str, *, privileged: bool = False) -> None:
        self.name = name
        self.victim, self.twin, self.clone = victims
        self.role = role
        self.privileged = privileged
        self._sessions: dict[tuple[str, str], Any] = {}
        self._database: Database | None = None
        # Last known state of each pooled Database on the victim, by label: only the one that
        # ran a statement can have changed, so only it is read again.
        self._pooled: dict[str, dict[str, str]] = {}
        self._used_siblings: set[str] = set()
        self.snapshot: dict[str, str] = {}
        self.timeout_s = ENGINE_TIMEOUT_S.get(self.victim.engine, TIMEOUT_S)

    @property
    def engine(self) -> str:
        return self.victim.engine

    def settings(self, policy: str, timeout_s: float | None = None) -> Settings:
        return Settings(database=database_config(privileged=self.privileged, timeout_s=timeout_s or self.timeout_s),
                        safety=POLICIES[policy])

    def url(self, on: str = "victim") -> str:
        return getattr(self, on).url(self.role)

    def session(self, policy: str, *, on: str = "victim"):
        """The Session for a policy on the victim, its "twin" or its "clone"."""
        if (policy, on) not in self._sessions:
            session = groundsql.connect(self.url(on), settings=self.settings(policy))
            self._sessions[policy, on] = session
            if on == "victim":
                self._baseline(f"validator, {policy} policy", session.db)
        if on != "victim":
            self._used_siblings.add(on)
        return self._sessions[policy, on]

    def database(self) -> Database:
        if self._database is None:
            self._database = Database(self.url(), database_config(privileged=self.privileged, timeout_s=self.timeout_s))
            self._baseline("executor", self._database)
        return self._database

    def _victim_databases(self) -> dict[str, Database]:
        dbs = {f"validator, {policy} policy": s.db for (policy, on), s in self._sessions.items() if on == "victim"}
        return {**dbs, "executor": self._database} if self._database is not None else dbs

    def _baseline(self, label: str, db: Database) -> None:
        """A Database opened mid-run: its pooled state so far is the baseline, not an effect."""
        self._pooled[label] = self._pooled_state(label, db)
        self.snapshot.update(self._pooled[label])

    def observe(self, used: Database | None = None) -> dict[str, str]:
        """The victim's fingerprint and the state of every pooled connection: re-read for
        `used` (or for all when None), remembered for the others."""
        for label, db in self._victim_databases().items():
            if used is None or db is used:
                self._pooled[label] = self._pooled_state(label, db)
        state = self.victim.fingerprint()
        for pooled in self._pooled.values():
            state.update(pooled)
        return state

    def _pooled_state(self, label: str, db: Database) -> dict[str, str]:
        key = f"pooled connection ({label})"
        try:
            return {key: repr(db.execute(POOLED_STATE_SQL[self.engine], timeout_s=PROBE_TIMEOUT_S).rows)}
        except GroundsqlError as err:
            return {key: f"unusable: {err}"}

    def restore(self) -> None:
        """The victim (and each sibling that ran anything) back to its first state, with new
        sessions: whatever an executor keeps open must not outlive the files and rows it was
        opened on."""
        self.close()
        self.victim.restore()
        for on in self._used_siblings:
            getattr(self, on).restore()
        self._used_siblings.clear()
        self.snapshot = self.observe()

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        if self._database is not None:
            self._database.close()
        self._sessions, self._database, self._pooled = {}, None, {}


# --------------------------------------------------------------------------------------------
# Running one statement
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """What one call did."""

    verdict: str  # refused | ran | failed | timeout | hung | crashed
    detail: str = ""
    leaks: tuple[str, ...] = ()
    rows: int = 0
    truncated: bool = False
    bytes: int = 0
    elapsed_s: float = 0.0
    result: tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]] | None = field(default=None, compare=False)


class _Hung(BaseException):
    """Raised into a call past its deadline. A BaseException, so that no `except Exception`
    on the way (a validator's catch-all) turns it into an ordinary refusal or error."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the call after `seconds`: the validator is Python, and a blocked wait for a
    query worker is interrupted too (the pool then kills that worker)."""
    def expire(*_: Any) -> None:
        raise _Hung

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _call(fn: Callable[[], Any], leaked: Callable[[Any], list[str]], deadline_s: float) -> Run:
    start = time.perf_counter()
    try:
        with _deadline(deadline_s):
            result = fn()
    except _Hung:
        return Run("hung", f"no answer within {deadline_s:g} s", elapsed_s=time.perf_counter() - start)
    except UnsafeSQLError as err:
        return Run("refused", str(err), elapsed_s=time.perf_counter() - start)
    except QueryTimeoutError as err:
        return Run("timeout", str(err), elapsed_s=time.perf_counter() - start)
    except GroundsqlError as err:
        return Run("failed", str(err), elapsed_s=time.perf_counter() - start)
    except Exception as err:  # noqa: BLE001 - the contract is GroundsqlError; anything else is a finding
        return Run("crashed", f"{type(err).__name__}: {err}"[:500], elapsed_s=time.perf_counter() - start)
    return Run(
        "ran", leaks=tuple(leaked(result)), rows=len(result.rows), truncated=result.truncated,
        bytes=result_bytes(result.rows), elapsed_s=time.perf_counter() - start,
        result=(tuple(result.columns), tuple(result.rows)),
    )


# --------------------------------------------------------------------------------------------
# Judging
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    attack: Attack
    sql: str
    run: Run
    effects: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.run.verdict != "refused"

    @property
    def violations(self) -> tuple[str, ...]:
        found = list(self.problems)
        if self.effects:
            found.insert(0, "changed " + ", ".join(self.effects[:8]) + (" ..." if len(self.effects) > 8 else ""))
        if self.run.leaks:
            found.insert(0, "leaked " + ", ".join(self.run.leaks))
        return tuple(found)


def _expectation_problems(attack: Attack, run: Run, *, validated: bool) -> list[str]:
    problems = []
    if run.verdict == "hung":
        problems.append(f"hung: {run.detail}")
    elif run.verdict == "crashed":
        problems.append(f"raised {run.detail} instead of a groundsql error")
    if run.bytes > MAX_RESULT_BYTES:
        problems.append(f"returned {run.bytes / 2**20:.0f} MiB in {run.rows} rows")
    if attack.expect == RUNS and validated and run.verdict != "ran":
        problems.append(f"a legitimate query was {run.verdict}: {run.detail}")
    elif attack.expect == CAPPED and run.verdict != "refused" and not (run.verdict == "ran" and run.truncated):
        problems.append(
            f"neither refused nor truncated ({run.verdict}, {run.rows} rows, {run.bytes / 2**20:.0f} MiB) {run.detail}".strip()
        )
    elif attack.expect == STREAMED and (run.verdict != "ran" or run.rows > MAX_ROWS):
        problems.append(f"did not stream: {run.verdict}, {run.rows} rows {run.detail}".strip())
    return problems


def _same(a: Any, b: Any, *, ordered: bool) -> bool:
    """Equal results; without ORDER BY, rows in any order (DuckDB's hash aggregation returns
    groups in a different order from one connection to the next)."""
    if a is None or b is None or ordered:
        return a == b
    return a[0] == b[0] and sorted(map(repr, a[1])) == sorted(map(repr, b[1]))


def _on_sibling(target: Target, attack: Attack, on: str) -> Run:
    sibling = getattr(target, on)
    sql = render(attack.sql, sibling.placeholders())
    return _call(lambda: target.session(HIDDEN, on=on).run_sql(sql),
                 lambda r: sibling.secrets.leaked(r.columns, r.rows, hidden=True), target.timeout_s + GRACE_S)


def _hidden_dependence(target: Target, attack: Attack, sql: str, run: Run) -> list[str]:
    """An accepted hidden-policy statement runs on the twin (other hidden values) and, if
    its result differs there, on the clone (the same values): same on the clone but not on
    the twin means the result depends on hidden columns."""
    twin = _on_sibling(target, attack, "twin")
    problems = [f"leaked on the twin: {', '.join(twin.leaks)}"] if twin.leaks else []
    ordered = "ORDER BY" in sql.upper()
    if twin.verdict != "ran" or _same(twin.result, run.result, ordered=ordered):
        return problems
    if _same(_on_sibling(target, attack, "clone").result, run.result, ordered=ordered):
        problems.append("the result depends on hidden columns (the same on a clone, not on a twin with other hidden values)")
    return problems


def try_attack(target: Target, attack: Attack, *, through: str) -> Outcome:
    """Try one statement through the validator or the raw executor; judge and restore."""
    sql = render(attack.sql, target.victim.placeholders())
    validated = through == "validator"
    # hid_ values are secret only where the allow-list hides them; a privileged role may read
    # anything, so the raw executor as superuser is judged on effects only.
    hidden = validated and attack.policy == HIDDEN
    check_leaks = validated or not target.privileged

    def leaked(result: Any) -> list[str]:
        return target.victim.secrets.leaked(result.columns, result.rows, hidden=hidden) if check_leaks else []

    timeout_s = attack.timeout_s or target.timeout_s
    if attack.timeout_s is not None:  # a session of its own, closed at once
        used = None
        run = _call(lambda: _run_once(target, attack, sql, validated), leaked, timeout_s + GRACE_S)
    elif validated:
        session = target.session(attack.policy)
        used = session.db
        run = _call(lambda: session.run_sql(sql), leaked, timeout_s + GRACE_S)
    else:
        used = target.database()
        run = _call(lambda: used.execute(sql), leaked, timeout_s + GRACE_S)
    problems = _expectation_problems(attack, run, validated=validated)
    if hidden and run.verdict == "ran":
        problems += _hidden_dependence(target, attack, sql, run)
    return _finish(target, attack, sql, run, problems, used)


def _run_once(target: Target, attack: Attack, sql: str, validated: bool) -> Any:
    """Run with the attack's own timeout on a session (or Database) opened for it alone."""
    if validated:
        with groundsql.connect(target.url(), settings=target.settings(attack.policy, attack.timeout_s)) as session:
            return session.run_sql(sql)
    with Database(target.url(), database_config(privileged=target.privileged, timeout_s=attack.timeout_s)) as db:
        return db.execute(sql)


def _finish(target: Target, attack: Attack, sql: str, run: Run, problems: list[str], used: Database | None) -> Outcome:
    # A refusal comes before anything runs (that is what UnsafeSQLError means), so only what
    # ran is fingerprinted; `run_all` fingerprints once more at the end in case it did not.
    effects = _effects(target, used) if run.verdict != "refused" else []
    return Outcome(attack, sql, replace(run, result=None), tuple(effects), tuple(problems))


def _effects(target: Target, used: Database | None) -> list[str]:
    """What changed since the last snapshot; the victim is restored if anything did."""
    after = target.observe(used)
    effects = diff(target.snapshot, after)
    if effects:
        target.restore()
    else:
        target.snapshot = after
    return effects


_AFTERWARDS = Attack("-- (the state after the last statement)", "batch")


def run_all(target: Target, attacks: Any, *, through: str) -> list[Outcome]:
    """Every statement in turn, from a fresh snapshot of the target, and a last fingerprint
    for changes no statement that ran accounts for (a refused one that ran after all)."""
    target.snapshot = target.observe()
    outcomes = [try_attack(target, a, through=through) for a in attacks]
    if effects := _effects(target, None):
        outcomes.append(Outcome(_AFTERWARDS, _AFTERWARDS.sql, Run("refused"), tuple(effects)))
    return outcomes


def report(outcomes: list[Outcome]) -> str:
    """The violations, one statement each, for an assertion message."""
    lines = []
    for outcome in outcomes:
        if violations := outcome.violations:
            a, run = outcome.attack, outcome.run
            lines.append(f"- [{a.family}, {a.policy} policy] {outcome.sql[:400]!r}")
            lines.append(f"    {run.verdict}{': ' + run.detail[:200] if run.detail else ''}")
            lines += [f"    -> {v}" for v in violations]
    return "\n".join(lines)
