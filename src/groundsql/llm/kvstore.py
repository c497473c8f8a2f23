"""Model states for shared prompt prefixes, kept on disk across processes.

On two CPU cores a question's cost is mostly the prompt: 2,300 tokens of instructions and
schema at ~60 tokens/s is 40 s, and that part is the same for every question on a database.
llama.cpp can save a slot's state (its KV cache) to a file and load it back in milliseconds, so
the first process that computes a prefix leaves it here and every later process, server or
`groundsql ask` starts from it.

A state is only as good as its match: it is filed under a hash of everything that shapes it
(the model file, the runtime's version, the cache's layout and the exact prefix text), and its
own SHA-256 is checked before every load, so a state that is stale, torn or from another model
is never used; it is deleted and computed again. The folder is bounded: the least recently used
states go first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from groundsql.files import write_text_atomic

log = logging.getLogger("groundsql")

_BIN, _META = ".bin", ".json"
_STALE_TMP_S = 3600  # a temporary file this old belongs to a process that died mid-write


def prefix_key(identity: dict[str, Any], prefix: str) -> str:
    """The file name of a state: what shaped it, and the prefix it holds."""
    payload = json.dumps({"identity": identity, "prefix": prefix}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class PrefixStore:
    """A folder of saved states, `KEY.bin` each with a `KEY.json` that vouches for it."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = Path(directory)
        self.max_bytes = max_bytes

    def prepare(self) -> bool:
        """Make the folder; False (and a warning) when it cannot be written, and then the
        model simply computes every prefix, as it would without a store."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.directory, prefix=".probe-", delete=True)
            probe.close()
            return True
        except OSError as err:
            log.warning("prompt-state cache disabled: %s is not writable (%s)", self.directory, err)
            return False

    def temp_name(self) -> str:
        """A fresh name, inside the folder, for the runtime to save a state under."""
        return f".tmp-{os.getpid()}-{time.monotonic_ns()}{_BIN}"

    def find(self, key: str) -> str | None:
        """The file name of a verified state for `key`, or None. A state whose record is
        missing, unreadable or does not match its bytes is deleted."""
        state, meta = self._paths(key)
        if not state.exists():
            return None
        try:
            record = json.loads(meta.read_text(encoding="utf-8"))
            good = (record.get("key") == key and record.get("bytes") == state.stat().st_size
                    and record.get("sha256") == _sha256(state))
        except (OSError, ValueError, AttributeError):
            good = False
        if not good:
            log.warning("ignoring a damaged prompt-state file %s; it will be computed again", state.name)
            self.discard(key)
            return None
        now = time.time()
        os.utime(state, (now, now))  # recently used: pruned last
        return state.name

    def add(self, key: str, saved_name: str, record: dict[str, Any]) -> None:
        """File the state the runtime saved as `saved_name` under `key`, then keep the folder
        within its bound. The record is written first and the state renamed into place last, so
        a reader never finds a state without the record that vouches for it."""
        saved = self.directory / saved_name
        state, meta = self._paths(key)
        try:
            full = {**record, "key": key, "bytes": saved.stat().st_size, "sha256": _sha256(saved),
                    "created": time.time()}
            write_text_atomic(meta, json.dumps(full, indent=1, sort_keys=True))
            os.replace(saved, state)
        except OSError as err:
            log.warning("could not keep a prompt state in %s: %s", self.directory, err)
            saved.unlink(missing_ok=True)
            return
        self.prune()

    def prune(self) -> None:
        """Delete least recently used states until the folder is within `max_bytes`, and
        temporary files left by processes that died mid-write."""
        states = []
        now = time.time()
        for path in self.directory.iterdir():
            try:
                stat = path.stat()
            except OSError:
                continue
            if path.name.startswith(".tmp-"):
                if now - stat.st_mtime > _STALE_TMP_S:
                    path.unlink(missing_ok=True)
            elif path.suffix == _BIN:
                states.append((stat.st_mtime, stat.st_size, path.stem))
        total = sum(size for _, size, _ in states)
        for _, size, key in sorted(states):
            if total <= self.max_bytes:
                break
            self.discard(key)
            total -= size

    def _paths(self, key: str) -> tuple[Path, Path]:
        return self.directory / f"{key}{_BIN}", self.directory / f"{key}{_META}"

    def discard(self, key: str) -> None:
        for path in self._paths(key):
            path.unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
