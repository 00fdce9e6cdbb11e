"""A thin OpenMetadata REST client over an injected httpx2 client, with its auth providers.

I/O adapter. It maps transport errors and statuses into dbt_oml's error tree once (transient:
refused, timeouts, 5xx; terminal: 401 after a fresh token, 403 with the missing role), and never
puts a token or password into a message, a repr or a log line.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import httpx2

from dbt_oml.errors import ConfigError, TerminalDeliveryError, TransientDeliveryError

logger = logging.getLogger(__name__)

#: Which OpenMetadata role grants an operation a 403 names.
ROLE_FOR: Mapping[str, str] = {"EditLineage": "LineageBotRole", "Create": "IngestionBotRole"}


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
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None
    ) -> Reply:
        """One request; 401 gets one retry with a fresh token. Raises DeliveryError subclasses."""
        for attempt in (1, 2):
            headers = {}
            if self.auth is not None:
                headers["Authorization"] = f"Bearer {self.auth.token(self.http, self.base_url)}"
            url = f"{self.base_url}{path}"
            self.requests += 1
            try:
                response = self.http.request(method, url, json=json, params=params, headers=headers)
            except httpx2.TimeoutException as e:
                raise TransientDeliveryError(target=f"{method} {url}", reason="timed out") from e
            except httpx2.TransportError as e:
                raise TransientDeliveryError(
                    target=f"{method} {url}", reason=type(e).__name__
                ) from e
            status = response.status_code
            if status == 401 and attempt == 1 and self.auth is not None:
                self.auth.invalidate()
                continue
            if status == 401:
                raise TerminalDeliveryError(
                    target=f"{method} {url}",
                    reason=f"401 {_message(response)}",
                    hint="token missing or expired (bot JWT? reissue it)",
                )
            if status == 403:
                text = _message(response)
                role = next((r for op, r in ROLE_FOR.items() if f"[{op}]" in text), None)
                hint = f"give the bot the {role}" if role else "check the bot's roles"
                raise TerminalDeliveryError(
                    target=f"{method} {url}", reason=f"403 {text}", hint=hint
                )
            if status >= 500:
                raise TransientDeliveryError(
                    target=f"{method} {url}", reason=f"{status} {_message(response)}"
                )
            body = response.json() if response.content else None
            return Reply(status, body)
        raise AssertionError("unreachable")  # pragma: no cover

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

    def openlineage_settings(self) -> dict[str, Any]:
        reply = self.request("GET", "/api/v1/system/settings/openLineageSettings")
        return dict(self._ok(reply, "GET", "settings").get("config_value") or {})

    def post_batch(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        reply = self.request("POST", "/api/v1/openlineage/lineage/batch", json={"events": events})
        return self._ok(reply, "POST", "openlineage/lineage/batch")

    def _ok(self, reply: Reply, method: str, collection: str) -> dict[str, Any]:
        if not reply.ok:
            message = reply.body.get("message") if isinstance(reply.body, dict) else reply.body
            raise TerminalDeliveryError(
                target=f"{method} {self.base_url}/api/v1/{collection}",
                reason=f"{reply.status} {message}",
            )
        return dict(reply.body or {})
