"""The Python entry point: `groundsql.connect(url).ask(question)`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from urllib.parse import quote
from typing import Any

from groundsql.config import Settings, data_home
from groundsql.conversation import Turn, answer_in_conversation
from groundsql.db import Database, QueryResult
from groundsql.deadline import question_deadline
from groundsql.errors import ConfigError
from groundsql.files import reason, writable_folder
from groundsql.llm import LLM, ChatRequest, Completion, Message, build_llm
from groundsql.retrieval import Example, QueryBank
from groundsql.safety.tables import visible_schema
from groundsql.schema import Schema
from groundsql.strategies import Answer, Context
from groundsql.strategies.answer import Step


def demo_database_url() -> str:
    """The embedded demo financial database, generated on first use (deterministically)."""
    from groundsql.demo import DEMO_DB_FILENAME, demo_database_version

    path = data_home() / "demo" / DEMO_DB_FILENAME
    # Rebuilt when missing or made by an older generator (its version is in user_version).
    if demo_database_version(path) is None:
        write_demo_database(path, hint="set GROUNDSQL_HOME to a folder that takes files")
    return f"sqlite:///{path}"


def database_url(url: str | Path | None) -> str:
    """A SQLAlchemy URL for what a person names: a URL, a SQLite file, or None (the demo)."""
    if url is None:
        return demo_database_url()
    if isinstance(url, Path) or "://" not in str(url):
        # A path, not a URL: `%20` or `?` in a file name are characters, not URL syntax.
        return f"sqlite:///{quote(str(Path(url).expanduser().resolve()), safe='/')}"
    return str(url)


def write_demo_database(path: Path, hint: str = "") -> Path:
    from groundsql.demo import build_demo_database

    writable_folder(path.parent, "the demo database", hint)
    try:
        return build_demo_database(path)
    except OSError as err:
        raise ConfigError(f"cannot write the demo database to {path}: {reason(err)}") from None


class Session:
    """A database, a model and settings; ask it questions."""

    def __init__(
        self, db: Database, llm: LLM | None, settings: Settings, bank: QueryBank | None = None
    ) -> None:
        self.db = db
        self.settings = settings
        self.bank = bank
        self._llm = llm

    @property
    def llm(self) -> LLM:
        # Loaded on first use: introspection and `run_sql` need no model.
        if self._llm is None:
            self._llm = build_llm(self.settings.llm)
        return self._llm

    @property
    def schema(self) -> Schema:
        """The schema as the safety policy lets it be seen (no model needed)."""
        return visible_schema(self.db.introspect(), self.settings.safety)

    @cached_property
    def context(self) -> Context:
        return Context(db=self.db, llm=self.llm, settings=self.settings, bank=self.bank)

    def ask(
        self,
        question: str,
        *,
        strategy: str = "auto",
        history: Sequence[Turn] = (),
        on_step: Callable[[Step], None] | None = None,
    ) -> Answer:
        """Answer `question`; with `history` (the conversation's earlier turns) a follow-up is
        first made standalone. `on_step` hears of each step as it finishes."""
        if not question.strip():
            raise ValueError("the question is empty")
        ctx = replace(self.context, on_step=on_step) if on_step is not None else self.context
        with question_deadline(self.settings.llm.question_timeout_s):
            return answer_in_conversation(question, history, strategy, ctx)

    def reload_pack(self) -> None:
        """Read the domain pack's files again from the next question on (after an edit): what
        was built from them is dropped; the examples people confirmed are kept."""
        learned = self.context.learned if "context" in self.__dict__ else []
        self.__dict__.pop("context", None)
        for example in learned:
            self.context.learn(example)

    def warm(self) -> list[Completion]:
        """Compute (or load) the prompt states the compiled path's questions start from: the
        semantic model, or each subject area of a warehouse's (semantic/scope.py). With the
        local backend each is saved, so no later question or process computes it again. One
        model call each, one token generated."""
        from groundsql.llm.store import CachedLLM
        from groundsql.strategies.compiled import shared_prompts

        # Past the answer cache: a cached answer would leave the state uncomputed.
        llm = self.llm.inner if isinstance(self.llm, CachedLLM) else self.llm
        return [llm.complete(ChatRequest(messages=(Message(role="system", content=system),
                                                   Message(role="user", content="Question:")),
                                         max_tokens=1, temperature=0.0))
                for system in shared_prompts(self.context)]

    def run_sql(self, sql: str) -> QueryResult:
        """Run SQL of your own through the same validator and read-only connection."""
        from groundsql.safety import run_validated

        return run_validated(self.db, sql, self.settings.safety)[1]

    def lookup(self, phrase: str) -> dict[str, Any]:
        """The reference-table IDs and entities `phrase` resolves to, with their rows (the
        grounded strategy's lookup and entity linking, on the session's domain pack)."""
        if not phrase.strip():
            raise ValueError("the phrase is empty")
        from groundsql.strategies.grounded import ground_values

        return ground_values(phrase, self.context)

    def learn(self, question: str, sql: str, *, verified_by: str = "", verified_at: str = "") -> Example:
        """Keep a confirmed answer as a solved example: it is validated and run like any other
        SQL (a refusal or an error raises), and retrieval uses it from the next question on.
        `verified_by`: the editor who confirmed it; the compiled path then also answers a
        question like it with other values by its SQL (compiled.learned_verified)."""
        if not question.strip():
            raise ValueError("the question is empty")
        from groundsql.safety import run_validated

        checked, _ = run_validated(self.db, sql, self.settings.safety)
        example = Example(question.strip(), checked.sql, verified_by=verified_by, verified_at=verified_at)
        self.context.learn(example)
        return example

    def close(self) -> None:
        self.db.close()
        if self._llm is not None:
            self._llm.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


def connect(
    url: str | Path | None = None,
    *,
    model: str | None = None,
    settings: Settings | None = None,
    llm: LLM | None = None,
    bank: QueryBank | str | Path | None = None,
    pack: str | Path | None = None,
) -> Session:
    """Open a session.

    url: a SQLAlchemy URL or a path to a SQLite file; None means the demo database.
    model: shorthand for `settings.llm.model` (a registered name or a GGUF path).
    llm: a ready backend (e.g. a replay backend in tests); overrides `settings.llm`.
    bank: solved examples (a QueryBank or a JSONL file) for the few-shot strategy.
    pack: a domain pack folder for the grounded strategy (default: the demo's own pack on the
    demo database; `demo` names it for a copy of the demo elsewhere; `groundsql init` drafts one).
    """
    settings = settings or Settings()
    if model is not None:
        settings = settings.model_copy(update={"llm": settings.llm.model_copy(update={"model": model})})
    url = database_url(url)
    if bank is not None and not isinstance(bank, QueryBank):
        bank = QueryBank.load(bank)
    if pack is not None:
        if str(pack) == "demo":  # the demo's own pack, for a copy of the demo on another engine
            from groundsql.strategies.grounded import demo_pack_path

            pack = demo_pack_path()
        grounded = settings.grounded.model_copy(update={"pack": Path(pack).expanduser()})
        settings = settings.model_copy(update={"grounded": grounded})
    db = Database(url, settings.database)
    db.check()  # an empty or damaged database is said at once, before a model is loaded
    return Session(db, llm, settings, bank)
