"""A loopback stand-in for OpenMetadata (OM) 1.12.x or 2.0.x, as strict as OM itself.

The reference is docs/reference/openmetadata-api.md ("ref §n" below); numbers like (11) refer to
its "Behaviours a faithful stand-in must have" checklist. A WSGI app: use it in-process through
`httpx2.WSGITransport(app=fake)`, or on 127.0.0.1 with `serve()`.

What it enforces:

- Auth (ref §4): 401 bodies of the JWT filter; per-token principals with OM's roles
  (IngestionBotRole, LineageBotRole, DataSteward, DataConsumer, admin); every endpoint checks
  what OM checks, with OM's 403 texts: GETs need ViewAll, POST needs Create, PUT needs Create
  (new) or EditAll (existing), the OpenLineage endpoints EditLineage, settings are admin-only
  except `lineageSettings` (ref §2.9). `WWW-Authenticate: om-auth` on 401/403/404/409.
- Bodies (ref §1.3, om_rules.py): malformed JSON, binding errors and bean validation answer OM's
  three 400 shapes, using OM's schemas as OM's generated models give them (om_models, from the
  pinned openmetadata-ingestion: a clone alone has them); unknown properties are accepted; `eventTime` is parsed per version (ref
  §1.4); table columns follow ref §3.4. Order on the OpenLineage endpoints: 401, 400, 403, 503.
- OpenLineage (ref §1.5, §2, om_lineage.py): single and batch answers, failedEvents and the
  status rule; per-version resolution, mapping, column lineage and pipelines; one edge per pair,
  replaced on every post. Auto-create is not modelled (it fails silently on OM with PostgreSQL).
- Entities (ref §3): POST 201/409, PUT 201/200 with `X-OpenMetadata-Change`; parents must exist;
  PUT replaces a table's columns as sent, but a bot never replaces a non-empty description
  (ref §9.4); null fields are left out of answers.
- Lineage (ref §3.5, §3.6): PUT /lineage by ids, GET /lineage/table/name/{fqn} and
  /lineage/getLineageEdge/{fromId}/{toId}.
- dbt metadata (ref §9, checklist D1-D14): people, owners, classifications and tags, data
  models and PATCH in om_catalog; test definitions, suites, cases and results in om_quality. A
  table read returns `tags`, `owners`, `dataModel`... (and column tags) only when `fields` asks.

Scripting: `with_bot`, `with_admin`, `add_token`, `add_user` (+ `passwords`, `admins`),
`add_person` / `add_team` / `add_glossary_term` (D1),
`fail_next` (statuses), `answer_next` / `answer_html_next` / `rate_limit_next` / `limit_body`
(what a proxy, gateway or SSO page in front of OM answers instead: recorded with violation
`proxy`), `hold` (stall a request), `fail_events` / `fail_edges` (make OM's mapper
or an edge write throw), `seed`. State: `entities`, `edges`, `settings`, `requests` (each with
`status`, `principal`, `violation` = the rule that refused it), `audit` ((principal, method,
FQN, created|updated|unchanged|conflict|denied|dataModel) per write; PATCH and `auto` (the
basic suite OM makes) as their method), `test_case_results`; `dump()` gives all of it (D14).

Modules: this one (the scripting API, WSGI and routing), om_sessions (the JWT filter, login,
settings), om_store (entity writes and reads), om_lineage_api (the OpenLineage and lineage
endpoints), om_catalog and om_quality (dbt metadata); under them om_auth (principals, roles,
403s), om_rules (bodies, 400s), om_lineage (resolver, mapper, answers), om_entities (kinds, PUT
rules), om_http (plumbing, `serve`).
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from tests.support.fakes import om_catalog, om_lineage_api, om_quality, om_sessions, om_store
from tests.support.fakes.om_auth import (
    OMError,
    Principal,
    admin_principal,
    authorize,
    bot_principal,
)
from tests.support.fakes.om_entities import (
    BY_ENTITY,
    KINDS,
)
from tests.support.fakes.om_http import REASONS, Call, compact, serve
from tests.support.fakes.om_rules import Schemas

__all__ = ["FakeOpenMetadata", "OMError", "Principal", "Request", "serve"]


#: An answer: status, JSON body (None: no body), extra headers.
Answer = tuple[int, Any, list[tuple[str, str]]]
#: What an SSO login page or a proxy's error page looks like (never OM's: OM answers JSON).
PROXY_PAGE = b"<!doctype html><html><body>Sign in to continue</body></html>"
TOO_LARGE_PAGE = b"<html><head><title>413 Request Entity Too Large</title></head></html>"


@dataclass(frozen=True)
class ProxyAnswer:
    """An answer from in front of OM (answer_next, limit_body): raw bytes, any media type."""

    path_prefix: str
    status: int
    body: bytes
    content_type: str
    headers: tuple[tuple[str, str], ...]


@dataclass
class Request:
    """One request as the stand-in saw it; `violation` names the rule that refused it."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 0
    principal: str | None = None
    violation: str | None = None
    violation_detail: str | None = None
    warning: str | None = None  # what OM would log and ignore (D13)


