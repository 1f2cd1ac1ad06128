"""The `palimpsest` command line: run the service, manage the local Neo4j, use the memory.

Each command imports what it needs where it needs it (the driver, the memory, the local launcher in
graph.db.local_server), so `--help`, an input error or `history` does not pay for what only another command uses.
"""

from __future__ import annotations

import gc
import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperCommand

from palimpsest.schema import limits
from palimpsest.schema.errors import PalimpsestError
from palimpsest.settings import Settings

if TYPE_CHECKING:
    from palimpsest.api.memory import Memory
    from palimpsest.api.runtime import Runtime
    from palimpsest.schema.models import ContextPacket


class ExitingTyper(typer.Typer):
    """The console entry (`palimpsest = "palimpsest.api.cli:app"`), which leaves the heap to the OS at exit.

    As the interpreter shuts down, its last garbage collection frees, one by one, every object the
    imports made: the driver, pydantic, typer and the project's modules make some 50,000, and tearing
    them down took 0.1-0.2 s of a `history` or `check` that otherwise takes 0.6 s. The process is
    ending, so what is alive when the command returns is moved out of the collector's reach
    (`gc.freeze`) instead. The commands close their own files, sessions and driver; atexit handlers
    and the flushing of stdout and stderr still run. CliRunner calls the command itself, not this.

    Not after a command that loaded the model: torch brings native bindings (nanobind) that count their
    objects at exit and print a page of "leaked function" warnings when those were never freed, and such
    a command takes seconds anyway.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        finally:
            if "torch" not in sys.modules:
                gc.freeze()


app = ExitingTyper(no_args_is_help=True, help="Palimpsest: temporal knowledge memory for agents.")
neo4j_app = typer.Typer(no_args_is_help=True, help="The local Neo4j 5.26 + GDS server (no Docker).")
app.add_typer(neo4j_app, name="neo4j")
policy_app = typer.Typer(no_args_is_help=True, help="Versioned, immutable recall policies.")
app.add_typer(policy_app, name="policy")
# soft_wrap: status lines carry URLs and paths, which must stay one line when stderr is not a terminal
# (rich wraps at 80 columns there).
console = Console(stderr=True, soft_wrap=True)


class PlainUsage(TyperCommand):
    """A usage line that shows arguments by name, `recall [OPTIONS] QUERY`, not typer's `{query}`.

    Typer 0.29 braces required arguments in usage lines; braces read as a template placeholder (or
    shell brace expansion) to someone copying the line. Optional arguments keep their brackets.
    """

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.display_name_raw
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces


class LateHelp(PlainUsage):
    """A command whose help ends with a list read from the code it describes, when the help is shown.

    A list kept by hand in a docstring drifts from what it lists (`mcp --help` once named 4 of the 7
    tools the server serves). Reading it at help time keeps it true, and only the person who asked for
    this command's help pays for the import that takes.
    """

    def late_help(self) -> str:
        raise NotImplementedError

    def format_help(self, ctx: Any, formatter: Any) -> None:
        if not getattr(self, "_late_help_added", False):
            self.help = f"{self.help or ''}\n\n{self.late_help()}"
            self._late_help_added = True
        super().format_help(ctx, formatter)


class McpHelp(LateHelp):
    """`mcp --help` names every tool the server registers (api.mcp_server.served_tools), with its first sentence."""

    def late_help(self) -> str:
        from rich.markup import escape

        _lean_driver()
        from palimpsest.api.mcp_server import served_tools

        tools = served_tools()
        lines = [f"  {name}: {escape(description.split('. ')[0].rstrip('.'))}." for name, description in tools]
        return f"Tools served ({len(tools)}):\n" + "\n".join(lines)


class IngestHelp(LateHelp):
    """`ingest --help` names the fields a line may hold: those of schema.models.ClaimInput, whatever they become."""

    def late_help(self) -> str:
        from palimpsest.schema.models import ClaimInput

        fields = ClaimInput.model_fields
        required = [name for name, f in fields.items() if f.is_required()]
        optional = [name for name in fields if name not in required]
        return f"Fields of a line: {', '.join(required)} (required); {', '.join(optional)}."


def _fail(message: str) -> None:
    console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=1)


def _settings() -> Settings:
    """The environment's settings (palimpsest.settings), read when a command runs; a bad value ends it."""
    try:
        return Settings.from_env()
    except PalimpsestError as exc:
        _fail(exc.message)
        raise


