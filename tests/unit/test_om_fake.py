"""The OM stand-in itself, rule by rule against ../shared/ref/openmetadata-api.md ("ref §n").

If one of these fails, the stand-in no longer answers like OM: fix the stand-in, not the test.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx2
import pytest

from tests.fakes.om_auth import BOT_ROLES, OMError, authorize
from tests.fakes.openmetadata import FakeOpenMetadata, Principal

BASE = "http://om.test"
RUN_ID = "01a22a97-c811-7ab0-b0d7-94051423011d"
NS = "postgres://db:5432"
SRC, DST = "pg.shop.sales.orders", "pg.shop.marts.revenue"


def client(fake: FakeOpenMetadata) -> httpx2.Client:
    return httpx2.Client(transport=httpx2.WSGITransport(app=fake), base_url=BASE)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def om(version: str = "2.0", **kwargs: Any) -> FakeOpenMetadata:
    """A stand-in with ingestion-bot (bot-jwt), an admin (admin-jwt) and the tables SRC, DST."""
    fake = FakeOpenMetadata.with_bot(version=version, **kwargs)
    fake.add_token("admin-jwt", Principal("admin", roles=frozenset(), admin=True, bot=False))
    seed_table(fake, SRC, ("id", "amount"))
    seed_table(fake, DST, ("id", "total"))
    return fake


def seed_table(fake: FakeOpenMetadata, fqn: str, columns: tuple[str, ...] = ("id",)) -> None:
    service, database, schema, table = fqn.split(".")
    if fake.entity("databaseService", service) is None:
        fake.seed("databaseService", {"name": service, "serviceType": "CustomDatabase"})
    if fake.entity("database", f"{service}.{database}") is None:
        fake.seed("database", {"name": database, "service": service})
    if fake.entity("databaseSchema", f"{service}.{database}.{schema}") is None:
        fake.seed("databaseSchema", {"name": schema, "database": f"{service}.{database}"})
    fake.seed(
        "table",
        {
            "name": table,
            "databaseSchema": f"{service}.{database}.{schema}",
            "columns": [{"name": c, "dataType": "INT"} for c in columns],
        },
    )


def dataset(name: str, namespace: str = NS, **facets: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"namespace": namespace, "name": name}
    if facets:
        out["facets"] = facets
    return out


def event(
    inputs: list[dict[str, Any]] | None = None,
    outputs: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A valid COMPLETE event from shop.sales.orders to shop.marts.revenue (resolves to SRC, DST)."""
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/producer",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": RUN_ID},
        "job": {"namespace": "dbt", "name": "shop"},
        "inputs": [dataset("shop.sales.orders")] if inputs is None else inputs,
        "outputs": [dataset("shop.marts.revenue")] if outputs is None else outputs,
        **fields,
    }


def post(
    fake: FakeOpenMetadata, events: Any, *, token: str | None = "bot-jwt", batch: bool = True
) -> httpx2.Response:
    path = "/api/v1/openlineage/lineage" + ("/batch" if batch else "")
    body = {"events": events} if batch else events
    headers = bearer(token) if token else {}
    return client(fake).post(path, json=body, headers=headers)


def edge(fake: FakeOpenMetadata, src: str = SRC, dst: str = DST) -> dict[str, Any] | None:
    a, b = fake.entity("table", src), fake.entity("table", dst)
    assert a is not None
    assert b is not None
    return fake.edges.get((a["id"], b["id"]))


def error(response: httpx2.Response) -> tuple[int, str]:
    return response.status_code, response.json()["message"]


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


# -- §1.2, §1.3, §1.4: OpenLineage bodies -------------------------------------------------------


def _entries(reply: httpx2.Response) -> set[str]:
    message = reply.json()["message"]
    assert message.startswith("["), message
    assert message.endswith("]"), message
    return set(message[1:-1].split(", "))


def test_missing_required_fields_are_all_listed() -> None:
    """ref §1.3: one `query param <leaf> must not be null` per violation."""
    fake = om()
    bad = event()
    del bad["eventTime"], bad["producer"]
    reply = post(fake, [bad])
    assert reply.status_code == 400
    assert set(reply.json()) == {"code", "message"}
    assert _entries(reply) == {
        "query param eventTime must not be null",
        "query param producer must not be null",
    }
    assert fake.requests[-1].violation == "required"


