"""The OM stand-in itself, rule by rule against docs/reference/openmetadata-api.md ("ref §n"): principals, roles and authorization per endpoint (§4.3, §4.4, §2.9, §9.8).

If one of these fails, the stand-in no longer answers like OM: fix the stand-in, not the test.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.support.fakes.om_auth import BOT_ROLES, OMError, authorize
from tests.support.fakes.openmetadata import FakeOpenMetadata, Principal
from tests.support.om_fake_support import (
    NS,
    SRC,
    bearer,
    client,
    error,
    event,
    om,
    post,
)

# -- §4.3, §9.8: principals and roles ----------------------------------------------------------


def test_with_bot_is_the_scoped_bot_not_an_admin() -> None:
    """ref §4.3: with_bot() = IngestionBotRole + LineageBotRole, not admin."""
    fake = FakeOpenMetadata.with_bot()
    bot = fake.principals["bot-jwt"]
    assert (bot.roles, bot.admin, bot.bot) == (BOT_ROLES, False, True)
    http = client(fake)
    created = http.put(
        "/api/v1/services/databaseServices",
        json={"name": "s", "serviceType": "CustomDatabase"},
        headers=bearer("bot-jwt"),
    )
    assert created.status_code == 201
    settings = http.get("/api/v1/system/settings/openLineageSettings", headers=bearer("bot-jwt"))
    assert error(settings) == (
        403,
        "Principal: CatalogPrincipal{name='ingestion-bot'} is not admin",
    )


def test_with_admin_reads_settings() -> None:
    """ref §2.9: an admin reads openLineageSettings."""
    fake = FakeOpenMetadata.with_admin("root-jwt")
    got = client(fake).get(
        "/api/v1/system/settings/openLineageSettings", headers=bearer("root-jwt")
    )
    assert got.status_code == 200
    assert got.json()["config_type"] == "openLineageSettings"
    assert got.json()["config_value"]["defaultPipelineService"] == "openlineage"


def test_lineage_bot_cannot_create_but_updates_and_posts_lineage() -> None:
    """ref §4.3: LineageBotRole = EditAll + ViewAll on all, Create only on `query`."""
    fake = om()
    fake.add_token("lineage-jwt", Principal("lineage-bot", roles=frozenset({"LineageBotRole"})))
    http = client(fake)
    new = {"name": "t2", "databaseSchema": "pg.shop.sales", "columns": []}
    posted = http.post("/api/v1/tables", json=new, headers=bearer("lineage-jwt"))
    assert error(posted) == (
        403,
        "Principal: CatalogPrincipal{name='lineage-bot'} operations [Create] not allowed",
    )
    existing = {
        "name": "orders",
        "databaseSchema": "pg.shop.sales",
        "columns": [{"name": "id", "dataType": "INT"}],
    }
    put = http.put("/api/v1/tables", json=existing, headers=bearer("lineage-jwt"))
    assert put.status_code == 200
    assert post(fake, [event()], token="lineage-jwt").json()["lineageEdgesCreated"] == 1


@pytest.mark.parametrize(
    ("roles", "operation", "resource", "allowed"),
    [
        ({"IngestionBotRole"}, "Create", "table", True),
        ({"IngestionBotRole"}, "EditOwners", "table", True),  # EditAll matches every Edit*
        ({"LineageBotRole"}, "Create", "table", False),
        ({"LineageBotRole"}, "Create", "query", True),
        ({"LineageBotRole"}, "EditLineage", "table", True),
        ({"DataSteward"}, "EditLineage", "table", True),
        ({"DataSteward"}, "EditAll", "table", False),
        ({"DataConsumer"}, "EditDescription", "table", True),
        ({"DataConsumer"}, "EditLineage", "table", False),
        ({"DataConsumer"}, "ViewBasic", "table", True),  # ViewAll matches every View*
        (set(), "ViewAll", "table", False),
    ],
)
def test_operations_granted_per_role(
    roles: set[str], operation: str, resource: str, allowed: bool
) -> None:
    """ref §4.3, §9.8: the seeded policies."""
    principal = Principal("u", roles=frozenset(roles), bot=False)
    if allowed:
        authorize(principal, [operation], resource)
    else:
        with pytest.raises(OMError) as err:
            authorize(principal, [operation], resource)
        assert err.value.message == (
            f"Principal: CatalogPrincipal{{name='u'}} operations [{operation}] not allowed"
        )


def test_ingestion_bot_role_denies_display_name_even_with_lineage_role() -> None:
    """ref §9.8: deny rules win; IngestionBotPolicy has DisplayName-Deny."""
    with pytest.raises(OMError) as err:
        authorize(Principal("ingestion-bot"), ["EditDisplayName"], "table")
    assert err.value.message == (
        "Principal: CatalogPrincipal{name='ingestion-bot'} operation EditDisplayName denied by "
        "role IngestionBotRole, policy IngestionBotPolicy, rule DisplayName-Deny"
    )
    authorize(Principal("admin", admin=True), ["EditDisplayName"], "table")  # admins skip policies


def test_data_steward_may_post_events_a_consumer_may_not() -> None:
    """ref §4.3 (OM's own test): DataSteward may post OpenLineage events; no EditLineage → 403."""
    fake = om()
    fake.add_token("steward", Principal("steward", roles=frozenset({"DataSteward"}), bot=False))
    fake.add_token("reader", Principal("reader", roles=frozenset({"DataConsumer"}), bot=False))
    assert post(fake, [event()], token="steward").status_code == 200
    refused = post(fake, [event()], token="reader")
    assert error(refused) == (
        403,
        "Principal: CatalogPrincipal{name='reader'} operations [EditLineage] not allowed",
    )
    assert refused.headers["WWW-Authenticate"] == "om-auth"
    assert fake.requests[-1].violation == "forbidden"


def test_login_session_is_the_seeded_users_and_admin_only_if_configured() -> None:
    """ref §4.1: the session token belongs to the user of that email."""
    fake = FakeOpenMetadata()
    fake.add_user("jane@example.com", "pw", roles=frozenset({"DataSteward"}))
    fake.passwords["root@example.com"] = "root"
    fake.admins.add("root@example.com")
    http = client(fake)

    def login(email: str, password: str) -> str:
        body = {"email": email, "password": base64.b64encode(password.encode()).decode()}
        reply = http.post("/api/v1/users/login", json=body)
        assert reply.json()["tokenType"] == "Bearer"
        return str(reply.json()["accessToken"])

    jane = login("jane@example.com", "pw")
    assert fake.principals[jane].name == "jane"
    assert fake.principals[jane].roles == frozenset({"DataSteward"})
    settings = http.get("/api/v1/system/settings/openLineageSettings", headers=bearer(jane))
    assert error(settings) == (403, "Principal: CatalogPrincipal{name='jane'} is not admin")
    root = login("root@example.com", "root")
    ok = http.get("/api/v1/system/settings/openLineageSettings", headers=bearer(root))
    assert ok.status_code == 200


def test_login_rejects_plaintext_and_wrong_passwords() -> None:
    """ref §4.1: base64 required (400), wrong credentials 401."""
    fake = FakeOpenMetadata()
    fake.add_user("jane@example.com", "pw")
    http = client(fake)
    plain = http.post("/api/v1/users/login", json={"email": "jane@example.com", "password": "p w"})
    assert error(plain) == (400, "Password needs to be encoded in Base-64.")
    wrong = base64.b64encode(b"nope").decode()
    bad = http.post("/api/v1/users/login", json={"email": "jane@example.com", "password": wrong})
    assert error(bad) == (401, "You have entered an invalid username or password.")


# -- §4.4, §2.9: authorization per endpoint ----------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "Not Authorized! Token not present"),
        ({"Authorization": "Basic abc"}, "Not Authorized! Token not present"),
        (bearer("who-knows"), "Not Authorized! Unable to decode the token."),
        (bearer("old-jwt"), "Expired token!"),
    ],
)
def test_401_bodies(headers: dict[str, str], message: str) -> None:
    """ref §4.4: the JWT filter's answers, with WWW-Authenticate: om-auth."""
    fake = FakeOpenMetadata.with_bot()
    fake.add_token("old-jwt", Principal("ingestion-bot", expired=True))
    reply = client(fake).get("/api/v1/tables", headers=headers)
    assert reply.status_code == 401
    assert reply.json() == {"code": 401, "message": message}
    assert reply.headers["WWW-Authenticate"] == "om-auth"


