"""The HTTP face: FastAPI with GraphQL (+ GraphiQL) at /graphql, /health and /metrics.

`/` redirects to GraphiQL, whose files are served from the cache directory under
/graphiql-assets/ (api/graphiql.py): nothing a page here loads comes from a CDN, which is also
why FastAPI's /docs and /redoc (Swagger UI and ReDoc from a CDN) are off.

Every request gets a request id (from X-Request-ID or a new one), a JSON log line and a latency
observation. Bodies are counted as they stream and read against a clock (api/body_guard.py):
over the size cap they answer 413, too slow 408, both before anything parses them; malformed
GraphQL requests answer a coded 400 (api/graphql_router.py). With no API keys configured only
loopback Host names are served, HTTP and WebSocket alike; others answer 421 (api/host_guard.py).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import HTTPConnection

from palimpsest.api import graphiql
from palimpsest.api.auth import KeyStore
from palimpsest.api.body_guard import BodyGuard
from palimpsest.api.graphql_router import CodedGraphQLRouter
from palimpsest.api.graphql_schema import Loaders, schema
from palimpsest.api.host_guard import HostGuard
from palimpsest.api.observability import Metrics, configure_json_logging
from palimpsest.api.runtime import Runtime
from palimpsest.api.subscriptions import Subscriptions
from palimpsest.graph.db import local_server as local_server
from palimpsest.schema.errors import PalimpsestError
from palimpsest.settings import Settings

# Read (by palimpsest.settings) when an app is built; tests shorten them: the longest gap between two
# pieces of a body, and the longest a whole body may take after the request head.
BODY_CHUNK_TIMEOUT_ENV, BODY_TIMEOUT_ENV = "PALIMPSEST_BODY_CHUNK_TIMEOUT_S", "PALIMPSEST_BODY_TIMEOUT_S"


def _api_key(request: HTTPConnection) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.headers.get("x-api-key")


def _local_mode(scope: Any) -> bool:
    """Does the app serve without keys? Unknown before start-up (no keys yet): treated as local, the safe side."""
    keys = getattr(scope["app"].state, "keys", None)
    return keys is None or bool(keys.local_mode)


def create_app(runtime: Runtime | None = None, *, keys: KeyStore | None = None,
               on_startup: Callable[[Runtime], None] | None = None, worker: bool = False,
               graphiql_assets: Path | None = None, settings: Settings | None = None) -> FastAPI:
    """Tests pass their own runtime and keys; `palimpsest serve` builds both from the settings.

    `settings` default to the environment's, read now (not when this module was imported), and are
    kept as `app.state.settings`: each request reads its limits from there.

    `worker=True` runs the projections worker (contradiction detection) in a thread of this
    process, for single-machine deployments; larger ones run `palimpsest worker` separately.
    `graphiql_assets` is where GraphiQL's files are (default: `graphiql.assets_dir()`, in the cache).
    """
    config = settings or Settings.from_env()
    assets = graphiql_assets if graphiql_assets is not None else graphiql.assets_dir(config.cache_dir)
    log = configure_json_logging()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = runtime is None
        app.state.runtime = runtime or Runtime.from_env(app.state.settings)
        app.state.keys = keys or KeyStore.from_env(app.state.settings)
        if app.state.keys.local_mode:
            log.warning("auth is in local mode: no API keys configured, every namespace is open")
        if on_startup is not None:
            on_startup(app.state.runtime)
        background = None
        if worker:
            from palimpsest.api.worker import BackgroundWorker, WorkerConfig

            # One batch per namespace per pass: a big backlog never starves the others.
            background = BackgroundWorker(app.state.runtime, config=WorkerConfig(max_batches_per_pass=1)).start()
        app.state.worker = background
        try:
            yield
        finally:
            if background is not None:
                background.stop()
            if owned:
                app.state.runtime.close()

    app = FastAPI(title="Palimpsest", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.metrics = metrics
    app.state.settings = config
    # Open subscriptions, capped per key and per server, and their shared polling (api/subscriptions.py).
    app.state.subscriptions = Subscriptions(config.max_subscriptions, config.max_subscriptions_per_key,
                                            config.subscription_poll_s)

    class RequestContext(BaseHTTPMiddleware):
        async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            rid = request.headers.get("x-request-id") or uuid.uuid4().hex
            request.state.request_id = rid
            start = time.perf_counter()
            status = 500
            try:
                response = await call_next(request)
                status = response.status_code
                response.headers["x-request-id"] = rid
                return response
            finally:
                elapsed = time.perf_counter() - start
                route = request.url.path if request.url.path in {"/graphql", "/health", "/metrics"} else "other"
                metrics.http.labels(request.method, route, str(status)).observe(elapsed)
                log.info("request", extra={"fields": {"request_id": rid, "method": request.method,
                                                      "path": request.url.path, "status": status,
                                                      "ms": round(elapsed * 1000, 2)}})

    # Added first, so they run inside RequestContext: their 421/413/408 answers are logged and carry the
    # request id. In local mode only loopback Host names are served (api/host_guard.py).
    app.add_middleware(HostGuard, local_mode=_local_mode, allowed=config.local_allowed_hosts)
    app.add_middleware(BodyGuard, max_bytes=config.max_body_bytes, chunk_timeout_s=config.body_chunk_timeout_s,
                       body_timeout_s=config.body_timeout_s)
    app.add_middleware(RequestContext)

    async def context(connection: HTTPConnection) -> dict[str, Any]:
        """Shared by HTTP and WebSocket (subscriptions): both carry the key in their headers."""
        request = connection
        cfg: Settings = request.app.state.settings
        ctx: dict[str, Any] = {"runtime": request.app.state.runtime,
                               "loaders": Loaders(request.app.state.runtime), "metrics": metrics,
                               "timeout_s": cfg.request_timeout_s,
                               "subscription_poll_s": cfg.subscription_poll_s, "principal": None, "auth_error": None,
                               "log_packets": cfg.log_packets, "packet_retention": cfg.packet_retention(),
                               "subscriptions": request.app.state.subscriptions}
        try:
            ctx["principal"] = request.app.state.keys.authenticate(_api_key(request))
        except PalimpsestError as exc:
            ctx["auth_error"] = exc
        return ctx

    app.include_router(CodedGraphQLRouter(schema, context_getter=context, graphiql_assets=assets), prefix="/graphql")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/graphql", status_code=307)

    @app.get(graphiql.ASSET_PREFIX + "/{name}", include_in_schema=False)
    def graphiql_asset(name: str) -> Response:
        """Only the pinned files, by name: nothing else in the cache directory is reachable."""
        path = assets / name
        if name not in graphiql.FILES or not path.is_file():
            return PlainTextResponse(f"not installed: run {graphiql.INSTALL_HINT}", status_code=404)
        # Revalidated (ETag) rather than cached for long: a new pin serves new bytes under the same name.
        return FileResponse(path, headers={"Cache-Control": "no-cache"})

    # Neo4j Browser's style for this graph, for `:style http://localhost:8000/neo4j-browser.grass` on a
    # server this package did not launch (ours runs it on connect). The Browser fetches it from its own
    # origin, and Chromium preflights a page's fetch to another loopback port (Private Network Access),
    # hence the CORS answers; the file holds no data, only captions and colours.
    grass_cors = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET",
                  "Access-Control-Allow-Headers": "*", "Access-Control-Allow-Private-Network": "true"}

    @app.get("/neo4j-browser.grass", include_in_schema=False)
    def neo4j_browser_style() -> PlainTextResponse:
        return PlainTextResponse(local_server.browser_grass(), headers=grass_cors)

    @app.options("/neo4j-browser.grass", include_in_schema=False)
    def neo4j_browser_style_preflight() -> Response:
        return Response(status_code=204, headers=grass_cors)

    @app.get("/health")
    def health(request: Request) -> JSONResponse:
        rt: Runtime = request.app.state.runtime
        try:
            rt.driver.verify_connectivity()
            info = rt.info()
            lag = worker_lag(rt)
        except Exception as exc:  # report, never leak a trace
            return JSONResponse({"status": "unavailable", "error": type(exc).__name__}, status_code=503)
        return JSONResponse({
            "status": "ok",
            "neo4j": {"version": info.neo4j_version, "edition": info.edition},
            "gds": {"version": info.gds_version},
            "embedding": {"model": rt.embedder.model_name, "dimension": rt.embedder.dimension},
            "schema_version": rt.schema_version,
            "worker": {"max_lag_revisions": max(lag.values(), default=0), "namespaces_behind": sum(
                1 for v in lag.values() if v > 0)},
        })

    @app.get("/metrics")
    def metrics_endpoint(request: Request) -> PlainTextResponse:
        """Series of a namespace only for callers that may read it (see KeyStore.metrics_namespaces)."""
        try:
            labelled = metrics.namespaces()  # before the query: a namespace created meanwhile is kept
            lags = worker_lag(request.app.state.runtime)
            metrics.forget_namespaces(labelled - lags.keys())  # dropped namespaces leave /metrics
            for ns, lag in lags.items():
                metrics.worker_lag.labels(ns).set(lag)
        except Exception:  # metrics must answer even when the database does not
            logging.getLogger("palimpsest").warning("worker lag unavailable for /metrics")
        readable = request.app.state.keys.metrics_namespaces(_api_key(request))
        return PlainTextResponse(metrics.exposition(readable), media_type=CONTENT_TYPE_LATEST)

    return app


def worker_lag(rt: Runtime) -> dict[str, int]:
    records, _, _ = rt.driver.execute_query(
        "MATCH (s:Store) RETURN s.namespace AS ns, s.revision - coalesce(s.projections_seq, 0) AS lag ORDER BY ns",
        database_=rt.settings.database, routing_="r",
    )
    return {str(r["ns"]): int(r["lag"]) for r in records}


def server_config(app: FastAPI, *, host: str, port: int, limit_concurrency: int = 256) -> Any:
    """The uvicorn settings `palimpsest serve` runs with (tests start real servers with the same).

    WebSocket through websockets' sans-I/O protocol (graphql-transport-ws subscriptions), frames no
    larger than a request body; request heads up to 16 KiB; idle keep-alive connections closed
    after 5 s; past `limit_concurrency` connections or tasks uvicorn answers 503 instead of queueing;
    on shutdown open connections get 10 s to finish.
    """
    import uvicorn

    settings: Settings = app.state.settings

    return uvicorn.Config(app, host=host, port=port, log_level="warning", ws="websockets-sansio",
                          ws_max_size=settings.max_body_bytes, h11_max_incomplete_event_size=16 * 1024,
                          timeout_keep_alive=5, limit_concurrency=limit_concurrency,
                          timeout_graceful_shutdown=10, server_header=False)
