"""A loopback stand-in for OpenMetadata (OM), faithful to ../shared/ref/openmetadata-api.md.

A WSGI app: use it in-process through `httpx2.WSGITransport(app=fake)`, or serve it on
127.0.0.1 with `serve()`. It keeps entities by fully qualified name, records every request,
validates request bodies against OM's JSON schemas in ../shared/om-schemas (skipped, with a
notice, when that folder is absent), and can be scripted to fail. Numbers in comments refer to
the "Behaviours a faithful stand-in must have" checklist of the reference.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote
from wsgiref.simple_server import WSGIRequestHandler, make_server

SCHEMAS = Path(__file__).resolve().parents[3] / "shared" / "om-schemas"
DATA_TYPES = frozenset(
    [
        "NUMBER",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "BYTEINT",
        "BYTES",
        "FLOAT",
        "DOUBLE",
        "DECIMAL",
        "NUMERIC",
        "TIMESTAMP",
        "TIMESTAMPZ",
        "TIME",
        "DATE",
        "DATETIME",
        "INTERVAL",
        "STRING",
        "MEDIUMTEXT",
        "TEXT",
        "CHAR",
        "LONG",
        "VARCHAR",
        "BOOLEAN",
        "BINARY",
        "VARBINARY",
        "ARRAY",
        "BLOB",
        "LONGBLOB",
        "MEDIUMBLOB",
        "MAP",
        "STRUCT",
        "UNION",
        "SET",
        "GEOGRAPHY",
        "ENUM",
        "JSON",
        "UUID",
        "VARIANT",
        "GEOMETRY",
        "BYTEA",
        "AGGREGATEFUNCTION",
        "ERROR",
        "FIXED",
        "RECORD",
        "NULL",
        "SUPER",
        "HLLSKETCH",
        "PG_LSN",
        "PG_SNAPSHOT",
        "TSQUERY",
        "TXID_SNAPSHOT",
        "XML",
        "MACADDR",
        "TSVECTOR",
        "UNKNOWN",
        "CIDR",
        "INET",
        "CLOB",
        "ROWID",
        "LOWCARDINALITY",
        "YEAR",
        "POINT",
        "POLYGON",
        "TUPLE",
        "SPATIAL",
        "TABLE",
        "NTEXT",
        "IMAGE",
        "IPV4",
        "IPV6",
        "DATETIMERANGE",
        "HLL",
        "LARGEINT",
        "QUANTILE_STATE",
        "AGG_STATE",
        "BITMAP",
        "UINT",
        "BIT",
        "MONEY",
        "MEASURE",
        "KPI",
        "HEIRARCHY",
        "HIERARCHYID",
    ]
) | {"MEASURE HIDDEN", "MEASURE VISIBLE"}
STORAGE_PREFIXES = ("gs://", "s3://", "s3a://", "abfss://", "abfs://", "wasbs://", "adl://")
_Z_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
_ANY_ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$")


class OMError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


@dataclass(frozen=True)
class Kind:
    entity: str
    collection: str
    schema: str | None
    parent_field: str | None = None
    parent_kind: str | None = None


KINDS: dict[str, Kind] = {
    k.collection: k
    for k in (
        Kind(
            "databaseService",
            "services/databaseServices",
            "api/services/createDatabaseService.json",
        ),
        Kind("database", "databases", "api/data/createDatabase.json", "service", "databaseService"),
        Kind(
            "databaseSchema",
            "databaseSchemas",
            "api/data/createDatabaseSchema.json",
            "database",
            "database",
        ),
        Kind("table", "tables", "api/data/createTable.json", "databaseSchema", "databaseSchema"),
        Kind(
            "pipelineService",
            "services/pipelineServices",
            "api/services/createPipelineService.json",
        ),
        Kind("pipeline", "pipelines", "api/data/createPipeline.json", "service", "pipelineService"),
        Kind(
            "storageService", "services/storageServices", "api/services/createStorageService.json"
        ),
        Kind(
            "container", "containers", "api/data/createContainer.json", "service", "storageService"
        ),
    )
}
BY_ENTITY = {k.entity: k for k in KINDS.values()}


def quote(name: str) -> str:
    return f'"{name}"' if "." in name else name


@dataclass
class Principal:
    name: str
    permissions: frozenset[str] = frozenset({"Create", "EditLineage", "ViewAll"})
    admin: bool = False
    expired: bool = False


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 0


@dataclass
class FakeOpenMetadata:
    """OM 1.12.x or 2.0.x as seen through its REST API."""

    version: str = "2.0"
    principals: dict[str, Principal] = field(default_factory=dict)
    passwords: dict[str, str] = field(default_factory=dict)  # email -> plain password
    oauth_clients: dict[str, str] = field(default_factory=dict)  # client_id -> secret (an IdP)
    settings: dict[str, Any] = field(
        default_factory=lambda: {
            "enabled": True,
            "autoCreateEntities": True,
            "defaultPipelineService": "openlineage",
            "namespaceToServiceMapping": {},
        }
    )
    entities: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {k.entity: {} for k in KINDS.values()}
    )
    edges: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    faults: list[tuple[int, str]] = field(default_factory=list)
    validate_schemas: bool = True
    holds: list[tuple[str, threading.Event, threading.Event]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _validators: dict[str, Any] = field(default_factory=dict)

    # -- scripting --------------------------------------------------------------------------

    @classmethod
    def with_bot(cls, token: str = "bot-jwt", **kwargs: Any) -> FakeOpenMetadata:
        """A stand-in whose `token` belongs to an ingestion bot (Create + EditLineage)."""
        fake = cls(**kwargs)
        fake.add_token(token, Principal("ingestion-bot"))
        return fake

    def add_token(self, token: str, principal: Principal) -> None:
        self.principals[token] = principal

    def fail_next(self, statuses: Iterable[int], path_prefix: str = "") -> None:
        """Answer the next matching requests with these statuses (e.g. [503, 503])."""
        self.faults.extend((s, path_prefix) for s in statuses)

    def hold(self, path_prefix: str) -> tuple[threading.Event, threading.Event]:
        """Stall the next matching request: `arrived` is set when it comes, it waits for `release`."""
        arrived, release = threading.Event(), threading.Event()
        self.holds.append((path_prefix, arrived, release))
        return arrived, release

    def seed(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create an entity directly, as OM's own connectors would have ingested it."""
        return self._create(BY_ENTITY[kind], body, principal=Principal("ingestion"))

    def entity(self, kind: str, fqn: str) -> dict[str, Any] | None:
        return self.entities[kind].get(fqn)

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
        environ["fake.raw"] = raw
        held = next((h for h in self.holds if path.startswith(h[0])), None)
        if held is not None:
            self.holds.remove(held)
            held[1].set()
            held[2].wait(timeout=60)  # bounded: a test that forgets to release still ends
        headers = [("Content-Type", "application/json")]
        with self._lock:
            self.requests.append(request)
            try:
                fault = next((f for f in self.faults if path.startswith(f[1])), None)
                if fault is not None:
                    self.faults.remove(fault)
                    raise OMError(fault[0], f"injected fault {fault[0]}")
                form = environ.get("CONTENT_TYPE", "").startswith("application/x-www-form")
                try:
                    request.body = json.loads(raw) if raw and not form else None
                except json.JSONDecodeError as e:
                    raise OMError(400, "Unable to process JSON", details=str(e)) from e
                status, body, extra_headers = self._route(
                    environ, method, path, query, request.body
                )
                headers += extra_headers
            except OMError as e:
                status = e.status
                body = {"code": e.status, "message": e.message, **e.extra}
                if status in (401, 403, 404, 409):
                    headers.append(("WWW-Authenticate", "om-auth"))
            request.status = status
        payload = b"" if body is None else json.dumps(body).encode()
        start_response(f"{status} {_REASONS.get(status, 'Status')}", headers)
        return iter([payload])

    # -- routing ----------------------------------------------------------------------------

    def _route(
        self, environ: dict[str, Any], method: str, path: str, query: dict[str, str], body: Any
    ):
        if path == "/oauth/token" and method == "POST":  # plays the SSO provider
            return 200, self._oauth(environ), []
        if not path.startswith("/api/v1/"):
            raise OMError(404, "HTTP 404 Not Found")
        rest = path[len("/api/v1/") :]
        if rest == "users/login" and method == "POST":
            return 200, self._login(body), []
        principal = self._authenticate(environ)
        if rest == "system/settings/openLineageSettings" and method == "GET":
            return 200, {"config_type": "openLineageSettings", "config_value": self.settings}, []
        if rest == "system/settings" and method == "PUT":
            if not principal.admin:
                raise OMError(
                    403, f"Principal: CatalogPrincipal{{name='{principal.name}'}} is not admin"
                )
            self.settings = dict(body["config_value"])
            return 200, body, []
        if rest == "openlineage/lineage/batch" and method == "POST":
            return 200, self._batch(body, principal), []
        if rest.startswith("lineage/table/name/") and method == "GET":
            return 200, self._read_lineage(rest[len("lineage/table/name/") :], query), []
        for collection, kind in KINDS.items():
            if rest == collection:
                if method == "GET":
                    return 200, self._list(kind, query), []
                if method in ("POST", "PUT"):
                    self._need(principal, "Create")
                    self._validate(kind.schema, body)
                    return self._write(kind, body, principal, upsert=method == "PUT")
            if rest.startswith(collection + "/name/") and method == "GET":
                fqn = rest[len(collection) + len("/name/") :]
                found = self.entities[kind.entity].get(fqn)
                if found is None:
                    raise OMError(404, f"{kind.entity} instance for {fqn} not found")
                return 200, self._view(kind, found, query), []
        raise OMError(404, "HTTP 404 Not Found")

    # -- auth (2, 3, 4) ---------------------------------------------------------------------

    def _authenticate(self, environ: dict[str, Any]) -> Principal:
        header = environ.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "):
            raise OMError(401, "Not Authorized! Token not present")
        principal = self.principals.get(header[len("Bearer ") :])
        if principal is None:
            raise OMError(401, "Not Authorized! Unable to decode the token.")
        if principal.expired:
            raise OMError(401, "Expired token!")
        return principal

    def _need(self, principal: Principal, permission: str) -> None:
        if permission not in principal.permissions and not principal.admin:
            raise OMError(
                403,
                f"Principal: CatalogPrincipal{{name='{principal.name}'}} operations [{permission}] not allowed",
            )

    def _login(self, body: Any) -> dict[str, Any]:
        self._validate("auth/loginRequest.json", body)
        email, password = body.get("email"), body.get("password", "")
        try:
            plain = base64.b64decode(password, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError) as e:
            raise OMError(400, "Password needs to be encoded in Base-64.") from e
        if self.passwords.get(email) != plain:
            raise OMError(401, "You have entered an invalid username or password.")
        token = f"session-{uuid.uuid4()}"
        self.principals[token] = Principal(name=email.split("@")[0], admin=True)
        return {
            "tokenType": "Bearer",
            "accessToken": token,
            "refreshToken": "r",
            "expiryDuration": 3600,
        }

    def _oauth(self, environ: dict[str, Any]) -> dict[str, Any]:
        form = {k: v[0] for k, v in parse_qs(environ.get("fake.raw", b"").decode()).items()}
        if self.oauth_clients.get(form.get("client_id", "")) != form.get("client_secret"):
            raise OMError(401, "invalid_client")
        token = f"oauth-{uuid.uuid4()}"
        self.principals[token] = Principal(name=form["client_id"])
        return {"access_token": token, "token_type": "Bearer", "expires_in": 3600}

    # -- entities (5-10) --------------------------------------------------------------------

    def _write(self, kind: Kind, body: dict[str, Any], principal: Principal, *, upsert: bool):
        fqn = self._fqn(kind, body)
        existing = self.entities[kind.entity].get(fqn)
        if existing is not None:
            if not upsert:
                raise OMError(409, "Entity already exists")
            self._check(kind, body)
            updated = {**existing, **body, "id": existing["id"], "fullyQualifiedName": fqn}
            changed = updated != existing
            self.entities[kind.entity][fqn] = updated
            change = "entityUpdated" if changed else "entityNoChange"
            return 200, updated, [("X-OpenMetadata-Change", change)]
        created = self._create(kind, body, principal=principal)
        return (
            201,
            created,
            [
                ("X-OpenMetadata-Change", "entityCreated"),
                ("Location", f"/api/v1/{kind.collection}/{created['id']}"),
            ],
        )

    def _create(self, kind: Kind, body: dict[str, Any], *, principal: Principal) -> dict[str, Any]:
        self._check(kind, body)
        fqn = self._fqn(kind, body)
        entity = {
            **body,
            "id": str(uuid.uuid4()),
            "fullyQualifiedName": fqn,
            "updatedBy": principal.name,
        }
        self.entities[kind.entity][fqn] = entity
        return entity

    def _fqn(self, kind: Kind, body: dict[str, Any]) -> str:
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise OMError(400, "[query param name must not be null]")
        if '"' in name:
            raise OMError(400, f"Invalid name {name}")
        if "::" in name or len(name) > 256:
            raise OMError(400, '[query param name must match "^((?!::).)*$"]')
        if kind.parent_field is None:
            return quote(name)
        parent_fqn = body.get(kind.parent_field)
        if not isinstance(parent_fqn, str):
            raise OMError(400, f"[query param {kind.parent_field} must not be null]")
        if parent_fqn not in self.entities[kind.parent_kind or ""]:
            raise OMError(404, f"{kind.parent_kind} instance for {parent_fqn} not found")
        parent = body.get("parent")
        if kind.entity == "container" and isinstance(parent, dict):
            match = next(
                (c for c in self.entities["container"].values() if c["id"] == parent.get("id")),
                None,
            )
            if match is None:
                raise OMError(404, f"container instance for {parent.get('id')} not found")
            return f"{match['fullyQualifiedName']}.{quote(name)}"
        return f"{parent_fqn}.{quote(name)}"

    def _check(self, kind: Kind, body: dict[str, Any]) -> None:
        if kind.entity == "table":
            if not isinstance(body.get("columns"), list):
                raise OMError(400, "[query param columns must not be null]")
            _check_columns(body["columns"])

    def _view(self, kind: Kind, entity: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
        fields = set(filter(None, query.get("fields", "").split(",")))
        if kind.entity == "table" and "columns" not in fields:
            return {k: v for k, v in entity.items() if k != "columns"}
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

    # -- OpenLineage (11-21) ----------------------------------------------------------------

    def _batch(self, body: Any, principal: Principal) -> dict[str, Any]:
        self._validate("api/lineage/openlineage/openLineageBatchRequest.json", body)
        events = body.get("events") if isinstance(body, dict) else None
        if not events:
            raise OMError(400, "[query param events size must be between 1 and 2147483647]")
        for event in events:
            self._check_event(event)
        self._need(principal, "EditLineage")
        if not self.settings.get("enabled", True):
            raise OMError(
                503, "OpenLineage API is disabled", status="failure", lineageEdgesCreated=0
            )
        successful = failed = skipped = created = 0
        failures = []
        for index, event in enumerate(events):
            try:
                written = self._apply(event, principal)
            except Exception as e:  # noqa: BLE001 - OM turns mapper exceptions into failedEvents
                failed += 1
                failures.append({"index": index, "reason": str(e), "retriable": False})
                continue
            if written:
                successful += 1
                created += written
            else:
                skipped += 1
        status = "success"
        if failed and successful:
            status = "partial_success"
        elif failed == len(events):
            status = "failure"
        response: dict[str, Any] = {
            "status": status,
            "message": f"Processed {len(events)} events: {successful} successful, {failed} failed, "
            f"{skipped} skipped. Created {created} lineage edges.",
            "summary": {
                "received": len(events),
                "successful": successful,
                "failed": failed,
                "skipped": skipped,
            },
            "lineageEdgesCreated": created,
        }
        if failures:
            response["failedEvents"] = failures
        return response

    def _check_event(self, event: dict[str, Any]) -> None:
        time_ok = _Z_TIME if self.version.startswith("2") else _ANY_ISO
        if not isinstance(event.get("eventTime"), str) or not time_ok.match(event["eventTime"]):
            raise OMError(400, "Invalid request format")
        try:
            uuid.UUID(str(event.get("run", {}).get("runId")))
        except ValueError as e:
            raise OMError(400, "Invalid request format") from e

    def _apply(self, event: dict[str, Any], principal: Principal) -> int:
        allowed = set(self.settings.get("eventTypeFilter") or ["COMPLETE"])
        if event.get("eventType", "COMPLETE") not in allowed:
            return 0
        inputs = [(d, self._resolve(d)) for d in event.get("inputs") or []]
        outputs = [(d, self._resolve(d)) for d in event.get("outputs") or []]
        inputs = [(d, t) for d, t in inputs if t is not None]
        outputs = [(d, t) for d, t in outputs if t is not None]
        if not inputs or not outputs:
            return 0
        pipeline = self._pipeline(event)
        written = 0
        for out_ds, out_table in outputs:
            facet = (out_ds.get("outputFacets") or {}).get("columnLineage")
            if facet is None and not self.version.startswith("1.12"):
                facet = (out_ds.get("facets") or {}).get("columnLineage")
            for in_ds, in_table in inputs:
                columns = _column_lineage(facet, in_ds, in_table, out_table)
                self.edges[(in_table["id"], out_table["id"])] = {
                    "source": "OpenLineage",
                    "description": f"Lineage from OpenLineage event for job: {event['job']['namespace']}/"
                    f"{event['job']['name']} (run: {event['run']['runId']})",
                    "pipeline": {"id": pipeline["id"], "type": "pipeline"} if pipeline else None,
                    "sqlQuery": ((event["job"].get("facets") or {}).get("sql") or {}).get("query"),
                    "columnsLineage": columns or None,
                    "updatedBy": principal.name,
                }
                written += 1
        return written

    def _resolve(self, dataset: dict[str, Any]) -> dict[str, Any] | None:
        namespace, name = dataset.get("namespace", ""), dataset.get("name", "")
        if namespace.lower().startswith(STORAGE_PREFIXES):
            return None  # containers: never tables; never created
        parts = name.split(".")
        if len(parts) < 2:
            return None
        if self.version.startswith("1.12"):
            database, schema, table = None, parts[-2], parts[-1]
        else:
            database = parts[-3] if len(parts) >= 3 else None
            schema, table = parts[-2], parts[-1]
        mapping = self.settings.get("namespaceToServiceMapping") or {}
        service = mapping.get(namespace) or next(
            (svc for key, svc in mapping.items() if namespace.startswith(key)), None
        )
        tables = self.entities["table"]
        candidates = []
        if service and database:
            candidates.append(f"{service}.{database}.{schema}.{table}")
        for fqn in sorted(tables):
            tail = ".".join(fqn.split(".")[-3:] if database else fqn.split(".")[-2:])
            wanted = f"{database}.{schema}.{table}" if database else f"{schema}.{table}"
            if (service is None or fqn.startswith(service + ".")) and tail == wanted:
                candidates.append(fqn)
        return next((tables[c] for c in candidates if c in tables), None)

    def _pipeline(self, event: dict[str, Any]) -> dict[str, Any] | None:
        parent = ((event.get("run") or {}).get("facets") or {}).get("parent") or {}
        job = parent.get("job") if (parent.get("job") or {}).get("name") else event["job"]
        namespace, name = job.get("namespace", ""), job["name"]
        clean = re.sub(r"[^a-zA-Z0-9_-]", "_", namespace)
        pipeline_name = f"{clean}-{name}" if namespace else name
        service = self.settings.get("defaultPipelineService", "openlineage")
        pipelines = self.entities["pipeline"]
        return pipelines.get(f"{service}.{pipeline_name}") or pipelines.get(f"{namespace}.{name}")

    def _read_lineage(self, fqn: str, query: dict[str, str]) -> dict[str, Any]:
        table = self.entities["table"].get(fqn)
        if table is None:
            raise OMError(404, f"table instance for {fqn} not found")
        up, down = int(query.get("upstreamDepth", 1)), int(query.get("downstreamDepth", 1))
        by_id = {t["id"]: t for t in self.entities["table"].values()}
        nodes: dict[str, dict[str, Any]] = {}
        upstream, downstream = [], []
        frontier = {table["id"]}
        for _ in range(up):
            nxt = set()
            for (src, dst), details in self.edges.items():
                if dst in frontier:
                    upstream.append({"fromEntity": src, "toEntity": dst, "lineageDetails": details})
                    nodes[src] = by_id[src]
                    nxt.add(src)
            frontier = nxt
        frontier = {table["id"]}
        for _ in range(down):
            nxt = set()
            for (src, dst), details in self.edges.items():
                if src in frontier:
                    downstream.append(
                        {"fromEntity": src, "toEntity": dst, "lineageDetails": details}
                    )
                    nodes[dst] = by_id[dst]
                    nxt.add(dst)
            frontier = nxt
        return {
            "entity": _ref(table),
            "nodes": [_ref(n) for n in nodes.values() if n["id"] != table["id"]],
            "upstreamEdges": upstream,
            "downstreamEdges": downstream,
        }

    # -- schema validation ------------------------------------------------------------------

    def _validate(self, relative: str | None, body: Any) -> None:
        if relative is None or not self.validate_schemas:
            return
        validator = self._validator(relative)
        if validator is None:
            return
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first.path) or "body"
            raise SchemaViolationError(f"{relative}: {where}: {first.message}")

    def _validator(self, relative: str) -> Any:
        if relative in self._validators:
            return self._validators[relative]
        path = SCHEMAS / relative
        if not path.exists():
            path = SCHEMAS / "derived-from-openapi-1.13" / relative
        if not path.exists():
            warnings.warn(
                f"OM schema {relative} not found under {SCHEMAS}; not validating", stacklevel=2
            )
            self._validators[relative] = None
            return None
        import jsonschema
        from referencing import Registry, Resource

        resources = []
        for file in (SCHEMAS / "api" / "lineage" / "openlineage").glob("*.json"):
            doc = json.loads(file.read_text())
            resources.append((doc["$id"], Resource.from_contents(doc)))
        registry = Registry().with_resources(resources)
        schema = json.loads(path.read_text())
        cls = jsonschema.validators.validator_for(schema)
        self._validators[relative] = cls(
            schema, registry=registry, format_checker=cls.FORMAT_CHECKER
        )
        return self._validators[relative]


