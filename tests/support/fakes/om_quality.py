"""Data quality in the OM stand-in: definitions, suites, cases, results (ref §9.6-§9.8; D7-D13).

- D7 test definitions: generic POST/PUT (schema: `name`, `entityType`, `testPlatforms` with the
  lower-case `dbt`), GET by name.
- D8 basic suites: `POST|PUT /dataQuality/testSuites/basic` with `basicEntityReference` (a table
  FQN), FQN `<table>.testSuite`, one per table; `/executable` is the deprecated alias (its
  answers carry `Deprecation` and `Link`); the root collection makes logical suites (generic).
- D9 test cases: the checks of ref §9.6 in OM's order (POST finds the definition before it
  authorizes, PUT authorizes first), FQN from the entity link, the table's basic suite created by
  ingestion-bot with the first case, POST 409 / PUT 201-200, ANY-logic 403.
- D10 results: `POST /dataQuality/testCases/testCaseResults/{fqn}` 201 + Location, timestamps in
  ms, 409 for a timestamp the case already has, 404 for an unknown case, ANY-logic 403; GET on
  the same path lists them newest first (`startTs`/`endTs`).
- D11 the pre-1.6 `PUT /dataQuality/testCases/{fqn}/testCaseResult` answers 404.
- D12 a case read with `fields=testCaseResult` carries its newest result and status; a suite read
  with `fields=summary` counts its cases' newest statuses.
- D13 `topDimensions` is 2.0-only: 1.12 ignores it (the request records a warning).
"""

from __future__ import annotations

import copy
import uuid
from typing import TYPE_CHECKING, Any

from tests.support.fakes.om_auth import OMError, Principal, authorize, authorize_any
from tests.support.fakes.om_catalog import check_labels
from tests.support.fakes.om_entities import BY_ENTITY, table_ref
from tests.support.fakes.om_rules import quote

if TYPE_CHECKING:
    from tests.support.fakes.om_http import Call
    from tests.support.fakes.openmetadata import Answer, FakeOpenMetadata

RESULT_SCHEMA = "api/tests/createTestCaseResult.json"
_CASE_FIELDS = "owners testSuite testSuites testDefinition testCaseResult incidentId tags followers"
CASE_FIELDS = frozenset(_CASE_FIELDS.split())
OPTIONAL_CASE = ("testSuite", "testSuites", "testDefinition", "testCaseResult", "testCaseStatus")
DEPRECATED = [
    ("Deprecation", "Monday, March 24, 2025"),
    ("Link", 'api/v1/dataQuality/testSuites/basic; rel="alternate"'),
]
NO_REFERENCE = "Cannot create a basic test suite without the BasicEntityReference field informed."
COLUMN_LINK = (
    "Column test case must have a field name and an array field name in the entity link. "
    "e.g. <#E::table::{entityFqn}::columns::{fieldName}>"
)


def route(fake: FakeOpenMetadata, call: Call, principal: Principal) -> Answer | None:
    method, rest = call.request.method, call.request.path[len("/api/v1/") :]
    if not rest.startswith("dataQuality/"):
        return None
    rest = rest[len("dataQuality/") :]
    if rest in ("testSuites/basic", "testSuites/executable") and method in ("POST", "PUT"):
        return basic_suite(fake, call, principal, deprecated=rest.endswith("executable"))
    if rest.startswith("testCases/testCaseResults/"):
        fqn = rest[len("testCases/testCaseResults/") :]
        if method == "POST":
            return post_result(fake, call, principal, fqn)
        if method == "GET":
            return 200, list_results(fake, principal, fqn, call.request.query), []
    if rest == "testCases" and method in ("POST", "PUT"):
        return write_case(fake, call, principal)
    if rest.startswith("testCases/") and rest.endswith("/testCaseResult"):
        raise OMError(404, "HTTP 404 Not Found", rule="not-found")  # D11: gone since 1.6
    if rest.startswith("testCases/") and method == "GET":
        case = _find(fake, "testCase", rest[len("testCases/") :], principal)
        return 200, case_view(fake, case, call.request.query), []
    if rest.startswith("testSuites/") and method == "GET":
        suite = _find(fake, "testSuite", rest[len("testSuites/") :], principal)
        return 200, suite_view(fake, suite, call.request.query), []
    return None


def _find(fake: FakeOpenMetadata, kind: str, key: str, principal: Principal) -> dict[str, Any]:
    authorize(principal, ["ViewAll"], kind)
    name = key[len("name/") :] if key.startswith("name/") else None
    found = fake.entity(kind, name) if name is not None else fake.by_id(kind, key)
    if found is None:
        raise OMError(404, f"{kind} instance for {name or key} not found", rule="not-found")
    return found


# -- D8 --------------------------------------------------------------------------------------