@pytest.mark.parametrize(
    ("change", "leaf"),
    [
        (lambda e: e["run"].pop("runId"), "runId"),
        (lambda e: e["job"].pop("namespace"), "namespace"),
        (lambda e: e["inputs"][0].pop("name"), "name"),
        (
            lambda e: e["inputs"][0].update(facets={"schema": {"fields": [{"name": "id"}]}}),
            "type",
        ),
        (
            lambda e: e["inputs"][0].update(
                facets={"symlinks": {"identifiers": [{"namespace": "n", "name": "a.b"}]}}
            ),
            "type",
        ),
        (
            lambda e: e["outputs"][0].update(
                outputFacets={
                    "columnLineage": {
                        "fields": {"id": {"inputFields": [{"namespace": NS, "name": "a.b"}]}}
                    }
                }
            ),
            "field",
        ),
        (lambda e: e["run"].update(facets={"parent": {"run": {"runId": RUN_ID}}}), "job"),
        (lambda e: e.update(eventTime=None), "eventTime"),  # null is absent
    ],
)
def test_nested_required_fields(change: Any, leaf: str) -> None:
    """ref §1.2, §1.3: required fields of every nested object (run, job, dataset, facets)."""
    bad = event()
    change(bad)
    reply = post(om(), [bad])
    assert reply.json() == {"code": 400, "message": f"[query param {leaf} must not be null]"}


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e["run"].update(runId="not-a-uuid"),
        lambda e: e["run"].update(runId="{" + RUN_ID + "}"),
        lambda e: e["run"].update(runId=RUN_ID.replace("-", "")),
        lambda e: e.update(producer="not a uri"),
        lambda e: e.update(schemaURL="http://"),
        lambda e: e.update(eventType="DONE"),
        lambda e: e.update(inputs="shop.sales.orders"),
        lambda e: e["job"].update(name={"a": 1}),
        lambda e: e["outputs"][0].update(facets={"datasource": {"name": "d", "uri": "a b"}}),
    ],
)
def test_binding_errors_are_invalid_request_format(change: Any) -> None:
    """ref §1.3: bad UUID, bad URI, unknown enum value, wrong type → Invalid request format."""
    fake = om()
    bad = event()
    change(bad)
    reply = post(fake, [bad])
    assert reply.json() == {"code": 400, "message": "Invalid request format"}
    assert fake.requests[-1].violation == "format"


def test_binding_errors_come_before_missing_fields() -> None:
    """ref §1.3: Jackson fails before bean validation runs."""
    bad = event()
    del bad["producer"]
    bad["run"]["runId"] = "nope"
    assert post(om(), [bad]).json()["message"] == "Invalid request format"


def test_malformed_json() -> None:
    """ref §1.3: Dropwizard's JsonProcessingExceptionMapper."""
    fake = om()
    reply = client(fake).post(
        "/api/v1/openlineage/lineage/batch",
        content=b'{"events": [',
        headers={**bearer("bot-jwt"), "Content-Type": "application/json"},
    )
    assert reply.status_code == 400
    assert reply.json()["message"] == "Unable to process JSON"
    assert "details" in reply.json()
    assert fake.requests[-1].violation == "json"


def test_events_must_be_a_non_empty_list() -> None:
    """ref §1.2, §1.3: `events` required, minItems 1."""
    fake = om()
    http = client(fake)
    empty = http.post(
        "/api/v1/openlineage/lineage/batch", json={"events": []}, headers=bearer("bot-jwt")
    )
    assert empty.json() == {
        "code": 400,
        "message": "[query param events size must be between 1 and 2147483647]",
    }
    none = http.post("/api/v1/openlineage/lineage/batch", json={}, headers=bearer("bot-jwt"))
    assert none.json()["message"] == "[query param events must not be null]"


def test_unknown_fields_are_accepted() -> None:
    """ref §1.2: Dropwizard's mapper ignores unknown properties despite additionalProperties."""
    fake = om()
    extra = event(ownVersion="1")
    extra["inputs"][0]["facets"] = {"dataQuality": {"rows": 3}, "schema": {"fields": [], "x": 1}}
    reply = client(fake).post(
        "/api/v1/openlineage/lineage/batch",
        json={"events": [extra], "note": "hi"},
        headers=bearer("bot-jwt"),
    )
    assert reply.status_code == 200
    assert reply.json()["lineageEdgesCreated"] == 1


def test_one_bad_event_refuses_the_whole_batch() -> None:
    """ref §1.3: validation is of the whole body; nothing is written."""
    fake = om()
    bad = event()
    bad["run"]["runId"] = "x"
    assert post(fake, [event(), bad]).status_code == 400
    assert fake.edges == {}


@pytest.mark.parametrize(
    ("version", "time", "ok"),
    [
        ("2.0", "2026-11-30T03:55:00Z", True),
        ("2.0", "2026-11-30T03:55:00.5Z", True),
        ("2.0", "2026-11-30T03:55:00.123456789Z", True),
        ("2.0", 1764474900000, True),
        ("2.0", "1764474900000", True),
        ("2.0", "2026-11-30T03:55:00+00:00", False),
        ("2.0", "2026-11-30T03:55:00.123+00:00", False),
        ("2.0", "2026-11-30T03:55:00+0000", False),
        ("2.0", "2026-11-30T03:55:00", False),
        ("1.12", "2026-11-30T03:55:00+00:00", True),
        ("1.12", "2026-11-30T03:55:00.123456-05:00", True),
        ("1.12", "2026-11-30T03:55:00", True),
        ("1.12", "2026-11-30", True),
        ("1.12", "2026-11-30 03:55:00Z", False),
        ("1.12", "yesterday", False),
    ],
)
def test_event_time_per_version(version: str, time: Any, ok: bool) -> None:
    """ref §1.4, §6: 2.0 accepts only `...Z` (and epoch millis); 1.12 lenient ISO-8601."""
    reply = post(om(version), [event(eventTime=time)])
    if ok:
        assert reply.status_code == 200
    else:
        assert reply.json() == {"code": 400, "message": "Invalid request format"}


