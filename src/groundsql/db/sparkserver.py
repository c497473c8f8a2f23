"""A Spark SQL copy of a database, and the Spark Thrift server groundsql may ask, narrowed.

Spark has no read-only mode, no accounts and, left as it comes, runs a query's Java method
calls (`reflect`), external scripts (`TRANSFORM ... USING`) and reads any file as a table
(`SELECT * FROM text.`/etc/passwd``). groundsql's own walls (the validator, and the engine's
refusal of anything but a query, db/engines/spark.py) come first; the server is the last one.
`serve` starts it with every setting that narrows it, and the engine reads each back when it
connects and refuses a server without them (`NARROWING`):

- static settings a session cannot change: restricted mode (no reflect/java_method, no
  TRANSFORM scripts) and a reflection allow-list that admits no method; no SQL on files (a
  session setting: groundsql never sends SET, and reads it back on every connection);
- a server-side query timeout, cancellation that interrupts the running tasks, and results
  streamed to the client a partition at a time (incremental collect), not gathered in memory;
- an in-memory catalog, its tables registered from the copies' manifests as the server starts
  (through a session of `serve`'s own): nothing a session creates outlives the server, and
  there is no metastore to write;
- the copy's files readable, not writable, by the server's own user: `serve` checks this and
  refuses to start otherwise (as root, it starts the server as another user: `--user nobody`).

`load` writes the copy: each table's rows as Parquet (through CSV files Spark converts with
an explicit schema, so no table is held in Python's memory), and a manifest with the columns,
their comments, primary keys and foreign keys, which Spark's catalog cannot hold as
constraints; they become table properties that introspection reads back.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from groundsql.errors import ConfigError

MANIFEST = "_groundsql.json"
PORT = 10000
# setting -> (the value it must have, why), read back by the engine at connect time.
NARROWING: dict[str, tuple[str, str]] = {
    "spark.sql.restrictedMode.enabled": ("true", "a query could call Java methods or run scripts"),
    "spark.sql.reflect.allowList": (r"^$", "reflect() could call any Java method"),
    "spark.sql.runSQLOnFiles": ("false", "a query could read any file the server can as a table"),
    "spark.sql.thriftServer.interruptOnCancel": ("true", "a cancelled query would go on running"),
    "spark.sql.thriftServer.incrementalCollect": ("true", "a large result would be gathered in the server's memory"),
    "spark.groundsql.readOnlyData": ("true", "its data files may be writable by the server"),
}
QUERY_TIMEOUT_SETTING = "spark.sql.thriftServer.queryTimeout"
THRIFT_SERVER = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
_NUMERIC = ("int", "integer", "bigint", "smallint", "tinyint", "mediumint", "real", "float", "double",
            "numeric", "decimal", "number", "boolean", "bool")


def spark_type(declared: str, kinds: set[str]) -> str:
    """Spark's type for a column declared `declared` whose values were of `kinds` (what
    `_kind` says of each): the values decide, so that nothing is lost and a query returns what
    the source returns (SQLite keeps text in an INTEGER column, and dates as text); a column
    declared as text stays text."""
    word = declared.strip().lower().split("(")[0].split(" ")[0]
    if not kinds:  # empty or all NULL: the declaration alone
        kinds = {"int"} if word in _NUMERIC[:6] else {"float"} if word in _NUMERIC else \
            {"date"} if word == "date" else {"timestamp"} if word in ("datetime", "timestamp") else {"str"}
    if word in _NUMERIC or not word:
        if kinds == {"bool"}:
            return "BOOLEAN"
        if kinds <= {"int", "bool"}:
            return "BIGINT"
        if kinds <= {"int", "bool", "float"}:
            return "DOUBLE"
    if word == "date" and kinds <= {"date"}:
        return "DATE"
    if word in ("date", "datetime", "timestamp") and kinds <= {"date", "timestamp"}:
        return "TIMESTAMP"
    return "STRING"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, (float, decimal.Decimal)):
        return "float"
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, datetime.date):
        return "date"
    return "str"  # text stays text: SQLite's dates are text, and a copy returns what it holds


def load(source_url: str, folder: Path, name: str | None = None) -> Path:
    """Copy the database at `source_url` into `folder`/NAME as Parquet and a manifest."""
    return load_many([(source_url, name)], folder)[0]


def load_many(sources: list[tuple[str, str | None]], folder: Path) -> list[Path]:
    """`load` for several databases (URL, name or None for the source's), with one Spark."""
    spark = _session()
    try:
        return [_copy(spark, url, Path(folder), name) for url, name in sources]
    finally:
        spark.stop()


def _copy(spark: Any, source_url: str, folder: Path, name: str | None) -> Path:
    from groundsql.db import Database

    with Database(source_url) as db:
        schema = db.introspect()
        if db.backend not in ("sqlite", "postgresql", "mysql", "mariadb"):
            raise ConfigError(f"a Spark copy is made from SQLite, PostgreSQL or MySQL, not {db.backend}")
        name = name or schema.name
        if not name.isidentifier():
            raise ConfigError(f"{name!r} cannot name a Spark database: give --name, letters, digits and _")
        target = folder.resolve() / name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        manifest: dict[str, Any] = {"database": name, "source": _without_password(source_url), "tables": []}
        with tempfile.TemporaryDirectory() as scratch, db.engine.connect() as conn:
            for table in schema.tables:
                csv_path = Path(scratch) / f"{table.name}.csv"
                kinds = _write_csv(conn, table.name, [c.name for c in table.columns], csv_path)
                columns = [{"name": c.name, "type": spark_type(c.type, found), "comment": c.description}
                           for c, found in zip(table.columns, kinds)]
                ddl = ", ".join(f"`c{i}` {c['type']}" for i, c in enumerate(columns))
                # FAILFAST: a value the chosen type cannot hold stops the copy instead of
                # becoming NULL (the types follow the values, so this is a bug if it happens).
                frame = spark.read.csv(str(csv_path), schema=ddl, header=False, multiLine=True, escape='"',
                                       nullValue="\\N", mode="FAILFAST",
                                       timestampFormat="yyyy-MM-dd HH:mm:ss[.SSSSSS]")
                frame.toDF(*[c["name"] for c in columns]).write.mode("overwrite").parquet(str(target / table.name))
                manifest["tables"].append({
                    "name": table.name, "columns": columns,
                    "primary_key": [c.name for c in table.columns if c.primary_key],
                    "foreign_keys": [{"columns": list(fk.columns), "table": fk.ref_table,
                                      "ref_columns": list(fk.ref_columns)} for fk in table.foreign_keys],
                })
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return target


class Server:
    """A running Thrift server: its process and its scratch folder (log, Spark's temporary files)."""

    def __init__(self, process: subprocess.Popen[bytes], scratch: Path) -> None:
        self.process, self.scratch = process, scratch

    def wait(self) -> None:
        self.process.wait()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)


