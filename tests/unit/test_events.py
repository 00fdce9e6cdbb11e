from __future__ import annotations

import re
from pathlib import Path

import pytest
from openlineage.client.serde import Serde

from dbt_oml.artifacts import read_artifacts
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import build_events
from dbt_oml.runs import JobNaming
from tests.support.events import NS, STARTED, event_by, events_of

Z_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_parent_run_brackets_everything(mini_target: Path) -> None:
    events = events_of(mini_target, error="1 node(s) failed")
    assert events[0]["eventType"] == "START"
    assert events[0]["job"]["name"] == "dbt-run-jaffle_oml"
    assert events[-1]["eventType"] == "FAIL"
    assert events[-1]["run"]["facets"]["errorMessage"]["message"] == "1 node(s) failed"
    parent = events[0]["run"]["runId"]
    for event in events[1:-1]:
        assert event["run"]["facets"]["parent"]["run"]["runId"] == parent
    assert [e["eventTime"] for e in events] == sorted(e["eventTime"] for e in events)


def test_times_are_utc_z_with_milliseconds(mini_target: Path) -> None:
    for event in events_of(mini_target):
        assert Z_TIME.match(event["eventTime"]), event["eventTime"]


def test_every_executed_node_gets_start_and_terminal(mini_target: Path) -> None:
    events = events_of(mini_target)
    runs: dict[str, list[str]] = {}
    for e in events[1:-1]:
        runs.setdefault(e["run"]["runId"], []).append(e["eventType"])
    assert all(kinds[0] == "START" and len(kinds) == 2 for kinds in runs.values())
    fail = event_by(events, "core_order_audit.build.run", "FAIL")
    assert "this_column_does_not_exist" in fail["run"]["facets"]["errorMessage"]["message"]
    assert not [e for e in events if "core_open_balances" in e["job"]["name"]]  # skipped
    assert event_by(events, "country_codes.build.seed", "COMPLETE")
    assert event_by(events, "customers_snapshot.build.snapshot", "COMPLETE")


def test_ephemeral_model_is_looked_through(mini_target: Path) -> None:
    events = events_of(mini_target)
    names = {d["name"] for e in events for d in e["inputs"] + e["outputs"]}
    assert not any("stg_payments" in n for n in names)
    core_orders = event_by(events, "core_orders.build.run", "COMPLETE")
    inputs = {(d["namespace"], d["name"]) for d in core_orders["inputs"]}
    assert inputs == {
        ("duckdb://pod", "warehouse.staging.stg_orders"),
        ("mysql://crm:3306", "crm.sales.payments"),
    }


def test_sources_by_identifier_and_original_case(mini_target: Path) -> None:
    events = events_of(mini_target)
    stg = event_by(events, "stg_customers.build.run", "COMPLETE")
    assert [(d["namespace"], d["name"]) for d in stg["inputs"]] == [
        ("mysql://crm:3306", "crm.sales.Customers")
    ]
    mart = event_by(events, "revenue_by_country.build.run", "COMPLETE")
    out = mart["outputs"][0]
    assert (out["namespace"], out["name"]) == ("postgres://dw:5432", "dw.marts.RevenueByCountry")
    assert [f["name"] for f in out["facets"]["schema"]["fields"]] == [
        "CountryName",
        "Region",
        "Revenue",
        "Customers",
    ]


def test_schema_from_catalog_with_yaml_descriptions(mini_target: Path) -> None:
    out = event_by(events_of(mini_target), "stg_customers.build.run", "COMPLETE")["outputs"][0]
    fields = {f["name"]: f for f in out["facets"]["schema"]["fields"]}
    assert fields["customer_id"]["type"] == "INTEGER"
    assert fields["customer_id"]["description"] == "The CRM customer id."
    assert fields["signed_up_on"]["type"] == "DATE"  # not declared in YAML: only the catalog knows