def _lean_driver() -> None:
    """Import the neo4j driver without pandas and pyarrow, when nothing has imported them yet.

    The driver imports both if they are installed (here they come with graphdatascience), only to
    accept DataFrames and Arrow values as query parameters and to offer `Result.to_df`; Palimpsest
    does neither. They cost 0.6 s of every command's start on a loaded 2-core machine (measured:
    `import neo4j` 1.4 s with them, 0.7 s without), which is most of what `history` or `check`
    take. Hidden only while the driver is imported: a later `import pandas` works as usual. Called
    by the commands that talk to Neo4j, so `--help` and input errors never import the driver at all.
    """
    if "neo4j" in sys.modules:
        return
    hidden = [name for name in ("pandas", "pyarrow") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import name` raises ImportError
    try:
        import neo4j  # noqa: F401
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def _check_namespace(value: str | None) -> str | None:
    """Refuse a malformed namespace before anything connects or loads (the same rule Memory applies)."""
    if value is not None and not limits.NAMESPACE_RE.fullmatch(value):
        raise typer.BadParameter(f"{value!r}: a namespace is 1-64 characters of letters, digits, '_', '.', '-'")
    return value


def _check_namespaces(values: list[str] | None) -> list[str] | None:
    for value in values or ():
        _check_namespace(value)
    return values


def _not_blank(value: str) -> str:
    """Memory refuses blank text too, but only after connecting; the command line can say so at once."""
    if not value.strip():
        raise typer.BadParameter("must not be empty")
    return value


def _check_instant(value: str | None) -> str | None:
    """A date the way every face takes it (schema.dates), refused before connecting if it is not one."""
    from palimpsest.schema.dates import parse_instant
    from palimpsest.schema.errors import BadInputError

    try:
        parse_instant(value, "--valid-at")
    except BadInputError as exc:
        raise typer.BadParameter(exc.message.removeprefix("--valid-at ")) from None  # typer names the option
    return value


@neo4j_app.command("start")
def neo4j_start() -> None:
    """Resolve the jars (first time only), start Neo4j on loopback and wait until it answers."""
    _lean_driver()
    from palimpsest.graph.db import local_server as local_server

    cfg = _settings().local_server()
    try:
        st = local_server.start(cfg)
    except local_server.ServerError as exc:
        _fail(str(exc))
        return
    console.print(f"Neo4j running (pid {st.pid}) at {st.bolt_uri}; Browser at {st.browser_url}")


@neo4j_app.command("stop")
def neo4j_stop() -> None:
    """Stop the server this launcher started (by its pid file); anything else is left alone."""
    from palimpsest.graph.db import local_server as local_server

    cfg = _settings().local_server()
    stopped = local_server.stop(cfg)
    console.print("Neo4j stopped" if stopped else "no Neo4j started by palimpsest is running")


@neo4j_app.command("status")
def neo4j_status() -> None:
    _lean_driver()
    from palimpsest.graph.db import local_server as local_server

    cfg = _settings().local_server()
    st = local_server.status(cfg)
    print(json.dumps({"running": st.running, "pid": st.pid, "bolt_uri": st.bolt_uri,
                      "http_url": st.http_url, "browser_url": st.browser_url, "neo4j": local_server.NEO4J_VERSION,
                      "gds": local_server.GDS_VERSION, "home": str(cfg.instance_dir)}))
    if not st.running:
        raise typer.Exit(code=3)


@app.command("graphiql-assets")
def graphiql_assets() -> None:
    """Fetch GraphiQL's pinned files once (npm pack, integrity-checked) into the cache; prints where."""
    from palimpsest.api import graphiql

    try:
        print(graphiql.install())
    except graphiql.AssetError as exc:
        _fail(str(exc))


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="interface to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8000,
    demo: Annotated[bool, typer.Option(help="load the 'demo' namespace on first start")] = False,
    worker: Annotated[bool, typer.Option(help="run the projections worker in this process")] = True,
    limit_concurrency: Annotated[int, typer.Option(min=1, help="connections/tasks before answering 503")] = 256,
) -> None:
    """Serve the HTTP API (GraphQL + GraphiQL at /graphql with graphql-ws subscriptions, /health, /metrics)."""
    import socket

    import uvicorn

    _lean_driver()
    from palimpsest.api import heap
    from palimpsest.api.app import create_app, server_config
    from palimpsest.api.demo import load_demo

    def startup(rt: Runtime) -> None:
        rt.embedder.load()  # here, not in the first request: torch and the model take seconds
        if demo:
            load_demo(rt)
        heap.freeze_startup()  # a full collection must not walk start-up's heap in a request (api.heap)

    line = listening_line(host, port)

    class Announcing(uvicorn.Server):
        """Prints where it listens once the socket is bound and the app has started, not before."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                print(line, file=sys.stderr, flush=True)

    app_ = create_app(on_startup=startup, worker=worker)
    try:
        Announcing(server_config(app_, host=host, port=port, limit_concurrency=limit_concurrency)).run()
    finally:
        heap.unfreeze()


def listening_line(host: str, port: int) -> str:
    """One line (never wrapped) saying where `serve` answers, GraphiQL and the Neo4j Browser.

    The Browser is the local launcher's (`PALIMPSEST_NEO4J_HTTP_PORT`) unless `NEO4J_URI` names
    another server; then `NEO4J_HTTP_URL` says where its Browser is, if set.
    """
    from palimpsest.graph.db import local_server as local_server

    shown = "127.0.0.1" if host in {"0.0.0.0", "::", ""} else host  # a wildcard bind is reached on loopback
    base = f"http://{shown}:{port}"
    line = f"listening on http://{host}:{port} — GraphiQL at {base}/graphql"
    settings = _settings()
    cfg = settings.local_server()
    uri = settings.neo4j_uri
    http = settings.neo4j_http_url
    if http:
        return f"{line}, Neo4j Browser at {http.rstrip('/')}/browser/"
    if uri in (None, "", cfg.bolt_uri, f"neo4j://127.0.0.1:{cfg.bolt_port}"):
        return f"{line}, Neo4j Browser at {cfg.browser_url}"
    return f"{line}, Neo4j at {uri}"


@app.command("mcp", cls=McpHelp)
def mcp_cmd(
    namespace: Namespace = "default",
    transport: Annotated[str, typer.Option(help="stdio or http")] = "stdio",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = 8001,
) -> None:
    """Serve one namespace's memory as MCP tools, over stdio or HTTP.

    Over HTTP every request needs an API key with rights on the namespace, as GraphQL does
    (PALIMPSEST_API_KEYS_FILE / PALIMPSEST_API_KEYS); with none configured it runs in local mode.
    """
    if transport not in {"stdio", "http"}:
        _fail("transport must be 'stdio' or 'http'")
    _lean_driver()
    from palimpsest.api.mcp_server import build_mcp, http_app

    if transport == "stdio":
        build_mcp(_memory(namespace)).run()
        return
    import uvicorn

    from palimpsest.api.auth import KeyStore

    try:
        keys = KeyStore.from_env()
    except (OSError, ValueError, KeyError) as exc:
        _fail(f"API keys: {exc}")
        return
    memory = _memory(namespace)
    asgi = http_app(build_mcp(memory, keys=keys), keys, memory.namespace, host=host,
                    allowed_hosts=_settings().local_allowed_hosts)
    mode = "local mode: no API keys configured, open to every caller" if keys.local_mode else "API key required"
    print(f"MCP listening on http://{host}:{port}/mcp for namespace {namespace!r} ({mode})", file=sys.stderr,
          flush=True)
    uvicorn.Server(uvicorn.Config(asgi, host=host, port=port, log_level="warning")).run()


@app.command("migrate")
def migrate_cmd() -> None:
    """Apply the schema migrations to the configured Neo4j."""
    _lean_driver()
    from palimpsest.api.runtime import Runtime

    with Runtime.from_env() as rt:
        console.print(f"schema at version {rt.schema_version}")


Namespace = Annotated[str, typer.Option("--namespace", "-n", envvar="PALIMPSEST_NAMESPACE", help="tenant namespace",
                                         callback=_check_namespace)]


def _memory(namespace: str, *, must_exist: bool = False) -> Memory:
    """The namespace's Memory, connected (the schema migrated), or exit 1 saying why not.

    `must_exist`: for commands that read (recall, ask, stats, retract) an unknown namespace is an error,
    and it is asked of the store here, before any command loads the embedding model: a mistyped
    namespace was reported after 20-odd seconds of loading torch on a busy machine, not at once.
    """
    _lean_driver()
    from palimpsest.api.memory import Memory

    try:
        mem = Memory.from_env(namespace)
    except PalimpsestError as exc:
        _fail(exc.message)
        raise
    if must_exist:
        try:
            mem.require_namespace()
        except PalimpsestError as exc:
            mem.close()
            _fail(f"{exc.code} ({exc.field}): {exc.message}")
    return mem


MAX_FAILURES_SHOWN = 20  # ingest lists this many failed lines, then how many more


def line_keys(lines: list[tuple[int, str]]) -> dict[int, str]:
    """The default idempotency key of each numbered line: what makes `ingest` safe to run again.

    `jsonl:` and the SHA-256 of the line's text as written (surrounding whitespace aside), so the same
    file gives the same keys on every run, wherever it is and whatever the batch size: a line stored by
    an interrupted run is recognised, not written twice (the store returns its earlier claim). A line
    that repeats an earlier one of the file gets `#2`, `#3`… after it: a file may state the same claim
    twice on purpose (a key set back to an earlier value), and each occurrence stays a claim of its own.
    A line's own `idempotency_key` field is used instead (`ingest` applies this only where it has none).
    """
    seen: dict[str, int] = {}
    keys: dict[int, str] = {}
    for line_no, line in lines:
        digest = hashlib.sha256(line.strip().encode("utf-8")).hexdigest()
        seen[digest] = seen.get(digest, 0) + 1
        keys[line_no] = f"jsonl:{digest}" + (f"#{seen[digest]}" if seen[digest] > 1 else "")
    return keys


class CommitGate:
    """Ctrl-C during `ingest`: at once while a batch is being read or embedded, never mid-commit.

    A batch is one write transaction. Interrupted inside the driver's commit, the command could not
    know whether the batch was stored, and could not say what was. So while a batch is being written
    SIGINT is noted, and raised once the write has returned and been counted; a second Ctrl-C stops at
    once, and the message then says that batch may or may not be stored. Outside a write, SIGINT is
    Python's own KeyboardInterrupt: nothing of the batch in hand was sent.
    """

    def __init__(self) -> None:
        self.committing = False
        self.pending = False
        self._installed = False
        self._previous: Any = None

    def __enter__(self) -> CommitGate:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():  # signal handlers live in the main thread
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def _on_sigint(self, signum: int, frame: object) -> None:
        if self.committing and not self.pending:
            self.pending = True
            console.print("[yellow]stopping after the batch being committed (Ctrl-C again stops at once)[/]")
            return
        raise KeyboardInterrupt

    def begin_commit(self) -> None:
        self.committing = True

    def end_commit(self) -> None:
        """The batch is counted: stop here if Ctrl-C was pressed during its write."""
        self.committing = False
        if self.pending:
            raise KeyboardInterrupt


@app.command("ingest", cls=IngestHelp)
def ingest_cmd(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, metavar="FILE",
                                         help="JSON Lines, one claim per line")],
    namespace: Namespace = "default",
    batch: Annotated[int, typer.Option(min=1, max=limits.MAX_BATCH_ITEMS, help="claims per write transaction")] = 256,
) -> None:
    """Ingest claims from a .jsonl file, one JSON object per line; safe to run again.

    valid_from / valid_to: ISO-8601 with a zone, or 2017-07-25 / 2017-07 / "2017" (UTC); see docs/dates.md.
    Blank lines are skipped; failures name the file's own line numbers.

    Safe to run again: a line without its own idempotency_key gets one made from its text as written
    (jsonl:SHA-256 of the line; #2, #3… for a repeat of an earlier line of the file), so a line stored
    by an earlier run is not written twice. A line's own idempotency_key is used as given.
    Each batch is one transaction. Ctrl-C stops after the batch being committed and says through
    which line the file is stored (exit 130); running the same command again continues safely.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    numbered = [(no, ln) for no, ln in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1)
                if ln.strip()]
    keys = line_keys(numbered)
    failures: dict[int, str] = {}
    written = replayed = committed = 0  # committed: lines of the batches whose transaction returned
    through = 0  # the file's line number the last committed batch ended with
    in_flight: tuple[int, int] | None = None  # the first and last line of a batch being written
    gate = CommitGate()
    try:
        with gate, _memory(namespace) as mem, Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=console) as progress:
            task = progress.add_task("ingesting", total=len(numbered))
            for start in range(0, len(numbered), batch):
                chunk = numbered[start:start + batch]
                items: list[dict[str, Any]] = []
                line_of: list[int] = []  # items[i] came from line line_of[i]
                for line_no, line in chunk:
                    try:
                        item = json.loads(line)
                        if not isinstance(item, dict):
                            raise ValueError("each line must be a JSON object")
                    except ValueError as exc:
                        failures[line_no] = f"invalid JSON: {exc}"
                        progress.advance(task, 1)
                        continue
                    if item.get("idempotency_key") is None:
                        item["idempotency_key"] = keys[line_no]
                    items.append(item)
                    line_of.append(line_no)
                # A line stored by an earlier run (its default key is held) is counted, not embedded again:
                # the write would only return its claim. A line's own key still goes to the write, which
                # tells a replay from other content under a reused key.
                stored = mem.stored_idempotency_keys([keys[no] for no in line_of]) if line_of else set()
                if stored:
                    kept = [(item, no) for item, no in zip(items, line_of, strict=True) if keys[no] not in stored
                            or item["idempotency_key"] != keys[no]]
                    replayed_here = len(items) - len(kept)
                    replayed += replayed_here
                    progress.advance(task, replayed_here)
                    items, line_of = [item for item, _ in kept], [no for _, no in kept]
                if items:
                    done = 0

                    def advance(n: int, expected: int = len(items),
                                lines: tuple[int, int] = (chunk[0][0], chunk[-1][0])) -> None:
                        nonlocal done, in_flight
                        progress.advance(task, n)
                        done += n
                        if done >= expected:  # every item embedded or refused: what remains is the write
                            in_flight = lines
                            gate.begin_commit()

                    result = mem.ingest_many(items, on_progress=advance)
                    for it in result.items:
                        if it.ok and it.duplicate:
                            replayed += 1
                        elif it.ok:
                            written += 1
                        elif it.error:
                            failures[line_of[it.index]] = describe_error(it.error)
                committed += len(chunk)
                through = chunk[-1][0]
                in_flight = None
                gate.end_commit()
    except KeyboardInterrupt:
        _report_stopped("interrupted", namespace, len(numbered), committed, through, written, replayed,
                        sum(1 for no in failures if no <= through), in_flight)
        raise typer.Exit(code=130) from None
    except PalimpsestError as exc:  # the database went away, a deadline passed: say what is stored
        console.print(f"[bold red]error:[/] {exc.code}: {exc.message}", soft_wrap=True)
        _report_stopped("stopped", namespace, len(numbered), committed, through, written, replayed,
                        sum(1 for no in failures if no <= through), None)
        raise typer.Exit(code=1) from None
    console.print(f"ingested {written + replayed} of {len(numbered)} claims into {namespace!r}"
                  + (f" ({replayed} already stored by an earlier run, not written again)" if replayed else "")
                  + f"; {len(failures)} failed")
    shown = sorted(failures)[:MAX_FAILURES_SHOWN]
    for line_no in shown:
        console.print(f"  line {line_no}: {failures[line_no]}", soft_wrap=True, markup=False)
    if len(failures) > len(shown):
        console.print(f"  and {len(failures) - len(shown)} more")
    if failures:
        raise typer.Exit(code=2)


