"""Latency of a question through the server against `groundsql ask` in a fresh process.

    .venv/bin/python -m tests.latency [--strategy zero-shot] [--model qwen2.5-coder-1.5b]

Two different questions on the demo database, no answer cache anywhere: each once with
`groundsql ask` in a new process, the first after emptying the saved prompt states (so it
computes the schema prompt, as on a database never asked before) and the second loading the
state the first left; then both through one `groundsql serve` (the model loaded once at start,
the schema's prompt state loaded or kept warm). Wall times, as a client sees them.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from groundsql.config import data_home
from tests.server_harness import server_process

QUESTIONS = ("How many companies are headquartered in Germany?",
             "Which five companies have the most employees?")


def cli_seconds(question: str, strategy: str, model: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "groundsql.cli", "ask", "--no-cache", "--strategy", strategy,
                           "--model", model, question], capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: the model found no answer, which still took the time
        raise RuntimeError(done.stderr)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategy", default="zero-shot")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = parser.parse_args()
    shutil.rmtree(data_home() / "prompt-states", ignore_errors=True)
    rows = [(f"`groundsql ask`, new process: question {n}" + (", no saved prompt state" if n == 1 else ""),
             cli_seconds(q, args.strategy, args.model)) for n, q in enumerate(QUESTIONS, 1)]
    folder = Path(tempfile.mkdtemp())
    config = {"state_url": f"sqlite:///{folder / 'state.sqlite'}", "auth": False,
              "llm": {"model": args.model, "cache": False}, "databases": {"demo": {"strategy": args.strategy}}}
    start = time.perf_counter()
    with server_process(config, folder) as url:
        rows.append(("`groundsql serve`: start until it answers /healthz", time.perf_counter() - start))
        for n, question in enumerate(QUESTIONS, 1):
            sent = time.perf_counter()
            answer = httpx.post(f"{url}/v1/ask", json={"database": "demo", "question": question}, timeout=900)
            answer.raise_for_status()
            rows.append((f"through the server: question {n}", time.perf_counter() - sent))
    print(f"strategy {args.strategy}, model {args.model}\n\n| | seconds |\n|---|---:|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