def serve(folder: Path, *, host: str = "127.0.0.1", port: int = PORT, query_timeout_s: int = 60,
          memory: str = "2g", user: str | None = None) -> Server:
    """Start the narrowed Thrift server over every copy in `folder`, as `user` (by default the
    current one); it is returned once it accepts connections."""
    folder = Path(folder).resolve()
    copies = sorted(p.parent for p in folder.glob(f"*/{MANIFEST}"))
    if not copies:
        raise ConfigError(f"no Spark copy in {folder}: make one with `groundsql spark load URL {folder}`")
    who = user or "this user"
    writable = _writable(folder, user)
    if writable:
        raise ConfigError(f"{who} may write {writable}: start the server as a user who may only read {folder} "
                          f"(--user nobody), so that no query can change the data")
    scratch = Path(tempfile.mkdtemp(prefix="groundsql-spark-"))
    settings = {key: value for key, (value, _) in NARROWING.items()}
    settings.update({
        QUERY_TIMEOUT_SETTING: f"{query_timeout_s}s",
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(scratch / "warehouse"),
        "spark.local.dir": str(scratch),
        "spark.driver.memory": memory,
        "spark.ui.enabled": "false",
        "spark.hadoop.hive.server2.thrift.bind.host": host,
        "spark.hadoop.hive.server2.thrift.port": str(port),
    })
    if user:
        shutil.chown(scratch, user)
    home = spark_home()
    if user and not _reaches(home / "bin" / "spark-submit", user):
        home = _staged(home, scratch)
    command = [str(home / "bin" / "spark-submit"), "--master", "local[2]", "--class", THRIFT_SERVER,
               "--name", "groundsql", *[arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")],
               "spark-internal"]
    try:
        with (scratch / "server.log").open("wb") as log:  # the child keeps its own handle
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, user=user, cwd=scratch,
                                       env={**os.environ, "SPARK_HOME": str(home), "HOME": str(scratch)})
    except (OSError, KeyError) as err:  # KeyError: no such user
        raise ConfigError(f"cannot start the Spark Thrift server{' as ' + user if user else ''}: {err}") from None
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = (scratch / "server.log").read_text(errors="replace").strip().splitlines()[-5:]
            shutil.rmtree(scratch, ignore_errors=True)
            raise ConfigError("the Spark Thrift server stopped as it started: " + " / ".join(tail))
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            time.sleep(1)
            continue
        # The in-memory catalog is the server's, shared by its sessions: the tables are
        # registered once, through a session of its own.
        from pyhive import hive

        with closing(hive.connect(host=host, port=port, username="groundsql")) as conn, closing(conn.cursor()) as cursor:
            for copy in copies:
                for statement in _registration(json.loads((copy / MANIFEST).read_text()), copy):
                    cursor.execute(statement)
        return Server(process, scratch)
    process.terminate()
    raise ConfigError(f"the Spark Thrift server did not listen on {host}:{port} within 180 s "
                      f"(its log: {scratch / 'server.log'})")