def _report_stopped(what: str, namespace: str, total: int, committed: int, through: int, written: int,
                    replayed: int, failed: int, in_flight: tuple[int, int] | None) -> None:
    """What a stopped `ingest` leaves behind, exactly: the batches whose transaction returned.

    `in_flight`: the lines of a batch whose write a second Ctrl-C cut short; whether it committed is
    unknown, and the message says so rather than guess.
    """
    last = in_flight[1] if in_flight else through
    if committed:
        console.print(f"{what}: {committed} of {total} lines committed into {namespace!r}, through line {through} "
                      f"({written} claims written, {replayed} already stored, {failed} failed).", markup=False)
    else:
        console.print(f"{what}: 0 of {total} lines committed into {namespace!r}.", markup=False)
    if in_flight is not None:
        console.print(f"Lines {in_flight[0]}-{in_flight[1]} were being committed when stopped: they may or may "
                      "not be stored.", markup=False)
    console.print((f"Nothing after line {last} was written. " if last else "Nothing was written. ")
                  + "Running the same command again continues safely: lines already stored are recognised by "
                  "their idempotency keys and not written twice.", markup=False)


def describe_error(error: dict[str, Any]) -> str:
    """An item's error as one line that names its field once (most messages already start with it)."""
    message = str(error.get("message", "")).strip()
    field = error.get("field")
    if isinstance(field, str) and field and not message.startswith(field):
        return f"{field}: {message}"
    return message


