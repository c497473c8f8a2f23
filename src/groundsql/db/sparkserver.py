"""The Spark Thrift server groundsql may ask: started, walled and kept alive by `groundsql spark serve`.

Spark has no read-only mode and no accounts, and its Thrift port answers anyone who reaches it;
left as it comes, a query substitutes the server's environment into its text (`${env:...}`),
calls Java methods (`reflect`), runs scripts (`TRANSFORM ... USING`), reads any file as a table
and changes settings, the catalog and the data for everyone. groundsql's own walls (the
validator, and the engine's refusal of anything but a query, db/engines/spark.py) come first;
the server is the last one, and `serve` builds it in layers:

- **the guard** (db/sparkguard.scala, compiled once with the Scala compiler Spark ships): the
  server's main registers the copies' tables, seals the guard and starts the Thrift service on
  the same session. From then on a statement with `${` in it, any statement but a query (and
  the catalog and setting reads introspection needs), a session whose narrowing settings differ
  from the sealed ones, a read of anything but the served tables, a hidden file-metadata column
  and a join or collect_* past the cost limits are refused inside the server, and a watchdog
  cancels any job that outlives the time limit;
- **a password** on the Thrift port, generated at each start and written where only the user
  who ran `serve` can read it (`secret_file`); the engine reads it from there or from the URL;
- **settings** a session cannot change: restricted mode (no reflect/java_method, no TRANSFORM
  scripts), a reflection allow-list that admits no method, no variable substitution, no SQL
  scripting, no SQL on files, a server-side query timeout, cancellation that interrupts the
  running tasks, a query's work done before its first row is fetched (so that the cancel at the
  time limit reaches it), a cap on what a job may return to the driver, a JVM that exits when it
  runs out of memory instead of hanging;
- **the process**: listening on loopback (its Thrift port on `host`, every internal port on
  127.0.0.1), started with no environment but what Spark needs, as a user who may read and not
  write the copies, its log kept, stopped with `serve` (SIGTERM, or its parent's death);
  `Server.supervise` restarts it when it exits or stops answering.

The engine reads the narrowing settings back on every connection and refuses a server without
them (`NARROWING`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections import deque
from contextlib import closing
from pathlib import Path
from typing import Any, Callable

from groundsql.config import data_home
from groundsql.db.sparkcopy import MANIFEST, spark_home
from groundsql.errors import ConfigError

PORT = 10000
GUARD_SOURCE = Path(__file__).with_name("sparkguard.scala")
GUARD_MAIN = "groundsql.spark.Server"
# setting -> (the value it must have, why), read back by the engine at connect time; the guard
# also refuses every statement of a session whose value differs from the one it was sealed with.
NARROWING: dict[str, tuple[str, str]] = {
    "spark.sql.restrictedMode.enabled": ("true", "a query could call Java methods or run scripts"),
    "spark.sql.reflect.allowList": (r"^$", "reflect() could call any Java method"),
    "spark.sql.runSQLOnFiles": ("false", "a query could read any file the server can as a table"),
    "spark.sql.variable.substitute": ("false", "${env:...} in a query would become the server's environment"),
    "spark.sql.scripting.enabled": ("false", "a SQL script could run statements that are not queries"),
    "spark.sql.thriftServer.interruptOnCancel": ("true", "a cancelled query would go on running"),
    # Off: a query collected incrementally runs its jobs when its rows are fetched, where the
    # cancel at the time limit cannot reach them (groundsql polls the statement, not the fetch);
    # a result gathered whole is bounded by MAX_RESULT_SIZE and the validator's LIMIT instead.
    "spark.sql.thriftServer.incrementalCollect": ("false", "a query's work would run as its rows are fetched, "
                                                  "out of reach of the cancel at its time limit"),
    "spark.groundsql.readOnlyData": ("true", "its data files may be writable by the server"),
}
QUERY_TIMEOUT_SETTING = "spark.sql.thriftServer.queryTimeout"
# Per-query bounds a session may not raise either (the guard keeps them as sealed).
BOUNDS = {
    "spark.sql.shuffle.partitions": "8",  # two cores: 200 tiny tasks a shuffle only add latency
    "spark.sql.autoBroadcastJoinThreshold": "10485760",  # a table broadcast to every task: 10 MB at most
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "10485760",
    # A task notices it was cancelled between batches of rows it reads: batches of 4,096 rows
    # (the default) under an expensive join took 13 s to stop here; 256 take under a second.
    "spark.sql.parquet.columnarReaderBatchSize": "256",
}
# A job may return this much to the driver (a collect, a broadcast): beyond it the job fails
# rather than the driver's memory.
MAX_RESULT_SIZE = "256m"
# The guard's cost gate: a join that compares no keys, and values collected into arrays.
MAX_JOIN_PAIRS = 1_000_000_000
MAX_COLLECT_VALUES = 2_000_000
# The watchdog cancels a job this long after the query timeout (the query's own cancel comes first).
WATCHDOG_GRACE_S = 5
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}


def secret_file(host: str, port: int) -> Path:
    """Where `serve` keeps the password of the server on host:port (readable by its user only)."""
    name = "127.0.0.1" if host in _LOOPBACK or host in ("0.0.0.0", "::", "") else host
    return data_home() / "spark" / f"{name}-{port}.secret"


def password_for(host: str, port: int) -> str | None:
    try:
        return secret_file(host, port).read_text().strip() or None
    except OSError:
        return None


class Server:
    """A running Thrift server: its process, scratch folder (Spark's temporary files) and log,
    and what it takes to start it again."""

    def __init__(self, launch: Callable[[], subprocess.Popen[bytes]], scratch: Path, log: Path,
                 host: str, port: int, password: str, databases: list[str]) -> None:
        self._launch, self.scratch, self.log = launch, scratch, log
        self.host, self.port, self.password, self.databases = host, port, password, databases
        self.process = launch()

    def urls(self) -> list[str]:
        return [f"hive://{self.host}:{self.port}/{name}" for name in self.databases]

    def answers(self, timeout_s: float = 20) -> bool:
        """Whether the server runs a trivial query within `timeout_s`."""
        from groundsql.db.engines.spark import open_connection

        probe_host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        try:
            with closing(open_connection(probe_host, self.port, "groundsql", self.password, "default",
                                         timeout_s=timeout_s)) as conn, closing(conn.cursor()) as cursor:
                cursor.execute("SELECT 1")
                return cursor.fetchall() == [(1,)]
        except Exception:  # noqa: BLE001 - any failure to answer is the answer
            return False

    def wait_ready(self, timeout_s: float = 240) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ConfigError(f"the Spark Thrift server stopped as it started ({self.tail()}; its log: {self.log})")
            if self.answers(timeout_s=10):
                return
            time.sleep(1)
        self._kill()
        raise ConfigError(f"the Spark Thrift server did not answer on {self.host}:{self.port} within "
                          f"{timeout_s:g} s (its log: {self.log})")

    def tail(self) -> str:
        """The log's last line that says why the server stopped (or its last line)."""
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        telling = [line for line in lines if "OutOfMemoryError" in line or " ERROR " in line or "Exception in thread" in line]
        return ((telling or lines or ["an empty log"])[-1]).strip()[:300]

    def restart(self) -> None:
        self._kill()
        self.process = self._launch()
        self.wait_ready()

    def supervise(self, say: Callable[[str], None], *, every_s: float = 10, timeout_s: float = 20,
                  misses: int = 2, max_restarts: int = 3, within_s: float = 600) -> None:
        """Watch the server until stopped: restart it when it exits or misses `misses` probes in
        a row; give up (ConfigError) after `max_restarts` restarts within `within_s`."""
        restarts: deque[float] = deque()
        missed = 0
        while True:
            code = self.process.poll()
            if code is None and self.answers(timeout_s):
                missed = 0
                time.sleep(every_s)
                continue
            if code is None:
                missed += 1
                if missed < misses:
                    continue
                reason = f"the Spark server did not answer {misses} probes of {timeout_s:g} s"
            else:
                reason = f"the Spark server exited with code {code} ({self.tail()})"
            now = time.monotonic()
            while restarts and now - restarts[0] > within_s:
                restarts.popleft()
            if len(restarts) >= max_restarts:
                self._kill()
                raise ConfigError(f"{reason}; it was restarted {max_restarts} times in {within_s / 60:g} minutes, "
                                  f"so it is left stopped (its log: {self.log})")
            restarts.append(now)
            say(f"groundsql: {reason}; restarting it (its log: {self.log})")
            self.restart()
            missed = 0
            say("groundsql: the Spark server answers again")

    def _kill(self) -> None:
        """Stop the server's whole process group: SIGTERM, then SIGKILL after 30 s."""
        if self.process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 30)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def stop(self) -> None:
        self._kill()
        shutil.rmtree(self.scratch, ignore_errors=True)
        try:
            secret = secret_file(self.host, self.port)
            if secret.read_text().strip() == self.password:  # not a later server's on this port
                secret.unlink()
        except OSError:
            pass


