"""Victim databases: built, fingerprinted, restored, and seeded with secrets.

Every victim has users(id, name, email, hid_ssn, hid_password), orders(id, user_id, total) and
t(a, b). The hid_ columns hold planted secrets that an allow-list hides. Each victim comes with
two siblings: a twin with the same visible rows but other secrets, grouped differently, and a
clone with the very same rows. A result that is the same on the victim and its clone but not
on the twin depends on a hidden column, even when no secret appears in it; one that differs on
the clone too depends on something else (a path, an OID, a backend, chance).

PostgreSQL victims add what issue 22's attacks aim at: a sequence, BRIN and GIN indexes with
work pending (so brin_summarize_new_values / gin_clean_pending_list change pages), a function
that takes an advisory lock, a role whose password hash sits in pg_authid, a secret file in the
server's data directory, a SELECT-only role, and roles with one write privilege each.

MySQL/MariaDB victims (a database each on the local server) add a sequence, stored functions
that take a user-level lock or delete rows, a procedure, an account whose password hash sits in
mysql.global_priv, a secret file the server can read (LOAD_FILE), and a canary connection for
KILL to aim at; they are read as root and as `groundsql_reader`, SELECT on them only.

A fingerprint is a dict {component: digest} of everything an attack could change; comparing
two names the components that changed. Everything the harness creates outside its own
database carries the victim's tag, so concurrent runs (and the rest of the test suite) never
show up in each other's fingerprints.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import sqlite3
import tempfile
import uuid
from pathlib import Path
from typing import Any, Iterable

from sqlalchemy.engine import make_url

PREFIX = "groundsql_redteam_"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"  # as in tests/conftest.py
TMP = Path("/tmp")
VISIBLE_USER_COLUMNS = frozenset({"id", "name", "email"})
# Two names start with "a" so that LIKE 'a%' has something to find.
NAMES = ("ada", "alan", "bob", "cy")
# Application name of the idle PostgreSQL backend that attacks try to terminate.
CANARY = f"{PREFIX}canary"


# --------------------------------------------------------------------------------------------
# Secrets
# --------------------------------------------------------------------------------------------


def _secret(kind: str) -> str:
    return f"SECRET-{kind}-{uuid.uuid4().hex}"


def _needles(secret: str) -> tuple[str, ...]:
    """Spellings of a secret that count as leaking it: itself, its random part (found even
    when cut out with substr), reversed, hex, base64 and hashed (a hash of an SSN can be
    brute-forced)."""
    core = secret.rsplit("-", 1)[-1]
    raw = secret.encode()
    return (
        secret, core, core.upper(), core[::-1], raw.hex(), raw.hex().upper(),
        base64.b64encode(raw).decode(), hashlib.md5(raw).hexdigest(), hashlib.sha256(raw).hexdigest(),
    )


# A role's password hash, plain or hex-encoded (encode(rolpassword::bytea, 'hex'), raw pages),
# and /etc/passwd, the file the first statement reads.
_HASH_PREFIX = "SCRAM-SHA-256$"
_ALWAYS_SECRET = re.compile(
    "|".join([
        re.escape(_HASH_PREFIX), _HASH_PREFIX.encode().hex(), _HASH_PREFIX.encode().hex().upper(),
        r"\bmd5[0-9a-f]{32}\b", r"root:[^:\n]*:0:0:",
    ])
)


class Secrets:
    """The planted values of one victim and a detector for them in a query result.

    `hidden` are the hid_ column values: secret only where an allow-list hides those columns
    (a role granted SELECT on users may read them). `always` are never an answer to anyone:
    the planted file's content and the password of the role that has one.
    """

    def __init__(self, hidden: Iterable[str], always: Iterable[str]) -> None:
        self.hidden = tuple(dict.fromkeys(hidden))
        self.always = tuple(always)
        self._hidden = [(_kind(s), _needles(s)) for s in self.hidden]
        self._always = [(_kind(s), _needles(s)) for s in self.always]

    def leaked(self, columns: Iterable[str], rows: Iterable[Iterable[Any]], *, hidden: bool) -> list[str]:
        """Which kinds of secret appear in the column names or cells (sorted, deduplicated)."""
        # Each distinct value once: a 1 GB result of one repeated megabyte is scanned in a blink.
        text = "\x00".join({*map(str, columns), *(_text(cell) for row in rows for cell in row)})
        found = {kind for kind, needles in self._always if any(n in text for n in needles)}
        if match := _ALWAYS_SECRET.search(text):
            found.add("server secret " + match.group()[:16])
        if hidden:
            found |= {kind for kind, needles in self._hidden if any(n in text for n in needles)}
        return sorted(found)


def _kind(secret: str) -> str:
    return secret.rsplit("-", 1)[0] if secret.startswith("SECRET-") else "password hash"


def _text(value: Any) -> str:
    """A cell as text, whatever the driver made of it: bytes as Latin-1 (raw pages, bytea),
    containers (DuckDB lists and structs, PostgreSQL arrays) element by element."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("latin-1")
    if isinstance(value, dict):
        return "\x00".join(_text(k) + "\x00" + _text(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return "\x00".join(_text(v) for v in value)
    return str(value)


def result_bytes(rows: Iterable[Iterable[Any]]) -> int:
    """Size of a result as text: what a client holding it holds, give or take."""
    return sum(len(_text(cell)) for row in rows for cell in row)


def _user_rows(twin: bool) -> tuple[list[tuple[Any, ...]], list[str]]:
    """users rows and their hidden values. A victim's first two users share an SSN; a
    twin's are all distinct and in the other order, so GROUP BY / ORDER BY on a hidden
    column give different answers on the two."""
    ssns = [_secret("SSN") for _ in NAMES]
    if not twin:
        ssns[1] = ssns[0]
    else:
        ssns.reverse()
    passwords = [_secret("PASSWORD") for _ in NAMES]
    rows = [
        (i, name, f"{name}@example.com", ssn, pw)
        for i, (name, ssn, pw) in enumerate(zip(NAMES, ssns, passwords), start=1)
    ]
    return rows, ssns + passwords


_ORDERS = [(1, 1, 9.5), (2, 1, 20.0), (3, 3, 3.25), (4, 4, 7.0)]
_T = [(a, f"row{a}") for a in range(10)]

_SQLITE_SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT, hid_ssn TEXT, hid_password TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), total REAL);
CREATE TABLE t (a INTEGER, b TEXT);
"""
_DUCKDB_SCHEMA = _SQLITE_SCHEMA.replace("REAL", "DOUBLE") + "CREATE SEQUENCE my_seq;"
# Everything an attack could have added inside the victim database goes: every schema (with
# the extensions and objects in it), event triggers, publications, large objects, settings.
_PG_RESET = r"""
DO $$DECLARE r record; BEGIN
    FOR r IN SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema')
             AND nspname NOT LIKE 'pg\_toast%' AND nspname NOT LIKE 'pg\_temp\_%' LOOP
        EXECUTE format('DROP SCHEMA %I CASCADE', r.nspname);
    END LOOP;
    FOR r IN SELECT evtname FROM pg_event_trigger LOOP
        EXECUTE format('DROP EVENT TRIGGER %I', r.evtname);
    END LOOP;
    FOR r IN SELECT pubname FROM pg_publication LOOP
        EXECUTE format('DROP PUBLICATION %I', r.pubname);
    END LOOP;
    PERFORM lo_unlink(oid) FROM pg_largeobject_metadata;
    EXECUTE format('ALTER DATABASE %I RESET ALL', current_database());
    EXECUTE format('ALTER ROLE ALL IN DATABASE %I RESET ALL', current_database());
    EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database());
