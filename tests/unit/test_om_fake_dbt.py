"""The OM stand-in's dbt-metadata endpoints, ref §9.12 D1-D6 (people, owners, labels, tags, data model, PATCH).

If one of these fails, the stand-in no longer answers like OM: fix the stand-in, not the test.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.om_fake_dbt_support import (
    TABLE,
    call,
    case_body,
    dbt_definition,
    label,
    om,
    said,
    table_id,
)
from tests.support.om_fake_support import bearer, client

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
