"""groundsql as a service, on top of `groundsql.api`: the HTTP API (http.py) and the MCP server
(mcp.py) both call one service layer (service.py), configured by one YAML file (config.py),
remembering conversations, feedback, keys and the audit log in a state store (state.py)."""

from __future__ import annotations

from groundsql.server.config import ServeConfig, load_serve_config

__all__ = ["ServeConfig", "load_serve_config", "serve"]


def serve(config: ServeConfig, *, log_level: str = "info") -> None:
    """Run the HTTP API until interrupted."""
    import uvicorn

    from groundsql.server.http import create_app
    from groundsql.server.service import Service

    service = Service(config)
    try:
        uvicorn.run(create_app(service), host=config.host, port=config.port, log_level=log_level,
                    timeout_graceful_shutdown=5)
    finally:
        service.close()
