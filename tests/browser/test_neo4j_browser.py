"""Neo4j Browser as docs/OPERATIONS.md sends a person there: connected at once, claims captioned by content.

The Browser a server serves shows a login form on a first visit even with auth off (it cannot
know before connecting); the URL the launcher prints (graph.db.local_server.browser_url) connects without
it. The style is fetched from the app with `:style <url>` here, which is what a server this package
did not launch needs; the launcher's own server runs the same style on connect (checked on a
throwaway server in tests/integration/test_local_launcher.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.api import demo
from palimpsest.graph.db import local_server as server
from tests.browser.cdp import Page
from tests.conftest import Neo4jHandle
from tests.integration.test_readme_cypher import CHAIN  # docs/OPERATIONS.md's query, as a person would paste it

pytestmark = pytest.mark.integration

EDITOR = '[data-testid="activeEditor"]'
RUN = '[data-testid="editor-Run"]'


def connect(page: Page, neo4j: Neo4jHandle) -> None:
    """Open the Browser the way the launcher's URL does; with auth on, log in through the form."""
    assert neo4j.http_url, "set NEO4J_HTTP_URL next to NEO4J_URI so the Browser can be checked"
    page.goto(server.browser_url(neo4j.http_url, neo4j.uri, auth=neo4j.auth is not None))
    if neo4j.auth is None:
        page.wait_for("document.body.innerText.includes('server auth is disabled')", timeout_s=30,
                      what="Browser to connect without credentials")
        return
    page.wait_for("!!document.querySelector('[data-testid=\"username\"]')", timeout_s=30, what="the login form")
    for field, value in (("username", neo4j.auth[0]), ("password", neo4j.auth[1])):
        page.click(f'[data-testid="{field}"]')
        page.key("a", "KeyA", modifiers=2, key_code=65)  # over whatever the form prefilled
        page.type_text(value)
    page.click('[data-testid="connect"]')
    page.wait_for("document.body.innerText.includes('You are connected as user')", timeout_s=30,
                  what="Browser to log in")


def run(page: Page, command: str) -> None:
    frames = page.evaluate("document.querySelectorAll('[data-testid=\"frame\"]').length")
    page.click(EDITOR)
    page.type_text(command)
    page.click(RUN)
    page.wait_for(f"document.querySelectorAll('[data-testid=\"frame\"]').length > {frames}",
                  what=f"a frame for {command[:40]}")


def test_browser_connects_without_a_form_and_captions_claims_by_content(
        page: Page, neo4j: Neo4jHandle, runtime: Any, namespace: str, app_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "DEMO_NAMESPACE", namespace)
    demo.load_demo(runtime)
    connect(page, neo4j)
    if neo4j.auth is None:
        text = page.text()
        assert "Database access might require an authenticated connection" not in text
        assert not page.evaluate("!!document.querySelector('input[type=\"password\"]')")

    # localhost: the Browser's default allowlist for remote content; the frame shows the style it applied.
    run(page, f":style {app_url.replace('127.0.0.1', 'localhost')}/neo4j-browser.grass")
    applied = page.wait_for("(() => { const f = document.querySelector('[data-testid=\"frame\"]');"
                            " return f && /node.Claim|not allowed|Error/.test(f.innerText) ? f.innerText : ''; })()",
                            what="the style frame")
    assert "node.Claim {" in applied and 'caption: "{content}"' in applied, applied
    assert 'caption: "{name}"' in applied and 'caption: "{predicate}"' in applied

    run(page, CHAIN.replace("'demo'", f"'{namespace}'"))
    captions = page.wait_for(
        "(() => { const nodes = [...document.querySelectorAll('svg g.node')];"
        " const texts = nodes.map(n => [...n.querySelectorAll('text')].map(t => t.textContent.trim()).join(' '));"
        " return texts.length === 2 && texts.every(t => t.length > 0) ? texts : null; })()",
        timeout_s=30, what="the two claims of the chain drawn with captions")
    assert sorted(captions) == ["Payments API moved to database host db-9 after incident 142.",
                                "The payments API stores its data on database host db-7."]
    edges = page.evaluate("[...document.querySelectorAll('svg g.relationship text')].map(t => t.textContent.trim())")
    assert edges == ["SUPERSEDES"]
