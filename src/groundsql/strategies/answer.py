"""What a question gets back: the SQL, its result, what it cost and how it was reached."""

from __future__ import annotations

import datetime as dt
import decimal
import time
from contextlib import contextmanager
from dataclasses import replace, dataclass, field
from typing import Any, Callable, Iterator

from groundsql.llm.base import Completion


@dataclass(frozen=True)
class Step:
    """One stage of the work, as shown in the trace."""

    name: str
    elapsed_s: float
    detail: dict[str, Any] = field(default_factory=dict)
    calls: tuple[Completion, ...] = ()


@dataclass(frozen=True)
class Option:
    """One reading of an ambiguous question, as the person is offered it."""

    label: str  # what the person sees and may reply with ("Osprey Power & Light Holdings, Inc.")
    question: str  # the question this reading stands for: asked when the option is chosen
    key: Any = None  # the row's key (an entity) or the field's name (a measure)
    kind: str = ""  # "entity", "measure"


@dataclass(frozen=True)
class Clarification:
    """A question back instead of a guess (kind "ambiguous", with options), or what the data
    lacks to answer at all (kind "out_of_scope")."""

    kind: str
    text: str  # the question back, or the sentence that says what is lacking
    options: tuple[Option, ...] = ()
    about: str = ""  # the words of the question it concerns
    why: str = ""  # the trigger, for the grounds

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Clarification":
        return cls(data["kind"], data["text"], tuple(Option(o["label"], o["question"], o.get("key"), o.get("kind", ""))
                                                     for o in data.get("options", ())),
                   data.get("about", ""), data.get("why", ""))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "about": self.about, "why": self.why,
                "options": [{"label": o.label, "question": o.question, "key": json_value(o.key), "kind": o.kind}
                            for o in self.options]}


@dataclass(frozen=True)
class Answer:
    question: str
    strategy: str
    sql: str | None  # the validated SQL that ran (None when none could be produced)
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    truncated: bool = False
    error: str | None = None  # why there is no result, in words for the user
    steps: tuple[Step, ...] = ()
    elapsed_s: float = 0.0
    # What the answer rests on (grounded strategy): resolved IDs with their provenance, the
    # tables used and why, the examples retrieved. JSON-ready.
    grounds: dict[str, Any] = field(default_factory=dict)
    # Set when groundsql asks back (then `sql` is None and `error` too) or finds the question
    # out of scope (then `error` says so).
    clarification: Clarification | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def asks_back(self) -> bool:
        """Whether the answer is a question back, with options, instead of a result."""
        return self.clarification is not None and self.clarification.kind == "ambiguous"

    @property
    def calls(self) -> tuple[Completion, ...]:
        return tuple(call for step in self.steps for call in step.calls)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (values the JSON encoder cannot take become strings)."""
        return {
            "question": self.question,
            "strategy": self.strategy,
            "sql": self.sql,
            "ok": self.ok,
            "error": self.error,
            "columns": list(self.columns),
            "rows": [[json_value(v) for v in row] for row in self.rows],
            "truncated": self.truncated,
            **({"clarification": self.clarification.to_dict()} if self.clarification else {}),
            "elapsed_s": round(self.elapsed_s, 4),
            **({"grounds": json_value(self.grounds)} if self.grounds else {}),
            "usage": {
                "model_calls": len(self.calls),
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "model_latency_s": round(sum(c.latency_s for c in self.calls), 4),
            },
            "trace": [
                {
                    "step": s.name,
                    "elapsed_s": round(s.elapsed_s, 4),
                    **{k: json_value(v) for k, v in s.detail.items()},
                    **(
                        {"calls": [c.model_dump(mode="json") for c in s.calls]} if s.calls else {}
                    ),
                }
                for s in self.steps
            ],
        }


def json_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


class Trace:
    """Collects steps while a strategy runs; `finish` freezes them into an `Answer`.

    `listener`, when given, hears of each step as it finishes (the server streams them); it is
    called from whichever thread ran the step.
    """

    def __init__(self, question: str, strategy: str, listener: Callable[[Step], None] | None = None) -> None:
        self.question = question
        self.strategy = strategy
        self.steps: list[Step] = []
        self.listener = listener
        self._start = time.perf_counter()

    @contextmanager
    def step(self, name: str, **detail: Any) -> Iterator[dict[str, Any]]:
        """Time a stage; the body may add to the yielded `detail` dict and its `calls` list."""
        start = time.perf_counter()
        record: dict[str, Any] = dict(detail)
        record["calls"] = []
        try:
            yield record
        finally:
            calls = tuple(record.pop("calls"))
            done = Step(name, time.perf_counter() - start, record, calls)
            self.steps.append(done)
            if self.listener is not None:
                self.listener(done)

    def amend(self, answer: Answer) -> Answer:
        """`answer` (finished earlier) with the steps recorded since and the time spent since."""
        return replace(answer, steps=tuple(self.steps), elapsed_s=time.perf_counter() - self._start)

    def finish(self, **fields: Any) -> Answer:
        return Answer(
            question=self.question,
            strategy=self.strategy,
            steps=tuple(self.steps),
            elapsed_s=time.perf_counter() - self._start,
            **fields,
        )
