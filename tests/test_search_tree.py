"""The tree search itself, on a scripted environment (no model, no database)."""

from __future__ import annotations

import math

import pytest

from groundsql.strategies.search.tree import Node, backpropagate, expand, rollout, search, select, uct


class Script:
    """States are tuples of actions. "x" and "y" are reasoning steps (each at most once);
    "sql" ends a trajectory. Rewards are scripted per trajectory; every apply is counted."""

    def __init__(self, rewards: dict[tuple[str, ...], float], default: float = 0.0,
                 steps: tuple[str, ...] = ("x", "y")) -> None:
        self.rewards, self.default, self.applied, self.steps = rewards, default, [], steps

    def actions(self, state):
        return ["sql"] + [a for a in self.steps if a not in state]

    def apply(self, state, action):
        self.applied.append(state + (action,))
        return state + (action,)

    def default_action(self, state):
        return "sql"

    def is_terminal(self, state):
        return bool(state) and state[-1] == "sql"

    def reward(self, state):
        return self.rewards.get(state, self.default)


def test_uct_prefers_unvisited_then_trades_mean_for_exploration() -> None:
    parent = Node(state=(), visits=10)
    fresh, good, tried = Node(()), Node((), visits=5, total=4.0), Node((), visits=1, total=0.5)
    assert uct(fresh, parent.visits, 1.4) == math.inf
    assert uct(good, 10, 0.0) == pytest.approx(0.8)
    assert uct(good, 10, 1.0) == pytest.approx(0.8 + math.sqrt(math.log(10) / 5))
    # With exploration the rarely tried child wins, without it the better mean does.
    assert uct(tried, 10, 1.4) > uct(good, 10, 1.4)
    assert uct(tried, 10, 0.0) < uct(good, 10, 0.0)


def test_backpropagation_adds_the_reward_along_the_path_only() -> None:
    root = Node(())
    a = Node(("x",), root, "x", 1)
    b = Node(("x", "sql"), a, "sql", 2)
    sibling = Node(("y",), root, "y", 1)
    root.children, a.children = [a, sibling], [b]
    backpropagate(b, 0.75)
    backpropagate(b, 0.25)
    assert [(n.visits, n.total) for n in (root, a, b)] == [(2, 1.0), (2, 1.0), (2, 1.0)]
    assert (sibling.visits, sibling.total) == (0, 0.0)
    assert b.path() == [root, a, b]


def test_expand_then_rollout_reach_a_terminal_within_the_depth_limit() -> None:
    env = Script({})
    root = Node(())
    root.untried = list(env.actions(()))
    root.untried = ["x", "y", "sql"]
    child = expand(root, env)
    assert child.state == ("x",) and root.untried == ["y", "sql"]
    end = rollout(child, env, depth_limit=5)
    assert end.state == ("x", "sql") and env.is_terminal(end.state) and end.depth == 2
    assert rollout(Node(("x",), depth=3), env, depth_limit=3).state == ("x",)  # limit reached


def test_select_follows_the_best_child_of_a_fully_expanded_node() -> None:
    env = Script({})
    root = Node((), visits=4)
    good = Node(("x",), root, "x", 1, visits=2, total=2.0)
    bad = Node(("y",), root, "y", 1, visits=2, total=0.0)
    good.untried = ["sql"]
    root.children = [bad, good]
    assert select(root, 0.5, env.is_terminal) is good  # stops where an action is untried


def test_search_concentrates_on_the_rewarding_branch() -> None:
    # Three reasoning steps: 16 trajectories. Those starting with "y" pay, the others do not.
    steps = ("x", "y", "z")
    env = Script({}, default=0.0, steps=steps)
    env.reward = lambda state: 1.0 if state[0] == "y" else 0.1
    result = search((), env, rollouts=9, exploration=0.5, depth_limit=5)
    visits = {c.action: c.visits for c in result.root.children}
    assert visits["y"] > visits["x"] and visits["y"] > visits["z"]
    assert result.root.visits == result.rollouts == 9
    assert sum(1 for n in result.terminals if n.state[0] == "y") >= 4
    # With equal rewards the visits spread evenly over the branches.
    env = Script({}, default=0.5, steps=steps)
    result = search((), env, rollouts=9, exploration=0.5, depth_limit=5)
    counts = sorted(c.visits for c in result.root.children if c.action != "sql")
    assert counts[-1] - counts[0] <= 1


def test_a_finished_trajectory_is_never_revisited() -> None:
    env = Script({("sql",): 1.0}, default=0.0)
    result = search((), env, rollouts=50, exploration=0.0, depth_limit=4)
    states = [n.state for n in result.terminals]
    assert len(states) == len(set(states)) == 5  # each trajectory once, then the tree is done
    assert result.rollouts == 5


def test_search_stops_early_and_when_the_tree_is_exhausted() -> None:
    env = Script({}, default=1.0)
    result = search((), env, rollouts=50, exploration=1.0, depth_limit=4,
                    stop=lambda terminals: len(terminals) >= 3)
    assert len(result.terminals) == 3 and result.rollouts == 3
    # Five distinct trajectories exist: (sql) (x sql) (y sql) (x y sql) (y x sql).
    env = Script({}, default=0.5)
    result = search((), env, rollouts=50, exploration=1.0, depth_limit=4)
    assert sorted(n.state for n in result.terminals) == sorted(
        [("sql",), ("x", "sql"), ("y", "sql"), ("x", "y", "sql"), ("y", "x", "sql")])
    assert result.rollouts < 50  # it ended when nothing was left to expand
    assert len(env.applied) == len(set(env.applied))  # no state was computed twice