# -- §3, §5: entity bodies ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"name": "t", "databaseSchema": "pg.shop.sales"},
            "[query param columns must not be null]",
        ),
        (
            {"name": "t", "databaseSchema": "pg.shop.sales", "columns": [{"name": "c"}]},
            "[query param dataType must not be null]",
        ),
        (
            {
                "name": "t",
                "databaseSchema": "pg.shop.sales",
                "columns": [{"name": "c", "dataType": "VARCHAR2"}],
            },
            "Invalid request format",
        ),
        (
            {"name": "a::b", "databaseSchema": "pg.shop.sales", "columns": []},
            '[query param name must match "^((?!::).)*$"]',
        ),
        (
            {"name": "x" * 257, "databaseSchema": "pg.shop.sales", "columns": []},
            "[query param name size must be between 1 and 256]",
        ),
        (
            {"name": 'a"b', "databaseSchema": "pg.shop.sales", "columns": []},
            'Invalid name a"b',
        ),
        (
            {"name": "t", "databaseSchema": "pg.shop.sales", "columns": [], "tableType": "Table"},
            "Invalid request format",
        ),
    ],
)
def test_entity_bodies_answer_like_om(body: dict[str, Any], message: str) -> None:
    """ref §3.1, §3.3, §5.1, §5.2: bean validation lists, binding errors, invalid names."""
    fake = om()
    reply = client(fake).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert reply.json() == {"code": 400, "message": message}


def test_semantic_view_is_a_2_0_table_type() -> None:
    """ref §3.3: 2.0.7 adds tableType SemanticView (unknown enum value on 1.12)."""
    body = {
        "name": "v",
        "databaseSchema": "pg.shop.sales",
        "columns": [],
        "tableType": "SemanticView",
    }
    assert (
        client(om("2.0")).put("/api/v1/tables", json=body, headers=bearer("bot-jwt")).status_code
        == 201
    )
    old = client(om("1.12")).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert old.json()["message"] == "Invalid request format"


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ([{"name": "c", "dataType": "INT"}] * 2, "Column name c is repeated"),
        (
            [{"name": "c", "dataType": "VARBINARY"}],
            "For column data types char, varchar, binary, varbinary dataLength must not be null",
        ),
        (
            [{"name": "c", "dataType": "ARRAY"}],
            "For column data type array, arrayDataType must not be null",
        ),
        (
            [{"name": "c", "dataType": "STRUCT"}],
            "For column data type struct, children must not be null",
        ),
        (
            [{"name": "c", "dataType": "DECIMAL", "scale": 2}],
            "Scale is set but precision is not set for the column c",
        ),
        (
            [{"name": "c", "dataType": "DECIMAL", "scale": 4, "precision": 2}],
            "Scale can't be greater than the precision for the column c",
        ),
    ],
)
def test_column_rules(columns: list[dict[str, Any]], message: str) -> None:
    """ref §3.4: DatabaseUtil's column checks."""
    body = {"name": "t", "databaseSchema": "pg.shop.sales", "columns": columns}
    reply = client(om()).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert reply.json() == {"code": 400, "message": message}


def test_columns_are_stored_as_om_stores_them() -> None:
    """ref §3.4: dataTypeDisplay lower-cased (default: the type), arrayDataType only on arrays."""
    fake = om()
    body = {
        "name": "t",
        "databaseSchema": "pg.shop.sales",
        "columns": [
            {"name": "a", "dataType": "INT", "arrayDataType": "INT"},
            {
                "name": "b.c",
                "dataType": "VARCHAR",
                "dataLength": 9,
                "dataTypeDisplay": "VARCHAR(9)",
            },
        ],
    }
    client(fake).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    a, b = fake.entity("table", "pg.shop.sales.t")["columns"]
    assert (a["dataTypeDisplay"], "arrayDataType" in a) == ("int", False)
    assert (b["dataTypeDisplay"], b["fullyQualifiedName"]) == (
        "varchar(9)",
        'pg.shop.sales.t."b.c"',
    )


# -- §1.5: answers --------------------------------------------------------------------------------


def test_single_event_answers() -> None:
    """ref §1.5 (single): 200 with the edge count, no summary."""
    fake = om()
    created = post(fake, event(), batch=False)
    assert created.json() == {
        "status": "success",
        "message": "Created 1 lineage edge(s)",
        "lineageEdgesCreated": 1,
    }
    skipped = post(fake, event(eventType="START"), batch=False)
    assert skipped.json() == {
        "status": "success",
        "message": "Event processed, no lineage edges created",
        "lineageEdgesCreated": 0,
    }


