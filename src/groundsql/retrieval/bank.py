"""A query bank of solved questions, and retrieval of the nearest ones.

With an embedder (retrieval/embeddings.py) the nearest are by cosine similarity of sentence
embeddings, as in FLINT; without one, by lexical similarity (rapidfuzz's token-set ratio),
the fallback that always works offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process, utils

from groundsql.errors import ConfigError
from groundsql.jsonl import field_error, read_jsonl
from groundsql.retrieval.embeddings import Embedder, cosine
from groundsql.semantic.verified import KINDS, Param, params_problem


@dataclass(frozen=True)
class Example:
    question: str
    sql: str
    reasoning: str = ""
    db_id: str = ""  # the database the example belongs to; "" when it is the only one
    # The same question as a semantic request (semantic/request.py): what the compiled path
    # shows the model as a solved example.
    request: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    # A verified query (semantic/verified.py): the values its SQL depends on, and who checked it.
    params: tuple[Param, ...] = ()
    verified_by: str = ""
    verified_at: str = ""
    drafted: bool = False  # written by `groundsql init`, not yet reviewed by a person
    onboarding: bool = False  # a question the page offers a newcomer to this database


class QueryBank:
    def __init__(self, examples: list[Example] | tuple[Example, ...],
                 embedder: Embedder | None = None) -> None:
        self.examples = tuple(examples)
        self.embedder = embedder
        self._questions = [utils.default_process(e.question) for e in self.examples]
        self._vectors: list[list[float]] | None = None

    def with_embedder(self, embedder: Embedder | None) -> "QueryBank":
        return QueryBank(self.examples, embedder)

    def extended(self, examples: list[Example]) -> "QueryBank":
        """This bank and `examples`; embeddings already computed are kept."""
        bank = QueryBank((*self.examples, *examples), self.embedder)
        if self._vectors is not None and self.embedder is not None:
            bank._vectors = self._vectors + self.embedder.embed([e.question for e in examples])
        return bank

    @property
    def method(self) -> str:
        return f"embedding ({self.embedder.name})" if self.embedder else "lexical (token-set ratio)"

    def __len__(self) -> int:
        return len(self.examples)

    def nearest(self, question: str, k: int, *, exclude_db: str | None = None,
                held_out: str | None = None) -> list[Example]:
        """The k examples most like `question`; `exclude_db` keeps a database's own solved
        questions out (cross-database evaluation, as in Spider's train/dev split), `held_out`
        the examples of that question (leave-one-out)."""
        if k <= 0 or not self.examples:
            return []
        allowed = [i for i, e in enumerate(self.examples)
                   if (exclude_db is None or e.db_id != exclude_db) and (held_out is None or e.question != held_out)]
        if self.embedder is not None:
            if self._vectors is None:
                self._vectors = self.embedder.embed([e.question for e in self.examples])
            (query,) = self.embedder.embed([question])
            # Stable sort: ties keep bank order, so retrieval is deterministic.
            ranked = sorted(allowed, key=lambda i: -cosine(query, self._vectors[i]))
            return [self.examples[i] for i in ranked[:k]]
        matches = process.extract(
            utils.default_process(question),
            {i: self._questions[i] for i in allowed},
            scorer=fuzz.token_set_ratio,
            limit=k,
        )
        # process.extract sorts by score; ties keep bank order, so retrieval is deterministic.
        return [self.examples[index] for _, _, index in matches]

    @classmethod
    def load(cls, path: str | Path) -> "QueryBank":
        """A JSONL file: one {"question", "sql", optional "reasoning", "db"} object a line."""
        path = Path(path)
        examples = []
        for number, raw in read_jsonl(path, "a query-bank example"):
            try:
                sql = raw.get("sql") or raw["gold_sql"]
                for name, value in (("question", raw["question"]), ("sql", sql)):
                    if not isinstance(value, str):  # an empty one is the pack's to say (packs/load.py)
                        raise ConfigError(f"{path}:{number}: {name!r} must be text, found {type(value).__name__}")
                request = raw.get("request")
                if request is not None and not isinstance(request, dict):
                    raise ConfigError(f"{path}:{number}: 'request' must be a JSON object (a semantic request)")
                params = _params(raw.get("params", []), sql, f"{path}:{number}")
                examples.append(Example(raw["question"], sql, raw.get("reasoning", ""), raw.get("db", ""), request,
                                        params, str(raw.get("verified_by", "")), str(raw.get("verified_at", "")),
                                        bool(raw.get("drafted", False)), bool(raw.get("onboarding", False))))
            except KeyError as err:
                raise field_error(path, number, "a query-bank example", err) from err
        return cls(examples)


def _params(raw: Any, sql: str, where: str) -> tuple[Param, ...]:
    """A verified query's parameters, each a literal of its SQL; a mistake names the entry."""
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: params: expected a list of {{\"name\", \"kind\", \"value\"}} objects")
    params = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or "value" not in item:
            raise ConfigError(f"{where}: params.{i}: expected {{\"name\", \"kind\", \"value\"}}")
        if item.get("kind") not in KINDS:
            raise ConfigError(f"{where}: params.{i}.kind: {item.get('kind')!r} is not one of {', '.join(KINDS)}")
        value = item["value"]
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{where}: params.{i}.value: a text or a number")
        params.append(Param(item["name"], item["kind"], value))
    problem = params_problem(sql, params, None) if params else None
    if problem:
        raise ConfigError(f"{where}: params.{problem}")
    return tuple(params)
