"""A real Neo4j 5.26 + GDS 2.13 server for machines without Docker.

No Debian or PyPI package ships the Neo4j server, but Maven Central has every jar: the
community server, the kernel, the Browser and the open-source GDS modules. Resolving them in
one POM gives one consistent version of every shared library (Jackson, eclipse-collections),
which the GDS modules need because they declare Neo4j only as compile-only. The jars go to a
cache directory outside the repository so a clean checkout (and CI) reuses them.

The server is started as `CommunityEntryPoint` directly, with the JVM flags the bootloader
would pass; it listens on loopback only, and its pid file lets `stop` kill exactly the process
this module started and nothing else.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NEO4J_VERSION = "5.26.24"
GDS_VERSION = "2.13.9"
BROWSER_VERSION = "5.24.0"

GDS_MODULES = ("proc", "proc-sysinfo", "opengds-extension", "open-model-catalog", "open-write-services")
JVM_FLAGS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "--add-modules=jdk.incubator.vector",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-XX:+UseG1GC",
    "-Dfile.encoding=UTF-8",
)


# Neo4j Browser's graph style (GraSS, as the JSON its `:style` command accepts): claims are captioned
# by their content, entities by name, facts by predicate, so a picture of the graph reads as the
# memory it is instead of as a field of ids. The launcher runs it as Browser's post-connect command.
BROWSER_STYLE: dict[str, dict[str, str]] = {
    "node": {"diameter": "50px", "color": "#A5ABB6", "border-color": "#9AA1AC", "border-width": "2px",
             "text-color-internal": "#FFFFFF", "font-size": "10px"},
    "relationship": {"color": "#A5ABB6", "shaft-width": "1px", "font-size": "8px", "padding": "3px",
                     "text-color-external": "#000000", "text-color-internal": "#FFFFFF", "caption": "<type>"},
    "node.Claim": {"caption": "{content}", "diameter": "90px", "color": "#68BDF6", "border-color": "#5CA8DB",
                   "text-color-internal": "#FFFFFF"},
    "node.Entity": {"caption": "{name}", "diameter": "60px", "color": "#6DCE9E", "border-color": "#60B58B",
                    "text-color-internal": "#FFFFFF"},
    "node.Fact": {"caption": "{predicate}", "diameter": "65px", "color": "#FFD86E", "border-color": "#EDBA39",
                  "text-color-internal": "#604A0E"},
    "node.Commit": {"caption": "rev {revision}", "diameter": "45px", "color": "#A5ABB6"},
    "node.Store": {"caption": "{namespace}", "diameter": "55px", "color": "#DE9BF9", "border-color": "#BF85D6"},
    "node.Policy": {"caption": "{version}", "diameter": "55px", "color": "#FB95AF", "border-color": "#E0849B"},
    "relationship.SUPERSEDES": {"color": "#F79767", "shaft-width": "3px"},
    "relationship.CONTRADICTS": {"color": "#F16667", "shaft-width": "3px"},
}


def browser_grass() -> str:
    """BROWSER_STYLE as a GraSS file, for `:style <url>` or dropping onto any Neo4j Browser."""
    lines = []
    for selector, props in BROWSER_STYLE.items():
        lines.append(selector + " {")
        lines += [f"  {key}: '{value}';" if key == "caption" else f"  {key}: {value};" for key, value in props.items()]
        lines.append("}")
    return "\n".join(lines) + "\n"


def browser_style_command() -> str:
    """The `:style` command (without its colon) that applies BROWSER_STYLE.

    JSON, not GraSS's CSS syntax: Browser splits `browser.post_connect_cmd` on semicolons outside
    quotes, and JSON has none.
    """
    return "style " + json.dumps(BROWSER_STYLE, separators=(",", ":"))


class ServerError(RuntimeError):
    """A local server problem a person can act on (missing tool, busy port, failed start)."""


@dataclass(frozen=True)
class ServerConfig:
    """Where the server lives and how it listens; every field has a safe local default.

    Built from the environment by `palimpsest.settings.Settings.local_server()`; nothing here reads it."""

    cache_dir: Path
    bolt_port: int = 7687
    http_port: int = 7474
    heap: str = "1g"
    pagecache: str = "512m"
    password: str | None = None
    start_timeout_s: float = 180.0

    @property
    def dist_dir(self) -> Path:
        return self.cache_dir / f"neo4j-{NEO4J_VERSION}-gds-{GDS_VERSION}"

    @property
    def instance_dir(self) -> Path:
        return self.cache_dir / "instances" / f"bolt-{self.bolt_port}"

    @property
    def pid_file(self) -> Path:
        return self.instance_dir / "run" / "palimpsest-neo4j.pid"

    @property
    def log_file(self) -> Path:
        return self.instance_dir / "logs" / "console.log"

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return browser_url(f"http://127.0.0.1:{self.http_port}", self.bolt_uri, auth=bool(self.password))


def browser_url(http_url: str, bolt_uri: str, *, auth: bool) -> str:
    """Neo4j Browser, told where Bolt is and, with auth off, to connect without asking.

    The Browser a server serves shows a login form on a first visit: it cannot know before
    connecting that auth is off. `dbms` and `preselectAuthMethod=NO_AUTH` make it connect at once
    (tests/browser checks it); with auth on it opens the form with the address filled in.
    """
    url = f"{http_url.rstrip('/')}/browser/?dbms={bolt_uri}"
    return url if auth else url + "&preselectAuthMethod=NO_AUTH"


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    bolt_uri: str
    http_url: str
    started_here: bool
    browser_url: str = ""


def _pom() -> str:
    deps = [
        ("org.neo4j.app", "neo4j-server", NEO4J_VERSION),
        ("org.neo4j", "neo4j", NEO4J_VERSION),
        ("org.neo4j.client", "neo4j-browser", BROWSER_VERSION),
        *(("org.neo4j.gds", m, GDS_VERSION) for m in GDS_MODULES),
    ]
    body = "\n".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>dev.palimpsest</groupId><artifactId>neo4j-runtime</artifactId>"
        f"<version>1</version><packaging>pom</packaging><dependencies>{body}</dependencies></project>"
    )


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Serialise work on a shared cache entry (jar resolution, GraphiQL's files), so two processes
    (e.g. parallel test runs or `make` targets) take turns instead of interleaving files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def require_tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        hint = "install OpenJDK 17 or 21" if name == "java" else "install Apache Maven"
        raise ServerError(f"'{name}' was not found on PATH: {hint} to run Neo4j without Docker")
    return found


def resolve_distribution(cfg: ServerConfig) -> Path:
    """Fetch the pinned jars once into the cache; later calls return at once."""
    marker = cfg.dist_dir / ".complete"
    if marker.exists():
        return cfg.dist_dir
    mvn = require_tool("mvn")
    with file_lock(cfg.cache_dir / "resolve.lock"):
        if marker.exists():
            return cfg.dist_dir
        with tempfile.TemporaryDirectory(prefix="palimpsest-mvn-") as tmp:
            (Path(tmp) / "pom.xml").write_text(_pom())
            out = Path(tmp) / "jars"
            proc = subprocess.run(
                [mvn, "-B", "-q", "dependency:copy-dependencies", f"-DoutputDirectory={out}",
                 "-Dmdep.prependGroupId=true", "-DincludeScope=runtime"],
                cwd=tmp, capture_output=True, text=True, check=False,
            )
            if proc.returncode != 0:
                tail = (proc.stdout + proc.stderr)[-3000:]
                raise ServerError(f"Maven could not resolve Neo4j {NEO4J_VERSION} + GDS {GDS_VERSION}:\n{tail}")
            staging = cfg.dist_dir.with_name(cfg.dist_dir.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            (staging / "lib").mkdir(parents=True)
            (staging / "plugins").mkdir()
            # GDS jars only in plugins/: the procedure loader scans every class there.
            for jar in sorted(out.glob("*.jar")):
                dest = "plugins" if jar.name.startswith("org.neo4j.gds.") else "lib"
                shutil.move(str(jar), staging / dest / jar.name)
            shutil.rmtree(cfg.dist_dir, ignore_errors=True)
            staging.rename(cfg.dist_dir)
            marker.write_text(f"neo4j {NEO4J_VERSION}\ngds {GDS_VERSION}\nbrowser {BROWSER_VERSION}\n")
    return cfg.dist_dir


def _write_conf(cfg: ServerConfig) -> Path:
    inst = cfg.instance_dir
    for sub in ("conf", "data", "logs", "run", "import"):
        (inst / sub).mkdir(parents=True, exist_ok=True)
    lines = [
        f"server.directories.data={inst / 'data'}",
        f"server.directories.logs={inst / 'logs'}",
        f"server.directories.plugins={cfg.dist_dir / 'plugins'}",
        f"server.directories.import={inst / 'import'}",
        f"server.directories.run={inst / 'run'}",
        "server.default_listen_address=127.0.0.1",
        f"server.bolt.listen_address=127.0.0.1:{cfg.bolt_port}",
        f"server.http.listen_address=127.0.0.1:{cfg.http_port}",
        "server.https.enabled=false",
        f"dbms.security.auth_enabled={'true' if cfg.password else 'false'}",
        f"server.memory.pagecache.size={cfg.pagecache}",
        f"server.memory.heap.initial_size={cfg.heap}",
        f"server.memory.heap.max_size={cfg.heap}",
        "dbms.security.procedures.unrestricted=gds.*",
        "dbms.usage_report.enabled=false",
        # The default keeps two days of transaction logs: a benchmark session wrote 5.6 GB of them
        # next to a 1 GB store. A local instance keeps enough for crash recovery and no more.
        "db.tx_log.rotation.retention_policy=1G size",
        # Neo4j Browser: captions that show the memory (BROWSER_STYLE), and no product-analytics prompt
        # or reporting from a local development server.
        f"browser.post_connect_cmd={browser_style_command()}",
        "client.allow_telemetry=false",
    ]
    conf = inst / "conf" / "neo4j.conf"
    conf.write_text("\n".join(lines) + "\n")
    return conf


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists"; treat it as dead.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


def _read_pid(cfg: ServerConfig) -> int | None:
    try:
        pid = int(cfg.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def bolt_answers(uri: str, auth: tuple[str, str] | None, timeout_s: float = 3.0) -> bool:
    from neo4j import GraphDatabase

    try:
        with GraphDatabase.driver(uri, auth=auth, connection_timeout=timeout_s) as drv:
            drv.verify_connectivity()
        return True
    except Exception:
        return False


def _auth(cfg: ServerConfig) -> tuple[str, str] | None:
    return ("neo4j", cfg.password) if cfg.password else None


def log_tail(cfg: ServerConfig, lines: int = 40) -> str:
    chunks = []
    for path in (cfg.log_file, cfg.instance_dir / "logs" / "neo4j.log", cfg.instance_dir / "logs" / "debug.log"):
        if path.exists():
            text = path.read_text(errors="replace").splitlines()[-lines:]
            chunks.append(f"--- {path} ---\n" + "\n".join(text))
    return "\n".join(chunks) or "(no log written)"


def status(cfg: ServerConfig) -> ServerStatus:
    pid = _read_pid(cfg)
    running = pid is not None and bolt_answers(cfg.bolt_uri, _auth(cfg))
    return ServerStatus(running, pid, cfg.bolt_uri, f"http://127.0.0.1:{cfg.http_port}", pid is not None,
                        cfg.browser_url)


def _set_initial_password(cfg: ServerConfig, java: str) -> None:
    """Auth is on only when NEO4J_PASSWORD is set; the admin tool stores it before first start."""
    if not cfg.password or (cfg.instance_dir / "data" / "dbms").exists():
        return
    cp = f"{cfg.dist_dir / 'lib'}/*"
    env = {**os.environ, "NEO4J_HOME": str(cfg.instance_dir), "NEO4J_CONF": str(cfg.instance_dir / "conf")}
    proc = subprocess.run(
        [java, "-cp", cp, "org.neo4j.cli.AdminTool", "dbms", "set-initial-password", cfg.password],
        env=env, capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise ServerError(f"could not set the initial Neo4j password: {proc.stderr[-1000:]}")


def start(cfg: ServerConfig) -> ServerStatus:
    """Start the server, or find the one already running; idempotent."""
    current = status(cfg)
    if current.running:
        return current
    if current.pid is None:
        for port in (cfg.bolt_port, cfg.http_port):
            if _port_open(port):
                raise ServerError(
                    f"port {port} on 127.0.0.1 is taken by a process this launcher did not start; "
                    "stop it or set PALIMPSEST_NEO4J_BOLT_PORT / PALIMPSEST_NEO4J_HTTP_PORT"
                )
    java = require_tool("java")
    resolve_distribution(cfg)
    conf = _write_conf(cfg)
    _set_initial_password(cfg, java)
    if current.pid is None:
        cfg.log_file.parent.mkdir(parents=True, exist_ok=True)
        classpath = f"{cfg.dist_dir / 'plugins'}/*:{conf.parent}/*:{cfg.dist_dir / 'lib'}/*"
        cmd = [
            java, f"-Xms{cfg.heap}", f"-Xmx{cfg.heap}", *JVM_FLAGS, "-cp", classpath,
            "org.neo4j.server.CommunityEntryPoint",
            f"--home-dir={cfg.instance_dir}", f"--config-dir={conf.parent}", "--console-mode",
        ]
        with cfg.log_file.open("ab") as log:
            proc = subprocess.Popen(
                cmd, cwd=cfg.instance_dir, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        cfg.pid_file.write_text(str(proc.pid))
    pid = _read_pid(cfg)
    deadline = time.monotonic() + cfg.start_timeout_s
    while time.monotonic() < deadline:
        if pid is None or not _pid_alive(pid):
            cfg.pid_file.unlink(missing_ok=True)
            raise ServerError(f"Neo4j exited during start-up. Log tail:\n{log_tail(cfg)}")
        if bolt_answers(cfg.bolt_uri, _auth(cfg), timeout_s=2.0):
            # The HTTP connector (Neo4j Browser) opens a moment after Bolt: wait so the URL we print works.
            while not _port_open(cfg.http_port) and time.monotonic() < deadline and _pid_alive(pid):
                time.sleep(0.2)
            return status(cfg)
        time.sleep(1.0)
    raise ServerError(f"Neo4j did not answer on {cfg.bolt_uri} within {cfg.start_timeout_s:.0f}s. "
                      f"Log tail:\n{log_tail(cfg)}")


def stop(cfg: ServerConfig, timeout_s: float = 60.0) -> bool:
    """Stop only the server whose pid this launcher recorded; returns False if none ran."""
    pid = _read_pid(cfg)
    if pid is None:
        cfg.pid_file.unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    if _pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    cfg.pid_file.unlink(missing_ok=True)
    return True