def _reaches(path: Path, user: str) -> bool:
    """Whether `user` may run `path` (every folder above it open to them)."""
    try:
        return subprocess.run(["test", "-x", str(path)], user=user, timeout=10).returncode == 0
    except (OSError, KeyError, subprocess.SubprocessError):
        return False


def _staged(home: Path, scratch: Path) -> Path:
    """Spark's scripts, settings and jars where the server's user can reach them: pyspark may be
    installed in a folder private to its owner (a virtual environment in a home folder or a
    `mktemp -d`). Hard links cost no space; across file systems the files are copied."""
    def link(source: str, target: str) -> None:
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)

    staged = scratch / "spark"
    for part in ("bin", "conf", "jars"):
        if (home / part).is_dir():
            shutil.copytree(home / part, staged / part, copy_function=link)
    return staged


def spark_home() -> Path:
    """Where pyspark keeps Spark's jars and scripts."""
    try:
        import pyspark
    except ImportError as err:
        raise ConfigError("Spark needs the pyspark package and Java 17+: pip install 'groundsql[spark]' "
                          "and apt-get install openjdk-17-jre-headless") from err
    return Path(pyspark.__file__).parent


def _session() -> Any:
    spark_home()  # says what to install when pyspark is missing
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").appName("groundsql").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _registration(manifest: dict[str, Any], copy: Path) -> list[str]:
    database = _name(manifest["database"])
    statements = [f"CREATE DATABASE IF NOT EXISTS {database}"]
    for table in manifest["tables"]:
        columns = ", ".join(f"{_name(c['name'])} {c['type']}" + (f" COMMENT {_string(c['comment'])}" if c.get("comment") else "")
                            for c in table["columns"])
        properties = {"groundsql.primary_key": json.dumps(table["primary_key"]),
                      "groundsql.foreign_keys": json.dumps(table["foreign_keys"])}
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {database}.{_name(table['name'])} ({columns}) USING parquet "
            f"LOCATION {_string(str(copy / table['name']))} "
            f"TBLPROPERTIES ({', '.join(f'{_string(k)} = {_string(v)}' for k, v in properties.items())})")
    return statements


def _write_csv(conn: Any, table: str, columns: list[str], path: Path) -> list[set[str]]:
    """The table's rows as CSV (streamed), and the kinds of value each column holds."""
    import sqlalchemy as sa

    quote = conn.dialect.identifier_preparer.quote
    result = conn.execution_options(stream_results=True).execute(
        sa.text(f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table)}"))
    kinds: list[set[str]] = [set() for _ in columns]
    with path.open("w", newline="", encoding="utf-8") as out:
        # Text quoted, so that '' stays an empty string (Spark reads an unquoted empty field as NULL).
        writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC)
        for batch in result.partitions(10_000):
            for row in batch:
                for found, value in zip(kinds, row):
                    if value is not None:
                        found.add(_kind(value))
                writer.writerow([_csv_value(v) for v in row])
    return kinds


def _csv_value(value: Any) -> Any:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.hex()
    return value


def _name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _writable(folder: Path, user: str | None) -> str:
    """The first file or folder under `folder` that `user` may write, or ''."""
    found = subprocess.run(["find", str(folder), "-writable", "-print", "-quit"], capture_output=True,
                           text=True, user=user, check=False)
    return found.stdout.strip()


def _without_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
