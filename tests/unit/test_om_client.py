"""The OpenMetadata client and its auth providers, against the in-memory OM stand-in."""

from __future__ import annotations

import base64
from datetime import datetime, timezone
from pathlib import Path

import httpx2
import pytest

from dbt_oml.errors import (
    CredentialError,
    DeliveryError,
    RateLimitedError,
    TerminalDeliveryError,
    TransientDeliveryError,
    UnreachableError,
)
from dbt_oml.om.client import (
    BasicLogin,
    OAuth2ClientCredentials,
    OpenMetadataClient,
    StaticToken,
    TokenFile,
)
from tests.conftest import free_port
from tests.support.fakes.openmetadata import FakeOpenMetadata, Principal

BASE = "http://om.test"


@pytest.fixture
def om() -> FakeOpenMetadata:
    fake = FakeOpenMetadata()
    fake.add_token("bot-jwt", Principal("ingestion-bot"))
    fake.add_token("lineage-jwt", Principal("lineage-bot", permissions=frozenset({"EditLineage"})))
    fake.add_token("reader-jwt", Principal("reader", permissions=frozenset({"ViewAll"})))
    fake.add_token("old-jwt", Principal("ingestion-bot", expired=True))
    return fake


def client(om: FakeOpenMetadata, auth) -> OpenMetadataClient:
    return OpenMetadataClient(
        BASE, http=httpx2.Client(transport=httpx2.WSGITransport(app=om)), auth=auth
    )


def test_a_bots_settings_are_unknown_not_a_failure(om: FakeOpenMetadata) -> None:
    c = client(om, StaticToken("bot-jwt"))
    assert c.openlineage_settings() is None  # 403 "is not admin" (ref §2.9): use OM's defaults
    assert [r.status for r in om.requests] == [403]
    assert "bot-jwt" not in repr(c) + repr(StaticToken("bot-jwt"))


def test_an_admin_token_reads_settings(om: FakeOpenMetadata) -> None:
    om.add_token("admin-jwt", Principal("admin", admin=True))
    c = client(om, StaticToken("admin-jwt"))
    assert c.openlineage_settings()["defaultPipelineService"] == "openlineage"
    assert c.requests == 1


