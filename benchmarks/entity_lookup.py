"""Entity linking at scale: build time and size of the name index, lookup latency, top-1 hits.

Over N synthetic company names (deterministic, confusable on purpose: shared words, the same
name with different legal forms), or over the names of an entity table of a real database:

    .venv/bin/python benchmarks/entity_lookup.py --names 1000000
    .venv/bin/python benchmarks/entity_lookup.py --db sqlite:///benchmarks/warehouse/warehouse.sqlite \\
        --table customer --key customer_id --column customer_name

Reports the index's build time and its arrays' bytes, the process's peak memory, and the
latency (p50, p95) of a name lookup (`EntityIndex.candidates`, a name with one letter dropped)
and of linking a whole question (`EntityIndex.link`), with the share of misspelt names whose
row is among the best-scored candidates (names that differ only in a legal form tie).
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import time

from groundsql.grounding.entities import EntityIndex, _Name, normalize_name
from groundsql.packs.model import EntityTable

_FIRST = ("Alder Bright Cedar Dun Elm Fair Glen Hazel Iron Kings Lark Maple North Oak Pine Quarry Raven "
          "Silver Thorn Upland Vale West Yarrow Zephyr Amber Birch Cobalt Delta Ember Falcon").split()
_SECOND = "water field wood ford gate stone bridge brook haven ridge moor crest dale wick ton bury mere port vale hurst".split()
_TRADE = ("Logistics Timber Foods Systems Metals Chemicals Textiles Motors Energy Pharma Plastics Glass Paper "
          "Tools Electronics Apparel Marine Aero Robotics Grain").split()
_FORM = ["GmbH", "Ltd", "Inc.", "S.A.", "Holdings", "AB", "B.V.", "plc", "", "Group"]


def synthetic(n: int, seed: int = 1) -> list[_Name]:
    rng, seen, names = random.Random(seed), set(), []
    table = EntityTable(table="customer", key="customer_id", names=("customer_name",), kind="customer")
    while len(names) < n:
        name = " ".join(p for p in (rng.choice(_FIRST) + rng.choice(_SECOND), rng.choice(_TRADE),
                                    rng.choice(["", rng.choice(_TRADE)]), rng.choice(_FORM)) if p)
        if name in seen:
            name = f"{name} {len(names) % 97}"
            if name in seen:
                continue
        seen.add(name)
        names.append(_Name(table, "customer_name", len(names), name, normalize_name(name)))
    return names


def from_database(url: str, table: str, key: str, column: str) -> EntityIndex:
    from groundsql.db import Database

    entity = EntityTable(table=table, key=key, names=(column,))
    return EntityIndex.build(Database(url), [entity])


def percentiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--names", type=int, default=1_000_000)
    parser.add_argument("--db")
    parser.add_argument("--table")
    parser.add_argument("--key")
    parser.add_argument("--column")
    parser.add_argument("--lookups", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    if args.db:
        index = from_database(args.db, args.table, args.key, args.column)
        source = f"{args.table}.{args.column} of {args.db}"
    else:
        names = synthetic(args.names)
        start = time.perf_counter()  # the index alone, not the making of the names
        index = EntityIndex(names)
        source = "synthetic names"
    built = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"{len(index.names):,} names ({source}): index built in {built:.1f} s, "
          f"3-gram arrays {index._trigrams.nbytes / 2**20:.0f} MiB, peak memory {peak:.2f} GiB")
    rng = random.Random(7)
    lookups, hits = [], 0
    for _ in range(args.lookups):
        entry = rng.choice(index.names)
        cut = rng.randrange(1, max(2, len(entry.name) - 1))
        typo = entry.name[:cut] + entry.name[cut + 1:]
        t = time.perf_counter()
        found = index.candidates(typo)
        lookups.append(time.perf_counter() - t)
        # Names differing only in a legal form ("Ltd", "GmbH") normalise alike and tie.
        hits += bool(found) and entry.key in {e.key for score, e in found if score == found[0][0]}
    links = []
    for _ in range(max(20, args.lookups // 4)):
        entry = rng.choice(index.names)
        t = time.perf_counter()
        index.link(f"What was the total revenue of {entry.name} in 2023?")
        links.append(time.perf_counter() - t)
    print(f"name lookup (one letter dropped): {percentiles(lookups)}; right row among the best {hits} of {args.lookups}")
    print(f"question linked: {percentiles(links)}")


if __name__ == "__main__":
    main()
