"""Driver construction and server introspection, configured by `Neo4jSettings` (built from the environment
by `palimpsest.settings.Settings.neo4j()`; nothing here reads it).

`open_driver` returns a `GuardedDriver`: the neo4j driver with every call run inside
`graph.db.errors.driver_errors()` (driver exceptions become `schema.errors` types, in that one place)
and under the request's `graph.db.deadline` (a transaction timeout of the time left; no new work once
it has passed). Connecting, waiting for a pooled connection and the driver's own retries are bounded
(`Neo4jSettings`), so an outage surfaces as UNAVAILABLE in seconds rather than after the driver's
30-60 s defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from neo4j import Driver, GraphDatabase, ManagedTransaction, Query, Result, Session

from palimpsest.graph.db import deadline
from palimpsest.graph.db.errors import driver_errors

# Bounds of the driver's own waiting, in seconds (PALIMPSEST_NEO4J_* in the README's table).
RETRY_S = 2.0      # max_transaction_retry_time: transient failures are retried for this long (3 attempts)
CONNECT_S = 5.0    # connection_timeout: one TCP connect + handshake
ACQUIRE_S = 10.0   # connection_acquisition_timeout: waiting for a pooled connection, connect included


@dataclass(frozen=True)
class Neo4jSettings:
    """How to reach Neo4j and how long the driver may wait; the defaults are `Settings`' (a test holds them equal)."""

    uri: str = "bolt://127.0.0.1:7687"
    user: str = "neo4j"
    password: str | None = None
    database: str | None = None
    retry_s: float = RETRY_S
    connect_s: float = CONNECT_S
    acquire_s: float = ACQUIRE_S


def build_driver(settings: Neo4jSettings) -> Driver:
    """The guarded driver for `settings`, not yet connected (the driver connects lazily)."""
    auth = (settings.user, settings.password) if settings.password else None
    driver = GraphDatabase.driver(settings.uri, auth=auth, max_connection_pool_size=50,
                                  notifications_min_severity="OFF", connection_timeout=settings.connect_s,
                                  connection_acquisition_timeout=settings.acquire_s,
                                  max_transaction_retry_time=settings.retry_s)
    return GuardedDriver(driver, retry_s=settings.retry_s, acquire_s=settings.acquire_s, bounded=True)


def open_driver(settings: Neo4jSettings) -> Driver:
    """`build_driver`, connected: UnavailableError (graph.db.errors) when Neo4j cannot be reached."""
    guarded = build_driver(settings)
    try:
        guarded.verify_connectivity()
    except BaseException:
        guarded.close()
        raise
    return guarded


def guard(driver: Driver, settings: Neo4jSettings | None = None) -> Driver:
    """`driver` behind the guard (itself if it already is): for drivers built elsewhere (tests, tools)."""
    if isinstance(driver, GuardedDriver):
        return driver
    cfg = settings or Neo4jSettings()
    return GuardedDriver(driver, retry_s=cfg.retry_s, acquire_s=cfg.acquire_s, bounded=False)


def _tx_timeout(limit: deadline.Deadline, stated: float | None) -> float:
    left = limit.check()
    return left if stated is None or stated <= 0 else min(left, stated)


