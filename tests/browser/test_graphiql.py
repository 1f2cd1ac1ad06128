"""GraphiQL as a new user meets it: `/` leads there, it loads offline, runs the demo query as shipped.

strawberry's own page loaded React, GraphiQL and js-cookie from unpkg and stayed at "Loading..."
without internet; Chromium here resolves nothing but loopback, so that page fails every test
below. Results are read from GraphiQL's response editor and parsed, not matched as screen text.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palimpsest.api import demo, graphiql
from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore
from palimpsest.api.memory import Memory
from tests.browser.cdp import Page
from tests.reliability.conftest import serving

pytestmark = pytest.mark.integration

QUERY_EDITOR = ".graphiql-query-editor .CodeMirror"
RUN_BUTTON = ".graphiql-execute-button"
READY = f"!!document.querySelector({json.dumps(RUN_BUTTON)})"


def editor_text(page: Page, selector: str) -> str:
    return str(page.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                             " return e && e.CodeMirror ? e.CodeMirror.getValue() : ''; })()"))


def response_json(page: Page, must_contain: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """The JSON GraphiQL shows in its response pane, once it contains `must_contain`."""
    probe = ("(() => { const e = document.querySelector('.graphiql-response .CodeMirror');"
             " return e && e.CodeMirror ? e.CodeMirror.getValue() : ''; })()")
    text = page.wait_for(f"(() => {{ const v = {probe}; return v.includes({json.dumps(must_contain)}) ? v : ''; }})()",
                         timeout_s=timeout_s, what=f"a response containing {must_contain!r}")
    body: dict[str, Any] = json.loads(text)
    return body


def assert_offline_clean(page: Page, origin: str) -> None:
    """Everything the page fetched came from the app itself, loaded, and ran without a script error."""
    foreign = [u for u in page.requests if not u.startswith((origin, "data:", "about:", "ws://127.0.0.1"))]
    assert foreign == [], f"the page reached outside the app: {foreign}"
    assert page.failed == [], f"loads failed: {page.failed}"
    assert page.errors == [], f"script errors: {page.errors}"


@pytest.fixture
def demo_namespace(runtime: Any, namespace: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The demo data `make run` loads, in this test's own namespace (the page's example follows it)."""
    monkeypatch.setattr(demo, "DEMO_NAMESPACE", namespace)
    demo.load_demo(runtime)
    return namespace


def test_root_opens_graphiql_and_the_example_query_runs_offline(page: Page, app_url: str,
                                                                  demo_namespace: str) -> None:
    page.goto(app_url + "/")
    page.wait_for(READY, what="GraphiQL's run button")
    assert page.evaluate("location.pathname") == "/graphql"
    shown = editor_text(page, QUERY_EDITOR)
    assert f'namespace: "{demo_namespace}"' in shown and "recall(" in shown

    page.click(RUN_BUTTON)
    body = response_json(page, "storeRevision")
    assert "errors" not in body, body
    recall = body["data"]["recall"]
    assert recall["items"][0]["content"] == "Payments API moved to database host db-9 after incident 142."
    assert recall["items"][0]["source"] == "demo:incident-142"
    assert recall["storeRevision"] == 3 and recall["hidden"]["superseded"] == 3
    assert recall["completeness"]["itemsTruncated"] is True
    tabs = page.text(".graphiql-tabs")
    assert all(name in tabs for name in ("Recall", "History", "AsOfRevision")), tabs
    assert_offline_clean(page, app_url)


def test_a_typed_query_runs_with_ctrl_enter(page: Page, app_url: str, memory: Memory, namespace: str) -> None:
    memory.ingest("The staging cluster runs Kubernetes 1.31.", source="test:browser", claim_key="staging.k8s")
    page.goto(app_url + "/graphql")
    page.wait_for(READY, what="GraphiQL's run button")
    page.click(QUERY_EDITOR)
    page.key("a", "KeyA", modifiers=2, key_code=65)  # select all, then type over it
    typed = (f'{{ history(claimKey: "staging.k8s", namespace: "{namespace}") '
             "{ claim { content status source } events { kind } } }")
    page.type_text(typed)
    assert editor_text(page, QUERY_EDITOR) == typed
    # GraphiQL re-reads the operation (and names the tab after it) a moment after an edit; a person
    # pressing Ctrl-Enter at once would send the old operation name too.
    page.wait_for("document.querySelector('.graphiql-tab-active').innerText.includes('<untitled>')",
                  what="GraphiQL to take in the edit")
    page.key("Enter", "Enter", modifiers=2, key_code=13)
    body = response_json(page, "history")
    assert body == {"data": {"history": [{"claim": {"content": "The staging cluster runs Kubernetes 1.31.",
                                                      "status": "current", "source": "test:browser"},
                                            "events": [{"kind": "recorded"}]}]}}
    assert_offline_clean(page, app_url)


@pytest.fixture
def broken_assets(tmp_path: Path) -> Iterator[Path]:
    """A copy of the installed files with one of them changed, as a damaged cache would be."""
    source = graphiql.assets_dir()
    assert graphiql.installed(source), f"GraphiQL's files are not installed at {source}: run make install"
    copy = tmp_path / "assets"
    shutil.copytree(source, copy)
    (copy / "graphiql.min.js").write_bytes((copy / "graphiql.min.js").read_bytes() + b"\n// changed\n")
    yield copy


@pytest.mark.parametrize("case", ["missing", "changed"])
def test_without_usable_files_the_page_says_how_to_install_them(page: Page, runtime: Any, tmp_path: Path,
                                                                 broken_assets: Path, case: str) -> None:
    """Never "Loading..." for ever: missing files get the server's page, a changed one the page's own check."""
    assets = tmp_path / "empty" if case == "missing" else broken_assets
    with serving(create_app(runtime, keys=KeyStore([]), graphiql_assets=assets)) as port:
        page.goto(f"http://127.0.0.1:{port}/graphql")
        hint = page.wait_for("(() => { const e = document.getElementById('install-hint');"
                             " return e ? e.innerText : ''; })()", timeout_s=15, what="the install hint")
    assert hint == graphiql.INSTALL_HINT
    assert "Loading..." not in page.text()
    if case == "changed":
        assert "graphiql.min.js" in page.text()  # names the file that failed its integrity check
