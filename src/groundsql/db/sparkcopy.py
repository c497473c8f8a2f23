"""A Spark SQL copy of a database: what `groundsql spark load` writes and `spark serve` serves.

Each table's rows become Parquet (through CSV files Spark converts with an explicit schema, so
no table is held in Python's memory), each column typed by the values it holds, and a manifest
records the columns, their comments, primary keys and foreign keys, which Spark's catalog cannot
hold as constraints: the server registers them as table properties that introspection reads back.
The manifest also holds each table's row count and its columns' distinct counts, which the
server's guard estimates a query's size from before it runs.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import hashlib
import heapq
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from groundsql.errors import ConfigError

MANIFEST = "_groundsql.json"
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
                profiles, rows = _write_csv(conn, table.name, [c.name for c in table.columns], csv_path)
                columns = [{"name": c.name, "type": spark_type(c.type, profile.kinds), "comment": c.description}
                           for c, profile in zip(table.columns, profiles)]
                ddl = ", ".join(f"`c{i}` {c['type']}" for i, c in enumerate(columns))
                # FAILFAST: a value the chosen type cannot hold stops the copy instead of
                # becoming NULL (the types follow the values, so this is a bug if it happens).
                frame = spark.read.csv(str(csv_path), schema=ddl, header=False, multiLine=True, escape='"',
                                       nullValue="\\N", mode="FAILFAST",
                                       timestampFormat="yyyy-MM-dd HH:mm:ss[.SSSSSS]")
                frame.toDF(*[c["name"] for c in columns]).write.mode("overwrite").parquet(str(target / table.name))
                manifest["tables"].append({
                    "name": table.name, "columns": columns, "rows": rows,
                    "distinct": {c["name"]: profile.distinct() for c, profile in zip(columns, profiles)},
                    "primary_key": [c.name for c in table.columns if c.primary_key],
                    "foreign_keys": [{"columns": list(fk.columns), "table": fk.ref_table,
                                      "ref_columns": list(fk.ref_columns)} for fk in table.foreign_keys],
                })
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return target


def _session() -> Any:
    spark_home()  # says what to install when pyspark is missing
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").appName("groundsql").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark

class _Column:
    """What the copy learns of a column as its rows stream by: the kinds of value it holds, and
    how many distinct values (exact up to K of them; beyond, estimated from the K smallest of
    their hashes, as a k-minimum-values sketch does, in constant memory)."""

    K = 1024

    def __init__(self) -> None:
        self.kinds: set[str] = set()
        self._smallest: list[int] = []  # a max-heap of the K smallest hashes, negated
        self._kept: set[int] = set()

    def add(self, value: Any) -> None:
        if value is None:
            return
        self.kinds.add(_kind(value))
        h = int.from_bytes(hashlib.blake2b(repr(value).encode(), digest_size=8).digest(), "big")
        if h in self._kept:
            return
        if len(self._smallest) < self.K:
            heapq.heappush(self._smallest, -h)
            self._kept.add(h)
        elif h < -self._smallest[0]:
            self._kept.discard(-heapq.heapreplace(self._smallest, -h))
            self._kept.add(h)

    def distinct(self) -> int:
        if len(self._smallest) < self.K:
            return len(self._smallest)
        return int((self.K - 1) * 2**64 / max(-self._smallest[0], 1))


def _write_csv(conn: Any, table: str, columns: list[str], path: Path) -> tuple[list[_Column], int]:
    """The table's rows as CSV (streamed), what each column holds and how many rows."""
    import sqlalchemy as sa

    quote = conn.dialect.identifier_preparer.quote
    result = conn.execution_options(stream_results=True).execute(
        sa.text(f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table)}"))
    profiles = [_Column() for _ in columns]
    with path.open("w", newline="", encoding="utf-8") as out:
        # Text quoted, so that '' stays an empty string (Spark reads an unquoted empty field as NULL).
        writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC)
        count = 0
        for batch in result.partitions(10_000):
            count += len(batch)
            for row in batch:
                for profile, value in zip(profiles, row):
                    profile.add(value)
                writer.writerow([_csv_value(v) for v in row])
    return profiles, count


def _csv_value(value: Any) -> Any:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.hex()
    return value


def _without_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def spark_home() -> Path:
    """Where pyspark keeps Spark's jars and scripts."""
    try:
        import pyspark
    except ImportError as err:
        raise ConfigError("Spark needs the pyspark package and Java 17+: pip install 'groundsql[spark]' "
                          "and apt-get install openjdk-17-jre-headless") from err
    return Path(pyspark.__file__).parent
