"""What the HTTP API and the MCP server say about an answer: one model, so both say the same."""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from groundsql.server.service import Asked
from groundsql.strategies.answer import json_value


# -- what a message may say ------------------------------------------------------------------------

MAX_MESSAGE_CHARS = 400

# A file-system path: absolute (/srv/x.db, ~/x, C:\\x, file:/x, sqlite:////x), not inside a word, a
# number or a URL (http://host/v1 stays), up to whitespace, a quote, a bracket or a colon (a
# pack's "bank.jsonl:3:" keeps its line); in quotes, up to the quote. One part alone (/docs)
# is not taken for one.
_PATH = re.compile(r"""(?<![\w.:/\\~-])(?:(?:file|sqlite|duckdb)(?:\+\w+)?:/*)?"""
                   r"""(?:~/|/(?=[^/\s]+/)|[A-Za-z]:[\\/])[^\s'"`,;:()<>\[\]{}|]*""")
_QUOTED_PATH = re.compile(r"""(['"])((?:file:)?(?:/[^/'"\n]+/|~/|[A-Za-z]:[\\/])[^'"\n]*)\1""")
# A Java or Scala class name (org.apache.spark.SparkException, java.lang.OutOfMemoryError):
# with its ": " when it heads the message it wraps.
_JVM_CLASS = re.compile(r"\b(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)\b(?::\s*)?")
# What is left of some JVM failures once the class names are gone, and what it means.
_JVM_HUSKS = {"boxed exception": "the database failed while running the query",
              "boxed error": "the database failed while running the query",
              "java heap space": "the database ran out of memory for this query",
              "gc overhead limit exceeded": "the database ran out of memory for this query"}


def public_message(text: str | None) -> str:
    """A message as it may leave the service for a caller (the HTTP API, MCP, an answer's
    error): one line of at most MAX_MESSAGE_CHARS, with no server file-system path (a path
    becomes its last part: `/srv/packs/sales/bank.jsonl:3` -> `bank.jsonl:3`) and no JVM
    class names or stack frames (a driver's dump keeps its first line). The server's log
    keeps the whole message."""
    if not text:
        return text or ""
    text = _QUOTED_PATH.sub(lambda m: m.group(1) + _last_part(m.group(2)) + m.group(1), text)
    text = _PATH.sub(lambda m: _last_part(m.group()), text)
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = " ".join(_JVM_CLASS.sub("", line).split())
    husk = line.rsplit(": ", 1)[-1].lower().rstrip(".")  # "Error running query: Boxed Exception"
    line = _JVM_HUSKS.get(husk, line) or "the database failed while running the query"
    if len(line) > MAX_MESSAGE_CHARS:
        line = line[:MAX_MESSAGE_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return line


def public_errors(value: Any) -> Any:
    """JSON (a stage's details, an answer's grounds, a benchmark run) with every error text in
    it ("error", "gold_error") made a public message: it is the database's or the model's own."""
    if isinstance(value, dict):
        return {k: public_message(v) if isinstance(v, str) and (k == "error" or k.endswith("_error"))
                else public_errors(v) for k, v in value.items()}
    if isinstance(value, list):
        return [public_errors(v) for v in value]
    return value


def _last_part(path: str) -> str:
    parts = [p for p in re.split(r"[/\\]", path.rstrip("/\\")) if p]
    return parts[-1] if parts else "…"


def json_rows(rows: Any) -> list[list[Any]]:
    """Rows as JSON can carry them (dates as ISO text, decimals as numbers, bytes as hex)."""
    return [[json_value(v) for v in row] for row in rows]


def csv_text(columns: Sequence[str], rows: Any) -> str:
    """A result as CSV (RFC 4180). A text cell a spreadsheet would run as a formula (`=`, `+`,
    `-`, `@` first, after any leading whitespace, in any width: database values are untrusted)
    is written with a `'` before it, as OWASP advises; numbers stay numbers."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([_cell(c) for c in columns])
    for row in json_rows(rows):
        writer.writerow(["" if v is None else _cell(v) if isinstance(v, str) else v for v in row])
    return out.getvalue()


_FORMULA_STARTS = ("=", "+", "-", "@")


def _cell(text: str) -> str:
    return "'" + text if _runs_as_formula(text) else text


def _runs_as_formula(text: str) -> bool:
    """Whether a spreadsheet may read the text as a formula. Spreadsheets skip leading blanks
    (" =1+1"), and read full-width signs as the ASCII ones ("＝1+1"): the first character that
    is not whitespace or invisible (a zero-width space, a byte-order mark) is compared in its
    NFKC form. A tab or carriage return first is guarded too, as OWASP lists them."""
    if text[:1] in ("\t", "\r"):
        return True
    rest = text.lstrip()
    while rest and unicodedata.category(rest[0]) == "Cf":  # format characters: zero-width, BOM
        rest = rest[1:].lstrip()
    return unicodedata.normalize("NFKC", rest[:1])[:1] in _FORMULA_STARTS


class OptionView(BaseModel):
    label: str = Field(description="What to show; a reply may be this label, its number (1-based) or words of it.")
    question: str = Field(description="The question this option stands for.")
    key: Any = Field(None, description="The row's key (an entity) or the measure's name.")
    kind: str


class ClarificationView(BaseModel):
    kind: Literal["ambiguous", "out_of_scope"]
    text: str = Field(description="The question asked back, or what the data lacks.")
    about: str = Field(description="The words of the question it concerns.")
    why: str
    options: list[OptionView] = Field(description="Reply with one (as the next question of the conversation).")


class AnswerView(BaseModel):
    answer_id: str = Field(description="This answer's id (feedback on it: POST /v1/feedback).")
    conversation_id: str = Field(description="Pass it back with the next question to continue the conversation.")
    database: str
    question: str = Field(description="The question as asked.")
    standalone_question: str = Field(description="The question as answered (a follow-up made standalone).")
    strategy: str
    ok: bool = Field(description="False when there is no result; error says why.")
    error: str | None
    sql: str | None = Field(description="The validated SQL that ran.")
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = Field(description="The row cap (or the byte cap) cut the rows.")
    grounds: dict[str, Any] = Field(description=(
        "What the answer rests on: resolved IDs and entities with their rows, tables and why, examples, "
        "the conversation."))
    elapsed_s: float
    kind: Literal["answer", "clarification", "out_of_scope"] = Field(
        "answer", description="clarification: no result yet; reply with an option (or words) in the same "
                              "conversation. out_of_scope: the data cannot answer; error says what it lacks.")
    clarification: ClarificationView | None = None

    @classmethod
    def fields_of(cls, asked: Asked) -> dict[str, Any]:
        answer = asked.answer
        return dict(
            answer_id=asked.answer_id, conversation_id=asked.conversation_id, database=asked.database,
            question=answer.grounds.get("conversation", {}).get("asked", answer.question),
            standalone_question=answer.question, strategy=answer.strategy, ok=answer.ok,
            error=public_message(answer.error) if answer.error else None,
            sql=answer.sql, columns=list(answer.columns), rows=json_rows(answer.rows), truncated=answer.truncated,
            grounds=public_errors(json_value(answer.grounds)), elapsed_s=round(answer.elapsed_s, 4),
            kind=("answer" if answer.clarification is None else
                  "clarification" if answer.asks_back else "out_of_scope"),
            clarification=answer.clarification.to_dict() if answer.clarification else None)
