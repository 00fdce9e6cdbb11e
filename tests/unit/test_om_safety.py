"""Issue 10: the OpenMetadata transport against an OM that behaves like OM (in-process, no sleeps).

Each test is one finding: a scoped bot delivers, a degraded run never shrinks what OM holds, a
service dbt-oml did not create is never overwritten, events are OM-proof, OM's refusals are
counted, the per-edge guard, and one retry budget for the whole run.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.transports import build_transport_factory
from dbt_oml.transports.openmetadata import OpenMetadataTransport
from tests.support.fakes.openmetadata import FakeOpenMetadata
from tests.support.om_transport import NS, FakeTime, sample_event, transport

DST = "duckdb_pod.warehouse.staging.stg_customers"
SRC = "duckdb_pod.crm.sales.customers"
COMPLETE = {"source": "catalog", "complete": True}


@pytest.fixture
def om() -> FakeOpenMetadata:
    return FakeOpenMetadata.with_bot()  # IngestionBotRole + LineageBotRole, not an admin


def _columns(*names: str, typed: bool = True) -> list[dict[str, Any]]:
    return [{"name": n, **({"type": "VARCHAR"} if typed else {})} for n in names]


def _with_schema(event: dict[str, Any], fields: list[dict[str, Any]], *, complete: bool) -> dict:
    event = copy.deepcopy(event)
    facets = event["outputs"][0]["facets"]
    facets["schema"] = {"fields": fields}
    if complete:
        facets["dbt_oml_schema"] = COMPLETE
    else:
        facets.pop("dbt_oml_schema", None)
    return event


def _columns_in_om(om: FakeOpenMetadata, table: str) -> list[str]:
    return [c["name"] for c in om.entity("table", table)["columns"]]


def _kept(tmp_path: Path, name: str = "openmetadata.jsonl") -> list[dict[str, Any]]:
    path = tmp_path / "outbox" / name
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _edge(om: FakeOpenMetadata, src: str = SRC, dst: str = DST) -> dict[str, Any]:
    return om.edges[(om.entity("table", src)["id"], om.entity("table", dst)["id"])]


# -- 1. a correctly scoped bot ---------------------------------------------------------------


def test_a_scoped_bot_delivers_with_oms_defaults(
    om: FakeOpenMetadata, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    t = transport(om, tmp_path)
    t.emit(sample_event())
    assert t.close() is True
    assert t.delivered == 1
    settings_reads = [r for r in om.requests if r.path.endswith("/settings/openLineageSettings")]
    assert [r.status for r in settings_reads] == [403]  # OM's answer to every non-admin
    info = [r for r in caplog.records if "admin-only" in r.getMessage()]
    assert [r.levelname for r in info] == ["INFO"]
    assert "`services` key" in info[0].getMessage()
    assert "check the bot's roles" not in caplog.text


# -- 2. a degraded run never shrinks what OM holds -------------------------------------------


def test_a_partial_schema_adds_columns_but_never_removes_them(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    good = _with_schema(sample_event(), _columns("id", "email", "name"), complete=True)
    first = transport(om, tmp_path)
    first.emit(good)
    assert first.close() is True
    assert _columns_in_om(om, DST) == ["id", "email", "name"]
    # a later run without catalog.json: only the declared columns, one of them new
    degraded = _with_schema(sample_event(), _columns("id", "added", typed=False), complete=False)
    second = transport(om, tmp_path)
    second.emit(degraded)
    assert second.close() is True
    assert _columns_in_om(om, DST) == ["id", "email", "name", "added"]


def test_an_empty_partial_schema_writes_nothing(om: FakeOpenMetadata, tmp_path: Path) -> None:
    first = transport(om, tmp_path)
    first.emit(_with_schema(sample_event(), _columns("id", "email"), complete=True))
    first.close()
    before = len(om.requests)
    second = transport(om, tmp_path)
    second.emit(_with_schema(sample_event(), [], complete=False))
    second.close()
    writes = [r for r in om.requests[before:] if r.method == "PUT" and r.path.endswith("/tables")]
    assert writes == []
    assert _columns_in_om(om, DST) == ["id", "email"]


def test_an_authoritative_schema_may_drop_a_column(om: FakeOpenMetadata, tmp_path: Path) -> None:
    first = transport(om, tmp_path)
    first.emit(_with_schema(sample_event(), _columns("id", "email", "gone"), complete=True))
    first.close()
    second = transport(om, tmp_path)
    second.emit(_with_schema(sample_event(), _columns("id", "email"), complete=True))
    assert second.close() is True
    assert _columns_in_om(om, DST) == ["id", "email"]


def test_only_processed_events_bootstrap(om: FakeOpenMetadata, tmp_path: Path) -> None:
    t = transport(om, tmp_path)
    t.emit(sample_event("START"))  # OM's default filter drops START: nothing to create for it
    assert t.close() is True
    assert [r for r in om.requests if r.method in ("PUT", "POST")] == []


# -- 3. a service dbt-oml did not create is foreign ------------------------------------------


def _ingested_duckdb_service(om: FakeOpenMetadata) -> None:
    om.seed_table(
        "lake.warehouse.staging.stg_customers",
        "CustomDatabase",
        {
            "tableType": "View",
            "description": "Written by a person.",
            "columns": [{"name": "id", "dataType": "INT", "description": "the key"}],
        },
    )


def test_a_duckdb_namespace_mapped_to_someone_elses_service_is_foreign(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    _ingested_duckdb_service(om)
    t = transport(om, tmp_path, services={NS: "lake"})
    t.emit(_with_schema(sample_event(), _columns("id", "email"), complete=True))
    assert t.close() is True
    table = om.entity("table", "lake.warehouse.staging.stg_customers")
    assert table["tableType"] == "View"
    assert table["description"] == "Written by a person."
    assert [c["name"] for c in table["columns"]] == ["id"]
    assert om.entity("table", "lake.crm.sales.customers") is not None  # created, with POST
    table_writes = [r for r in om.requests if r.path == "/api/v1/tables" and r.method != "GET"]
    assert {r.method for r in table_writes} == {"POST"}
    assert [s for s in om.entities["databaseService"] if s.startswith("duckdb")] == []


def test_a_case_mismatched_mapping_never_creates_a_service(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    _ingested_duckdb_service(om)
    t = transport(om, tmp_path, services={NS: "LAKE"})
    t.emit(sample_event())
    assert t.close() is True
    assert sorted(om.entities["databaseService"]) == ["lake"]


def test_an_unmarked_service_named_like_dbt_omls_own_is_foreign(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    # a CustomDatabase service named exactly as dbt-oml derives it (duckdb://pod -> duckdb_pod),
    # made by someone else: without the "Managed by dbt-oml" mark it is not dbt-oml's
    om.seed_table(
        "duckdb_pod.warehouse.staging.stg_customers",
        "CustomDatabase",
        {
            "description": "Written by a person.",
            "columns": [{"name": "id", "dataType": "INT", "description": "the key"}],
        },
    )
    t = transport(om, tmp_path)
    t.emit(_with_schema(sample_event(), _columns("id", "email"), complete=True))
    assert t.close() is True
    table = om.entity("table", DST)
    assert table["description"] == "Written by a person."
    assert [(c["name"], c.get("description")) for c in table["columns"]] == [("id", "the key")]
    assert om.entity("table", "duckdb_pod.crm.sales.customers") is not None  # missing: POSTed
    puts = [
        r
        for r in om.requests
        if r.method == "PUT" and "duckdb_pod" in json.dumps(r.body or {}).replace("pipeline", "")
    ]
    assert puts == []
    writes = [r for r in om.requests if r.method == "POST" and "openlineage" not in r.path]
    assert {r.path for r in writes} == {
        "/api/v1/databases",
        "/api/v1/databaseSchemas",
        "/api/v1/tables",
    }
    assert "Managed by dbt-oml" not in str(om.entity("databaseService", "duckdb_pod"))


def test_oms_1_12_mapping_with_the_wrong_case_is_reported_not_delivered(tmp_path: Path) -> None:
    om = FakeOpenMetadata.with_admin("bot-jwt", version="1.12")
    _ingested_duckdb_service(om)
    om.settings["namespaceToServiceMapping"] = {NS: "LAKE"}  # OM 1.12 looks this up exactly
    t = transport(om, tmp_path)
    t.emit(sample_event())
    assert t.close() is False
    assert t.delivered == 0
    (problem,) = t.problems
    assert "drew 0 of 1" in problem
    assert len(_kept(tmp_path)) == 1


# -- 4. events OM rejects for our own omissions ----------------------------------------------


def test_schema_fields_without_a_type_are_sent_as_unknown(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    event = _with_schema(sample_event(), _columns("id", "email", typed=False), complete=False)
    event["inputs"][0]["facets"]["schema"] = {"fields": _columns("id", typed=False)}
    t = transport(om, tmp_path)
    t.emit(event)
    assert t.close() is True
    (batch,) = [r for r in om.requests if r.path.endswith("/lineage/batch")]
    fields = batch.body["events"][0]["outputs"][0]["facets"]["schema"]["fields"]
    assert {f["type"] for f in fields} == {"UNKNOWN"}


def test_file_only_inputs_are_left_out_and_nothing_is_kept(
    om: FakeOpenMetadata, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    seed = sample_event()
    seed["inputs"] = [{"namespace": "file", "name": "/p/seeds/country_codes.csv"}]
    t = transport(om, tmp_path)
    t.emit(seed)
    assert t.close() is True
    assert t.delivered == 1
    assert om.entity("table", DST) is not None  # the seed's table exists in OM all the same
    assert [r for r in om.requests if "openlineage/lineage" in r.path] == []
    assert _kept(tmp_path) == []
    assert "resolves no local files" in caplog.text


# -- 5. OM's refusals are never counted as delivered -----------------------------------------


def test_failed_events_are_rejected_with_oms_reason(om: FakeOpenMetadata, tmp_path: Path) -> None:
    om.fail_events(
        lambda e: "mapper exploded" if e["eventTime"].startswith("2026-11-30T03:56") else None
    )
    t = transport(om, tmp_path)
    t.emit(sample_event())
    t.emit(sample_event(time="2026-11-30T03:56:00.000Z"))
    assert t.close() is False
    assert (t.delivered, t.undelivered) == (1, 1)
    (rejected,) = _kept(tmp_path, "openmetadata.rejected.jsonl")
    assert rejected["eventTime"] == "2026-11-30T03:56:00.000Z"
    assert "mapper exploded" in t.problems[0]
    assert _kept(tmp_path) == []  # `dbt-oml flush` does not retry what OM refused for good


def test_a_400_for_one_event_costs_only_that_event(om: FakeOpenMetadata, tmp_path: Path) -> None:
    t = transport(om, tmp_path)
    t.emit(sample_event())
    bad = sample_event(time="2026-11-30T03:57:00.000Z")
    bad["producer"] = "not a uri"  # OM: 400 Invalid request format for the whole batch
    t.emit(bad)
    assert t.close() is False
    assert (t.delivered, t.undelivered) == (1, 1)
    assert "Invalid request format" in t.problems[0]
    assert _edge(om)["columnsLineage"]


def test_a_400_batch_rejects_the_bad_event_and_keeps_the_unresolvable_one(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    bad = sample_event(time="2026-11-30T03:57:00.000Z")
    bad["producer"] = "not a uri"  # OM: 400 Invalid request format for the whole batch
    unresolvable = _without_lineage(sample_event(time="2026-11-30T03:58:00.000Z"))
    # an input in a namespace no service maps: OM cannot resolve it, bootstrap cannot create it
    unresolvable["inputs"] = [{"namespace": "mssql://erp:1433", "name": "erp.dbo.Invoices"}]
    unresolvable["outputs"][0]["name"] = "warehouse.staging.stg_invoices"
    t = transport(om, tmp_path)
    for event in (bad, sample_event(), unresolvable):
        t.emit(event)
    assert t.close() is False
    assert (t.delivered, t.undelivered) == (1, 2)
    (rejected,) = _kept(tmp_path, "openmetadata.rejected.jsonl")
    assert rejected["producer"] == "not a uri"
    (kept,) = _kept(tmp_path)  # retrying may help once its namespace is mapped: not rejected
    assert kept["eventTime"] == "2026-11-30T03:58:00.000Z"
    assert _edge(om)["columnsLineage"]  # the valid one was delivered
    batches = [r for r in om.requests if r.path.endswith("/lineage/batch")]
    assert [r.status for r in batches] == [400]
    reasons = " | ".join(t.problems)
    assert "Invalid request format" in reasons
    assert "mssql://erp:1433/erp.dbo.Invoices" in reasons


# -- 6. the per-edge guard -------------------------------------------------------------------


def _without_lineage(event: dict[str, Any]) -> dict[str, Any]:
    event = copy.deepcopy(event)
    event["outputs"][0]["facets"].pop("columnLineage")
    event["outputs"][0].pop("outputFacets", None)
    return event


def test_an_event_without_column_lineage_never_erases_oms(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    first = transport(om, tmp_path)
    first.emit(sample_event())
    assert first.close() is True
    before = _edge(om)
    assert before["columnsLineage"]
    second = transport(om, tmp_path)
    second.emit(_without_lineage(sample_event(time="2026-11-30T04:00:00.000Z")))
    assert second.close() is True
    assert _edge(om) == before
    assert second.guarded == {DST}


def test_allow_empty_column_lineage_replaces_it(om: FakeOpenMetadata, tmp_path: Path) -> None:
    first = transport(om, tmp_path)
    first.emit(sample_event())
    first.close()
    second = transport(om, tmp_path, allow_empty_column_lineage=True)
    second.emit(_without_lineage(sample_event()))
    assert second.close() is True
    assert _edge(om)["columnsLineage"] is None


def test_the_guard_holds_without_bootstrap(om: FakeOpenMetadata, tmp_path: Path) -> None:
    first = transport(om, tmp_path)
    first.emit(sample_event())
    assert first.close() is True
    before = _edge(om)
    assert before["columnsLineage"]
    # bootstrap off: no report names the services, the mapping (here the derived name) does
    second = transport(om, tmp_path, bootstrap=False)
    second.emit(_without_lineage(sample_event(time="2026-11-30T04:00:00.000Z")))
    assert second.close() is True
    assert _edge(om) == before
    assert second.guarded == {DST}


def test_the_guard_rereads_om_for_each_batch(om: FakeOpenMetadata, tmp_path: Path) -> None:
    # one transport for many batches (a long run, or the relay): what OM held when the first
    # batch asked is stale once a later batch gave the edge column lineage
    t = transport(om, tmp_path, batch_size=1)
    t.emit(_without_lineage(sample_event(time="2026-11-30T04:00:00.000Z")))
    t.emit(sample_event(time="2026-11-30T04:01:00.000Z"))
    held = _edge(om)
    assert held["columnsLineage"]
    t.emit(_without_lineage(sample_event(time="2026-11-30T04:02:00.000Z")))
    assert t.close() is True
    assert _edge(om)["columnsLineage"] == held["columnsLineage"]
    assert t.guarded == {DST}


def test_a_later_event_of_the_same_batch_never_erases_an_earlier_ones_column_lineage(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    t = transport(om, tmp_path)
    t.emit(sample_event(time="2026-11-30T04:00:00.000Z"))
    t.emit(_without_lineage(sample_event(time="2026-11-30T04:01:00.000Z")))
    assert t.close() is True
    assert t.delivered == 2
    assert _edge(om)["columnsLineage"]
    (batch,) = [r for r in om.requests if r.path.endswith("/lineage/batch")]
    # the second event, without its only input, has nothing for OM to draw: not posted
    assert [e["eventTime"] for e in batch.body["events"]] == ["2026-11-30T04:00:00.000Z"]
    assert t.guarded == {DST}


# -- 7. one retry budget for the run ---------------------------------------------------------


def test_after_the_budget_is_spent_the_rest_goes_to_the_outbox_at_once(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    time = FakeTime()
    t = transport(om, tmp_path, time, batch_size=1, retry_budget=5)
    om.fail_next([503] * 100)
    for minute in range(5):
        t.emit(sample_event(time=f"2026-11-30T04:0{minute}:00.000Z"))
    assert t.close() is False
    assert t.undelivered == 5
    assert sum(time.slept) <= 5
    tried = len(om.requests)
    assert tried <= 6  # the first batch's attempts; the other four never asked OM
    assert len(_kept(tmp_path)) == 5


def test_a_refused_connection_fails_fast(tmp_path: Path) -> None:
    from tests.conftest import free_port

    time = FakeTime()
    cfg: dict[str, Any] = {
        "type": "openmetadata",
        "url": f"http://127.0.0.1:{free_port()}",
        "jwt_token": "x",
        "outbox_dir": str(tmp_path / "outbox"),
    }
    created = build_transport_factory().create(cfg)
    assert isinstance(created, OpenMetadataTransport)
    created.budget.clock, created.budget.sleep = time.clock, time.sleep
    for _ in range(3):
        created.emit(sample_event())
    assert created.close() is False
    assert sum(time.slept) <= 1.5  # one quick retry pair, not the 30 s budget
    assert created.undelivered == 3


# -- 8. configuration that composes ----------------------------------------------------------


def test_om_variables_fill_what_the_transport_config_leaves_empty() -> None:
    factory = build_transport_factory(
        {"openmetadata": {"type": "openmetadata", "url": "http://om:8585", "jwt_token": "t"}}
    )
    created = factory.create({"type": "openmetadata", "batch_size": "7"})
    assert isinstance(created, OpenMetadataTransport)
    assert (created.config.url, created.config.jwt_token, created.config.batch_size) == (
        "http://om:8585",
        "t",
        7,
    )
    mine = factory.create({"type": "openmetadata", "url": "http://mine:8585"})
    assert mine.config.url == "http://mine:8585"  # type: ignore[attr-defined]


def test_plain_http_with_a_token_warns(caplog: pytest.LogCaptureFixture) -> None:
    factory = build_transport_factory()
    factory.create({"type": "openmetadata", "url": "http://om-plain:8585", "jwt_token": "t"})
    assert caplog.text.count("plain http") == 1


def test_an_unreadable_token_file_keeps_every_event(om: FakeOpenMetadata, tmp_path: Path) -> None:
    t = transport(om, tmp_path, jwt_token=None, jwt_token_file=str(tmp_path / "missing"))
    t.emit(sample_event())
    assert t.close() is False
    assert (t.delivered, t.undelivered) == (0, 1)
    assert "jwt_token_file" in t.problems[0]
    assert len(_kept(tmp_path)) == 1
