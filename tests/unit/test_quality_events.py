"""dbt tests as data-quality events, from the bundled project's saved artifacts (no dbt run):
real times, the dbt_oml_tests facet and dataQualityAssertions, failures, tests without a model."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from openlineage.client.serde import Serde

from dbt_oml.artifacts import read_artifacts
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import build_events
from dbt_oml.namespaces import Namespaces

ARTIFACTS = Path(__file__).resolve().parents[1] / "golden" / "artifacts"
NS = Namespaces(
    by_catalog={"warehouse": "duckdb://pod", "crm": "duckdb://crm", "dw": "duckdb://dw"},
    fallback="duckdb://pod",
)
FAILED_TEST = "test.jaffle_oml.not_null_core_orders_order_id.bc02f3a29c"
SINGULAR = "test.jaffle_oml.assert_revenue_not_negative"


def _load(name: str) -> dict[str, Any]:
    return json.loads((ARTIFACTS / name).read_text())


def _target(tmp_path: Path, manifest: dict[str, Any], results: dict[str, Any]) -> Path:
    target = tmp_path / "target"
    target.mkdir()
    (target / "manifest.json").write_text(json.dumps(manifest))
    (target / "run_results.json").write_text(json.dumps(results))
    shutil.copy(ARTIFACTS / "catalog.json", target / "catalog.json")
    return target


def _events(target: Path) -> list[dict[str, Any]]:
    arts = read_artifacts(target)
    invocation = Invocation(
        invocation_id="11111111-2222-3333-4444-555555555555",
        started_at=datetime(2026, 12, 1, 10, 21, 0, tzinfo=timezone.utc),
        command="build",
        project_name="jaffle_oml",
    )
    settings = EventSettings(producer="https://example.com/dbt-oml", adapter_version="0")
    events = build_events(arts, invocation=invocation, namespaces=NS, settings=settings)
    return [Serde.to_dict(e) for e in events]


def _ms(text: str) -> str:
    """A dbt or OpenLineage time, to the millisecond, UTC."""
    at = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}"


def _runs(events: list[dict[str, Any]], job: str) -> dict[str, dict[str, Any]]:
    found = {e["eventType"]: e for e in events if e["job"]["name"] == job}
    assert len(found) == 2, sorted({e["job"]["name"] for e in events})
    return found


def _test_results(results: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in results["results"] if r["unique_id"].startswith("test.")]


@pytest.fixture
def results() -> dict[str, Any]:
    return _load("run_results.json")


@pytest.fixture
def manifest() -> dict[str, Any]:
    return _load("manifest.json")


class TestRealTimes:
    def test_every_test_is_a_run_at_its_own_times(
        self, tmp_path: Path, manifest: dict[str, Any], results: dict[str, Any]
    ) -> None:
        events = _events(_target(tmp_path, manifest, results))
        tests = _test_results(results)
        assert len(tests) == 19
        for result in tests:
            runs = _runs(events, result["unique_id"])
            starts = [t["started_at"] for t in result["timing"]]
            ends = [t["completed_at"] for t in result["timing"]]
            assert _ms(runs["START"]["eventTime"]) == _ms(starts[0])
            assert _ms(runs["COMPLETE"]["eventTime"]) == _ms(max(ends))
            assert runs["START"]["run"]["runId"] == runs["COMPLETE"]["run"]["runId"]

    def test_a_dataset_run_spans_its_tests(
        self, tmp_path: Path, manifest: dict[str, Any], results: dict[str, Any]
    ) -> None:
        events = _events(_target(tmp_path, manifest, results))
        on_orders = [
            r for r in _test_results(results) if "core_orders" in r["unique_id"].split(".")[2]
        ]
        runs = _runs(events, "warehouse.core.jaffle_oml.core_orders.build.test")
        first = min(_ms(r["timing"][0]["started_at"]) for r in on_orders)
        last = max(_ms(t["completed_at"]) for r in on_orders for t in r["timing"])
        assert _ms(runs["START"]["eventTime"]) == first
        assert _ms(runs["COMPLETE"]["eventTime"]) == last


class TestFacets:
    def test_dataset_assertions_name_each_test(
        self, tmp_path: Path, manifest: dict[str, Any], results: dict[str, Any]
    ) -> None:
        events = _events(_target(tmp_path, manifest, results))
        end = _runs(events, "warehouse.core.jaffle_oml.core_orders.build.test")["COMPLETE"]
        [tested] = end["inputs"]
        assert tested["name"] == "warehouse.core.core_orders"
        assertions = tested["inputFacets"]["dataQualityAssertions"]["assertions"]
        assert [(a["assertion"], a.get("column"), a["success"]) for a in assertions] == [
            ("accepted_values", "payment_state", True),
            ("not_null", "order_id", True),
            ("relationships", "customer_id", True),
            ("unique", "order_id", True),
        ]
        assert (
            tested["facets"]["dataQualityAssertions"]
            == tested["inputFacets"]["dataQualityAssertions"]
        )

    def test_the_dbt_oml_tests_facet_is_on_the_end_of_a_test_run(
        self, tmp_path: Path, manifest: dict[str, Any], results: dict[str, Any]
    ) -> None:
        events = _events(_target(tmp_path, manifest, results))
        runs = _runs(events, SINGULAR)
        assert "dbt_oml_tests" not in runs["START"]["run"]["facets"]
        [test] = runs["COMPLETE"]["run"]["facets"]["dbt_oml_tests"]["tests"]
        assert (test["uniqueId"], test["status"], test["failures"]) == (SINGULAR, "pass", 0)
        assert test["tested"] == {"namespace": "duckdb://dw", "name": "dw.marts.RevenueByCountry"}


class TestFailures:
    def test_a_failed_test_fails_its_run_and_its_assertion(
        self, tmp_path: Path, manifest: dict[str, Any], results: dict[str, Any]
    ) -> None:
        [failed] = [r for r in results["results"] if r["unique_id"] == FAILED_TEST]
        failed.update(
            status="fail", failures=3, message="Got 3 results, configured to fail if != 0"
        )
        events = _events(_target(tmp_path, manifest, results))
        runs = {e["eventType"] for e in events if e["job"]["name"] == FAILED_TEST}
        assert runs == {"START", "FAIL"}
        end = next(
            e for e in events if e["job"]["name"] == FAILED_TEST and e["eventType"] == "FAIL"
        )
        [test] = end["run"]["facets"]["dbt_oml_tests"]["tests"]
        assert (test["status"], test["failures"]) == ("fail", 3)
        dataset = _runs(events, "warehouse.core.jaffle_oml.core_orders.build.test")
        assert set(dataset) == {"START", "FAIL"}
        [tested] = dataset["FAIL"]["inputs"]
        by_name = {
            a["assertion"]: a for a in tested["inputFacets"]["dataQualityAssertions"]["assertions"]
        }
        assert by_name["not_null"]["success"] is False
        assert by_name["not_null"]["actual"] == "3"
        assert by_name["unique"]["success"] is True
        # the other datasets' tests passed
        others = _runs(events, "warehouse.core.jaffle_oml.core_customers.build.test")
        assert set(others) == {"START", "COMPLETE"}

    def test_a_skipped_test_has_no_run(
        self, tmp_path: Path, manifest: dict[str, Any], results: dict[str, Any]
    ) -> None:
        [skipped] = [r for r in results["results"] if r["unique_id"] == FAILED_TEST]
        skipped.update(status="skipped", failures=None)
        events = _events(_target(tmp_path, manifest, results))
        assert not [e for e in events if e["job"]["name"] == FAILED_TEST]
        end = _runs(events, "warehouse.core.jaffle_oml.core_orders.build.test")["COMPLETE"]
        names = [
            a["name"]
            for a in end["inputs"][0]["inputFacets"]["dataQualityAssertions"]["assertions"]
        ]
        assert "not_null_core_orders_order_id" not in names


class TestWithoutModel:
    def test_a_test_with_no_model_parent_is_still_a_run(
        self, tmp_path: Path, manifest: dict[str, Any], results: dict[str, Any]
    ) -> None:
        node = manifest["nodes"][SINGULAR]
        node["depends_on"]["nodes"] = []
        node["refs"] = []
        node.pop("attached_node", None)
        events = _events(_target(tmp_path, manifest, results))
        runs = _runs(events, SINGULAR)
        assert runs["START"]["inputs"] == []
        [test] = runs["COMPLETE"]["run"]["facets"]["dbt_oml_tests"]["tests"]
        assert test["uniqueId"] == SINGULAR
        assert test.get("tested") is None
        # no dataset run claims it
        assert not [
            e
            for e in events
            if e["job"]["name"] == "dw.marts.jaffle_oml.revenue_by_country.build.test"
        ]
