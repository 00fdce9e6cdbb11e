"""dbt-oml's `dbt_oml_node` and `dbt_oml_tests` facets, built from the hand-trimmed artifacts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.artifacts import read_manifest
from dbt_oml.events.node_facets import _hints, owners
from tests.support.events import event_by, events_of

TEST = "test.jaffle_oml.not_null_core_orders_order_id.bc02f3a29c"


def _edit(target: Path, name: str, change: Any) -> None:
    path = target / name
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _with_hints(doc: dict[str, Any]) -> None:
    node = doc["nodes"]["model.jaffle_oml.core_customers"]
    node["raw_code"] = "select * from {{ ref('stg_customers') }}"
    node["config"]["meta"]["openmetadata"] = {"tier": "Tier.Tier1", "tags": ["PII.Sensitive"]}
    node["columns"]["customer_key"]["config"]["tags"] = ["key"]
    node["columns"]["customer_key"]["config"]["meta"] = {
        "openmetadata": {"glossary": ["Sales.Customer"]}
    }


def test_a_model_s_output_carries_what_dbt_defines(mini_target: Path) -> None:
    _edit(mini_target, "manifest.json", _with_hints)
    event = event_by(events_of(mini_target), "core_customers.build.run", "COMPLETE")
    facet = event["outputs"][0]["facets"]["dbt_oml_node"]
    assert facet["_schemaURL"].startswith("urn:dbt-oml:facets:1-0-0:DbtNodeDatasetFacet.json")
    assert facet["uniqueId"] == "model.jaffle_oml.core_customers"
    assert (facet["resourceType"], facet["project"]) == ("model", "jaffle_oml")
    assert facet["path"] == "models/core/core_customers.sql"
    assert facet["rawSql"] == "select * from {{ ref('stg_customers') }}"
    assert facet["tags"] == ["core", "pii"]
    assert facet["owners"] == ["data-platform@example.com"]
    assert (facet["tier"], facet["omTags"]) == ("Tier.Tier1", ["PII.Sensitive"])
    assert facet["columns"] == [
        {"name": "customer_key", "tags": ["key"], "glossaryTerms": ["Sales.Customer"]}
    ]
    start = event_by(events_of(mini_target), "core_customers.build.run", "START")
    assert "dbt_oml_node" not in start["outputs"][0]["facets"]  # only what the run ended with


def test_owners_in_oms_order_of_preference(mini_target: Path) -> None:
    def groups(doc: dict[str, Any]) -> None:
        doc["groups"] = {
            "group.jaffle_oml.finance": {
                "name": "finance",
                "owner": {"name": "Finance", "email": "finance@example.com"},
            }
        }
        doc["nodes"]["model.jaffle_oml.core_orders"]["config"]["group"] = "finance"
        customers = doc["nodes"]["model.jaffle_oml.core_customers"]
        customers["meta"]["openmetadata"] = {"owner": ["ops"]}

    _edit(mini_target, "manifest.json", groups)
    manifest = read_manifest(mini_target / "manifest.json")
    assert manifest.groups == {"finance": "finance@example.com"}
    assert owners(manifest.nodes["model.jaffle_oml.core_orders"], manifest.groups) == [
        "finance@example.com"
    ]
    assert owners(manifest.nodes["model.jaffle_oml.core_customers"], manifest.groups) == ["ops"]


def test_a_test_s_end_carries_its_result_and_table(mini_target: Path) -> None:
    events = [e for e in events_of(mini_target) if e["job"]["name"] == TEST]
    start, end = events
    assert "dbt_oml_tests" not in start["run"]["facets"]
    (test,) = end["run"]["facets"]["dbt_oml_tests"]["tests"]
    assert test["tested"] == {"namespace": "duckdb://pod", "name": "warehouse.core.core_orders"}
    assert (test["name"], test["type"], test["column"]) == (
        "not_null_core_orders_order_id",
        "not_null",
        "order_id",
    )
    assert (test["status"], test["generic"], test["completedAt"]) == (
        "pass",
        True,
        end["eventTime"],
    )
    singular = [e for e in events_of(mini_target) if e["job"]["name"].endswith("not_negative")]
    (test,) = singular[1]["run"]["facets"]["dbt_oml_tests"]["tests"]
    assert (test["type"], test["generic"]) == ("assert_revenue_not_negative", False)


def test_tests_dbt_skipped_are_on_the_invocation_s_end(mini_target: Path) -> None:
    def skip(doc: dict[str, Any]) -> None:
        for result in doc["results"]:
            if result["unique_id"] == TEST:
                result.update(status="skipped", timing=[], message=None)

    _edit(mini_target, "run_results.json", skip)
    events = events_of(mini_target)
    assert not [e for e in events if e["job"]["name"] == TEST]  # no run of its own
    end = events[-1]
    (test,) = end["run"]["facets"]["dbt_oml_tests"]["tests"]
    assert (test["uniqueId"], test["status"]) == (TEST, "skipped")
    assert test["completedAt"] == end["eventTime"]


def test_meta_hints_that_do_not_read_are_ignored() -> None:
    assert _hints([("openmetadata", "not json")]) == {}
    assert _hints([("openmetadata", "[1]")]) == {}
    assert _hints([]) == {}


def test_both_facets_are_valid_against_their_shipped_schemas(mini_target: Path) -> None:
    from tests.support.spec import SPEC, SpecValidator

    if not SPEC.is_dir():
        pytest.skip(f"OpenLineage JSON schemas not found at {SPEC} (../shared)")

    def skip(doc: dict[str, Any]) -> None:
        for result in doc["results"]:
            if result["unique_id"] == TEST:
                result.update(status="skipped", timing=[], message=None)

    _edit(mini_target, "manifest.json", _with_hints)
    _edit(mini_target, "run_results.json", skip)
    validator = SpecValidator.for_dbt_oml()
    checked = 0
    for event in events_of(mini_target):
        for facet in [
            *[o["facets"].get("dbt_oml_node") for o in event["outputs"]],
            event["run"]["facets"].get("dbt_oml_tests"),
        ]:
            if facet is not None:
                assert validator.schema_errors(facet, facet["_schemaURL"]) == [], facet
                checked += 1
    assert checked > 10