@app.command("recall", cls=PlainUsage)
def recall_cmd(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="what to recall, in plain words", callback=_not_blank)],
    namespace: Namespace = "default",
    k: Annotated[int | None, typer.Option(
        "--k", "-k", min=1, help="items in the packet (default: the policy's k, at most its max_k)")] = None,
    as_of_revision: Annotated[int | None, typer.Option(min=0)] = None,
    valid_at: Annotated[str | None, typer.Option(
        help="world time: ISO-8601 with a zone, or 2017-07-25 / 2017-07 / 2017 (UTC); see docs/dates.md",
        callback=_check_instant)] = None,
    policy: Annotated[str | None, typer.Option(help="policy version (default: the namespace's default policy)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the packet as JSON")] = False,
    explain: Annotated[bool, typer.Option(
        "--explain", help="how each score was made, and which rule hid what (the fingerprint is the same)")] = False,
) -> None:
    """Recall a context packet and print it as a table (or JSON)."""
    from rich.table import Table

    with _memory(namespace, must_exist=True) as mem:
        try:
            packet = mem.recall(query, k=k, as_of_revision=as_of_revision, valid_at=valid_at, policy_version=policy,
                                explain=explain)
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
    if explain:
        Console().print("\n".join(explain_lines(packet)), markup=False, highlight=False, soft_wrap=True)


