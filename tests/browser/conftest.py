"""What a person sees, checked in a real browser: Debian's Chromium, headless, driven over DevTools.

One Chromium for the whole package (a page per test) and one real uvicorn serving the app against
the suite's Neo4j. Chromium runs offline (only loopback resolves), so a page that still needs a
CDN fails here as it would on a machine without internet. No Chromium is a failure with the way
to install it, never a skip: .ci/run installs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from palimpsest.api.app import create_app
from palimpsest.api.auth import KeyStore
from tests.browser.cdp import Browser, BrowserError, Page
from tests.reliability.conftest import serving

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def chromium(app_url: str) -> Iterator[Browser]:
    """Started after the app (and so closed before it): the server's shutdown then finds Chromium's
    keep-alive connections gone instead of waiting out its 10 s grace period for them."""
    try:
        browser = Browser(offline=True)
    except BrowserError as exc:
        pytest.fail(str(exc), pytrace=False)
    with browser:
        yield browser


@pytest.fixture
def page(chromium: Browser) -> Iterator[Page]:
    tab = chromium.new_page()
    try:
        yield tab
    finally:
        chromium.send("Target.closeTarget", {"targetId": tab.target})


@pytest.fixture(scope="session")
def app_url(runtime: Any) -> Iterator[str]:
    """The app as `palimpsest serve` runs it (local mode: no keys), on a free loopback port."""
    with serving(create_app(runtime, keys=KeyStore([]))) as port:
        yield f"http://127.0.0.1:{port}"
