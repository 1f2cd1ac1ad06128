"""docker-compose.yml and the Dockerfile, checked where there is no Docker engine to build or run them.

`docker-compose config` (Debian's docker-compose, installed by .ci/run) parses and interpolates
the compose file offline, so a typo, an unknown key or a broken `${VAR:?…}` fails here rather
than on a user's machine. What the file must promise — a healthcheck on the API, the API waiting
for a healthy Neo4j, loopback-only ports — is read from its resolved form; the Dockerfile is read
as text for what compose cannot see: CPU-only torch at pyproject's pin, and the demo on first start.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


def _compose_config(password: str | None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("docker-compose")
    assert exe, ("docker-compose is needed to validate docker-compose.yml offline: "
                 "apt-get install --no-install-recommends docker-compose (.ci/run installs it)")
    env = {k: v for k, v in os.environ.items() if k != "NEO4J_PASSWORD"}
    if password is not None:
        env["NEO4J_PASSWORD"] = password
    return subprocess.run([exe, "-f", str(REPO / "docker-compose.yml"), "config"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_compose_file_resolves_with_healthchecks_and_loopback_ports() -> None:
    out = _compose_config("choose-one")
    assert out.returncode == 0, out.stderr
    cfg: dict[str, Any] = yaml.safe_load(out.stdout)
    api, neo4j = cfg["services"]["api"], cfg["services"]["neo4j"]
    check = " ".join(api["healthcheck"]["test"])
    assert "http://127.0.0.1:8000/health" in check, check
    assert api["depends_on"]["neo4j"]["condition"] == "service_healthy"
    assert "gds.version()" in " ".join(neo4j["healthcheck"]["test"])
    assert api["environment"]["NEO4J_URI"] == "bolt://neo4j:7687"
    assert api["environment"]["NEO4J_PASSWORD"] == "choose-one"
    for service in (api, neo4j):
        for port in service["ports"]:
            assert str(port).startswith("127.0.0.1:"), port  # never published on every interface


def test_compose_refuses_to_start_without_a_password() -> None:
    out = _compose_config(None)
    assert out.returncode != 0 and "NEO4J_PASSWORD" in out.stderr, (out.returncode, out.stderr)


def test_image_has_cpu_torch_at_the_pinned_version_and_serves_the_demo() -> None:
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    pinned = re.search(r'"torch==([^"]+)"', pyproject)
    arg = re.search(r"^ARG TORCH_VERSION=(\S+)$", dockerfile, re.M)
    assert pinned and arg and arg[1] == pinned[1], (arg, pinned)
    cpu = dockerfile.index("--index-url https://download.pytorch.org/whl/cpu")
    assert cpu < dockerfile.index("pip install --no-cache-dir ."), "CPU torch must be installed before the package"
    assert '"--demo"' in dockerfile.split("CMD", 1)[1], "the image's server must load the demo on first start"
    assert "[dev]" not in dockerfile