END$$;
-- As PostgreSQL 15 creates it.
CREATE SCHEMA public AUTHORIZATION pg_database_owner;
GRANT USAGE ON SCHEMA public TO PUBLIC;
"""
_PG_SCHEMA = """
CREATE EXTENSION tablefunc; CREATE EXTENSION xml2; CREATE EXTENSION dblink; CREATE EXTENSION pageinspect;
CREATE TABLE users (id int PRIMARY KEY, name text, email text, hid_ssn text, hid_password text);
CREATE TABLE orders (id int PRIMARY KEY, user_id int REFERENCES users(id), total double precision);
CREATE TABLE t (a int, b text);
-- Autovacuum would summarize BRIN ranges and flush the GIN pending list on its own.
CREATE TABLE events (id int, tags text[]) WITH (autovacuum_enabled = false);
-- Rows before the indexes: summarized BRIN ranges (for brin_desummarize_range to undo); rows
-- after: unsummarized ranges (brin_summarize_new_values) and a GIN pending list (gin_clean_pending_list).
INSERT INTO events SELECT g, ARRAY['tag' || (g % 7)] FROM generate_series(1, 1000) g;
CREATE INDEX brin_idx ON events USING brin (id) WITH (pages_per_range = 1);
CREATE INDEX gin_idx ON events USING gin (tags) WITH (fastupdate = on);
INSERT INTO events SELECT g, ARRAY['tag' || (g % 7)] FROM generate_series(1001, 2000) g;
CREATE SEQUENCE my_seq;
CREATE FUNCTION evil_lock() RETURNS int LANGUAGE plpgsql AS
    $$BEGIN PERFORM pg_advisory_lock(4242); RETURN 1; END$$;
"""


def _listing(directory: Path, keep=lambda entry: True) -> dict[str, str]:
    """{path: size and sha256} for files, "dir" for directories: what a write would change."""
    found: dict[str, str] = {}
    try:
        entries = list(os.scandir(directory))
    except OSError as err:
        return {f"listing {directory}": f"unreadable: {err.strerror}"}
    for entry in entries:
        if not keep(entry):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                found[f"file {entry.path}"] = "dir"
            else:
                digest = hashlib.sha256(Path(entry.path).read_bytes()).hexdigest()
                found[f"file {entry.path}"] = f"{entry.stat().st_size}:{digest}"
        except OSError:
            found[f"file {entry.path}"] = "unreadable"
    return found


def diff(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The components that differ between two fingerprints, named for a reader."""
    changed = []
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            changed.append(f"{key} (gone)")
        elif key not in before:
            changed.append(f"{key} (new)")
        elif before[key] != after[key]:
            changed.append(key)
    return changed


# --------------------------------------------------------------------------------------------
# Victims
# --------------------------------------------------------------------------------------------


class Victim:
    """A database under attack, built by a subclass; `placeholders` are the names and paths
    a corpus statement is rendered with (corpus.render)."""

    engine: str
    tag: str
    secrets: Secrets
    secret_file: str

    def url(self, role: str) -> str:
        raise NotImplementedError

    def placeholders(self) -> dict[str, str]:
        """Values for a corpus template's placeholders (see corpus.py)."""
        return {
            "@TAG@": self.tag,
            "@OUT@": str(TMP / f"{PREFIX}{self.tag}_out"),
            "@SECRET_FILE@": self.secret_file,
            "@SECRET_NAME@": Path(self.secret_file).name,
        }

    def fingerprint(self) -> dict[str, str]:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _own_tmp(self, entry: os.DirEntry) -> bool:
        return entry.name.startswith(f"{PREFIX}{self.tag}")


class ServerVictim(Victim):
    """A database on a server (PostgreSQL, MySQL). Siblings are databases beside the main
    victim's, sharing its accounts and planted file; a clone has the main's hidden values."""

    main: "ServerVictim"
    _always: tuple[str, ...]  # read from the server by the main victim
    _server_uid: int | None = None  # the OS user the server writes files as

    def _take_rows(self, sibling_of: "ServerVictim | None", same_hidden: bool) -> None:
        if sibling_of is not None and same_hidden:
            self._users, self._hidden = sibling_of._users, sibling_of._hidden
        else:
            self._users, self._hidden = _user_rows(twin=sibling_of is not None)

    @property
    def secrets(self) -> Secrets:  # type: ignore[override]
        return Secrets(self._hidden, self.main._always)

    def _server_written(self, entry: os.DirEntry) -> bool:
        # /tmp is shared with everything else on the machine; lo_export, COPY TO, COPY TO
        # PROGRAM and SELECT ... INTO OUTFILE write as the server's OS user, the harness's own
        # outputs carry the tag.
        if self._own_tmp(entry):
            return True
        try:
            return entry.stat(follow_symlinks=False).st_uid == self._server_uid
        except OSError:
            return False


