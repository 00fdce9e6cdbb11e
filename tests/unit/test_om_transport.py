"""The OpenMetadata transport in-process against the OM stand-in (no sockets, no sleeps)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dbt_oml.errors import ConfigError
from dbt_oml.transports import build_transport_factory
from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport, om_event
from tests.conftest import free_port
from tests.fakes.openmetadata import FakeOpenMetadata

BASE = "http://om.test"
NS = "duckdb://pod"


class FakeTime:
    """A clock that moves only when the transport sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _event(
    event_type: str = "COMPLETE", *, time: str = "2026-11-30T03:55:00.123Z", source_ns: str = NS
) -> dict[str, Any]:
    columns = [{"name": "id", "type": "INTEGER"}, {"name": "email", "type": "VARCHAR"}]
    lineage = {
        "fields": {
            "id": {
                "inputFields": [
                    {"namespace": source_ns, "name": "crm.sales.customers", "field": "id"}
                ],
                "transformationDescription": "id",
            }
        }
    }
    return {
        "eventTime": time,
        "eventType": event_type,
        "producer": "https://example.com/producer",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "01a22a97-c811-7ab0-b0d7-94051423011d"},
        "job": {"namespace": "dbt", "name": "dbt-run-shop"},
        "inputs": [
            {
                "namespace": source_ns,
                "name": "crm.sales.customers",
                "facets": {"schema": {"fields": columns}},
            }
        ],
        "outputs": [
            {
                "namespace": NS,
                "name": "warehouse.staging.stg_customers",
                "facets": {"schema": {"fields": columns}, "columnLineage": lineage},
            }
        ],
    }


@pytest.fixture
def om() -> FakeOpenMetadata:
    return FakeOpenMetadata.with_bot()  # IngestionBotRole + LineageBotRole, not an admin


def transport(
    om: FakeOpenMetadata, tmp_path: Path, time: FakeTime | None = None, **config: Any
) -> OpenMetadataTransport:
    cfg = OpenMetadataConfig.from_dict(
        {"url": BASE, "jwt_token": "bot-jwt", "outbox_dir": str(tmp_path / "outbox"), **config}
    )
    time = time or FakeTime()
    return OpenMetadataTransport(
        cfg,
        http=httpx2.Client(transport=httpx2.WSGITransport(app=om)),
        sleep=time.sleep,
        clock=time.clock,
    )


def test_bootstrap_then_batch_draws_the_edge(om: FakeOpenMetadata, tmp_path: Path) -> None:
    t = transport(om, tmp_path)
    t.emit(_event("START"))
    t.emit(_event())
    assert t.close() is True
    assert om.entity("databaseService", "duckdb_pod")["serviceType"] == "CustomDatabase"
    src = om.entity("table", "duckdb_pod.crm.sales.customers")
    dst = om.entity("table", "duckdb_pod.warehouse.staging.stg_customers")
    edge = om.edges[(src["id"], dst["id"])]
    assert edge["columnsLineage"] == [
        {
            "fromColumns": ["duckdb_pod.crm.sales.customers.id"],
            "toColumn": "duckdb_pod.warehouse.staging.stg_customers.id",
            "function": "id",
        }
    ]
    assert edge["pipeline"] is not None
    (batch,) = [r for r in om.requests if r.path.endswith("/lineage/batch")]
    assert [e["eventType"] for e in batch.body["events"]] == [
        "COMPLETE"
    ]  # OM's filter keeps COMPLETE


def test_offsets_and_microseconds_are_normalised(om: FakeOpenMetadata, tmp_path: Path) -> None:
    t = transport(om, tmp_path)
    t.emit(_event(time="2026-11-30T04:55:00.123456+01:00"))
    assert t.close() is True
    (batch,) = [r for r in om.requests if r.path.endswith("/lineage/batch")]
    assert batch.body["events"][0]["eventTime"] == "2026-11-30T03:55:00.123Z"
    assert om_event(_event(), copy_column_lineage=True)["outputs"][0]["outputFacets"][
        "columnLineage"
    ]