def test_without_catalog_the_declared_columns_are_used(mini_target: Path) -> None:
    (mini_target / "catalog.json").unlink()
    out = event_by(events_of(mini_target), "stg_customers.build.run", "COMPLETE")["outputs"][0]
    assert [f["name"] for f in out["facets"]["schema"]["fields"]] == ["customer_id", "email"]


def test_files_read_by_sql_are_datasets(mini_target: Path) -> None:
    web = event_by(events_of(mini_target), "stg_web_events.build.run", "COMPLETE")
    assert [(d["namespace"], d["name"]) for d in web["inputs"]] == [
        ("file", "/w/data/web_events.parquet")
    ]
    seed = event_by(events_of(mini_target), "country_codes.build.seed", "COMPLETE")
    assert [(d["namespace"], d["name"]) for d in seed["inputs"]] == [
        ("file", "/w/project/seeds/country_codes.csv")
    ]


def test_facets_of_a_model(mini_target: Path) -> None:
    event = event_by(events_of(mini_target), "core_customers.build.run", "COMPLETE")
    job = event["job"]["facets"]
    assert job["jobType"]["jobType"] == "MODEL"
    assert job["jobType"]["integration"] == "DBT"
    assert job["sql"]["dialect"] == "duckdb"
    assert "md5(" in job["sql"]["query"]
    run = event["run"]["facets"]
    assert run["processing_engine"]["name"] == "dbt"
    assert {"key": "pii", "value": "true", "source": "DBT"} in run["tags"]["tags"]
    dbt_run = {k: v for k, v in run["dbt_run"].items() if not k.startswith("_")}
    assert dbt_run == {
        "invocation_id": "11111111-2222-3333-4444-555555555555",
        "project_name": "jaffle_oml",
        "project_version": "1.0.0",
        "profile_name": "jaffle_oml",
        "dbt_runtime": "core",
        "command": "build",
    }
    assert run["dbt_version"]["version"] == "1.11.16"
    out = event["outputs"][0]["facets"]
    assert out["ownership"]["owners"] == [{"name": "data-platform@example.com"}]
    assert out["dataSource"]["uri"] == "duckdb://pod"
    assert out["documentation"]["description"].startswith("One row per customer")


