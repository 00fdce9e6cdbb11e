"""The spec validator of tests/support/spec.py: it accepts valid events and really rejects invalid ones.

The format checkers need nothing; the rest reads ../shared/openlineage-spec and is skipped
without it. The events come from the hand-trimmed artifacts (no dbt run).
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from openlineage.client.serde import Serde

from dbt_oml.artifacts import read_artifacts
from dbt_oml.events import facets
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import build_events
from dbt_oml.namespaces import Namespaces
from dbt_oml.pipeline.run_inputs import PRODUCER
from tests.support.spec import SPEC, SpecValidator, is_date_time, is_uri, is_uuid

needs_spec = pytest.mark.skipif(
    not SPEC.is_dir(), reason=f"OpenLineage JSON schemas not found at {SPEC} (../shared)"
)
#: dbt-oml puts dataQualityAssertions (an InputDatasetFacet) in `facets` too, as dbt-ol does.
TOLERATED = frozenset({("dataset", "dataQualityAssertions")})
#: dbt-ol's dbt facet URL: a folder that never existed, and no `#/$defs/...` fragment.
DBT_OL_URL = (
    "https://github.com/OpenLineage/OpenLineage/tree/main/integration/common/openlineage/schema/"
    "dbt-run-run-facet.json"
)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("https://pypi.org/project/dbt-oml/0.1.0/", True),
        ("duckdb:///pods/run/warehouse.duckdb", True),
        ("mysql://crm:3306", True),
        ("postgres://[::1]:5432", True),
        ("md:", True),
        ("file:///w/seeds/raw%20orders.csv", True),
        ("https://openlineage.io/spec/facets/1-0-1/X.json#/$defs/X", True),
        ("file", False),  # the old dataSource uri of files and seeds
        ("/w/seeds/x.csv", False),
        ("duckdb:///w/my dir/x.duckdb", False),
        ("mysql://crm:port", False),
        ("https://h/%zz", False),
        ("1http://h", False),
        ("", False),
    ],
)
def test_uri_format(value: str, valid: bool) -> None:
    assert is_uri(value) is valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("2026-11-30T03:55:00.123Z", True),
        ("2026-11-30T03:55:00+01:00", True),
        ("2016-12-31T23:59:60Z", True),  # a leap second
        ("2026-11-30T03:55:00", False),  # no offset
        ("2026-11-30 03:55:00Z", False),
        ("2026-02-30T03:55:00Z", False),
        ("2026-11-30T24:00:00Z", False),
        ("2026-11-30", False),
    ],
)
def test_date_time_format(value: str, valid: bool) -> None:
    assert is_date_time(value) is valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("0195e0a2-7c1e-7000-8000-000000000001", True),
        ("0195E0A2-7C1E-7000-8000-000000000001", True),
        ("0195e0a27c1e70008000000000000001", False),  # no hyphens
        ("{0195e0a2-7c1e-7000-8000-000000000001}", False),
        ("not-a-uuid", False),
    ],
)
def test_uuid_format(value: str, valid: bool) -> None:
    assert is_uuid(value) is valid


def test_dbt_omls_own_uri_test_agrees() -> None:
    for value in ("duckdb:///w/x.duckdb", "mysql://crm:3306", "md:", "s3://lake"):
        assert (facets.is_uri(value), is_uri(value)) == (True, True), value
    for value in ("file", "duckdb:///w/my dir/x.duckdb", "x://h:port", "my_namespace"):
        assert (facets.is_uri(value), is_uri(value)) == (False, False), value


@pytest.fixture(scope="module")
def validator() -> SpecValidator:
    if not SPEC.is_dir():
        pytest.skip(f"OpenLineage JSON schemas not found at {SPEC} (../shared)")
    return SpecValidator.for_dbt_oml()


@pytest.fixture
def events(mini_target: Path) -> list[dict[str, Any]]:
    invocation = Invocation(
        invocation_id="11111111-2222-3333-4444-555555555555",
        started_at=datetime(2026, 11, 30, 3, 55, tzinfo=timezone.utc),
        command="build",
        project_name="jaffle_oml",
        profile_name="jaffle_oml",
        dbt_version="1.11.16",
    )
    built = build_events(
        read_artifacts(mini_target),
        invocation=invocation,
        namespaces=Namespaces(by_catalog={"crm": "mysql://crm:3306"}, fallback="duckdb://pod"),
        settings=EventSettings(producer=PRODUCER, adapter_version="0.1.0", cwd="/w"),
        error="1 node(s) failed",
    )
    return [Serde.to_dict(e) for e in built]


@needs_spec
def test_events_of_the_mini_artifacts_are_valid(
    events: list[dict[str, Any]], validator: SpecValidator
) -> None:
    assert len(events) > 10
    assert [p for e in events for p in validator.errors(e, TOLERATED)] == []


def _node_end(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A COMPLETE of a model: run, job and dataset facets, inputs and outputs."""
    return copy.deepcopy(
        next(e for e in events if e["eventType"] == "COMPLETE" and e["inputs"] and e["outputs"])
    )