def explain_lines(packet: ContextPacket) -> list[str]:
    """`recall --explain`'s text: each item's score as its parts (the sum in brackets is the fused
    relevance), then each rule that hid candidates, with their ids."""
    lines = []
    for it in packet.items:
        e = it.explanation
        if e is None:
            continue
        parts = [f"vector {e.vector.contribution:.4f}", f"lexical {e.lexical.contribution:.4f}"]
        if e.graph is not None:
            parts.append(f"graph {e.graph.contribution:.4f}")
        if e.lending is not None:
            parts.append(f"lending {e.lending.contribution:.4f} via {e.lending.via}")
        factors = [f"{p.rule} {p.factor:g}" for p in e.penalties] + [f"decay {e.decay.factor:.4f}"]
        fused = f"({' + '.join(parts)}) × {' × '.join(factors)}  [{e.fusion}{', protected top' if e.protected else ''}]"
        if e.rerank is not None:  # the reranker's score replaced the fused one
            lines.append(f"#{it.rank} {it.score:.4f} = {e.rerank.method} {e.rerank.model}, replacing fused "
                         f"#{e.rerank.fused_rank} {e.rerank.replaced:.4f} = {fused}")
        else:
            lines.append(f"#{it.rank} {it.score:.4f} = {fused}")
    for rule in packet.hidden_explanation or []:
        lines.append(f"hidden {rule.count} by {rule.rule} ({rule.detail}): {', '.join(rule.ids)}")
    return lines


