"""Benchmark loaders: Spider layout, BIRD layout, and groundsql's own JSONL.

Every loader yields `EvalItem`s that carry a database URL, the question, the gold SQL and the
item's metadata (Spider hardness, LogicCat `type`, our categories) for breakdowns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundsql.errors import ConfigError
from groundsql.evaluation.hardness import spider_hardness
from groundsql.jsonl import read_jsonl, require_text


@dataclass(frozen=True)
class EvalItem:
    item_id: str  # stable across runs: results are resumed by it
    db_id: str
    db_url: str
    question: str
    gold_sql: str
    evidence: str = ""  # BIRD's external knowledge hint
    category: str = ""  # the breakdown key: hardness, type, or our category
    metadata: dict[str, Any] = field(default_factory=dict)


def load_benchmark(path: str | Path) -> list[EvalItem]:
    """Items of a benchmark folder (Spider or BIRD layout) or a JSONL file."""
    path = Path(path).expanduser()
    if path.is_file() and path.suffix == ".jsonl":
        return load_jsonl(path)
    if (path / "dev.json").is_file() and (path / "dev_databases").is_dir():
        return load_bird(path)
    if (path / "dev.json").is_file() and (path / "database").is_dir():
        return load_spider(path)
    raise ConfigError(
        f"{path} is not a benchmark: expected a Spider folder (dev.json + database/), "
        "a BIRD folder (dev.json + dev_databases/) or a .jsonl file"
    )


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


def _entries(file: Path, fields: tuple[str, ...]) -> list[tuple[int, dict[str, Any]]]:
    """A Spider or BIRD question file's entries, each with its text fields checked, so that a
    malformed file is one sentence naming the file and the entry, not a traceback later."""
    try:
        entries = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigError(f"{file}: not a readable JSON file ({err})") from None
    if not isinstance(entries, list):
        raise ConfigError(f"{file}: expected a list of questions, found a JSON {type(entries).__name__}")
    for index, raw in enumerate(entries):
        for name in fields:
            require_text(raw, name, f"{file}: entry {index}")
    return list(enumerate(entries))


def load_spider(root: Path, split: str = "dev.json") -> list[EvalItem]:
    items = []
    for index, raw in _entries(root / split, ("db_id", "question", "query")):
        db_id = raw["db_id"]
        metadata = {k: raw[k] for k in ("type", "idx", "step") if k in raw}
        if isinstance(raw.get("sql"), dict):
            metadata["hardness"] = spider_hardness(raw["sql"])
        category = str(metadata.get("hardness") or (f"type {raw['type']}" if "type" in raw else ""))
        items.append(
            EvalItem(
                item_id=f"{root.name}/{index}",
                db_id=db_id,
                db_url=_sqlite_url(root / "database" / db_id / f"{db_id}.sqlite"),
                question=raw["question"],
                gold_sql=raw["query"],
                category=category,
                metadata=metadata,
            )
        )
    return items


def load_bird(root: Path) -> list[EvalItem]:
    items = []
    for index, raw in _entries(root / "dev.json", ("db_id", "question")):
        require_text({"SQL": raw.get("SQL") or raw.get("query")}, "SQL", f"{root / 'dev.json'}: entry {index}")
        db_id = raw["db_id"]
        items.append(
            EvalItem(
                item_id=f"{root.name}/{raw.get('question_id', index)}",
                db_id=db_id,
                db_url=_sqlite_url(root / "dev_databases" / db_id / f"{db_id}.sqlite"),
                question=raw["question"],
                gold_sql=raw.get("SQL") or raw["query"],
                evidence=raw.get("evidence", ""),
                category=raw.get("difficulty", ""),
                metadata={"difficulty": raw.get("difficulty", "")},
            )
        )
    return items


def load_jsonl(path: Path) -> list[EvalItem]:
    """groundsql's format: one object a line with `db`, `question`, `gold_sql`, optional
    `category`, `evidence` and `id`. `db` is a SQLAlchemy URL, or a SQLite path relative to the
    file, or the word `demo` for the embedded demo database.

    A line with `lacks` (what the database lacks to answer it) instead of `gold_sql` is a
    question that should be called out of scope; a line with `reply` is answered with it when
    groundsql asks back, and the reply's answer is scored.

    A conversation is a line with `db`, `id`, optional `category`, and `turns`: a list of
    {`question`, `gold_sql`}; each turn is an item (`id#n`, category `turn n`), asked after
    the conversation's earlier turns as the configuration answered them."""
    items = []
    for number, raw in read_jsonl(path, "a benchmark item"):
        if "turns" in raw:
            items += _conversation_items(path, number, raw)
            continue
        # A question the database cannot answer (`lacks` says what it lacks) has no gold.
        for name in ("db", "question") if "lacks" in raw else ("db", "question", "gold_sql"):
            require_text(raw, name, f"{path}:{number}")
        db, question, gold = raw["db"], raw["question"], raw.get("gold_sql", "")
        items.append(
            EvalItem(
                item_id=str(raw.get("id", f"{path.stem}/{number}")),
                db_id=Path(db).stem if "://" not in db else db.rsplit("/", 1)[-1],
                db_url=_jsonl_db_url(db, path.parent),
                question=question,
                gold_sql=gold,
                evidence=raw.get("evidence", ""),
                category=raw.get("category", ""),
                metadata={k: v for k, v in raw.items() if k not in {"db", "question", "gold_sql"}},
            )
        )
    return items


def _conversation_items(path: Path, number: int, raw: dict[str, Any]) -> list[EvalItem]:
    require_text(raw, "db", f"{path}:{number}")
    if not isinstance(raw["turns"], list) or not raw["turns"]:
        raise ConfigError(f"{path}:{number}: 'turns' must be a list of {{question, gold_sql}}")
    for n, turn in enumerate(raw["turns"], start=1):
        for name in ("question", "gold_sql"):
            require_text(turn, name, f"{path}:{number}: turn {n}")
    db = raw["db"]
    conversation = str(raw.get("id", f"{path.stem}/{number}"))
    asked = [(turn["question"], turn["gold_sql"]) for turn in raw["turns"]]
    return [
        EvalItem(
            item_id=f"{conversation}#{n}",
            db_id=Path(db).stem if "://" not in db else db.rsplit("/", 1)[-1],
            db_url=_jsonl_db_url(db, path.parent),
            question=question,
            gold_sql=gold,
            category=f"turn {n}",
            metadata={"conversation": conversation, "turn": n, "kind": raw.get("category", "")},
        )
        for n, (question, gold) in enumerate(asked, start=1)
    ]


def _jsonl_db_url(db: str, base: Path) -> str:
    if db == "demo":
        from groundsql.api import demo_database_url

        return demo_database_url()
    if "://" in db:
        return db
    return _sqlite_url(base / db)
