"""The one place that reads hand-written text files and writes files: atomically, into folders
checked first, and with a sentence a person can act on when the disk says no (read-only, full,
not a folder).

Results and caches are written to a temporary file beside their target and renamed into place,
so a crash or a full disk never leaves half a file where a whole one was. Caches are an
optimisation: a cache that cannot be written costs a warning (`cache_failed`), never an answer.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from groundsql.errors import ConfigError

log = logging.getLogger(__name__)


def reason(err: OSError) -> str:
    """What the operating system said, without the errno number ("Read-only file system")."""
    return err.strerror or str(err)


def writable_folder(path: Path, what: str, hint: str = "") -> Path:
    """`path` as a folder that exists and takes files, or a ConfigError naming `what` it was for
    ("the results (--out)"), what stood in the way and `hint`, what to do about it."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".probe-")
        probe.close()
    except OSError as err:
        raise ConfigError(f"cannot write {what} in {path}: {reason(err)}" + (f"; {hint}" if hint else "")) from None
    return path


def read_text(path: Path) -> str:
    """A file people write by hand (a benchmark, a bank, a pack), as UTF-8 text, or a
    ConfigError naming the file and what is wrong with it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read {path}: {reason(err)}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path} is not UTF-8 text (byte {err.start})") from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write then rename, so a crash never leaves a half-written file behind (and a failed
    write leaves no temporary file)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """`write_text_atomic` for bytes."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_warned: set[str] = set()


def cache_failed(what: str, where: Path, err: OSError) -> None:
    """A cache write failed: warn once per cache and process, and carry on without it."""
    if what not in _warned:
        _warned.add(what)
        log.warning("%s is not kept: cannot write %s (%s)", what, where, reason(err))