def test_token_file_is_reread_after_a_401(om: FakeOpenMetadata, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old-jwt\n")
    provider = TokenFile(token)
    c = client(om, provider)
    assert provider.token(c.http, BASE) == "old-jwt"
    token.write_text("bot-jwt\n")  # the Secret is rotated after the first read
    assert c.openlineage_settings() is None
    assert [r.status for r in om.requests] == [401, 403]  # the new token was accepted


def test_token_file_missing_is_a_credential_error(om: FakeOpenMetadata, tmp_path: Path) -> None:
    with pytest.raises(CredentialError) as err:
        client(om, TokenFile(tmp_path / "nope")).openlineage_settings()
    assert err.value.key == "jwt_token_file"
    assert isinstance(err.value, DeliveryError)  # the transport keeps the events
    assert om.requests == []


def test_a_401_refreshes_once_then_stands(om: FakeOpenMetadata, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old-jwt\n")
    with pytest.raises(CredentialError) as err:
        client(om, TokenFile(token)).openlineage_settings()
    assert [r.status for r in om.requests] == [401, 401]  # one fresh read, one retry, no more
    assert "reissue" in err.value.hint


def test_expired_token_says_what_to_do(om: FakeOpenMetadata) -> None:
    with pytest.raises(TerminalDeliveryError) as err:
        client(om, StaticToken("old-jwt")).openlineage_settings()
    assert "Expired token!" in err.value.reason
    assert "reissue" in err.value.hint
    assert "old-jwt" not in str(err.value)


def test_basic_login_sends_the_password_base64_encoded(om: FakeOpenMetadata) -> None:
    om.passwords["admin@open-metadata.org"] = "admin"
    om.admins.add("admin@open-metadata.org")
    c = client(om, BasicLogin("admin@open-metadata.org", "admin"))
    assert c.openlineage_settings()["enabled"] is True
    login = om.requests[0]
    assert login.path == "/api/v1/users/login"
    assert base64.b64decode(login.body["password"]) == b"admin"
    assert "admin'" not in repr(BasicLogin("a@b", "admin"))


def test_basic_login_wrong_password(om: FakeOpenMetadata) -> None:
    om.passwords["admin@open-metadata.org"] = "admin"
    with pytest.raises(TerminalDeliveryError) as err:
        client(om, BasicLogin("admin@open-metadata.org", "nope")).openlineage_settings()
    assert "401" in err.value.reason
    assert "OM_PASSWORD" in err.value.hint


def test_the_stand_in_rejects_a_plaintext_password(om: FakeOpenMetadata) -> None:
    http = httpx2.Client(transport=httpx2.WSGITransport(app=om))
    response = http.post(
        f"{BASE}/api/v1/users/login", json={"email": "a@b.c", "password": "not base64!"}
    )
    assert response.status_code == 400
    assert response.json()["message"] == "Password needs to be encoded in Base-64."


def test_oauth2_client_credentials(om: FakeOpenMetadata) -> None:
    om.oauth_clients["dbt-oml"] = "s3cret"
    provider = OAuth2ClientCredentials(f"{BASE}/oauth/token", "dbt-oml", "s3cret")
    assert client(om, provider).openlineage_settings() is None  # authenticated: 403, not 401
    assert [r.status for r in om.requests if r.path.startswith("/api")] == [403]
    assert "s3cret" not in repr(provider)


@pytest.mark.parametrize(
    ("token", "role"),
    [("lineage-jwt", "IngestionBotRole"), ("reader-jwt", "IngestionBotRole")],
)
def test_missing_create_names_the_role(om: FakeOpenMetadata, token: str, role: str) -> None:
    body = {"name": "duckdb_pod", "serviceType": "CustomDatabase"}
    with pytest.raises(TerminalDeliveryError) as err:
        client(om, StaticToken(token)).put("services/databaseServices", body)
    assert role in err.value.hint
    assert "[Create]" in err.value.reason


def test_missing_edit_lineage_names_the_role(om: FakeOpenMetadata) -> None:
    event = {
        "eventTime": "2026-11-30T03:55:00.000Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
        "run": {"runId": "01a22a97-c811-7ab0-b0d7-94051423011d"},
        "job": {"namespace": "dbt", "name": "j"},
    }
    with pytest.raises(TerminalDeliveryError) as err:
        client(om, StaticToken("reader-jwt")).post_batch([event])
    assert "LineageBotRole" in err.value.hint


def test_server_errors_are_transient(om: FakeOpenMetadata) -> None:
    om.fail_next([503])
    c = client(om, StaticToken("bot-jwt"))
    with pytest.raises(TransientDeliveryError):
        c.openlineage_settings()
    assert c.openlineage_settings() is None


def test_refused_connection_is_transient() -> None:
    port = free_port()
    c = OpenMetadataClient(f"http://127.0.0.1:{port}", http=httpx2.Client(timeout=2), auth=None)
    with pytest.raises(UnreachableError) as err:
        c.openlineage_settings()
    assert err.value.reason == "connection refused"
    assert isinstance(err.value, TransientDeliveryError)


def test_entities_put_create_get_and_list(om: FakeOpenMetadata) -> None:
    c = client(om, StaticToken("bot-jwt"))
    svc = c.put(
        "services/databaseServices", {"name": "duckdb_pod", "serviceType": "CustomDatabase"}
    )
    again = c.put(
        "services/databaseServices", {"name": "duckdb_pod", "serviceType": "CustomDatabase"}
    )
    assert svc["id"] == again["id"]
    assert c.create("databases", {"name": "warehouse", "service": "duckdb_pod"}) is not None
    assert c.create("databases", {"name": "warehouse", "service": "duckdb_pod"}) is None  # 409
    for i in range(5):
        c.create("databases", {"name": f"db{i}", "service": "duckdb_pod"})
    names = [d["name"] for d in c.list_all("databases", params={"service": "duckdb_pod"}, page=2)]
    assert sorted(names) == sorted(["warehouse", *(f"db{i}" for i in range(5))])
    assert c.get_by_name("databases", "duckdb_pod.warehouse")["name"] == "warehouse"
    assert c.get_by_name("databases", "duckdb_pod.nope") is None


def test_missing_parent_is_terminal_with_oms_message(om: FakeOpenMetadata) -> None:
    with pytest.raises(TerminalDeliveryError) as err:
        client(om, StaticToken("bot-jwt")).create("databases", {"name": "w", "service": "nope"})
    assert "databaseService instance for nope not found" in err.value.reason


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ({"name": "c", "dataType": "VARCHAR"}, "dataLength must not be null"),
        ({"name": "c", "dataType": "ARRAY"}, "arrayDataType must not be null"),
        ({"name": "c", "dataType": "STRUCT"}, "children must not be null"),
        ({"name": "c", "dataType": "DECIMAL", "scale": 2}, "precision is not set"),
    ],
)
def test_the_stand_in_enforces_oms_column_rules(
    om: FakeOpenMetadata, column: dict, message: str
) -> None:
    c = client(om, StaticToken("bot-jwt"))
    c.put("services/databaseServices", {"name": "s", "serviceType": "CustomDatabase"})
    c.put("databases", {"name": "d", "service": "s"})
    c.put("databaseSchemas", {"name": "m", "database": "s.d"})
    with pytest.raises(TerminalDeliveryError) as err:
        c.put("tables", {"name": "t", "databaseSchema": "s.d.m", "columns": [column]})
    assert message in err.value.reason