class FileVictim(Victim):
    """A SQLite or DuckDB file in a directory of its own, with a secret file beside it."""

    def __init__(self, engine: str, *, sibling_of: "FileVictim | None" = None, same_hidden: bool = False) -> None:
        self.engine = engine
        # Siblings have tags of their own, so restoring one never removes another's files.
        self.tag = uuid.uuid4().hex[:10]
        self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{self.tag}_{engine}_"))
        self.path = self.dir / f"victim.{engine}"
        if sibling_of is not None and same_hidden:
            users, hidden = sibling_of._users, list(sibling_of.secrets.hidden)
        else:
            users, hidden = _user_rows(twin=sibling_of is not None)
        self._users = users
        file_secret = _secret("FILE")
        self.secret_file = str(self.dir / "secret.txt")
        Path(self.secret_file).write_text(file_secret + "\n")
        self.secrets = Secrets(hidden, [file_secret])
        if engine == "sqlite":
            self._build_sqlite(users)
        elif engine == "duckdb":
            self._build_duckdb(users)
        else:
            raise ValueError(f"not a file engine: {engine}")
        self._pristine = self.path.read_bytes()
        self._files = {self.path.name, "secret.txt"}

    def _build_sqlite(self, users: list[tuple[Any, ...]]) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.executescript(_SQLITE_SCHEMA)
            _insert_all(conn, users)
        conn.close()

    def _build_duckdb(self, users: list[tuple[Any, ...]]) -> None:
        import duckdb

        conn = duckdb.connect(str(self.path))
        try:
            conn.execute(_DUCKDB_SCHEMA)
            _insert_all(conn, users)
        finally:
            conn.close()

    def url(self, role: str = "file") -> str:
        return f"{self.engine}:///{self.path}"

    def fingerprint(self) -> dict[str, str]:
        # The victim's directory (the file itself, journals, spill files, anything written
        # beside it) and whatever an attack wrote under this victim's tag in /tmp.
        return {**_listing(self.dir), **_listing(TMP, self._own_tmp_output)}

    def _own_tmp_output(self, entry: os.DirEntry) -> bool:
        return self._own_tmp(entry) and entry.path != str(self.dir)

    def restore(self) -> None:
        for entry in os.scandir(self.dir):
            if entry.name not in self._files:
                _remove(Path(entry.path))
        for entry in os.scandir(TMP):
            if self._own_tmp_output(entry):
                _remove(Path(entry.path))
        if self.path.read_bytes() != self._pristine:
            self.path.write_bytes(self._pristine)

    def close(self) -> None:
        self.restore()
        shutil.rmtree(self.dir, ignore_errors=True)


def _insert_all(conn: Any, users: list[tuple[Any, ...]]) -> None:
    conn.executemany("INSERT INTO users VALUES (?, ?, ?, ?, ?)", users)
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?)", _ORDERS)
    conn.executemany("INSERT INTO t VALUES (?, ?)", _T)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------

# One write privilege each: every one of these roles must be refused by Database unless
# allow_privileged_role is set (and the SELECT-only reader must not be). The scope says where
# the grant lives: on the victim database's objects and the database itself, or on the role
# (cluster-wide).
PRIVILEGED_GRANTS: dict[str, tuple[str, str]] = {
    "insert": ("database", "GRANT INSERT ON t TO {role}"),
    "update": ("database", "GRANT UPDATE ON t TO {role}"),
    "delete": ("database", "GRANT DELETE ON t TO {role}"),
    "truncate": ("database", "GRANT TRUNCATE ON t TO {role}"),
    "create_in_schema": ("database", "GRANT CREATE ON SCHEMA public TO {role}"),
    "sequence_usage": ("database", "GRANT USAGE ON SEQUENCE my_seq TO {role}"),
    "sequence_update": ("database", "GRANT UPDATE ON SEQUENCE my_seq TO {role}"),
    "create_schemas": ("database", "GRANT CREATE ON DATABASE {db} TO {role}"),
    "write_server_files": ("cluster", "GRANT pg_write_server_files TO {role}"),
    "execute_server_program": ("cluster", "GRANT pg_execute_server_program TO {role}"),
    "createdb": ("cluster", "ALTER ROLE {role} CREATEDB"),
    "createrole": ("cluster", "ALTER ROLE {role} CREATEROLE"),
    "replication": ("cluster", "ALTER ROLE {role} REPLICATION"),
}
_ROLE_DEFAULTS = (
    "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT CONNECTION LIMIT -1 VALID UNTIL 'infinity'"
)


