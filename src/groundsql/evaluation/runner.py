"""Runs configurations over benchmark items and writes one record per (configuration, item).

Records are appended to `results.jsonl` as they finish, so an interrupted run resumes where it
stopped: items already recorded for a configuration are skipped. Work is ordered by
configuration, then database, so a local model's prompt-prefix cache (instructions + schema)
serves consecutive questions.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import zlib
import logging
import random
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groundsql.config import Settings
from groundsql.conversation import Turn, answer_in_conversation
from groundsql.db import Database, QueryResult
from groundsql.deadline import question_deadline
from groundsql.errors import ConfigError, DatabaseError, GroundsqlError
from groundsql.evaluation.configs import GOLD, EvalConfig
from groundsql.evaluation.datasets import EvalItem
from groundsql.evaluation.execution_match import gold_orders, results_match, without_distinct
from groundsql.evaluation.grounding_match import grounding_scores
from groundsql.evaluation.result_match import why_different
from groundsql.evaluation.scoring import score
from groundsql.files import reason, writable_folder, write_bytes_atomic, write_text_atomic
from groundsql.llm import LLM, build_llm
from groundsql.retrieval import Example, QueryBank
from groundsql.safety import run_validated
from groundsql.strategies import Answer, Context
from groundsql.strategies.answer import Trace, json_value
from groundsql.strategies.feedback import names_missing

log = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
# --compact: records without their traces, each appended as a gzip member (a file of members
# reads as one stream), small enough to commit and resume a run in another session.
COMPACT_FILE = "results.jsonl.gz"
_ROWS_KEPT = 20  # rows of each result kept in a record, for the failure browser


def whole_results(settings: Settings) -> Settings:
    """`settings` for scoring: results are compared whole, so no row cap or added LIMIT may
    cut a gold-sized answer."""
    return settings.model_copy(update={
        "database": settings.database.model_copy(update={"max_rows": 100_000}),
        "safety": settings.safety.model_copy(update={"default_limit": 100_000}),
    })


def results_file(folder: Path) -> Path | None:
    """The records of the run in `folder` (compact or not); None when it holds none."""
    found = [folder / name for name in (COMPACT_FILE, RESULTS_FILE) if (folder / name).is_file()]
    return found[0] if found else None


def sample(items: list[EvalItem], limit: int | None, seed: int) -> list[EvalItem]:
    """A fixed random sample (same limit and seed, same items), in benchmark order. A
    conversation is one unit: `limit` conversations, each with all its turns."""
    units: dict[str, list[EvalItem]] = {}
    for item in items:
        units.setdefault(str(item.metadata.get("conversation", item.item_id)), []).append(item)
    if limit is None or limit >= len(units):
        return list(items)
    # Drawn by position, as before conversations existed: a benchmark of single questions
    # gives the same sample for the same limit and seed.
    chosen = set(random.Random(seed).sample(range(len(units)), limit))
    return [item for index, group in enumerate(units.values()) if index in chosen for item in group]


def bank_from_items(items: Iterable[EvalItem]) -> QueryBank:
    """A benchmark's own items as a query bank; retrieval then excludes each question's own
    database, so examples come from other databases (Spider's cross-database setting)."""
    return QueryBank([Example(i.question, i.gold_sql, db_id=i.db_id) for i in items])


@dataclass
class EvalRun:
    items: list[EvalItem]
    configs: list[EvalConfig]
    out_dir: Path
    bank: QueryBank | None = None
    cross_database_bank: bool = True  # exclude the item's own database from retrieval
    workers: int = 1
    judge: bool = False
    test_suite: bool = False  # also score against populated variants (SQLite databases)
    llm: LLM | None = None  # a ready backend (tests, the service); otherwise built from each config
    learned: list[Example] = field(default_factory=list)  # examples people confirmed (the service's)
    on_record: Callable[[dict[str, Any]], None] | None = None
    compact: bool = False  # records without traces, gzipped (COMPACT_FILE)
    _lock: threading.RLock = field(default_factory=threading.RLock)  # _context takes it, then _llm
    _databases: dict[str, Database] = field(default_factory=dict)
    _llms: dict[str, LLM] = field(default_factory=dict)
    _contexts: dict[tuple[str, str], Context] = field(default_factory=dict)
    _gold: dict[tuple[str, str], QueryResult | str] = field(default_factory=dict)
    _turns: dict[tuple[str, str], dict[str, Any]] | None = None  # records by (config, item), for conversations
    # (database file, gold SQL) -> its test suite and the gold's results on it: built and run
    # once, whatever the number of configurations scored against it.
    _suites: dict[tuple[str, str], tuple[Any, list[Any]]] = field(default_factory=dict)

    @property
    def results_path(self) -> Path:
        return self.out_dir / (COMPACT_FILE if self.compact else RESULTS_FILE)

    def done(self) -> set[tuple[str, str]]:
        return {(r["config"], r["item_id"]) for r in load_records(self.results_path)}

    def pending(self) -> list[tuple[EvalConfig, EvalItem]]:
        done = self.done()
        work = [
            (config, item)
            for config in self.configs
            for item in sorted(self.items, key=lambda i: i.db_id)
            if (config.label, item.item_id) not in done
        ]
        return work

    def run(self) -> None:
        if self.workers > 1 and any(item.metadata.get("conversation") for item in self.items):
            raise ConfigError("a conversation's turns are answered one after another: use --workers 1")
        _refuse_repeats("configuration", [c.label for c in self.configs])
        _refuse_repeats("item id", [i.item_id for i in self.items])
        writable_folder(self.out_dir, "the results (--out)")
        with _exclusive(self.out_dir):
            self._end_cut_line()
            work = self.pending()
            if self.workers <= 1:
                for config, item in work:
                    self._record(self.evaluate(config, item))
            else:
                with ThreadPoolExecutor(self.workers) as pool:
                    for record in pool.map(lambda task: self.evaluate(*task), work):
                        self._record(record)
            self._add_missing_spider_ex()
            if self.test_suite:
                self._add_missing_test_suite_scores()
            self.close()

    def _add_missing_spider_ex(self) -> None:
        """Records of an earlier version, made without `ex_spider`, get it from their stored
        prediction (no model call)."""
        records = load_records(self.results_path)
        items = {i.item_id: i for i in self.items}
        configs = {c.label: c for c in self.configs}
        changed = False
        for record in records:
            item, config = items.get(record["item_id"]), configs.get(record["config"])
            if "ex_spider" in record or "gold_error" in record or item is None or config is None:
                continue
            db = self._database(item.db_url, config.settings)
            pred_sql = record.get("pred_sql") if not record.get("error") else None
            record["ex_spider"] = self._ex_without_distinct(db, item, pred_sql, bool(record.get("ex")), config.settings)
            changed = True
        if changed:
            self._rewrite(records)

    def _add_missing_test_suite_scores(self) -> None:
        """Records made without --test-suite, or scored on suites an older construction built,
        get their test-suite scores (and their candidates' best-of-pool scores) from the stored
        prediction and grounds, so an earlier run is rescored without asking the model again."""
        from groundsql.testsuite.suite import SUITE_VERSION

        records = load_records(self.results_path)
        items = {i.item_id: i for i in self.items}
        changed = False
        for record in records:
            item = items.get(record["item_id"])
            current = record.get("suite_version") == SUITE_VERSION
            candidates = (record.get("grounds") or {}).get("candidates")
            stale_ts = not ("ts_ex" in record and current)
            stale_pool = isinstance(candidates, list) and not ("pool_ts" in record and current)
            if item is None or not (stale_ts or stale_pool) or "gold_error" in record:
                continue
            db = self._database(item.db_url, self.configs[0].settings)
            gold = self._gold_result(db, item)
            if isinstance(gold, QueryResult):
                pred_sql = record.get("pred_sql") if not record.get("error") else None
                if stale_ts:
                    record.update(self._test_suite_scores(db, item, gold, pred_sql))
                if stale_pool:
                    record.update(self._pool_scores(db, item, gold, candidates, self.configs[0].settings))
                changed = True
        if changed:
            self._rewrite(records)

    def _end_cut_line(self) -> None:
        """An interrupted write leaves a last line without its newline: a record cut short.
        It is removed (its item is pending again), so the file holds whole records only."""
        path = self.results_path
        if self.compact:
            if path.is_file() and path.stat().st_size:
                records = load_records(path)  # whole members only: a cut one is dropped
                if len(gzip_text(records)) != path.stat().st_size:
                    self._rewrite(records)
            return
        if path.is_file() and path.stat().st_size:
            data = path.read_bytes()
            if not data.endswith(b"\n"):
                with path.open("rb+") as handle:
                    handle.truncate(data.rfind(b"\n") + 1)

    def _record(self, record: dict[str, Any]) -> None:
        def append() -> None:
            if self.compact:
                with self.results_path.open("ab") as out:
                    out.write(gzip_text([compact_record(record)]))
                return
            with self.results_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")

        with self._lock:
            self._write(append)
            if self._turns is not None:
                self._turns[(record["config"], record["item_id"])] = record
        if self.on_record:
            self.on_record(record)

    def _rewrite(self, records: list[dict[str, Any]]) -> None:
        """The results file replaced whole by `records` (rescored), atomically."""
        if self.compact:
            self._write(lambda: write_bytes_atomic(self.results_path, gzip_text([compact_record(r) for r in records])))
            return
        self._write(lambda: write_text_atomic(
            self.results_path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)))

    def _write(self, write: Callable[[], None]) -> None:
        """A full or read-only disk stops the run with what to do; every record written before
        is whole (a cut last line is removed on resume), so the same command goes on from there."""
        try:
            write()
        except OSError as err:
            raise GroundsqlError(f"cannot write {self.results_path}: {reason(err)}; the records "
                                 "written before are kept, and the same command resumes after them") from None

    # -- one item -------------------------------------------------------------------------

    def evaluate(self, config: EvalConfig, item: EvalItem) -> dict[str, Any]:
        record: dict[str, Any] = {
            "config": config.label,
            "item_id": item.item_id,
            "db_id": item.db_id,
            "category": item.category,
            "question": item.question,
            "gold_sql": item.gold_sql,
        }
        try:
            db = self._database(item.db_url, config.settings)
        except GroundsqlError as err:
            return {**record, "gold_error": f"database: {err}"}
        gold = self._gold_result(db, item) if item.gold_sql else QueryResult((), (), False, 0.0)
        if isinstance(gold, str):
            return {**record, "gold_error": gold}
        try:
            answer = self._answer(config, item, db)
            if answer.clarification is not None:
                record.update(clarification_record(answer))
                if answer.asks_back and item.metadata.get("reply"):
                    answer = self._reply(config, item, db, answer)
                    record["reply"] = item.metadata["reply"]
                    record["chosen"] = answer.grounds.get("conversation", {}).get("chosen")
            if not item.gold_sql:  # a question to call out of scope: what was said is the score
                return {**record, "pred_sql": answer.sql, "error": answer.error, "ex": None, **costs(answer),
                        "trace": answer.to_dict()["trace"]}
            pred = QueryResult(answer.columns, answer.rows, answer.truncated, 0.0) if answer.ok else None
            verdict = score(
                question=item.question,
                gold_sql=item.gold_sql,
                gold=gold,
                pred_sql=answer.sql if answer.ok else None,
                pred=pred,
                dialect=db.dialect,
                schema=_schema_mapping(db),
                ignore_limit=config.settings.safety.default_limit,
                judge=self._llm(config.settings) if self.judge else None,
            )
        except DatabaseError as err:  # the database, not the strategy (a damaged file): this item only
            return {**record, "gold_error": f"database: {err}"}
        pred_sql = answer.sql if answer.ok else None
        record["reason"] = ("right" if verdict.ex else why_different(gold.rows, answer.rows)) if answer.ok else \
            "asked_back" if answer.clarification is not None else "error"
        record["ex_spider"] = self._ex_without_distinct(db, item, pred_sql, verdict.ex, config.settings)
        if self.test_suite:
            record.update(self._test_suite_scores(db, item, gold, pred_sql))
        record.update(self._pool_scores(db, item, gold, answer.grounds.get("candidates"), config.settings))
        if "constraints" in answer.grounds:  # the grounded strategy: its lookup scored on its own
            record["grounding"] = grounding_scores(item.gold_sql, answer.grounds["constraints"], db,
                                                   db.introspect())
        return {
            **record,
            "pred_sql": answer.sql,
            "error": answer.error,
            "ex": verdict.ex,
            "semantic": verdict.semantic,
            "tier": verdict.tier,
            "tree_edit_distance": verdict.tree_edit_distance,
            "filter_value": verdict.filter_value,
            **costs(answer),
            **written_queries(answer),
            "gold_columns": list(gold.columns),
            "gold_rows": _rows(gold.rows),
            "gold_row_count": len(gold.rows),
            "pred_columns": list(answer.columns),
            "pred_rows": _rows(answer.rows),
            "pred_row_count": len(answer.rows),
            # What the strategy based its answer on (resolved IDs, search candidates): for
            # reading a run's failures without running it again.
            **({"grounds": json_value(answer.grounds)} if answer.grounds else {}),
            # Every step with the model's replies (the prompts are left out: they repeat).
            "trace": answer.to_dict()["trace"],
        }

    def _answer(self, config: EvalConfig, item: EvalItem, db: Database) -> Answer:
        ctx = self._context(config, item, db)
        if item.metadata.get("held_out"):  # a pack's verified query, asked with the others (leave-one-out)
            ctx = replace(ctx, held_out=item.question)
        if config.strategy == GOLD:
            return _gold_answer(item, ctx)
        question = f"{item.question}\nHint: {item.evidence}" if item.evidence else item.question
        try:
            with question_deadline(ctx.settings.llm.question_timeout_s):
                return answer_in_conversation(question, self._history(config, item), config.strategy, ctx)
        except GroundsqlError as err:
            return Trace(item.question, config.strategy).finish(sql=None, error=str(err))
        except Exception as err:  # a bug: recorded and logged, not the end of an hours-long run
            log.exception("%s on %s: internal error", config.label, item.item_id)
            return Trace(item.question, config.strategy).finish(
                sql=None, error=f"internal error: {type(err).__name__}: {err}")

    def _reply(self, config: EvalConfig, item: EvalItem, db: Database, asked: Answer) -> Answer:
        """The answer to the item's `reply` to the question groundsql asked back, with both
        answers' steps and time (an ask-back question costs what both cost)."""
        ctx = self._context(config, item, db)
        turn = Turn(item.question, asked.question, None, clarification=asked.clarification)
        try:
            with question_deadline(ctx.settings.llm.question_timeout_s):
                answer = answer_in_conversation(item.metadata["reply"], [turn], config.strategy, ctx)
        except GroundsqlError as err:
            answer = Trace(item.question, config.strategy).finish(sql=None, error=str(err))
        return replace(answer, steps=(*asked.steps, *answer.steps), elapsed_s=asked.elapsed_s + answer.elapsed_s)

    def _history(self, config: EvalConfig, item: EvalItem) -> list[Turn]:
        """A conversation turn's earlier turns, as this configuration answered them (read from
        the records, so a resumed run continues a conversation where it stopped)."""
        conversation, turn = item.metadata.get("conversation"), item.metadata.get("turn", 1)
        if not conversation or turn <= 1:
            return []
        if config.settings.conversation.gold_history:
            return self._gold_history(config, item)
        with self._lock:
            if self._turns is None:
                self._turns = {(r["config"], r["item_id"]): r for r in load_records(self.results_path)}
            earlier = [self._turns.get((config.label, f"{conversation}#{n}")) for n in range(1, turn)]
        history = []
        for record in earlier:
            if record is None:
                break  # its gold failed: the conversation cannot go on from here
            standalone = ((record.get("grounds") or {}).get("conversation") or {}).get("standalone")
            ok = record.get("pred_sql") and not record.get("error")
            history.append(Turn(record["question"], standalone or record["question"],
                                record["pred_sql"] if ok else None, tuple(record.get("pred_columns") or ()),
                                record.get("pred_row_count") or 0))
        return history

    def _gold_history(self, config: EvalConfig, item: EvalItem) -> list[Turn]:
        """The earlier turns as asked, each answered by its gold query and result."""
        earlier = [i for i in self.items if i.metadata.get("conversation") == item.metadata["conversation"]
                   and i.metadata.get("turn", 1) < item.metadata["turn"]]
        history = []
        for previous in sorted(earlier, key=lambda i: i.metadata["turn"]):
            gold = self._gold_result(self._database(previous.db_url, config.settings), previous)
            if isinstance(gold, str):
                break
            history.append(Turn(previous.question, previous.question, previous.gold_sql, gold.columns, len(gold.rows)))
        return history

    def _context(self, config: EvalConfig, item: EvalItem, db: Database) -> Context:
        key = (config.label, item.db_url)
        with self._lock:
            if key not in self._contexts:
                llm = self._llm(config.settings) if config.strategy != GOLD else None
                self._contexts[key] = Context(
                    db=db,
                    llm=llm,  # type: ignore[arg-type]
                    settings=config.settings,
                    bank=self.bank,
                    exclude_db=item.db_id if self.cross_database_bank else None,
                )
                for example in self.learned:
                    self._contexts[key].learn(example)
            return self._contexts[key]

    def _database(self, url: str, settings: Settings) -> Database:
        with self._lock:
            if url not in self._databases:
                self._databases[url] = Database(url, settings.database)
            return self._databases[url]

    def _llm(self, settings: Settings) -> LLM:
        if self.llm is not None:
            return self.llm
        key = settings.llm.model_dump_json()
        with self._lock:
            if key not in self._llms:
                self._llms[key] = build_llm(settings.llm)
            return self._llms[key]

    def _gold_result(self, db: Database, item: EvalItem) -> QueryResult | str:
        key = (item.db_url, item.gold_sql)
        if key not in self._gold:
            try:
                # The gold is trusted benchmark SQL: it runs without the validator, read-only.
                self._gold[key] = db.execute(item.gold_sql)
            except GroundsqlError as err:
                self._gold[key] = f"gold query failed: {err}"
        return self._gold[key]

    def _ex_without_distinct(self, db: Database, item: EvalItem, pred_sql: str | None, ex: bool,
                             settings: Settings) -> bool:
        """EX as Spider's official evaluator reports it by default: every DISTINCT removed from
        both queries before they run (`--ex-mode spider-default`). The record's `ex` keeps them
        (the evaluator's --keep_distinct, groundsql's default)."""
        if pred_sql is None:
            return False
        gold_sql, pred_cut = without_distinct(item.gold_sql, db.dialect), without_distinct(pred_sql, db.dialect)
        if gold_sql == item.gold_sql and pred_cut == pred_sql:
            return ex
        try:
            gold = db.execute(gold_sql)
            pred = run_validated(db, pred_cut, settings.safety)[1]
        except GroundsqlError:  # officially: a query that fails once cut scores 0
            return False
        return results_match(gold.rows, pred.rows, gold_orders(gold_sql))

    def _test_suite_scores(
        self, db: Database, item: EvalItem, gold: QueryResult, pred_sql: str | None
    ) -> dict[str, Any]:
        """Test-suite execution accuracy: correct only if the prediction's result matches the
        gold's on every variant of the gold's suite (Zhong et al. 2020). Also whether the gold's
        result on the original database could tell queries apart at all."""
        from groundsql.testsuite.suite import SUITE_VERSION, informative

        scores: dict[str, Any] = {"gold_informative": informative([tuple(r) for r in gold.rows])}
        built = self._suite(db, item)
        if built is None:
            return scores
        suite = built[0]
        return {
            **scores,
            "ts_ex": bool(pred_sql) and _passes_suite(built, pred_sql or "", gold_orders(item.gold_sql)),
            "suite_variants": len(suite.variants),
            "suite_share": round(suite.share, 4),
            "suite_informative": suite.informative,
            "suite_version": SUITE_VERSION,
        }

    def _suite(self, db: Database, item: EvalItem) -> tuple[Any, list[Any]] | None:
        """The gold's test suite on this database and the gold's results on it (built once),
        or None off SQLite files."""
        from groundsql.testsuite.suite import build_suite, run_on_suite

        if db.backend != "sqlite" or not db.url.database:
            return None
        key = (db.url.database, item.gold_sql)
        with self._lock:
            if key not in self._suites:
                suite = build_suite(Path(db.url.database), item.gold_sql)
                self._suites[key] = (suite, run_on_suite(suite, item.gold_sql))
            return self._suites[key]

    def _pool_scores(self, db: Database, item: EvalItem, gold: QueryResult, candidates: Any,
                     settings: Settings) -> dict[str, Any]:
        """Best of pool: whether any of the queries a strategy chose among (its `candidates`
        grounds: the search's trajectories, self-consistency's samples) is right, by EX and,
        with test suites, by TS. It bounds what a better selection could score; when it is no
        higher than the chosen answer's, the misses are the generator's, not the selection's."""
        if not isinstance(candidates, list):
            return {}
        queries = [q for c in candidates if isinstance(c, dict) for q in (c.get("sql"), *(c.get("same_result") or ()))]
        pool = list(dict.fromkeys(q for q in queries if isinstance(q, str) and q))
        ordered = gold_orders(item.gold_sql)
        gold_rows = [tuple(r) for r in gold.rows]

        def right_here(sql: str) -> bool:
            try:  # model-written: validated and run read-only, as when the strategy ran it
                _, result = run_validated(db, sql, settings.safety)
            except GroundsqlError:
                return False
            return results_match(gold_rows, [tuple(r) for r in result.rows], ordered)

        scores: dict[str, Any] = {"pool_size": len(pool), "pool_ex": any(right_here(q) for q in pool)}
        built = self._suite(db, item) if self.test_suite else None
        if built is not None:
            scores["pool_ts"] = any(_passes_suite(built, q, ordered) for q in pool)
        return scores

    def close(self) -> None:
        for db in self._databases.values():
            db.close()


