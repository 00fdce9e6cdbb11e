"""A headless chromium tab driven over the DevTools protocol on a pipe, for the explorer's
browser tests (tests/integration/test_explorer_large.py; the driver's own check is
tests/integration/test_explorer_browser.py).

`--remote-debugging-pipe`: the browser reads NUL-ended JSON commands on fd 3 and writes answers
and events on fd 4, so the tests need no websocket client, no driver binary and no node. Every
exchange has a deadline, so a hung chromium fails a test instead of hanging it.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Headless, offline, no first-run work: the flags every browser test starts chromium with.
HEADLESS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
#: A bound on one exchange with the browser (a deadline against hangs, no timing assertion).
DEADLINE_S = 60.0


class Browser:
    """One tab of a headless chromium, driven over the DevTools protocol on a pipe."""

    def __init__(self, profile: Path, *, viewport: tuple[int, int] = (1280, 720)) -> None:
        assert CHROMIUM is not None
        to_browser, self._writer = os.pipe()
        self._reader, from_browser = os.pipe()
        # the child reads commands on fd 3 and writes answers on fd 4 (kept high first, so one
        # dup2 cannot close the other end)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]

        def wire() -> None:
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self._proc = subprocess.Popen(
            [
                CHROMIUM,
                *HEADLESS,
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,  # noqa: PLW1509 (fds 3 and 4 are the protocol's; no threads here)
            pass_fds=(3, 4),
        )
        for fd in (to_browser, from_browser, *high):
            os.close(fd)
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        self._next = 0
        target = self._call("Target.createTarget", {"url": "about:blank"}, session=None)
        attached = self._call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, None
        )
        self._session: str = attached["sessionId"]
        self.call("Page.enable")
        width, height = viewport
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._reader], [], [], max(0.0, deadline - time.time()))
            assert ready, "chromium did not answer within the deadline"
            chunk = os.read(self._reader, 1 << 16)
            assert chunk, "chromium closed the protocol pipe"
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return dict(json.loads(message))

    def _call(self, method: str, params: dict[str, Any], session: str | None) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._writer, json.dumps(message).encode() + b"\0")
        deadline = time.time() + DEADLINE_S
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next:
                assert "error" not in answer, (method, answer["error"])
                return dict(answer["result"])
            if "method" in answer:
                self._events.append(answer)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._call(method, params or {}, self._session)

    def _event(self, method: str) -> None:
        deadline = time.time() + DEADLINE_S
        while not any(e["method"] == method for e in self._events):
            self._events.append(self._read(deadline))
        self._events.clear()

    def open(self, url: str) -> None:
        """Load a page afresh (through about:blank: a new fragment alone would not reload)."""
        for address in ("about:blank", url):
            self._events.clear()
            self.call("Page.navigate", {"url": address})
            self._event("Page.loadEventFired")
        assert self.js("document.documentElement.dataset.loadedMs !== undefined")

    def js(self, expression: str) -> Any:
        found = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        assert "exceptionDetails" not in found, found["exceptionDetails"]
        return found["result"].get("value")

    def click(self, x: float, y: float) -> None:
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            )

    def type_and_enter(self, text: str) -> None:
        self.call("Input.insertText", {"text": text})
        enter = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}
        self.call("Input.dispatchKeyEvent", {"type": "keyDown", "text": "\r", **enter})
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", **enter})

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        try:
            self._call("Browser.close", {}, None)
        finally:
            self._proc.wait(timeout=DEADLINE_S)
            os.close(self._writer)
            os.close(self._reader)