@pytest.mark.parametrize(
    ("version", "time", "status"),
    [
        ("2.0", "2026-11-30T03:55:00+00:00", 400),
        ("2.0", "2026-11-30T03:55:00.123Z", 200),
        ("1.12", "2026-11-30T03:55:00+00:00", 200),
    ],
)
def test_the_stand_in_reads_event_time_like_om(version: str, time: str, status: int) -> None:
    om = FakeOpenMetadata(version=version)
    om.add_token("bot-jwt", Principal("ingestion-bot"))
    event = {
        "eventTime": time,
        "eventType": "COMPLETE",
        "producer": "https://example.com/p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
        "run": {"runId": "01a22a97-c811-7ab0-b0d7-94051423011d"},
        "job": {"namespace": "dbt", "name": "j"},
    }
    http = httpx2.Client(transport=httpx2.WSGITransport(app=om))
    response = http.post(
        f"{BASE}/api/v1/openlineage/lineage/batch",
        json={"events": [event]},
        headers={"Authorization": "Bearer bot-jwt"},
    )
    assert response.status_code == status
    if status == 400:
        assert response.json() == {"code": 400, "message": "Invalid request format"}


# -- answers that are not OpenMetadata's (issue 27: a proxy or an SSO page in front of OM) ----

HTML = b"<!doctype html><html><body>Sign in to continue</body></html>"


def _calls(c: OpenMetadataClient) -> dict[str, object]:
    service = {"name": "duckdb_pod", "serviceType": "CustomDatabase"}
    return {
        "get_by_name": lambda: c.get_by_name("databases", "duckdb_pod.warehouse"),
        "put": lambda: c.put("services/databaseServices", service),
        "create": lambda: c.create("services/databaseServices", service),
        "list_all": lambda: list(c.list_all("services/databaseServices")),
        "upstream_edges": lambda: c.upstream_edges("duckdb_pod.warehouse.staging.t"),
        "post_batch": lambda: c.post_batch([{"eventType": "COMPLETE"}]),
        "post_event": lambda: c.post_event({"eventType": "COMPLETE"}),
    }


