"""The tables a question speaks of, ranked: what a prompt shows of a warehouse.

A prompt that lists every table of a 500-table warehouse is longer than the model's context.
Where a schema (or a semantic model) is that large, each question is shown the tables whose
words it uses: each table is a bag of stemmed words (its name, its columns' or fields' names,
synonyms and descriptions), each word weighs by how few tables hold it (a word of every table,
"id", weighs nothing), and a table scores the weight of the question's words it holds, plus a
bonus for a table the question names a value of (a resolved name, a label), shared among the
tables that hold it. Ties go by name, so the list is the same every time.

Used by the compiled path (semantic/scope.py: logical tables) and the grounded pipeline
(strategies/grounded.py: database tables).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

__all__ = ["Shortlist", "words"]


def words(text: str) -> set[str]:
    """The stemmed words of a name or a question, plurals made singular first, so that
    "readings" and "reading" (of meter_reading_date) stem alike."""
    from groundsql.semantic.terms import stems

    singular = (w[:-1] if w.lower().endswith("s") and not w.lower().endswith(("ss", "us", "is")) and len(w) > 3
                else w for w in re.findall(r"[A-Za-z]+", text.replace("_", " ")))
    return stems(" ".join(singular))


class Shortlist:
    """Tables as bags of words, ranked against a question's words."""

    def __init__(self, documents: Mapping[str, set[str]]) -> None:
        self.documents = dict(documents)
        holding: dict[str, int] = defaultdict(int)
        for bag in self.documents.values():
            for word in bag:
                holding[word] += 1
        n = max(len(self.documents), 1)
        self.weight = {w: math.log(1 + n / k) - math.log(2) for w, k in holding.items()}
        self._top = max(self.weight.values(), default=1.0)

    def ranked(self, said: set[str], named: Iterable[str] = (), spoken: Iterable[str] = (),
               among: Iterable[str] | None = None) -> list[tuple[str, float]]:
        """Tables (of `among`, else all) best first, with their scores; `named`: tables
        holding a value the question names; `spoken`: tables a field of which it names."""
        named, spoken = set(named), set(spoken)
        # A value named in one table points at it; the same label in twelve status tables
        # ("Closed") points at none of them in particular.
        bonus = 2 * self._top / len(named) if named else 0.0
        said_bonus = self._top / len(spoken) if spoken else 0.0  # likewise a field named in many
        scores = {}
        for table in (self.documents if among is None else among):
            held = said & self.documents.get(table, set())
            scores[table] = (sum(self.weight.get(w, 0.0) for w in held) + (bonus if table in named else 0.0)
                             + (said_bonus if table in spoken else 0.0))
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