def serve(folder: Path, *, host: str = "127.0.0.1", port: int = PORT, query_timeout_s: int = 60,
          memory: str = "2g", user: str | None = None, log: Path | None = None,
          max_join_pairs: int = MAX_JOIN_PAIRS, max_collect_values: int = MAX_COLLECT_VALUES) -> Server:
    """Start the narrowed Thrift server over every copy in `folder`, as `user` (by default the
    current one); it is returned once it answers a query."""
    if not _port_free(host, port):  # before the password is written: it would replace the running server's
        raise ConfigError(f"{host}:{port} is in use (another server?): stop it, or give --port")
    folder = Path(folder).resolve()
    copies = sorted(p.parent for p in folder.glob(f"*/{MANIFEST}"))
    if not copies:
        raise ConfigError(f"no Spark copy in {folder}: make one with `groundsql spark load URL {folder}`")
    who = user or "this user"
    writable = _writable(folder, user)
    if writable:
        raise ConfigError(f"{who} may write {writable}: start the server as a user who may only read {folder} "
                          f"(--user nobody), so that no query can change the data")
    home = spark_home()
    jar = guard_jar(home)
    scratch = Path(tempfile.mkdtemp(prefix="groundsql-spark-"))
    (scratch / "tmp").mkdir()
    manifests = [json.loads((copy / MANIFEST).read_text()) for copy in copies]
    (scratch / "registration.sql").write_text("\n".join(
        statement for manifest, copy in zip(manifests, copies) for statement in _registration(manifest, copy)))
    shutil.copy2(jar, scratch / "guard.jar")  # where the server's user can read it
    if user:
        for path in [scratch, *scratch.rglob("*")]:
            shutil.chown(path, user)
    if user and not _reaches(home / "bin" / "spark-submit", user):
        home = _staged(home, scratch)

    password = secrets.token_urlsafe(32)
    _write_secret(secret_file(host, port), password)
    settings = {key: value for key, (value, _) in NARROWING.items()}
    settings.update(BOUNDS)
    settings.update({
        QUERY_TIMEOUT_SETTING: f"{query_timeout_s}s",
        "spark.groundsql.guarded": ",".join([*NARROWING, QUERY_TIMEOUT_SETTING, *BOUNDS]),
        "spark.groundsql.passwordSha256": hashlib.sha256(password.encode()).hexdigest(),
        "spark.groundsql.jobTimeout": f"{query_timeout_s + WATCHDOG_GRACE_S}s",
        "spark.groundsql.maxJoinPairs": str(max_join_pairs),
        "spark.groundsql.maxCollectValues": str(max_collect_values),
        "spark.hadoop.hive.server2.thrift.bind.host": host,
        "spark.hadoop.hive.server2.thrift.port": str(port),
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.maxResultSize": MAX_RESULT_SIZE,
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(scratch / "warehouse"),
        "spark.local.dir": str(scratch),
        "spark.ui.enabled": "false",
    })
    # The guard on the JVM's own class path, not as the application's jar: Hive closes the
    # class loader an application jar is loaded by when a session ends (closeClassLoadersTo),
    # after which the guard's classes not yet loaded could not be.
    command = [str(home / "bin" / "spark-submit"), "--master", "local[2]", "--class", GUARD_MAIN, "--name", "groundsql",
               "--driver-memory", memory, "--driver-class-path", str(scratch / "guard.jar"),
               # HiveServer2 reads its authentication from a HiveConf of its own, which takes
               # system properties, not Spark's settings.
               "--driver-java-options", f"-XX:+ExitOnOutOfMemoryError -Djava.io.tmpdir={scratch / 'tmp'} "
               "-Dhive.server2.authentication=CUSTOM -Dhive.server2.custom.authentication.class=groundsql.spark.PasswordCheck "
               # A status request would wait up to 5 s for the query to end (long polling): the
               # engine polls to cancel at its time limit, so it must come back at once.
               "-Dhive.server2.long.polling.timeout=50ms",
               *[arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")],
               "spark-internal", str(scratch / "registration.sql")]
    # Nothing of this process's environment but what Spark needs: a query that reached the
    # server's environment would find no secret there.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SPARK_HOME": str(home), "HOME": str(scratch),
           "LANG": "C.UTF-8", "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "localhost"}
    if "JAVA_HOME" in os.environ:
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    log = log or data_home() / "spark" / f"server-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)

    def launch() -> subprocess.Popen[bytes]:
        with log.open("ab") as out:  # the child keeps its own handle
            out.write(f"\n==== groundsql spark serve {folder} on {host}:{port}, {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
            out.flush()
            try:
                return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        user=user, cwd=scratch, env=env, start_new_session=True,
                                        preexec_fn=_die_with_parent)
            except (OSError, KeyError) as err:  # KeyError: no such user
                raise ConfigError(f"cannot start the Spark Thrift server{' as ' + user if user else ''}: {err}") from None

    try:
        server = Server(launch, scratch, log, host, port, password, [m["database"] for m in manifests])
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        server.wait_ready()
    except BaseException:  # Ctrl-C while it starts included: no server is left behind
        server.stop()
        raise
    return server


def guard_jar(home: Path) -> Path:
    """db/sparkguard.scala compiled against this Spark, once per source and Spark version, with
    the Scala compiler Spark ships (so a Java runtime is enough); cached under the data folder."""
    jars = sorted((home / "jars").glob("*.jar"))
    tools = {part: next((j for j in jars if j.name.startswith(f"scala-{part}-")), None)
             for part in ("compiler", "library", "reflect")}
    if not all(tools.values()):
        raise ConfigError(f"Spark at {home} lacks the Scala compiler its jars should hold (scala-compiler-*.jar)")
    source = GUARD_SOURCE.read_bytes()
    key = hashlib.sha256(source + "\n".join(j.name for j in jars).encode()).hexdigest()[:16]
    target = data_home() / "spark" / f"guard-{key}.jar"
    if target.is_file():
        return target
    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin") if "JAVA_HOME" in os.environ else None)
    if java is None:
        raise ConfigError("Spark needs Java 17+: apt-get install openjdk-17-jre-headless")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        built = Path(work) / "guard.jar"
        try:
            done = subprocess.run(
                [java, "-cp", os.pathsep.join(str(p) for p in tools.values()), "scala.tools.nsc.Main", "-nowarn",
                 "-classpath", os.pathsep.join(map(str, jars)), "-d", str(built), str(GUARD_SOURCE)],
                capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            raise ConfigError("compiling the Spark guard took more than 15 minutes") from None
        if done.returncode != 0 or not built.is_file():
            raise ConfigError(f"the Spark guard does not compile against {home}: "
                              + " / ".join((done.stdout + done.stderr).strip().splitlines()[-4:]))
        built.replace(target)
    return target


def _write_secret(path: Path, password: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(password + "\n")


def _port_free(host: str, port: int) -> bool:
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            # As Java binds: a port whose old connections linger (TIME_WAIT) is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
        return True
    except OSError:
        return False


def _die_with_parent() -> None:
    # In the child before exec: the server gets SIGTERM when `serve` dies, however it dies.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: `serve` still stops it on SIGTERM and SIGINT


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


def _registration(manifest: dict[str, Any], copy: Path) -> list[str]:
    """The statements the server's main runs before it seals the guard: the copy's database,
    its tables over the Parquet files with their keys, row counts and distinct counts as
    properties (the guard's cost gate reads them; a copy made without them is analysed here)."""
    database = _name(manifest["database"])
    statements = [f"CREATE DATABASE IF NOT EXISTS {database}"]
    for table in manifest["tables"]:
        columns = ", ".join(f"{_name(c['name'])} {c['type']}" + (f" COMMENT {_string(c['comment'])}" if c.get("comment") else "")
                            for c in table["columns"])
        properties = {"groundsql.primary_key": json.dumps(table["primary_key"]),
                      "groundsql.foreign_keys": json.dumps(table["foreign_keys"])}
        if "rows" in table:
            properties["groundsql.rows"] = str(table["rows"])
            properties["groundsql.distinct"] = json.dumps(table.get("distinct", {}), ensure_ascii=False)
        qualified = f"{database}.{_name(table['name'])}"
        statements.append(
            f"CREATE TABLE IF NOT EXISTS {qualified} ({columns}) USING parquet "
            f"LOCATION {_string(str(copy / table['name']))} "
            f"TBLPROPERTIES ({', '.join(f'{_string(k)} = {_string(v)}' for k, v in properties.items())})")
        if "rows" not in table:  # a copy made before the manifest held them: counted now
            statements.append(f"ANALYZE TABLE {qualified} COMPUTE STATISTICS FOR ALL COLUMNS")
    return statements


def _name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _string(text: str) -> str:
    # No line breaks: the registration file holds one statement a line.
    escaped = text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
    return "'" + escaped + "'"


def _writable(folder: Path, user: str | None) -> str:
    """The first file or folder under `folder` that `user` may write, or ''."""
    found = subprocess.run(["find", str(folder), "-writable", "-print", "-quit"], capture_output=True,
                           text=True, user=user, check=False)
    return found.stdout.strip()
