"""Query worker processes, seen from the caller: checked out one request at a time, killed
when a query outlives its deadline, replaced when they die.

The worker interrupts a query itself when its time is up (each engine's own interrupt); this
side waits a little longer and then kills the process, because some work cannot be
interrupted (DuckDB sorting a 30-million-element list ignores the interrupt for seconds).
Memory is bounded by the worker's address-space limit; a query that exceeds it fails, or
ends its worker, and the caller gets an error, not a crash.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

from groundsql.db.worker import dump, load_reply
from groundsql.errors import DatabaseError

# After its own timeout a worker has this long to answer before it is killed.
_GRACE_S = 1.0
_START_TIMEOUT_S = 60.0


class WorkerLost(DatabaseError):
    """The worker did not answer in time or stopped; it has been killed."""

    def __init__(self, message: str, *, timed_out: bool) -> None:
        self.timed_out = timed_out
        super().__init__(message)


class _Worker:
    def __init__(self, memory_mb: int) -> None:
        ours, theirs = socket.socketpair()
        env = {**os.environ, "MALLOC_ARENA_MAX": "2"}  # fewer malloc arenas: less address space
        self.process = subprocess.Popen(
            [sys.executable, "-m", "groundsql.db.worker", str(theirs.fileno()), str(memory_mb)],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env,
        )
        theirs.close()
        self.channel = Connection(ours.detach())
        self.pending_closes: list[str] = []  # databases whose connections to drop first
        self._receive(_START_TIMEOUT_S)  # the worker says it is ready

    def call(self, request: dict[str, Any], timeout_s: float, max_reply_bytes: int) -> dict[str, Any]:
        closes, self.pending_closes = self.pending_closes, []
        for key in closes:
            self.channel.send_bytes(dump({"op": "close", "key": key}))
        self.channel.send_bytes(dump(request))
        return self._receive(timeout_s, max_reply_bytes)

    def _receive(self, timeout_s: float, max_bytes: int | None = None) -> dict[str, Any]:
        try:
            if not self.channel.poll(timeout_s):
                self.kill()
                raise WorkerLost("the query did not stop in time; its worker was stopped", timed_out=True)
            return load_reply(self.channel.recv_bytes(max_bytes))
        except (EOFError, OSError):
            code = self.kill()
            raise WorkerLost(_death(code), timed_out=False) from None

    def kill(self) -> int | None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait()


def _death(code: int | None) -> str:
    if code is not None and code < 0:
        return (f"the query's worker process was ended by signal {-code}, most likely for using "
                "more memory than database.memory_mb allows")
    return f"the query's worker process stopped (exit code {code}), most likely out of memory"


class WorkerPool:
    """At most `size` workers; a request waits for a free one."""

    def __init__(self, size: int, memory_mb: int) -> None:
        self.size = size
        self.memory_mb = memory_mb
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()
        self._starting = 0
        self._free = threading.Condition()

    def run(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        worker = self._checkout()
        try:
            # A pickled reply is larger than the rows it carries, but not by this much.
            reply = worker.call(request, timeout_s + _GRACE_S, 4 * request["max_bytes"] + 2**20)
        except BaseException:
            worker.kill()  # also on Ctrl-C: its query may still be running
            self._release(worker, keep=False)
            raise
        self._release(worker, keep=True)
        return reply

    def close_connections(self, key: str) -> None:
        """Drop a database's connections in every worker before its next query, so that a
        DuckDB file closed by its `Database` is not held open by a worker."""
        with self._free:
            for worker in self._live:
                worker.pending_closes.append(key)

    def shutdown(self) -> None:
        with self._free:
            workers = list(self._live)
            self._idle.clear()
            self._live.clear()
        for worker in workers:
            worker.kill()

    def _checkout(self) -> _Worker:
        with self._free:
            while not self._idle and len(self._live) + self._starting >= self.size:
                self._free.wait()
            if self._idle:
                return self._idle.pop()
            self._starting += 1
        try:
            worker = _Worker(self.memory_mb)
        except BaseException:
            with self._free:
                self._starting -= 1
                self._free.notify()
            raise
        with self._free:
            self._starting -= 1
            self._live.add(worker)
        return worker

    def _release(self, worker: _Worker, *, keep: bool) -> None:
        with self._free:
            if keep:
                self._idle.append(worker)
            else:
                self._live.discard(worker)
            self._free.notify()


_POOLS: dict[tuple[int, int], WorkerPool] = {}
_POOLS_LOCK = threading.Lock()


def pool_for(workers: int, memory_mb: int) -> WorkerPool:
    """The process-wide pool for these settings: every `Database` shares its workers."""
    with _POOLS_LOCK:
        pool = _POOLS.get((workers, memory_mb))
        if pool is None:
            pool = _POOLS[(workers, memory_mb)] = WorkerPool(workers, memory_mb)
        return pool


@atexit.register
def _shutdown_all() -> None:
    for pool in list(_POOLS.values()):
        pool.shutdown()
