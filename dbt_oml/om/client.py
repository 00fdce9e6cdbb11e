"""A thin OpenMetadata REST client over an injected httpx2 client, with its auth providers.

I/O adapter. It maps transport errors and statuses into dbt_oml's error tree once (transient:
refused, timeouts, 5xx; terminal: 401 after a fresh token, 403 naming the operation OM refused), and
never puts a token or password into a message, a repr or a log line.
"""

from __future__ import annotations

import base64
import json as jsonlib
import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import httpx2

from dbt_oml.errors import (
    ConfigError,
    TerminalDeliveryError,
    TransientDeliveryError,
    UnreachableError,
)
from dbt_oml.redaction import redact

logger = logging.getLogger(__name__)

#: Which OpenMetadata role grants an operation a 403 names (ref §4.3, §9.8).
ROLE_FOR: Mapping[str, str] = {
    "EditLineage": "LineageBotRole",
    "Create": "IngestionBotRole",
    "EditAll": "IngestionBotRole or LineageBotRole",
    "ViewAll": "IngestionBotRole or LineageBotRole",
    "EditDescription": "IngestionBotRole or LineageBotRole",
    "EditTags": "IngestionBotRole or LineageBotRole",
    "EditOwners": "IngestionBotRole or LineageBotRole",
    "EditTier": "IngestionBotRole or LineageBotRole",
    "EditGlossaryTerms": "IngestionBotRole or LineageBotRole",
    "EditTests": "IngestionBotRole or LineageBotRole",
}
#: The media type OM's PATCH endpoints consume (anything else: 415).
JSON_PATCH = "application/json-patch+json"


class TokenProvider(Protocol):
    """Gives the bearer token for a request; `invalidate` after a 401 forces a new one."""

    def token(self, http: httpx2.Client, base_url: str) -> str: ...
    def invalidate(self) -> None: ...


@dataclass
class StaticToken:
    """A bot JWT given as a value (prefer TokenFile: environment values show in pod specs)."""

    value: str = field(repr=False)

    def token(self, http: httpx2.Client, base_url: str) -> str:  # noqa: ARG002
        return self.value

    def invalidate(self) -> None:
        """A static token cannot be refreshed."""


@dataclass
class TokenFile:
    """A bot JWT read from a file (a mounted Kubernetes Secret); re-read after a 401."""

    path: Path
    _cached: str | None = field(default=None, repr=False)

    def token(self, http: httpx2.Client, base_url: str) -> str:  # noqa: ARG002
        if self._cached is None:
            try:
                self._cached = self.path.read_text(encoding="utf-8").strip()
            except OSError as e:
                raise ConfigError(
                    key="jwt_token_file",
                    source=str(self.path),
                    reason=f"cannot be read ({e.strerror})",
                    hint="mount the bot's JWT there or set OM_JWT_TOKEN_FILE",
                ) from e
            if not self._cached:
                raise ConfigError(key="jwt_token_file", source=str(self.path), reason="is empty")
        return self._cached

    def invalidate(self) -> None:
        self._cached = None


@dataclass
class BasicLogin:
    """User and password through POST /api/v1/users/login (OM wants the password base64-encoded).

    Session tokens expire within the hour: fine for a laptop, wrong for a nightly job.
    """

    email: str
    password: str = field(repr=False)
    _cached: str | None = field(default=None, repr=False)

    def token(self, http: httpx2.Client, base_url: str) -> str:
        if self._cached is None:
            encoded = base64.b64encode(self.password.encode()).decode()
            try:
                response = http.post(
                    f"{base_url}/api/v1/users/login",
                    json={"email": self.email, "password": encoded},
                )
            except httpx2.TransportError as e:
                raise TransientDeliveryError(
                    target=base_url, reason=f"login: {type(e).__name__}"
                ) from e
            if response.status_code != 200:
                raise TerminalDeliveryError(
                    target=f"POST {base_url}/api/v1/users/login",
                    reason=f"{response.status_code} {_message(response)}",
                    hint="check OM_USER / OM_PASSWORD",
                )
            self._cached = str(response.json()["accessToken"])
        return self._cached

    def invalidate(self) -> None:
        self._cached = None


