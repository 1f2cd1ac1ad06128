"""The `palimpsest` command line: run the service, manage the local Neo4j, use the memory."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console

from graph import server as local_server

app = typer.Typer(no_args_is_help=True, help="Palimpsest: temporal knowledge memory for agents.")
neo4j_app = typer.Typer(no_args_is_help=True, help="The local Neo4j 5.26 + GDS server (no Docker).")
app.add_typer(neo4j_app, name="neo4j")
console = Console(stderr=True)


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=1)


@neo4j_app.command("start")
def neo4j_start() -> None:
    """Resolve the jars (first time only), start Neo4j on loopback and wait until it answers."""
    cfg = local_server.ServerConfig.from_env()
    try:
        st = local_server.start(cfg)
    except local_server.ServerError as exc:
        _fail(str(exc))
        return
    console.print(f"Neo4j running (pid {st.pid}) at {st.bolt_uri}; Browser at {st.http_url}/browser/")


@neo4j_app.command("stop")
def neo4j_stop() -> None:
    """Stop the server this launcher started (by its pid file); anything else is left alone."""
    cfg = local_server.ServerConfig.from_env()
    stopped = local_server.stop(cfg)
    console.print("Neo4j stopped" if stopped else "no Neo4j started by palimpsest is running")


@neo4j_app.command("status")
def neo4j_status() -> None:
    cfg = local_server.ServerConfig.from_env()
    st = local_server.status(cfg)
    print(json.dumps({"running": st.running, "pid": st.pid, "bolt_uri": st.bolt_uri,
                      "http_url": st.http_url, "neo4j": local_server.NEO4J_VERSION,
                      "gds": local_server.GDS_VERSION, "home": str(cfg.instance_dir)}))
    if not st.running:
        raise typer.Exit(code=3)


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
) -> None:
    """Serve the HTTP API (GraphQL at /graphql, health at /health)."""
    import uvicorn

    uvicorn.run("api.app:create_app", factory=True, host=host, port=port, log_level="info")


@app.command("migrate")
def migrate_cmd() -> None:
    """Apply the schema migrations to the configured Neo4j."""
    from api.runtime import Runtime

    with Runtime.from_env() as rt:
        console.print(f"schema at version {rt.schema_version}")


def main() -> None:  # pragma: no cover - console entry
    app(prog_name="palimpsest")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())  # type: ignore[func-returns-value]

