"""The OM stand-in's dbt-metadata endpoints, item by item of ref §9.12 (D1-D14).

If one of these fails, the stand-in no longer answers like OM: fix the stand-in, not the test.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx2
import pytest

from tests.fakes.om_auth import ANY_DENIED
from tests.fakes.openmetadata import FakeOpenMetadata, Principal
from tests.unit.test_om_fake import bearer, client, seed_table

TABLE = "svc.shop.core.orders"
PATCH = {"Content-Type": "application/json-patch+json"}


def om(version: str = "2.0") -> FakeOpenMetadata:
    """The bot (bot-jwt), a steward (steward-jwt), a consumer (consumer-jwt) and TABLE."""
    fake = FakeOpenMetadata.with_bot(version=version)
    fake.add_token("steward-jwt", Principal("steward", roles=frozenset({"DataSteward"}), bot=False))
    fake.add_token(
        "consumer-jwt", Principal("consumer", roles=frozenset({"DataConsumer"}), bot=False)
    )
    fake.add_token("lineage-jwt", Principal("lineage-bot", roles=frozenset({"LineageBotRole"})))
    seed_table(fake, TABLE, ("id", "status"))
    return fake


def call(
    fake: FakeOpenMetadata,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str = "bot-jwt",
    headers: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
) -> httpx2.Response:
    extra = {**bearer(token), **(headers or {})}
    if method == "PATCH":
        return client(fake).request(
            method,
            f"/api/v1/{path}",
            content=json.dumps(body),
            headers={**PATCH, **extra},
            params=params,
        )
    return client(fake).request(method, f"/api/v1/{path}", json=body, headers=extra, params=params)


def said(response: httpx2.Response) -> tuple[int, str]:
    return response.status_code, response.json().get("message", "")


def table_id(fake: FakeOpenMetadata) -> str:
    return str(fake.entity("table", TABLE)["id"])  # type: ignore[index]


def label(fqn: str, source: str = "Classification") -> dict[str, str]:
    return {"tagFQN": fqn, "source": source, "labelType": "Automated", "state": "Suggested"}


def dbt_definition(fake: FakeOpenMetadata, name: str = "not_null", entity_type: str = "COLUMN"):
    body = {
        "name": name,
        "description": "dbt test",
        "entityType": entity_type,
        "testPlatforms": ["dbt"],
        "parameterDefinition": [{"name": name, "displayName": name, "required": False}],
    }
    return call(fake, "PUT", "dataQuality/testDefinitions", body)


def case_body(name: str = "not_null_orders_id", link: str | None = None, **extra: Any) -> dict:
    return {
        "name": name,
        "testDefinition": "not_null",
        "entityLink": link or f"<#E::table::{TABLE}::columns::id>",
        "parameterValues": [{"name": "not_null", "value": "id"}],
        **extra,
    }


def result_body(timestamp: int = 1_780_000_000_000, status: str = "Success") -> dict:
    return {"timestamp": timestamp, "testCaseStatus": status, "testResultValue": []}


# -- D1 people, system tags and definitions --------------------------------------------------


def test_d1_seeded_users_teams_tags_and_test_definitions() -> None:
    fake = om()
    bot = call(fake, "GET", "users/name/ingestion-bot").json()
    assert bot["isBot"] is True
    assert call(fake, "GET", f"users/{bot['id']}").json()["name"] == "ingestion-bot"
    assert call(fake, "GET", "teams/name/Engineering").json()["teamType"] == "Department"
    for tag in ("PII.Sensitive", "Tier.Tier1"):
        assert call(fake, "GET", f"tags/name/{tag}").status_code == 200
    definition = call(fake, "GET", "dataQuality/testDefinitions/name/columnValuesToBeNotNull")
    assert definition.json()["testPlatforms"] == ["OpenMetadata"]
    assert said(call(fake, "GET", "users/name/nobody")) == (
        404,
        "user instance for nobody not found",
    )
    assert call(fake, "PUT", "users", {"name": "x", "email": "x@y.z"}).status_code == 405


# -- D2 owners -------------------------------------------------------------------------------


def test_d2_owners_are_users_or_group_teams_by_id() -> None:
    fake = om()
    jane = fake.add_person("jane", "jane@example.com")
    group = fake.add_team("analytics")
    department = fake.entity("team", "Engineering")
    assert department is not None
    path = f"tables/{table_id(fake)}"
    ok = call(
        fake,
        "PATCH",
        path,
        [
            {
                "op": "add",
                "path": "/owners",
                "value": [{"id": jane["id"], "type": "user"}, {"id": group["id"], "type": "team"}],
            }
        ],
    )
    assert ok.status_code == 200
    assert [o["name"] for o in ok.json()["owners"]] == ["jane", "analytics"]
    cases = [
        ({"id": department["id"], "type": "team"}, 400, "Team of type Department can't own"),
        ({"id": jane["id"], "type": "table"}, 400, "Entity of type table can't be the owner"),
        ({"id": "7c4e56a2-26f3-4c1e-9b47-000000000000", "type": "user"}, 404, "user instance"),
        ({"type": "user"}, 400, "[query param id must not be null]"),
    ]
    for owner, status, text in cases:
        reply = call(fake, "PATCH", path, [{"op": "add", "path": "/owners", "value": [owner]}])
        assert reply.status_code == status, owner
        assert reply.json()["message"].startswith(text), reply.json()


# -- D3 labels -------------------------------------------------------------------------------


def test_d3_labels_must_name_existing_tags_and_terms() -> None:
    fake = om()
    path = f"tables/{table_id(fake)}"
    reply = call(
        fake, "PATCH", path, [{"op": "add", "path": "/tags/0", "value": label("dbtTags.x")}]
    )
    assert said(reply) == (404, "tag instance for dbtTags.x not found")
    reply = call(
        fake,
        "PATCH",
        path,
        [{"op": "add", "path": "/tags/0", "value": label("Glossary.Revenue", "Glossary")}],
    )
    assert said(reply) == (404, "glossaryTerm instance for Glossary.Revenue not found")
    fake.add_glossary_term("Glossary.Revenue")
    assert (
        call(
            fake,
            "PATCH",
            path,
            [{"op": "add", "path": "/tags/0", "value": label("Glossary.Revenue", "Glossary")}],
        ).status_code
        == 200
    )
    model = {
        "modelType": "DBT",
        "columns": [{"name": "id", "dataType": "INT", "tags": [label("nope.nope")]}],
    }
    assert said(call(fake, "PUT", f"{path}/dataModel", model))[0] == 404
    dbt_definition(fake)
    case = call(fake, "PUT", "dataQuality/testCases", case_body(tags=[label("nope.x")]))
    assert said(case) == (404, "tag instance for nope.x not found")
    table = {
        "name": "t2",
        "databaseSchema": "svc.shop.core",
        "tags": [label("nope.y")],
        "columns": [{"name": "id", "dataType": "INT"}],
    }
    assert said(call(fake, "PUT", "tables", table)) == (404, "tag instance for nope.y not found")


@pytest.mark.parametrize(
    ("change", "status", "text"),
    [
        ({"labelType": "Automatic"}, 400, "Invalid request format"),
        ({"labelType": "automated"}, 400, "Invalid request format"),  # enums are case-sensitive
        ({"state": "Accepted"}, 400, "Invalid request format"),
        ({"source": "Tag"}, 400, "Invalid request format"),
        ({"labelType": None}, 400, "[query param labelType must not be null]"),
        ({"labelType": "Manual", "state": "Confirmed"}, 200, ""),
    ],
)
def test_d3_a_patched_label_is_a_tag_label_of_the_schema(
    change: dict[str, Any], status: int, text: str
) -> None:
    fake = om()
    path = f"tables/{table_id(fake)}"
    bad = {k: v for k, v in {**label("PII.Sensitive"), **change}.items() if v is not None}
    for op in (
        {"op": "add", "path": "/tags/0", "value": bad},
        {"op": "add", "path": "/columns/0/tags", "value": [bad]},
    ):
        reply = call(fake, "PATCH", path, [op])
        assert said(reply) == (status, text), reply.json()
    held = fake.entity("table", TABLE)
    assert held is not None
    assert bool(held.get("tags")) == (status == 200)  # a refused patch changes nothing
    assert bool(held["columns"][0].get("tags")) == (status == 200)


# -- D4 classifications and tags -------------------------------------------------------------


def test_d4_classifications_and_tags() -> None:
    fake = om()
    tag = {"classification": "dbtTags", "name": "pii", "description": "dbt Tags"}
    assert said(call(fake, "PUT", "tags", tag)) == (
        404,
        "classification instance for dbtTags not found",
    )
    classification = {"name": "dbtTags", "description": "dbt classification"}
    assert said(call(fake, "PUT", "classifications", {"name": "dbtTags"}))[0] == 400
    created = call(fake, "PUT", "classifications", classification)
    assert created.status_code == 201
    again = call(fake, "PUT", "classifications", classification)
    assert (again.status_code, again.headers["X-OpenMetadata-Change"]) == (200, "entityNoChange")
    assert call(fake, "PUT", "tags", tag).json()["fullyQualifiedName"] == "dbtTags.pii"
    dotted = call(fake, "PUT", "tags", {**tag, "name": "a.b"}).json()
    assert dotted["fullyQualifiedName"] == 'dbtTags."a.b"'
    child = call(
        fake, "POST", "tags", {"parent": "dbtTags.pii", "name": "email", "description": "x"}
    )
    assert child.json()["fullyQualifiedName"] == "dbtTags.pii.email"
    assert said(call(fake, "POST", "tags", tag)) == (409, "Entity already exists")
    assert said(call(fake, "PUT", "tags", {"classification": "dbtTags", "name": "x"}))[0] == 400
    # a new tag needs Create: the lineage bot alone may update, not create
    lineage = call(fake, "PUT", "tags", {**tag, "name": "new"}, token="lineage-jwt")
    assert said(lineage) == (
        403,
        "Principal: CatalogPrincipal{name='lineage-bot'} operations [Create] not allowed",
    )
    assert call(fake, "PUT", "tags", tag, token="lineage-jwt").status_code == 200


# -- D5 data model ---------------------------------------------------------------------------


def test_d5_data_model_merge_rules() -> None:
    fake = om()
    path = f"tables/{table_id(fake)}/dataModel"
    jane = fake.add_person("jane", "jane@example.com")
    version = fake.entity("table", TABLE)["version"]  # type: ignore[index]
    model = {
        "modelType": "DBT",
        "resourceType": "model",
        "description": "from dbt",
        "rawSql": "select 1",
        "sql": "select 1",
        "path": "models/orders.sql",
        "upstream": ["svc.shop.raw.orders"],
        "owners": [{"id": jane["id"], "type": "user"}],
        "tags": [label("PII.Sensitive")],
        "columns": [
            {
                "name": "id",
                "dataType": "INT",
                "description": "the id",
                "tags": [label("Tier.Tier2")],
            }
        ],
    }
    assert said(call(fake, "PUT", path, {**model, "modelType": "SQL"})) == (
        400,
        "Invalid request format",
    )
    reply = call(fake, "PUT", path, model)
    assert reply.status_code == 200
    assert "X-OpenMetadata-Change" not in reply.headers
    table = fake.entity("table", TABLE)
    assert table is not None
    assert table["version"] == version  # no version bump
    assert table["dataModel"]["rawSql"] == "select 1"
    assert [o["name"] for o in table["owners"]] == ["jane"]
    assert [t["tagFQN"] for t in table["tags"]] == ["PII.Sensitive"]
    assert [t["tagFQN"] for t in table["columns"][0]["tags"]] == ["Tier.Tier2"]
    assert not table.get("description")  # descriptions are not copied
    # blank SQL keeps the stored one; owners only for an ownerless table; tags only added
    bob = fake.add_person("bob")
    second = {
        **model,
        "rawSql": "",
        "owners": [{"id": bob["id"], "type": "user"}],
        "tags": [label("PII.NonSensitive")],
    }
    call(fake, "PUT", path, second)
    assert table["dataModel"]["rawSql"] == "select 1"
    assert [o["name"] for o in table["owners"]] == ["jane"]
    assert [t["tagFQN"] for t in table["tags"]] == ["PII.Sensitive", "PII.NonSensitive"]
    assert said(call(fake, "PUT", path, model, token="steward-jwt")) == (
        403,
        "Principal: CatalogPrincipal{name='steward'} operations [EditAll] not allowed",
    )
    assert said(call(fake, "PUT", "tables/not-a-uuid/dataModel", model)) == (
        404,
        "HTTP 404 Not Found",
    )
    unknown = "7c4e56a2-26f3-4c1e-9b47-000000000000"
    assert said(call(fake, "PUT", f"tables/{unknown}/dataModel", model)) == (
        404,
        f"table instance for {unknown} not found",
    )
    assert ("ingestion-bot", "PUT", TABLE, "dataModel") in fake.audit


# -- D6 PATCH --------------------------------------------------------------------------------


def test_d6_patch_needs_json_patch_media_type() -> None:
    fake = om()
    reply = client(fake).patch(
        f"/api/v1/tables/{table_id(fake)}",
        json=[{"op": "add", "path": "/description", "value": "x"}],
        headers=bearer("bot-jwt"),
    )
    assert said(reply) == (415, "HTTP 415 Unsupported Media Type")


@pytest.mark.parametrize(
    ("token", "op", "status", "text"),
    [
        ("bot-jwt", {"op": "add", "path": "/description", "value": "d"}, 200, ""),
        ("consumer-jwt", {"op": "add", "path": "/columns/0/description", "value": "d"}, 200, ""),
        ("consumer-jwt", {"op": "add", "path": "/owners", "value": []}, 403, "[EditOwners]"),
        ("steward-jwt", {"op": "add", "path": "/displayName", "value": "D"}, 200, ""),
        (
            "bot-jwt",
            {"op": "add", "path": "/displayName", "value": "D"},
            403,
            "operation EditDisplayName denied by role IngestionBotRole, policy IngestionBotPolicy,"
            " rule DisplayName-Deny",
        ),
        ("steward-jwt", {"op": "add", "path": "/tableType", "value": "View"}, 403, "[EditAll]"),
        (
            "steward-jwt",
            {"op": "add", "path": "/tags/0", "value": label("Tier.Tier1")},
            403,
            "[EditTier]",
        ),
        (
            "consumer-jwt",
            {"op": "add", "path": "/tags/0", "value": label("Tier.Tier1")},
            200,
            "",
        ),
    ],
)
def test_d6_patch_rights_per_path(token: str, op: dict, status: int, text: str) -> None:
    fake = om()
    reply = call(fake, "PATCH", f"tables/{table_id(fake)}", [op], token=token)
    assert reply.status_code == status, reply.json()
    assert text in reply.json().get("message", "")


def test_d6_bots_replace_descriptions_by_patch_and_immutable_fields_stay() -> None:
    fake = om()
    table = fake.entity("table", TABLE)
    assert table is not None
    call(
        fake,
        "PATCH",
        f"tables/{table['id']}",
        [{"op": "add", "path": "/description", "value": "a"}],
    )
    version = table["version"]
    reply = call(
        fake,
        "PATCH",
        f"tables/{table['id']}",
        [
            {"op": "replace", "path": "/description", "value": "b"},
            {"op": "replace", "path": "/name", "value": "renamed"},
        ],
    )
    assert reply.json()["description"] == "b"
    assert reply.json()["name"] == "orders"
    assert fake.entity("table", TABLE)["version"] == round(version + 0.1, 1)  # type: ignore[index]
    same = call(
        fake,
        "PATCH",
        f"tables/{table['id']}",
        [{"op": "add", "path": "/description", "value": "b"}],
    )
    assert same.headers["X-OpenMetadata-Change"] == "entityNoChange"
    assert ("ingestion-bot", "PATCH", TABLE, "updated") in fake.audit
    assert ("ingestion-bot", "PATCH", TABLE, "unchanged") in fake.audit


def test_table_reads_give_tags_owners_and_models_only_when_asked() -> None:
    fake = om()
    path = f"tables/{table_id(fake)}"
    call(
        fake,
        "PATCH",
        path,
        [{"op": "add", "path": "/columns/0/tags", "value": [label("PII.Sensitive")]}],
    )
    plain = call(fake, "GET", f"tables/name/{TABLE}", params={"fields": "columns"}).json()
    assert "tags" not in plain["columns"][0]
    full = call(fake, "GET", f"tables/name/{TABLE}", params={"fields": "columns,tags"}).json()
    assert full["columns"][0]["tags"][0]["tagFQN"] == "PII.Sensitive"


# -- D7 test definitions ---------------------------------------------------------------------


def test_d7_test_definitions() -> None:
    fake = om()
    assert dbt_definition(fake).status_code == 201
    assert dbt_definition(fake).headers["X-OpenMetadata-Change"] == "entityNoChange"
    bad = {"name": "x", "entityType": "COLUMN", "testPlatforms": ["DBT"]}
    assert said(call(fake, "PUT", "dataQuality/testDefinitions", bad)) == (
        400,
        "Invalid request format",
    )
    missing = call(fake, "PUT", "dataQuality/testDefinitions", {"name": "x"})
    assert missing.status_code == 400
    assert "entityType must not be null" in missing.json()["message"]
    assert "testPlatforms must not be null" in missing.json()["message"]
    assert call(fake, "GET", "dataQuality/testDefinitions/name/not_null").status_code == 200


# -- D8 suites -------------------------------------------------------------------------------


def test_d8_basic_suites_one_per_table_and_the_deprecated_alias() -> None:
    fake = om()
    body = {"name": "anything", "basicEntityReference": TABLE}
    created = call(fake, "POST", "dataQuality/testSuites/basic", body)
    assert created.status_code == 201
    assert created.json()["fullyQualifiedName"] == f"{TABLE}.testSuite"
    assert said(call(fake, "POST", "dataQuality/testSuites/basic", body)) == (
        409,
        "Entity already exists",
    )
    assert call(fake, "PUT", "dataQuality/testSuites/basic", body).status_code == 200
    assert said(call(fake, "POST", "dataQuality/testSuites/basic", {"name": "x"})) == (
        400,
        "Cannot create a basic test suite without the BasicEntityReference field informed.",
    )
    old = call(
        fake,
        "PUT",
        "dataQuality/testSuites/executable",
        {"name": "x", "executableEntityReference": TABLE},
    )
    assert old.status_code == 200
    assert old.headers["Deprecation"] == "Monday, March 24, 2025"
    assert old.headers["Link"] == 'api/v1/dataQuality/testSuites/basic; rel="alternate"'
    logical = call(fake, "POST", "dataQuality/testSuites", {"name": "nightly"})
    assert logical.json()["fullyQualifiedName"] == "nightly"
    assert said(call(fake, "PUT", "dataQuality/testSuites/basic", body, token="steward-jwt")) == (
        403,
        ANY_DENIED,
    )


# -- D9 test cases ---------------------------------------------------------------------------


def test_d9_test_cases_fqn_suite_and_idempotence() -> None:
    fake = om()
    dbt_definition(fake)
    created = call(fake, "PUT", "dataQuality/testCases", case_body())
    assert created.status_code == 201, created.json()
    fqn = f"{TABLE}.id.not_null_orders_id"
    assert created.json()["fullyQualifiedName"] == fqn
    suite = fake.entity("testSuite", f"{TABLE}.testSuite")
    assert suite is not None
    assert suite["updatedBy"] == "ingestion-bot"
    assert ("ingestion-bot", "auto", f"{TABLE}.testSuite", "created") in fake.audit
    again = call(fake, "PUT", "dataQuality/testCases", case_body())
    assert (again.status_code, again.headers["X-OpenMetadata-Change"]) == (200, "entityNoChange")
    assert said(call(fake, "POST", "dataQuality/testCases", case_body())) == (
        409,
        "Entity already exists",
    )
    read = call(
        fake,
        "GET",
        f"dataQuality/testCases/name/{quote(fqn, safe='')}",
        params={"fields": "testDefinition,testSuite"},
    ).json()
    assert read["testDefinition"]["name"] == "not_null"
    assert read["testSuite"]["fullyQualifiedName"] == f"{TABLE}.testSuite"
    table_level = case_body("rows", link=f"<#E::table::{TABLE}>", testDefinition="rowsdef")
    dbt_definition(fake, "rowsdef", "TABLE")
    table_level["parameterValues"] = []
    assert (
        call(fake, "PUT", "dataQuality/testCases", table_level).json()["fullyQualifiedName"]
        == f"{TABLE}.rows"
    )


@pytest.mark.parametrize(
    ("change", "status", "text"),
    [
        ({"testDefinition": "nope"}, 404, "testDefinition instance for nope not found"),
        ({"entityLink": "<#E::table::svc.shop.core.nope::columns::id>"}, 404, "table instance"),
        ({"parameterValues": [{"name": "bogus", "value": "1"}]}, 400, "Parameter 'bogus' is not"),
        ({"entityLink": f"<#E::table::{TABLE}>"}, 400, "Column test case must have a field name"),
        ({"entityLink": f"<#E::table::{TABLE}::columns::nope>"}, 400, "Invalid column name nope"),
        ({"entityLink": "not a link"}, 400, "query param entityLink must match"),
    ],
)
def test_d9_case_checks(change: dict, status: int, text: str) -> None:
    fake = om()
    dbt_definition(fake)
    reply = call(fake, "PUT", "dataQuality/testCases", {**case_body(), **change})
    assert reply.status_code == status, reply.json()
    assert text in reply.json()["message"]


def test_d9_parameters_of_a_definition_without_any() -> None:
    fake = om()
    call(
        fake,
        "PUT",
        "dataQuality/testDefinitions",
        {"name": "bare", "entityType": "TABLE", "testPlatforms": ["dbt"]},
    )
    body = {**case_body(link=f"<#E::table::{TABLE}>"), "testDefinition": "bare"}
    assert said(call(fake, "PUT", "dataQuality/testCases", body)) == (
        400,
        "Parameter Values doesn't match Test Definition Parameters",
    )
    required = {
        "name": "req",
        "entityType": "TABLE",
        "testPlatforms": ["dbt"],
        "parameterDefinition": [{"name": "n", "required": True}],
    }
    call(fake, "PUT", "dataQuality/testDefinitions", required)
    body = {
        **case_body(link=f"<#E::table::{TABLE}>"),
        "testDefinition": "req",
        "parameterValues": [],
    }
    assert said(call(fake, "PUT", "dataQuality/testCases", body)) == (
        400,
        "Required parameter n is not passed in parameterValues",
    )


def test_d9_post_finds_the_definition_before_it_authorizes_put_after() -> None:
    fake = om()
    body = {**case_body(), "testDefinition": "nope"}
    assert call(fake, "POST", "dataQuality/testCases", body, token="steward-jwt").status_code == 404
    assert said(call(fake, "PUT", "dataQuality/testCases", body, token="steward-jwt")) == (
        403,
        ANY_DENIED,
    )


# -- D10 - D12 results -----------------------------------------------------------------------


def _case(fake: FakeOpenMetadata) -> str:
    dbt_definition(fake)
    call(fake, "PUT", "dataQuality/testCases", case_body())
    return f"{TABLE}.id.not_null_orders_id"


def results_path(fqn: str) -> str:
    return f"dataQuality/testCases/testCaseResults/{quote(fqn, safe='')}"


def test_d10_results_201_409_404_and_ms_timestamps() -> None:
    fake = om()
    fqn = _case(fake)
    created = call(fake, "POST", results_path(fqn), result_body())
    assert created.status_code == 201
    assert created.headers["Location"] == f"/api/v1/dataQuality/testCases/testCaseResults/{fqn}"
    assert created.json()["testCaseFQN"] == fqn
    assert said(call(fake, "POST", results_path(fqn), result_body())) == (
        409,
        "Entity already exists",
    )
    assert said(call(fake, "POST", results_path(fqn), result_body(1_780_000_000))) == (
        400,
        "Timestamp 1780000000 is not valid, it should be in milliseconds since epoch",
    )
    assert said(call(fake, "POST", results_path(f"{TABLE}.nope"), result_body())) == (
        404,
        f"testCase instance for {TABLE}.nope not found",
    )
    assert said(
        call(fake, "POST", results_path(fqn), result_body(1_780_000_000_001), token="steward-jwt")
    ) == (403, ANY_DENIED)
    bad = call(fake, "POST", results_path(fqn), {**result_body(2), "testCaseStatus": "Passed"})
    assert said(bad) == (400, "Invalid request format")
    call(fake, "POST", results_path(fqn), result_body(1_780_000_000_500, "Failed"))
    listed = call(
        fake,
        "GET",
        results_path(fqn),
        params={"startTs": 1_780_000_000_000, "endTs": 1_780_000_001_000},
    ).json()
    assert [r["timestamp"] for r in listed["data"]] == [1_780_000_000_500, 1_780_000_000_000]
    assert listed["paging"]["total"] == 2
    assert listed["data"][0]["incidentId"]
    assert ("ingestion-bot", "POST", fqn, "conflict") in fake.audit


@pytest.mark.parametrize("version", ["1.12", "2.0"])
def test_d11_the_pre_1_6_result_path_is_gone(version: str) -> None:
    fake = om(version)
    fqn = _case(fake)
    old = call(
        fake,
        "PUT",
        f"dataQuality/testCases/{quote(fqn, safe='')}/testCaseResult",
        result_body(),
    )
    assert said(old) == (404, "HTTP 404 Not Found")


def test_d12_latest_result_on_the_case_and_suite_summary() -> None:
    fake = om()
    fqn = _case(fake)
    call(fake, "POST", results_path(fqn), result_body(1_780_000_000_000, "Failed"))
    call(fake, "POST", results_path(fqn), result_body(1_780_000_100_000, "Success"))
    read = call(
        fake,
        "GET",
        f"dataQuality/testCases/name/{quote(fqn, safe='')}",
        params={"fields": "testCaseResult"},
    ).json()
    assert read["testCaseResult"]["timestamp"] == 1_780_000_100_000
    assert read["testCaseStatus"] == "Success"
    assert "testCaseResult" not in call(fake, "GET", f"dataQuality/testCases/name/{fqn}").json()
    suite = call(
        fake, "GET", f"dataQuality/testSuites/name/{TABLE}.testSuite", params={"fields": "summary"}
    ).json()
    assert suite["summary"] == {"total": 1, "success": 1, "failed": 0, "aborted": 0, "queued": 0}


# -- D13 topDimensions -----------------------------------------------------------------------


def test_d13_top_dimensions_is_2_0_only() -> None:
    new, old = om("2.0"), om("1.12")
    for fake in (new, old):
        dbt_definition(fake)
    assert said(call(new, "PUT", "dataQuality/testCases", case_body(topDimensions=99)))[0] == 400
    assert call(new, "PUT", "dataQuality/testCases", case_body(topDimensions=5)).status_code == 201
    reply = call(old, "PUT", "dataQuality/testCases", case_body(topDimensions=99))
    assert reply.status_code == 201
    assert "topDimensions" not in reply.json()
    assert old.requests[-1].warning is not None


# -- D14 state -------------------------------------------------------------------------------


def test_d14_dump_holds_entities_audit_and_results() -> None:
    fake = om()
    fqn = _case(fake)
    call(fake, "POST", results_path(fqn), result_body())
    dump = json.loads(json.dumps(fake.dump()))
    assert fqn in dump["entities"]["testCase"]
    assert f"{TABLE}.testSuite" in dump["entities"]["testSuite"]
    assert [r["testCaseFQN"] for r in dump["testCaseResults"]] == [fqn]
    assert ["ingestion-bot", "PUT", fqn, "created"] in dump["audit"]