@app.command("recall-rounds", cls=PlainUsage)
def recall_rounds_cmd(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="what to recall, in plain words", callback=_not_blank)],
    namespace: Namespace = "default",
    rounds: Annotated[int | None, typer.Option(
        min=1, max=limits.MAX_ASK_ROUNDS, help="rounds (default: the policy's ask_rounds, at least 2)")] = None,
    k: Annotated[int | None, typer.Option("--k", "-k", min=1, help="items per round and fused")] = None,
    as_of_revision: Annotated[int | None, typer.Option(min=0)] = None,
    valid_at: Annotated[str | None, typer.Option(help="world time (see recall)", callback=_check_instant)] = None,
    policy: Annotated[str | None, typer.Option(help="policy version (default: the namespace's default policy)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Recall with the offline second round (no model): the query expanded by what round 1 found, fused."""
    from rich.table import Table

    with _memory(namespace, must_exist=True) as mem:
        try:
            res = mem.recall_rounds(query, rounds=rounds, k=k, as_of_revision=as_of_revision, valid_at=valid_at,
                                    policy_version=policy)
        except PalimpsestError as exc:
            _fail(f"{exc.code} ({exc.field}): {exc.message}")
            return
    if as_json:
        print(res.model_dump_json(indent=2))
        return
    table = Table(title=f"{res.query!r} @ revision {res.store_revision} · policy {res.policy_version} · "
                        f"{len(res.rounds)} rounds")
    for col in ("#", "score", "ranks", "content", "source"):
        table.add_column(col)
    for it in res.items:
        ranks = "/".join("-" if r is None else str(r) for r in it.round_ranks)
        table.add_row(str(it.rank), f"{it.score:.4f}", ranks, it.content, it.source)
    Console().print(table)
    for r in res.rounds:
        Console().print(f"round {r.round} ({r.origin}) fingerprint {r.packet.fingerprint[:16]}: {r.query}",
                        markup=False, highlight=False)


@app.command("ask", cls=PlainUsage)
def ask_cmd(
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="the question, in plain words",
                                            callback=_not_blank)],
    namespace: Namespace = "default",
    llm_model: Annotated[str | None, typer.Option(
        "--llm-model", help="litellm model name of the reader (default: the policy's reader_model); the provider "
                            "key is read from its usual environment variable, e.g. OPENAI_API_KEY")] = None,
    rounds: Annotated[int | None, typer.Option(
        min=1, max=limits.MAX_ASK_ROUNDS, help="retrieval rounds at most (default: the policy's ask_rounds)")] = None,
    expansion: Annotated[str | None, typer.Option(
        help="what drives later rounds: thought (IRCoT, the reader's thought) or offline (no reader call)")] = None,
    k: Annotated[int | None, typer.Option("--k", "-k", min=1, help="items per round")] = None,
    as_of_revision: Annotated[int | None, typer.Option(min=0)] = None,
    valid_at: Annotated[str | None, typer.Option(help="world time (see recall)", callback=_check_instant)] = None,
    policy: Annotated[str | None, typer.Option(help="policy version (default: the namespace's default policy)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Answer a question from memory through an LLM reader, with the claims the answer rests on."""
    with _memory(namespace, must_exist=True) as mem:
        try:
            # ask itself finds this after its first round, that is after loading the embedding model
            reads_with = None if llm_model is not None or as_of_revision is not None else mem.policy(policy)
            if reads_with is not None and not reads_with.reader_model:
                _fail(f"BAD_INPUT (llm_model): no reader model: policy {reads_with.version!r} has no reader_model; "
                      "pass --llm-model")
            res = mem.ask(question, llm_model=llm_model, rounds=rounds, expansion=expansion, k=k,
                          as_of_revision=as_of_revision, valid_at=valid_at, policy_version=policy)
        except PalimpsestError as exc:
            _fail(f"{exc.code} ({exc.field}): {exc.message}")
            return
    if as_json:
        print(res.model_dump_json(indent=2))
        return
    out = Console()
    out.print(f"answer: {'not in memory' if res.not_in_memory else res.answer}", markup=False, highlight=False)
    out.print(f"thought: {res.thought}", markup=False, highlight=False)
    content = {it.id: it.content for it in res.items}
    for cid in res.cited_ids:
        out.print(f"  cites {cid}: {content.get(cid, '')}", markup=False, highlight=False)
    if res.dropped_citations:
        out.print(f"  ({res.dropped_citations} cited ids were not in the packets and were dropped)")
    for r in res.rounds:
        out.print(f"round {r.round} ({r.origin}) fingerprint {r.packet.fingerprint[:16]}: {r.query}",
                  markup=False, highlight=False)
    c = res.cost
    out.print(f"reader {res.model}: {c.calls} calls, {c.total_tokens} tokens, ${c.cost_usd:.6f}"
              + (f" ({c.unpriced_calls} calls unpriced)" if c.unpriced_calls else ""), markup=False, highlight=False)


@app.command("history", cls=PlainUsage)
def history_cmd(claim_key: Annotated[str, typer.Argument(metavar="CLAIM_KEY", help="the key whose versions to list",
                                                         callback=_not_blank)],
                namespace: Namespace = "default") -> None:
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


def _check_reason(value: str) -> str:
    """A retraction's reason, refused before connecting when Memory.retract would refuse it."""
    if not value.strip():
        raise typer.BadParameter("must not be empty: say why the claims are retracted")
    if len(value) > limits.MAX_REASON_CHARS:
        raise typer.BadParameter(f"must be at most {limits.MAX_REASON_CHARS} characters, got {len(value)}")
    return value


def _check_ids(values: list[str]) -> list[str]:
    for value in values:
        if not value.strip():
            raise typer.BadParameter("a claim id must not be empty")
    return values


@app.command("retract", cls=PlainUsage)
def retract_cmd(
    ids: Annotated[list[str], typer.Argument(metavar="ID...", help="claim ids to retract (as recall and history "
                                                                   "print them)", callback=_check_ids)],
    reason: Annotated[str, typer.Option(help="why (kept on each claim; shown by history)", callback=_check_reason)],
    namespace: Namespace = "default",
    as_json: Annotated[bool, typer.Option("--json", help="print each result as a JSON line")] = False,
) -> None:
    """Retract claims: they stop being recalled, and what each had replaced is current again.

    One transaction (one store revision) per claim, in the order given; a claim that cannot be
    retracted (unknown id, already retracted) is reported and the others still are. Exit 1 if any
    failed. History keeps retracted claims; to remove content for good, use `erase`.
    """
    failed = 0
    with _memory(namespace, must_exist=True) as mem:
        for claim_id in ids:
            try:
                result = mem.retract(claim_id, reason)
            except PalimpsestError as exc:
                failed += 1
                console.print(f"[bold red]error:[/] {claim_id}: {exc.code} ({exc.field}): {exc.message}",
                              soft_wrap=True)
                continue
            if as_json:
                print(result.model_dump_json(), flush=True)
            else:
                print(f"retracted {result.id} at revision {result.revision}"
                      + (f"; {result.restored} is current again" if result.restored else ""), flush=True)
    console.print(f"retracted {len(ids) - failed} of {len(ids)} claims in {namespace!r}", markup=False)
    if failed:
        raise typer.Exit(code=1)


@app.command("stats")
def stats_cmd(namespace: Namespace = "default",
              as_json: Annotated[bool, typer.Option("--json", help="print the counts as JSON")] = False) -> None:
    """The namespace's store revision, how far the projections have caught up, and its claims by status."""
    with _memory(namespace, must_exist=True) as mem:
        try:
            stats = mem.stats()
        except PalimpsestError as exc:
            _fail(f"{exc.code} ({exc.field}): {exc.message}")
            return
    if as_json:
        print(stats.model_dump_json())
        return
    behind = stats.revision - stats.projections_seq
    print(f"namespace {stats.namespace}: revision {stats.revision}; projections at revision {stats.projections_seq}"
          + (f" ({behind} behind: `palimpsest worker` catches up)" if behind > 0 else " (up to date)"))
    counts = ", ".join(f"{status} {n}" for status, n in stats.claims_by_status.items())
    print(f"claims: {sum(stats.claims_by_status.values())}" + (f" ({counts})" if counts else ""))


def _metadata_filter(pairs: list[str] | None) -> dict[str, object] | None:
    """`KEY=VALUE` options as a metadata filter; VALUE is read as JSON when it parses (`n=3`, `ok=true`)."""
    if not pairs:
        return None
    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            _fail(f"--metadata takes KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


@app.command("erase", cls=PlainUsage)
def erase_cmd(
    reason: Annotated[str, typer.Option(help="why they are erased (kept on each tombstone)")],
    ids: Annotated[list[str] | None, typer.Argument(metavar="ID...", help="claim ids to erase")] = None,
    namespace: Namespace = "default",
    source: Annotated[str | None, typer.Option(help="erase every claim written with this source")] = None,
    metadata: Annotated[list[str] | None, typer.Option(
        "--metadata", "-m", help="KEY=VALUE a claim's metadata must hold (repeatable: all of them)")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list what would be erased; write nothing")] = False,
    batch: Annotated[int, typer.Option(min=1, max=500, help="claims per transaction (one revision each)")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Erase claims for good, by ids or by --source and/or --metadata; a tombstone stays.

    Content, embedding and what was derived from them go. What they had superseded is restored, as by a
    retraction (`retract` keeps the content, for mistakes rather than data that must go)."""
    with _memory(namespace) as mem:
        try:
            result = mem.erase(ids or None, source=source, metadata=_metadata_filter(metadata), reason=reason,
                               dry_run=dry_run, batch_size=batch)
        except PalimpsestError as exc:
            _fail(f"{exc.code} ({exc.field}): {exc.message}")
            return
    if as_json:
        print(result.model_dump_json())
        return
    verb = "would erase" if result.dry_run else "erased"
    console.print(f"{verb} {result.matched} claims in {namespace!r}" + (
        "" if result.dry_run else f" at revisions {result.revisions}; restored {len(result.restored)}, removed "
        f"{result.facts_removed} facts, {result.entities_removed} entities, {result.packets_erased} logged packets"))
    for c in result.claims:
        print(f"{c.id}  r{c.revision}  {c.status:<10} {c.source}" + (f"  key {c.claim_key}" if c.claim_key else ""))


@app.command("export")
def export_cmd(
    namespace: Namespace = "default",
    out: Annotated[Path | None, typer.Option("--out", "-o", dir_okay=False,
                                             help="write to this file instead of standard output")] = None,
    lock_timeout: Annotated[float, typer.Option(
        "--lock-timeout", help="the most seconds the export may hold the namespace's write lock")] = 900.0,
) -> None:
    """Export a namespace as JSON Lines (docs/EXPORT.md) to standard output: `palimpsest export -n NS > ns.jsonl`.

    One consistent snapshot: writes to the namespace wait while it runs. On failure it exits 1 and what
    was written must be discarded (an import refuses a file cut short)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    sink = out.open("w", encoding="utf-8") if out else sys.stdout
    try:
        with _memory(namespace) as mem, Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                                 TimeElapsedColumn(), console=console,
                                                 redirect_stdout=False) as progress:  # stdout is the file
            task = progress.add_task("exporting", total=None)
            for line in mem.export_lines(lambda done, total: progress.update(task, completed=done, total=total),
                                         lock_seconds=lock_timeout):
                sink.write(line + "\n")
    except PalimpsestError as exc:
        _fail(f"{exc.code}: {exc.message}")
    finally:
        if out:
            sink.close()
        else:
            sink.flush()


@app.command("import", cls=PlainUsage)
def import_cmd(
    file: Annotated[Path | None, typer.Argument(exists=True, dir_okay=False, metavar="FILE",
                                                help="an export file (default: standard input)")] = None,
    namespace: Namespace = "default",
    remap: Annotated[bool, typer.Option("--remap", help="fresh ids; into a non-empty namespace, append the "
                                                        "file's history after its own (docs/EXPORT.md)")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Import an export file into a namespace: `palimpsest import -n NS < ns.jsonl`.

    All or nothing: a bad line (named in the error), a non-empty namespace without --remap or a conflict
    writes nothing."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    source = file.open(encoding="utf-8") if file else sys.stdin
    try:
        with _memory(namespace) as mem, Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                                 TimeElapsedColumn(), console=console) as progress:
            task = progress.add_task("importing", total=None)
            result = mem.import_lines(source, remap=remap,
                                      progress=lambda done, total: progress.update(task, completed=done, total=total))
    except PalimpsestError as exc:  # the message quotes the file: never read it as markup
        from rich.markup import escape

        _fail(f"{exc.code}: {escape(exc.message)}")
        return
    finally:
        if file:
            source.close()
    if as_json:
        print(result.model_dump_json())
        return
    written = sum(n for k, n in result.written.items() if not k.startswith("rel:"))
    console.print(f"imported {written} nodes into {namespace!r} ({result.mode}); store revision {result.revision}")


@policy_app.command("register", cls=PlainUsage)
def policy_register(file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, metavar="FILE",
                                                         help="a JSON object of policy fields")],
                    namespace: Namespace = "default") -> None:
    """Register an immutable policy version from a JSON file."""
    try:  # read before connecting: a broken file is refused at once
        fields = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        _fail(f"{file} is not JSON: {exc}")
        return
    if not isinstance(fields, dict):
        _fail(f"{file} must hold a JSON object of policy fields")
        return
    with _memory(namespace) as mem:
        try:
            pol = mem.register_policy(fields)
        except (PalimpsestError, ValueError) as exc:
            _fail(str(exc))
            return
    print(pol.model_dump_json())


@policy_app.command("default", cls=PlainUsage)
def policy_default(version: Annotated[str | None, typer.Argument(
        metavar="VERSION",
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
    from palimpsest.api.graphql_schema import schema

    out.write_text(schema.as_str() + "\n", encoding="utf-8")
    console.print(f"wrote {out}")


@app.command("worker")
def worker_cmd(
    namespaces: Annotated[list[str] | None, typer.Option(
        "--namespace", "-n", help="only these namespaces (repeatable); default: all with pending work",
        callback=_check_namespaces)] = None,
    interval: Annotated[float, typer.Option(min=0.05, help="seconds between polls")] = 2.0,
    once: Annotated[bool, typer.Option("--once", help="one pass over pending namespaces, then exit")] = False,
    policy: Annotated[str | None, typer.Option(
        help="override every namespace's own default policy (for tests and benchmarks)")] = None,
    batch: Annotated[int, typer.Option(min=1, max=limits.MAX_BATCH_ITEMS, help="claims per batch")] = 200,
    nli_model: Annotated[str | None, typer.Option(help="NLI cross-encoder name or local path")] = None,
    llm_rps: Annotated[float, typer.Option(min=0, help="max LLM judge calls per second (0 = unlimited)")] = 2.0,
    sentence_vectors: Annotated[str, typer.Option(
        help="store claims' sentence vectors for `rerank: sentences`: 'auto' (when the namespace's default "
             "policy reranks by sentences), 'always' or 'never'")] = "auto",
) -> None:
    """Run the background projections as their own process (contradictions, entities, facts, inferences).

    A pass detects contradictions, extracts entities and facts, infers supersessions, refreshes PageRank
    and stores sentence vectors, as the namespace's policy asks.

    Prints one JSON line per namespace pass that processed something; with --once, exits 0
    after one pass (1 if a pass failed). Ctrl-C stops the loop cleanly between passes.
    """
    import time as _time

    _lean_driver()
    from palimpsest.api.runtime import Runtime
    from palimpsest.api.worker import ProjectionWorker, WorkerConfig
    from palimpsest.extraction.contradiction import DetectorOptions

    options = DetectorOptions(nli_model=nli_model, llm_max_calls_per_second=llm_rps or None)
    keep = {"auto": None, "always": True, "never": False}
    if sentence_vectors not in keep:
        _fail(f"--sentence-vectors must be one of {', '.join(keep)}, not {sentence_vectors!r}")
        return
    config = WorkerConfig(policy_version=policy, batch_claims=batch, detector_options=options,
                          sentence_vectors=keep[sentence_vectors])
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