def test_output_statistics_when_dbt_reports_rows(mini_target: Path) -> None:
    seed = event_by(events_of(mini_target), "country_codes.build.seed", "COMPLETE")
    assert seed["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 4


def test_tests_become_assertions_on_the_tested_dataset(mini_target: Path) -> None:
    event = event_by(events_of(mini_target), "core_orders.build.test", "COMPLETE")
    tested = event["inputs"][0]
    assert tested["name"] == "warehouse.core.core_orders"
    checks = {a["name"]: a for a in tested["inputFacets"]["dataQualityAssertions"]["assertions"]}
    assert checks["unique_core_orders_order_id"]["assertion"] == "unique"
    assert checks["unique_core_orders_order_id"]["column"] == "order_id"
    assert checks["unique_core_orders_order_id"]["success"] is True
    assert (
        tested["facets"]["dataQualityAssertions"] == tested["inputFacets"]["dataQualityAssertions"]
    )
    source_tests = event_by(events_of(mini_target), "crm.customers.build.test", "COMPLETE")
    assert source_tests["inputs"][0]["name"] == "crm.sales.Customers"


def test_assertions_are_in_test_order_not_dbt_thread_order(mini_target: Path) -> None:
    event = event_by(events_of(mini_target), "core_orders.build.test", "COMPLETE")
    names = [
        a["name"] for a in event["inputs"][0]["inputFacets"]["dataQualityAssertions"]["assertions"]
    ]
    assert names == sorted(names)
    assert len(names) == 4


def test_a_run_per_test_at_its_own_times(mini_target: Path) -> None:
    events = events_of(mini_target)
    uid = "test.jaffle_oml.unique_core_orders_order_id.a285d84b0f"
    start, end = event_by(events, uid, "START"), event_by(events, uid, "COMPLETE")
    assert start["eventTime"] == "2026-11-30T03:56:24.766Z"
    assert end["eventTime"] > start["eventTime"]
    assert start["run"]["runId"] == end["run"]["runId"]
    assert start["job"]["facets"]["jobType"]["jobType"] == "TEST"
    assert [i["name"] for i in end["inputs"]] == ["warehouse.core.core_orders"]
    assert "dataQualityAssertions" not in end["inputs"][0].get("inputFacets", {})
    (execution,) = end["run"]["facets"]["test"]["tests"]
    assert execution["name"] == uid
    assert execution["status"] == "pass"
    assert execution["type"] == "unique"
    assert execution["severity"] == "error"
    assert execution["actual"] == "0"
    assert execution["contentType"] == "sql"
    assert "order_id" in execution["content"]
    parent = event_by(events, "dbt-run-jaffle_oml", "START")
    assert end["run"]["facets"]["parent"]["run"]["runId"] == parent["run"]["runId"]
    # a singular test reads two relations: one run, both inputs, type "singular"
    singular = event_by(events, "test.jaffle_oml.assert_revenue_not_negative", "COMPLETE")
    assert singular["run"]["facets"]["test"]["tests"][0]["type"] == "singular"
    assert singular["inputs"]
    tests = {e["job"]["name"] for e in events if e["job"]["name"].startswith("test.")}
    assert len(tests) == 6


def test_run_ids_are_deterministic_and_use_observed_starts(mini_target: Path) -> None:
    first, second = events_of(mini_target), events_of(mini_target)
    assert [e["run"]["runId"] for e in first] == [e["run"]["runId"] for e in second]
    moved = events_of(mini_target, node_starts={"model.jaffle_oml.stg_orders": STARTED})
    a = event_by(first, "stg_orders.build.run", "START")
    b = event_by(moved, "stg_orders.build.run", "START")
    assert a["run"]["runId"] != b["run"]["runId"]
    assert b["eventTime"] == "2026-11-30T03:55:00.000Z"


def test_starts_sent_live_are_not_built_again(mini_target: Path) -> None:
    """The end of a build builds no node START that went out while dbt ran; the rest is the
    same, in the same order."""
    every = events_of(mini_target)
    tests = [
        e
        for e in every
        if e["job"]["name"].startswith("test.") or "test" in e["job"]["name"].split(".")[-1:]
    ]
    nodes = [e for e in every[1:-1] if e not in tests]  # tests' runs never start live
    live = {e["run"]["runId"] for e in nodes if e["eventType"] == "START"}
    live = set(sorted(live)[: len(live) // 2])
    rest = events_of(mini_target, started_live=live)
    assert rest == [e for e in every if e["eventType"] != "START" or e["run"]["runId"] not in live]
    assert len(every) - len(rest) == len(live) > 0


@pytest.mark.parametrize(
    ("naming", "command", "expected"),
    [
        (JobNaming.DBT_OL, "build", "warehouse.core.jaffle_oml.core_orders.build.run"),
        (JobNaming.DBT_OL, "run", "warehouse.core.jaffle_oml.core_orders"),
        (JobNaming.UNIQUE_ID, "build", "model.jaffle_oml.core_orders"),
    ],
)
def test_job_naming(mini_target: Path, naming: JobNaming, command: str, expected: str) -> None:
    events = events_of(mini_target, naming=naming, command=command)
    assert expected in {e["job"]["name"] for e in events}


def test_commands_without_nodes_get_only_the_parent_run(mini_target: Path) -> None:
    events = events_of(mini_target, command="compile")
    assert [e["job"]["name"] for e in events] == ["dbt-run-jaffle_oml"] * 2


def test_orchestrator_parent_and_root(mini_target: Path) -> None:
    from dbt_oml.runs import Orchestrator, RunRef

    parent = RunRef(
        namespace="airflow", name="etl.dbt_task", run_id="01a22a97-0000-7000-8000-000000000001"
    )
    root = RunRef(namespace="airflow", name="etl", run_id="01a22a97-0000-7000-8000-000000000002")
    arts = read_artifacts(mini_target)
    inv = Invocation(
        invocation_id="i", started_at=STARTED, command="build", project_name="jaffle_oml"
    )
    settings = EventSettings(
        producer="https://example.com/p",
        adapter_version="0",
        orchestrator=Orchestrator(parent=parent, root=root),
    )
    events = [
        Serde.to_dict(e)
        for e in build_events(arts, invocation=inv, namespaces=NS, settings=settings)
    ]
    invocation_parent = events[0]["run"]["facets"]["parent"]
    assert invocation_parent["run"]["runId"] == parent.run_id
    assert (invocation_parent["job"]["namespace"], invocation_parent["job"]["name"]) == (
        "airflow",
        "etl.dbt_task",
    )
    assert invocation_parent["root"]["job"]["name"] == "etl"
    node = next(e for e in events if e["job"]["name"].endswith("stg_orders.build.run"))
    assert node["run"]["facets"]["parent"]["run"]["runId"] == events[0]["run"]["runId"]
    assert node["run"]["facets"]["parent"]["root"]["run"]["runId"] == root.run_id
    assert events[0]["job"]["namespace"] == "dbt"  # dbt-ol would use the parent's namespace here


DBT_OL_NAMES = [  # recorded from dbt-ol 1.54.0 in docs/reference/dbt-ol.md section 7
    ("run", "model.jaffle_ol.stg_orders", "main", None, "warehouse.main.jaffle_ol.stg_orders"),
    (
        "build",
        "model.jaffle_ol.stg_orders",
        "main",
        None,
        "warehouse.main.jaffle_ol.stg_orders.build.run",
    ),
    (
        "run",
        "model.jaffle_ol.export_customers",
        "main_mart",
        None,
        "other.main_mart.jaffle_ol.export_customers",
    ),
    (
        "snapshot",
        "snapshot.jaffle_ol.customers_snapshot",
        "snapshots",
        None,
        "warehouse.snapshots.jaffle_ol.customers_snapshot.snapshot",
    ),
    (
        "build",
        "snapshot.jaffle_ol.customers_snapshot",
        "snapshots",
        None,
        "warehouse.snapshots.jaffle_ol.customers_snapshot.build.snapshot",
    ),
    (
        "test",
        "model.jaffle_ol.customer_orders",
        "main",
        "test",
        "warehouse.main.jaffle_ol.customer_orders.test",
    ),
    (
        "build",
        "model.jaffle_ol.customer_orders",
        "main",
        "test",
        "warehouse.main.jaffle_ol.customer_orders.build.test",
    ),
    (
        "test",
        "source.jaffle_ol.app.payments",
        "raw",
        "test",
        "warehouse.raw.source.jaffle_ol.app.payments.test",
    ),
]


@pytest.mark.parametrize(
    ("command", "uid", "schema", "kind", "expected"), DBT_OL_NAMES, ids=[n[4] for n in DBT_OL_NAMES]
)
def test_job_names_match_dbt_ol(
    command: str, uid: str, schema: str, kind: str | None, expected: str
) -> None:
    from dbt_oml.artifacts import Manifest, Node
    from dbt_oml.events.node_events import EventBuilder

    resource_type, package, *_rest = uid.split(".")
    node = Node(
        unique_id=uid,
        resource_type=resource_type,
        name=uid.rsplit(".", maxsplit=1)[-1],
        package_name=package,
        database="other" if "export" in uid else "warehouse",
        schema=schema,
        identifier=uid.rsplit(".", maxsplit=1)[-1],
    )
    builder = EventBuilder(
        invocation=Invocation(
            invocation_id="i", started_at=STARTED, command=command, project_name="jaffle_ol"
        ),
        namespaces=NS,
        settings=EventSettings(producer="https://example.com/p", adapter_version="0"),
        manifest=Manifest(
            path="",
            dbt_version="1",
            invocation_id="i",
            adapter_type="duckdb",
            project_name="jaffle_ol",
            nodes={uid: node},
        ),
    )
    assert builder.job_name(node, kind) == expected
