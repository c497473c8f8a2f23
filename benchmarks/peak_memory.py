"""Run a command; print its wall time and the peak of its whole process tree's resident memory.

`/usr/bin/time -v` reports the largest single process, but groundsql runs its queries in
worker processes: what a machine must hold is the sum over the tree. Sampled every 0.1 s
from /proc (Linux), so a peak shorter than that can be missed.

    python benchmarks/peak_memory.py -- .venv/bin/groundsql init --db sqlite:///x.sqlite --out pack
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(parent, []).append(int(entry))
    return tree


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kib(root: int) -> int:
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss_kib(pid)
        todo += tree.get(pid, [])
    return total


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1:] if "--" in argv else argv[1:]
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    start = time.perf_counter()
    process = subprocess.Popen(command)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss_kib(process.pid))
        time.sleep(0.1)
    print(f"exit {process.returncode}; wall {time.perf_counter() - start:.1f} s; "
          f"peak resident memory of the process tree {peak / 2**20:.2f} GiB", file=sys.stderr)
    return process.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
