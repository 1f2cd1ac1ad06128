"""The HTTP face: FastAPI with /health and the strawberry GraphQL endpoint at /graphql.

The GraphQL schema grows one resolver at a time as features land; nothing is listed before it
works, so today it answers what the service is running on and nothing more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import strawberry
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from strawberry.fastapi import GraphQLRouter

from api.runtime import Runtime


@strawberry.type(description="What this Palimpsest instance runs on.")
class ServiceInfo:
    neo4j_version: str
    neo4j_edition: str
    gds_version: str | None
    embedding_model: str
    embedding_dimension: int
    schema_version: int


def _service_info(rt: Runtime) -> ServiceInfo:
    info = rt.info()
    return ServiceInfo(
        neo4j_version=info.neo4j_version, neo4j_edition=info.edition, gds_version=info.gds_version,
        embedding_model=rt.embedder.model_name, embedding_dimension=rt.embedder.dimension,
        schema_version=rt.schema_version,
    )


@strawberry.type
class Query:
    @strawberry.field(description="The Neo4j, GDS and embedding model this service uses.")
    def service(self, info: strawberry.Info) -> ServiceInfo:
        rt: Runtime = info.context["runtime"]
        return _service_info(rt)


schema = strawberry.Schema(query=Query)


def create_app(runtime: Runtime | None = None) -> FastAPI:
    """Build the app; tests pass their own runtime, `palimpsest serve` builds one from the env."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        owned = runtime is None
        app.state.runtime = runtime or Runtime.from_env()
        try:
            yield
        finally:
            if owned:
                app.state.runtime.close()

    app = FastAPI(title="Palimpsest", version="0.1.0", lifespan=lifespan)

    async def context(request: Request) -> dict[str, Any]:
        return {"runtime": request.app.state.runtime}

    app.include_router(GraphQLRouter(schema, context_getter=context), prefix="/graphql")

    @app.get("/health")
    def health(request: Request) -> JSONResponse:
        rt: Runtime = request.app.state.runtime
        try:
            rt.driver.verify_connectivity()
            svc = _service_info(rt)
        except Exception as exc:  # report, never leak a trace
            return JSONResponse({"status": "unavailable", "error": type(exc).__name__}, status_code=503)
        return JSONResponse({
            "status": "ok",
            "neo4j": {"version": svc.neo4j_version, "edition": svc.neo4j_edition},
            "gds": {"version": svc.gds_version},
            "embedding": {"model": svc.embedding_model, "dimension": svc.embedding_dimension},
            "schema_version": svc.schema_version,
        })

    return app
