"""The OM stand-in's dbt-metadata endpoints, ref §9.12 D7-D14 (test definitions, suites, cases, results, state).

If one of these fails, the stand-in no longer answers like OM: fix the stand-in, not the test.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from tests.support.fakes.om_auth import ANY_DENIED
from tests.support.fakes.openmetadata import FakeOpenMetadata
from tests.support.om_fake_dbt_support import (
    TABLE,
    call,
    case_body,
    dbt_definition,
    om,
    result_body,
    said,
)

# -- D7 test definitions ---------------------------------------------------------------------


def test_d7_test_definitions() -> None:
    fake = om()
    assert dbt_definition(fake).status_code == 201
    assert dbt_definition(fake).headers["X-OpenMetadata-Change"] == "entityNoChange"
    bad = {"name": "x", "entityType": "COLUMN", "testPlatforms": ["DBT"]}
    assert said(call(fake, "PUT", "dataQuality/testDefinitions", bad)) == (
        400,
        "Invalid request format",
    )
    missing = call(fake, "PUT", "dataQuality/testDefinitions", {"name": "x"})
    assert missing.status_code == 400
    assert "entityType must not be null" in missing.json()["message"]
    assert "testPlatforms must not be null" in missing.json()["message"]
    assert call(fake, "GET", "dataQuality/testDefinitions/name/not_null").status_code == 200


# -- D8 suites -------------------------------------------------------------------------------


def test_d8_basic_suites_one_per_table_and_the_deprecated_alias() -> None:
    fake = om()
    body = {"name": "anything", "basicEntityReference": TABLE}
    created = call(fake, "POST", "dataQuality/testSuites/basic", body)
    assert created.status_code == 201
    assert created.json()["fullyQualifiedName"] == f"{TABLE}.testSuite"
    assert said(call(fake, "POST", "dataQuality/testSuites/basic", body)) == (
        409,
        "Entity already exists",
    )
    assert call(fake, "PUT", "dataQuality/testSuites/basic", body).status_code == 200
    assert said(call(fake, "POST", "dataQuality/testSuites/basic", {"name": "x"})) == (
        400,
        "Cannot create a basic test suite without the BasicEntityReference field informed.",
    )
    old = call(
        fake,
        "PUT",
        "dataQuality/testSuites/executable",
        {"name": "x", "executableEntityReference": TABLE},
    )
    assert old.status_code == 200
    assert old.headers["Deprecation"] == "Monday, March 24, 2025"
    assert old.headers["Link"] == 'api/v1/dataQuality/testSuites/basic; rel="alternate"'
    logical = call(fake, "POST", "dataQuality/testSuites", {"name": "nightly"})
    assert logical.json()["fullyQualifiedName"] == "nightly"
    assert said(call(fake, "PUT", "dataQuality/testSuites/basic", body, token="steward-jwt")) == (
        403,
        ANY_DENIED,
    )


# -- D9 test cases ---------------------------------------------------------------------------


def test_d9_test_cases_fqn_suite_and_idempotence() -> None:
    fake = om()
    dbt_definition(fake)
    created = call(fake, "PUT", "dataQuality/testCases", case_body())
    assert created.status_code == 201, created.json()
    fqn = f"{TABLE}.id.not_null_orders_id"
    assert created.json()["fullyQualifiedName"] == fqn
    suite = fake.entity("testSuite", f"{TABLE}.testSuite")
    assert suite is not None
    assert suite["updatedBy"] == "ingestion-bot"
    assert ("ingestion-bot", "auto", f"{TABLE}.testSuite", "created") in fake.audit
    again = call(fake, "PUT", "dataQuality/testCases", case_body())
    assert (again.status_code, again.headers["X-OpenMetadata-Change"]) == (200, "entityNoChange")
    assert said(call(fake, "POST", "dataQuality/testCases", case_body())) == (
        409,
        "Entity already exists",
    )
    read = call(
        fake,
        "GET",
        f"dataQuality/testCases/name/{quote(fqn, safe='')}",
        params={"fields": "testDefinition,testSuite"},
    ).json()
    assert read["testDefinition"]["name"] == "not_null"
    assert read["testSuite"]["fullyQualifiedName"] == f"{TABLE}.testSuite"
    table_level = case_body("rows", link=f"<#E::table::{TABLE}>", testDefinition="rowsdef")
    dbt_definition(fake, "rowsdef", "TABLE")
    table_level["parameterValues"] = []
    assert (
        call(fake, "PUT", "dataQuality/testCases", table_level).json()["fullyQualifiedName"]
        == f"{TABLE}.rows"
    )


@pytest.mark.parametrize(
    ("change", "status", "text"),
    [
        ({"testDefinition": "nope"}, 404, "testDefinition instance for nope not found"),
        ({"entityLink": "<#E::table::svc.shop.core.nope::columns::id>"}, 404, "table instance"),
        ({"parameterValues": [{"name": "bogus", "value": "1"}]}, 400, "Parameter 'bogus' is not"),
        ({"entityLink": f"<#E::table::{TABLE}>"}, 400, "Column test case must have a field name"),
        ({"entityLink": f"<#E::table::{TABLE}::columns::nope>"}, 400, "Invalid column name nope"),
        ({"entityLink": "not a link"}, 400, "query param entityLink must match"),
    ],
)
def test_d9_case_checks(change: dict, status: int, text: str) -> None:
    fake = om()
    dbt_definition(fake)
    reply = call(fake, "PUT", "dataQuality/testCases", {**case_body(), **change})
    assert reply.status_code == status, reply.json()
    assert text in reply.json()["message"]


def test_d9_parameters_of_a_definition_without_any() -> None:
    fake = om()
    call(
        fake,
        "PUT",
        "dataQuality/testDefinitions",
        {"name": "bare", "entityType": "TABLE", "testPlatforms": ["dbt"]},
    )
    body = {**case_body(link=f"<#E::table::{TABLE}>"), "testDefinition": "bare"}
    assert said(call(fake, "PUT", "dataQuality/testCases", body)) == (
        400,
        "Parameter Values doesn't match Test Definition Parameters",
    )
    required = {
        "name": "req",
        "entityType": "TABLE",
        "testPlatforms": ["dbt"],
        "parameterDefinition": [{"name": "n", "required": True}],
    }
    call(fake, "PUT", "dataQuality/testDefinitions", required)
    body = {
        **case_body(link=f"<#E::table::{TABLE}>"),
        "testDefinition": "req",
        "parameterValues": [],
    }
    assert said(call(fake, "PUT", "dataQuality/testCases", body)) == (
        400,
        "Required parameter n is not passed in parameterValues",
    )


def test_d9_post_finds_the_definition_before_it_authorizes_put_after() -> None:
    fake = om()
    body = {**case_body(), "testDefinition": "nope"}
    assert call(fake, "POST", "dataQuality/testCases", body, token="steward-jwt").status_code == 404
    assert said(call(fake, "PUT", "dataQuality/testCases", body, token="steward-jwt")) == (
        403,
        ANY_DENIED,
    )


# -- D10 - D12 results -----------------------------------------------------------------------


def _case(fake: FakeOpenMetadata) -> str:
    dbt_definition(fake)
    call(fake, "PUT", "dataQuality/testCases", case_body())
    return f"{TABLE}.id.not_null_orders_id"


def results_path(fqn: str) -> str:
    return f"dataQuality/testCases/testCaseResults/{quote(fqn, safe='')}"


def test_d10_results_201_409_404_and_ms_timestamps() -> None:
    fake = om()
    fqn = _case(fake)
    created = call(fake, "POST", results_path(fqn), result_body())
    assert created.status_code == 201
    assert created.headers["Location"] == f"/api/v1/dataQuality/testCases/testCaseResults/{fqn}"
    assert created.json()["testCaseFQN"] == fqn
    assert said(call(fake, "POST", results_path(fqn), result_body())) == (
        409,
        "Entity already exists",
    )
    assert said(call(fake, "POST", results_path(fqn), result_body(1_780_000_000))) == (
        400,
        "Timestamp 1780000000 is not valid, it should be in milliseconds since epoch",
    )
    assert said(call(fake, "POST", results_path(f"{TABLE}.nope"), result_body())) == (
        404,
        f"testCase instance for {TABLE}.nope not found",
    )
    assert said(
        call(fake, "POST", results_path(fqn), result_body(1_780_000_000_001), token="steward-jwt")
    ) == (403, ANY_DENIED)
    bad = call(fake, "POST", results_path(fqn), {**result_body(2), "testCaseStatus": "Passed"})
    assert said(bad) == (400, "Invalid request format")
    call(fake, "POST", results_path(fqn), result_body(1_780_000_000_500, "Failed"))
    listed = call(
        fake,
        "GET",
        results_path(fqn),
        params={"startTs": 1_780_000_000_000, "endTs": 1_780_000_001_000},
    ).json()
    assert [r["timestamp"] for r in listed["data"]] == [1_780_000_000_500, 1_780_000_000_000]
    assert listed["paging"]["total"] == 2
    assert listed["data"][0]["incidentId"]
    assert ("ingestion-bot", "POST", fqn, "conflict") in fake.audit


@pytest.mark.parametrize("version", ["1.12", "2.0"])
def test_d11_the_pre_1_6_result_path_is_gone(version: str) -> None:
    fake = om(version)
    fqn = _case(fake)
    old = call(
        fake,
        "PUT",
        f"dataQuality/testCases/{quote(fqn, safe='')}/testCaseResult",
        result_body(),
    )
    assert said(old) == (404, "HTTP 404 Not Found")


def test_d12_latest_result_on_the_case_and_suite_summary() -> None:
    fake = om()
    fqn = _case(fake)
    call(fake, "POST", results_path(fqn), result_body(1_780_000_000_000, "Failed"))
    call(fake, "POST", results_path(fqn), result_body(1_780_000_100_000, "Success"))
    read = call(
        fake,
        "GET",
        f"dataQuality/testCases/name/{quote(fqn, safe='')}",
        params={"fields": "testCaseResult"},
    ).json()
    assert read["testCaseResult"]["timestamp"] == 1_780_000_100_000
    assert read["testCaseStatus"] == "Success"
    assert "testCaseResult" not in call(fake, "GET", f"dataQuality/testCases/name/{fqn}").json()
    suite = call(
        fake, "GET", f"dataQuality/testSuites/name/{TABLE}.testSuite", params={"fields": "summary"}
    ).json()
    assert suite["summary"] == {"total": 1, "success": 1, "failed": 0, "aborted": 0, "queued": 0}


# -- D13 topDimensions -----------------------------------------------------------------------


def test_d13_top_dimensions_is_2_0_only() -> None:
    new, old = om("2.0"), om("1.12")
    for fake in (new, old):
        dbt_definition(fake)
    assert said(call(new, "PUT", "dataQuality/testCases", case_body(topDimensions=99)))[0] == 400
    assert call(new, "PUT", "dataQuality/testCases", case_body(topDimensions=5)).status_code == 201
    reply = call(old, "PUT", "dataQuality/testCases", case_body(topDimensions=99))
    assert reply.status_code == 201
    assert "topDimensions" not in reply.json()
    assert old.requests[-1].warning is not None


# -- D14 state -------------------------------------------------------------------------------


def test_d14_dump_holds_entities_audit_and_results() -> None:
    fake = om()
    fqn = _case(fake)
    call(fake, "POST", results_path(fqn), result_body())
    dump = json.loads(json.dumps(fake.dump()))
    assert fqn in dump["entities"]["testCase"]
    assert f"{TABLE}.testSuite" in dump["entities"]["testSuite"]
    assert [r["testCaseFQN"] for r in dump["testCaseResults"]] == [fqn]
    assert ["ingestion-bot", "PUT", fqn, "created"] in dump["audit"]