def _passes_suite(built: tuple[Any, list[Any]], sql: str, ordered: bool) -> bool:
    """Whether `sql` gives the gold's result on every variant of the gold's test suite."""
    from groundsql.testsuite.suite import run_on_suite

    suite, gold_results = built
    return all(
        not isinstance(p, str) and results_match(g, p, ordered)
        for g, p in zip(gold_results, run_on_suite(suite, sql))
        if not isinstance(g, str)
    )


def _gold_answer(item: EvalItem, ctx: Context) -> Answer:
    """The `gold` configuration: the gold SQL as the prediction, through the same validator and
    execution path as a model's SQL, so the harness itself is checked end to end."""
    trace = Trace(item.question, GOLD)
    with trace.step("validate+execute") as step:
        try:
            checked, result = ctx.run_sql(item.gold_sql)
        except GroundsqlError as err:
            step["error"] = str(err)
            checked = result = None
    if result is None:
        return trace.finish(sql=item.gold_sql, error=step["error"])
    return trace.finish(sql=checked.sql, columns=result.columns, rows=result.rows)


def _schema_mapping(db: Database) -> dict[str, dict[str, str]]:
    return {t.name: {c.name: c.type for c in t.columns} for t in db.introspect().tables}


def _rows(rows: tuple[tuple[Any, ...], ...]) -> list[list[Any]]:
    return [[json_value(v) for v in row] for row in rows[:_ROWS_KEPT]]


