"""A bounded load on a live server, on loopback: N clients, M requests, statuses and latencies.

    .venv/bin/python -m tests.load                       # the replay backend: 32 clients, 1,000 requests
    .venv/bin/python -m tests.load --real --clients 4 --requests 8   # the real 1.5B model

A client told 429 waits as long as Retry-After says and tries again (that attempt counts as a
request of its own); a client never waits on a request longer than its timeout, so a hang shows
up as a timeout, not as a stuck run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

# What the replay backend can answer on Spider's concert_singer, and plain SQL.
ASK = {"database": "singers", "question": "How many singers do we have?"}
SQL = {"database": "singers", "sql": "SELECT Name, Country FROM singer WHERE Age > 30 ORDER BY Name"}


@dataclass
class LoadResult:
    statuses: Counter[int] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)  # of answered requests (2xx)
    timeouts: int = 0
    answered: dict[str, int] = field(default_factory=Counter)  # per endpoint, 2xx
    elapsed_s: float = 0.0

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))] if ordered else 0.0

    def summary(self) -> str:
        return (f"{sum(self.statuses.values())} requests in {self.elapsed_s:.1f} s; statuses "
                f"{dict(sorted(self.statuses.items()))}; timeouts {self.timeouts}; latency of answered "
                f"p50 {self.percentile(50):.3f} s, p99 {self.percentile(99):.3f} s, max {max(self.latencies, default=0):.3f} s")


async def run_load(url: str, *, clients: int, requests: int, headers: dict[str, str] | None = None,
                   payloads: tuple[tuple[str, dict[str, Any]], ...] = (("/v1/ask", ASK), ("/v1/sql", SQL)),
                   timeout_s: float = 120.0) -> LoadResult:
    result = LoadResult()
    issued = 0
    start = time.perf_counter()

    async def client(http: httpx.AsyncClient, number: int) -> None:
        nonlocal issued
        while issued < requests:
            path, body = payloads[(issued + number) % len(payloads)]
            issued += 1
            sent = time.perf_counter()
            try:
                response = await http.post(url + path, json=body, headers=headers, timeout=timeout_s)
            except httpx.TimeoutException:
                result.timeouts += 1
                continue
            result.statuses[response.status_code] += 1
            if response.status_code < 300:
                result.latencies.append(time.perf_counter() - sent)
                result.answered[path] += 1
            elif response.status_code == 429:
                await asyncio.sleep(float(response.headers.get("retry-after", "1")))

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits) as http:
        await asyncio.gather(*(client(http, n) for n in range(clients)))
    result.elapsed_s = time.perf_counter() - start
    return result


def main() -> None:
    from tests.conftest import spider_db
    from tests.server_harness import REPLAY_LLM, live_server

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--max-concurrent", type=int, default=8)
    parser.add_argument("--real", action="store_true", help="the real 1.5B model instead of the replay backend")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    db = folder / "concert_singer.sqlite"
    shutil.copy(spider_db("concert_singer"), db)
    llm = {"model": "qwen2.5-coder-1.5b", "cache": False} if args.real else REPLAY_LLM
    config = {"state_url": f"sqlite:///{folder / 'state.sqlite'}", "auth": False, "llm": llm,
              "max_concurrent": args.max_concurrent, "databases": {"singers": {"url": str(db), "strategy": "zero-shot"}}}
    payloads = (("/v1/ask", ASK),) if args.real else (("/v1/ask", ASK), ("/v1/sql", SQL))
    if args.real:  # a different question each time: no answer comes from a cache
        payloads = tuple(("/v1/ask", {"database": "singers", "question": q}) for q in (
            "How many singers do we have?", "List the names of singers from France.",
            "What is the average age of all singers?", "Which stadium has the largest capacity?"))
    with live_server(config) as (url, service):
        result = asyncio.run(run_load(url, clients=args.clients, requests=args.requests, payloads=payloads,
                                      timeout_s=600 if args.real else 60))
        audited = len(service.state.audit_rows(1_000_000))
    print(result.summary())
    print(f"answered per endpoint {dict(result.answered)}; audit rows {audited}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
