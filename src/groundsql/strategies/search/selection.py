"""Trajectory selection (IESR 3.3): which finished trajectory answers.

Trajectories whose queries give the same result on the probe databases form one candidate,
unless the database holds no rows and that result is empty everywhere (vacuous: the queries
agree only in finding nothing, so each stands alone). Each is scored

    score = alpha * Exec + beta * DiscConf + gamma * ConsVote      (0.4, 0.2, 0.4 by default)

Exec is 1 for a query that ran and whose result is not explained away (0.5 for a query the
tools sent back, e.g. an empty result caused by a filter value that is not in the data, and for
a vacuous one); ConsVote is the candidate's share of the votes: one per direct sample,
`reasoning_vote` (0.5) per trajectory that went through reasoning actions (with the 1.5B model
on Spider those are right about half as often as direct samples: 14-30 % against 48 %, and a
plain count let their shared mistakes outvote the samples), the discriminator's completions
among them (each votes for the candidate whose result it gives); DiscConf is the
discriminator's verdict: the candidate's trajectory is masked from a random step and completed again by the same model with other sampling; 1 when the
completion gives the candidate's result, else 0. Only the leading candidates are checked (none
when the trajectories all agree, or when the leader's score without a check beats every rival's
with a confirmation), and an unchecked candidate has no confirmation, 0:
with a neutral 0.5 for the unchecked, two leaders whose checks failed fell behind a candidate
nobody checked, and a single trajectory outranked the majority (Spider, 1.5B: 3 of the first
31 questions of a run lost a right leader that way).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from groundsql.config import SearchConfig
from groundsql.strategies.search.actions import SearchEnvironment, Trajectory
from groundsql.strategies.search.probe import Probe, Signature

__all__ = ["Candidate", "select_candidate"]


@dataclass(frozen=True)
class Candidate:
    trajectory: Trajectory
    signature: Signature | None
    vacuous: bool = False  # ran, but found nothing on any probe database


def select_candidate(candidates: list[Candidate], env: SearchEnvironment, probe: Probe,
                     config: SearchConfig, rng: random.Random) -> tuple[Candidate, list[dict[str, Any]]]:
    groups: dict[Any, list[Candidate]] = {}
    for c in candidates:
        key = ("alone", c.trajectory.sql) if c.signature is None or c.vacuous else c.signature
        groups.setdefault(key, []).append(c)
    def weight(trajectory: Trajectory) -> float:
        return 1.0 if trajectory.direct else config.reasoning_vote

    weights = {id(g): sum(weight(c.trajectory) for c in g) for g in groups.values()}
    ordered = sorted(groups.values(), key=lambda g: (-weights[id(g)], -len(g), -_exec(g), candidates.index(g[0])))
    total = sum(weights.values()) or 1.0
    alpha, beta, gamma = config.weights
    base = {id(g): alpha * _exec(g) + gamma * weights[id(g)] / total for g in ordered}
    disc: dict[int, float | None] = {id(g): None for g in ordered}  # None: not checked
    completions: list[tuple[Signature, float]] = []  # the discriminator's completions' results
    if config.discriminator and len(ordered) > 1 and not _decided(ordered, base, beta):
        # A vacuous candidate's completion would agree only in finding nothing: not checked.
        checkable = [g for g in ordered if not g[0].vacuous]
        for group in checkable[:config.discriminated]:
            checked = _discriminate(group[0], env, probe, rng)
            if checked is not None:
                disc[id(group)], completion = checked
                if completion is not None:
                    completions.append((completion[0], weight(completion[1])))
    # A completion is one more sampled trajectory: it votes for the candidate whose result it
    # gives, whichever candidate it was asked to check.
    votes = {id(g): weights[id(g)] + (0.0 if g[0].vacuous or g[0].signature is None else
                                      sum(w for sig, w in completions if sig == g[0].signature))
             for g in ordered}
    total += sum(w for _, w in completions)
    scored = [(alpha * _exec(g) + gamma * votes[id(g)] / total + beta * (disc[id(g)] or 0.0), g)
              for g in ordered]
    best = max(scored, key=lambda sg: (sg[0], -ordered.index(sg[1])))[1]
    # A candidate's other queries (same result on the probe databases, other SQL) are listed
    # too: they may still differ elsewhere, and an evaluation's best of pool reads them all.
    report = [{"sql": g[0].trajectory.sql, "trajectories": len(g),
               "same_result": list(dict.fromkeys(c.trajectory.sql for c in g[1:] if c.trajectory.sql != g[0].trajectory.sql)),
               "votes": round(votes[id(g)], 3), "exec": _exec(g),
               "discriminator": disc[id(g)], "score": round(s, 3),
               "actions": [st.action for st in g[0].trajectory.steps],
               "baseline": any(c.trajectory.baseline for c in g)} for s, g in scored]
    return best[0], report


def _decided(ordered: list[list[Candidate]], base: dict[int, float], beta: float) -> bool:
    """Whether the first candidate wins whatever the discriminator says: its score without
    the check is at least every other's with a full check (a tie goes to the first)."""
    leader, *rest = ordered
    return all(base[id(leader)] + 1e-9 >= base[id(g)] + beta for g in rest)


def _exec(group: list[Candidate]) -> float:
    return max(1.0 if c.trajectory.ran and c.trajectory.error is None and not c.vacuous else
               0.5 if c.trajectory.ran else 0.0 for c in group)


def _discriminate(candidate: Candidate, env: SearchEnvironment, probe: Probe,
                  rng: random.Random) -> tuple[float, tuple[Signature, Trajectory] | None] | None:
    """Mask the trajectory from a random step, let the model complete it with other sampling;
    whether the completion agrees, and the completion's result with its trajectory (None when
    it did not run or found nothing anywhere). None when the budget allows no check."""
    trajectory = candidate.trajectory
    reasoning = [s for s in trajectory.steps if s.action not in ("sql_generation", "sql_revision")]
    cut = rng.randrange(0, len(reasoning) + 1)  # keep this many reasoning steps
    kept = reasoning[:cut]
    computed = trajectory.computed if any(s.action == "equation_analysis" for s in kept) else ()
    state = Trajectory(steps=tuple(kept), computed=computed, baseline=trajectory.baseline)
    while not env.is_terminal(state):  # the turns were asked before: now they are sampled
        if env.exhausted():
            return None
        state = env.apply(state, env.default_action(state))
    if not state.sql or not state.ran:
        return 0.0, None
    signatures = probe.signatures([state.sql, trajectory.sql or ""])
    mine, theirs = signatures.get(trajectory.sql or ""), signatures.get(state.sql)
    verdict = 1.0 if mine is not None and theirs == mine else 0.0
    return verdict, None if probe.vacuous(state.sql) or theirs is None else (theirs, state)