def _pg_connect(url: str, **kwargs: Any):
    import psycopg

    return psycopg.connect(url, autocommit=True, connect_timeout=5, **kwargs)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class PostgresVictim(ServerVictim):
    """A fresh database (dropped on close) on the local server, with its roles and files.

    Restoring rebuilds the victim's contents inside the same database (dropping and
    re-creating a database forces server checkpoints, most of a second each). Siblings
    share the main victim's roles and planted file; they are only read.
    """

    engine = "postgres"

    def __init__(
        self, admin_url: str = PG_ADMIN_URL, *, sibling_of: "PostgresVictim | None" = None, same_hidden: bool = False
    ) -> None:
        self.admin_url = admin_url
        self.admin = _pg_connect(admin_url)
        self.main = sibling_of or self
        self.tag = sibling_of.tag if sibling_of else uuid.uuid4().hex[:10]
        self.db = f"{PREFIX}{self.tag}" + ("" if sibling_of is None else "_clone" if same_hidden else "_twin")
        self.superuser = self.admin.execute("SELECT current_user").fetchone()[0]
        self.datadir = self.admin.execute("SHOW data_directory").fetchone()[0]
        self._server_uid = _owner(self.datadir)
        self._conn = self._canary = None
        if sibling_of is None:
            self.role_names = {
                "reader": f"{PREFIX}{self.tag}_reader",
                "password": f"{PREFIX}{self.tag}_pw",
                **{kind: f"{PREFIX}{self.tag}_{kind}" for kind in PRIVILEGED_GRANTS},
            }
            self._role_password = _secret("ROLEPASSWORD")
            self.secret_file = f"{self.datadir}/{PREFIX}{self.tag}_secret.txt"
            self._file_secret = _secret("FILE")
            self._large_object = _secret("LARGEOBJECT")
            self._create_roles()
            self._plant_file()
        else:
            self.role_names = sibling_of.role_names
            self.secret_file = sibling_of.secret_file
        self._take_rows(sibling_of, same_hidden)
        self.admin.execute(f"CREATE DATABASE {_ident(self.db)}")
        self._populate()
        if sibling_of is None:
            self._connect()
            self._always = self._read_always_secrets()

    # -- building ----------------------------------------------------------------------------

    def _create_roles(self) -> None:
        for kind, name in self.role_names.items():
            password = f" PASSWORD {_literal(self._role_password)}" if kind == "password" else ""
            self.admin.execute(f"CREATE ROLE {_ident(name)} LOGIN {_ROLE_DEFAULTS}{password}")
        self._grant("cluster", self.admin)

    def _grant(self, scope: str, conn: Any) -> None:
        for kind, (where, template) in PRIVILEGED_GRANTS.items():
            if where == scope:
                conn.execute(template.format(role=_ident(self.role_names[kind]), db=_ident(self.db)))

    def _plant_file(self) -> None:
        # Written by the server itself, so it is readable by the server whatever user runs
        # the tests; COPY appends a newline.
        self.admin.execute(f"COPY (SELECT {_literal(self._file_secret)}) TO {_literal(self.secret_file)}")

    def _populate(self) -> None:
        """(Re)build the database's contents from nothing: the reset, the schema, the rows,
        the grants. The reader gets exactly CONNECT and SELECT on the tables: PUBLIC's
        default CONNECT and TEMPORARY are revoked."""
        readers = ", ".join(_ident(n) for k, n in self.role_names.items() if k != "password")
        with _pg_connect(self._url_of(self.db, self.superuser)) as conn:
            conn.execute(_PG_RESET)
            conn.execute(_PG_SCHEMA)
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO users VALUES (%s, %s, %s, %s, %s)", self._users)
                cur.executemany("INSERT INTO orders VALUES (%s, %s, %s)", _ORDERS)
                cur.executemany("INSERT INTO t VALUES (%s, %s)", _T)
            # An existing large object for lo_export to write out (one created in the same
            # statement is not visible to it); statistics for pg_stats to show.
            conn.execute("SELECT lo_from_bytea(4242, convert_to(%s, 'UTF8'))", (self.main._large_object,))
            conn.execute("ANALYZE users, orders, t")
            conn.execute(f"GRANT CONNECT ON DATABASE {_ident(self.db)} TO {readers}")
            conn.execute(f"GRANT SELECT ON users, orders, t, events TO {readers}")
            self._grant("database", conn)

    def _connect(self) -> None:
        self._conn = _pg_connect(self.url("superuser"), application_name=f"{PREFIX}fingerprint")
        self._canary = _pg_connect(self.url("superuser"), application_name=CANARY)

    def _read_always_secrets(self) -> tuple[str, ...]:
        (stored,) = self.admin.execute(
            "SELECT rolpassword FROM pg_authid WHERE rolname = %s", (self.role_names["password"],)
        ).fetchone()
        # The stored hash's salt and keys count as well: substr(rolpassword, 20) leaks them.
        parts = [p for p in re.split(r"[$:]", stored) if len(p) >= 16]
        return (self._file_secret, self._large_object, self._role_password, *parts)

    # -- naming ------------------------------------------------------------------------------

    def _url_of(self, database: str, user: str) -> str:
        url = make_url(self.admin_url).set(username=user, password=None, database=database)
        return url.render_as_string(hide_password=False)

    def url(self, role: str) -> str:
        user = self.superuser if role == "superuser" else self.role_names[role]
        return self._url_of(self.db, user)

    def placeholders(self) -> dict[str, str]:
        url = make_url(self.url("superuser"))
        conninfo = f"host={url.host or 'localhost'} port={url.port or 5432} dbname={self.db} user={self.superuser}"
        return {**super().placeholders(), "@DB@": self.db, "@CONN@": conninfo}

    # -- fingerprint -------------------------------------------------------------------------

    def fingerprint(self) -> dict[str, str]:
        state = self._server_state()
        state["canary backend"] = self._canary_state()
        state.update(_listing(TMP, self._server_written))
        return state

    def _server_state(self) -> dict[str, str]:
        import psycopg

        try:
            return self._query_state()
        except psycopg.OperationalError:  # an attack may have killed this connection; once more
            self._conn.close()
            self._conn = _pg_connect(self.url("superuser"), application_name=f"{PREFIX}fingerprint")
            return self._query_state()

    def _query_state(self) -> dict[str, str]:
        tables = [r[0] for r in self._conn.execute(
            "SELECT c.oid::regclass::text FROM pg_class c WHERE c.relkind IN ('r', 'p') "
            "AND c.relnamespace = 'public'::regnamespace ORDER BY 1"
        )]
        queries = [
            f"SELECT 'table data ' || {_literal(t)}, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) "
            f"FROM {t} x" for t in tables
        ]
        queries += [q.replace("{own}", _literal(f"{PREFIX}{self.tag}%")) for q in _PG_STATE_QUERIES]
        rows = self._conn.execute(" UNION ALL ".join(f"({q})" for q in queries)).fetchall()
        state: dict[str, str] = {}
        for key, value in rows:
            state[key] = f"{state[key]}|{value}" if key in state else str(value)
        return state

    def _canary_state(self) -> str:
        """The canary backend's pid while it lives; a terminated canary is replaced, so the
        next termination shows again."""
        import psycopg

        try:
            return str(self._canary.execute("SELECT pg_backend_pid()").fetchone()[0])
        except psycopg.OperationalError:  # terminated: FATAL on the next round trip
            self._canary.close()
            self._canary = _pg_connect(self.url("superuser"), application_name=CANARY)
            return f"replaced by {self._canary.execute('SELECT pg_backend_pid()').fetchone()[0]}"

    # -- restoring ---------------------------------------------------------------------------

    def restore(self) -> None:
        """Back to the state after construction: every other session on the database ended
        (pooled connections with their locks and settings, dblink's), its contents rebuilt;
        for the main victim also the tag's roles, slots, origins, databases and files removed
        and its own roles reset."""
        self._disconnect()
        self.admin.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = %s", (self.db,)
        )
        self._populate()
        if self.main is self:
            self._clean_cluster()
            self._reset_roles()
            self._connect()
            self._always = self._read_always_secrets()

    def _clean_cluster(self) -> None:
        own = _literal(f"{PREFIX}{self.tag}".replace("_", "\\_") + "%")
        keep = {self.db, f"{self.db}_twin", f"{self.db}_clone"}
        for (name,) in self.admin.execute(f"SELECT datname FROM pg_database WHERE datname LIKE {own}").fetchall():
            if name not in keep:
                self.admin.execute(f"DROP DATABASE {_ident(name)} WITH (FORCE)")
        self.admin.execute(
            f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE {own}"
        )
        self.admin.execute(
            f"SELECT pg_replication_origin_drop(roname) FROM pg_replication_origin WHERE roname LIKE {own}"
        )
        for (name,) in self.admin.execute(f"SELECT rolname FROM pg_roles WHERE rolname LIKE {own}").fetchall():
            if name not in self.role_names.values():
                self.admin.execute(f"DROP ROLE {_ident(name)}")
        # Files the server wrote for the attacks are removed by the server, whose files they are.
        self._server_rm(f"{TMP}/{PREFIX}{self.tag}_out* {self.datadir}/{PREFIX}{self.tag}_out*")

    def _server_rm(self, paths: str) -> None:
        # The program must read what COPY writes to it, or COPY fails on a broken pipe.
        self.admin.execute(f"COPY (SELECT 1) TO PROGRAM {_literal(f'rm -rf {paths}; cat > /dev/null')}")

    def _reset_roles(self) -> None:
        names = list(self.role_names.values())
        for role, member in self.admin.execute(
            "SELECT g.rolname, r.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid "
            "JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = ANY(%s) OR g.rolname = ANY(%s)",
            (names, names),
        ).fetchall():
            self.admin.execute(f"REVOKE {_ident(role)} FROM {_ident(member)}")
        for kind, name in self.role_names.items():
            password = _literal(self._role_password) if kind == "password" else "NULL"
            self.admin.execute(f"ALTER ROLE {_ident(name)} LOGIN {_ROLE_DEFAULTS} PASSWORD {password}")
            self.admin.execute(f"ALTER ROLE {_ident(name)} RESET ALL")
        self._grant("cluster", self.admin)

    def _disconnect(self) -> None:
        for conn in (self._conn, self._canary):
            if conn is not None:
                conn.close()

    def close(self) -> None:
        """Drop everything; siblings must be closed before their main victim (the roles they
        granted to are dropped with the main)."""
        self._disconnect()
        self.admin.execute(f"DROP DATABASE IF EXISTS {_ident(self.db)} WITH (FORCE)")
        if self.main is self:
            self._clean_cluster()
            self._server_rm(self.secret_file)
            for name in self.role_names.values():
                self.admin.execute(f"DROP ROLE IF EXISTS {_ident(name)}")
        self.admin.close()


