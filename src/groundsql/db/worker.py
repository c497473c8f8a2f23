"""The query worker: a process that runs queries, so that one that overruns its time or
memory can be killed without taking the caller down (the parent side is db/pool.py).

`python -m groundsql.db.worker FD MEMORY_MB` serves requests on the socket FD until the parent
closes it. Its address space is capped at MEMORY_MB: an allocation beyond it fails inside the
engine (DuckDB and SQLite report it as an error) or ends this process, never the parent.
Connections are kept per database between requests (a few, least recently used first out).

Messages are pickled dicts. The parent trusts what it sends; what comes back carries database
values, so the parent unpickles it with `load_reply`, which knows only plain value types.
"""

from __future__ import annotations

import io
import pickle
import resource
import signal
import sys
import threading
from collections import OrderedDict
from multiprocessing.connection import Connection
from typing import Any

_MAX_CONNECTIONS = 8

# What a reply may contain: plain values (engines/base.py `plain_value` makes sure of it).
_SAFE_GLOBALS = {
    ("builtins", name) for name in ("tuple", "list", "dict", "set", "frozenset", "str", "bytes",
                                    "int", "float", "bool", "complex")
} | {("datetime", name) for name in ("date", "time", "datetime", "timedelta", "timezone")} | {
    ("decimal", "Decimal")}


class _ReplyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a query worker sent an unexpected type {module}.{name}")


def load_reply(data: bytes) -> dict[str, Any]:
    return _ReplyUnpickler(io.BytesIO(data)).load()


def dump(message: dict[str, Any]) -> bytes:
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


class _Connections:
    """Open connections by database key, least recently used closed first."""

    def __init__(self) -> None:
        self._open: OrderedDict[str, tuple[Any, Any]] = OrderedDict()

    def get(self, spec: dict[str, Any]) -> tuple[Any, Any]:
        key = spec["key"]
        if key in self._open:
            engine, conn = self._open[key]
            if engine.usable(conn):
                self._open.move_to_end(key)
                return self._open[key]
            self.close(key)
        from groundsql.db.engines import engine_for

        engine = engine_for(spec["backend"])
        entry = (engine, engine.connect(spec))
        self._open[key] = entry
        while len(self._open) > _MAX_CONNECTIONS:
            self.close(next(iter(self._open)))
        return entry

    def close(self, key: str) -> None:
        entry = self._open.pop(key, None)
        if entry is not None:
            try:
                entry[0].close(entry[1])
            except Exception:  # noqa: BLE001 - a broken connection is being dropped anyway
                pass


def _run(connections: _Connections, request: dict[str, Any]) -> dict[str, Any]:
    from groundsql.db.engines import Limits, QueryTimedOut, ResultTooLarge

    limits = Limits(request["timeout_s"], request["max_rows"], request["max_bytes"])
    spec = request["spec"]
    try:
        engine, conn = connections.get(spec)
    except MemoryError:
        return {"ok": False, "kind": "memory", "message": "out of memory while opening the database"}
    except Exception as err:  # noqa: BLE001 - the driver's message is the answer
        return {"ok": False, "kind": "connect", "message": _first_line(err)}
    fired = threading.Event()

    def on_timeout() -> None:
        fired.set()
        engine.interrupt(conn)

    timer = threading.Timer(limits.timeout_s, on_timeout)
    timer.start()
    try:
        try:
            columns, rows, truncated = engine.run(conn, request["sql"], limits)
        except Exception:
            if fired.is_set() or engine.usable(conn):
                raise
            # The connection broke (a restarted server, a terminated backend): a read-only
            # query may safely run once more, on a new one.
            connections.close(spec["key"])
            engine, conn = connections.get(spec)
            columns, rows, truncated = engine.run(conn, request["sql"], limits)
        return {"ok": True, "columns": columns, "rows": rows, "truncated": truncated}
    except MemoryError:
        connections.close(spec["key"])
        return {"ok": False, "kind": "memory", "message": "out of memory"}
    except ResultTooLarge as err:
        return {"ok": False, "kind": "too_large", "message": str(err)}
    except Exception as err:  # noqa: BLE001 - every driver has its own error classes
        message = _first_line(err)
        if fired.is_set() or isinstance(err, QueryTimedOut) or "statement timeout" in message:
            return {"ok": False, "kind": "timeout", "message": message}
        if "out of memory" in message.lower() or "Allocation failure" in message:
            connections.close(spec["key"])
            return {"ok": False, "kind": "memory", "message": message}
        if not engine.usable(conn):
            connections.close(spec["key"])
        return {"ok": False, "kind": "database", "message": message}
    finally:
        timer.cancel()
        if fired.is_set():
            # The interrupt races the query's own end: PostgreSQL's cancel request or MySQL's
            # KILL QUERY can land on the clean-up after it (leaving the session state
            # unreset) or on the next query. A connection that was interrupted is not reused.
            timer.join()
            connections.close(spec["key"])


def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def serve(channel: Connection) -> None:
    connections = _Connections()
    channel.send_bytes(dump({"ok": True, "ready": True}))
    while True:
        try:
            request = pickle.loads(channel.recv_bytes())
        except EOFError:
            return
        if request["op"] == "close":
            connections.close(request["key"])
            continue
        reply = _run(connections, request)
        try:
            data = dump(reply)
        except MemoryError:
            data = dump({"ok": False, "kind": "memory", "message": "out of memory"})
        channel.send_bytes(data)


def main(argv: list[str]) -> None:
    fd, memory_mb = int(argv[1]), int(argv[2])
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # Ctrl-C in a terminal reaches the whole process group; the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        serve(Connection(fd))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent is gone (it stopped, or was interrupted): nothing left to answer


if __name__ == "__main__":
    main(sys.argv)
