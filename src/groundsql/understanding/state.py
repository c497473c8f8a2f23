"""The semantic state (IESR 3.1) as the model wrote it, less what it copied from the request.

Asked to describe a question as JSON, the 1.5B model often fills a key with the request's own
wording ("names and values the question mentions", the intent "what is asked, in a few
words") instead of the question's (4 of the first 6 Spider questions of one run). Every later
call of the question sees the state, so an echo is not harmless: a relation copied from the
request's example is a formula nobody asked for. An item the request spells and the question
does not is an echo and is dropped. So is a query written into the state: asked for
relations, the model sometimes writes its first guess at the SQL there (a join on a column
that does not exist, on Spider's car_1), and every generation after it copies the guess.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["STATE_SCHEMA", "semantic_state"]

# SQL as the model writes it (capitals), not the words "select ... from" in an intent.
_QUERY = re.compile(r"\bSELECT\b.+\bFROM\b", re.S)
_LIMITS = {"entities": 8, "relations": 6, "fields": 12}
# The grammar the state is asked under (a local backend enforces it): the same keys and limits.
_WORDS = {"type": "string", "maxLength": 120}
STATE_SCHEMA = {"type": "object", "required": ["intent", *_LIMITS],
                "properties": {"intent": {"type": "string", "maxLength": 200},
                               **{key: {"type": "array", "items": _WORDS, "maxItems": limit}
                                  for key, limit in _LIMITS.items()}}}


def semantic_state(answer: Any, *, request: str, question: str) -> dict[str, Any]:
    """The state's four keys from a parsed reply (anything), each item the model's own."""
    answer = answer if isinstance(answer, dict) else {}

    spelled, asked = f" {_normal(request)} ", f" {_normal(question)} "

    def own(text: str) -> bool:
        words = _normal(text)
        return (bool(words) and (f" {words} " not in spelled or f" {words} " in asked)
                and not _QUERY.search(text))

    intent = str(answer.get("intent") or "").strip()
    state: dict[str, Any] = {"intent": intent if own(intent) else ""}
    for key, limit in _LIMITS.items():
        items = answer.get(key)
        items = items if isinstance(items, list) else []
        state[key] = [str(i).strip() for i in items if own(str(i))][:limit]
    return state


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+|[=*/+<>-]", text.lower()))
