"""groundsql as a service, on top of `groundsql.api`: the HTTP API (http.py) and the MCP server
(mcp.py) both call one service layer (service.py), configured by one YAML file (config.py),
remembering conversations, feedback, keys and the audit log in a state store (state.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groundsql.server.config import ServeConfig, load_serve_config

__all__ = ["ServeConfig", "load_serve_config", "serve", "run_http"]


def serve(config: ServeConfig, *, log_level: str = "info") -> None:
    """Run the HTTP API (with MCP at /mcp) until interrupted."""
    from groundsql.server.http import create_app

    run_http(config, create_app, log_level=log_level)


def run_http(config: ServeConfig, make_app: Callable[[Any], Any], *, log_level: str = "info") -> None:
    """Serve `make_app(service)` with uvicorn on the configured address until interrupted."""
    import uvicorn

    from groundsql.server.service import Service

    service = Service(config)
    try:
        uvicorn.run(make_app(service), host=config.host, port=config.port, log_level=log_level,
                    timeout_graceful_shutdown=5)
    finally:
        service.close()
