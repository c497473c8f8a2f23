"""Saved prompt states (llm/kvstore.py): used only when they verify, bounded on disk, and, with the
real model, loaded by a new process instead of computing the prefix again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groundsql.llm.kvstore import PrefixStore, prefix_key

IDENTITY = {"model": "abc", "runtime": "1", "n_ctx": 2048}


def _saved(store: PrefixStore, key: str, payload: bytes) -> None:
    """What the runtime does on save: write the state under a temporary name; then file it."""
    name = store.temp_name()
    (store.directory / name).write_bytes(payload)
    store.add(key, name, {"tokens": len(payload)})


def test_a_state_is_filed_under_everything_that_shaped_it() -> None:
    key = prefix_key(IDENTITY, "schema")
    assert key == prefix_key(dict(IDENTITY), "schema")
    assert key != prefix_key(IDENTITY, "schema ")
    assert key != prefix_key({**IDENTITY, "model": "other"}, "schema")
    assert key != prefix_key({**IDENTITY, "runtime": "2"}, "schema")


def test_a_verified_state_is_found_and_kept(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, 10_000)
    assert store.prepare()
    key = prefix_key(IDENTITY, "p")
    assert store.find(key) is None
    _saved(store, key, b"state" * 10)
    assert store.find(key) == f"{key}.bin"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "drop the record", "garble the record",
                                    "record of another key"])
def test_a_damaged_state_is_never_trusted_and_is_removed(tmp_path: Path, damage: str) -> None:
    store = PrefixStore(tmp_path, 10_000)
    key = prefix_key(IDENTITY, "p")
    _saved(store, key, b"state" * 10)
    state, meta = tmp_path / f"{key}.bin", tmp_path / f"{key}.json"
    if damage == "flip a byte":
        state.write_bytes(b"Xtate" + state.read_bytes()[5:])
    elif damage == "truncate":
        state.write_bytes(state.read_bytes()[:7])
    elif damage == "drop the record":
        meta.unlink()
    elif damage == "garble the record":
        meta.write_text("{not json")
    else:
        record = json.loads(meta.read_text())
        meta.write_text(json.dumps({**record, "key": prefix_key(IDENTITY, "q")}))
    assert store.find(key) is None
    assert not state.exists() and not meta.exists()


def test_the_folder_keeps_to_its_bound_least_recently_used_first(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, 350)
    keys = [prefix_key(IDENTITY, str(i)) for i in range(3)]
    for age, key in enumerate(keys):
        _saved(store, key, b"x" * 100)
        past = time.time() - 100 + age  # first saved, oldest
        os.utime(tmp_path / f"{key}.bin", (past, past))
    # Using the oldest makes it the newest: the second one goes when the third arrives.
    assert store.find(keys[0])
    _saved(store, prefix_key(IDENTITY, "3"), b"x" * 100)
    left = {p.stem for p in tmp_path.glob("*.bin")}
    assert keys[0] in left and keys[1] not in left and prefix_key(IDENTITY, "3") in left
    assert len(left) == 3 and not (tmp_path / f"{keys[1]}.json").exists()


def test_temporary_files_of_dead_writers_are_swept(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, 10_000)
    old, fresh = tmp_path / ".tmp-1-2.bin", tmp_path / ".tmp-3-4.bin"
    old.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(old, (time.time() - 7200,) * 2)
    store.prune()
    assert not old.exists() and fresh.exists()  # a fresh one may be a live writer's


def test_an_unwritable_folder_turns_the_store_off(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert not PrefixStore(blocker / "states", 10_000).prepare()


# -- the real local model, across processes -------------------------------------------------------

ASK = """
import json, sys
from pathlib import Path
from groundsql.llm.base import chat
from groundsql.llm.kvstore import PrefixStore
from groundsql.llm.llamacpp import LlamaCppLLM
llm = LlamaCppLLM("qwen2.5-coder-0.5b", n_ctx=2048, prefix_store=PrefixStore(Path(sys.argv[1]), 10**9))
system = "You write SQLite SQL. Table singer(singer_id, name, country, age). " * 15
done = llm.complete(chat(system, sys.argv[2], max_tokens=24))
print(json.dumps({"prompt": done.prompt_tokens, "cached": done.cached_prompt_tokens, "text": done.text}))
"""


def _ask_in_new_process(states: Path, question: str) -> dict:
    run = subprocess.run([sys.executable, "-c", ASK, str(states), question], capture_output=True, text=True,
                         timeout=600, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.model
def test_a_new_process_loads_the_prefix_instead_of_computing_it(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    first = _ask_in_new_process(tmp_path, "How many singers are there?")
    assert first["cached"] == 0 and len(list(tmp_path.glob("*.bin"))) == 1
    second = _ask_in_new_process(tmp_path, "What is the average age of singers?")
    assert second["cached"] > 200  # the system prompt (~250 tokens) came from the saved state

    # A damaged state is ignored, computed again and replaced by a good one.
    state = next(tmp_path.glob("*.bin"))
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0xFF
    state.write_bytes(bytes(data))
    third = _ask_in_new_process(tmp_path, "Which country has the most singers?")
    assert third["cached"] == 0
    fourth = _ask_in_new_process(tmp_path, "List the names of singers older than 30.")
    assert fourth["cached"] > 200