def test_single_event_mapper_exception_is_500() -> None:
    """ref §1.5 (single): a mapper exception → 500 with OM's failure body."""
    fake = om()
    fake.fail_events(lambda _event: "boom")
    reply = post(fake, event(), batch=False)
    assert reply.status_code == 500
    assert reply.json() == {
        "status": "failure",
        "message": "Error processing event: boom",
        "lineageEdgesCreated": 0,
    }
    assert fake.requests[-1].violation == "mapper"


@pytest.mark.parametrize(
    ("kinds", "status", "counts"),
    [
        (["ok", "fail"], "partial_success", (2, 1, 1, 0)),
        (["fail", "fail"], "failure", (2, 0, 2, 0)),
        (["fail", "skip"], "success", (2, 0, 1, 1)),  # OM's rule: neither branch → success
        (["skip", "skip"], "success", (2, 0, 0, 2)),
        (["ok", "skip"], "success", (2, 1, 0, 1)),
    ],
)
def test_batch_status_summary_and_failed_events(
    kinds: list[str], status: str, counts: tuple[int, int, int, int]
) -> None:
    """ref §1.5 (batch): summary, failedEvents (only when not empty), the status rule."""
    fake = om()
    fake.fail_events(lambda e: "mapper says no" if e["job"]["name"] == "fail" else None)
    events = [
        event(eventType="START" if k == "skip" else "COMPLETE", job={"namespace": "dbt", "name": k})
        for k in kinds
    ]
    reply = post(fake, events)
    assert reply.status_code == 200
    body = reply.json()
    received, successful, failed, skipped = counts
    assert body["status"] == status
    assert body["summary"] == {
        "received": received,
        "successful": successful,
        "failed": failed,
        "skipped": skipped,
    }
    assert body["message"] == (
        f"Processed {received} events: {successful} successful, {failed} failed, "
        f"{skipped} skipped. Created {successful} lineage edges."
    )
    expected = [
        {"index": i, "reason": "mapper says no", "retriable": False}
        for i, k in enumerate(kinds)
        if k == "fail"
    ]
    assert body.get("failedEvents") == (expected or None)


@pytest.mark.parametrize(
    ("version", "change", "settings"),
    [
        ("2.0", lambda e: e.update(eventType="RUNNING"), {}),
        ("2.0", lambda e: e.update(inputs=[]), {}),
        ("2.0", lambda e: e.pop("outputs"), {}),
        ("2.0", lambda e: e["outputs"][0].update(name="shop.marts.nope"), {}),
        ("2.0", lambda e: e["inputs"][0].update(name="nope.nope"), {}),
        ("2.0", lambda _event: None, {"eventTypeFilter": ["START"]}),
        ("1.12", lambda _event: None, {"eventTypeFilter": []}),  # 1.12.0: empty filter = nothing
    ],
)
def test_what_makes_an_event_skipped(version: str, change: Any, settings: dict[str, Any]) -> None:
    """ref §1.5 "What makes an event skipped": filtered type, no inputs/outputs, unresolved."""
    fake = om(version)
    fake.settings.update(settings)
    bad = event()
    change(bad)
    body = post(fake, [bad]).json()
    assert body["summary"]["skipped"] == 1
    assert fake.edges == {}


def test_missing_event_type_is_complete_and_empty_filter_on_2_0_is_complete() -> None:
    """ref §1.5, §6: no eventType = COMPLETE; 2.0's empty eventTypeFilter falls back to COMPLETE."""
    fake = om("2.0")
    fake.settings["eventTypeFilter"] = []
    bare = event()
    del bare["eventType"]
    assert post(fake, [bare]).json()["summary"]["successful"] == 1


def test_failed_edge_writes_are_not_counted() -> None:
    """ref §1.5: an addLineage that throws is not counted; all failed → the event is skipped."""
    fake = om()
    seed_table(fake, "pg.shop.sales.customers")
    fake.fail_edges(lambda src, _dst: src == SRC)
    two = event(inputs=[dataset("shop.sales.orders"), dataset("shop.sales.customers")])
    assert post(fake, [two]).json()["lineageEdgesCreated"] == 1
    assert post(fake, [event()]).json()["summary"]["skipped"] == 1


# -- §2: resolution ------------------------------------------------------------------------------


def test_1_12_ignores_the_database_segment_2_0_uses_it() -> None:
    """ref §2.2: 1.12 uses the last two segments; 2.0 tries `%<db>.<schema>.<table>` first."""
    for version, expected in (("1.12", "a.one.sales.orders"), ("2.0", "b.two.sales.orders")):
        fake = om(version)
        seed_table(fake, "a.one.sales.orders")
        seed_table(fake, "b.two.sales.orders")
        post(fake, [event(inputs=[dataset("two.sales.orders")])])
        assert edge(fake, expected, DST) is not None, version
        assert len(fake.edges) == 1