@needs_spec
@pytest.mark.parametrize(
    ("change", "found"),
    [
        (lambda e: e.update(producer="dbt-oml 0.1.0"), "event/producer: 'dbt-oml 0.1.0' is not"),
        (lambda e: e.update(eventTime="2026-11-30T03:55:00"), "event/eventTime"),
        (lambda e: e["run"].update(runId="run-1"), "event/run/runId: 'run-1' is not a 'uuid'"),
        (lambda e: e.update(eventType="DONE"), "event/eventType"),
        (lambda e: e["outputs"][0]["facets"]["dataSource"].update(uri="file"), "'file' is not"),
        (lambda e: e["run"]["facets"]["dbt_run"].update(invocation_id="x"), "'x' is not a 'uuid'"),
        (lambda e: e["run"]["facets"]["dbt_run"].update(_schemaURL=DBT_OL_URL), "names no schema"),
        (lambda e: e["run"]["facets"]["parent"]["run"].update(runId=7), "7 is not of type"),
        (lambda e: e["job"]["facets"]["sql"].pop("query"), "'query' is a required property"),
        (lambda e: e["job"]["facets"]["sql"].pop("_producer"), "'_producer' is a required"),
        (lambda e: e["run"]["facets"].update(sql=e["job"]["facets"]["sql"]), "JobFacet does not"),
        (lambda e: e["job"]["facets"].update(query=e["job"]["facets"]["sql"]), "key 'query'"),
    ],
)
def test_invalid_events_are_rejected(
    events: list[dict[str, Any]], validator: SpecValidator, change: Any, found: str
) -> None:
    event = _node_end(events)
    assert validator.errors(event, TOLERATED) == []
    change(event)
    problems = validator.errors(event, TOLERATED)
    assert any(found in p for p in problems), problems


@needs_spec
def test_file_and_seed_data_sources_are_valid(validator: SpecValidator) -> None:
    url = "https://openlineage.io/spec/facets/1-0-1/DatasourceDatasetFacet.json"
    url += "#/$defs/DatasourceDatasetFacet"
    for namespace, name in [
        ("file", "/w/project/seeds/country codes.csv"),
        ("file", "/w/data/events_*.parquet"),
        ("duckdb:///w/my dir/warehouse.duckdb", "warehouse.main.t"),
        ("my warehouse", "db.s.t"),  # an override without a scheme: no uri at all
    ]:
        facet = Serde.to_dict(facets.datasource(namespace=namespace, name=name, producer=PRODUCER))
        assert facet["name"] == namespace
        assert validator.schema_errors(facet, url) == [], facet
    old = {"name": "file", "uri": "file", "_producer": PRODUCER, "_schemaURL": url}
    assert validator.schema_errors(old, url) == ["uri: 'file' is not a 'uri'"]
