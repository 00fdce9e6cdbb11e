"""HTTP plumbing of the OM stand-in: one request's body and media type, JSON answers, JSON
Patch, and serving on a loopback port."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from tests.support.fakes.om_auth import OMError


class Call:
    """One request being answered: its environ, record and raw body."""

    def __init__(self, environ: dict[str, Any], request: Any, raw: bytes) -> None:
        self.environ, self.request, self.raw = environ, request, raw
        self._bad: str | None = None  # why the body is not JSON
        if raw and not environ.get("CONTENT_TYPE", "").startswith("application/x-www-form"):
            try:
                request.body = json.loads(raw)
            except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
                self._bad = str(e)

    def media_type(self, wanted: str) -> None:
        """Jersey's @Consumes: a body of another media type → 415 (before any filter)."""
        given = self.environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if self.raw and given != wanted:
            raise OMError(415, "HTTP 415 Unsupported Media Type", rule="media-type", detail=given)

    def json(self) -> Any:
        if self._bad is not None:
            raise OMError(400, "Unable to process JSON", rule="json", details=self._bad)
        if not self.raw:
            raise OMError(400, "Unable to process JSON", rule="json", details="empty body")
        return self.request.body


def compact(value: Any) -> Any:
    """Jackson NON_NULL: null fields are left out of answers (25)."""
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


def json_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 add / replace / remove on object members and arrays (enough for settings)."""
    for op in ops:
        if not isinstance(op, dict) or op.get("op") not in ("add", "replace", "remove"):
            raise OMError(400, "Invalid request format", rule="format", detail=f"patch op {op}")
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~") for p in str(op.get("path", "")).split("/")[1:]
        ]
        target: Any = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target.setdefault(part, {})
        if isinstance(target, list):
            index = len(target) if last == "-" else int(last)
            if op["op"] == "remove":
                target.pop(index)
            elif op["op"] == "add":
                target.insert(index, op.get("value"))
            else:
                target[index] = op.get("value")
        elif op["op"] == "remove":
            target.pop(last, None)
        else:
            target[last] = op.get("value")
    return doc


REASONS = {
    200: "OK",
    201: "Created",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean."""


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve the stand-in on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, handler_class=_QuietHandler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
