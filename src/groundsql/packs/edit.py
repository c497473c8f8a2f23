"""Editing a domain pack entry by entry (the page and the API), its files staying the source
of truth.

A pack is read as entries, each addressed by an id naming its file and its place by name, not
by position, so an id stays right when another entry is added:

    schema.yaml:tables.company                       a table's description and its columns'
    pack.yaml:rules.generation                       a list of rules (also rules.schema_linking)
    semantic.yaml:rules                              the semantic model's rules
    semantic.yaml:tables.companies.measures.revenue  a field of the semantic model (dimensions,
                                                     time_dimensions, facts, measures, filters)
    bank.jsonl:q-1a2b3c4d5e                          a solved example or verified query, by its question
    benchmark.jsonl:q-1a2b3c4d5e                     a benchmark question the team added, with its gold

Each entry has a version (a hash of its value). An edit names the entry, the version it was
made from and the new value (none: remove it), or a collection to add a value to. An edit of
an entry that changed since is refused (EditConflict) and nothing is written, so of two people
editing at once the later one is told and loses nothing. The pack with the edit is written to
a scratch copy and checked there as a pack is checked when it is loaded (packs/load.py,
semantic/load.py, and the validator and the database for a verified query's SQL): a mistake is
refused with the file, line, entry and field, the pack's files untouched. Only then is the one
file replaced, atomically. YAML is rewritten by ruamel.yaml's round trip, which keeps comments,
order, quoting and indentation, so an edit diffs in git as the lines of its entry; in
bank.jsonl every other line is kept byte for byte.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import fcntl
import hashlib
import io
import itertools
import json
import os
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from groundsql.config import SafetyConfig
from groundsql.db import Database
from groundsql.errors import ConfigError, DatabaseError, GroundsqlError, UnsafeSQLError
from groundsql.files import read_text, write_text_atomic
from groundsql.jsonl import read_jsonl
from groundsql.packs.load import (BANK_FILE, BENCHMARK_FILE, PACK_FILE, SCHEMA_FILE, SEMANTIC_FILE,
                                  benchmark_questions, check_pack, load_pack)
from groundsql.safety import run_validated
from groundsql.schema import Schema
from groundsql.semantic.load import catalog_for, check_data

__all__ = ["SECTIONS", "EditConflict", "Edit", "Entry", "Saved", "changed_fields", "checker", "collections", "entries",
           "save", "trial"]

SECTIONS = ("dimensions", "time_dimensions", "facts", "measures", "filters")
_RULES = {f"{PACK_FILE}:rules.schema_linking": ("rules", "schema_linking"),
          f"{PACK_FILE}:rules.generation": ("rules", "generation"),
          f"{SEMANTIC_FILE}:rules": ("rules",)}
_FILES = (PACK_FILE, SCHEMA_FILE, SEMANTIC_FILE, BANK_FILE, BENCHMARK_FILE)
_JSONL = (BANK_FILE, BENCHMARK_FILE)  # one entry a line, each with a question and its SQL
_locks: dict[Path, threading.Lock] = {}
_locks_lock = threading.Lock()


class EditConflict(GroundsqlError):
    """The entry changed (or went) since the version the edit was made from."""

    def __init__(self, message: str, current: "Entry | None") -> None:
        super().__init__(message)
        self.current = current


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str  # table, rules, dimension, time_dimension, fact, measure, filter, verified_query, example
    file: str
    title: str  # what a person calls it
    value: Any  # JSON: what the file holds for it
    version: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "file": self.file, "title": self.title,
                "value": self.value, "version": self.version}


@dataclass(frozen=True)
class Edit:
    """Change `entry` (from version `base`) to `value`, or remove it (value None); or, with
    `add_to` (a collection: schema.yaml:tables, bank.jsonl, semantic.yaml:tables.T.SECTION),
    add `value` there."""

    value: Any = None
    entry: str | None = None
    base: str | None = None
    add_to: str | None = None


@dataclass(frozen=True)
class Saved:
    entry: str  # the entry's id now (a renamed entry has a new one; a removed one its old)
    action: str  # added | changed | removed
    file: str
    before: Any  # None when added
    after: Any  # None when removed
    version: str | None


def version_of(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


def changed_fields(before: Any, after: Any) -> list[str]:
    """What differs between two values of an entry, as a person would name it."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [k for k in dict.fromkeys([*before, *after]) if before.get(k) != after.get(k)]
    if isinstance(before, list) and isinstance(after, list):
        return [f"item {i + 1}" for i in range(max(len(before), len(after)))
                if (before[i] if i < len(before) else None) != (after[i] if i < len(after) else None)]
    return [] if before == after else ["value"]


