"""Schema linking's deterministic half: the foreign-key graph connects the chosen tables.

The model names the tables a question needs (strategies/grounded.py asks it); it often leaves
out a bridge table (company -> financial_period -> financial_data) or picks two tables no
join path connects. The tables and their foreign keys (plus the joins a domain pack documents)
form an undirected graph; an approximate Steiner tree over it (networkx) is the smallest set
of tables and joins that connects every chosen table, so the linked schema always joins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx
from networkx.algorithms.approximation import steiner_tree

from groundsql.schema.model import Schema

__all__ = ["Join", "LinkedSchema", "connect", "join_graph"]


@dataclass(frozen=True)
class Join:
    left: str  # table.column
    right: str

    def __str__(self) -> str:
        return f"{self.left} = {self.right}"


@dataclass(frozen=True)
class LinkedSchema:
    tables: tuple[str, ...]  # chosen first, then the bridges, as the schema spells them
    bridges: tuple[str, ...]  # tables added only to connect the chosen ones
    joins: tuple[Join, ...]  # the edges of the tree
    unconnected: tuple[str, ...] = ()  # chosen tables no join path reaches


def join_graph(schema: Schema, documented: Iterable[tuple[str, str]] = ()) -> nx.Graph:
    """Tables as nodes (lower-case names), one edge per foreign key or documented join, the
    edge's `joins` attribute holding the column pairs."""
    graph = nx.Graph()
    names = {t.name.lower(): t.name for t in schema.tables}
    graph.add_nodes_from(names)

    def add(left: str, right: str) -> None:
        a, b = left.split(".", 1)[0].lower(), right.split(".", 1)[0].lower()
        if a not in names or b not in names or a == b:
            return
        if graph.has_edge(a, b):
            graph[a][b]["joins"].add(Join(left, right))
        else:
            graph.add_edge(a, b, joins={Join(left, right)}, weight=1)

    for table in schema.tables:
        for fk in table.foreign_keys:
            for own, ref in zip(fk.columns, fk.ref_columns):
                add(f"{table.name}.{own}", f"{fk.ref_table}.{ref}")
    for left, right in documented:
        add(left, right)
    return graph


def connect(schema: Schema, chosen: Sequence[str], graph: nx.Graph | None = None) -> LinkedSchema:
    """The chosen tables (unknown names dropped), the bridge tables that connect them, and the
    joins of the connecting tree. Tables in different components stay unconnected."""
    graph = graph if graph is not None else join_graph(schema)
    spelled = {t.name.lower(): t.name for t in schema.tables}
    wanted = list(dict.fromkeys(c.lower() for c in chosen if c.lower() in spelled))
    if len(wanted) < 2:
        return LinkedSchema(tuple(spelled[w] for w in wanted), (), ())
    # The largest group of chosen tables that can be connected at all is connected; the rest
    # are reported (a question spanning two unrelated parts of a schema needs no join).
    groups: dict[int, list[str]] = {}
    components = list(nx.connected_components(graph))
    component_of = {n: i for i, c in enumerate(components) for n in c}
    for table in wanted:
        groups.setdefault(component_of[table], []).append(table)
    part, main = max(groups.items(), key=lambda item: len(item[1]))
    # networkx's Steiner tree needs a connected graph: the chosen tables' own component.
    within = graph.subgraph(components[part])
    tree = steiner_tree(within, main, weight="weight") if len(main) > 1 else nx.Graph()
    joins = tuple(sorted((j for a, b in tree.edges for j in graph[a][b]["joins"]), key=str))
    members = set(tree.nodes) | set(main)
    bridges = sorted(members - set(wanted))
    unconnected = [w for w in wanted if w not in members]
    return LinkedSchema(
        tables=tuple(spelled[t] for t in [*wanted, *bridges] if t in members or t in wanted),
        bridges=tuple(spelled[b] for b in bridges),
        joins=joins,
        unconnected=tuple(spelled[u] for u in unconnected),
    )