@dataclass
class OAuth2ClientCredentials:
    """OAuth2 client credentials (e.g. Okta, Azure AD) for OpenMetadata behind an SSO provider."""

    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str | None = None
    clock: Callable[[], float] = time.monotonic
    _cached: str | None = field(default=None, repr=False)
    _expires: float = 0.0

    def token(self, http: httpx2.Client, base_url: str) -> str:  # noqa: ARG002
        if self._cached is None or self.clock() >= self._expires:
            form = {
                "grant_type": "client_credentials",
                "client_id": self.client_id,
                "client_secret": self.client_secret,
            }
            if self.scope:
                form["scope"] = self.scope
            try:
                response = http.post(self.token_url, data=form)
            except httpx2.TransportError as e:
                raise TransientDeliveryError(target=self.token_url, reason=type(e).__name__) from e
            if response.status_code != 200:
                raise TerminalDeliveryError(
                    target=f"POST {self.token_url}",
                    reason=f"{response.status_code}",
                    hint="check OM_CLIENT_ID / OM_CLIENT_SECRET / OM_OAUTH_TOKEN_URL",
                )
            doc = response.json()
            self._cached = str(doc["access_token"])
            self._expires = self.clock() + float(doc.get("expires_in", 300)) - 30
        return self._cached

    def invalidate(self) -> None:
        self._cached = None


def _message(response: httpx2.Response) -> str:
    try:
        doc = response.json()
    except ValueError:
        return response.text[:200]
    return str(doc.get("message", "")) if isinstance(doc, dict) else str(doc)[:200]


