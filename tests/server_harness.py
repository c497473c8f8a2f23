"""A live `groundsql serve` for tests: uvicorn on 127.0.0.1 in a thread (or a process), real
HTTP through httpx."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import yaml

from groundsql.llm import LLM
from groundsql.server.config import ServeConfig
from groundsql.server.http import create_app
from groundsql.server.service import Service

RECORDINGS = Path(__file__).parent / "recordings"
REPLAY_LLM = {"backend": "replay", "model": "qwen2.5-coder-0.5b", "replay_dir": str(RECORDINGS)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def live_server(config: dict[str, Any], *, llm: LLM | None = None) -> Iterator[tuple[str, Service]]:
    """The service on a free port until the block ends; yields its base URL and the service."""
    settings = ServeConfig.model_validate({"port": free_port(), **config})
    service = Service(settings, llm=llm)
    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=settings.port,
                                           log_level="warning", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{settings.port}"
    try:
        _wait_until_up(url)
        yield url, service
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        service.close()


@contextlib.contextmanager
def server_process(config: dict[str, Any], folder: Path) -> Iterator[str]:
    """`groundsql serve --config` as its own process (what a load balancer would front)."""
    port = free_port()
    path = folder / f"serve-{port}.yaml"
    path.write_text(yaml.safe_dump({**config, "port": port}))
    process = subprocess.Popen([sys.executable, "-m", "groundsql.cli", "serve", "--config", str(path)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_until_up(url: str, process: subprocess.Popen[str] | None = None, timeout_s: float = 90) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server stopped: {process.stdout.read() if process.stdout else ''}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"no server at {url} after {timeout_s} s")