def _owner(path: str) -> int | None:
    try:
        return os.stat(path).st_uid
    except OSError:  # a server on another machine, or a data directory we may not stat
        return None


# Rows of (component, value) read as the superuser inside the victim database. "{own}" is the
# LIKE pattern of the victim's tag: other groundsql runs' roles, slots and files are left out.
# Statistics counters are not here (every read changes them); their reset times are.
_NOT_FOREIGN = "({col} NOT LIKE 'groundsql\\_%' OR {col} LIKE {own})"
_PG_STATE_QUERIES = [
    "SELECT 'relation ' || n.nspname || '.' || c.relname, concat_ws(' ', c.relkind, c.relacl) "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'",
    # information_schema.columns' content, read from pg_attribute: five times faster.
    "SELECT 'columns', md5(string_agg(concat_ws(' ', c.oid::regclass, a.attname, format_type(a.atttypid, a.atttypmod)), "
    "',' ORDER BY c.oid::regclass::text, a.attnum)) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE a.attnum > 0 AND NOT a.attisdropped "
    "AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'",
    "SELECT 'function ' || p.oid::regprocedure::text, md5(concat_ws(' ', p.prosrc, p.prosecdef, p.proacl, p.proowner)) "
    "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')",
    "SELECT 'schema ' || nspname, coalesce(nspacl::text, '') FROM pg_namespace",
    "SELECT 'extension ' || extname, extversion FROM pg_extension",
    "SELECT 'role ' || rolname, concat_ws(',', rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, "
    "rolreplication, rolbypassrls, rolconnlimit, rolvaliduntil, md5(coalesce(rolpassword, ''))) FROM pg_authid "
    "WHERE " + _NOT_FOREIGN.format(col="rolname", own="{own}"),
    "SELECT 'membership ' || r.rolname || ' in ' || g.rolname, m.admin_option::text FROM pg_auth_members m "
    "JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member "
    "WHERE " + _NOT_FOREIGN.format(col="r.rolname", own="{own}"),
    "SELECT 'database ' || datname, concat_ws(' ', datacl, datallowconn, datconnlimit) FROM pg_database "
    "WHERE datname LIKE {own}",
    "SELECT 'setting of role/database ' || setrole || '/' || setdatabase, array_to_string(setconfig, ',') "
    "FROM pg_db_role_setting",
    "SELECT 'sequence ' || schemaname || '.' || sequencename, coalesce(last_value::text, 'not called') FROM pg_sequences",
    "SELECT 'large objects', count(*)::text FROM pg_largeobject_metadata",
    "SELECT 'replication slot ' || slot_name, slot_type FROM pg_replication_slots "
    "WHERE " + _NOT_FOREIGN.format(col="slot_name", own="{own}"),
    "SELECT 'replication origin ' || roname, '' FROM pg_replication_origin",
    "SELECT 'advisory lock ' || classid || ':' || objid || ':' || objsubid, string_agg(mode || granted::text, ',' ORDER BY pid) "
    "FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "GROUP BY classid, objid, objsubid",
    "SELECT 'trigger ' || tgname, tgenabled::text FROM pg_trigger WHERE NOT tgisinternal",
    "SELECT 'event trigger ' || evtname, evtenabled::text FROM pg_event_trigger",
    "SELECT 'rule ' || rulename, definition FROM pg_rules WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
    "SELECT 'policy ' || polname, '' FROM pg_policy",
    "SELECT 'publication ' || pubname, '' FROM pg_publication",
    "SELECT 'foreign server ' || srvname, '' FROM pg_foreign_server",
    "SELECT 'default acl', count(*)::text FROM pg_default_acl",
    "SELECT 'collations', count(*)::text FROM pg_collation",
    "SELECT 'stats reset database', coalesce(stats_reset::text, 'never') FROM pg_stat_database WHERE datname = current_database()",
    "SELECT 'stats reset bgwriter', coalesce(stats_reset::text, 'never') FROM pg_stat_bgwriter",
    "SELECT 'stats reset archiver', coalesce(stats_reset::text, 'never') FROM pg_stat_archiver",
    "SELECT 'stats reset wal', coalesce(stats_reset::text, 'never') FROM pg_stat_wal",
    "SELECT 'stats reset slru', string_agg(coalesce(stats_reset::text, 'never'), ',' ORDER BY name) FROM pg_stat_slru",
    # Index pages byte for byte (pageinspect): brin_summarize_* and gin_clean_pending_list
    # change them without changing any row.
    "SELECT 'index page ' || c.relname || ' #' || b, md5(get_raw_page(c.oid::regclass::text, b::int)) "
    "FROM pg_class c JOIN pg_am a ON a.oid = c.relam, "
    "generate_series(0, pg_relation_size(c.oid) / current_setting('block_size')::int - 1) b "
    "WHERE a.amname IN ('brin', 'gin') AND c.relnamespace = 'public'::regnamespace",
    # The data directory's top level (postgresql.auto.conf, files written by lo_export or
    # COPY TO with a relative path), read by the server itself.
    "SELECT 'datadir ' || f, CASE WHEN s.isdir THEN 'dir' ELSE s.size || ':' || "
    "coalesce(md5(pg_read_binary_file(f, 0, 100000000, true)), 'gone') END "
    "FROM pg_ls_dir('.') f, pg_stat_file(f, true) s WHERE s.size IS NOT NULL AND " + _NOT_FOREIGN.format(col="f", own="{own}"),
]


# --------------------------------------------------------------------------------------------
# MySQL and MariaDB
# --------------------------------------------------------------------------------------------

# As in tests/conftest.py: the local server's root, and the account granted SELECT per database.
MYSQL_ROOT = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
MYSQL_READER = "groundsql_reader"
# Server settings that move by themselves: not an attack's effect.
_VOLATILE_GLOBALS = re.compile(r"GTID_|TIMESTAMP$|.*_POS$")
# Files the server keeps in a database's folder (tables, sequences); anything else was written.
_TABLE_FILES = re.compile(r".*\.(frm|ibd|opt|MY[DI]|MA[DI]|TRG|TRN|par|CS[VM])$")


def _mysql_connect(database: str | None = None):
    import pymysql

    return pymysql.connect(**MYSQL_ROOT, database=database, autocommit=True, connect_timeout=5, charset="utf8mb4")


