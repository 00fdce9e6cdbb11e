"""Issue 15: dbt's metadata on the tables dbt-oml owns, through the OpenMetadata transport.

In-process against the OM stand-in with the scoped bot (IngestionBotRole + LineageBotRole): what
OM's own dbt ingestion shows (descriptions, tags, owners, the dbt tab, tests with a result per
run), only on owned tables, only when the events carry dbt-oml's facets, idempotent, switchable,
and a part OM refuses is one line while the rest goes on.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.errors import ConfigError
from dbt_oml.om.metadata.session import DbtCounts
from dbt_oml.redaction import Redactor
from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport
from tests.support.fakes.openmetadata import FakeOpenMetadata, Principal
from tests.support.om_transport import NS, sample_event, transport

DST = "duckdb_pod.warehouse.staging.stg_customers"
SRC = "duckdb_pod.crm.sales.customers"
DBT_PATHS = ("dataQuality", "classifications", "/tags", "dataModel", "users/", "teams/")


@pytest.fixture
def om() -> FakeOpenMetadata:
    fake = FakeOpenMetadata.with_bot()
    fake.add_person("jane", "jane@example.com")
    fake.add_team("analytics", email="analytics@example.com")
    fake.add_team("Finance", team_type="Department")
    return fake


def node_event(**hints: Any) -> dict[str, Any]:
    """A model's COMPLETE with dbt-oml's `dbt_oml_node` facet (stg_customers from customers)."""
    event = sample_event()
    event["job"]["facets"] = {"sql": {"query": "select id, email from customers", "dialect": "d"}}
    output = event["outputs"][0]
    output["facets"]["documentation"] = {"description": "Customers, renamed."}
    output["facets"]["schema"]["fields"] = [
        {"name": "id", "type": "INTEGER", "description": "The key."},
        {"name": "email", "type": "VARCHAR"},
    ]
    output["facets"]["dbt_oml_node"] = {
        "uniqueId": "model.shop.stg_customers",
        "resourceType": "model",
        "project": "shop",
        "path": "models/stg_customers.sql",
        "rawSql": "select * from {{ source('crm', 'customers') }}",
        "tags": ["staging"],
        "owners": ["jane@example.com"],
        "columns": [{"name": "email", "tags": ["pii"], "omTags": ["PII.Sensitive"]}],
        **hints,
    }
    return event


def dbt_test_event(
    name: str = "not_null_stg_customers_id",
    *,
    status: str = "pass",
    at: str = "2026-11-30T03:56:00.250Z",
    column: str | None = "id",
    **extra: Any,
) -> dict[str, Any]:
    """A dbt test's own run (no outputs) with dbt-oml's `dbt_oml_tests` facet."""
    event = sample_event()
    event["job"] = {"namespace": "dbt", "name": f"test.shop.{name}"}
    event["outputs"] = []
    test = {
        "uniqueId": f"test.shop.{name}",
        "name": name,
        "type": "not_null",
        "generic": True,
        "status": status,
        "completedAt": at,
        "params": {"column_name": "id"},
        "failures": 0 if status == "pass" else 3,
        "tested": {"namespace": NS, "name": "warehouse.staging.stg_customers"},
        **extra,
    }
    if column is not None:
        test["column"] = column
    event["run"]["facets"] = {"dbt_oml_tests": {"tests": [test]}}
    return event


def send(om: FakeOpenMetadata, tmp_path: Path, *events: dict[str, Any], **config: Any):
    t = transport(om, tmp_path, **config)
    for event in events:
        t.emit(copy.deepcopy(event))
    assert t.close() is True, t.problems
    return t


def writes(om: FakeOpenMetadata, since: int = 0) -> list[tuple[str, str]]:
    return [
        (r.method, r.path)
        for r in om.requests[since:]
        if r.method != "GET" and "openlineage" not in r.path
    ]


def table(om: FakeOpenMetadata, fqn: str = DST) -> dict[str, Any]:
    found = om.entity("table", fqn)
    assert found is not None
    return found


# -- any producer: nothing without dbt-oml's facets ------------------------------------------


def test_events_without_dbt_facets_get_no_dbt_requests(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    t = send(om, tmp_path, sample_event())
    assert not [r.path for r in om.requests if any(p in r.path for p in DBT_PATHS)]
    assert t.notes == []


# -- items 1-4 on an owned table -------------------------------------------------------------


def test_an_owned_table_gets_descriptions_tags_owner_and_the_dbt_tab(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    t = send(om, tmp_path, node_event())
    held = table(om)
    assert held["description"] == "Customers, renamed."
    assert held["columns"][0]["description"] == "The key."
    assert [x["tagFQN"] for x in held["tags"]] == ["dbtTags.staging"]
    assert [x["tagFQN"] for x in held["columns"][1]["tags"]] == ["dbtTags.pii", "PII.Sensitive"]
    assert [(o["type"], o["name"]) for o in held["owners"]] == [("user", "jane")]
    model = held["dataModel"]
    assert model["modelType"] == "DBT"
    assert model["rawSql"].startswith("select * from {{ source")
    assert model["sql"] == "select id, email from customers"
    assert model["path"] == "models/stg_customers.sql"
    assert model["upstream"] == [SRC]
    assert model["dbtSourceProject"] == "shop"
    assert [c["name"] for c in model["columns"]] == ["id", "email"]
    classification = om.entity("classification", "dbtTags")
    assert classification is not None
    assert classification["description"] == "dbt classification"
    assert om.entity("tag", "dbtTags.pii")["description"] == "dbt Tags"  # type: ignore[index]
    assert t.notes == [
        "dbt metadata in OpenMetadata: descriptions 2, tags 3, owners 1, data models 1, "
        "test cases 0, results 0"
    ]


def test_a_second_identical_delivery_writes_nothing(om: FakeOpenMetadata, tmp_path: Path) -> None:
    events = (node_event(), dbt_test_event())
    send(om, tmp_path, *events)
    before = len(om.requests)
    again = send(om, tmp_path, *events)  # a new transport: what OM holds is the truth
    assert writes(om, before) == []
    assert again.notes == [
        "dbt metadata in OpenMetadata: descriptions 0, tags 0, owners 0, data models 0, "
        "test cases 0, results 0"
    ]


def test_a_person_s_description_stays_unless_update_descriptions(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    send(om, tmp_path, node_event())
    held = table(om)
    held["description"] = "Written by a steward."
    held["columns"][0]["description"] = "Edited."
    send(om, tmp_path, node_event())
    assert (held["description"], held["columns"][0]["description"]) == (
        "Written by a steward.",
        "Edited.",
    )
    t = send(om, tmp_path, node_event(), update_descriptions="true")
    held = table(om)
    assert (held["description"], held["columns"][0]["description"]) == (
        "Customers, renamed.",
        "The key.",
    )
    assert "descriptions 2" in t.notes[0]
    patches = [r for r in om.requests if r.method == "PATCH"]
    assert patches
    assert all(r.status == 200 for r in patches)


def test_a_column_without_a_description_gets_dbts(om: FakeOpenMetadata, tmp_path: Path) -> None:
    send(om, tmp_path, node_event())
    event = node_event()
    event["outputs"][0]["facets"]["schema"]["fields"][1]["description"] = "Lower-cased."
    t = send(om, tmp_path, event)
    assert table(om)["columns"][1]["description"] == "Lower-cased."
    assert "descriptions 1" in t.notes[0]


def test_tags_exist_before_labels_and_om_tags_only_when_om_has_them(
    om: FakeOpenMetadata, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    event = node_event(omTags=["Nope.Missing"], tier="Tier.Tier2", glossaryTerms=["Sales.Revenue"])
    send(om, tmp_path, event)
    assert [x["tagFQN"] for x in table(om)["tags"]] == ["dbtTags.staging", "Tier.Tier2"]
    assert "OpenMetadata has no tag Nope.Missing" in caplog.text
    assert "OpenMetadata has no glossary term Sales.Revenue" in caplog.text
    om.add_glossary_term("Sales.Revenue")
    send(om, tmp_path, event)
    assert "Sales.Revenue" in [x["tagFQN"] for x in table(om)["tags"]]


@pytest.mark.parametrize(
    ("owners", "expected"),
    [
        (["analytics"], [("team", "analytics")]),
        (["analytics@example.com"], [("team", "analytics")]),
        (["jane"], [("user", "jane")]),
        (["Finance"], []),  # a Department: no owner, and no user of that name either
        (["ghost@example.com"], []),
    ],
)
def test_owners_are_users_or_group_teams_by_name_or_email(
    om: FakeOpenMetadata, tmp_path: Path, owners: list[str], expected: list[tuple[str, str]]
) -> None:
    om.add_person("Finance")  # a user named like the Department team
    send(om, tmp_path, node_event(owners=owners))
    held = table(om).get("owners") or []
    assert [(o["type"], o["name"]) for o in held] == expected


def test_owners_never_replace_the_ones_a_table_has(om: FakeOpenMetadata, tmp_path: Path) -> None:
    send(om, tmp_path, node_event(owners=["analytics"]))
    send(om, tmp_path, node_event(owners=["jane"]))
    assert [o["name"] for o in table(om)["owners"]] == ["analytics"]


# -- item 5: tests ---------------------------------------------------------------------------


CASE = f"{DST}.id.not_null_stg_customers_id"


def test_tests_become_cases_with_one_result_per_run(om: FakeOpenMetadata, tmp_path: Path) -> None:
    send(om, tmp_path, node_event(), dbt_test_event())
    definition = om.entity("testDefinition", "not_null")
    assert definition is not None
    assert (definition["testPlatforms"], definition["entityType"]) == (["dbt"], "COLUMN")
    case = om.entity("testCase", CASE)
    assert case is not None
    assert case["entityLink"] == f"<#E::table::{DST}::columns::id>"
    assert case["parameterValues"] == [{"name": "not_null", "value": "column_name=id"}]
    assert om.entity("testSuite", f"{DST}.testSuite") is not None  # OM files it in the table's
    (result,) = om.results_of(CASE)
    assert (result["testCaseStatus"], result["timestamp"]) == ("Success", 1_796_010_960_250)
    # re-sent: nothing; a new run: one more point
    send(om, tmp_path, dbt_test_event())
    send(
        om, tmp_path, dbt_test_event(status="fail", at="2026-12-01T03:56:00.000Z", message="Got 3")
    )
    assert [r["testCaseStatus"] for r in om.results_of(CASE)] == ["Success", "Failed"]
    failed = om.results_of(CASE)[1]
    assert (failed["result"], failed["failedRows"]) == ("Got 3", 3)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("pass", "Success"),
        ("fail", "Failed"),
        ("error", "Failed"),
        ("warn", "Aborted"),
        ("skipped", "Aborted"),
    ],
)
def test_dbt_statuses_map_as_oms_dbt_ingestion_maps_them(
    om: FakeOpenMetadata, tmp_path: Path, status: str, expected: str
) -> None:
    send(om, tmp_path, node_event(), dbt_test_event(status=status))
    (result,) = om.results_of(CASE)
    assert result["testCaseStatus"] == expected
    assert ("result" in result) == (expected != "Success")


def test_a_table_level_and_a_singular_test(om: FakeOpenMetadata, tmp_path: Path) -> None:
    table_level = dbt_test_event("unique_stg_customers_id_email", column=None, type="unique")
    singular = dbt_test_event("assert_no_gaps", column=None, type="assert_no_gaps", generic=False)
    del singular["run"]["facets"]["dbt_oml_tests"]["tests"][0]["params"]
    send(om, tmp_path, node_event(), table_level, singular)
    assert om.entity("testDefinition", "unique_table")["entityType"] == "TABLE"  # type: ignore[index]
    assert om.entity("testCase", f"{DST}.unique_stg_customers_id_email") is not None
    assert om.entity("testCase", f"{DST}.assert_no_gaps")["parameterValues"] == []  # type: ignore[index]


def test_a_409_for_a_result_is_done(om: FakeOpenMetadata, tmp_path: Path) -> None:
    send(om, tmp_path, node_event(), dbt_test_event())
    send(om, tmp_path, dbt_test_event(status="fail", at="2026-12-02T00:00:00.000Z"))
    before = len(om.requests)
    t = send(om, tmp_path, dbt_test_event())  # an older run again: not OM's newest, so posted
    posts = [r for r in om.requests[before:] if "testCaseResults" in r.path]
    assert [(r.method, r.status) for r in posts] == [("POST", 409)]
    assert t.undelivered == 0
    assert "results 0" in t.notes[0]
    assert len(om.results_of(CASE)) == 2


# -- item 6: foreign tables, switches, the plan ----------------------------------------------


def test_foreign_tables_are_left_alone(
    om: FakeOpenMetadata, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    om.seed("databaseService", {"name": "lake", "serviceType": "Mssql"})
    om.seed("database", {"name": "warehouse", "service": "lake"})
    om.seed("databaseSchema", {"name": "staging", "database": "lake.warehouse"})
    send(om, tmp_path, node_event(), dbt_test_event(), services={NS: "lake"})
    foreign = om.entity("table", "lake.warehouse.staging.stg_customers")
    assert foreign is not None
    assert "dataModel" not in foreign
    assert not foreign.get("tags")
    assert om.entities["testCase"] == {}
    assert [r for r in om.requests if r.method == "PATCH"] == []
    assert "not dbt-oml's own tables" in caplog.text


@pytest.mark.parametrize(
    ("switch", "absent"),
    [
        ({"tests": False}, "dataQuality/testCases"),
        ({"data_model": False}, "/dataModel"),
        ({"tags": False}, "/api/v1/tags"),
        ({"owners": False}, "/api/v1/users/"),
    ],
)
def test_each_part_can_be_switched_off(
    om: FakeOpenMetadata, tmp_path: Path, switch: dict[str, bool], absent: str
) -> None:
    t = send(om, tmp_path, node_event(), dbt_test_event(), dbt_metadata=switch)
    assert not [r.path for r in om.requests if absent in r.path]
    assert t.notes


def test_without_the_data_model_tags_and_owners_are_patched(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    send(om, tmp_path, node_event(), dbt_metadata={"data_model": "false"})
    held = table(om)
    assert "dataModel" not in held
    assert [x["tagFQN"] for x in held["tags"]] == ["dbtTags.staging"]
    assert [o["name"] for o in held["owners"]] == ["jane"]
    before = len(om.requests)
    send(om, tmp_path, node_event(), dbt_metadata={"data_model": "false"})
    assert writes(om, before) == []


def test_all_off_is_one_switch(om: FakeOpenMetadata, tmp_path: Path) -> None:
    send(om, tmp_path, node_event(), dbt_test_event(), dbt_metadata="false")
    assert not [r.path for r in om.requests if any(p in r.path for p in DBT_PATHS)]


def test_the_dry_run_plan_lists_dbt_writes_and_writes_nothing(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    t = transport(om, tmp_path)
    plan = t.plan([node_event(), dbt_test_event()])
    assert writes(om) == []
    assert "PUT /api/v1/classifications dbtTags" in plan
    assert f"PUT /api/v1/tables/{{id}}/dataModel {DST}" in plan
    assert f"PUT /api/v1/dataQuality/testCases {CASE}" in plan
    assert any(p.startswith("POST /api/v1/dataQuality/testCases/testCaseResults/") for p in plan)


# -- item 7: what OM refuses -----------------------------------------------------------------


def test_a_part_om_refuses_is_one_line_and_the_rest_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    om = FakeOpenMetadata.with_admin("admin-jwt")
    send(om, tmp_path, sample_event(), jwt_token="admin-jwt")  # the tables exist already
    om.add_token("lineage-jwt", Principal("lineage-bot", roles=frozenset({"LineageBotRole"})))
    caplog.set_level(logging.WARNING)
    t = send(om, tmp_path, node_event(), dbt_test_event(), jwt_token="lineage-jwt")
    refused = [r.getMessage() for r in caplog.records if "refused dbt" in r.getMessage()]
    assert len(refused) == 2, refused  # tags (a new tag needs Create) and tests (definitions)
    assert all("give the bot IngestionBotRole" in line for line in refused)
    held = table(om)
    assert held["dataModel"]["modelType"] == "DBT"  # EditAll: the lineage bot may
    assert held["description"] == "Customers, renamed."
    assert t.delivered == 2
    assert "tags 0" in t.notes[0]


# -- config --------------------------------------------------------------------------------


def test_config_keys_and_their_text_forms() -> None:
    cfg = OpenMetadataConfig.from_dict(
        {
            "url": "http://om",
            "dbt_metadata": {"tests": "false", "tags": "true"},
            "update_descriptions": "true",
            "tags_classification": "dbt",
        }
    )
    assert cfg.dbt_metadata == {
        "descriptions": True,
        "tags": True,
        "owners": True,
        "data_model": True,
        "tests": False,
    }
    assert cfg.update_descriptions is True
    assert cfg.tags_classification == "dbt"
    assert OpenMetadataConfig.from_dict({"url": "u"}).dbt_metadata["tests"] is True
    as_json = OpenMetadataConfig.from_dict({"url": "u", "dbt_metadata": '{"owners": false}'})
    assert as_json.dbt_metadata["owners"] is False
    with pytest.raises(ConfigError) as e:
        OpenMetadataConfig.from_dict({"url": "u", "dbt_metadata": {"test": False}})
    assert e.value.key == "transport.dbt_metadata.test"
    with pytest.raises(ConfigError):
        OpenMetadataConfig.from_dict({"url": "u", "dbt_metadata": "sometimes"})


def test_the_classification_name_is_configurable(om: FakeOpenMetadata, tmp_path: Path) -> None:
    send(om, tmp_path, node_event(), tags_classification="dbt")
    assert [x["tagFQN"] for x in table(om)["tags"]] == ["dbt.staging"]


def test_counts_line_shows_the_parts_switched_on() -> None:
    assert DbtCounts(owners=2).line({"owners", "tags"}) == "tags 0, owners 2"


def test_transport_notes_reach_the_summary(om: FakeOpenMetadata, tmp_path: Path) -> None:
    from dbt_oml.pipeline.sending import delivery_for

    t = transport(om, tmp_path)

    class Client:
        transport: OpenMetadataTransport

        def emit(self, event: Any) -> None:
            self.transport.emit(event)

        def close(self, timeout: float = -1.0) -> bool:
            return self.transport.close(timeout)

    client = Client()
    client.transport = t
    delivery = delivery_for(client, outbox=tmp_path / "o.jsonl", target="om", redactor=Redactor())
    t.emit(node_event())
    report = delivery.close()
    assert report.notes == [t.notes[0]]
    assert report.notes[0].startswith("dbt metadata in OpenMetadata: descriptions 2")


def test_a_partial_schema_never_shrinks_the_dbt_tab(om: FakeOpenMetadata, tmp_path: Path) -> None:
    """An emit without catalog.json (YAML columns only, no types) after a complete run: the dbt
    tab keeps every column and type OM holds; a complete schema may still drop a column."""
    full = node_event()
    full["outputs"][0]["facets"]["dbt_oml_schema"] = {"complete": True}
    send(om, tmp_path, full)
    partial = node_event()
    partial["outputs"][0]["facets"]["schema"]["fields"] = [{"name": "email"}]
    send(om, tmp_path / "partial", partial)
    columns = table(om)["dataModel"]["columns"]
    assert [(c["name"], c["dataType"]) for c in columns] == [("id", "INT"), ("email", "VARCHAR")]
    assert columns[0]["description"] == "The key."
    narrower = node_event()
    narrower["outputs"][0]["facets"]["schema"]["fields"] = [{"name": "email", "type": "VARCHAR"}]
    narrower["outputs"][0]["facets"]["dbt_oml_schema"] = {"complete": True}
    send(om, tmp_path / "complete", narrower)
    assert [c["name"] for c in table(om)["dataModel"]["columns"]] == ["email"]