def test_symlinks_1_12_first_only_2_0_all_then_name() -> None:
    """ref §2.2: 1.12 takes symlinks[0] (else name); 2.0 every symlink, then the name."""
    links = {
        "identifiers": [
            {"namespace": NS, "name": "nope.nope", "type": "TABLE"},
            {"namespace": NS, "name": "shop.sales.orders", "type": "TABLE"},
        ]
    }
    source = dataset("whatever.x", symlinks=links)
    old, new = om("1.12"), om("2.0")
    assert post(old, [event(inputs=[source])]).json()["summary"]["skipped"] == 1
    assert post(new, [event(inputs=[source])]).json()["lineageEdgesCreated"] == 1


def test_mapping_lookup_per_version() -> None:
    """ref §2.4: 1.12 also matches a key that starts with the namespace; 2.0 only prefixes."""
    for version, expected in (("1.12", "b.shop.sales.orders"), ("2.0", "a.shop.sales.orders")):
        fake = om(version)
        seed_table(fake, "a.shop.sales.orders")
        seed_table(fake, "b.shop.sales.orders")
        fake.settings["namespaceToServiceMapping"] = {"mssql://src:1433/crm": "b"}
        post(fake, [event(inputs=[dataset("shop.sales.orders", "mssql://src:1433")])])
        assert edge(fake, expected, DST) is not None, version


def test_first_mapping_entry_in_insertion_order_wins() -> None:
    """ref §2.4: exact key first, else the first matching entry in map order."""
    fake = om()
    seed_table(fake, "a.shop.sales.orders")
    seed_table(fake, "b.shop.sales.orders")
    fake.settings["namespaceToServiceMapping"] = {"mssql://": "b", "mssql://src": "a"}
    post(fake, [event(inputs=[dataset("shop.sales.orders", "mssql://src:1433")])])
    assert edge(fake, "b.shop.sales.orders", DST) is not None
    fake.settings["namespaceToServiceMapping"] = {"mssql://": "b", "mssql://src:1433": "a"}
    post(fake, [event(inputs=[dataset("shop.sales.orders", "mssql://src:1433")])])
    assert edge(fake, "a.shop.sales.orders", DST) is not None


def test_1_12_mapped_namespace_does_not_fall_back() -> None:
    """ref §2.2: 1.12 only looks under the mapped service; 2.0 goes on to the suffix lookups."""
    for version, resolved in (("1.12", False), ("2.0", True)):
        fake = om(version)
        fake.seed("databaseService", {"name": "empty", "serviceType": "CustomDatabase"})
        fake.settings["namespaceToServiceMapping"] = {NS: "empty"}
        body = post(fake, [event()]).json()
        assert (body["lineageEdgesCreated"] == 1) is resolved, version


def test_datasource_facet_names_the_service() -> None:
    """ref §2.2: the `datasource` facet's `name` selects the service (1.12 step 4)."""
    fake = om("1.12")
    seed_table(fake, "a.x.sales.orders")
    seed_table(fake, "z.y.sales.orders")
    source = dataset("sales.orders", datasource={"name": "z", "uri": "postgres://z:5432"})
    post(fake, [event(inputs=[source])])
    assert edge(fake, "z.y.sales.orders", DST) is not None


def test_fqn_comparisons_are_case_sensitive() -> None:
    """ref §2.2, §2.4: a mapping to CRM_INGESTED does not find service crm_ingested."""
    old = om("1.12")
    seed_table(old, "crm_ingested.crm.sales.customers")
    old.settings["namespaceToServiceMapping"] = {"mssql://src": "CRM_INGESTED"}
    source = dataset("crm.sales.customers", "mssql://src")
    assert post(old, [event(inputs=[source])]).json()["summary"]["skipped"] == 1
    new = om("2.0")
    seed_table(new, "abc.crm.sales.customers")  # FQN order: first for the suffix lookups
    seed_table(new, "crm_ingested.crm.sales.customers")
    new.settings["namespaceToServiceMapping"] = {"mssql://src": "CRM_INGESTED"}
    post(new, [event(inputs=[source])])
    assert edge(new, "abc.crm.sales.customers", DST) is not None
    lower = dataset("crm.sales.CUSTOMERS", "mssql://src")
    assert post(new, [event(inputs=[lower])]).json()["summary"]["skipped"] == 1


@pytest.mark.parametrize(
    ("name", "resolved"),
    [
        ("table/sales/orders", True),  # Glue
        ("/warehouse/sales.db/orders", True),  # Hive warehouse path
        ("shop/sales/orders", True),  # short slash form
        ("orders", False),  # a bare token gives no candidate (issue #31893)
        ("a/b/c/d", False),
    ],
)
def test_2_0_name_normaliser(name: str, resolved: bool) -> None:
    """ref §2.2 "With the name normaliser"."""
    body = post(om("2.0"), [event(inputs=[dataset(name)])]).json()
    assert (body["lineageEdgesCreated"] == 1) is resolved