def _mysql_schema(tag: str) -> tuple[str, ...]:
    lock = _literal(f"{PREFIX}{tag}")  # the victim database's name (POOLED_STATE_SQL reads it so)
    return (
        "CREATE TABLE users (id INT PRIMARY KEY, name TEXT, email TEXT, hid_ssn TEXT, hid_password TEXT)",
        "CREATE TABLE orders (id INT PRIMARY KEY, user_id INT REFERENCES users(id), total DOUBLE)",
        "CREATE TABLE t (a INT, b TEXT)",
        "CREATE SEQUENCE my_seq",
        # A lock that outlives its query unless the session is reset, and writes a SELECT hides.
        f"CREATE FUNCTION evil_lock() RETURNS INT RETURN GET_LOCK({lock}, 0)",
        "CREATE FUNCTION evil_write() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM t; RETURN 1; END",
        "CREATE PROCEDURE evil_proc() MODIFIES SQL DATA DELETE FROM t",
    )


class MySQLVictim(ServerVictim):
    """A fresh database (dropped on close) on the local MariaDB server, with its accounts and
    files. Restoring drops and rebuilds it (cheap on this server). Siblings share the main
    victim's accounts and planted file; they are only read."""

    engine = "mysql"

    def __init__(self, *, sibling_of: "MySQLVictim | None" = None, same_hidden: bool = False) -> None:
        self.admin = _mysql_connect()
        self.main = sibling_of or self
        self.tag = sibling_of.tag if sibling_of else uuid.uuid4().hex[:10]
        self.db = f"{PREFIX}{self.tag}" + ("" if sibling_of is None else "_clone" if same_hidden else "_twin")
        self.datadir = Path(self._scalar("SELECT @@datadir"))
        self._server_uid = _owner(str(self.datadir))
        self._conn = self._canary = None
        if sibling_of is None:
            self.password_account = f"{PREFIX}{self.tag}_pw"
            self._role_password = _secret("ROLEPASSWORD")
            self.secret_file = str(TMP / f"{PREFIX}{self.tag}_secret.txt")
            self._file_secret = _secret("FILE")
            Path(self.secret_file).write_text(self._file_secret + "\n")
            self._globals = self._global_variables()
            self._create_accounts()
        else:
            self.secret_file = sibling_of.secret_file
        self._take_rows(sibling_of, same_hidden)
        self._populate()
        if sibling_of is None:
            self._connect()
            self._always = self._read_always_secrets()

    def _scalar(self, sql: str) -> Any:
        with self.admin.cursor() as cur:
            cur.execute(sql)
            return cur.fetchone()[0]

    def _run(self, *statements: str) -> None:
        with self.admin.cursor() as cur:
            for statement in statements:
                cur.execute(statement)

    # -- building ----------------------------------------------------------------------------

    def _create_accounts(self) -> None:
        self._run(f"CREATE USER IF NOT EXISTS '{MYSQL_READER}'@'%'",
                  f"CREATE USER '{self.password_account}'@'%' IDENTIFIED BY {_literal(self._role_password)}")

    def _populate(self) -> None:
        """(Re)build the database from nothing; the reader may SELECT from it, nothing else."""
        self._remove_written_files()
        self._run(f"DROP DATABASE IF EXISTS `{self.db}`", f"CREATE DATABASE `{self.db}`", f"USE `{self.db}`",
                  *_mysql_schema(self.tag), f"GRANT SELECT ON `{self.db}`.* TO '{MYSQL_READER}'@'%'")
        with self.admin.cursor() as cur:
            cur.executemany("INSERT INTO users VALUES (%s, %s, %s, %s, %s)", self._users)
            cur.executemany("INSERT INTO orders VALUES (%s, %s, %s)", _ORDERS)
            cur.executemany("INSERT INTO t VALUES (%s, %s)", _T)
        self._run("USE mysql")

    def _remove_written_files(self) -> None:
        # SELECT ... INTO OUTFILE with a relative name writes into the database's folder, and
        # DROP DATABASE refuses to remove a folder holding files it does not know.
        folder = self.datadir / self.db
        if folder.is_dir():
            for entry in os.scandir(folder):
                if not _TABLE_FILES.match(entry.name):
                    _remove(Path(entry.path))

    def _connect(self) -> None:
        self._conn = _mysql_connect(self.db)
        self._canary = _mysql_connect(self.db)

    def _read_always_secrets(self) -> tuple[str, ...]:
        stored = self._scalar(f"SELECT JSON_VALUE(Priv, '$.authentication_string') FROM mysql.global_priv "
                              f"WHERE User = {_literal(self.password_account)}")
        return (self._file_secret, self._role_password, stored, stored.lstrip("*"))

    def _global_variables(self) -> dict[str, str]:
        with self.admin.cursor() as cur:
            cur.execute("SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES")
            return {name: str(value) for name, value in cur.fetchall() if not _VOLATILE_GLOBALS.match(name)}

    # -- naming ------------------------------------------------------------------------------

    def url(self, role: str) -> str:
        user = "root" if role == "superuser" else MYSQL_READER
        return f"mysql+pymysql://{user}@{MYSQL_ROOT['host']}:{MYSQL_ROOT['port']}/{self.db}"

    def placeholders(self) -> dict[str, str]:
        main = self.main
        canary = str(main._canary.thread_id()) if main._canary is not None else "0"
        return {**super().placeholders(), "@DB@": self.db, "@CANARY@": canary}

    # -- fingerprint -------------------------------------------------------------------------

    def fingerprint(self) -> dict[str, str]:
        state = self._server_state()
        state["canary connection"] = self._canary_state()
        state.update(_listing(TMP, self._server_written))
        folder = self.datadir / self.db
        state.update({f"file {folder / name}": "" for name in os.listdir(folder)} if folder.is_dir() else {})
        return state

    def _server_state(self) -> dict[str, str]:
        import pymysql

        try:
            return self._query_state()
        except pymysql.err.OperationalError:  # an attack may have killed this connection; once more
            self._conn.close()
            self._conn = _mysql_connect(self.db)
            return self._query_state()

    def _query_state(self) -> dict[str, str]:
        own, db = _literal(f"{PREFIX}{self.tag}".replace("_", "\\_") + "%"), _literal(self.db)
        state: dict[str, str] = {}
        with self._conn.cursor() as cur:
            cur.execute(f"SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = {db}")
            for table, kind in cur.fetchall():
                cur.execute(f"SELECT * FROM `{self.db}`.`{table}`")
                rows = sorted(map(repr, cur.fetchall()))
                state[f"{kind.lower()} data {table}"] = hashlib.md5("|".join(rows).encode()).hexdigest()
            for key, sql in _MYSQL_STATE_QUERIES.items():
                cur.execute(sql.format(own=own, db=db))
                state[key] = hashlib.md5(repr(cur.fetchall()).encode()).hexdigest()
            cur.execute(f"SELECT IS_USED_LOCK({_literal(PREFIX + self.tag)})")
            state["user-level lock"] = repr(cur.fetchone()[0] is not None)
        for name, value in self.main._global_variables().items():
            state[f"global {name}"] = value
        return state

    def _canary_state(self) -> str:
        """The canary connection's thread while it lives; a killed canary is replaced."""
        import pymysql

        try:
            self._canary.ping(reconnect=False)
            return str(self._canary.thread_id())
        except pymysql.err.Error:
            self._canary.close()
            self._canary = _mysql_connect(self.db)
            return f"replaced by {self._canary.thread_id()}"

    # -- restoring ---------------------------------------------------------------------------

    def restore(self) -> None:
        """Back to the state after construction: every other session on the database ended
        (pooled connections with their locks and variables), the database rebuilt; for the main
        victim also the tag's accounts and files removed, its own accounts and the server's
        settings reset."""
        self._disconnect()
        with self.admin.cursor() as cur:
            cur.execute(f"SELECT ID FROM information_schema.PROCESSLIST WHERE DB = {_literal(self.db)} "
                        f"AND ID <> CONNECTION_ID()")
            for (thread,) in cur.fetchall():
                try:
                    cur.execute(f"KILL CONNECTION {int(thread)}")
                except Exception:  # noqa: BLE001 - it may have ended meanwhile
                    pass
        self._populate()
        if self.main is self:
            self._clean_server()
            self._connect()
            self._always = self._read_always_secrets()

    def _clean_server(self) -> None:
        own = _literal(f"{PREFIX}{self.tag}".replace("_", "\\_") + "%")
        keep = {self.db, f"{self.db}_twin", f"{self.db}_clone"}
        with self.admin.cursor() as cur:
            cur.execute(f"SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE {own}")
            for (name,) in cur.fetchall():
                if name not in keep:
                    cur.execute(f"DROP DATABASE `{name}`")
            cur.execute(f"SELECT User, Host FROM mysql.global_priv WHERE User LIKE {own}")
            for user, host in cur.fetchall():
                cur.execute(f"DROP USER {_literal(user)}@{_literal(host)}")
            cur.execute(f"ALTER USER '{MYSQL_READER}'@'%' IDENTIFIED BY ''")
        self._create_accounts()
        now = self._global_variables()
        for name, value in self._globals.items():
            if now.get(name) != value:
                self._run(f"SET GLOBAL {name} = {value if value.lstrip('-').isdigit() else _literal(value)}")
        for entry in os.scandir(TMP):
            if entry.name.startswith(f"{PREFIX}{self.tag}_out"):
                _remove(Path(entry.path))

    def _disconnect(self) -> None:
        for conn in (self._conn, self._canary):
            if conn is not None and conn.open:
                conn.close()

    def close(self) -> None:
        """Drop everything; siblings first (they use the main victim's accounts)."""
        self._disconnect()
        self._remove_written_files()
        self._run(f"DROP DATABASE IF EXISTS `{self.db}`")
        try:
            self._run(f"REVOKE SELECT ON `{self.db}`.* FROM '{MYSQL_READER}'@'%'")
        except Exception:  # noqa: BLE001 - never granted
            pass
        if self.main is self:
            self._clean_server()
            self._run(f"DROP USER IF EXISTS '{self.password_account}'@'%'")
            Path(self.secret_file).unlink(missing_ok=True)
        self.admin.close()


