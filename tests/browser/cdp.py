"""A small Chrome DevTools Protocol client for the system Chromium, for browser tests and screenshots.

Playwright and Selenium download a browser build of their own, which an offline machine cannot
do; Debian's `chromium` package speaks the DevTools protocol itself, and `websockets` (already a
dependency, for subscriptions) carries it. Only what the tests need is here: open a page, wait
for a condition evaluated in it, click and type like a user, read text, take a screenshot.

Chromium runs headless with its own throwaway profile and `--remote-debugging-port=0` (it picks a
free port and prints the address, so two test runs never collide). `offline=True` makes every host
other than loopback unresolvable, so a page that still reaches for a CDN fails here exactly as it
does on a machine without internet. Every request the page makes is recorded (`Page.requests`), as
are uncaught script errors (`Page.errors`), so a test can assert on both.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


class BrowserError(RuntimeError):
    """Chromium is missing, did not start, or a page did not reach the state a caller waited for."""


def find_chromium() -> str:
    """The Chromium binary: $CHROMIUM if set, else the first of the usual names on PATH."""
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    raise BrowserError("no Chromium found on PATH: install Debian's package with `apt-get install -y chromium` "
                       "(.ci/run does) or set CHROMIUM to the binary")


class Browser:
    """One headless Chromium process and one DevTools connection to it, shared by its pages."""

    def __init__(self, *, offline: bool = True, width: int = 1280, height: int = 800,
                 start_timeout_s: float = 30.0) -> None:
        self._profile = tempfile.mkdtemp(prefix="palimpsest-chromium-")
        args = [
            find_chromium(), "--headless=new", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={self._profile}", f"--window-size={width},{height}",
            "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--password-store=basic",
            "--force-device-scale-factor=1",
        ]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox on
        if offline:
            args.append("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost")
        self.width, self.height = width, height
        self._proc = subprocess.Popen([*args, "about:blank"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            url = self._await_address(start_timeout_s)
            self._ws: ClientConnection = connect(url, max_size=None, open_timeout=start_timeout_s,
                                                 ping_interval=None)
        except BaseException:
            self.close()
            raise
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._replies: dict[int, dict[str, Any]] = {}
        self._listeners: dict[str, Callable[[dict[str, Any]], None]] = {}

    def _await_address(self, timeout_s: float) -> str:
        assert self._proc.stderr is not None
        seen: list[str] = []
        result: list[str] = []

        def read() -> None:
            assert self._proc.stderr is not None
            for line in self._proc.stderr:
                seen.append(line)
                m = _LISTENING.search(line)
                if m and not result:
                    result.append(m.group(1))
            # keep draining so Chromium never blocks on a full stderr pipe

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not result:
            if self._proc.poll() is not None:
                break
            time.sleep(0.05)
        if not result:
            raise BrowserError("Chromium did not open its DevTools port:\n" + "".join(seen[-20:]))
        return result[0]

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout_s: float = 30.0) -> dict[str, Any]:
        """Send one command and wait for its reply; events read meanwhile go to their page's listener."""
        msg_id = next(self._ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        with self._lock:
            self._ws.send(json.dumps(msg))
            deadline = time.monotonic() + timeout_s
            while msg_id not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrowserError(f"no reply to {method} within {timeout_s:.0f}s")
                self._dispatch(json.loads(self._ws.recv(timeout=left)))
            reply = self._replies.pop(msg_id)
        if "error" in reply:
            raise BrowserError(f"{method} failed: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def pump(self, seconds: float) -> None:
        """Read events for a while (between polls), so listeners see what the page did."""
        deadline = time.monotonic() + seconds
        with self._lock:
            while (left := deadline - time.monotonic()) > 0:
                try:
                    self._dispatch(json.loads(self._ws.recv(timeout=left)))
                except TimeoutError:
                    return

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message:
            self._replies[int(message["id"])] = message
            return
        listener = self._listeners.get(message.get("sessionId", ""))
        if listener is not None:
            listener(message)

    def new_page(self) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        self._listeners[session] = page._on_event
        for domain in ("Page", "Runtime", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height,
                                                          "deviceScaleFactor": 1, "mobile": False}, session=session)
        return page

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._ws.close()
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab. `evaluate` runs JavaScript in it; the helpers below are built on it."""

    def __init__(self, browser: Browser, target: str, session: str) -> None:
        self.browser, self.target, self.session = browser, target, session
        self.requests: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self._urls: dict[str, str] = {}

    def _on_event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            self._urls[params["requestId"]] = url
            self.requests.append(url)
        elif method == "Network.loadingFailed":
            self.failed.append((self._urls.get(params["requestId"], "?"), params.get("errorText", "")))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            exc = details.get("exception", {})
            self.errors.append(str(exc.get("description") or details.get("text")))

    def send(self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 30.0) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session, timeout_s=timeout_s)

    def goto(self, url: str) -> None:
        reply = self.send("Page.navigate", {"url": url})
        if reply.get("errorText"):
            raise BrowserError(f"could not open {url}: {reply['errorText']}")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited if it is a promise), as JSON."""
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                               "awaitPromise": True})
        if "exceptionDetails" in reply:
            raise BrowserError(f"script failed: {reply['exceptionDetails'].get('text')}: {expression[:200]}")
        return reply.get("result", {}).get("value")

    def wait_for(self, expression: str, *, timeout_s: float = 20.0, what: str = "") -> Any:
        """Poll a JavaScript expression until it is truthy; its value, or BrowserError with the page text.

        An expression that throws counts as not yet (the page may still be loading); the last such
        error is in the timeout's message.
        """
        deadline = time.monotonic() + timeout_s
        failure = ""
        while True:
            try:
                value = self.evaluate(expression)
            except BrowserError as exc:
                value, failure = None, str(exc)
            if value:
                return value
            if time.monotonic() > deadline:
                text = self.evaluate("document.body ? document.body.innerText.slice(0, 1500) : ''")
                raise BrowserError(f"timed out after {timeout_s:.0f}s waiting for {what or expression}; "
                                   f"{failure + '; ' if failure else ''}script errors {self.errors}; "
                                   f"failed loads {self.failed}; page text:\n{text}")
            self.browser.pump(0.1)

    def center_of(self, selector: str) -> tuple[float, float]:
        box = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                            " if (!e) return null; const r = e.getBoundingClientRect();"
                            " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        if not box:
            raise BrowserError(f"nothing on the page matches {selector}")
        return float(box[0]), float(box[1])

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) at the middle of the element."""
        x, y = self.center_of(selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def key(self, key: str, code: str, *, modifiers: int = 0, key_code: int = 0) -> None:
        """Press and release one key (modifiers: 1 Alt, 2 Ctrl, 4 Meta, 8 Shift)."""
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code, "modifiers": modifiers,
                                                 "windowsVirtualKeyCode": key_code})

    def type_text(self, text: str) -> None:
        """Text as the focused element receives it from a keyboard (an input method commit)."""
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def text(self, selector: str = "body") -> str:
        value = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                              " return e ? e.innerText : ''; })()")
        return str(value or "")


@contextlib.contextmanager
def browser_page(*, offline: bool = True, width: int = 1280, height: int = 800) -> Iterator[Page]:
    """A fresh headless Chromium with one page, closed afterwards."""
    with Browser(offline=offline, width=width, height=height) as browser:
        yield browser.new_page()
