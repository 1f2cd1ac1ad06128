"""The `palimpsest` command line: run the service, manage the local Neo4j, use the memory."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from graph import server as local_server
from schema import limits
from schema.errors import PalimpsestError

if TYPE_CHECKING:
    from api.memory import Memory

app = typer.Typer(no_args_is_help=True, help="Palimpsest: temporal knowledge memory for agents.")
neo4j_app = typer.Typer(no_args_is_help=True, help="The local Neo4j 5.26 + GDS server (no Docker).")
app.add_typer(neo4j_app, name="neo4j")
policy_app = typer.Typer(no_args_is_help=True, help="Versioned, immutable recall policies.")
app.add_typer(policy_app, name="policy")
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
    demo: Annotated[bool, typer.Option(help="load the 'demo' namespace on first start")] = False,
    worker: Annotated[bool, typer.Option(help="run the projections worker in this process")] = True,
    limit_concurrency: Annotated[int, typer.Option(min=1, help="connections/tasks before answering 503")] = 256,
) -> None:
    """Serve the HTTP API (GraphQL + GraphiQL at /graphql with graphql-ws subscriptions, /health, /metrics)."""
    import uvicorn

    from api.app import create_app, server_config
    from api.demo import load_demo

    app_ = create_app(on_startup=load_demo if demo else None, worker=worker)
    uvicorn.Server(server_config(app_, host=host, port=port, limit_concurrency=limit_concurrency)).run()


@app.command("mcp")
def mcp_cmd(
    namespace: Namespace = "default",
    transport: Annotated[str, typer.Option(help="stdio or http")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8001,
) -> None:
    """Serve the MCP tools remember / recall / history / retract for one namespace."""
    from api.mcp_server import build_mcp

    server = build_mcp(_memory(namespace))
    if transport == "stdio":
        server.run()
    elif transport == "http":
        server.run(transport="streamable-http", host=host, port=port, streamable_http_path="/mcp")
    else:
        _fail("transport must be 'stdio' or 'http'")


@app.command("migrate")
def migrate_cmd() -> None:
    """Apply the schema migrations to the configured Neo4j."""
    from api.runtime import Runtime

    with Runtime.from_env() as rt:
        console.print(f"schema at version {rt.schema_version}")


Namespace = Annotated[str, typer.Option("--namespace", "-n", envvar="PALIMPSEST_NAMESPACE", help="tenant namespace")]


def _memory(namespace: str) -> Memory:
    from api.memory import Memory

    try:
        return Memory.from_env(namespace)
    except PalimpsestError as exc:
        _fail(exc.message)
        raise


@app.command("ingest")
def ingest_cmd(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="JSON Lines, one claim per line")],
    namespace: Namespace = "default",
    batch: Annotated[int, typer.Option(min=1, max=limits.MAX_BATCH_ITEMS)] = 256,
) -> None:
    """Ingest claims from a .jsonl file (content, source, claim_key, tau, valid_from, valid_to, metadata).

    valid_from / valid_to: ISO-8601 with a zone, or 2017-07-25 / 2017-07 / "2017" (UTC); see docs/dates.md.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    lines = [ln for ln in file.read_text(encoding="utf-8").splitlines() if ln.strip()]
    failures: list[tuple[int, str]] = []
    written = 0
    with _memory(namespace) as mem, Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                             TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("ingesting", total=len(lines))
        for start in range(0, len(lines), batch):
            chunk: list[dict[str, object]] = []
            for offset, line in enumerate(lines[start:start + batch]):
                try:
                    item = json.loads(line)
                    if not isinstance(item, dict):
                        raise ValueError("each line must be a JSON object")
                except ValueError as exc:
                    failures.append((start + offset + 1, f"invalid JSON: {exc}"))
                    item = {}
                chunk.append(item)
            result = mem.ingest_many(chunk)
            for it in result.items:
                if it.ok:
                    written += 1
                elif it.error and not any(n == start + it.index + 1 for n, _ in failures):
                    failures.append((start + it.index + 1, f"{it.error.get('field')}: {it.error.get('message')}"))
            progress.advance(task, len(chunk))
    console.print(f"ingested {written} of {len(lines)} claims into {namespace!r}; {len(failures)} failed")
    for line_no, why in failures[:20]:
        console.print(f"  line {line_no}: {why}")
    if failures:
        raise typer.Exit(code=2)


@app.command("recall")
def recall_cmd(
    query: str,
    namespace: Namespace = "default",
    k: Annotated[int | None, typer.Option(min=1)] = None,
    as_of_revision: Annotated[int | None, typer.Option(min=0)] = None,
    valid_at: Annotated[str | None, typer.Option(
        help="world time: ISO-8601 with a zone, or 2017-07-25 / 2017-07 / 2017 (UTC); see docs/dates.md")] = None,
    policy: Annotated[str | None, typer.Option(help="policy version (default: the namespace's default policy)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the packet as JSON")] = False,
) -> None:
    """Recall a context packet and print it as a table (or JSON)."""
    from rich.table import Table

    with _memory(namespace) as mem:
        try:
            packet = mem.recall(query, k=k, as_of_revision=as_of_revision, valid_at=valid_at, policy_version=policy)
        except PalimpsestError as exc:
            _fail(f"{exc.code} ({exc.field}): {exc.message}")
            return
    if as_json:
        print(packet.model_dump_json(indent=2))
        return
    table = Table(title=f"{packet.query!r} @ revision {packet.store_revision} · policy {packet.policy_version}")
    for col in ("#", "score", "content", "source", "key", "rev"):
        table.add_column(col)
    for it in packet.items:
        table.add_row(str(it.rank), f"{it.score:.4f}", it.content, it.source, it.claim_key or "", str(it.revision))
    Console().print(table)
    h = packet.hidden
    Console().print(f"hidden: superseded {h.superseded}, retracted {h.retracted}, not yet valid {h.not_yet_valid}, "
                    f"expired {h.expired} · truncated: {packet.completeness.items_truncated} · "
                    f"fingerprint {packet.fingerprint[:16]}")