# -- reading -----------------------------------------------------------------------------------


def entries(folder: str | Path) -> list[Entry]:
    """Every editable entry of the pack in `folder`, file by file, in file order."""
    folder = Path(folder)
    found: list[Entry] = []
    if (folder / SCHEMA_FILE).is_file():
        tables = _load(folder / SCHEMA_FILE)[0].get("tables") or {}
        for name, doc in tables.items():
            value = {"table": str(name), **_plain(doc or {})}
            found.append(_entry(f"{SCHEMA_FILE}:tables.{name}", "table", SCHEMA_FILE, str(name), value))
    for entry_id, where in _RULES.items():
        file = entry_id.split(":", 1)[0]
        if (folder / file).is_file():
            rules = _get(_load(folder / file)[0], where)
            found.append(_entry(entry_id, "rules", file, "rules: " + where[-1].replace("_", " "),
                                _plain(rules or [])))
    if (folder / SEMANTIC_FILE).is_file():
        for table in _load(folder / SEMANTIC_FILE)[0].get("tables") or []:
            for section in SECTIONS:
                for field in table.get(section) or []:
                    entry_id = f"{SEMANTIC_FILE}:tables.{table['name']}.{section}.{field['name']}"
                    found.append(_entry(entry_id, section[:-1], SEMANTIC_FILE, f"{table['name']}.{field['name']}",
                                        _plain(field)))
    for entry_id, _, value in _jsonl_lines(folder, BANK_FILE):
        kind = "verified_query" if value.get("verified_by") and not value.get("drafted") else "example"
        found.append(_entry(entry_id, kind, BANK_FILE, str(value.get("question", "")), value))
    for entry_id, _, value in _jsonl_lines(folder, BENCHMARK_FILE):
        found.append(_entry(entry_id, "benchmark_question", BENCHMARK_FILE, str(value.get("question", "")), value))
    return found


def collections(folder: str | Path) -> list[str]:
    """Where entries may be added."""
    folder = Path(folder)
    found = [f"{SCHEMA_FILE}:tables"] if (folder / SCHEMA_FILE).is_file() else []
    if (folder / SEMANTIC_FILE).is_file():
        found += [f"{SEMANTIC_FILE}:tables.{t['name']}.{s}"
                  for t in _load(folder / SEMANTIC_FILE)[0].get("tables") or [] for s in SECTIONS]
    return [*found, BANK_FILE, BENCHMARK_FILE]


def _entry(entry_id: str, kind: str, file: str, title: str, value: Any) -> Entry:
    return Entry(entry_id, kind, file, title, value, version_of(value))


def _jsonl_lines(folder: Path, file: str) -> list[tuple[str, int, dict[str, Any]]]:
    """(id, line index, object) of each entry of bank.jsonl or benchmark.jsonl; a duplicate
    question gets -2, -3."""
    path = folder / file
    if not path.is_file():
        return []
    found, seen = [], {}  # type: ignore[var-annotated]
    for number, value in read_jsonl(path, "an entry (a JSON object)"):
        stem = _stem(value.get("question", ""))
        seen[stem] = seen.get(stem, 0) + 1
        found.append((f"{file}:{stem}" + (f"-{seen[stem]}" if seen[stem] > 1 else ""), number - 1, value))
    return found


def _stem(question: Any) -> str:
    return "q-" + hashlib.sha256(str(question).strip().encode()).hexdigest()[:10]


# -- saving ------------------------------------------------------------------------------------


