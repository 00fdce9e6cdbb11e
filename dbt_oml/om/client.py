"""A thin OpenMetadata REST client over an injected httpx2 client (auth: om.auth).

I/O adapter. It maps transport errors and statuses into dbt_oml's error tree once (transient:
refused, timeouts, 5xx; terminal: 401 after a fresh token, 403 naming the operation OM refused), and
never puts a token or password into a message, a repr or a log line.
"""

from __future__ import annotations

import json as jsonlib
import logging
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx2

from dbt_oml.errors import (
    CredentialError,
    Fault,
    TerminalDeliveryError,
    TransientDeliveryError,
    UnreachableError,
    classify,
    status_error,
)
from dbt_oml.om.auth import (
    BasicLogin,
    BearerAuth,
    OAuth2ClientCredentials,
    StaticToken,
    TokenFile,
    TokenProvider,
    connect_reason,
    message_of,
)
from dbt_oml.om.retry import retry_after
from dbt_oml.redaction import mask

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
#: The `status` of every answer of OM's OpenLineage endpoints (ref §1.5).
#: The shortest timeout a retry gets, however little of the budget is left (seconds).
MIN_TIMEOUT = 0.5
OM_STATUSES = frozenset({"success", "partial_success", "failure"})
#: What to do when something else answers in OM's place (a proxy, an SSO login page).
NOT_OM_HINT = "a proxy or a login page answered instead of OpenMetadata: check the url (OM_HOST)"


