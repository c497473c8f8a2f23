"""Shared fixtures: real databases (SQLite files, the local PostgreSQL server, DuckDB files)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

REPO = Path(__file__).resolve().parents[1]
# The shared benchmark data lies beside the checkout (never copied into it).
BENCHMARKS = Path(os.environ.get("GROUNDSQL_BENCHMARKS", REPO.parent / "shared" / "benchmarks"))
SPIDER = BENCHMARKS / "spider_dev"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def shared_file(path: Path) -> Path:
    """A file of the shared benchmark data; skips the test where it is missing, fails in CI."""
    if not path.is_file():
        message = f"shared benchmark file {path} is not here (set GROUNDSQL_BENCHMARKS)"
        if os.environ.get("CI"):
            pytest.fail(message)  # in CI a missing data set must not pass as skipped tests
        pytest.skip(message)
    return path


def shared_benchmark(name: str) -> Path:
    """A shared benchmark's folder (`spider_dev`, `logiccat`); skips like `shared_file`."""
    shared_file(BENCHMARKS / name / "dev.json")
    return BENCHMARKS / name


def spider_db(name: str) -> Path:
    return shared_file(SPIDER / "database" / name / f"{name}.sqlite")


@pytest.fixture
def concert_singer(tmp_path: Path) -> Path:
    """A private copy, so a test that (wrongly) wrote could not harm the shared file."""
    copy = tmp_path / "concert_singer.sqlite"
    shutil.copy(spider_db("concert_singer"), copy)
    return copy


PG_READER = "groundsql_test_reader"


def pg_reader_url(admin_url: str) -> str:
    """The URL of a role that may only read the database `admin_url` names, created on demand:
    groundsql refuses to run queries as a superuser or as a role that can write."""
    psycopg = pytest.importorskip("psycopg")
    database = admin_url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (PG_READER,)).fetchone():
            conn.execute(f"CREATE ROLE {PG_READER} LOGIN")
        conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {PG_READER}')
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {PG_READER}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {PG_READER}")
    return admin_url.replace("postgres@", f"{PG_READER}@", 1)


@pytest.fixture(scope="session")
def postgres_admin_url():
    """A fresh PostgreSQL database with a small schema, as its superuser; dropped afterwards."""
    psycopg = pytest.importorskip("psycopg")
    name = f"groundsql_test_{uuid.uuid4().hex[:8]}"
    try:
        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as err:
        pytest.fail(f"PostgreSQL is not running on 127.0.0.1:5432 ({err}); .ci/run starts it")
    admin.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """
            CREATE TABLE country (country_id INT PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE city (
                city_id INT PRIMARY KEY,
                name TEXT NOT NULL,
                country_id INT NOT NULL REFERENCES country(country_id),
                population BIGINT
            );
            INSERT INTO country VALUES (1, 'France'), (2, 'Japan');
            INSERT INTO city VALUES (1, 'Paris', 1, 2100000), (2, 'Lyon', 1, 520000),
                                    (3, 'Osaka', 2, 2750000);
            """
        )
    yield url
    admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    admin.close()


@pytest.fixture(scope="session")
def postgres_url(postgres_admin_url: str) -> str:
    """The same database as a role that may only read it: how groundsql is meant to connect."""
    return pg_reader_url(postgres_admin_url)


@contextmanager
def spark_folder(sources: list[tuple[str, str]]) -> Iterator[Path]:
    """The databases (URL, Spark name) copied with `groundsql spark load` into a folder the
    server's user may only read (outside pytest's temporary folders, which are private to
    this user)."""
    import tempfile

    from groundsql.db.sparkcopy import load_many

    folder = Path(tempfile.mkdtemp(prefix="groundsql-spark-test-"))
    try:
        load_many(sources, folder)
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def spark_user() -> str | None:
    """Whom the test servers run as: as root, `nobody` (who may only read the copies)."""
    return "nobody" if os.geteuid() == 0 else None


@contextmanager
def spark_server(sources: list[tuple[str, str]], **serve_options: Any) -> Iterator[tuple[Any, Path]]:
    """`spark_folder` served by the walled Thrift server (`groundsql spark serve`): yields the
    running server (db/sparkserver.Server) and the folder."""
    from groundsql.db.sparkserver import serve
    from tests.server_harness import free_port

    with spark_folder(sources) as folder:
        server = serve(folder, port=free_port(), user=spark_user(), **serve_options)
        try:
            yield server, folder
        finally:
            server.stop()


@contextmanager
def spark_copies(sources: list[tuple[str, str]]) -> Iterator[tuple[int, Path]]:
    """`spark_server`, yielding its port and the folder."""
    with spark_server(sources) as (server, folder):
        yield server.port, folder


def spark_connect(port: int, database: str = "default", *, password: str | None = None) -> Any:
    """A raw PyHive connection to the test server on `port`, past groundsql's walls (only the
    server's own: it signs in with the password `serve` wrote, unless given another)."""
    from groundsql.db.engines.spark import open_connection
    from groundsql.db.sparkserver import password_for

    return open_connection("127.0.0.1", port, "groundsql_test", password or password_for("127.0.0.1", port) or "",
                           database, timeout_s=120)