def basic_suite(
    fake: FakeOpenMetadata, call: Call, principal: Principal, *, deprecated: bool
) -> Answer:
    kind = BY_ENTITY["testSuite"]
    body = call.json()
    fake.check_body(kind.schema, body)
    reference = body.get("basicEntityReference") or (
        body.get("executableEntityReference") if deprecated else None
    )
    if not reference:
        raise OMError(400, NO_REFERENCE, rule="required")
    table = fake.entity("table", str(reference))
    if table is None:
        raise OMError(404, f"table instance for {reference} not found", rule="not-found")
    fqn = f"{reference}.testSuite"

    def rights(new: bool) -> None:
        authorize_any(
            principal, [("EditTests", "table"), ("Create" if new else "EditAll", "testSuite")]
        )

    stored = {**body, "name": fqn, "basic": True, "basicEntityReference": table_ref(table)}
    stored.pop("executableEntityReference", None)
    status, entity, headers = fake.store(
        kind, call.request.method, stored, principal, fqn=fqn, rights=rights
    )
    return status, entity, headers + (DEPRECATED if deprecated else [])


def ensure_basic_suite(fake: FakeOpenMetadata, table: dict[str, Any]) -> dict[str, Any]:
    """TestCaseRepository.getOrCreateTestSuite: the table's basic suite, made by ingestion-bot."""
    fqn = f"{table['fullyQualifiedName']}.testSuite"
    found = fake.entity("testSuite", fqn)
    if found is not None:
        return found
    body = {"name": fqn, "basic": True, "basicEntityReference": table_ref(table)}
    suite = fake.create_entity("testSuite", body, Principal("ingestion-bot"), fqn=fqn)
    fake.audit.append(("ingestion-bot", "auto", fqn, "created"))
    return suite


def _ref(entity: dict[str, Any], kind: str) -> dict[str, Any]:
    return {
        "id": entity["id"],
        "type": kind,
        "name": entity["name"],
        "fullyQualifiedName": entity["fullyQualifiedName"],
    }


# -- D9 --------------------------------------------------------------------------------------


def parse_link(link: str) -> tuple[str, str | None]:
    """(table FQN, column or None) of `<#E::table::<fqn>[::columns::<column>]>`."""
    parts = link[len("<#E::") : -1].split("::")
    if parts[0] != "table" or len(parts) < 2:
        raise OMError(400, f"Invalid entity link {link}", rule="link")  # text: ours
    column = parts[3] if len(parts) >= 4 and parts[2] == "columns" else None
    return parts[1], column


def _definition(fake: FakeOpenMetadata, name: str) -> dict[str, Any]:
    found = fake.entity("testDefinition", name) or fake.entity("testDefinition", quote(name))
    if found is None:
        raise OMError(404, f"testDefinition instance for {name} not found", rule="not-found")
    return found


def _check_parameters(definition: dict[str, Any], values: list[dict[str, Any]]) -> None:
    defined = [str(p.get("name")) for p in definition.get("parameterDefinition") or []]
    given = [str(v.get("name")) for v in values]
    if given and not defined:
        raise OMError(
            400, "Parameter Values doesn't match Test Definition Parameters", rule="params"
        )
    for name in given:
        if name not in defined:
            raise OMError(
                400,
                f"Parameter '{name}' is not defined in the test definition. "
                f"Defined parameters are: [{', '.join(defined)}]",
                rule="params",
            )
    for parameter in definition.get("parameterDefinition") or []:
        if parameter.get("required") and parameter.get("name") not in given:
            raise OMError(
                400,
                f"Required parameter {parameter.get('name')} is not passed in parameterValues",
                rule="params",
            )


def write_case(fake: FakeOpenMetadata, call: Call, principal: Principal) -> Answer:
    kind = BY_ENTITY["testCase"]
    method = call.request.method
    body = call.json()
    if fake.version == "1.12" and isinstance(body, dict) and "topDimensions" in body:
        body = {k: v for k, v in body.items() if k != "topDimensions"}  # D13: unknown to 1.12
        call.request.warning = "topDimensions is not in OM 1.12's CreateTestCase: ignored"
    fake.check_body(kind.schema, body)
    table_fqn, column = parse_link(str(body["entityLink"]))
    checks = [("EditTests", "table"), ("Create", "testCase")]
    try:
        if method == "POST":  # POST resolves the definition before it authorizes
            definition = _definition(fake, str(body["testDefinition"]))
            authorize_any(principal, checks)
        else:
            authorize_any(principal, [*checks, ("EditAll", "testCase")])
            definition = _definition(fake, str(body["testDefinition"]))
    except OMError as e:
        if e.status == 403:
            fake.audit.append((principal.name, method, str(body.get("name")), "denied"))
        raise
    table = fake.entity("table", table_fqn)
    if table is None:
        raise OMError(404, f"table instance for {table_fqn} not found", rule="not-found")
    if definition.get("enabled") is False:
        raise OMError(400, f"Test definition {definition['name']} is disabled", rule="disabled")
    _check_parameters(definition, list(body.get("parameterValues") or []))
    if definition.get("entityType") == "COLUMN" and column is None:
        raise OMError(400, COLUMN_LINK, rule="link")
    if column is not None and column not in {c["name"] for c in table.get("columns") or []}:
        raise OMError(400, f"Invalid column name {column}", rule="column")
    check_labels(fake, body.get("tags"))
    name = str(body["name"])
    fqn = ".".join([table_fqn, *([quote(column)] if column else []), quote(name)])
    suite = ensure_basic_suite(fake, table)
    stored = {
        **copy.deepcopy(body),
        "entityFQN": f"{table_fqn}.{quote(column)}" if column else table_fqn,
        "testDefinition": _ref(definition, "testDefinition"),
        "testSuite": _ref(suite, "testSuite"),
        "testSuites": [_ref(suite, "testSuite")],
    }
    return fake.store(kind, method, stored, principal, fqn=fqn, rights=_checked)