def _bounded_work(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A transaction function that runs with the deadline's time left as its transaction timeout and
    refuses to start an attempt (the driver retries) once the deadline has passed."""
    limit = deadline.current()
    if limit is None:
        return fn
    timeout = _tx_timeout(limit, getattr(fn, "timeout", None))

    def work(tx: ManagedTransaction, *args: Any, **kwargs: Any) -> Any:
        limit.check()
        return fn(tx, *args, **kwargs)

    work.timeout = timeout  # type: ignore[attr-defined]  # read by the session, as neo4j.unit_of_work sets it
    work.metadata = getattr(fn, "metadata", None)  # type: ignore[attr-defined]
    return work


class _GuardedSession:
    """A session whose transaction functions are bounded by the deadline and whose errors are mapped."""

    def __init__(self, inner: Session) -> None:
        self._inner = inner

    def __enter__(self) -> _GuardedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        with driver_errors():
            self._inner.close()

    def close(self) -> None:
        with driver_errors():
            self._inner.close()

    def execute_read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with driver_errors():
            return self._inner.execute_read(_bounded_work(fn), *args, **kwargs)

    def execute_write(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with driver_errors():
            return self._inner.execute_write(_bounded_work(fn), *args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # run, begin_transaction, bookmarks…: unguarded, as they are
        return getattr(self._inner, name)


class GuardedDriver(Driver):
    """The neo4j driver every face uses: errors mapped (graph.db.errors), calls bounded (graph.db.deadline).

    It owns no pool (Driver.__init__ is not called): each public method forwards to `inner`.
    `execute_query` keeps the driver's pipelined fast path unless a deadline has to be applied to
    the driver's own waiting — it is nearer than the bounds `open_driver` gave the driver, or the
    inner driver was built elsewhere without them — and then runs the same query in a session whose
    retry time and acquisition timeout fit the time left. Without a deadline a driver built
    elsewhere keeps the bounds its owner chose.
    """

    def __init__(self, inner: Driver, *, retry_s: float = RETRY_S, acquire_s: float = ACQUIRE_S,
                 bounded: bool = False) -> None:
        self.inner = inner
        self.retry_s = retry_s
        self.acquire_s = acquire_s
        self._bounded = bounded  # `inner` was built with these bounds as its defaults

    def __del__(self, *_: Any) -> None:  # the inner driver reports itself if it is left open
        pass

    def __enter__(self) -> GuardedDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session_bounds(self, limit: deadline.Deadline | None) -> dict[str, float]:
        if limit is None:  # the inner driver's own bounds (open_driver's, or those its owner chose)
            return {}
        left = limit.check()
        # The driver retries until `retry` has passed and then sleeps once more before giving up:
        # a third of what is left keeps retries and the last attempt inside the deadline.
        return {"max_transaction_retry_time": min(self.retry_s, left / 3),
                "connection_acquisition_timeout": max(deadline.MIN_TX_TIMEOUT_S, min(self.acquire_s, left / 2))}

    def session(self, **config: Any) -> Session:
        for key, value in self._session_bounds(deadline.current()).items():
            config[key] = min(value, config.get(key, value))
        with driver_errors():
            return cast(Session, _GuardedSession(self.inner.session(**config)))

    def execute_query(self, query_: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        limit = deadline.current()
        if limit is not None:
            text = query_.text if isinstance(query_, Query) else query_
            stated = query_.timeout if isinstance(query_, Query) else None
            metadata = query_.metadata if isinstance(query_, Query) else None
            query_ = Query(text, metadata=metadata, timeout=_tx_timeout(limit, stated))
        slow = limit is not None and (not self._bounded or limit.remaining() < 2 * self.retry_s + self.acquire_s)
        if slow and not args and not ({"impersonated_user_", "bookmark_manager_", "auth_"} & kwargs.keys()):
            return self._execute_in_session(query_, **kwargs)
        with driver_errors():
            return self.inner.execute_query(query_, *args, **kwargs)

    def _execute_in_session(self, query_: Any, *, parameters_: dict[str, Any] | None = None,
                            routing_: Any = "w", database_: str | None = None,
                            result_transformer_: Callable[[Result], Any] = Result.to_eager_result,
                            **params: Any) -> Any:
        """`execute_query` as its documentation spells it out, in a session carrying the bounds."""
        text = query_.text if isinstance(query_, Query) else query_
        timeout = query_.timeout if isinstance(query_, Query) else None
        metadata = query_.metadata if isinstance(query_, Query) else None
        values = dict(parameters_ or {}, **params)

        def work(tx: ManagedTransaction) -> Any:
            return result_transformer_(tx.run(text, values))

        work.timeout = timeout  # type: ignore[attr-defined]
        work.metadata = metadata  # type: ignore[attr-defined]
        read = str(getattr(routing_, "value", routing_)).lower().startswith("r")
        with self.session(database=database_, bookmark_manager=self.inner.execute_query_bookmark_manager) as s:
            return s.execute_read(work) if read else s.execute_write(work)

    def close(self) -> None:
        self.inner.close()
        self._closed = True

    @property
    def encrypted(self) -> bool:
        return self.inner.encrypted

    @property
    def execute_query_bookmark_manager(self) -> Any:
        return self.inner.execute_query_bookmark_manager

    def verify_connectivity(self, **config: Any) -> None:
        with driver_errors():
            self.inner.verify_connectivity(**config)

    def get_server_info(self, **config: Any) -> Any:
        with driver_errors():
            return self.inner.get_server_info(**config)

    def verify_authentication(self, *args: Any, **config: Any) -> bool:
        with driver_errors():
            return self.inner.verify_authentication(*args, **config)

    def supports_multi_db(self) -> bool:
        with driver_errors():
            return self.inner.supports_multi_db()

    def supports_session_auth(self) -> bool:
        with driver_errors():
            return self.inner.supports_session_auth()


@dataclass(frozen=True)
class ServerInfo:
    neo4j_version: str
    edition: str
    gds_version: str | None


def server_info(driver: Driver, database: str | None = None) -> ServerInfo:
    records, _, _ = driver.execute_query(
        "CALL dbms.components() YIELD name, versions, edition RETURN versions[0] AS v, edition",
        database_=database,
    )
    gds: str | None
    try:
        gds_records, _, _ = driver.execute_query("RETURN gds.version() AS v", database_=database)
        gds = str(gds_records[0]["v"])
    except Exception:  # GDS missing is reported, not fatal, for /health
        gds = None
    return ServerInfo(str(records[0]["v"]), str(records[0]["edition"]), gds)