def _refuse_repeats(what: str, names: list[str]) -> None:
    # A repeated configuration or item would be answered and counted twice.
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConfigError(f"the {what} {name!r} is given twice")
        seen.add(name)


@contextlib.contextmanager
def _exclusive(out_dir: Path) -> Iterator[None]:
    """One run at a time per results folder: two would answer the same items and append both."""
    import fcntl

    with (out_dir / ".lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"another groundsql eval is writing to {out_dir}; wait for it or use "
                              "another --out") from None
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


_CALL_COUNTS = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "latency_s", "from_cache")


def costs(answer: Answer) -> dict[str, Any]:
    """What an answer took: time, model calls and tokens."""
    return {
        "latency_s": round(answer.elapsed_s, 4),
        "model_calls": len(answer.calls),
        # Calls answered from the disk cache have no real latency; reports can tell.
        "cached_calls": sum(c.from_cache for c in answer.calls),
        "prompt_tokens": answer.prompt_tokens,
        # Of those, the ones the backend's prefix cache served (not computed again).
        "cached_prompt_tokens": sum(c.cached_prompt_tokens for c in answer.calls),
        "completion_tokens": answer.completion_tokens,
    }


def clarification_record(answer: Answer) -> dict[str, Any]:
    """What an answer that asked back or said "out of scope" said, for the record."""
    clarification = answer.clarification
    assert clarification is not None
    return {"clarification": clarification.kind, "clarification_text": clarification.text,
            "options": [o.label for o in clarification.options]}