@app.command("history")
def history_cmd(claim_key: str, namespace: Namespace = "default") -> None:
    """The supersession chain of a claim key, oldest first."""
    with _memory(namespace) as mem:
        try:
            chain = mem.history(claim_key)
        except PalimpsestError as exc:
            _fail(exc.message)
            return
    for entry in chain:
        c = entry.claim
        events = ", ".join(f"{e.kind}@{e.revision}" + (f" until {e.valid_until}" if e.valid_until else "")
                           for e in entry.events)
        window = f"[{c.valid_from or '…'}, {c.valid_until or c.valid_to or '…'})"
        print(f"[{c.status:>10}] r{c.revision} {window} {c.content}  ({events})")


@app.command("check")
def check_cmd(namespace: Namespace = "default",
              as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False) -> None:
    """Verify the namespace's invariants (one current per key and instant, linear chains, windows, revisions)."""
    with _memory(namespace) as mem:
        try:
            report = mem.check()
        except PalimpsestError as exc:
            _fail(exc.message)
            return
    if as_json:
        print(report.model_dump_json())
    else:
        print(f"namespace {report.namespace}: revision {report.revision}, {report.claims} claims")
        for name, n in report.checked.items():
            bad = report.violation_counts.get(name, 0)
            print(f"  {'FAIL' if bad else 'ok':>4}  {name}: {n} checked, {bad} violations")
        for v in report.violations:
            print(f"        {v.check}: {v.detail}")
    if not report.ok:
        raise typer.Exit(1)


@policy_app.command("register")
def policy_register(file: Annotated[Path, typer.Argument(exists=True, dir_okay=False)],
                    namespace: Namespace = "default") -> None:
    """Register an immutable policy version from a JSON file."""
    with _memory(namespace) as mem:
        try:
            pol = mem.register_policy(json.loads(file.read_text(encoding="utf-8")))
        except (PalimpsestError, ValueError) as exc:
            _fail(str(exc))
            return
    print(pol.model_dump_json())


@policy_app.command("default")
def policy_default(version: Annotated[str | None, typer.Argument(
        help="registered version to make the namespace's default; omit to show the current one")] = None,
                   namespace: Namespace = "default") -> None:
    """Set (or show) the namespace's default policy: the one recalls without --policy and every worker
    use, in every process. Setting it is a write at a new store revision."""
    with _memory(namespace) as mem:
        try:
            settings = mem.settings() if version is None else mem.set_default_policy(version)
        except PalimpsestError as exc:
            _fail(exc.message)
            return
    print(settings.model_dump_json())


@app.command("export-schema")
def export_schema(out: Annotated[Path, typer.Option(help="where to write the SDL")] = Path("schema/palimpsest.graphql"),
                  ) -> None:
    """Write the GraphQL SDL that apps depend on (a test fails when it drifts)."""
    from api.graphql_schema import schema

    out.write_text(schema.as_str() + "\n", encoding="utf-8")
    console.print(f"wrote {out}")


@app.command("worker")
def worker_cmd(
    namespaces: Annotated[list[str] | None, typer.Option(
        "--namespace", "-n", help="only these namespaces (repeatable); default: all with pending work")] = None,
    interval: Annotated[float, typer.Option(min=0.05, help="seconds between polls")] = 2.0,
    once: Annotated[bool, typer.Option("--once", help="one pass over pending namespaces, then exit")] = False,
    policy: Annotated[str | None, typer.Option(
        help="override every namespace's own default policy (for tests and benchmarks)")] = None,
    batch: Annotated[int, typer.Option(min=1, max=limits.MAX_BATCH_ITEMS, help="claims per batch")] = 200,
    nli_model: Annotated[str | None, typer.Option(help="NLI cross-encoder name or local path")] = None,
    llm_rps: Annotated[float, typer.Option(min=0, help="max LLM judge calls per second (0 = unlimited)")] = 2.0,
) -> None:
    """Run the background projections (contradiction detection) as its own process.

    Prints one JSON line per namespace pass that processed something; with --once, exits 0
    after one pass (1 if a pass failed). Ctrl-C stops the loop cleanly between passes.
    """
    import time as _time

    from api.runtime import Runtime
    from api.worker import ProjectionWorker, WorkerConfig
    from extraction.contradiction import DetectorOptions

    options = DetectorOptions(nli_model=nli_model, llm_max_calls_per_second=llm_rps or None)
    config = WorkerConfig(policy_version=policy, batch_claims=batch, detector_options=options)
    try:
        rt = Runtime.from_env()
    except PalimpsestError as exc:
        _fail(exc.message)
        return
    with rt:
        worker = ProjectionWorker(rt, config)
        try:
            while True:
                try:
                    reports = worker.run_pending(namespaces or None)
                except PalimpsestError as exc:
                    if once:
                        _fail(f"{exc.code}: {exc.message}")
                    console.print(f"[yellow]pass failed:[/] {exc.code}: {exc.message}")
                    reports = []
                for report in reports:
                    if report.batches or once:
                        print(json.dumps(report.as_dict()), flush=True)
                if once:
                    return
                _time.sleep(interval)
        except KeyboardInterrupt:
            console.print("worker stopped")


def main() -> None:  # pragma: no cover - console entry
    app(prog_name="palimpsest")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())  # type: ignore[func-returns-value]

