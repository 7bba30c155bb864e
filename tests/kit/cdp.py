"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe` (fds 3 and 4).

Enough for a test to load a page in a real headless chromium, watch its network requests, read
the DOM and press keys. Messages are JSON, each ended by a NUL byte.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any


class Browser:
    """One headless chromium with a page attached; close it with `close()`."""

    def __init__(self, binary: str, profile: str) -> None:
        to_r, to_w = os.pipe()  # we write, the browser reads on fd 3
        from_r, from_w = os.pipe()  # the browser writes on fd 4, we read

        def fds() -> None:
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--no-first-run",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=fds)  # noqa: PLW1509 - tests only, no threads here
        os.close(to_r)
        os.close(from_w)
        self.w, self.r = to_w, from_r
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Page", "Runtime"):
            self.call(f"{domain}.enable", session=True)

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("no message from chromium in time")
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed its pipe")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, session: bool = False,
             timeout: float = 30.0) -> dict[str, Any]:
        """Send one command and wait for its answer (events seen meanwhile are kept)."""
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            got = self._read(timeout)
            if got.get("id") == self.next_id:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return got.get("result", {})
            self.events.append(got)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        """The first event `method` (seen already, or still to come)."""
        for e in self.events:
            if e.get("method") == method:
                return e
        while True:
            got = self._read(timeout)
            self.events.append(got)
            if got.get("method") == method:
                return got

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        got = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                        session=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"page script failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def key(self, name: str, code: int) -> None:
        """Press and release one key in the focused element, as a user would."""
        for kind in ("rawKeyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": name, "code": name,
                                                 "windowsVirtualKeyCode": code}, session=True)

    def screenshot(self, path: str) -> None:
        """A PNG of the whole page, written to `path`."""
        import base64

        got = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                        session=True)
        Path(path).write_bytes(base64.b64decode(got["data"]))

    def requests(self) -> list[str]:
        """URLs of every request the page made."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        """End the browser."""
        try:
            self.call("Browser.close", timeout=5)
        except (OSError, TimeoutError, EOFError, RuntimeError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.w)
        os.close(self.r)