@pytest.mark.parametrize(
    "namespace", ["s3://lake", "gs://lake", "abfss://c@a", "file", "file://host"]
)
def test_storage_and_file_namespaces_never_resolve_to_tables(namespace: str) -> None:
    """ref §2.3: storage datasets are containers (not resolved here), never tables."""
    body = post(om(), [event(inputs=[dataset("shop.sales.orders", namespace)])]).json()
    assert body["summary"]["skipped"] == 1


def test_suffix_lookup_has_no_dot_before_the_schema() -> None:
    """ref §2.2: `%<schema>.<table>` also matches `x<schema>.<table>`, first in FQN order."""
    fake = om("1.12")
    seed_table(fake, "a.db.xsales.orders")
    post(fake, [event(inputs=[dataset("sales.orders")])])
    assert edge(fake, "a.db.xsales.orders", DST) is not None


# -- §2.5, §2.6, §2.8: edges ------------------------------------------------------------------


def _column_facet(*pairs: tuple[str, str], source: str = "shop.sales.orders") -> dict[str, Any]:
    return {
        "fields": {
            out: {
                "inputFields": [{"namespace": NS, "name": source, "field": col}],
                "transformationDescription": f"from {col}",
            }
            for out, col in pairs
        }
    }


def test_column_lineage_location_per_version() -> None:
    """ref §2.5: 1.12 reads only outputFacets.columnLineage; 2.0 also dataset facets."""
    facet = _column_facet(("total", "amount"))
    in_facets = dataset("shop.marts.revenue", columnLineage=facet)
    in_output_facets = {**dataset("shop.marts.revenue"), "outputFacets": {"columnLineage": facet}}
    expected = [
        {
            "fromColumns": [f"{SRC}.amount"],
            "toColumn": f"{DST}.total",
            "function": "from amount",
        }
    ]
    for version, output, columns in (
        ("1.12", in_facets, None),
        ("2.0", in_facets, expected),
        ("1.12", in_output_facets, expected),
    ):
        fake = om(version)
        post(fake, [event(outputs=[output])])
        details = edge(fake)
        assert details is not None
        assert details["columnsLineage"] == columns, version


def test_column_lineage_is_filtered_by_the_server_and_the_edge_stays() -> None:
    """ref §2.5: unknown to/from columns and unmatched inputFields are dropped; edge written."""
    facet = _column_facet(("total", "AMOUNT"), ("nope", "amount"), ("id", "id"))
    facet["fields"]["id"]["inputFields"].append(
        {"namespace": NS, "name": "shop.sales.elsewhere", "field": "id"}
    )
    fake = om()
    post(fake, [event(outputs=[dataset("shop.marts.revenue", columnLineage=facet)])])
    details = edge(fake)
    assert details is not None
    assert details["columnsLineage"] == [
        {"fromColumns": [f"{SRC}.id"], "toColumn": f"{DST}.id", "function": "from id"}
    ]
    none_left = _column_facet(("nope", "amount"))
    post(fake, [event(outputs=[dataset("shop.marts.revenue", columnLineage=none_left)])])
    assert edge(fake)["columnsLineage"] is None  # type: ignore[index]


def test_each_post_replaces_the_whole_details() -> None:
    """ref §2.8: one edge per (from, to); the latest post's details win entirely."""
    fake = om()
    fake.seed("pipelineService", {"name": "openlineage", "serviceType": "CustomPipeline"})
    fake.seed("pipeline", {"name": "dbt-shop", "service": "openlineage"})
    first = event(
        outputs=[dataset("shop.marts.revenue", columnLineage=_column_facet(("id", "id")))],
        job={"namespace": "dbt", "name": "shop", "facets": {"sql": {"query": "select 1"}}},
    )
    post(fake, [first])
    before = edge(fake)
    assert before is not None
    assert before["pipeline"]["fullyQualifiedName"] == "openlineage.dbt-shop"
    assert (before["sqlQuery"], before["source"], before["updatedBy"]) == (
        "select 1",
        "OpenLineage",
        "ingestion-bot",
    )
    post(fake, [event(job={"namespace": "other", "name": "job"})])
    after = edge(fake)
    assert after is not None
    assert (after["pipeline"], after["sqlQuery"], after["columnsLineage"]) == (None, None, None)
    assert (
        after["description"] == f"Lineage from OpenLineage event for job: other/job (run: {RUN_ID})"
    )
    assert len(fake.edges) == 1


def test_pipeline_lookup_per_version() -> None:
    """ref §2.6: parent job first; `<service>.<ns>-<name>`; 2.0 also `<ns>.<name>`."""
    for version, found in (("1.12", False), ("2.0", True)):
        fake = om(version)
        fake.seed("pipelineService", {"name": "airflow", "serviceType": "CustomPipeline"})
        fake.seed("pipeline", {"name": "dag", "service": "airflow"})
        parent = {
            "parent": {"job": {"namespace": "airflow", "name": "dag"}, "run": {"runId": RUN_ID}}
        }
        post(fake, [event(run={"runId": RUN_ID, "facets": parent})])
        details = edge(fake)
        assert details is not None
        assert (details["pipeline"] is not None) is found, version


