"""The OpenMetadata transport in-process against the OM stand-in (no sockets, no sleeps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbt_oml.errors import ConfigError
from dbt_oml.transports import build_transport_factory
from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport, om_event
from tests.conftest import free_port
from tests.support.fakes.openmetadata import FakeOpenMetadata
from tests.support.om_transport import BASE, FakeTime, om, sample_event, transport

__all__ = ["om"]  # the fixture (tests/support/om_transport.py)


def test_bootstrap_then_batch_draws_the_edge(om: FakeOpenMetadata, tmp_path: Path) -> None:
    t = transport(om, tmp_path)
    t.emit(sample_event("START"))
    t.emit(sample_event())
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
    t.emit(sample_event(time="2026-11-30T04:55:00.123456+01:00"))
    assert t.close() is True
    (batch,) = [r for r in om.requests if r.path.endswith("/lineage/batch")]
    assert batch.body["events"][0]["eventTime"] == "2026-11-30T03:55:00.123Z"
    assert om_event(sample_event(), copy_column_lineage=True)["outputs"][0]["outputFacets"][
        "columnLineage"
    ]


def test_transient_errors_are_retried_within_the_budget(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.fail_next([503, 503])
    time = FakeTime()
    t = transport(om, tmp_path, time)
    t.emit(sample_event())
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
    t.emit(sample_event())
    t.emit(sample_event("START"))
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
    t.emit(sample_event())
    assert t.close() is False
    assert t.delivered == 0
    assert t.undelivered == 1
    assert any("drew 0 of 1 lineage edge(s)" in p for p in t.problems)
    assert len((tmp_path / "outbox" / "openmetadata.jsonl").read_text().splitlines()) == 1


def test_missing_foreign_service_is_one_line(om: FakeOpenMetadata, tmp_path: Path) -> None:
    om.seed("databaseService", {"name": "Other", "serviceType": "Mssql"})
    t = transport(om, tmp_path, services={"mssql://src:1433": "source_sql"})
    for _ in range(3):
        t.emit(sample_event(source_ns="mssql://src:1433"))
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
    t.emit(sample_event(source_ns="mssql://src:1433"))
    t.emit(sample_event(source_ns="mssql://src:1433", time="2026-11-30T03:56:00.000Z"))
    assert t.close() is True
    assert om.entity("table", "MSSQL.crm.sales.customers") is not None
    assert om.entity("databaseService", "mssql") is None
    assert t.problems == []
    advice = [r for r in caplog.records if "spelled 'MSSQL'" in r.getMessage()]
    assert [r.levelname for r in advice] == ["WARNING"]


def test_rerun_is_cheap(om: FakeOpenMetadata, tmp_path: Path) -> None:
    first = transport(om, tmp_path)
    first.emit(sample_event())
    first.close()
    before = len(om.requests)
    second = transport(om, tmp_path)
    second.emit(sample_event())
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
    plan = transport(om, tmp_path).plan([sample_event()])
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
    event = sample_event()
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

    event = sample_event()
    assert message_id(event) == message_id(json.loads(json.dumps(event)))
    assert message_id(event) != message_id(sample_event("START"))