# Rows of the server's state an attack could change, read as root, hashed per key. "{own}" is
# the LIKE pattern of the victim's tag, "{db}" its database: other runs' objects are left out.
_MYSQL_STATE_QUERIES = {
    "columns": "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
               "WHERE TABLE_SCHEMA = {db} ORDER BY 1, 2",
    "routines": "SELECT ROUTINE_NAME, ROUTINE_TYPE, MD5(ROUTINE_DEFINITION), SECURITY_TYPE, DEFINER "
                "FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = {db} ORDER BY 1, 2",
    "triggers": "SELECT TRIGGER_NAME, MD5(ACTION_STATEMENT) FROM information_schema.TRIGGERS "
                "WHERE TRIGGER_SCHEMA = {db} ORDER BY 1",
    "events": "SELECT EVENT_NAME, MD5(EVENT_DEFINITION) FROM information_schema.EVENTS ORDER BY 1",
    "views": "SELECT TABLE_NAME, MD5(VIEW_DEFINITION) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = {db}",
    "databases": "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE {own} ORDER BY 1",
    "accounts": "SELECT User, Host, MD5(Priv) FROM mysql.global_priv "
                f"WHERE User LIKE {{own}} OR User = '{MYSQL_READER}' ORDER BY 1, 2",
    "database grants": "SELECT * FROM mysql.db WHERE Db LIKE {own} ORDER BY Host, Db, User",
    "table grants": "SELECT Host, Db, User, Table_name, Table_priv, Column_priv FROM mysql.tables_priv "
                    "WHERE Db LIKE {own} ORDER BY 1, 2, 3, 4",
    "column grants": "SELECT * FROM mysql.columns_priv WHERE Db LIKE {own} ORDER BY 1, 2, 3, 4, 5",
    "routine grants": "SELECT Host, Db, User, Routine_name, Proc_priv FROM mysql.procs_priv "
                      "WHERE Db LIKE {own} ORDER BY 1, 2, 3, 4",
    "role grants": "SELECT * FROM mysql.roles_mapping "
                   f"WHERE User LIKE {{own}} OR User = '{MYSQL_READER}' OR Role LIKE {{own}} ORDER BY 1, 2, 3",
    "loadable functions": "SELECT * FROM mysql.func ORDER BY 1",
    "plugins": "SELECT PLUGIN_NAME, PLUGIN_STATUS FROM information_schema.PLUGINS ORDER BY 1",
    "servers": "SELECT Server_name FROM mysql.servers ORDER BY 1",
}


# State that lives in a connection an executor keeps open and would reach the next query
# (PostgreSQL: session settings, SQL-level prepared statements, held cursors, LISTEN channels,
# temporary tables, dblink connections; DuckDB: variables, temporary tables; SQLite: temporary
# tables). Read through the Database under test, on the connection it hands out next.
POOLED_STATE_SQL = {
    "postgres": (
        "SELECT (SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings "
        "WHERE source = 'session'), "
        "(SELECT string_agg(name, ',' ORDER BY name) FROM pg_prepared_statements WHERE from_sql), "
        "(SELECT string_agg(name, ',' ORDER BY name) FROM pg_cursors), "
        "(SELECT string_agg(c, ',' ORDER BY c) FROM pg_listening_channels() c), "
        "(SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = pg_my_temp_schema()), "
        "array_to_string(dblink_get_connections(), ','), current_user, session_user"
    ),
    "duckdb": (
        "SELECT (SELECT string_agg(name || '=' || CAST(value AS VARCHAR), ',' ORDER BY name) FROM duckdb_variables()), "
        "(SELECT string_agg(table_name, ',' ORDER BY table_name) FROM duckdb_tables() WHERE temporary)"
    ),
    "sqlite": "SELECT (SELECT group_concat(name) FROM temp.sqlite_master)",
    # MySQL: user variables, the victim's user-level lock (named as its database) held, the
    # session's settings (temporary tables
    # have no catalog to list them; creating one is refused by the executor and the reader's
    # grants, and the reset after each query drops them).
    "mysql": (
        "SELECT (SELECT GROUP_CONCAT(VARIABLE_NAME, '=', VARIABLE_VALUE ORDER BY VARIABLE_NAME) "
        "FROM information_schema.USER_VARIABLES), IS_USED_LOCK(DATABASE()) = CONNECTION_ID(), @@SESSION.sql_mode, "
        "@@SESSION.tx_read_only, @@SESSION.autocommit, @@SESSION.time_zone, "
        "@@SESSION.character_set_client, CURRENT_USER(), CURRENT_ROLE(), DATABASE()"
    ),
    # Spark's session state is its settings, which groundsql never sends SET for; the probe
    # reads what a query can: the current database and catalog.
    "spark": "SELECT current_database(), current_catalog()",
}