def _checked(new: bool) -> None:
    """The rights of a test case write were checked before (ANY-logic, ref §9.8)."""


# -- D10, D12 --------------------------------------------------------------------------------


def latest(fake: FakeOpenMetadata, case_fqn: str) -> dict[str, Any] | None:
    mine = [r for r in fake.test_case_results if r["testCaseFQN"] == case_fqn]
    return max(mine, key=lambda r: r["timestamp"]) if mine else None


def post_result(fake: FakeOpenMetadata, call: Call, principal: Principal, case_fqn: str) -> Answer:
    body = call.json()
    fake.check_body(RESULT_SCHEMA, body)
    timestamp = int(body["timestamp"])
    if len(str(abs(timestamp))) < 12:
        raise OMError(
            400,
            f"Timestamp {timestamp} is not valid, it should be in milliseconds since epoch",
            rule="timestamp",
        )
    case = fake.entity("testCase", case_fqn)
    if case is None:
        raise OMError(404, f"testCase instance for {case_fqn} not found", rule="not-found")
    try:
        authorize_any(principal, [("EditTests", "table"), ("EditAll", "testCase")])
    except OMError:
        fake.audit.append((principal.name, "POST", case_fqn, "denied"))
        raise
    if any(
        r["testCaseFQN"] == case_fqn and r["timestamp"] == timestamp for r in fake.test_case_results
    ):  # UNIQUE (entityFQNHash, extension, timestamp)
        fake.audit.append((principal.name, "POST", case_fqn, "conflict"))
        raise OMError(409, "Entity already exists", rule="conflict")
    result = {
        **copy.deepcopy(body),
        "id": str(uuid.uuid4()),
        "testCaseFQN": case_fqn,
        "timestamp": timestamp,
        "testCase": _ref(case, "testCase"),
        "testDefinition": case["testDefinition"],
    }
    result.pop("fqn", None)  # overwritten from the path
    if result.get("testCaseStatus") == "Failed":
        before = latest(fake, case_fqn)
        opened = before.get("incidentId") if before and before.get("incidentId") else None
        result["incidentId"] = opened or str(uuid.uuid4())
    fake.test_case_results.append(result)
    fake.audit.append((principal.name, "POST", case_fqn, "created"))
    return 201, result, [("Location", call.request.path)]


def list_results(
    fake: FakeOpenMetadata, principal: Principal, case_fqn: str, query: dict[str, str]
) -> dict[str, Any]:
    authorize(principal, ["ViewAll"], "testCase")
    start, end = int(query.get("startTs") or 0), int(query.get("endTs") or 1 << 62)
    found = [
        r
        for r in fake.test_case_results
        if r["testCaseFQN"] == case_fqn and start <= r["timestamp"] <= end
    ]
    found.sort(key=lambda r: r["timestamp"], reverse=True)
    return {"data": found, "paging": {"total": len(found)}}


def _fields(query: dict[str, str], allowed: frozenset[str]) -> list[str]:
    fields = [f.strip() for f in query.get("fields", "").split(",") if f.strip()]
    bad = next((f for f in fields if f not in allowed), None)
    if bad is not None:
        raise OMError(400, f"Invalid field name {bad}", rule="fields")
    return fields


def case_view(
    fake: FakeOpenMetadata, case: dict[str, Any], query: dict[str, str]
) -> dict[str, Any]:
    fields = _fields(query, CASE_FIELDS)
    view = {k: v for k, v in case.items() if k not in OPTIONAL_CASE or k in fields}
    if "testCaseResult" in fields:
        newest = latest(fake, case["fullyQualifiedName"])
        view["testCaseResult"] = newest
        view["testCaseStatus"] = newest["testCaseStatus"] if newest else None
    return view


def suite_view(
    fake: FakeOpenMetadata, suite: dict[str, Any], query: dict[str, str]
) -> dict[str, Any]:
    fields = _fields(query, frozenset({"summary", "tests", "owners", "pipelines", "domains"}))
    view = dict(suite)
    if "summary" in fields:
        cases = [
            c for c in fake.entities["testCase"].values() if c["testSuite"]["id"] == suite["id"]
        ]
        statuses = [
            (latest(fake, c["fullyQualifiedName"]) or {}).get("testCaseStatus") for c in cases
        ]
        view["summary"] = {
            "total": len(cases),
            "success": statuses.count("Success"),
            "failed": statuses.count("Failed"),
            "aborted": statuses.count("Aborted"),
            "queued": statuses.count("Queued"),
        }
    if "tests" in fields:
        view["tests"] = [
            _ref(c, "testCase")
            for c in fake.entities["testCase"].values()
            if c["testSuite"]["id"] == suite["id"]
        ]
    return view