def written_queries(answer: Answer) -> dict[str, Any]:
    """How many queries the model wrote that ran (or were refused), and how many of those named
    a table or column that does not exist (as the model wrote them, before any repair), with
    the database's words for each."""
    written = 0
    missing: list[str] = []
    for step in answer.steps:
        detail = step.detail
        if not detail.get("sql") or detail.get("written_by") == "groundsql" or not ("error" in detail or "rows" in detail):
            continue
        written += 1
        first = detail["repaired"][0]["error"] if detail.get("repaired") else detail.get("error")
        if first and names_missing(str(first)):
            missing.append(str(first)[:200])
    dropped = sum(bool(step.detail.get("grammar_dropped")) for step in answer.steps)
    return {"sql_written": written, "missing_names": len(missing), "missing_name_errors": missing,
            "grammar_dropped": dropped}


def compact_record(record: dict[str, Any]) -> dict[str, Any]:
    """A record as committed: its trace cut to what the report counts (each step's name and
    time, each call's tokens and seconds), without the prompts and the model's replies."""
    trace = [{"step": step.get("step"), "elapsed_s": step.get("elapsed_s"),
              "calls": [{k: call.get(k) for k in _CALL_COUNTS} for call in step.get("calls") or ()]}
             for step in record.get("trace") or ()]
    return {**{k: v for k, v in record.items() if k != "trace"}, "trace": trace}


def gzip_text(records: list[dict[str, Any]]) -> bytes:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return gzip.compress(text.encode("utf-8"), mtime=0)


def _gunzip_members(data: bytes) -> str:
    """The text of every whole gzip member; a member cut off by an interruption is dropped."""
    text, rest = [], data
    while rest:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = decompressor.decompress(rest)
        except zlib.error:
            break
        if not decompressor.eof:
            break
        text.append(chunk.decode("utf-8", errors="replace"))
        rest = decompressor.unused_data
    return "".join(text)


def load_records(path: Path) -> list[dict[str, Any]]:
    """Records of a results file (plain, or --compact's gzip members); a line cut off by an
    interruption is skipped, not fatal."""
    if not path.is_file():
        return []
    records = []
    text = _gunzip_members(path.read_bytes()) if path.suffix == ".gz" else path.read_text(encoding="utf-8")
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records