# -- §3: entities ----------------------------------------------------------------------------------


def test_post_creates_then_409_after_the_create_check() -> None:
    """ref §3.1: POST → 201 + Location; the same FQN again → 409; Create is checked first."""
    fake = om()
    fake.add_token("lineage-jwt", Principal("lineage-bot", roles=frozenset({"LineageBotRole"})))
    http = client(fake)
    body = {"name": "warehouse", "service": "pg"}
    created = http.post("/api/v1/databases", json=body, headers=bearer("bot-jwt"))
    assert created.status_code == 201
    assert created.headers["Location"].endswith(created.json()["id"])
    assert "X-OpenMetadata-Change" not in created.headers
    again = http.post("/api/v1/databases", json=body, headers=bearer("bot-jwt"))
    assert again.json() == {"code": 409, "message": "Entity already exists"}
    assert again.headers["WWW-Authenticate"] == "om-auth"
    denied = http.post("/api/v1/databases", json=body, headers=bearer("lineage-jwt"))
    assert denied.status_code == 403
    assert fake.audit == [
        ("ingestion-bot", "POST", "pg.warehouse", "created"),
        ("ingestion-bot", "POST", "pg.warehouse", "conflict"),
        ("lineage-bot", "POST", "pg.warehouse", "denied"),
    ]


def test_put_change_header_and_version() -> None:
    """ref §3.1: PUT → 201 entityCreated, then 200 entityNoChange / entityUpdated."""
    fake = om()
    http = client(fake)
    body = {"name": "svc", "serviceType": "CustomDatabase"}
    path = "/api/v1/services/databaseServices"
    changes = []
    for sent in (body, body, {**body, "description": "d"}):
        reply = http.put(path, json=sent, headers=bearer("bot-jwt"))
        changes.append((reply.status_code, reply.headers["X-OpenMetadata-Change"]))
    assert changes == [(201, "entityCreated"), (200, "entityNoChange"), (200, "entityUpdated")]
    assert fake.entity("databaseService", "svc")["version"] == 0.2
    assert [a[3] for a in fake.audit] == ["created", "unchanged", "updated"]


def test_parent_must_exist() -> None:
    """ref §3.1, checklist 6: a missing parent → 404 with the parent's type."""
    body = {"name": "t", "databaseSchema": "pg.shop.nope", "columns": []}
    reply = client(om()).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert reply.json() == {
        "code": 404,
        "message": "databaseSchema instance for pg.shop.nope not found",
    }


def test_put_replaces_columns_as_sent() -> None:
    """ref §3.1: a PUT's columns replace the stored ones (a wipe to [] is visible)."""
    fake = om()
    body = {"name": "orders", "databaseSchema": "pg.shop.sales", "columns": []}
    reply = client(fake).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert reply.headers["X-OpenMetadata-Change"] == "entityUpdated"
    assert fake.entity("table", SRC)["columns"] == []


def test_a_bots_put_never_replaces_non_empty_descriptions() -> None:
    """ref §9.4: EntityRepository.updateDescription; admins and people may replace them."""
    fake = om()
    fake.seed(
        "table",
        {
            "name": "people",
            "databaseSchema": "pg.shop.sales",
            "description": "Ingested.",
            "columns": [
                {"name": "id", "dataType": "INT", "description": "ingested id"},
                {"name": "email", "dataType": "INT"},
            ],
        },
    )
    body = {
        "name": "people",
        "databaseSchema": "pg.shop.sales",
        "description": "From dbt.",
        "columns": [
            {"name": "id", "dataType": "INT", "description": "dbt id"},
            {"name": "email", "dataType": "INT", "description": "dbt email"},
        ],
    }
    http = client(fake)
    http.put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    table = fake.entity("table", "pg.shop.sales.people")
    assert table["description"] == "Ingested."
    assert [c.get("description") for c in table["columns"]] == ["ingested id", "dbt email"]
    again = http.put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert again.headers["X-OpenMetadata-Change"] == "entityNoChange"
    http.put("/api/v1/tables", json=body, headers=bearer("admin-jwt"))
    table = fake.entity("table", "pg.shop.sales.people")
    assert table["description"] == "From dbt."
    assert [c["description"] for c in table["columns"]] == ["dbt id", "dbt email"]


