"""A loopback stand-in for OpenMetadata (OM) 1.12.x or 2.0.x, as strict as OM itself.

The reference is ../shared/ref/openmetadata-api.md ("ref §n" below); numbers like (11) refer to
its "Behaviours a faithful stand-in must have" checklist. A WSGI app: use it in-process through
`httpx2.WSGITransport(app=fake)`, or on 127.0.0.1 with `serve()`.

What it enforces:

- Auth (ref §4): 401 bodies of the JWT filter; per-token principals with OM's roles
  (IngestionBotRole, LineageBotRole, DataSteward, DataConsumer, admin); every endpoint checks
  what OM checks, with OM's 403 texts: GETs need ViewAll, POST needs Create, PUT needs Create
  (new) or EditAll (existing), the OpenLineage endpoints EditLineage, settings are admin-only
  except `lineageSettings` (ref §2.9). `WWW-Authenticate: om-auth` on 401/403/404/409.
- Bodies (ref §1.3, om_rules.py): malformed JSON, binding errors and bean validation answer OM's
  three 400 shapes, using OM's schemas in ../shared/om-schemas (skipped with a warning when that
  folder is absent); unknown properties are accepted; `eventTime` is parsed per version (ref
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
`fail_next` (statuses), `hold` (stall a request), `fail_events` / `fail_edges` (make OM's mapper
or an edge write throw), `seed`. State: `entities`, `edges`, `settings`, `requests` (each with
`status`, `principal`, `violation` = the rule that refused it), `audit` ((principal, method,
FQN, created|updated|unchanged|conflict|denied|dataModel) per write; PATCH and `auto` (the
basic suite OM makes) as their method), `test_case_results`; `dump()` gives all of it (D14).

Modules: om_auth (principals, roles, 403s), om_rules (bodies, 400s), om_lineage (resolver,
mapper, answers), om_entities (kinds, PUT rules), om_http (plumbing, `serve`).
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from tests.fakes import om_catalog, om_quality
from tests.fakes.om_auth import (
    OMError,
    Principal,
    admin_principal,
    authorize,
    authorize_admin,
    bot_principal,
)
from tests.fakes.om_entities import (
    BY_ENTITY,
    KINDS,
    TABLE_FIELDS,
    Kind,
    content,
    keep_column_descriptions,
    table_ref,
)
from tests.fakes.om_http import REASONS, Call, compact, json_patch, serve
from tests.fakes.om_lineage import (
    Mapper,
    MapperError,
    batch_response,
    server_filter,
    single_response,
)
from tests.fakes.om_rules import (
    SCHEMAS,
    Schemas,
    check_columns,
    check_openlineage,
    quote,
    stored_columns,
)

__all__ = ["SCHEMAS", "FakeOpenMetadata", "OMError", "Principal", "Request", "serve"]


#: An answer: status, JSON body (None: no body), extra headers.
Answer = tuple[int, Any, list[tuple[str, str]]]


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
    faults: list[tuple[int, str]] = field(default_factory=list)
    validate_schemas: bool = True
    schemas_dir: Path = SCHEMAS
    holds: list[tuple[str, threading.Event, threading.Event]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _schemas: Schemas | None = None
    _fail_events: Callable[[dict[str, Any]], str | None] | None = None
    _fail_edges: Callable[[str, str], bool] | None = None

    def __post_init__(self) -> None:
        if self.version not in ("2.0", "1.12"):
            raise ValueError(f"version must be '2.0' or '1.12', not {self.version!r}")
        self._schemas = Schemas(self.schemas_dir, self.version)
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

    def fail_next(self, statuses: Iterable[int], path_prefix: str = "") -> None:
        """Answer the next matching requests with these statuses (e.g. [503, 503])."""
        self.faults.extend((s, path_prefix) for s in statuses)

    def hold(self, path_prefix: str) -> tuple[threading.Event, threading.Event]:
        """Stall the next matching request: `arrived` is set when it comes, it waits for `release`."""
        arrived, release = threading.Event(), threading.Event()
        self.holds.append((path_prefix, arrived, release))
        return arrived, release

    def fail_events(self, reason: Callable[[dict[str, Any]], str | None] | None) -> None:
        """OM's mapper throws for events where `reason(event)` is a string (None: no more)."""
        self._fail_events = reason

    def reject_events(self, rejects: Callable[[dict[str, Any]], bool] | None) -> None:
        """Bean validation refuses events where `rejects(event)`: 400 for the whole request.

        Stands for a field OM's Java model refuses that the JSON schemas allow (ref §1.3).
        """
        self._reject_events = rejects

    def fail_edges(self, fails: Callable[[str, str], bool] | None) -> None:
        """`addLineage` throws for (from FQN, to FQN) pairs where `fails` is true (ref §1.5)."""
        self._fail_edges = fails

    def seed(
        self, kind: str, body: dict[str, Any], fqn: str | None = None, *, check: bool = True
    ) -> dict[str, Any]:
        """Create an entity directly, as OM's own connectors would have ingested it."""
        spec = BY_ENTITY[kind]
        if check:
            self._check_entity(spec, body)
        return self._create(spec, body, Principal("ingestion"), fqn=fqn)

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
        return self._by_id(kind, entity_id)

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
            try:
                fault = next((f for f in self.faults if path.startswith(f[1])), None)
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

    # -- routing ----------------------------------------------------------------------------

    def _route(self, call: Call) -> Answer:
        method, rest = call.request.method, call.request.path
        if rest == "/oauth/token" and method == "POST":  # plays the SSO provider
            return 200, self._oauth(call), []
        if not rest.startswith("/api/v1/"):
            raise OMError(404, "HTTP 404 Not Found", rule="not-found")
        rest = rest[len("/api/v1/") :]
        call.media_type("application/json-patch+json" if method == "PATCH" else "application/json")
        if rest == "users/login" and method == "POST":
            return 200, self._login(call), []
        principal = self._authenticate(call)  # (2) the JWT filter: before the body is read
        call.request.principal = principal.name
        if rest in ("openlineage/lineage", "openlineage/lineage/batch") and method == "POST":
            return self._openlineage(call, principal, batch=rest.endswith("/batch"))
        if rest == "system/settings" or rest.startswith("system/settings/"):
            return self._settings(call, principal, rest[len("system/settings/") :])
        if rest == "lineage" and method == "PUT":
            return self._add_lineage(call, principal)
        if rest.startswith("lineage/getLineageEdge/") and method == "GET":
            ids = rest[len("lineage/getLineageEdge/") :].split("/")
            return 200, self._lineage_edge(principal, *ids[:2]), []
        if rest.startswith("lineage/table/name/") and method == "GET":
            fqn = rest[len("lineage/table/name/") :]
            return 200, self._read_lineage(principal, fqn, call.request.query), []
        for handler in (om_catalog.route, om_quality.route):
            answer = handler(self, call, principal)
            if answer is not None:
                return answer
        for collection, kind in KINDS.items():
            if rest == collection and method == "GET":
                authorize(principal, ["ViewAll"], kind.entity)
                return 200, self._list(kind, call.request.query), []
            if rest == collection and method in ("POST", "PUT"):
                return self._write(call, kind, principal)
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
                return 200, self._view(kind, found, call.request.query), []
        raise OMError(404, "HTTP 404 Not Found", rule="not-found")

    # -- auth (2, 3, 4; ref §4) -------------------------------------------------------------

    def _authenticate(self, call: Call) -> Principal:
        header = call.environ.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "):
            raise OMError(401, "Not Authorized! Token not present", rule="unauthenticated")
        principal = self.principals.get(header[len("Bearer ") :])
        if principal is None:
            raise OMError(
                401, "Not Authorized! Unable to decode the token.", rule="unauthenticated"
            )
        if principal.expired:
            raise OMError(401, "Expired token!", rule="unauthenticated")
        return principal

    def _login(self, call: Call) -> dict[str, Any]:
        body = call.json()
        self._check_body("auth/loginRequest.json", body)
        if not isinstance(body, dict):
            raise OMError(400, "Invalid request format", rule="format", detail="not an object")
        email, password = str(body.get("email")), body.get("password", "")
        try:
            plain = base64.b64decode(password, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as e:
            raise OMError(400, "Password needs to be encoded in Base-64.", rule="password") from e
        if self.passwords.get(email) != plain:
            raise OMError(
                401, "You have entered an invalid username or password.", rule="unauthenticated"
            )
        user = self.users.get(email) or Principal(
            email.split("@", maxsplit=1)[0], roles=frozenset({"DataConsumer"}), bot=False
        )
        if email in self.admins and not user.admin:
            user = dataclasses.replace(user, admin=True)
        token = f"session-{uuid.uuid4()}"
        self.principals[token] = user
        return {
            "tokenType": "Bearer",
            "accessToken": token,
            "refreshToken": f"refresh-{uuid.uuid4()}",
            "expiryDuration": 3600,
        }

    def _oauth(self, call: Call) -> dict[str, Any]:
        form = {k: v[0] for k, v in parse_qs(call.raw.decode()).items()}
        if self.oauth_clients.get(form.get("client_id", "")) != form.get("client_secret"):
            raise OMError(401, "invalid_client", rule="unauthenticated")
        token = f"oauth-{uuid.uuid4()}"
        self.principals[token] = bot_principal(form["client_id"])
        return {"access_token": token, "token_type": "Bearer", "expires_in": 3600}

    # -- settings (24; ref §2.9) ------------------------------------------------------------

    def _settings(self, call: Call, principal: Principal, name: str) -> Answer:
        method = call.request.method
        if name and method == "GET":
            if name != "lineageSettings":  # getSettingByName: authorizeAdmin for all but this
                authorize_admin(principal)
            return 200, {"config_type": name, "config_value": self._setting(name)}, []
        if not name and method == "PUT":
            body = call.json()
            if not isinstance(body, dict) or not isinstance(body.get("config_value"), dict):
                raise OMError(400, "Invalid request format", rule="format", detail="settings")
            authorize_admin(principal)
            self._store_setting(str(body.get("config_type")), body["config_value"])
            return 200, body, []
        if name and method == "PATCH":
            ops = call.json()
            if not isinstance(ops, list):
                raise OMError(400, "Invalid request format", rule="format", detail="JSON Patch")
            authorize_admin(principal)
            value = json_patch(copy.deepcopy(self._setting(name)), ops)
            self._store_setting(name, value)
            return 200, {"config_type": name, "config_value": self._setting(name)}, []
        raise OMError(404, "HTTP 404 Not Found", rule="not-found")

    def _setting(self, name: str) -> dict[str, Any]:
        if name == "openLineageSettings":
            return self.settings
        if name not in self.other_settings:
            raise OMError(404, f"Setting {name} not found", rule="not-found")  # text: ours
        return self.other_settings[name]

    def _store_setting(self, name: str, value: dict[str, Any]) -> None:
        if name == "openLineageSettings":
            self._check_body("configuration/openLineageSettings.json", value)
            self.settings.clear()  # in place: tests hold a reference to `settings`
            self.settings.update(copy.deepcopy(value))
        else:
            self.other_settings[name] = copy.deepcopy(value)

    # -- OpenLineage (11-21; ref §1, §2) ----------------------------------------------------

    def _openlineage(self, call: Call, principal: Principal, *, batch: bool) -> Answer:
        body = call.json()  # (1) 401 came first; now the body: 400
        if self.validate_schemas:
            events = check_openlineage(self._schemas_or_fail(), body, batch=batch)
        else:
            given = (body.get("events") if batch else [body]) if isinstance(body, dict) else None
            events = list(given or [])  # no checks at all (benchmarks)
            if not events:
                raise OMError(400, "[query param events must not be null]", rule="required")
        rejects = getattr(self, "_reject_events", None)
        if rejects is not None and any(isinstance(e, dict) and rejects(e) for e in events):
            raise OMError(400, "Invalid request format", rule="format", detail="rejected event")
        authorize(principal, ["EditLineage"], "table")  # then the handler: 403
        if self.settings.get("enabled", True) is not True:  # then the settings: 503
            raise OMError(
                503,
                "OpenLineage API is disabled",
                rule="disabled",
                body={
                    "status": "failure",
                    "message": "OpenLineage API is disabled",
                    "lineageEdgesCreated": 0,
                },
            )
        mapper = Mapper(
            version=self.version,
            settings=self.settings,
            entities=self.entities,
            principal=principal.name,
            write=self._write_edge,
            fail=self._fail_events,
        )
        if not batch:
            try:
                edges = mapper.apply(events[0])
            except MapperError as e:
                message = f"Error processing event: {e}"
                raise OMError(
                    500,
                    message,
                    rule="mapper",
                    body={"status": "failure", "message": message, "lineageEdgesCreated": 0},
                ) from e
            return 200, single_response(edges), []
        successful = skipped = created = 0
        failures = []
        for index, event in enumerate(events):
            try:
                written = mapper.apply(event)
            except MapperError as e:
                failures.append({"index": index, "reason": str(e), "retriable": False})
                continue
            if written:
                successful, created = successful + 1, created + written
            else:
                skipped += 1
        return 200, batch_response(len(events), successful, skipped, created, failures), []

    def _write_edge(
        self, src: dict[str, Any], dst: dict[str, Any], details: dict[str, Any]
    ) -> None:
        if self._fail_edges and self._fail_edges(
            src["fullyQualifiedName"], dst["fullyQualifiedName"]
        ):
            raise RuntimeError("addLineage failed (scripted)")
        self.edges[(src["id"], dst["id"])] = details  # (21) upsert: the whole details replaced

    def _add_lineage(self, call: Call, principal: Principal) -> Answer:
        """PUT /api/v1/lineage (ref §3.5): entity ids, EditLineage on both ends, 200 no body."""
        body = call.json()
        self._check_body("api/lineage/addLineage.json", body)
        edge = body["edge"]
        ends = []
        for end in (edge["fromEntity"], edge["toEntity"]):
            kind, found = end["type"], self._by_id(end["type"], end["id"])
            if found is None:
                raise OMError(404, f"{kind} instance for {end['id']} not found", rule="not-found")
            ends.append((kind, found))
        for kind, _ in ends:
            authorize(principal, ["EditLineage"], kind)
        details = copy.deepcopy(edge.get("lineageDetails") or {})
        pipeline = details.get("pipeline")
        if pipeline and self._by_id(pipeline.get("type", "pipeline"), pipeline["id"]) is None:
            raise OMError(
                404, f"pipeline instance for {pipeline['id']} not found", rule="not-found"
            )
        (src_kind, src), (dst_kind, dst) = ends
        if src_kind == dst_kind == "table" and details.get("columnsLineage"):
            details["columnsLineage"] = server_filter(details["columnsLineage"], src, dst) or None
        now = int(time.time() * 1000)
        details.setdefault("source", "Manual")
        details.update(
            createdAt=now, createdBy=principal.name, updatedAt=now, updatedBy=principal.name
        )
        details.setdefault("columnsLineage", None)
        details.setdefault("pipeline", None)
        self._write_edge(src, dst, details)
        return 200, None, []

    def _by_id(self, kind: str, entity_id: str) -> dict[str, Any] | None:
        return next((e for e in self.entities.get(kind, {}).values() if e["id"] == entity_id), None)

    def _lineage_edge(
        self, principal: Principal, from_id: str = "", to_id: str = ""
    ) -> dict[str, Any]:
        authorize(principal, ["ViewAll"], "table")
        details = self.edges.get((from_id, to_id))
        if details is None:
            raise OMError(
                404, f"Lineage edge not found between {from_id} and {to_id}", rule="not-found"
            )
        return {"edge": details}

    def _read_lineage(
        self, principal: Principal, fqn: str, query: dict[str, str]
    ) -> dict[str, Any]:
        authorize(principal, ["ViewAll"], "table")
        table = self.entities["table"].get(fqn)
        if table is None:
            raise OMError(404, f"table instance for {fqn} not found", rule="not-found")
        by_id = {t["id"]: t for t in self.entities["table"].values()}
        nodes: dict[str, dict[str, Any]] = {}

        def walk(depth: int, upstream: bool) -> list[dict[str, Any]]:
            found, frontier, seen = [], {table["id"]}, set()
            for _ in range(depth):
                nxt = set()
                for (src, dst), details in self.edges.items():
                    near, far = (dst, src) if upstream else (src, dst)
                    if near in frontier and (src, dst) not in seen and far in by_id:
                        seen.add((src, dst))
                        found.append(
                            {"fromEntity": src, "toEntity": dst, "lineageDetails": details}
                        )
                        nodes[far] = by_id[far]
                        nxt.add(far)
                frontier = nxt
            return found

        up = walk(int(query.get("upstreamDepth", 1)), upstream=True)
        down = walk(int(query.get("downstreamDepth", 1)), upstream=False)
        return {
            "entity": table_ref(table),
            "nodes": [table_ref(n) for n in nodes.values() if n["id"] != table["id"]],
            "upstreamEdges": up,
            "downstreamEdges": down,
        }

    # -- entities (5-10; ref §3) ------------------------------------------------------------

    def _write(self, call: Call, kind: Kind, principal: Principal) -> Answer:
        method = call.request.method
        body = call.json()
        self._check_entity(kind, body)  # 400 (bean validation, column rules) and parent 404
        fqn = self._fqn(kind, body)

        def rights(new: bool) -> None:
            authorize(principal, ["Create" if new else "EditAll"], kind.entity)

        return self.store(kind, method, body, principal, fqn=fqn, rights=rights)

    def store(
        self,
        kind: Kind,
        method: str,
        body: dict[str, Any],
        principal: Principal,
        *,
        fqn: str,
        rights: Callable[[bool], None],
    ) -> Answer:
        """POST (201, or 409) or PUT (201 or 200) an entity whose body was checked; `rights(new)`
        raises OM's 403 (new: a create)."""
        existing = self.entities[kind.entity].get(fqn)
        try:
            rights(existing is None or method == "POST")
        except OMError:
            self.audit.append((principal.name, method, fqn, "denied"))
            raise
        if existing is None:
            created = self._create(kind, body, principal, fqn=fqn)
            self.audit.append((principal.name, method, fqn, "created"))
            headers = [("Location", f"/api/v1/{kind.collection}/{created['id']}")]
            if method == "PUT":
                headers.append(("X-OpenMetadata-Change", "entityCreated"))
            return 201, created, headers
        if method == "POST":
            self.audit.append((principal.name, method, fqn, "conflict"))
            raise OMError(409, "Entity already exists", rule="conflict")
        updated = self._update(kind, existing, body, principal)
        changed = updated is not existing
        self.audit.append((principal.name, method, fqn, "updated" if changed else "unchanged"))
        change = "entityUpdated" if changed else "entityNoChange"
        return 200, updated, [("X-OpenMetadata-Change", change)]

    def _check_entity(self, kind: Kind, body: Any) -> None:
        if not isinstance(body, dict):
            raise OMError(400, "Invalid request format", rule="format", detail="not an object")
        checked = body
        if self.version == "2.0" and body.get("tableType") == "SemanticView":
            checked = {k: v for k, v in body.items() if k != "tableType"}  # 2.0.7 enum value
        self._check_body(kind.schema, checked)
        if kind.entity == "table":
            if not isinstance(body.get("columns"), list):
                raise OMError(400, "[query param columns must not be null]", rule="required")
            check_columns(body["columns"])
            om_catalog.check_table_labels(self, body)  # D3

    def check_body(self, relative: str | None, body: Any) -> None:
        self._check_body(relative, body)

    def _check_body(self, relative: str | None, body: Any) -> None:
        if self.validate_schemas:
            self._schemas_or_fail().check(relative, body)

    def _schemas_or_fail(self) -> Schemas:
        assert self._schemas is not None
        return self._schemas

    def _create(
        self, kind: Kind, body: dict[str, Any], principal: Principal, fqn: str | None = None
    ) -> dict[str, Any]:
        fqn = fqn or self._fqn(kind, body)
        entity = {
            **copy.deepcopy(body),
            "id": str(uuid.uuid4()),
            "fullyQualifiedName": fqn,
            "version": 0.1,
            "updatedBy": principal.name,
            "updatedAt": int(time.time() * 1000),
            "deleted": False,
        }
        if kind.entity == "table":
            entity["columns"] = stored_columns(fqn, body["columns"])
        self.entities[kind.entity][fqn] = entity
        return entity

    def _update(
        self, kind: Kind, existing: dict[str, Any], body: dict[str, Any], principal: Principal
    ) -> dict[str, Any]:
        """The stored entity after a PUT; `existing` itself when nothing changed."""
        fqn = existing["fullyQualifiedName"]
        updated = {
            **existing,
            **copy.deepcopy(body),
            "id": existing["id"],
            "fullyQualifiedName": fqn,
        }
        if kind.entity == "table":
            updated["columns"] = stored_columns(fqn, body["columns"])  # replaced as sent
        if principal.bot:  # EntityRepository.updateDescription: a bot's PUT keeps non-empty ones
            if existing.get("description"):
                updated["description"] = existing["description"]
            if kind.entity == "table":
                keep_column_descriptions(existing.get("columns") or [], updated["columns"])
        if content(updated) == content(existing):
            return existing
        updated["version"] = round(float(existing.get("version", 0.1)) + 0.1, 1)
        updated["updatedBy"] = principal.name
        updated["updatedAt"] = int(time.time() * 1000)
        self.entities[kind.entity][fqn] = updated
        return updated

    def _fqn(self, kind: Kind, body: dict[str, Any]) -> str:
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise OMError(400, "[query param name must not be null]", rule="required")
        if '"' in name:
            raise OMError(400, f"Invalid name {name}", rule="name")
        if "::" in name:
            raise OMError(400, '[query param name must match "^((?!::).)*$"]', rule="pattern")
        if len(name) > 256:
            raise OMError(400, "[query param name size must be between 1 and 256]", rule="size")
        if kind.parent_field is None:
            return quote(name)
        parent_fqn = body.get(kind.parent_field)
        if not isinstance(parent_fqn, str):
            raise OMError(
                400, f"[query param {kind.parent_field} must not be null]", rule="required"
            )
        if parent_fqn not in self.entities[kind.parent_kind or ""]:
            raise OMError(
                404, f"{kind.parent_kind} instance for {parent_fqn} not found", rule="not-found"
            )
        parent = body.get("parent")
        if kind.entity == "container" and isinstance(parent, dict):
            match = self._by_id("container", str(parent.get("id")))
            if match is None:
                raise OMError(
                    404, f"container instance for {parent.get('id')} not found", rule="not-found"
                )
            return f"{match['fullyQualifiedName']}.{quote(name)}"
        return f"{parent_fqn}.{quote(name)}"

    def create_entity(
        self, kind: str, body: dict[str, Any], principal: Principal, *, fqn: str
    ) -> dict[str, Any]:
        return self._create(BY_ENTITY[kind], body, principal, fqn=fqn)

    def _view(self, kind: Kind, entity: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
        fields = [f.strip() for f in query.get("fields", "").split(",") if f.strip()]
        if kind.entity == "table":
            bad = next((f for f in fields if f not in TABLE_FIELDS), None)
            if bad is not None:
                raise OMError(400, f"Invalid field name {bad}", rule="fields")
            # OM sets a field only when asked for it: columns, tags (column tags too), owners...
            view = {k: v for k, v in entity.items() if k not in TABLE_FIELDS or k in fields}
            if "columns" in view and "tags" not in fields:
                view["columns"] = [
                    {k: v for k, v in c.items() if k != "tags"} for c in view["columns"]
                ]
            return view
        return entity

    def _list(self, kind: Kind, query: dict[str, str]) -> dict[str, Any]:
        items = sorted(self.entities[kind.entity].values(), key=lambda e: e["fullyQualifiedName"])
        if kind.parent_field and query.get(kind.parent_field):
            items = [e for e in items if e.get(kind.parent_field) == query[kind.parent_field]]
        limit = int(query.get("limit", "10"))
        start = int(query.get("after") or 0)
        page = items[start : start + limit]
        paging: dict[str, Any] = {"total": len(items)}
        if start + limit < len(items):
            paging["after"] = str(start + limit)
        return {"data": [self._view(kind, e, query) for e in page], "paging": paging}
