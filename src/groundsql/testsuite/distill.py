"""Distillation: the fewest database variants that tell a gold query from its near misses.

Zhong, Yu and Klein (2020) fill many random variants of a database, run the gold and each of
its mutations on every one, and keep a small subset by greedy set cover: the variant that
tells the gold apart from the most mutations not yet told apart, then the next, and so on.
A mutation is "killed" by a variant when its result there differs from the gold's under the
official comparison (results_match); the share killed measures how strict the suite is.
Some mutations mean the same as the gold (COUNT(*) against COUNT(primary key)) and can never
be killed, so a share below 1 is expected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from groundsql.evaluation.execution_match import results_match

__all__ = ["Distillation", "Rows", "distill", "kills"]

Rows = list[tuple[Any, ...]]


@dataclass(frozen=True)
class Distillation:
    variants: tuple[int, ...]  # the chosen variants, in the order they were chosen
    killed: int  # mutations some chosen variant kills
    total: int  # all mutations
    survivors: tuple[int, ...]  # indices of the mutations no chosen variant kills

    @property
    def share(self) -> float:
        """The share of mutations killed; 1.0 when there were none to kill."""
        return self.killed / self.total if self.total else 1.0


def kills(gold: Rows | None, mutant: Rows | None, order_matters: bool) -> bool:
    """Whether a variant where the gold returned `gold` tells `mutant` apart from it.

    A variant where the gold itself failed (None) tells nothing; a mutant that failed where
    the gold ran is told apart, as a prediction that errors is wrong.
    """
    if gold is None:
        return False
    if mutant is None:
        return True
    return not results_match(gold, mutant, order_matters)


def distill(
    gold_results: Sequence[Rows | None],
    mutant_results: Sequence[Sequence[Rows | None]],
    order_matters: bool,
    max_variants: int | None = None,
    keep: Sequence[int] = (0,),
) -> Distillation:
    """Greedy set cover over the variants.

    `gold_results[v]` is the gold's result on variant v, `mutant_results[m][v]` the m-th
    mutation's (None: it failed to run there). The variants in `keep` come first, always
    (variant 0, the original database, by default, so the suite still holds real data); then
    the variant killing the most mutations not yet killed (ties: the lowest index), until none
    kills another or `max_variants` variants are chosen (`keep` is never cut by it).
    """
    variant_count = len(gold_results)
    for m, row in enumerate(mutant_results):
        if len(row) != variant_count:
            raise ValueError(
                f"mutation {m} has {len(row)} results for {variant_count} variants"
            )
    for v in keep:
        if not 0 <= v < variant_count:
            raise ValueError(f"variant {v} to keep is not among the {variant_count} variants")

    killed_by = [
        {m for m, row in enumerate(mutant_results) if kills(gold, row[v], order_matters)}
        for v, gold in enumerate(gold_results)
    ]
    chosen: list[int] = list(dict.fromkeys(keep))
    alive = set(range(len(mutant_results))).difference(*(killed_by[v] for v in chosen))
    while alive and variant_count and (max_variants is None or len(chosen) < max_variants):
        # max keeps the first of equal keys, so ties go to the lowest index.
        best = max(range(variant_count), key=lambda v: len(killed_by[v] & alive))
        if not killed_by[best] & alive:
            break
        chosen.append(best)
        alive -= killed_by[best]
    return Distillation(
        variants=tuple(chosen),
        killed=len(mutant_results) - len(alive),
        total=len(mutant_results),
        survivors=tuple(sorted(alive)),
    )