def test_get_by_name_fields_and_404() -> None:
    """ref §3.1, §3.3: columns only when asked for; unknown field → 400; missing → 404."""
    http = client(om())
    plain = http.get(f"/api/v1/tables/name/{SRC}", headers=bearer("bot-jwt"))
    assert "columns" not in plain.json()
    full = http.get(
        f"/api/v1/tables/name/{SRC}", params={"fields": "columns,tags"}, headers=bearer("bot-jwt")
    )
    assert [c["name"] for c in full.json()["columns"]] == ["id", "amount"]
    bad = http.get(
        f"/api/v1/tables/name/{SRC}", params={"fields": "colums"}, headers=bearer("bot-jwt")
    )
    assert bad.json() == {"code": 400, "message": "Invalid field name colums"}
    missing = http.get("/api/v1/tables/name/pg.shop.sales.nope", headers=bearer("bot-jwt"))
    assert missing.json() == {
        "code": 404,
        "message": "table instance for pg.shop.sales.nope not found",
    }


# -- §3.5, §3.6: lineage API --------------------------------------------------------------------


def test_lineage_read_and_get_lineage_edge() -> None:
    """ref §3.6: EntityLineage with UUID edges and columnsLineage; getLineageEdge; nulls left out."""
    fake = om()
    post(
        fake,
        [event(outputs=[dataset("shop.marts.revenue", columnLineage=_column_facet(("id", "id")))])],
    )
    http = client(fake)
    src, dst = fake.entity("table", SRC), fake.entity("table", DST)
    read = http.get(
        f"/api/v1/lineage/table/name/{DST}", params={"upstreamDepth": 1}, headers=bearer("bot-jwt")
    ).json()
    assert read["entity"]["fullyQualifiedName"] == DST
    assert [n["fullyQualifiedName"] for n in read["nodes"]] == [SRC]
    (up,) = read["upstreamEdges"]
    assert (up["fromEntity"], up["toEntity"]) == (src["id"], dst["id"])
    assert up["lineageDetails"]["columnsLineage"][0]["toColumn"] == f"{DST}.id"
    assert "pipeline" not in up["lineageDetails"]  # null fields are omitted
    got = http.get(
        f"/api/v1/lineage/getLineageEdge/{src['id']}/{dst['id']}", headers=bearer("bot-jwt")
    )
    assert got.json()["edge"]["source"] == "OpenLineage"
    none = http.get(
        f"/api/v1/lineage/getLineageEdge/{dst['id']}/{src['id']}", headers=bearer("bot-jwt")
    )
    assert none.json() == {
        "code": 404,
        "message": f"Lineage edge not found between {dst['id']} and {src['id']}",
    }


def test_put_lineage_takes_ids_and_needs_edit_lineage() -> None:
    """ref §3.5: AddLineage by ids, 200 with no body, `Manual` source, 404, EditLineage."""
    fake = om()
    fake.add_token("reader", Principal("reader", roles=frozenset({"DataConsumer"}), bot=False))
    src, dst = fake.entity("table", SRC), fake.entity("table", DST)
    body = {
        "edge": {
            "fromEntity": {"id": src["id"], "type": "table"},
            "toEntity": {"id": dst["id"], "type": "table"},
        }
    }
    http = client(fake)
    done = http.put("/api/v1/lineage", json=body, headers=bearer("bot-jwt"))
    assert (done.status_code, done.content) == (200, b"")
    assert edge(fake)["source"] == "Manual"  # type: ignore[index]
    assert http.put("/api/v1/lineage", json=body, headers=bearer("reader")).status_code == 403
    missing_id = "00000000-0000-0000-0000-000000000000"
    body["edge"]["toEntity"]["id"] = missing_id
    gone = http.put("/api/v1/lineage", json=body, headers=bearer("bot-jwt"))
    assert gone.json() == {"code": 404, "message": f"table instance for {missing_id} not found"}
    by_fqn = {"edge": {"fromEntity": {"type": "table"}, "toEntity": {"type": "table"}}}
    assert http.put("/api/v1/lineage", json=by_fqn, headers=bearer("bot-jwt")).json()[
        "message"
    ] == ("[query param id must not be null, query param id must not be null]")


# -- scripting and schemas --------------------------------------------------------------------------


def test_fail_next_answers_the_next_matching_request() -> None:
    """Scripted faults: the next request under the prefix gets the status, then normal answers."""
    fake = om()
    fake.fail_next([503], "/api/v1/openlineage")
    http = client(fake)
    assert http.get("/api/v1/tables", headers=bearer("bot-jwt")).status_code == 200
    assert post(fake, [event()]).status_code == 503
    assert post(fake, [event()]).status_code == 200
    assert fake.requests[-2].violation == "fault"


def test_missing_schemas_folder_warns_and_keeps_the_hand_written_checks(tmp_path: Any) -> None:
    """The schemas folder is optional: a warning, no schema checks, eventTime/runId still read."""
    fake = FakeOpenMetadata.with_bot(schemas_dir=tmp_path / "nope")
    no_producer = event()
    del no_producer["producer"]
    with pytest.warns(UserWarning, match="not found"):
        assert post(fake, [no_producer]).status_code == 200
    assert post(fake, [event(eventTime="2026-11-30T03:55:00+00:00")]).status_code == 400