def test_settings_reads_are_admin_only_except_lineage_settings() -> None:
    """ref §2.9: getSettingByName calls authorizeAdmin for every setting but lineageSettings."""
    fake = om()
    http = client(fake)
    denied = http.get("/api/v1/system/settings/openLineageSettings", headers=bearer("bot-jwt"))
    assert denied.json() == {
        "code": 403,
        "message": "Principal: CatalogPrincipal{name='ingestion-bot'} is not admin",
    }
    assert denied.headers["WWW-Authenticate"] == "om-auth"
    assert fake.requests[-1].violation == "not-admin"
    lineage = http.get("/api/v1/system/settings/lineageSettings", headers=bearer("bot-jwt"))
    assert lineage.status_code == 200
    assert lineage.json()["config_type"] == "lineageSettings"


def test_settings_writes_are_admin_only_and_take_effect() -> None:
    """ref §2.9: PUT /system/settings and PATCH /system/settings/{name} need admin."""
    fake = om()
    held = fake.settings
    http = client(fake)
    body = {"config_type": "openLineageSettings", "config_value": {"enabled": False}}
    bot_put = http.put("/api/v1/system/settings", json=body, headers=bearer("bot-jwt"))
    assert bot_put.status_code == 403
    assert fake.settings["enabled"] is True
    assert (
        http.put("/api/v1/system/settings", json=body, headers=bearer("admin-jwt")).status_code
        == 200
    )
    assert held == {"enabled": False}  # replaced, in place
    patch = [{"op": "add", "path": "/namespaceToServiceMapping", "value": {NS: "pg"}}]
    patch_headers = {**bearer("admin-jwt"), "Content-Type": "application/json-patch+json"}
    as_json = http.patch(
        "/api/v1/system/settings/openLineageSettings", json=patch, headers=bearer("admin-jwt")
    )
    assert as_json.status_code == 415
    bot_patch = http.request(
        "PATCH",
        "/api/v1/system/settings/openLineageSettings",
        content=json.dumps(patch),
        headers={**bearer("bot-jwt"), "Content-Type": "application/json-patch+json"},
    )
    assert bot_patch.status_code == 403
    patched = http.request(
        "PATCH",
        "/api/v1/system/settings/openLineageSettings",
        content=json.dumps(patch),
        headers=patch_headers,
    )
    assert patched.json()["config_value"]["namespaceToServiceMapping"] == {NS: "pg"}
    assert fake.settings["namespaceToServiceMapping"] == {NS: "pg"}