@pytest.mark.parametrize(
    "call",
    ["get_by_name", "put", "create", "list_all", "upstream_edges", "post_batch", "post_event"],
)
@pytest.mark.parametrize(
    ("content_type", "body"),
    [("text/html", HTML), ("application/json", b"[1, 2]"), ("application/json", b"{not json")],
    ids=["html", "json-list", "broken-json"],
)
def test_a_2xx_that_is_not_oms_json_is_transient(
    om: FakeOpenMetadata, call: str, content_type: str, body: bytes
) -> None:
    """Before: the page came back as `{"message": "<!doctype..."}` (an entity, a listing, an
    OpenLineage answer), so bootstrap went on as if OM had taken the write."""
    om.answer_next("/api/v1/", body=body, content_type=content_type, times=9)
    c = client(om, StaticToken("bot-jwt"))
    with pytest.raises(TransientDeliveryError) as err:
        _calls(c)[call]()  # type: ignore[operator]
    assert "not OpenMetadata's answer" in err.value.reason
    assert "/api/v1/" in err.value.target
    assert "url" in err.value.hint


@pytest.mark.parametrize(
    "body",
    [
        b'{"message": "ok"}',
        b'{"status": "SUCCESS"}',
        b'{"status": "success", "lineageEdgesCreated": "2"}',
    ],
    ids=["no-status", "upper-case-status", "edges-not-a-number"],
)
def test_an_openlineage_answer_without_oms_shape_is_transient(
    om: FakeOpenMetadata, body: bytes
) -> None:
    """OM's OpenLineage answers always carry a lower-case `status` (ref §1.5)."""
    om.answer_next("/api/v1/openlineage", body=body, content_type="application/json", times=2)
    c = client(om, StaticToken("bot-jwt"))
    for post in (lambda: c.post_batch([{}]), lambda: c.post_event({})):
        with pytest.raises(TransientDeliveryError) as err:
            post()
        assert err.value.status == 200
        assert "not OpenMetadata's answer" in err.value.reason


def test_an_empty_2xx_is_still_an_answer(om: FakeOpenMetadata) -> None:
    """PUT /api/v1/lineage answers 200 with no body (ref §3.5): not a proxy page."""
    om.answer_next("/api/v1/lineage", body=b"", content_type="application/json")
    reply = client(om, StaticToken("bot-jwt")).request("PUT", "/api/v1/lineage", json={})
    assert (reply.status, reply.body) == (200, None)


@pytest.mark.parametrize(
    ("provider", "path"),
    [
        (lambda: BasicLogin("etl@example.com", "pw"), "/api/v1/users/login"),
        (lambda: OAuth2ClientCredentials(f"{BASE}/oauth/token", "dbt-oml", "s3cret"), "/oauth"),
    ],
    ids=["login", "oauth"],
)
@pytest.mark.parametrize(
    ("status", "error", "headers"),
    [(503, TransientDeliveryError, []), (429, RateLimitedError, [("Retry-After", "9")])],
    ids=["503", "429"],
)
def test_a_token_endpoint_that_is_unavailable_is_transient_not_a_bad_secret(
    om: FakeOpenMetadata, provider, path: str, status: int, error: type, headers: list
) -> None:
    """Before: a 503 or 429 from the login or token endpoint was a CredentialError ("check
    OM_PASSWORD"), never retried."""
    om.answer_next(path, status=status, body=b"busy", content_type="text/plain", headers=headers)
    with pytest.raises(error) as err:
        client(om, provider()).openlineage_settings()
    assert not isinstance(err.value, CredentialError)
    assert str(status) in err.value.reason
    if status == 429:
        assert err.value.retry_after == 9.0


def test_a_retry_after_date_is_read_against_the_clients_clock(om: FakeOpenMetadata) -> None:
    """An HTTP-date Retry-After is counted from the injected wall clock (no real time)."""
    om.rate_limit_next("/api/v1/", "Wed, 02 Dec 2026 10:00:30 GMT")
    c = OpenMetadataClient(
        BASE,
        http=httpx2.Client(transport=httpx2.WSGITransport(app=om)),
        auth=StaticToken("bot-jwt"),
        now=lambda: datetime(2026, 12, 2, 10, 0, tzinfo=timezone.utc),
    )
    with pytest.raises(RateLimitedError) as err:
        c.openlineage_settings()
    assert err.value.retry_after == 30.0
