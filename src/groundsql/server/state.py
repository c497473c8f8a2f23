"""What the service remembers: API keys, conversations, feedback, learned examples, the history
of pack edits and the audit log, in one SQL database (SQLAlchemy Core).

An embedded SQLite file under the data directory by default; with `state_url` pointing at
PostgreSQL, several `groundsql serve` processes behind a load balancer share it: a
conversation started on one continues on another, and an example confirmed on one is used by
all (each process reads the examples added since it last looked before every question).

Keys are stored as SHA-256 hashes of random 256-bit secrets: what leaks from this store cannot
be used to call the service.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from groundsql.conversation import Turn
from groundsql.errors import ConfigError, GroundsqlError
from groundsql.files import writable_folder
from groundsql.strategies.answer import Clarification

_KEY_PREFIX = "gsql_"
ALL_DATABASES = "*"
# What a key may do: a reader asks, runs SQL and gives feedback; an editor also changes the
# databases' packs (descriptions, synonyms, the semantic model, rules, verified queries).
ROLES = ("reader", "editor")

metadata = sa.MetaData()

api_keys = sa.Table(
    "api_keys", metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("databases", sa.Text, nullable=False),  # JSON list, or ["*"]
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("role", sa.String(16)),  # ROLES; none (a key made before roles): reader
)
conversations = sa.Table(
    "conversations", metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("database", sa.String(64), nullable=False),
    sa.Column("key_name", sa.String(64)),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)
turns = sa.Table(
    "turns", metadata,
    sa.Column("id", sa.String(36), primary_key=True),  # the answer id clients give feedback on
    sa.Column("conversation_id", sa.String(36), sa.ForeignKey("conversations.id"), nullable=False, index=True),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("standalone", sa.Text, nullable=False),
    sa.Column("sql", sa.Text),
    sa.Column("columns", sa.Text, nullable=False),  # JSON list
    sa.Column("row_count", sa.Integer, nullable=False),
    sa.Column("error", sa.Text),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("clarification", sa.Text),  # JSON: the question asked back, which the next turn answers
    sa.Column("truncated", sa.Boolean),  # the row cap or the LIMIT the validator added cut the rows
    sa.UniqueConstraint("conversation_id", "position"),
)
feedback = sa.Table(
    "feedback", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("turn_id", sa.String(36), sa.ForeignKey("turns.id"), nullable=False),
    sa.Column("verdict", sa.String(8), nullable=False),  # right | wrong
    sa.Column("corrected_sql", sa.Text),
    sa.Column("comment", sa.Text),
    sa.Column("key_name", sa.String(64)),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)
examples = sa.Table(
    "examples", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("database", sa.String(64), nullable=False, index=True),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("sql", sa.Text, nullable=False),
    sa.Column("feedback_id", sa.Integer, sa.ForeignKey("feedback.id")),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)
audit = sa.Table(
    "audit", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("key_name", sa.String(64)),
    sa.Column("database", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),  # ask | sql | feedback | pack
    sa.Column("question", sa.Text),
    sa.Column("sql", sa.Text),
    sa.Column("verdict", sa.String(16), nullable=False),  # ran | refused | failed | saved
    sa.Column("row_count", sa.Integer),
    sa.Column("elapsed_ms", sa.Integer),
    sa.Column("detail", sa.Text),  # the refusal or the error, in one sentence
)
pack_changes = sa.Table(
    "pack_changes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("key_name", sa.String(64)),
    sa.Column("database", sa.String(64), nullable=False, index=True),
    sa.Column("entry", sa.Text, nullable=False),  # its id after the change (packs/edit.py)
    sa.Column("action", sa.String(8), nullable=False),  # added | changed | removed
    sa.Column("file", sa.String(64), nullable=False),
    sa.Column("before", sa.Text),  # JSON; none when added
    sa.Column("after", sa.Text),  # JSON; none when removed
    sa.Column("version", sa.String(16)),  # the entry's version after the change
    sa.Column("note", sa.Text),
)


@dataclass(frozen=True)
class ApiKey:
    name: str
    databases: tuple[str, ...]
    role: str = "reader"

    @property
    def may_edit(self) -> bool:
        return self.role == "editor"

    def may_use(self, database: str) -> bool:
        return ALL_DATABASES in self.databases or database in self.databases


@dataclass(frozen=True)
class AuditEntry:
    key_name: str | None
    database: str
    kind: str
    question: str | None
    sql: str | None
    verdict: str
    row_count: int | None = None
    elapsed_ms: int | None = None
    detail: str | None = None


# Columns added after a release: a state store made before them gets them when it is opened.
_NEW_COLUMNS = ((turns, "clarification", "TEXT"), (api_keys, "role", "VARCHAR(16)"), (turns, "truncated", "BOOLEAN"))


def _add_new_columns(engine: sa.Engine) -> None:
    inspector = sa.inspect(engine)
    for table, column, kind in _NEW_COLUMNS:
        if column not in {c["name"] for c in inspector.get_columns(table.name)}:
            with engine.begin() as conn:
                conn.execute(sa.text(f"ALTER TABLE {table.name} ADD COLUMN {column} {kind}"))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class StateStore:
    def __init__(self, url: str) -> None:
        try:
            parsed = make_url(url)
        except sa.exc.ArgumentError:
            raise ConfigError(f"state_url is not a database URL: {url!r}") from None
        backend = parsed.get_backend_name()
        if backend == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                writable_folder(Path(parsed.database).expanduser().parent, "the service's state (keys, audit log)")
            self.engine = sa.create_engine(parsed, connect_args={"timeout": 60, "check_same_thread": False})
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        elif backend == "postgresql":
            if parsed.drivername == "postgresql":
                parsed = parsed.set(drivername="postgresql+psycopg")
            self.engine = sa.create_engine(parsed, pool_pre_ping=True)
        else:
            raise ConfigError(f"state_url must be SQLite or PostgreSQL, not {backend!r}")
        try:
            metadata.create_all(self.engine)  # idempotent; safe when several servers start
            _add_new_columns(self.engine)
        except IntegrityError:
            pass  # another process created the tables at the same moment
        except SQLAlchemyError as err:
            raise ConfigError(f"cannot open the state store {parsed.render_as_string(hide_password=True)}: "
                              f"{_first_line(err)}") from None

    # -- keys --------------------------------------------------------------------------------

    def add_key(self, name: str, databases: Iterable[str], role: str = "reader") -> str:
        """A new key for `name`; the secret is returned once and stored only as its hash."""
        if role not in ROLES:
            raise ConfigError(f"unknown role {role!r} (known: {', '.join(ROLES)})")
        allowed = sorted(set(databases)) or [ALL_DATABASES]
        secret = _KEY_PREFIX + secrets.token_urlsafe(32)
        try:
            with self.engine.begin() as conn:
                conn.execute(api_keys.insert().values(name=name, key_hash=hash_key(secret), role=role,
                                                      databases=json.dumps(allowed), created_at=_now()))
        except IntegrityError:
            raise ConfigError(f"a key named {name!r} exists already (remove it first)") from None
        return secret

    def remove_key(self, name: str) -> bool:
        with self.engine.begin() as conn:
            return conn.execute(api_keys.delete().where(api_keys.c.name == name)).rowcount > 0

    def keys(self) -> list[tuple[ApiKey, dt.datetime]]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(api_keys.c.name, api_keys.c.databases, api_keys.c.role,
                                          api_keys.c.created_at).order_by(api_keys.c.name)).all()
        return [(ApiKey(name, tuple(json.loads(dbs)), role or "reader"), created) for name, dbs, role, created in rows]

    def key_for(self, secret: str) -> ApiKey | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(api_keys.c.name, api_keys.c.databases, api_keys.c.role)
                               .where(api_keys.c.key_hash == hash_key(secret))).first()
        return ApiKey(row[0], tuple(json.loads(row[1])), row[2] or "reader") if row else None

    # -- conversations -----------------------------------------------------------------------

    def start_conversation(self, database: str, key_name: str | None) -> str:
        conversation_id = str(uuid.uuid4())
        with self.engine.begin() as conn:
            conn.execute(conversations.insert().values(id=conversation_id, database=database,
                                                       key_name=key_name, created_at=_now()))
        return conversation_id

    def conversation(self, conversation_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            head = conn.execute(sa.select(conversations).where(conversations.c.id == conversation_id)).first()
            if head is None:
                return None
            rows = conn.execute(sa.select(turns).where(turns.c.conversation_id == conversation_id)
                                .order_by(turns.c.position)).mappings().all()
        return {"id": head.id, "database": head.database, "key_name": head.key_name,
                "created_at": head.created_at, "turns": [dict(r) for r in rows]}

    def history(self, conversation_id: str) -> list[Turn]:
        found = self.conversation(conversation_id)
        return [Turn(t["question"], t["standalone"], t["sql"], tuple(json.loads(t["columns"])), t["row_count"],
                     Clarification.from_dict(json.loads(t["clarification"])) if t.get("clarification") else None)
                for t in (found["turns"] if found else [])]

    def add_turn(self, conversation_id: str, turn: Turn, error: str | None, truncated: bool = False) -> str:
        """Record a turn at the conversation's next position; returns its (answer) id."""
        turn_id = str(uuid.uuid4())
        for _ in range(5):  # two servers answering in one conversation at once: take the next
            with self.engine.begin() as conn:
                position = conn.execute(sa.select(sa.func.count()).select_from(turns)
                                        .where(turns.c.conversation_id == conversation_id)).scalar_one()
                try:
                    conn.execute(turns.insert().values(
                        id=turn_id, conversation_id=conversation_id, position=position, question=turn.question,
                        standalone=turn.standalone, sql=turn.sql, columns=json.dumps(list(turn.columns)),
                        row_count=turn.rows, error=error, created_at=_now(), truncated=truncated,
                        clarification=json.dumps(turn.clarification.to_dict()) if turn.clarification else None))
                    return turn_id
                except IntegrityError:
                    continue
        raise GroundsqlError("could not record the answer in its conversation (too many at once)")

    def turn(self, turn_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(turns, conversations.c.database, conversations.c.key_name)
                               .join(conversations, turns.c.conversation_id == conversations.c.id)
                               .where(turns.c.id == turn_id)).mappings().first()
        return dict(row) if row else None

    # -- feedback and learned examples -------------------------------------------------------

    def add_feedback(self, turn_id: str, verdict: str, corrected_sql: str | None, comment: str | None,
                     key_name: str | None, learned: tuple[str, str, str] | None) -> int:
        """Store feedback, and with `learned` (database, question, sql) the example it made."""
        with self.engine.begin() as conn:
            feedback_id = conn.execute(feedback.insert().values(
                turn_id=turn_id, verdict=verdict, corrected_sql=corrected_sql, comment=comment,
                key_name=key_name, created_at=_now())).inserted_primary_key[0]
            if learned is not None:
                database, question, sql = learned
                conn.execute(examples.insert().values(database=database, question=question, sql=sql,
                                                      feedback_id=feedback_id, created_at=_now()))
        return int(feedback_id)

    def examples_since(self, database: str, after_id: int) -> list[dict[str, Any]]:
        """The examples confirmed after `after_id`, each with who confirmed it, that key's role
        (None: the key is gone, or none was needed) and when."""
        query = (sa.select(examples.c.id, examples.c.question, examples.c.sql, examples.c.created_at,
                           feedback.c.key_name, api_keys.c.role)
                 .select_from(examples.outerjoin(feedback, examples.c.feedback_id == feedback.c.id)
                              .outerjoin(api_keys, feedback.c.key_name == api_keys.c.name))
                 .where(examples.c.database == database, examples.c.id > after_id).order_by(examples.c.id))
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(query).mappings().all()]

    # -- pack edits --------------------------------------------------------------------------

    def add_pack_change(self, database: str, key_name: str | None, entry: str, action: str, file: str,
                        before: Any, after: Any, version: str | None, note: str | None) -> None:
        with self.engine.begin() as conn:
            conn.execute(pack_changes.insert().values(
                at=_now(), key_name=key_name, database=database, entry=entry, action=action, file=file,
                before=None if before is None else json.dumps(before, ensure_ascii=False),
                after=None if after is None else json.dumps(after, ensure_ascii=False), version=version, note=note))

    def pack_changes(self, database: str, entry: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        """The database's pack edits, the latest first (of one entry, with `entry`)."""
        query = sa.select(pack_changes).where(pack_changes.c.database == database)
        if entry is not None:
            query = query.where(pack_changes.c.entry == entry)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(pack_changes.c.id.desc()).limit(limit)).mappings().all()
        return [{**row, "before": json.loads(row["before"]) if row["before"] else None,
                 "after": json.loads(row["after"]) if row["after"] else None} for row in rows]

    # -- audit -------------------------------------------------------------------------------

    def audit(self, entries: Iterable[AuditEntry]) -> None:
        rows = [{**vars(entry), "at": _now()} for entry in entries]
        if rows:
            with self.engine.begin() as conn:
                conn.execute(audit.insert(), rows)

    def audit_rows(self, limit: int = 1000) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(audit).order_by(audit.c.id.desc()).limit(limit)).mappings().all()
        return [dict(r) for r in rows]

    def close(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers and one writer work at once, across threads and processes; the busy
    # timeout makes a writer wait for another instead of failing.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=60000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _first_line(err: Exception) -> str:
    text = str(getattr(err, "orig", None) or err).strip()
    return text.splitlines()[0] if text else type(err).__name__