def test_transient_errors_are_retried_within_the_budget(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.fail_next([503, 503])
    time = FakeTime()
    t = transport(om, tmp_path, time)
    t.emit(_event())
    assert t.close() is True
    assert time.slept == [0.5, 1.0]
    assert t.undelivered == 0


def test_om_down_for_the_whole_run_keeps_everything(tmp_path: Path) -> None:
    port = free_port()
    cfg = OpenMetadataConfig.from_dict(
        {
            "url": f"http://127.0.0.1:{port}",
            "jwt_token": "x",
            "retry_budget": 10,
            "outbox_dir": str(tmp_path / "outbox"),
        }
    )
    time = FakeTime()
    t = OpenMetadataTransport(cfg, sleep=time.sleep, clock=time.clock)
    t.emit(_event())
    t.emit(_event("START"))
    assert t.close() is False
    assert t.undelivered == 2
    assert sum(time.slept) <= 10
    kept = [
        json.loads(line)
        for line in (tmp_path / "outbox" / "openmetadata.jsonl").read_text().splitlines()
    ]
    assert [e["eventType"] for e in kept] == ["COMPLETE", "START"]


def test_events_om_cannot_resolve_are_kept_with_the_reason(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    t = transport(om, tmp_path, bootstrap=False)  # nothing exists in OM: nothing resolves
    t.emit(_event())
    assert t.close() is False
    assert t.delivered == 0
    assert t.undelivered == 1
    assert any("drew 0 of 1 lineage edge(s)" in p for p in t.problems)
    assert len((tmp_path / "outbox" / "openmetadata.jsonl").read_text().splitlines()) == 1


def test_missing_foreign_service_is_one_line(om: FakeOpenMetadata, tmp_path: Path) -> None:
    om.seed("databaseService", {"name": "Other", "serviceType": "Mssql"})
    t = transport(om, tmp_path, services={"mssql://src:1433": "source_sql"})
    for _ in range(3):
        t.emit(_event(source_ns="mssql://src:1433"))
    assert t.close() is False
    (line,) = t.problems  # one line for the cause, however many events it costs
    assert line.startswith("3 event(s) not delivered")
    assert "mssql://src:1433/crm.sales.customers" in line
    assert om.entity("databaseService", "source_sql") is None  # never created


def test_case_mismatched_service_is_corrected_once(
    om: FakeOpenMetadata, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    om.seed("databaseService", {"name": "MSSQL", "serviceType": "Mssql"})
    t = transport(om, tmp_path, services={"mssql://src:1433": "mssql"})
    t.emit(_event(source_ns="mssql://src:1433"))
    t.emit(_event(source_ns="mssql://src:1433", time="2026-11-30T03:56:00.000Z"))
    assert t.close() is True
    assert om.entity("table", "MSSQL.crm.sales.customers") is not None
    assert om.entity("databaseService", "mssql") is None
    assert t.problems == []
    advice = [r for r in caplog.records if "spelled 'MSSQL'" in r.getMessage()]
    assert [r.levelname for r in advice] == ["WARNING"]


def test_rerun_is_cheap(om: FakeOpenMetadata, tmp_path: Path) -> None:
    first = transport(om, tmp_path)
    first.emit(_event())
    first.close()
    before = len(om.requests)
    second = transport(om, tmp_path)
    second.emit(_event())
    assert second.close() is True
    new = om.requests[before:]
    assert [r for r in new if r.method in ("PUT", "POST") and "openlineage" not in r.path] == []
    assert len(new) <= 10


def test_config_rejects_unknown_keys_and_hides_secrets() -> None:
    with pytest.raises(ConfigError) as err:
        OpenMetadataConfig.from_dict({"url": BASE, "jwt": "x"})
    assert "jwt_token" in err.value.hint
    assert "secret" not in repr(OpenMetadataConfig.from_dict({"url": BASE, "jwt_token": "secret"}))


def test_the_factory_knows_openmetadata() -> None:
    created = build_transport_factory().create(
        {"type": "openmetadata", "url": BASE, "jwt_token": "t"}
    )
    assert isinstance(created, OpenMetadataTransport)


def test_dry_run_plan_names_methods_and_writes_nothing(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    plan = transport(om, tmp_path).plan([_event()])
    assert "PUT /api/v1/services/databaseServices duckdb_pod" in plan
    assert "PUT /api/v1/tables duckdb_pod.warehouse.staging.stg_customers" in plan
    assert [r for r in om.requests if r.method in ("PUT", "POST")] == []


def test_columns_om_holds_for_foreign_tables(om: FakeOpenMetadata, tmp_path: Path) -> None:
    om.seed_table(
        "src.crm.dbo.Customer",
        "Mssql",
        {
            "columns": [{"name": "CustomerID", "dataType": "INT", "dataTypeDisplay": "int"}],
        },
    )
    t = transport(om, tmp_path, services={"mssql://src:1433": "src"})
    assert t.columns_for("mssql://src:1433", "crm.dbo.Customer") == (("CustomerID", "int"),)
    assert t.columns_for("mssql://src:1433", "crm.dbo.Nope") is None
    assert t.columns_for("postgres://unmapped:5432", "a.b.c") is None


def test_object_storage_gets_a_service_and_a_container_per_folder(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.seed("storageService", {"name": "s3_lake", "serviceType": "S3"})
    om.seed(
        "container",
        {
            "name": "raw",
            "service": "s3_lake",
            "fullPath": "s3://lake/raw",
            "description": "ingested",
        },
    )
    event = _event()
    event["inputs"].append({"namespace": "s3://lake", "name": "raw/events/*.parquet"})
    t = transport(om, tmp_path)
    t.emit(event)
    assert t.close() is True
    raw = om.entity("container", "s3_lake.raw")
    assert raw["description"] == "ingested"  # OM's container at that fullPath is reused
    events = om.entity("container", "s3_lake.raw.events")
    assert events["fullPath"] == "s3://lake/raw/events"
    assert events["parent"] == {"id": raw["id"], "type": "container"}
    writes = [r for r in om.requests if r.method in ("PUT", "POST") and "container" in r.path]
    assert [r.method for r in writes] == ["POST"]


def test_jetstream_without_nats_py_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport

    monkeypatch.setitem(sys.modules, "nats", None)  # as if nats-py were not installed
    with pytest.raises(ConfigError) as err:
        JetStreamTransport(JetStreamConfig.from_dict({"servers": "nats://127.0.0.1:4222"}))
    assert err.value.hint == "pip install 'dbt-oml[nats]'"


def test_jetstream_message_ids_identify_the_run_and_event() -> None:
    from dbt_oml.transports.jetstream import message_id

    event = _event()
    assert message_id(event) == message_id(json.loads(json.dumps(event)))
    assert message_id(event) != message_id(_event("START"))


# -- a hostile world: a proxy or an SSO page answering instead of OM (issue 27) -------------


def _kept(t: OpenMetadataTransport) -> int:
    path = Path(t.config.outbox_dir) / "openmetadata.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("auth", ["login", "oauth"])
def test_a_token_endpoint_answering_html_keeps_every_event(
    om: FakeOpenMetadata, tmp_path: Path, auth: str
) -> None:
    """200 with an HTML page from the login or token endpoint: no token, nothing counted
    delivered, every event kept, one line naming the endpoint (before: a KeyError/ValueError
    after the buffer was emptied: 3 'delivered', OM got nothing, the outbox empty)."""
    om.passwords["etl@example.com"] = "pw"
    om.oauth_clients["dbt-oml"] = "s3cret"
    creds = (
        {"jwt_token": None, "user": "etl@example.com", "password": "pw"}
        if auth == "login"
        else {
            "jwt_token": None,
            "client_id": "dbt-oml",
            "client_secret": "s3cret",
            "oauth_token_url": f"{BASE}/oauth/token",
        }
    )
    om.answer_html_next("/api/v1/users/login" if auth == "login" else "/oauth/token")
    t = transport(om, tmp_path, **creds)
    for _ in range(3):
        t.emit(_event())
    assert t.close() is False
    assert t.delivered == 0
    assert _kept(t) == 3
    assert om.edges == {}
    (problem,) = t.problems
    assert "200 without a token (text/html" in problem
    assert "s3cret" not in problem


@pytest.mark.parametrize("endpoint", ["/api/v1/openlineage/lineage/batch", "/api/v1/openlineage"])
def test_a_200_that_is_not_oms_answer_counts_nothing_delivered(
    om: FakeOpenMetadata, tmp_path: Path, endpoint: str
) -> None:
    """A proxy's HTML page with 200 on the OpenLineage endpoints: nothing counted delivered,
    all kept; the next flush sends them (before: events counted delivered, OM held nothing)."""
    om.answer_html_next(endpoint, times=99)  # the page stands for the whole retry budget
    t = transport(om, tmp_path)
    for _ in range(3):
        t.emit(_event())
    assert t.close() is False
    assert (t.delivered, _kept(t), om.edges) == (0, 3, {})
    assert "not OpenMetadata's answer" in t.problems[0]


def test_an_unexpected_failure_in_delivery_keeps_the_batch(
    om: FakeOpenMetadata, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = transport(om, tmp_path)

    def broken(events: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(t, "deliver", broken)
    for _ in range(3):
        t.emit(_event())
    assert t.close() is False
    assert (t.delivered, _kept(t)) == (0, 3)
    assert "delivery failed unexpectedly (RuntimeError: a bug)" in t.problems[0]


def test_a_413_halves_the_batch_until_it_fits(om: FakeOpenMetadata, tmp_path: Path) -> None:
    """A proxy's body limit (413) on the batch: halves are posted (before: every flush got 413
    again, nothing ever went through)."""
    om.fail_next([413, 413], "/api/v1/openlineage/lineage/batch")  # 4, then the first 2
    t = transport(om, tmp_path)
    for _ in range(4):
        t.emit(_event())
    assert t.close() is True, t.problems
    assert t.delivered == 4
    batches = [r for r in om.requests if r.path.endswith("/batch")]
    assert [r.status for r in batches] == [413, 413, 200, 200, 200]  # 4; 2; 1, 1; 2


def test_a_proxy_page_for_a_moment_is_retried_within_the_budget(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """Retryable like a 502 (before: not retried, the batch kept until the next flush)."""
    om.answer_html_next("/api/v1/openlineage/lineage/batch")
    time = FakeTime()
    t = transport(om, tmp_path, time)
    for _ in range(3):
        t.emit(_event())
    assert t.close() is True, t.problems
    assert (t.delivered, _kept(t), time.slept) == (3, 0, [0.5])
    assert len(om.edges) == 1


@pytest.mark.parametrize(
    "prefix",
    [
        "/api/v1/system/settings",
        "/api/v1/services/databaseServices",
        "/api/v1/databases",
        "/api/v1/tables",
        "/api/v1/services/pipelineServices",
        "/api/v1/pipelines",
    ],
)
def test_a_bootstrap_endpoint_answering_html_keeps_every_event(
    om: FakeOpenMetadata, tmp_path: Path, prefix: str
) -> None:
    """A proxy page on the settings or an entity endpoint is no entity written: the batch is
    kept whole, START events too (before: bootstrap took the page for OM's answer, and 3 to 6
    of 6 events were counted delivered, some while OM held nothing)."""
    om.answer_html_next(prefix, times=999)
    t = transport(om, tmp_path)
    for _ in range(3):
        t.emit(_event("START"))
        t.emit(_event())
    assert t.close() is False
    assert (t.delivered, t.undelivered, _kept(t), om.edges) == (0, 6, 6, {})
    (problem,) = t.problems
    assert "not OpenMetadata's answer" in problem
    assert prefix in problem


# -- 429 and 413 from what stands in front of OM (issue 27 item 6) ---------------------------


def test_a_gateways_429_is_retried_after_its_retry_after(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.rate_limit_next("/api/v1/openlineage/lineage/batch", "7")
    time = FakeTime()
    t = transport(om, tmp_path, time)
    for _ in range(3):
        t.emit(_event())
    assert t.close() is True, t.problems
    assert (t.delivered, time.slept, len(om.edges)) == (3, [7.0], 1)


def test_a_retry_after_date_is_counted_from_the_injected_clock(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.rate_limit_next("/api/v1/openlineage/lineage/batch", "Wed, 02 Dec 2026 10:00:12 GMT")
    time = FakeTime()
    cfg = OpenMetadataConfig.from_dict(
        {"url": BASE, "jwt_token": "bot-jwt", "outbox_dir": str(tmp_path / "outbox")}
    )
    t = OpenMetadataTransport(
        cfg,
        http=httpx2.Client(transport=httpx2.WSGITransport(app=om)),
        sleep=time.sleep,
        clock=time.clock,
        now=lambda: datetime(2026, 12, 2, 10, 0, tzinfo=timezone.utc),
    )
    t.emit(_event())
    assert t.close() is True, t.problems
    assert time.slept == [12.0]


def test_a_retry_after_beyond_the_budget_keeps_the_batch_at_once(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.rate_limit_next("/api/v1/openlineage/lineage/batch", "3600", times=99)
    time = FakeTime()
    t = transport(om, tmp_path, time)
    for _ in range(3):
        t.emit(_event())
    assert t.close() is False
    assert (t.delivered, _kept(t), time.slept, om.edges) == (0, 3, [], {})
    assert "429" in t.problems[0]


def _big(size: int) -> dict[str, Any]:
    event = _event()
    event["job"]["facets"] = {
        "sql": {
            "_producer": "https://example.com/producer",
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json",
            "query": "select 1 -- " + "x" * size,
        }
    }
    return event


def test_a_413_above_the_body_limit_narrows_to_the_one_event_too_big(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """Halves until each part fits; the event that alone is over the limit is rejected with
    the reason, the others delivered."""
    om.limit_body(20_000)
    t = transport(om, tmp_path)
    for event in (_event(), _event(), _event(), _big(30_000)):
        t.emit(event)
    assert t.close() is False
    rejected = (Path(t.config.outbox_dir) / "openmetadata.rejected.jsonl").read_text().splitlines()
    assert (t.delivered, _kept(t), len(rejected)) == (3, 0, 1)
    assert len(json.loads(rejected[0])["job"]["facets"]["sql"]["query"]) > 30_000
    assert "413" in t.problems[0]
    batches = [r.status for r in om.requests if r.path.endswith("/batch")]
    assert batches == [413, 200, 413, 200, 413]  # 4; 2; 2 -> 1, 1
    assert len(om.edges) == 1


def _storage_event() -> dict[str, Any]:
    """Postable, but no table edge to count (an object-storage input: ref §2.3)."""
    event = _event()
    event["inputs"] = [{"namespace": "s3://bucket", "name": "raw/customers.csv"}]
    return event


def test_a_413_from_the_single_endpoint_rejects_that_event_only(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """Before: the one-by-one post read a 413 as "0 edges drawn", so an event with no table
    edge to count was counted delivered while OM took nothing."""
    om.fail_next([400], "/api/v1/openlineage/lineage/batch")  # the batch: one by one
    om.fail_next([413], "/api/v1/openlineage/lineage")  # the first event alone
    t = transport(om, tmp_path)
    t.emit(_storage_event())
    t.emit(_event())
    assert t.close() is False
    rejected = (Path(t.config.outbox_dir) / "openmetadata.rejected.jsonl").read_text().splitlines()
    assert (t.delivered, _kept(t), len(rejected)) == (1, 0, 1)
    assert json.loads(rejected[0])["inputs"][0]["namespace"] == "s3://bucket"
    assert "413" in t.problems[0]


def test_a_single_endpoint_answering_404_keeps_the_batch(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """A status OM does not answer there (a proxy route, an OM without the endpoint) took
    nothing: before, an event with no table edge to count was counted delivered."""
    om.fail_next([400], "/api/v1/openlineage/lineage/batch")
    om.fail_next([404], "/api/v1/openlineage/lineage")
    t = transport(om, tmp_path)
    t.emit(_storage_event())
    t.emit(_event())
    assert t.close() is False
    assert (t.delivered, _kept(t)) == (0, 2)
    assert "404" in t.problems[0]


def test_an_exception_deep_in_a_request_keeps_the_batch(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """Not one of ours (a bug in the HTTP stack, say): the batch is kept whole, the reason is
    one line."""

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ["PATH_INFO"].endswith("/batch"):
            raise ValueError("a bug below the client")
        return om(environ, start_response)

    cfg = OpenMetadataConfig.from_dict(
        {"url": BASE, "jwt_token": "bot-jwt", "outbox_dir": str(tmp_path / "outbox")}
    )
    t = OpenMetadataTransport(cfg, http=httpx2.Client(transport=httpx2.WSGITransport(app=app)))
    for _ in range(2):
        t.emit(_event("START"))
        t.emit(_event())
    assert t.close() is False
    assert (t.delivered, _kept(t)) == (0, 4)
    assert "delivery failed unexpectedly (ValueError: a bug below the client)" in t.problems[0]
