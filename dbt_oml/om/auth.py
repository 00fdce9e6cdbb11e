"""How the OpenMetadata client authenticates: token providers (a bot JWT as a value or a mounted
file, a user's login, OAuth2 client credentials) and BearerAuth, the httpx2 auth flow that puts
the token on each request and, on a 401, fetches a fresh one and retries once.

No token or password ever goes into a message, a repr or a log line.
"""

from __future__ import annotations

import base64
import math
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any, Protocol

import httpx2

from dbt_oml.errors import (
    CredentialError,
    Fault,
    TransientDeliveryError,
    UnreachableError,
    classify,
    status_error,
)
from dbt_oml.om.retry import retry_after
from dbt_oml.redaction import mask


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
                raise CredentialError(
                    key="jwt_token_file",
                    target=str(self.path),
                    reason=f"jwt_token_file cannot be read ({e.strerror})",
                    hint="mount the bot's JWT there or set OM_JWT_TOKEN_FILE",
                ) from e
            if not self._cached:
                self._cached = None
                raise CredentialError(
                    key="jwt_token_file",
                    target=str(self.path),
                    reason="jwt_token_file is empty",
                    hint="mount the bot's JWT there or set OM_JWT_TOKEN_FILE",
                )
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
            response = post(
                http,
                f"{base_url}/api/v1/users/login",
                target=f"POST {mask(base_url)}/api/v1/users/login",
                json={"email": self.email, "password": encoded},
            )
            unavailable(response, f"POST {mask(base_url)}/api/v1/users/login")
            if response.status_code != HTTPStatus.OK:
                raise CredentialError(
                    key="password",
                    target=f"POST {mask(base_url)}/api/v1/users/login",
                    reason=f"{response.status_code} {message_of(response)}",
                    hint="check OM_USER / OM_PASSWORD",
                )
            self._cached = token_in(
                response,
                "accessToken",
                key="password",
                target=f"POST {mask(base_url)}/api/v1/users/login",
                hint="check OM_HOST: a proxy or an SSO page answered instead of OpenMetadata",
            )
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
            response = post(http, self.token_url, target=f"POST {mask(self.token_url)}", data=form)
            unavailable(response, f"POST {mask(self.token_url)}")
            if response.status_code != HTTPStatus.OK:
                raise CredentialError(
                    key="client_secret",
                    target=f"POST {mask(self.token_url)}",
                    reason=f"{response.status_code}",
                    hint="check OM_CLIENT_ID / OM_CLIENT_SECRET / OM_OAUTH_TOKEN_URL",
                )
            self._cached = token_in(
                response,
                "access_token",
                key="client_secret",
                target=f"POST {mask(self.token_url)}",
                hint="check OM_OAUTH_TOKEN_URL: it must be the provider's token endpoint",
            )
            self._expires = self.clock() + _expires_in(response) - 30
        return self._cached

    def invalidate(self) -> None:
        self._cached = None


class BearerAuth(httpx2.Auth):
    """The provider's token on each request; on a 401, one fresh token and one retry.

    An httpx2 auth flow: the second 401 is the response the client sees (and raises as a
    CredentialError). The provider's own errors (a token file that cannot be read, a refused
    login) come out of the request that needed the token.
    """

    def __init__(self, provider: TokenProvider, *, http: httpx2.Client, base_url: str) -> None:
        self.provider = provider
        self._http = http
        self._base_url = base_url

    def __repr__(self) -> str:
        return f"BearerAuth({type(self.provider).__name__})"

    def auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        request.headers["Authorization"] = self._bearer()
        response = yield request
        if response.status_code == HTTPStatus.UNAUTHORIZED:
            self.provider.invalidate()
            request.headers["Authorization"] = self._bearer()
            yield request

    def _bearer(self) -> str:
        return f"Bearer {self.provider.token(self._http, self._base_url)}"


def post(http: httpx2.Client, url: str, *, target: str, **body: Any) -> httpx2.Response:
    """POST to a login or token endpoint; nothing listening there is UnreachableError (two quick
    retries, as for OM itself), a timeout or a broken connection TransientDeliveryError."""
    try:
        return http.post(url, **body)
    except httpx2.ConnectError as e:
        raise UnreachableError(target=target, reason=connect_reason(e)) from e
    except httpx2.TimeoutException as e:
        raise TransientDeliveryError(target=target, reason="timed out") from e
    except httpx2.TransportError as e:
        raise TransientDeliveryError(target=target, reason=type(e).__name__) from e


def connect_reason(error: Exception) -> str:
    """What a failed connection says: refused, an unknown host, or the error's kind."""
    text = str(error).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service" in text or "nodename" in text or "resolution" in text:
        return "unknown host"
    return f"cannot connect ({type(error).__name__})"


def unavailable(response: httpx2.Response, target: str) -> None:
    """A token endpoint that is busy (429) or failing (5xx) says nothing about the secret:
    RateLimitedError or TransientDeliveryError, retried like any OpenMetadata request."""
    status = response.status_code
    if classify(status) is Fault.RETRYABLE:
        raise status_error(
            status,
            target=target,
            reason=f"{status} {message_of(response)}".strip(),
            retry_after=retry_after(response.headers.get("retry-after")),
        )


def token_in(response: httpx2.Response, name: str, *, key: str, target: str, hint: str) -> str:
    """The token a 200 answer carries in its JSON field `name`, or CredentialError: an answer
    without one (an HTML page, a JSON body of something else) is no login."""
    try:
        doc = response.json()
    except ValueError:
        doc = None
    token = doc.get(name) if isinstance(doc, dict) else None
    if not isinstance(token, str) or not token:
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        raise CredentialError(
            key=key,
            target=target,
            reason=f"200 without a token ({kind}, no {name!r} in a JSON object)",
            hint=hint,
        )
    return token


def _expires_in(response: httpx2.Response) -> float:
    try:
        seconds = float(response.json().get("expires_in", 300))
    except (ValueError, TypeError, AttributeError):
        return 300.0
    return seconds if math.isfinite(seconds) and seconds > 0 else 300.0  # NaN, 0, < 0: default


def message_of(response: httpx2.Response) -> str:
    try:
        doc = response.json()
    except ValueError:
        return response.text[:200]
    return str(doc.get("message", "")) if isinstance(doc, dict) else str(doc)[:200]