class SchemaViolationError(OMError):
    """A request body that OM's schema rejects: a bug in the client under test, surfaced as 422."""

    def __init__(self, message: str) -> None:
        super().__init__(422, f"schema violation: {message}")


def _ref(table: dict[str, Any]) -> dict[str, Any]:
    return {"id": table["id"], "type": "table", "fullyQualifiedName": table["fullyQualifiedName"]}


def _check_columns(columns: list[dict[str, Any]], *, nested: bool = False) -> None:
    seen = set()
    for column in columns:
        name, data_type = column.get("name"), column.get("dataType")
        if not name or data_type is None:
            raise OMError(400, "[query param dataType must not be null]")
        if data_type not in DATA_TYPES:
            raise OMError(400, "Invalid request format")
        if name in seen:
            raise OMError(400, f"Column name {name} is repeated")
        seen.add(name)
        if (
            data_type in {"CHAR", "VARCHAR", "BINARY", "VARBINARY"}
            and column.get("dataLength") is None
        ):
            raise OMError(
                400,
                "For column data types char, varchar, binary, varbinary dataLength must not be null",
            )
        if data_type == "ARRAY" and column.get("arrayDataType") is None:
            raise OMError(400, "For column data type array, arrayDataType must not be null")
        if data_type == "STRUCT":
            if column.get("children") is None:
                raise OMError(400, "For column data type struct, children must not be null")
            _check_columns(column["children"], nested=True)
        if column.get("scale") is not None:
            if column.get("precision") is None:
                raise OMError(400, f"Scale is set but precision is not set for the column {name}")
            if column["scale"] > column["precision"]:
                raise OMError(
                    400, f"Scale can't be greater than the precision for the column {name}"
                )


def _column_lineage(
    facet: dict[str, Any] | None,
    in_ds: dict[str, Any],
    in_table: dict[str, Any],
    out_table: dict[str, Any],
) -> list[dict[str, Any]]:
    if not facet:
        return []
    in_key = f"{in_ds['namespace']}/{in_ds['name']}"
    in_cols = {c["name"] for c in in_table.get("columns") or []}
    out_cols = {c["name"] for c in out_table.get("columns") or []}
    out = []
    for column, spec in (facet.get("fields") or {}).items():
        if column not in out_cols:
            continue  # 20: to-column missing -> mapping dropped
        froms = [
            f"{in_table['fullyQualifiedName']}.{f['field']}"
            for f in spec.get("inputFields") or []
            if f"{f['namespace']}/{f['name']}" == in_key and f["field"] in in_cols
        ]
        if froms:
            out.append(
                {
                    "fromColumns": froms,
                    "toColumn": f"{out_table['fullyQualifiedName']}.{column}",
                    "function": spec.get("transformationDescription"),
                }
            )
    return out


_REASONS = {
    200: "OK",
    201: "Created",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
    422: "Unprocessable Entity",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean."""


@contextmanager
def serve(app: FakeOpenMetadata) -> Iterator[str]:
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
