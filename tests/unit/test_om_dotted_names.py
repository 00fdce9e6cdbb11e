"""Names holding a dot (a table `v1.orders`, a schema `my.schema`) from the events to OpenMetadata.

The events keep dbt-ol's dot-joined dataset name and add OpenLineage's `hierarchy` facet only for
such names; the OM transport creates the tables with OM's quoted FQNs and, since OM's OpenLineage
endpoint cannot resolve them (ref §2.2), draws their edges with PUT /api/v1/lineage (ref §3.5).
In-process against the OM stand-in, as test_om_transport does.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx2
import pytest
from openlineage.client.serde import Serde

from dbt_oml.artifacts import read_artifacts
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import build_events
from dbt_oml.lineage.types import IDENTITY, ColumnEdge, ModelLineage, SourceColumn
from dbt_oml.namespaces import Namespaces
from dbt_oml.om.prepare import prepare
from dbt_oml.om.tables import dataset_refs, table_ref
from tests.support.fakes.openmetadata import FakeOpenMetadata
from tests.support.om_transport import FakeTime, om, transport
from tests.support.spec import SPEC, SpecValidator

__all__ = ["om"]  # the fixture (tests/support/om_transport.py)

BASE = "http://om.test"
NS = "duckdb://pod"
SERVICE = "duckdb_pod"
ORDERS = f'{SERVICE}.warehouse.core."v1.orders"'
STAGED = f'{SERVICE}.warehouse."my.schema".stg_orders'
PAYMENTS = f"{SERVICE}.warehouse.staging.stg_payments"
RUN_ID = "01a22a97-c811-7ab0-b0d7-94051423011d"


def _dataset(database: str, schema: str, table: str, **facets: Any) -> dict[str, Any]:
    """A dataset as dbt-oml sends it: the dot-joined name, `hierarchy` when a part is dotted."""
    columns = [{"name": "order_id", "type": "INTEGER"}, {"name": "amount", "type": "DOUBLE"}]
    out: dict[str, Any] = {"schema": {"fields": columns}, **facets}
    if any("." in p for p in (database, schema, table)):
        levels = zip(("DATABASE", "SCHEMA", "TABLE"), (database, schema, table), strict=True)
        out["hierarchy"] = {"hierarchy": [{"type": t, "name": n} for t, n in levels]}
    return {"namespace": NS, "name": f"{database}.{schema}.{table}", "facets": out}


def _lineage(*sources: dict[str, Any]) -> dict[str, Any]:
    """Column lineage: each output column from the same column of every source."""
    return {
        "fields": {
            column: {
                "inputFields": [
                    {"namespace": s["namespace"], "name": s["name"], "field": column}
                    for s in sources
                ],
                "transformationDescription": column,
            }
            for column in ("order_id", "amount")
        }
    }


def _event(
    inputs: list[dict[str, Any]], output: dict[str, Any], *, column_lineage: bool = True
) -> dict[str, Any]:
    target = copy.deepcopy(output)
    if column_lineage:
        target["facets"]["columnLineage"] = _lineage(*inputs)
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/producer",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": RUN_ID},
        "job": {
            "namespace": "dbt",
            "name": "jaffle.core.v1_orders",
            "facets": {"sql": {"query": 'select * from "my.schema".stg_orders'}},
        },
        "inputs": copy.deepcopy(inputs),
        "outputs": [target],
    }


STG = _dataset("warehouse", "my.schema", "stg_orders")
V1 = _dataset("warehouse", "core", "v1.orders")
PLAIN = _dataset("warehouse", "staging", "stg_payments")


def _edge(om: FakeOpenMetadata, source: str, target: str) -> dict[str, Any]:
    src, dst = om.entity("table", source), om.entity("table", target)
    assert src is not None, f"no table {source}: {sorted(om.entities['table'])}"
    assert dst is not None, f"no table {target}: {sorted(om.entities['table'])}"
    return om.edges[(src["id"], dst["id"])]


def _columns(source: str, target: str) -> list[dict[str, Any]]:
    return [
        {"fromColumns": [f"{source}.{c}"], "toColumn": f"{target}.{c}", "function": c}
        for c in ("order_id", "amount")
    ]


def _puts(om: FakeOpenMetadata) -> list[Any]:
    return [r for r in om.requests if r.method == "PUT" and r.path == "/api/v1/lineage"]


# -- events ---------------------------------------------------------------------------------


def _dotted_target(mini_target: Path) -> Path:
    """The mini artifacts with table `core_orders` named `v1.orders`, schema `my.schema` for
    `stg_orders`."""
    path = mini_target / "manifest.json"
    manifest = json.loads(path.read_text())
    orders = manifest["nodes"]["model.jaffle_oml.core_orders"]
    orders["alias"], orders["relation_name"] = "v1.orders", '"warehouse"."core"."v1.orders"'
    staged = manifest["nodes"]["model.jaffle_oml.stg_orders"]
    staged["schema"], staged["relation_name"] = "my.schema", '"warehouse"."my.schema"."stg_orders"'
    path.write_text(json.dumps(manifest))
    return mini_target


def _built(target: Path) -> list[dict[str, Any]]:
    column = ColumnEdge(
        output="order_id",
        inputs=(
            (SourceColumn("warehouse", "my.schema", "stg_orders", "order_id"), (IDENTITY,)),
            # a relation the SQL names that is no dbt node
            (SourceColumn("warehouse", "raw.v2", "orders", "id"), (IDENTITY,)),
        ),
        expression="order_id",
    )
    built = build_events(
        read_artifacts(target),
        invocation=Invocation(
            invocation_id="11111111-2222-3333-4444-555555555555",
            started_at=datetime(2026, 11, 30, 3, 55, tzinfo=timezone.utc),
            command="build",
            project_name="jaffle_oml",
            profile_name="jaffle_oml",
            dbt_version="1.11.16",
        ),
        namespaces=Namespaces(by_catalog={"crm": "mysql://crm:3306"}, fallback=NS),
        settings=EventSettings(producer="https://example.com/dbt-oml", adapter_version="0.1.0"),
        lineage={"model.jaffle_oml.core_orders": ModelLineage(columns=(column,))},
    )
    return [Serde.to_dict(e) for e in built]


def _datasets(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        for dataset in [*(event.get("inputs") or []), *(event.get("outputs") or [])]:
            out.setdefault(dataset["name"], []).append(dataset)
    return out


def test_the_hierarchy_facet_comes_only_with_a_dotted_name(mini_target: Path) -> None:
    datasets = _datasets(_built(_dotted_target(mini_target)))
    levels = {
        name: [
            (level["type"], level["name"])
            for level in (d["facets"].get("hierarchy") or {}).get("hierarchy", [])
        ]
        for name, found in datasets.items()
        for d in found
    }
    assert levels["warehouse.core.v1.orders"] == [
        ("DATABASE", "warehouse"),
        ("SCHEMA", "core"),
        ("TABLE", "v1.orders"),
    ]
    assert levels["warehouse.my.schema.stg_orders"] == [
        ("DATABASE", "warehouse"),
        ("SCHEMA", "my.schema"),
        ("TABLE", "stg_orders"),
    ]
    assert levels["warehouse.raw.v2.orders"][1] == ("SCHEMA", "raw.v2")  # a plain input too
    dotted = {
        "warehouse.core.v1.orders",
        "warehouse.my.schema.stg_orders",
        "warehouse.raw.v2.orders",
    }
    assert {name for name, found in levels.items() if found} == dotted
    # every dataset naming them carries it (inputs of later models, tests), none else does
    for name, found in datasets.items():
        assert all(("hierarchy" in d["facets"]) == (name in dotted) for d in found), name


def test_events_with_a_dotted_name_keep_to_the_spec(mini_target: Path) -> None:
    if not SPEC.is_dir():
        pytest.skip(f"OpenLineage JSON schemas not found at {SPEC} (../shared)")
    validator = SpecValidator.for_dbt_oml()
    # as tests/integration/test_spec.py: both are sent outside their kind's place on purpose
    tolerated = frozenset({("dataset", "dataQualityAssertions"), ("output", "columnLineage")})
    events = _built(_dotted_target(mini_target))
    assert [p for e in events for p in validator.errors(e, tolerated)] == []


def test_om_reads_the_parts_from_the_facet_and_input_fields_from_the_inputs(
    mini_target: Path,
) -> None:
    events = _built(_dotted_target(mini_target))
    (end,) = [
        e
        for e in events
        if e["eventType"] == "COMPLETE"
        and [o["name"] for o in e.get("outputs") or []] == ["warehouse.core.v1.orders"]
    ]
    ref = table_ref(end["outputs"][0])
    assert ref is not None
    assert (ref.database, ref.schema, ref.table) == ("warehouse", "core", "v1.orders")
    lineage = end["outputs"][0]["facets"]["columnLineage"]["fields"]["order_id"]
    field = lineage["inputFields"][0]
    assert field["name"] == "warehouse.my.schema.stg_orders"
    alone = table_ref(field)  # no facets: the last three parts, the wrong table
    assert alone is not None
    assert (alone.database, alone.schema) == ("my", "schema")
    known = dataset_refs(end["inputs"])
    resolved = table_ref(field, known)
    assert resolved is not None
    assert (resolved.database, resolved.schema, resolved.table) == (
        "warehouse",
        "my.schema",
        "stg_orders",
    )


# -- the stand-in ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2.0", "1.12"])
def test_the_stand_in_cannot_resolve_a_dotted_name_on_its_openlineage_endpoint(
    tmp_path: Path, version: str
) -> None:
    om = FakeOpenMetadata.with_bot(version=version)
    t = transport(om, tmp_path)
    t.emit(_event([STG], V1))
    assert t.close() is True  # the tables exist now, with OM's quoted FQNs
    assert om.entity("table", ORDERS) is not None
    assert om.entity("table", STAGED) is not None
    om.settings["namespaceToServiceMapping"] = {NS: SERVICE}  # every lookup OM has: in vain
    posted = prepare(_event([STG], V1), services={NS: SERVICE}).event  # + datasource facets
    reply = httpx2.Client(transport=httpx2.WSGITransport(app=om)).post(
        f"{BASE}/api/v1/openlineage/lineage",
        json=posted,
        headers={"Authorization": "Bearer bot-jwt"},
    )
    assert reply.status_code == 200
    assert reply.json()["lineageEdgesCreated"] == 0  # as OM: unquoted LIKE patterns (ref §2.2)


@pytest.mark.parametrize("end", ["fromEntity", "toEntity"])
def test_the_stand_in_refuses_a_put_naming_an_unknown_table(
    om: FakeOpenMetadata, tmp_path: Path, end: str
) -> None:
    t = transport(om, tmp_path)
    t.emit(_event([STG], V1))
    assert t.close() is True
    src, dst = om.entity("table", STAGED), om.entity("table", ORDERS)
    assert src is not None
    assert dst is not None
    edge = {
        "fromEntity": {"id": src["id"], "type": "table"},
        "toEntity": {"id": dst["id"], "type": "table"},
    }
    unknown = "00000000-0000-4000-8000-000000000000"
    edge[end] = {"id": unknown, "type": "table"}
    http = httpx2.Client(transport=httpx2.WSGITransport(app=om))
    headers = {"Authorization": "Bearer bot-jwt"}
    reply = http.put(f"{BASE}/api/v1/lineage", json={"edge": edge}, headers=headers)
    assert (reply.status_code, reply.json()["message"]) == (
        404,
        f"table instance for {unknown} not found",
    )
    bad = http.put(
        f"{BASE}/api/v1/lineage", json={"edge": {"fromEntity": edge["fromEntity"]}}, headers=headers
    )
    assert bad.status_code == 400


# -- the transport --------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2.0", "1.12"])
def test_a_dotted_table_and_schema_reach_om_with_their_edge_and_columns(
    tmp_path: Path, version: str
) -> None:
    om = FakeOpenMetadata.with_bot(version=version)
    t = transport(om, tmp_path)
    t.emit(_event([STG], V1))
    assert t.close() is True
    assert t.problems == []
    assert om.entity("databaseSchema", f'{SERVICE}.warehouse."my.schema"') is not None
    edge = _edge(om, STAGED, ORDERS)
    assert edge["columnsLineage"] == _columns(STAGED, ORDERS)
    assert edge["source"] == "OpenLineage"
    assert edge["sqlQuery"] == 'select * from "my.schema".stg_orders'
    assert edge["description"] == (
        f"Lineage from OpenLineage event for job: dbt/jaffle.core.v1_orders (run: {RUN_ID})"
    )
    pipeline = om.entity("pipeline", 'openlineage."dbt-jaffle.core.v1_orders"')
    assert pipeline is not None
    assert edge["pipeline"]["id"] == pipeline["id"]
    assert len(_puts(om)) == 1
    # nothing left for the OpenLineage endpoint: the event had no dataset it can resolve
    assert om.count("POST", "/api/v1/openlineage") == 0
    assert not (tmp_path / "outbox").exists() or not any((tmp_path / "outbox").iterdir())


def test_mixed_events_split_between_the_endpoint_and_put(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    t = transport(om, tmp_path)
    plain_out = _dataset("warehouse", "core", "orders")
    t.emit(_event([STG, PLAIN], V1))  # a dotted output: both edges by PUT
    t.emit(_event([STG, PLAIN], plain_out))  # a dotted input: its edge by PUT, the other posted
    assert t.close() is True
    assert t.problems == []
    assert _edge(om, STAGED, ORDERS)["columnsLineage"] == _columns(STAGED, ORDERS)
    assert _edge(om, PAYMENTS, ORDERS)["columnsLineage"] == _columns(PAYMENTS, ORDERS)
    out = f"{SERVICE}.warehouse.core.orders"
    assert _edge(om, STAGED, out)["columnsLineage"] == _columns(STAGED, out)
    assert _edge(om, PAYMENTS, out)["columnsLineage"] == _columns(PAYMENTS, out)
    assert len(_puts(om)) == 3
    (batch,) = [r for r in om.requests if r.path.endswith("/lineage/batch")]
    (posted,) = batch.body["events"]
    assert [d["name"] for d in posted["inputs"]] == [PLAIN["name"]]  # what OM can resolve
    assert [d["name"] for d in posted["outputs"]] == [plain_out["name"]]


def test_a_run_without_column_lineage_keeps_what_om_holds_on_a_dotted_edge(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    first = transport(om, tmp_path)
    first.emit(_event([STG], V1))
    assert first.close() is True
    held = copy.deepcopy(_edge(om, STAGED, ORDERS))
    second = transport(om, tmp_path)
    second.emit(_event([STG], V1, column_lineage=False))
    assert second.close() is True  # delivered: the edge is there, with its columns
    assert _edge(om, STAGED, ORDERS) == held
    assert len(_puts(om)) == 1
    assert second.guarded == {ORDERS}
    third = transport(om, tmp_path, allow_empty_column_lineage=True)
    third.emit(_event([STG], V1, column_lineage=False))
    assert third.close() is True
    assert _edge(om, STAGED, ORDERS).get("columnsLineage") is None  # asked for: replaced


def test_a_put_om_refuses_is_never_counted_delivered(om: FakeOpenMetadata, tmp_path: Path) -> None:
    t = transport(om, tmp_path)
    om.fail_next([400], "/api/v1/lineage")
    t.emit(_event([STG], V1))
    assert t.close() is False
    assert t.delivered == 0
    ((reason, _kept_in),) = t.kept.reasons
    assert "refused the lineage edge" in reason
    assert "service" not in reason
    rejected = tmp_path / "outbox" / "openmetadata.rejected.jsonl"
    assert len(rejected.read_text().splitlines()) == 1


def test_a_table_gone_from_om_keeps_the_event_for_a_retry(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    t = transport(om, tmp_path)
    t.emit(_event([STG], V1))
    t.flush()
    assert t.delivered == 1
    del om.entities["table"][STAGED]  # deleted in OM; the transport still lists it
    t.emit(_event([STG], V1))
    assert t.close() is False
    ((reason, _kept_in),) = t.kept.reasons
    assert "OpenMetadata has no entity for the lineage edge" in reason
    kept = tmp_path / "outbox" / "openmetadata.jsonl"
    assert len(kept.read_text().splitlines()) == 1


def test_a_put_that_fails_for_a_while_is_retried(om: FakeOpenMetadata, tmp_path: Path) -> None:
    time = FakeTime()
    t = transport(om, tmp_path, time)
    om.fail_next([503], "/api/v1/lineage")
    t.emit(_event([STG], V1))
    assert t.close() is True
    assert len(time.slept) == 1
    assert _edge(om, STAGED, ORDERS)["columnsLineage"] == _columns(STAGED, ORDERS)


def test_without_bootstrap_the_ids_are_read_by_fqn(om: FakeOpenMetadata, tmp_path: Path) -> None:
    first = transport(om, tmp_path)
    first.emit(_event([STG], V1, column_lineage=False))
    assert first.close() is True
    assert _edge(om, STAGED, ORDERS).get("columnsLineage") is None
    before = len(om.requests)
    t = transport(om, tmp_path, bootstrap=False)
    t.emit(_event([STG], V1))
    assert t.close() is True
    assert _edge(om, STAGED, ORDERS)["columnsLineage"] == _columns(STAGED, ORDERS)
    reads = [r.path for r in om.requests[before:] if r.method == "GET"]
    assert f"/api/v1/tables/name/{STAGED}" in reads
    assert f"/api/v1/tables/name/{ORDERS}" in reads


def test_an_unmapped_namespace_is_still_named_as_such(om: FakeOpenMetadata, tmp_path: Path) -> None:
    foreign = {**STG, "namespace": "postgres://elsewhere:5432"}
    t = transport(om, tmp_path)
    t.emit(_event([foreign], V1))
    assert t.close() is False
    ((reason, _kept_in),) = t.kept.reasons
    assert "postgres://elsewhere:5432/warehouse.my.schema.stg_orders" in reason
    assert "no OpenMetadata service" in reason


def test_columns_for_a_dotted_name(om: FakeOpenMetadata, tmp_path: Path) -> None:
    t = transport(om, tmp_path)
    t.emit(_event([STG], V1))
    assert t.close() is True
    again = transport(om, tmp_path)
    assert again.columns_for(NS, "warehouse.core.v1.orders") == (
        ("order_id", "integer"),
        ("amount", "double"),
    )
    assert again.columns_for(NS, "warehouse.my.schema.stg_orders") is not None
    assert again.columns_for(NS, "warehouse.core.v2.orders") is None


def test_events_built_from_a_dotted_project_reach_om(mini_target: Path, tmp_path: Path) -> None:
    om = FakeOpenMetadata.with_bot()
    om.seed("databaseService", {"name": "crm", "serviceType": "Mysql"})
    t = transport(om, tmp_path, services={"mysql://crm:3306": "crm"})
    for event in _built(_dotted_target(mini_target)):
        t.emit(event)
    assert t.close() is True, t.problems
    edge = _edge(om, STAGED, ORDERS)
    assert edge["columnsLineage"] == [
        {
            "fromColumns": [f"{STAGED}.order_id"],
            "toColumn": f"{ORDERS}.order_id",
            "function": "order_id",
        }
    ]


def test_the_dbt_tab_names_a_dotted_upstream_by_its_quoted_fqn(
    mini_target: Path, tmp_path: Path
) -> None:
    """The data model's `upstream` of `v1.orders` is `..."my.schema".stg_orders`: the input's
    hierarchy facet keeps the dotted schema whole (split at every dot, it named no table)."""
    om = FakeOpenMetadata.with_bot()
    om.seed("databaseService", {"name": "crm", "serviceType": "Mysql"})
    t = transport(om, tmp_path, services={"mysql://crm:3306": "crm"})
    for event in _built(_dotted_target(mini_target)):
        t.emit(event)
    assert t.close() is True, t.problems
    orders = om.entity("table", ORDERS)
    assert orders is not None
    assert STAGED in orders["dataModel"]["upstream"]
