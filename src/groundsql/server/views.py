"""What the HTTP API and the MCP server say about an answer: one model, so both say the same."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from groundsql.server.service import Asked
from groundsql.strategies.answer import json_value


def json_rows(rows: Any) -> list[list[Any]]:
    """Rows as JSON can carry them (dates as ISO text, decimals as numbers, bytes as hex)."""
    return [[json_value(v) for v in row] for row in rows]


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

    @classmethod
    def fields_of(cls, asked: Asked) -> dict[str, Any]:
        answer = asked.answer
        return dict(
            answer_id=asked.answer_id, conversation_id=asked.conversation_id, database=asked.database,
            question=answer.grounds.get("conversation", {}).get("asked", answer.question),
            standalone_question=answer.question, strategy=answer.strategy, ok=answer.ok, error=answer.error,
            sql=answer.sql, columns=list(answer.columns), rows=json_rows(answer.rows), truncated=answer.truncated,
            grounds=json_value(answer.grounds), elapsed_s=round(answer.elapsed_s, 4))