def file_victims(engine: str) -> tuple[FileVictim, FileVictim, FileVictim]:
    """A SQLite or DuckDB victim, its twin and its clone."""
    victim = FileVictim(engine)
    return victim, FileVictim(engine, sibling_of=victim), FileVictim(engine, sibling_of=victim, same_hidden=True)


def postgres_victims(admin_url: str = PG_ADMIN_URL) -> tuple[PostgresVictim, PostgresVictim, PostgresVictim]:
    """A PostgreSQL victim, its twin and its clone."""
    victim = PostgresVictim(admin_url)
    try:
        return (victim, PostgresVictim(admin_url, sibling_of=victim),
                PostgresVictim(admin_url, sibling_of=victim, same_hidden=True))
    except BaseException:
        victim.close()
        raise


def mysql_victims() -> tuple[MySQLVictim, MySQLVictim, MySQLVictim]:
    """A MySQL/MariaDB victim, its twin and its clone."""
    victim = MySQLVictim()
    try:
        return victim, MySQLVictim(sibling_of=victim), MySQLVictim(sibling_of=victim, same_hidden=True)
    except BaseException:
        victim.close()
        raise


# --------------------------------------------------------------------------------------------
# Spark
# --------------------------------------------------------------------------------------------


class SparkVictim(Victim):
    """A database on the narrowed Spark Thrift server (`groundsql spark serve`): a SQLite
    victim copied with `groundsql spark load`. The three siblings are three Spark databases
    of one server, started for them as `nobody` (when root), who may only read the copies;
    the secret file is readable by everyone, so that a path read as a table would find it.

    The fingerprint is the copies' files, the server's catalog (databases, each one's tables
    and functions, the narrowing settings, as a new session sees them) and the tagged files
    in /tmp. There is no restoring a server's catalog: an effect fails the test, and the
    server is thrown away with the module."""

    engine = "spark"

    def __init__(self, server: "SparkServer", users: list[tuple[Any, ...]], hidden: list[str]) -> None:
        self.server = server
        self.tag = uuid.uuid4().hex[:10]
        self.database = f"{PREFIX}{self.tag}"
        self._users = users
        self.secrets = Secrets(hidden, [server.file_secret])
        self.secret_file = server.secret_file

    def url(self, role: str = "reader") -> str:
        return f"hive://127.0.0.1:{self.server.port}/{self.database}"

    def placeholders(self) -> dict[str, str]:
        return {**super().placeholders(), "@DB@": self.database}

    def fingerprint(self) -> dict[str, str]:
        state = {f"file {path}": f"{path.stat().st_size}:{hashlib.sha256(path.read_bytes()).hexdigest()}"
                 for path in sorted(self.server.folder.rglob("*")) if path.is_file()}
        state.update(self.server.catalog())
        state.update(_listing(TMP, self._own_tmp))
        return state

    def restore(self) -> None:
        for entry in os.scandir(TMP):
            if self._own_tmp(entry):
                _remove(Path(entry.path))

    def close(self) -> None:
        self.restore()


class SparkServer:
    """The Spark copies of three SQLite victims, and the narrowed server over them."""

    def __init__(self) -> None:
        from tests.conftest import spark_copies

        self.root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}spark_"))
        self.root.chmod(0o755)
        self.file_secret = _secret("FILE")
        self.secret_file = str(self.root / "secret.txt")
        Path(self.secret_file).write_text(self.file_secret + "\n")
        Path(self.secret_file).chmod(0o644)
        users, hidden = _user_rows(twin=False)
        twin_users, twin_hidden = _user_rows(twin=True)
        self.victims = (SparkVictim(self, users, hidden), SparkVictim(self, twin_users, twin_hidden),
                        SparkVictim(self, users, hidden))
        sources = []
        for victim in self.victims:
            path = self.root / f"{victim.database}.sqlite"
            with sqlite3.connect(path) as conn:
                conn.executescript(_SQLITE_SCHEMA)
                _insert_all(conn, victim._users)
            conn.close()
            sources.append((f"sqlite:///{path}", victim.database))
        self._serving = spark_copies(sources)
        self.port, self.folder = self._serving.__enter__()

    def catalog(self) -> dict[str, str]:
        return spark_catalog(self.port)

    def close(self) -> None:
        self._serving.__exit__(None, None, None)
        shutil.rmtree(self.root, ignore_errors=True)


def spark_catalog(port: int) -> dict[str, str]:
    """What a new session of the Spark server on `port` sees: its databases, each one's tables
    and functions, and the narrowing settings."""
    from groundsql.db.sparkserver import NARROWING
    from tests.conftest import spark_connect

    state: dict[str, str] = {}
    with spark_connect(port) as conn:
        cursor = conn.cursor()
        cursor.execute("SHOW DATABASES")
        databases = sorted(row[0] for row in cursor.fetchall())
        state["spark databases"] = repr(databases)
        for database in databases:
            cursor.execute(f"SHOW TABLES IN `{database}`")
            state[f"spark tables of {database}"] = repr(sorted(map(tuple, cursor.fetchall())))
            cursor.execute(f"SHOW USER FUNCTIONS IN `{database}`")
            state[f"spark functions of {database}"] = repr(sorted(map(tuple, cursor.fetchall())))
        for key in NARROWING:
            cursor.execute(f"SET {key}")
            state[f"spark setting {key}"] = repr(cursor.fetchall())
    return state


def spark_victims() -> tuple[SparkVictim, SparkVictim, SparkVictim]:
    """A Spark victim, its twin and its clone, on a server of their own (`victim.server`)."""
    return SparkServer().victims


def close_all(victims: tuple[Victim, ...]) -> None:
    """Siblings first: a PostgreSQL victim's roles are granted in their databases."""
    for victim in reversed(victims):
        victim.close()
