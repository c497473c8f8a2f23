"""Monte Carlo Tree Search over reasoning actions, independent of what the actions do.

A state is the reasoning so far; an `Environment` says which actions a state allows, applies
one (usually a model call), tells a terminal state (one holding a finished SQL query) and scores
it. The search is the textbook loop (Kocsis & Szepesvari's UCT, as IESR and Alpha-SQL use it):

    select    from the root, follow the child with the highest UCT score while the node is
              fully expanded and not terminal;
    expand    apply one untried action of that node: a new child;
    rollout   from the child, apply the environment's default action until a terminal state
              or the depth limit;
    reward    score the terminal state (execution self-consistency, in strategies/search);
    backprop  add the reward to every node on the path and count the visit.

The budget is a number of rollouts (new trajectories); `stop` lets the caller end early (when
the votes agree).
Pure bookkeeping: no model, no database; tested on a scripted environment.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

S = TypeVar("S")


class Environment(Protocol[S]):
    def actions(self, state: S) -> Sequence[str]:
        """The actions this state allows, most promising first; none for a terminal state."""

    def apply(self, state: S, action: str) -> S:
        """The state after `action` (may call the model)."""

    def default_action(self, state: S) -> str:
        """The action a rollout takes from `state` (towards a terminal state)."""

    def is_terminal(self, state: S) -> bool: ...

    def reward(self, state: S) -> float:
        """The terminal state's score, in [0, 1]."""


@dataclass(eq=False)
class Node(Generic[S]):
    state: S
    parent: Node[S] | None = None
    action: str | None = None  # the action that led here
    depth: int = 0
    untried: list[str] = field(default_factory=list)
    children: list[Node[S]] = field(default_factory=list)
    visits: int = 0
    total: float = 0.0  # the sum of the rewards backpropagated through this node

    @property
    def mean(self) -> float:
        return self.total / self.visits if self.visits else 0.0

    def path(self) -> list[Node[S]]:
        """Root first, this node last."""
        nodes: list[Node[S]] = []
        node: Node[S] | None = self
        while node is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]


def uct(child: Node, parent_visits: int, exploration: float) -> float:
    """Mean reward plus the exploration bonus; an unvisited child comes first."""
    if child.visits == 0:
        return math.inf
    return child.mean + exploration * math.sqrt(math.log(max(parent_visits, 1)) / child.visits)


def select(root: Node, exploration: float, is_terminal: Callable[[object], bool]) -> Node:
    """Descend by UCT while the node is fully expanded and not terminal, into children that
    still have something to explore (a finished trajectory is scored once: revisiting it
    would cost a rollout and teach nothing)."""
    node = root
    while not node.untried and not is_terminal(node.state):
        open_children = [c for c in node.children if not exhausted(c, is_terminal)]
        if not open_children:
            break
        node = max(open_children, key=lambda c: uct(c, node.visits, exploration))
    return node


def exhausted(node: Node, is_terminal: Callable[[object], bool]) -> bool:
    """Nothing left to try below this node."""
    if is_terminal(node.state):
        return True
    return not node.untried and all(exhausted(c, is_terminal) for c in node.children)


def expand(node: Node[S], env: Environment[S]) -> Node[S]:
    """Apply the node's next untried action; the new child."""
    action = node.untried.pop(0)
    state = env.apply(node.state, action)
    child = Node(state, node, action, node.depth + 1)
    child.untried = [] if env.is_terminal(state) else list(env.actions(state))
    node.children.append(child)
    return child


def rollout(node: Node[S], env: Environment[S], depth_limit: int) -> Node[S]:
    """Follow the default action from `node` to a terminal state (or the depth limit). The
    states passed through are kept as nodes, so a later selection can branch from them."""
    while not env.is_terminal(node.state) and node.depth < depth_limit:
        action = env.default_action(node.state)
        if action in node.untried:
            node.untried.remove(action)
        state = env.apply(node.state, action)
        child = Node(state, node, action, node.depth + 1)
        child.untried = [] if env.is_terminal(state) else list(env.actions(state))
        node.children.append(child)
        node = child
    return node


def backpropagate(node: Node, reward: float) -> None:
    for step in node.path():
        step.visits += 1
        step.total += reward


@dataclass
class SearchResult(Generic[S]):
    root: Node[S]
    terminals: list[Node[S]]  # in the order they were reached
    rollouts: int


def search(root_state: S, env: Environment[S], *, rollouts: int, exploration: float,
           depth_limit: int, stop: Callable[[list[Node[S]]], bool] = lambda _: False) -> SearchResult[S]:
    """Run up to `rollouts` select-expand-rollout-backpropagate rounds."""
    root: Node[S] = Node(root_state)
    root.untried = list(env.actions(root_state))
    terminals: list[Node[S]] = []
    done = 0
    while done < rollouts:
        leaf = select(root, exploration, env.is_terminal)
        if exhausted(leaf, env.is_terminal):
            break  # the whole tree is explored
        child = expand(leaf, env) if leaf.untried else leaf
        end = rollout(child, env, depth_limit)
        reward = env.reward(end.state) if env.is_terminal(end.state) else 0.0
        backpropagate(end, reward)
        if env.is_terminal(end.state):
            terminals.append(end)
        done += 1
        if stop(terminals):
            break
    return SearchResult(root, terminals, done)
