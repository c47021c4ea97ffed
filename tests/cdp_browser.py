"""A headless Chromium driven over the DevTools protocol through a pipe (no extra Python package).

``--remote-debugging-pipe`` makes Chromium read JSON commands from fd 3 and write replies and
events to fd 4, each message ending with a NUL byte. :class:`Browser` opens a page, records
console messages, uncaught exceptions, log entries and every network request, evaluates
JavaScript and takes screenshots. The network is cut (every host resolves to nothing, and an
unreachable proxy), so a page that tries to fetch anything shows it as a failed request.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
)


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome executable ($TABMEM_CHROMIUM first), or None."""
    env = os.environ.get("TABMEM_CHROMIUM")
    if env and Path(env).is_file():
        return env
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """``with Browser() as b: page = b.open(url)``; see the module docstring."""

    def __init__(self, executable: str | None = None, timeout: float = 60.0) -> None:
        self.executable = executable or find_chromium()
        if self.executable is None:
            raise BrowserError("no Chromium executable found")
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        self._buffer = b""

    # ------------------------------------------------------------------ process
    def __enter__(self) -> Browser:
        self._profile = tempfile.mkdtemp(prefix="tabmem-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds() -> None:  # runs in the child: the pipe ends become fds 3 and 4
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [self.executable, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            preexec_fn=child_fds,
            close_fds=False,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._call("Browser.close")
        except Exception:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    # ------------------------------------------------------------------ protocol
    def _read_message(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                self._stderr.seek(0)
                tail = self._stderr.read()[-2000:].decode(errors="replace")
                raise BrowserError(f"Chromium closed the pipe; stderr tail:\n{tail}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def _call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _wait_event(self, method: str, session: str, deadline: float) -> dict[str, Any]:
        for ev in self.events:
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev
        while True:
            ev = self._read_message(deadline)
            self.events.append(ev)
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev

    # ------------------------------------------------------------------ pages
    def open(self, url: str, width: int = 1200, height: int = 900) -> Page:
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self._call(f"{domain}.enable", session=session)
        self._call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        self.events.clear()
        self._call("Page.navigate", {"url": url}, session=session)
        self._wait_event("Page.loadEventFired", session, time.monotonic() + self.timeout)
        return Page(self, session)


class Page:
    """One loaded page: its console/network record, JavaScript evaluation and screenshots."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session

    def _events(self, method: str) -> list[dict[str, Any]]:
        return [
            e["params"] for e in self.browser.events if e.get("method") == method and e.get("sessionId") == self.session
        ]

    def settle(self, seconds: float = 0.3) -> None:
        """Let late events (console, network) arrive."""
        deadline = time.monotonic() + seconds
        self.evaluate("1")
        while time.monotonic() < deadline:
            time.sleep(0.05)
            self.evaluate("1")

    def console_errors(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, and error log entries (failed loads)."""
        out = []
        for p in self._events("Runtime.consoleAPICalled"):
            if p.get("type") in ("error", "warning", "assert"):
                out.append(
                    f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
                )
        for p in self._events("Runtime.exceptionThrown"):
            d = p.get("exceptionDetails", {})
            out.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
        for p in self._events("Log.entryAdded"):
            e = p.get("entry", {})
            if e.get("level") in ("error", "warning"):
                out.append(f"log.{e.get('level')}: {e.get('text')} {e.get('url', '')}")
        for p in self._events("Network.loadingFailed"):
            out.append(f"failed load: {p.get('errorText')}")
        return out

    def requests(self) -> list[str]:
        """URLs of every request the page made."""
        return [p["request"]["url"] for p in self._events("Network.requestWillBeSent")]

    def evaluate(self, expression: str) -> Any:
        res = self.browser._call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, self.session
        )
        if "exceptionDetails" in res:
            raise BrowserError(f"evaluate failed: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def screenshot(self, clip: dict[str, float] | None = None) -> bytes:
        """PNG bytes of the page (``clip``: x, y, width, height in CSS pixels of the document), beyond the viewport."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
        else:
            w, h = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
        return base64.b64decode(self.browser._call("Page.captureScreenshot", params, self.session)["data"])


FIGURES_JS = """
Array.from(document.querySelectorAll('svg.plot')).map(function (e) {
  var r = e.getBoundingClientRect();
  return {label: e.getAttribute('aria-label'), x: r.left + window.scrollX, y: r.top + window.scrollY,
          width: r.width, height: r.height};
})
"""


def ink(png: bytes) -> tuple[float, float]:
    """(share of pixels that are not near-white, share of saturated colour pixels) of a screenshot."""
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    not_white = (img.min(axis=2) < 235).mean()
    saturated = ((img.max(axis=2) - img.min(axis=2)) > 60).mean()
    return float(not_white), float(saturated)
