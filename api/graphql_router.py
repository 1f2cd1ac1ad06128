"""The GraphQL HTTP boundary: strawberry's FastAPI router, made to answer every malformed request
with a coded 400 instead of a 500 or a bare text line.

What it changes, and only at the HTTP edge (execution, limits and error codes inside GraphQL
live in api/graphql_schema.py):
  * JSON is parsed by pydantic-core's parser, which bounds nesting (beyond 200 levels it is an
    error, never a RecursionError), accepts only UTF-8 and refuses lone surrogates; a request
    body must be one JSON object (batching is off);
  * every refusal strawberry raises as an HTTP error (bad JSON, unsupported content type, no
    query, `variables` not an object …) becomes `{"errors":[{"message", "extensions":
    {"code": "BAD_INPUT", "field": "body"}}]}` with its status;
  * a subscription sent as a plain POST or GET is refused (`BAD_INPUT`): subscriptions are served
    over WebSocket (graphql-transport-ws, graphql-ws) at the same path; no HTTP streaming
    transport (multipart, SSE) is enabled, so strawberry would otherwise run one as a query;
  * a browser's GET gets our GraphiQL page (api/graphiql.py), which loads pinned files from this
    server instead of strawberry's, which loads them from a CDN.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cross_web import AsyncHTTPRequestAdapter, HTTPException
from fastapi import Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic_core import from_json
from strawberry.exceptions import MissingQueryError
from strawberry.fastapi import GraphQLRouter
from strawberry.http import GraphQLRequestData
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType
from strawberry.types.unset import UNSET

from palimpsest.api import graphiql

_CODES = {404: "NOT_FOUND", 413: "LIMIT_EXCEEDED"}


def parse_request_json(data: str | bytes) -> Any:
    """Parse untrusted JSON with bounded nesting; ValueError (with line and column) when it is not JSON."""
    return from_json(data, cache_strings=False)


class CodedGraphQLRouter(GraphQLRouter[Any, Any]):
    def __init__(self, *args: Any, graphiql_assets: Path | None = None, **kwargs: Any) -> None:
        """`graphiql_assets`: the directory the app serves GraphiQL's files from (api/graphiql.py)."""
        super().__init__(*args, **kwargs)
        self.graphiql_assets = graphiql_assets if graphiql_assets is not None else graphiql.assets_dir()

    async def render_graphql_ide(self, request: Request) -> HTMLResponse:
        # Checked per request, so installing the files while the server runs fixes the page on reload.
        if not graphiql.installed(self.graphiql_assets):
            return HTMLResponse(graphiql.missing_page(), status_code=503)
        return HTMLResponse(graphiql.page(request.url.path))

    def decode_json(self, data: str | bytes) -> object:
        # Used for WebSocket messages: strawberry turns JSONDecodeError into its "invalid message" close.
        try:
            return parse_request_json(data)
        except ValueError as exc:
            raise json.JSONDecodeError(str(exc), data if isinstance(data, str) else "", 0) from exc

    def parse_json(self, data: str | bytes) -> Any:
        # Used for the HTTP body (and GET's `variables` / `extensions`), which must each be an object.
        try:
            value = parse_request_json(data)
        except ValueError as exc:
            raise HTTPException(400, f"the request body is not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise HTTPException(400, f"expected a JSON object, got {_json_kind(value)} (batching is not enabled)")
        return value

    async def run(self, request: Any, context: Any = UNSET, root_value: Any = UNSET) -> Any:
        try:
            return await super().run(request, context=context, root_value=root_value)
        except HTTPException as exc:
            if not isinstance(request, Request):
                raise
            code = _CODES.get(exc.status_code, "BAD_INPUT")
            return JSONResponse({"errors": [{"message": exc.reason, "extensions": {"code": code, "field": "body"}}]},
                                status_code=exc.status_code)

    async def execute_single(
        self,
        request: Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: Response,
        context: Any,
        root_value: Any,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        """strawberry's own, minus subscriptions: a plain (non-streaming) request cannot carry one."""
        allowed = OperationType.from_http(request_adapter.method) - {OperationType.SUBSCRIPTION}
        if not self.allow_queries_via_get and request_adapter.method == "GET":
            allowed = allowed - {OperationType.QUERY}
        try:
            return await self.schema.execute(
                request_data.query, root_value=root_value, variable_values=request_data.variables,
                context_value=context, operation_name=request_data.operation_name,
                allowed_operation_types=allowed, operation_extensions=request_data.extensions,
            )
        except CannotGetOperationTypeError as exc:
            raise HTTPException(400, exc.as_http_error_reason()) from exc
        except InvalidOperationTypeError as exc:
            if exc.operation_type is OperationType.SUBSCRIPTION:
                raise HTTPException(400, "subscriptions are served over WebSocket (graphql-transport-ws) "
                                         "at this path, not as a plain HTTP request") from exc
            raise HTTPException(400, exc.as_http_error_reason(request_adapter.method)) from exc
        except MissingQueryError as exc:
            raise HTTPException(400, "No GraphQL query found in the request") from exc


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