@pytest.fixture(scope="session")
def spark_url() -> Iterator[str]:
    """hive://... of a Spark copy of the demo database, started once for the session."""
    pytest.importorskip("pyhive")
    from groundsql.api import demo_database_url

    with spark_copies([(demo_database_url(), "demo")]) as (port, _):
        yield f"hive://127.0.0.1:{port}/demo"


@pytest.fixture
def duckdb_file(tmp_path: Path) -> Path:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "shop.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute(
        """
        CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL);
        CREATE TABLE orders (
            order_id INTEGER PRIMARY KEY,
            customer_id INTEGER REFERENCES customer(customer_id),
            amount DECIMAL(10, 2)
        );
        INSERT INTO customer VALUES (1, 'Ada'), (2, 'Grace');
        INSERT INTO orders VALUES (10, 1, 12.50), (11, 1, 7.25), (12, 2, 99.99);
        """
    )
    conn.close()
    return path


# -- a scripted OpenAI-compatible model server -----------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    """A model server answering from `script`: (HTTP status, body, seconds to wait first) each."""

    script: list[tuple[int, str, float]] = []
    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        status, payload, delay = type(self).script.pop(0)
        time.sleep(delay)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        try:
            self.wfile.write(payload.encode())
        except BrokenPipeError:
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_server() -> Iterator[tuple[str, type[_Handler]]]:
    """A scripted OpenAI-compatible server on a free port: its base URL and its handler class."""
    handler = type("Handler", (_Handler,), {"script": [], "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    server.shutdown()


def ok_answer(text: str) -> str:
    """An OpenAI-compatible chat answer saying `text`."""
    return json.dumps(
        {
            "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 9},
        }
    )


# -- MySQL and MariaDB (the local server on 127.0.0.1:3306) -----------------------------------

MYSQL_ADMIN_URL = "mysql+pymysql://root@127.0.0.1:3306/test"
MYSQL_READER = "groundsql_reader"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mysql: needs the MariaDB (or MySQL) server on 127.0.0.1:3306")


def mysql_connect(database: str = "test"):
    """An autocommit connection as the server's root account; skips the test where no server
    answers, fails in CI (where .ci/run starts it)."""
    pymysql = pytest.importorskip("pymysql")
    try:
        return pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", database=database,
                               autocommit=True, connect_timeout=5, charset="utf8mb4")
    except pymysql.err.OperationalError as err:
        message = f"MariaDB is not running on 127.0.0.1:3306 ({err}); .ci/run starts it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def mysql_url(database: str, user: str = "root") -> str:
    return f"mysql+pymysql://{user}@127.0.0.1:3306/{database}"


def mysql_grant_reader(admin, database: str) -> str:
    """The URL of the account that may only read `database` (SELECT on it, nothing else),
    created on demand: groundsql refuses an account that can write."""
    with admin.cursor() as cur:
        cur.execute(f"CREATE USER IF NOT EXISTS '{MYSQL_READER}'@'%'")
        cur.execute(f"GRANT SELECT ON `{database}`.* TO '{MYSQL_READER}'@'%'")
    return mysql_url(database, MYSQL_READER)


def mysql_revoke_reader(admin, database: str) -> None:
    import pymysql

    with admin.cursor() as cur:
        try:
            cur.execute(f"REVOKE SELECT ON `{database}`.* FROM '{MYSQL_READER}'@'%'")
        except pymysql.err.MySQLError:
            pass  # never granted


@pytest.fixture(scope="session")
def mysql_database() -> Iterator[str]:
    """A fresh database with a small schema (keys and a foreign key); dropped afterwards."""
    admin = mysql_connect()
    name = f"groundsql_test_{uuid.uuid4().hex[:8]}"
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
        cur.execute(f"USE `{name}`")
        for statement in (
            "CREATE TABLE country (country_id INT PRIMARY KEY, name VARCHAR(64) NOT NULL)",
            "CREATE TABLE city (city_id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, "
            "country_id INT NOT NULL, population BIGINT, FOREIGN KEY (country_id) REFERENCES country (country_id))",
            "INSERT INTO country VALUES (1, 'France'), (2, 'Japan')",
            "INSERT INTO city VALUES (1, 'Paris', 1, 2100000), (2, 'Lyon', 1, 520000), (3, 'Osaka', 2, 2750000)",
        ):
            cur.execute(statement)
    yield name
    mysql_revoke_reader(admin, name)
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE `{name}`")
    admin.close()


@pytest.fixture(scope="session")
def mysql_admin_url(mysql_database: str) -> str:
    """The database as the server's root account (refused without allow_privileged_role)."""
    return mysql_url(mysql_database)


@pytest.fixture(scope="session")
def mysql_reader_url(mysql_database: str) -> str:
    """The same database as an account that may only read it: how groundsql is meant to connect."""
    admin = mysql_connect()
    try:
        return mysql_grant_reader(admin, mysql_database)
    finally:
        admin.close()
