"""Rewrite the docs' pictures: GraphiQL with a demo answer (docs/GRAPHQL.md), Neo4j Browser with the
demo graph (docs/OPERATIONS.md).

`make screenshots` (or `python -m scripts.screenshots`): loads the `demo` namespace if it is not
there yet (as `make run` does), lets the worker make its pass so entities exist, serves the app
on a free loopback port and photographs both pages with headless Chromium, through the same
DevTools client and the same steps as tests/browser. Needs the Neo4j that `make neo4j` starts (or
NEO4J_URI, with NEO4J_HTTP_URL for its Browser) and `make install`'s GraphiQL files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore
from palimpsest.api.demo import DEMO_NAMESPACE, load_demo
from palimpsest.api.runtime import Runtime
from palimpsest.api.worker import ProjectionWorker
from palimpsest.graph.db import local_server as server
from palimpsest.settings import Settings
from tests.browser.cdp import Browser, Page
from tests.reliability.conftest import serving

REPO = Path(__file__).resolve().parents[1]
GRAPH = (f"MATCH (c:Claim {{namespace: '{DEMO_NAMESPACE}'}})\n"
         "OPTIONAL MATCH (c)-[r:SUPERSEDES|MENTIONS]->(x)\nRETURN c, r, x;")


def graphiql(page: Page, app_url: str, out: Path) -> None:
    page.goto(app_url + "/")
    page.wait_for("!!document.querySelector('.graphiql-execute-button')", what="GraphiQL")
    page.click(".graphiql-execute-button")
    page.wait_for("(() => { const e = document.querySelector('.graphiql-response .CodeMirror');"
                  " return e && e.CodeMirror.getValue().includes('storeRevision'); })()", timeout_s=60,
                  what="the recall's answer")
    page.browser.pump(0.5)
    page.screenshot(out)


def browser_command(page: Page, command: str) -> None:
    frames = page.evaluate("document.querySelectorAll('[data-testid=\"frame\"]').length")
    page.click('[data-testid="activeEditor"]')
    page.type_text(command)
    page.click('[data-testid="editor-Run"]')
    if command != ":clear":
        page.wait_for(f"document.querySelectorAll('[data-testid=\"frame\"]').length > {frames}", what=command[:40])


def neo4j_browser(page: Page, url: str, app_url: str, out: Path) -> None:
    page.goto(url)
    page.wait_for("document.body && document.body.innerText.includes('Connected to Neo4j')", timeout_s=60,
                  what="Neo4j Browser to connect")
    # The style from the app, so the picture is the same whichever server conf is running.
    browser_command(page, f":style {app_url.replace('127.0.0.1', 'localhost')}/neo4j-browser.grass")
    page.wait_for("document.body.innerText.includes('node.Claim {')", what="the style")
    browser_command(page, ":clear")
    browser_command(page, GRAPH)
    page.wait_for("document.querySelectorAll('svg g.node').length >= 7", timeout_s=60, what="the demo graph")
    # Close the product-analytics notice a server started without client.allow_telemetry=false shows
    # (the launcher's own server sets it), then give the graph the whole window.
    page.evaluate("[...document.querySelectorAll('div')].filter(d => d.innerText.startsWith('To help make Neo4j')"
                  " && d.lastElementChild && d.lastElementChild.tagName === 'SPAN')"
                  ".forEach(d => d.lastElementChild.click())")
    page.click('[data-testid="frame"] button[title="Fullscreen"]')
    page.browser.pump(4.0)  # the force layout settles
    page.click('[aria-label="zoom-to-fit"]')
    page.browser.pump(1.5)
    page.screenshot(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="directory for the PNGs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    settings = Settings.from_env()
    cfg = settings.local_server()
    http = settings.neo4j_http_url or f"http://127.0.0.1:{cfg.http_port}"
    with Runtime.from_env(settings) as rt:
        load_demo(rt)
        ProjectionWorker(rt).run_once(DEMO_NAMESPACE)
        url = server.browser_url(http, rt.settings.uri, auth=bool(settings.neo4j_password))
        with serving(create_app(rt, keys=KeyStore([]))) as port, Browser(width=1280, height=800) as chromium:
            app_url = f"http://127.0.0.1:{port}"
            graphiql(chromium.new_page(), app_url, args.out / "graphiql.png")
            neo4j_browser(chromium.new_page(), url, app_url, args.out / "neo4j-browser.png")
    print(json.dumps({"written": [str(args.out / n) for n in ("graphiql.png", "neo4j-browser.png")]}))


if __name__ == "__main__":
    main()