@dataclass(frozen=True, slots=True)
class Reply:
    """A response the caller decides about (2xx, 400, 404, 409)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else ""


class OpenMetadataClient:
    """OpenMetadata's REST API as dbt-oml uses it."""

    def __init__(self, base_url: str, *, http: httpx2.Client, auth: TokenProvider | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http
        self.auth = auth
        self.requests = 0

    def __repr__(self) -> str:
        return f"OpenMetadataClient({self.base_url!r})"

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        content_type: str | None = None,
    ) -> Reply:
        """One request; 401 gets one retry with a fresh token. Raises DeliveryError subclasses.

        403 is returned to the caller (some are expected: admin-only settings) unless it names an
        operation, which is raised with the role that grants it. `content_type` sends `json` with
        that media type (PATCH: JSON_PATCH).
        """
        target = f"{method} {redact(self.base_url)}{path}"
        for attempt in (1, 2):
            headers = {"Content-Type": content_type} if content_type else {}
            if self.auth is not None:
                headers["Authorization"] = f"Bearer {self.auth.token(self.http, self.base_url)}"
            self.requests += 1
            response = self._send(method, f"{self.base_url}{path}", target, json, params, headers)
            status = response.status_code
            if status == 401 and attempt == 1 and self.auth is not None:
                self.auth.invalidate()
                continue
            if status == 401:
                raise TerminalDeliveryError(
                    target=target,
                    reason=f"401 {_message(response)}",
                    hint="token missing or expired (bot JWT? reissue it)",
                )
            if status == 403 and "not admin" not in _message(response):
                raise _forbidden(target, _message(response))
            if status >= 500:
                raise TransientDeliveryError(target=target, reason=f"{status} {_message(response)}")
            body = _json(response)
            return Reply(status, body)
        raise AssertionError("unreachable")  # pragma: no cover

    def _send(
        self,
        method: str,
        url: str,
        target: str,
        json: Any,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str],
    ) -> httpx2.Response:
        try:
            if "Content-Type" in headers:
                body = jsonlib.dumps(json).encode()
                return self.http.request(method, url, content=body, params=params, headers=headers)
            return self.http.request(method, url, json=json, params=params, headers=headers)
        except httpx2.TimeoutException as e:
            raise TransientDeliveryError(target=target, reason="timed out") from e
        except httpx2.ConnectError as e:
            raise UnreachableError(target=target, reason=_connect_reason(e)) from e
        except httpx2.TransportError as e:
            raise TransientDeliveryError(target=target, reason=type(e).__name__) from e

    def get_by_name(
        self, collection: str, fqn: str, *, fields: str | None = None
    ) -> dict[str, Any] | None:
        params = {"fields": fields} if fields else None
        reply = self.request(
            "GET", f"/api/v1/{collection}/name/{quote(fqn, safe='')}", params=params
        )
        if reply.status == 404:
            return None
        return self._ok(reply, "GET", collection)

    def patch(self, path: str, operations: list[dict[str, Any]]) -> Reply:
        """PATCH with RFC 6902 operations (`path` below /api/v1, e.g. `tables/{id}`)."""
        return self.request("PATCH", f"/api/v1/{path}", json=operations, content_type=JSON_PATCH)

    def put(self, collection: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create or update (for entities dbt-oml owns)."""
        return self._ok(self.request("PUT", f"/api/v1/{collection}", json=body), "PUT", collection)

    def create(self, collection: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """Create only (for children of entities someone else owns); None when it exists (409)."""
        reply = self.request("POST", f"/api/v1/{collection}", json=body)
        if reply.status == 409:
            return None
        return self._ok(reply, "POST", collection)

    def list_all(
        self, collection: str, *, params: Mapping[str, Any] | None = None, page: int = 1000
    ) -> Iterator[dict[str, Any]]:
        """Every entity of a collection, following OM's `after` cursors."""
        query = {**(params or {}), "limit": page}
        while True:
            doc = self._ok(
                self.request("GET", f"/api/v1/{collection}", params=query), "GET", collection
            )
            yield from doc.get("data") or []
            after = (doc.get("paging") or {}).get("after")
            if not after:
                return
            query["after"] = after

    def openlineage_settings(self) -> dict[str, Any] | None:
        """OM's OpenLineage settings, or None when this principal may not read them.

        Reading any setting but `lineageSettings` is admin-only (ref §2.9): a correctly scoped
        bot gets 403 "is not admin", which means "unknown", never a failure.
        """
        reply = self.request("GET", "/api/v1/system/settings/openLineageSettings")
        if reply.status in (403, 404):
            return None
        return dict(self._ok(reply, "GET", "settings").get("config_value") or {})

    def post_batch(self, events: list[dict[str, Any]]) -> Reply:
        """POST the batch endpoint; 200 and 400 are the caller's to read."""
        return self.request("POST", "/api/v1/openlineage/lineage/batch", json={"events": events})

    def post_event(self, event: dict[str, Any]) -> Reply:
        """POST one event (the single endpoint answers with its own edge count)."""
        return self.request("POST", "/api/v1/openlineage/lineage", json=event)

    def upstream_edges(self, table_fqn: str) -> dict[str, bool]:
        """Tables directly upstream of a table: FQN -> whether that edge has column lineage."""
        reply = self.request(
            "GET",
            f"/api/v1/lineage/table/name/{quote(table_fqn, safe='')}",
            params={"upstreamDepth": 1, "downstreamDepth": 0},
        )
        if reply.status == 404:
            return {}
        doc = self._ok(reply, "GET", "lineage")
        me = str((doc.get("entity") or {}).get("id"))
        names = {str(n.get("id")): str(n.get("fullyQualifiedName")) for n in doc.get("nodes") or []}
        out: dict[str, bool] = {}
        for edge in doc.get("upstreamEdges") or []:
            if str(edge.get("toEntity")) != me or str(edge.get("fromEntity")) not in names:
                continue
            details = edge.get("lineageDetails") or {}
            out[names[str(edge["fromEntity"])]] = bool(details.get("columnsLineage"))
        return out

    def _ok(self, reply: Reply, method: str, collection: str) -> dict[str, Any]:
        target = f"{method} {redact(self.base_url)}/api/v1/{collection}"
        if reply.status == 403:
            raise _forbidden(target, reply.message)
        if not reply.ok:
            raise TerminalDeliveryError(target=target, reason=f"{reply.status} {reply.message}")
        return dict(reply.body) if isinstance(reply.body, dict) else {}


def _json(response: httpx2.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return {"message": response.text[:200]}


def _connect_reason(error: Exception) -> str:
    text = str(error).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service" in text or "nodename" in text or "resolution" in text:
        return "unknown host"
    return f"cannot connect ({type(error).__name__})"


def _forbidden(target: str, message: str) -> TerminalDeliveryError:
    """A 403 naming the operation OM refused, and the role that grants it when we know one.

    OM's ANY-logic endpoints (test cases, results: ref §9.8) name no operation.
    """
    denied = re.findall(r"\[([A-Za-z, ]+)\]|operation (\w+) denied", message)
    operations = [op.strip() for pair in denied for part in pair for op in part.split(",") if op]
    role = next((ROLE_FOR[op] for op in operations if op in ROLE_FOR), None)
    if role is None and "ANY of the required permissions" in message:
        role = "IngestionBotRole (EditTests on tables)"
    hint = f"give the bot {role}" if role else ""
    return TerminalDeliveryError(target=target, reason=f"403 {message}", hint=hint)