def _default_settings() -> dict[str, Any]:
    return {
        "enabled": True,
        "autoCreateEntities": True,
        "defaultPipelineService": "openlineage",
        "namespaceToServiceMapping": {},
    }


@dataclass
class FakeOpenMetadata:
    """OM 1.12.x or 2.0.x as seen through its REST API."""

    version: str = "2.0"
    principals: dict[str, Principal] = field(default_factory=dict)  # token -> principal
    passwords: dict[str, str] = field(default_factory=dict)  # email -> plain password
    admins: set[str] = field(default_factory=set)  # emails whose login session is admin
    users: dict[str, Principal] = field(default_factory=dict)  # email -> user (roles)
    oauth_clients: dict[str, str] = field(default_factory=dict)  # client_id -> secret (an IdP)
    settings: dict[str, Any] = field(default_factory=_default_settings)
    other_settings: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "lineageSettings": {"upstreamDepth": 2, "downstreamDepth": 2},
        }
    )
    entities: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {k.entity: {} for k in KINDS.values()}
    )
    edges: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    audit: list[tuple[str, str, str, str]] = field(default_factory=list)
    test_case_results: list[dict[str, Any]] = field(default_factory=list)
    faults: list[tuple[int, str, str]] = field(default_factory=list)  # status, prefix, method
    proxy_answers: list[ProxyAnswer] = field(default_factory=list)  # answer_next
    body_limit: int | None = None  # limit_body: a proxy's client_max_body_size
    validate_schemas: bool = True
    holds: list[tuple[str, threading.Event, threading.Event]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _schemas: Schemas | None = None
    # set by fail_events, reject_events and fail_edges
    event_failure: Callable[[dict[str, Any]], str | None] | None = None
    event_rejects: Callable[[dict[str, Any]], bool] | None = None
    edge_failure: Callable[[str, str], bool] | None = None

    def __post_init__(self) -> None:
        if self.version not in ("2.0", "1.12"):
            raise ValueError(f"version must be '2.0' or '1.12', not {self.version!r}")
        self._schemas = Schemas(self.version)
        om_catalog.seed_defaults(self)

    # -- scripting --------------------------------------------------------------------------

    @classmethod
    def with_bot(cls, token: str = "bot-jwt", **kwargs: Any) -> FakeOpenMetadata:
        """A stand-in whose `token` is ingestion-bot's (IngestionBotRole + LineageBotRole)."""
        fake = cls(**kwargs)
        fake.add_token(token, bot_principal())
        return fake

    @classmethod
    def with_admin(cls, token: str = "admin-jwt", **kwargs: Any) -> FakeOpenMetadata:
        """A stand-in whose `token` is the admin's."""
        fake = cls(**kwargs)
        fake.add_token(token, admin_principal())
        return fake

    def add_token(self, token: str, principal: Principal) -> None:
        self.principals[token] = principal
        om_catalog.add_person(self, principal.name, bot=principal.bot)  # D1: one per principal

    def add_user(
        self,
        email: str,
        password: str,
        *,
        roles: frozenset[str] = frozenset({"DataConsumer"}),
        admin: bool = False,
    ) -> Principal:
        """A user who logs in with /users/login (a person: not a bot)."""
        user = Principal(email.split("@", maxsplit=1)[0], roles=roles, admin=admin, bot=False)
        self.passwords[email], self.users[email] = password, user
        om_catalog.add_person(self, user.name, email)
        if admin:
            self.admins.add(email)
        return user

    def fail_next(self, statuses: Iterable[int], path_prefix: str = "", method: str = "") -> None:
        """Answer the next matching requests (any method unless given) with these statuses
        (e.g. [503, 503])."""
        self.faults.extend((s, path_prefix, method) for s in statuses)

    def answer_html_next(self, path_prefix: str, times: int = 1) -> None:
        """The next matching requests get what a proxy or an SSO login page answers instead of
        OM: 200, text/html (not OM's behaviour: the world's in front of it)."""
        self.answer_next(path_prefix, times=times)

    def answer_next(
        self,
        path_prefix: str,
        *,
        status: int = 200,
        body: bytes = PROXY_PAGE,
        content_type: str = "text/html; charset=utf-8",
        headers: Iterable[tuple[str, str]] = (),
        times: int = 1,
    ) -> None:
        """The next matching requests get this answer from something in front of OM (a proxy,
        a gateway, an SSO page), never reaching OM: no rule of OM's applies to them."""
        answer = ProxyAnswer(path_prefix, status, body, content_type, tuple(headers))
        self.proxy_answers.extend([answer] * times)

    def rate_limit_next(self, path_prefix: str, retry_after: str | None, times: int = 1) -> None:
        """A gateway's 429 Too Many Requests (OM has no rate limit of its own), with Retry-After
        (delta-seconds or an HTTP date) unless None."""
        self.answer_next(
            path_prefix,
            status=429,
            body=b'{"message":"Too Many Requests"}',
            content_type="application/json",
            headers=[("Retry-After", retry_after)] if retry_after is not None else [],
            times=times,
        )

    def limit_body(self, max_bytes: int | None) -> None:
        """A proxy's body size limit (nginx `client_max_body_size`): a request whose body is
        longer gets the proxy's 413 page and never reaches OM (None: no limit)."""
        self.body_limit = max_bytes

    def hold(self, path_prefix: str) -> tuple[threading.Event, threading.Event]:
        """Stall the next matching request: `arrived` is set when it comes, it waits for `release`."""
        arrived, release = threading.Event(), threading.Event()
        self.holds.append((path_prefix, arrived, release))
        return arrived, release

    def fail_events(self, reason: Callable[[dict[str, Any]], str | None] | None) -> None:
        """OM's mapper throws for events where `reason(event)` is a string (None: no more)."""
        self.event_failure = reason

    def reject_events(self, rejects: Callable[[dict[str, Any]], bool] | None) -> None:
        """Bean validation refuses events where `rejects(event)`: 400 for the whole request.

        Stands for a field OM's Java model refuses that the JSON schemas allow (ref §1.3).
        """
        self.event_rejects = rejects

    def fail_edges(self, fails: Callable[[str, str], bool] | None) -> None:
        """`addLineage` throws for (from FQN, to FQN) pairs where `fails` is true (ref §1.5)."""
        self.edge_failure = fails

    def seed(
        self, kind: str, body: dict[str, Any], fqn: str | None = None, *, check: bool = True
    ) -> dict[str, Any]:
        """Create an entity directly, as OM's own connectors would have ingested it."""
        spec = BY_ENTITY[kind]
        if check:
            om_store.check_entity(self, spec, body)
        return om_store.create(self, spec, body, Principal("ingestion"), fqn=fqn)

    def seed_table(
        self, fqn: str, service_type: str, table: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`service.database.schema.table` as a connector ingested it: each parent seeded when
        missing, then the table (`table` holds its other fields: columns, description, ...)."""
        service, database, schema, name = fqn.split(".")
        parents = (
            ("databaseService", {"name": service, "serviceType": service_type}, service),
            ("database", {"name": database, "service": service}, f"{service}.{database}"),
            (
                "databaseSchema",
                {"name": schema, "database": f"{service}.{database}"},
                f"{service}.{database}.{schema}",
            ),
        )
        for kind, body, parent_fqn in parents:
            if self.entity(kind, parent_fqn) is None:
                self.seed(kind, body)
        body = {"name": name, "databaseSchema": f"{service}.{database}.{schema}", **(table or {})}
        return self.seed("table", body)

    def add_person(self, name: str, email: str | None = None) -> dict[str, Any]:
        """A user who can own entities (D1)."""
        return om_catalog.add_person(self, name, email, bot=False)

    def add_team(
        self, name: str, *, team_type: str = "Group", email: str | None = None
    ) -> dict[str, Any]:
        """A team (D1); only `Group` teams may own entities."""
        return om_catalog.add_team(self, name, team_type=team_type, email=email)

    def add_glossary_term(self, fqn: str) -> dict[str, Any]:
        return om_catalog.add_glossary_term(self, fqn)

    def entity(self, kind: str, fqn: str) -> dict[str, Any] | None:
        return self.entities[kind].get(fqn)

    def by_id(self, kind: str, entity_id: str) -> dict[str, Any] | None:
        return next((e for e in self.entities.get(kind, {}).values() if e["id"] == entity_id), None)

    def results_of(self, case_fqn: str) -> list[dict[str, Any]]:
        """The results a test case holds, oldest first."""
        found = [r for r in self.test_case_results if r["testCaseFQN"] == case_fqn]
        return sorted(found, key=lambda r: r["timestamp"])

    def dump(self) -> dict[str, Any]:
        """Everything the stand-in holds (D14), as JSON."""
        return copy.deepcopy(
            {
                "entities": self.entities,
                "edges": [
                    {"fromEntity": a, "toEntity": b, "lineageDetails": d}
                    for (a, b), d in self.edges.items()
                ],
                "audit": [list(entry) for entry in self.audit],
                "testCaseResults": self.test_case_results,
            }
        )

    def count(self, method: str | None = None, prefix: str = "") -> int:
        return sum(
            1
            for r in self.requests
            if (method is None or r.method == method) and r.path.startswith(prefix)
        )

    # -- WSGI -------------------------------------------------------------------------------

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterator[bytes]:
        method = environ["REQUEST_METHOD"]
        path = unquote(environ.get("PATH_INFO", ""))
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        request = Request(method, path, query, None)
        held = next((h for h in self.holds if path.startswith(h[0])), None)
        if held is not None:
            self.holds.remove(held)
            held[1].set()
            held[2].wait(timeout=60)  # bounded: a test that forgets to release still ends
        headers = [("Content-Type", "application/json")]
        with self._lock:
            self.requests.append(request)
            call = Call(environ, request, raw)
            proxied = self._proxy(path, raw)
            if proxied is not None:
                request.status, request.violation = proxied.status, "proxy"
                start_response(
                    f"{proxied.status} {REASONS.get(proxied.status, 'Status')}",
                    [("Content-Type", proxied.content_type), *proxied.headers],
                )
                return iter([proxied.body])
            try:
                fault = next(
                    (f for f in self.faults if path.startswith(f[1]) and f[2] in ("", method)),
                    None,
                )
                if fault is not None:
                    self.faults.remove(fault)
                    raise OMError(fault[0], f"injected fault {fault[0]}", rule="fault")  # noqa: TRY301 - answered below like every OM error
                status, body, extra_headers = self._route(call)
                headers += extra_headers
            except OMError as e:
                status, body = e.status, e.body
                request.violation, request.violation_detail = e.rule, e.detail or e.message
                if status in (401, 403, 404, 409):
                    headers.append(("WWW-Authenticate", "om-auth"))
            request.status = status
        payload = b"" if body is None else json.dumps(compact(body)).encode()
        start_response(f"{status} {REASONS.get(status, 'Status')}", headers)
        return iter([payload])

    def _proxy(self, path: str, raw: bytes) -> ProxyAnswer | None:
        """What the world in front of OM answers instead of OM, if anything (under the lock)."""
        if self.body_limit is not None and len(raw) > self.body_limit:
            return ProxyAnswer(path, 413, TOO_LARGE_PAGE, "text/html", ())
        answer = next((a for a in self.proxy_answers if path.startswith(a.path_prefix)), None)
        if answer is not None:
            self.proxy_answers.remove(answer)
        return answer

    # -- routing ----------------------------------------------------------------------------

    def _route(self, call: Call) -> Answer:
        method, rest = call.request.method, call.request.path
        if rest == "/oauth/token" and method == "POST":  # plays the SSO provider
            return 200, om_sessions.oauth(self, call), []
        if not rest.startswith("/api/v1/"):
            raise OMError(404, "HTTP 404 Not Found", rule="not-found")
        rest = rest[len("/api/v1/") :]
        call.media_type("application/json-patch+json" if method == "PATCH" else "application/json")
        if rest == "users/login" and method == "POST":
            return 200, om_sessions.login(self, call), []
        principal = om_sessions.authenticate(
            self, call
        )  # (2) the JWT filter: before the body is read
        call.request.principal = principal.name
        if rest in ("openlineage/lineage", "openlineage/lineage/batch") and method == "POST":
            return om_lineage_api.openlineage(self, call, principal, batch=rest.endswith("/batch"))
        if rest == "system/settings" or rest.startswith("system/settings/"):
            return om_sessions.settings(self, call, principal, rest[len("system/settings/") :])
        if rest == "lineage" and method == "PUT":
            return om_lineage_api.add_lineage(self, call, principal)
        if rest.startswith("lineage/getLineageEdge/") and method == "GET":
            ids = rest[len("lineage/getLineageEdge/") :].split("/")
            return 200, om_lineage_api.lineage_edge(self, principal, *ids[:2]), []
        if rest.startswith("lineage/table/name/") and method == "GET":
            fqn = rest[len("lineage/table/name/") :]
            return 200, om_lineage_api.read_lineage(self, principal, fqn, call.request.query), []
        for handler in (om_catalog.route, om_quality.route):
            answer = handler(self, call, principal)
            if answer is not None:
                return answer
        for collection, kind in KINDS.items():
            if rest == collection and method == "GET":
                authorize(principal, ["ViewAll"], kind.entity)
                return 200, om_store.list_page(self, kind, call.request.query), []
            if rest == collection and method in ("POST", "PUT"):
                return om_store.write(self, call, kind, principal)
            if rest.startswith(collection + "/") and method == "GET":
                key = rest[len(collection) + 1 :]
                authorize(principal, ["ViewAll"], kind.entity)
                if key.startswith("name/"):
                    found = self.entities[kind.entity].get(key[len("name/") :])
                else:
                    found = next(
                        (e for e in self.entities[kind.entity].values() if e["id"] == key), None
                    )
                if found is None:
                    name = key[len("name/") :] if key.startswith("name/") else key
                    raise OMError(
                        404, f"{kind.entity} instance for {name} not found", rule="not-found"
                    )
                return 200, om_store.view(self, kind, found, call.request.query), []
        raise OMError(404, "HTTP 404 Not Found", rule="not-found")

    # -- what the endpoint modules share (om_store, om_sessions, om_lineage_api, om_catalog,
    # om_quality) --------------------------------------------------------------------------

    def check_body(self, relative: str | None, body: Any) -> None:
        """OM's bean validation of `body` against its schema `relative` (400s; om_rules)."""
        if self.validate_schemas:
            self.schemas().check(relative, body)

    def schemas(self) -> Schemas:
        assert self._schemas is not None
        return self._schemas

    #: POST or PUT of a checked entity, for om_catalog and om_quality (om_store.store)
    store = om_store.store

    def create_entity(
        self, kind: str, body: dict[str, Any], principal: Principal, *, fqn: str
    ) -> dict[str, Any]:
        return om_store.create(self, BY_ENTITY[kind], body, principal, fqn=fqn)


def transport_env(url: str, project: Path) -> dict[str, str]:
    """The variables that send a project's events to the stand-in at `url` as the scoped bot
    (its JWT in `project`/token, written here)."""
    (project / "token").write_text("bot-jwt\n")
    return {
        "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
        "OPENLINEAGE__TRANSPORT__URL": url,
        "OPENLINEAGE__TRANSPORT__JWT_TOKEN_FILE": str(project / "token"),
    }