def test_gets_need_view_all() -> None:
    """ref §4.4, §3.6: GETs (entities, lists, lineage) authorize ViewAll."""
    fake = om()
    fake.add_token("blind", Principal("blind", permissions=frozenset({"EditLineage"})))
    http = client(fake)
    for path in (
        f"/api/v1/tables/name/{SRC}",
        "/api/v1/tables",
        f"/api/v1/lineage/table/name/{SRC}",
    ):
        reply = http.get(path, headers=bearer("blind"))
        assert error(reply) == (
            403,
            "Principal: CatalogPrincipal{name='blind'} operations [ViewAll] not allowed",
        )


def test_post_needs_create_and_put_needs_create_when_new_edit_all_when_existing() -> None:
    """ref §3.1, §4.4: PUT authorizes Create for a new entity, EditAll for an existing one."""
    fake = om()
    fake.add_token("editor", Principal("editor", permissions=frozenset({"EditAll", "ViewAll"})))
    fake.add_token("creator", Principal("creator", permissions=frozenset({"Create", "ViewAll"})))
    http = client(fake)
    new = {"name": "svc2", "serviceType": "CustomDatabase"}
    old = {"name": "pg", "serviceType": "CustomDatabase", "description": "x"}
    path = "/api/v1/services/databaseServices"
    assert error(http.put(path, json=new, headers=bearer("editor")))[1].endswith(
        "operations [Create] not allowed"
    )
    assert http.put(path, json=old, headers=bearer("editor")).status_code == 200
    assert error(http.put(path, json=old, headers=bearer("creator")))[1].endswith(
        "operations [EditAll] not allowed"
    )
    assert error(http.post(path, json=old, headers=bearer("editor")))[1].endswith(
        "operations [Create] not allowed"  # before the 409
    )


@pytest.mark.parametrize(
    ("token", "body", "enabled", "status"),
    [
        (None, "{not json", True, 401),  # the JWT filter first
        ("reader", "{not json", True, 400),  # then the body
        ("reader", {"events": []}, True, 400),
        ("reader", {"events": [event()]}, False, 403),  # then the handler's authorization
        ("bot-jwt", {"events": [event()]}, False, 503),  # then the settings
    ],
)
def test_openlineage_failure_order(
    token: str | None, body: Any, enabled: bool, status: int
) -> None:
    """ref §1.1: 401, then 400 (parsing, bean validation), then 403, then 503."""
    fake = om()
    fake.add_token("reader", Principal("reader", roles=frozenset({"DataConsumer"}), bot=False))
    fake.settings["enabled"] = enabled
    headers = {"Content-Type": "application/json", **(bearer(token) if token else {})}
    raw = body if isinstance(body, str) else json.dumps(body)
    reply = client(fake).post("/api/v1/openlineage/lineage/batch", content=raw, headers=headers)
    assert reply.status_code == status
    if status == 503:
        assert reply.json() == {
            "status": "failure",
            "message": "OpenLineage API is disabled",
            "lineageEdgesCreated": 0,
        }