@dataclass(frozen=True, slots=True)
class Reply:
    """A response the caller decides about (2xx, 400, 404, 409)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return HTTPStatus.OK <= self.status < HTTPStatus.MULTIPLE_CHOICES

    @property
    def message(self) -> str:
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else ""


class OpenMetadataClient:
    """OpenMetadata's REST API as dbt-oml uses it."""

    def __init__(
        self,
        base_url: str,
        *,
        http: httpx2.Client,
        auth: TokenProvider | None,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
        time_left: Callable[[], float | None] = lambda: None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http
        self.auth = auth
        self.now = now  # the wall clock an HTTP-date Retry-After is counted from
        #: seconds a request may still take (the retry budget's; None: the client's timeout)
        self.time_left = time_left
        self._flow = BearerAuth(auth, http=http, base_url=self.base_url) if auth else None
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
        """One request (a 401 gets one retry with a fresh token: BearerAuth). Raises
        CredentialError for a 401 that stands, other DeliveryError subclasses as mapped: a 2xx
        whose body is not JSON (OM answers JSON or nothing) is a TransientDeliveryError.

        403 is returned to the caller (some are expected: admin-only settings) unless it names an
        operation, which is raised with the role that grants it. `content_type` sends `json` with
        that media type (PATCH: JSON_PATCH).
        """
        target = f"{method} {mask(self.base_url)}{path}"
        headers = {"Content-Type": content_type} if content_type else {}
        self.requests += 1
        response = self._send(
            method,
            f"{self.base_url}{path}",
            target=target,
            json=json,
            params=params,
            headers=headers,
        )
        status = response.status_code
        if status == HTTPStatus.UNAUTHORIZED:
            raise CredentialError(
                key="token",
                target=target,
                reason=f"401 {message_of(response)}",
                hint="token missing or expired (bot JWT? reissue it)",
                status=status,
            )
        if status == HTTPStatus.FORBIDDEN and "not admin" not in message_of(response):
            raise _forbidden(target, message_of(response))
        if classify(status) is Fault.RETRYABLE:
            raise status_error(
                status,
                target=target,
                reason=f"{status} {message_of(response)}".strip(),
                retry_after=retry_after(response.headers.get("retry-after"), now=self.now()),
            )
        body, is_json = _json(response)
        if not is_json and classify(status) is None:
            media = response.headers.get("content-type", "no content type").split(";")[0]
            raise TransientDeliveryError(
                target=target,
                reason=f"{status} that is not OpenMetadata's answer ({media}, not JSON)",
                hint=NOT_OM_HINT,
                status=status,
            )
        return Reply(status, body)

    def _send(
        self,
        method: str,
        url: str,
        *,
        target: str,
        json: Any,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str],
    ) -> httpx2.Response:
        options: dict[str, Any] = {"params": params, "headers": headers, "auth": self._flow}
        timeout = self._timeout()
        if timeout is not None:
            options["timeout"] = timeout
        try:
            if "Content-Type" in headers:
                body = jsonlib.dumps(json).encode()
                return self.http.request(method, url, content=body, **options)
            return self.http.request(method, url, json=json, **options)
        except httpx2.TimeoutException as e:
            raise TransientDeliveryError(target=target, reason="timed out") from e
        except httpx2.ConnectError as e:
            raise UnreachableError(target=target, reason=connect_reason(e)) from e
        except httpx2.TransportError as e:
            raise TransientDeliveryError(target=target, reason=type(e).__name__) from e

    def _timeout(self) -> httpx2.Timeout | None:
        """The client's timeouts, each capped at what is left of a failing spell's budget."""
        left = self.time_left()
        if left is None:
            return None
        cap = max(left, MIN_TIMEOUT)
        t = self.http.timeout
        return httpx2.Timeout(
            connect=min(t.connect or cap, cap),
            read=min(t.read or cap, cap),
            write=min(t.write or cap, cap),
            pool=min(t.pool or cap, cap),
        )

    def get_by_name(
        self, collection: str, fqn: str, *, fields: str | None = None
    ) -> dict[str, Any] | None:
        params = {"fields": fields} if fields else None
        reply = self.request(
            "GET", f"/api/v1/{collection}/name/{quote(fqn, safe='')}", params=params
        )
        if reply.status == HTTPStatus.NOT_FOUND:
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
        if reply.status == HTTPStatus.CONFLICT:
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
        if reply.status in (HTTPStatus.FORBIDDEN, HTTPStatus.NOT_FOUND):
            return None
        return dict(self._ok(reply, "GET", "settings").get("config_value") or {})

    def post_batch(self, events: list[dict[str, Any]]) -> Reply:
        """POST the batch endpoint; 200 and 400 are the caller's to read (a 2xx of another
        shape than OM's answer: TransientDeliveryError)."""
        path = "/api/v1/openlineage/lineage/batch"
        return self._openlineage(path, self.request("POST", path, json={"events": events}))

    def post_event(self, event: dict[str, Any]) -> Reply:
        """POST one event (the single endpoint answers with its own edge count)."""
        path = "/api/v1/openlineage/lineage"
        return self._openlineage(path, self.request("POST", path, json=event))

    def _openlineage(self, path: str, reply: Reply) -> Reply:
        """The reply when it is OM's OpenLineage answer (ref §1.5: a lower-case `status`, an
        integer edge count) or not a 2xx; a 2xx of any other shape took nothing."""
        body = reply.body
        edges = body.get("lineageEdgesCreated", 0) if isinstance(body, dict) else None
        if reply.ok and not (
            isinstance(body, dict)
            and body.get("status") in OM_STATUSES
            and isinstance(edges, int)
            and not isinstance(edges, bool)
        ):
            raise TransientDeliveryError(
                target=f"POST {mask(self.base_url)}{path}",
                reason=f"{reply.status} that is not OpenMetadata's answer "
                f"(no OpenLineage status in {str(body)[:80]!r})",
                hint=NOT_OM_HINT,
                status=reply.status,
            )
        return reply

    def upstream_edges(self, table_fqn: str) -> dict[str, bool]:
        """Tables directly upstream of a table: FQN -> whether that edge has column lineage."""
        reply = self.request(
            "GET",
            f"/api/v1/lineage/table/name/{quote(table_fqn, safe='')}",
            params={"upstreamDepth": 1, "downstreamDepth": 0},
        )
        if reply.status == HTTPStatus.NOT_FOUND:
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
        """A 2xx's JSON object (every entity, listing and settings answer of OM's is one)."""
        target = f"{method} {mask(self.base_url)}/api/v1/{collection}"
        if reply.status == HTTPStatus.FORBIDDEN:
            raise _forbidden(target, reply.message)
        if not reply.ok:
            raise status_error(
                reply.status, target=target, reason=f"{reply.status} {reply.message}"
            )
        if not isinstance(reply.body, dict):
            raise TransientDeliveryError(
                target=target,
                reason=f"{reply.status} that is not OpenMetadata's answer "
                f"(JSON {type(reply.body).__name__}, not an object)",
                hint=NOT_OM_HINT,
                status=reply.status,
            )
        return dict(reply.body)


def _json(response: httpx2.Response) -> tuple[Any, bool]:
    """The body as JSON (None when empty) and True; for a body that is not JSON, the start of
    its text as a `message` and False (an error page is still a status the caller reads)."""
    if not response.content:
        return None, True
    media = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if not media or media == "application/json" or media.endswith("+json"):
        try:
            return response.json(), True
        except ValueError:
            pass
    return {"message": response.text[:200]}, False


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
    return TerminalDeliveryError(target=target, reason=f"403 {message}", hint=hint, status=403)


__all__ = [  # the token providers live in om.auth; their users import them from here too
    "BasicLogin",
    "BearerAuth",
    "OAuth2ClientCredentials",
    "OpenMetadataClient",
    "Reply",
    "StaticToken",
    "TokenFile",
    "TokenProvider",
]