Check = Callable[[Path, dict[str, Any] | None], None]
"""Checks a scratch copy of the pack, and the SQL of an edited line of bank.jsonl or
benchmark.jsonl (its "_file" and "_line" say where); raises ConfigError naming file:line: field."""


def save(folder: str | Path, edit: Edit, check: Check, *, editor: str = "") -> Saved:
    """Apply `edit` to the pack in `folder` if it is made from the entry as it is now and the
    pack with it passes `check`; else raise EditConflict or ConfigError and write nothing."""
    folder = Path(folder)
    with _locked(folder), tempfile.TemporaryDirectory(prefix="groundsql-pack-") as scratch:
        file, text, saved = _checked(folder, edit, check, editor, Path(scratch))
        write_text_atomic(folder / file, text)
        return saved


def trial(folder: str | Path, edit: Edit, check: Check, into: Path, *, editor: str = "") -> Saved:
    """The pack with `edit`, checked as `save` checks it, written to the folder `into`; the
    pack's own files are untouched (a benchmark run of an edit before it is saved)."""
    folder = Path(folder)
    with _locked(folder):
        return _checked(folder, edit, check, editor, Path(into))[2]


def _checked(folder: Path, edit: Edit, check: Check, editor: str, copy: Path) -> tuple[str, str, Saved]:
    """The pack with the edit written to `copy` and checked there: the file changed, its text."""
    current = {e.id: e for e in entries(folder)}
    file, text, saved, row = _edited(folder, edit, current, editor)
    for part in _FILES:
        if (folder / part).is_file():
            shutil.copyfile(folder / part, copy / part)
    (copy / file).write_text(text, encoding="utf-8")
    try:
        check(copy, row)
    except ConfigError as err:
        raise ConfigError(str(err).replace(str(copy), str(folder))) from None
    return file, text, saved


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One edit of a pack at a time: among this process's threads, and among processes (several
    `groundsql serve` behind a load balancer, one pack folder) by a lock on the folder itself."""
    with _locks_lock:
        lock = _locks.setdefault(folder.resolve(), threading.Lock())
    with lock:
        handle = os.open(folder, os.O_RDONLY)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes
            yield
        finally:
            os.close(handle)


def _edited(folder: Path, edit: Edit, current: dict[str, Entry],
            editor: str) -> tuple[str, str, Saved, dict[str, Any] | None]:
    """The file the edit changes, its new text, what changed, and the line of JSONL to check."""
    if (edit.entry is None) == (edit.add_to is None):
        raise ConfigError("an edit names an entry to change or remove, or a collection to add to (add_to)")
    if edit.add_to is not None:
        if edit.value is None:
            raise ConfigError(f"{edit.add_to}: nothing to add (no value)")
        if edit.add_to not in collections(folder):
            raise ConfigError(f"{edit.add_to}: not a place entries are added to (see the pack's collections)")
        old = None
        file = edit.add_to.split(":", 1)[0]
    else:
        old = current.get(edit.entry)  # type: ignore[arg-type]
        if old is None:
            raise EditConflict(f"{edit.entry}: no such entry in the pack (removed or renamed since?)", None)
        if edit.base != old.version:
            raise EditConflict(f"{edit.entry}: changed since you opened it", old)
        file = old.file
    value = _stamped(edit.value, editor) if file == BANK_FILE else edit.value
    if file in _JSONL:
        text, new_id, row = _edited_jsonl(folder, file, old, value)
    else:
        text, new_id = _edited_yaml(folder, file, edit.add_to, old, value)
        row = None
    if new_id is not None and new_id in current and (old is None or new_id != old.id):
        raise ConfigError(f"{new_id}: the pack has that entry already (change it instead)")
    action = "added" if old is None else "removed" if value is None else "changed"
    after = None if value is None else json.loads(json.dumps(value))
    saved = Saved(new_id or (old.id if old else ""), action, file, old.value if old else None, after,
                  version_of(after) if after is not None else None)
    return file, text, saved, row


def _stamped(value: Any, editor: str) -> Any:
    """A verified query saved by a person is verified by them, today."""
    if isinstance(value, dict) and value.get("verified_by"):
        return {**value, "verified_by": editor or str(value["verified_by"]),
                "verified_at": dt.datetime.now(dt.timezone.utc).date().isoformat()}
    return value


def _edited_jsonl(folder: Path, file: str, old: Entry | None,
                  value: Any) -> tuple[str, str | None, dict[str, Any] | None]:
    path = folder / file
    lines = read_text(path).splitlines() if path.is_file() else []
    if value is not None:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: an entry is a JSON object with question and sql")
        # Its question and SQL are checked as the file's reader checks them (Check), file:line.
        line = json.dumps(value, ensure_ascii=False)
    if old is None:
        lines.append(line)
        number = len(lines)
    else:
        index = next(i for entry_id, i, _ in _jsonl_lines(folder, file) if entry_id == old.id)
        if value is None:
            del lines[index]
        else:
            lines[index] = line
        number = index + 1
    text = "\n".join(lines) + ("\n" if lines else "")
    if value is None:
        return text, None, None
    stem = _stem(value.get("question", ""))
    new_id = old.id if old is not None and old.id.startswith(f"{file}:{stem}") else f"{file}:{stem}"
    return text, new_id, {**value, "_file": file, "_line": number}


def _edited_yaml(folder: Path, file: str, add_to: str | None, old: Entry | None, value: Any) -> tuple[str, str | None]:
    path = folder / file
    data, yaml = _load(path)
    target = add_to or (old.id if old else "")
    where = target.split(":", 1)[1] if ":" in target else ""
    if old is not None and old.kind == "rules":
        if value is None:
            raise ConfigError(f"{old.id}: a list of rules is emptied, not removed (save an empty list)")
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(f"{old.id}: rules are a list of texts, none empty")
        parent = _get(data, _RULES[old.id][:-1], create=True)
        key = _RULES[old.id][-1]
        parent[key] = _assign(parent.get(key), value)
        return _dump(yaml, data), old.id
    if file == SCHEMA_FILE:
        tables = _get(data, ("tables",), create=True)
        name = old.id.split(":tables.", 1)[1] if old else None
        if value is None:
            del tables[name]
            return _dump(yaml, data), None
        if not isinstance(value, dict) or not isinstance(value.get("table"), str) or not value["table"].strip():
            raise ConfigError(f"{path}: tables: a table's entry names its table ('table')")
        new = value["table"].strip()
        doc = {k: v for k, v in value.items() if k != "table"}
        if name is None or name == new:
            tables[new] = _assign(tables.get(new), doc)
        else:  # renamed: in the same place
            node = _assign(tables[name], doc)
            position = list(tables).index(name)
            del tables[name]
            tables.insert(position, new, node)
        return _dump(yaml, data), f"{SCHEMA_FILE}:tables.{new}"
    # semantic.yaml: a field of a logical table
    _, logical, section, *rest = where.split(".")
    table = next((t for t in data.get("tables") or [] if t.get("name") == logical), None)
    if table is None or section not in SECTIONS:
        raise ConfigError(f"{path}: no logical table {logical!r} with {section!r}")
    fields = table.get(section)
    if fields is None:
        fields = table[section] = CommentedSeq()
    if value is not None and (not isinstance(value, dict) or not isinstance(value.get("name"), str)):
        raise ConfigError(f"{path}: tables.{logical}.{section}: a field is an object with a name")
    if old is None:
        fields.append(value)
    else:
        index = next(i for i, f in enumerate(fields) if f.get("name") == rest[0])
        if value is None:
            del fields[index]
        else:
            fields[index] = _assign(fields[index], value)
    new_id = None if value is None else f"{SEMANTIC_FILE}:tables.{logical}.{section}.{value['name']}"
    return _dump(yaml, data), new_id


def checker(db: Database, schema: Schema, safety: SafetyConfig) -> Check:
    """The checks a pack passes when it is loaded for `db`: the files' shapes, every table and
    column they name, the semantic model's expressions and its relationships' cardinality
    against the data; and the SQL of an edited line of bank.jsonl or benchmark.jsonl validated
    and run."""
    def check(folder: Path, row: dict[str, Any] | None) -> None:
        pack = load_pack(folder)
        check_pack(pack, schema, folder)
        if pack.semantic is not None:
            catalog = catalog_for(pack.semantic, schema, pack.semantic_path, tuple(e.table for e in pack.entities))
            check_data(catalog, db, pack.semantic_path)
        benchmark_questions(folder)
        if row is not None:
            try:
                run_validated(db, row["sql"], safety)
            except (UnsafeSQLError, DatabaseError) as err:
                raise ConfigError(f"{folder / row['_file']}:{row['_line']}: sql: {err}") from None

    return check


# -- YAML round trip ---------------------------------------------------------------------------


def _load(path: Path) -> tuple[Any, YAML]:
    """The file's data as ruamel's round-trip nodes, and a writer in the file's own layout."""
    text = read_text(path)
    best: tuple[int, Any, YAML] | None = None
    lines = Counter(text.splitlines())
    # The layout and line width that write the file back as it is (a file groundsql init
    # wrote has PyYAML's: lists not indented, long texts folded at 80).
    for (mapping, sequence, offset), width in itertools.product(_LAYOUTS, (4096, 80)):
        yaml = YAML()  # round trip
        yaml.preserve_quotes = True
        yaml.width = width
        yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        try:
            data = yaml.load(text)
        except Exception as err:  # ruamel's errors have no common base worth naming
            raise ConfigError(f"{path}: not valid YAML ({err})") from None
        data = data if data is not None else CommentedMap()
        written = Counter(_dump(yaml, data).splitlines())
        differing = sum(((written - lines) + (lines - written)).values())
        if best is None or differing < best[0]:
            best = (differing, data, yaml)
        if differing == 0:
            break
    assert best is not None
    return best[1], best[2]


_LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (4, 4, 0))


def _dump(yaml: YAML, data: Any) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _get(data: Any, where: tuple[str, ...], *, create: bool = False) -> Any:
    node = data
    for key in where:
        if not isinstance(node, dict):
            return None
        if key not in node or node[key] is None:
            if not create:
                return None
            node[key] = CommentedMap()
        node = node[key]
    return node


def _assign(node: Any, value: Any) -> Any:
    """`value` written over `node`, keeping what is unchanged as it was (its comments, its
    quoting, a list's flow style): so an edit changes only the lines it must."""
    if isinstance(node, CommentedMap) and isinstance(value, dict):
        for key in [k for k in node if k not in value]:
            del node[key]
        for key, item in value.items():
            node[key] = _assign(node[key], item) if key in node else item
        return node
    if node is None and isinstance(value, dict):
        return _to_yaml(value)
    if isinstance(node, CommentedSeq) and isinstance(value, list):
        if len(node) == len(value):
            for i, item in enumerate(value):
                node[i] = _assign(node[i], item)
            return node
        # Items kept keep their nodes (a folded rule stays folded); a new text takes the style
        # of the list's first.
        style = type(node[0]) if node and isinstance(node[0], str) and type(node[0]) is not str else None
        old = [_plain(item) for item in node]
        items: list[Any] = []
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, [_key(v) for v in old],
                                                          [_key(v) for v in value]).get_opcodes():
            if op == "equal":
                items += node[i1:i2]
            else:
                items += [style(v) if style and isinstance(v, str) else v for v in value[j1:j2]]
        node[:] = items
        return node
    if isinstance(node, str) and isinstance(value, str) and str(node) == value:
        return node  # the same text in the same style (folded, quoted)
    if isinstance(node, str) and type(node) is not str and isinstance(value, str):
        return type(node)(value)  # a folded text stays folded
    return value


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _to_yaml(value: Any) -> Any:
    if isinstance(value, dict):
        out = CommentedMap()
        for k, v in value.items():
            out[k] = _to_yaml(v)
        return out
    if isinstance(value, list):
        return CommentedSeq([_to_yaml(v) for v in value])
    return value


def _plain(node: Any) -> Any:
    """A YAML node as JSON: what the API shows and what versions hash."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_plain(v) for v in node]
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, (dt.date, dt.datetime)):
        return node.isoformat()
    return str(node)
