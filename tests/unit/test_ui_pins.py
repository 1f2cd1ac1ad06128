"""GraphiQL's pinned files are refused when they do not match their pins; the Browser style survives
the trip through neo4j.conf. No network, no server: the parts the browser tests rely on, alone."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from palimpsest.api import graphiql
from palimpsest.graph.db import local_server as server


def _tarball(path: Path, files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


def _sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def _sha512(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def test_a_file_is_kept_only_when_tarball_and_file_match_their_pins(tmp_path: Path) -> None:
    content = b"window.React = {};"
    tgz = tmp_path / "react.tgz"
    packed = _tarball(tgz, {"umd/react.js": content})
    out = tmp_path / "out"
    out.mkdir()
    good = graphiql.NpmPackage("react", "0", _sha512(packed),
                               (graphiql.AssetFile("umd/react.js", "r.js", _sri(content)),))
    graphiql._extract(good, tgz, out)
    assert (out / "r.js").read_bytes() == content

    wrong_tarball = graphiql.NpmPackage("react", "0", _sha512(b"other"), good.files)
    with pytest.raises(graphiql.AssetError, match="pinned sha512"):
        graphiql._extract(wrong_tarball, tgz, out)
    wrong_file = graphiql.NpmPackage("react", "0", good.integrity,
                                     (graphiql.AssetFile("umd/react.js", "r.js", _sri(b"other")),))
    with pytest.raises(graphiql.AssetError, match="pinned sha384"):
        graphiql._extract(wrong_file, tgz, out)
    absent = graphiql.NpmPackage("react", "0", good.integrity, (graphiql.AssetFile("umd/nope.js", "n.js", "x"),))
    with pytest.raises(graphiql.AssetError, match=r"has no file umd/nope\.js"):
        graphiql._extract(absent, tgz, out)


def test_installed_needs_every_file_and_the_marker(tmp_path: Path) -> None:
    for name in graphiql.FILES:
        (tmp_path / name).write_text("x")
    assert not graphiql.installed(tmp_path)  # no marker: an install that stopped half-way
    (tmp_path / ".complete").write_text("done")
    assert graphiql.installed(tmp_path)
    (tmp_path / "graphiql.min.js").unlink()
    assert not graphiql.installed(tmp_path)


def test_the_page_references_every_pinned_file_with_its_integrity_and_nothing_else() -> None:
    page = graphiql.page("/graphql")
    for name, asset in graphiql.FILES.items():
        assert f'"{graphiql.ASSET_PREFIX}/{name}" integrity="{asset.sri}"' in page
    assert "http://" not in page and "https://" not in page and "Cookies" not in page
    assert page.count('onerror="assetFailed(this)"') == len(graphiql.FILES)


def test_post_connect_style_survives_neo4j_conf_and_browsers_command_split(tmp_path: Path) -> None:
    """Browser splits browser.post_connect_cmd on `;` outside quotes and parses `:style` JSON first."""
    command = server.browser_style_command()
    assert ";" not in command
    style = json.loads(command.removeprefix("style "))
    assert style["node.Claim"]["caption"] == "{content}"
    assert style["node.Entity"]["caption"] == "{name}"
    assert style["node.Fact"]["caption"] == "{predicate}"
    conf = server._write_conf(server.ServerConfig(cache_dir=tmp_path)).read_text().splitlines()
    assert f"browser.post_connect_cmd={command}" in conf
    assert "client.allow_telemetry=false" in conf


def test_browser_url_connects_without_a_form_only_when_auth_is_off() -> None:
    assert (server.ServerConfig(cache_dir=Path("c"), bolt_port=1, http_port=2).browser_url
            == "http://127.0.0.1:2/browser/?dbms=bolt://127.0.0.1:1&preselectAuthMethod=NO_AUTH")
    assert (server.ServerConfig(cache_dir=Path("c"), bolt_port=1, http_port=2, password="p").browser_url
            == "http://127.0.0.1:2/browser/?dbms=bolt://127.0.0.1:1")
