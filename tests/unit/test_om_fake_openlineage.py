"""The OM stand-in itself, rule by rule against docs/reference/openmetadata-api.md ("ref §n"): OpenLineage bodies and answers (§1.2-§1.5).

If one of these fails, the stand-in no longer answers like OM: fix the stand-in, not the test.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.support.om_fake_support import (
    NS,
    RUN_ID,
    SRC,
    bearer,
    client,
    dataset,
    event,
    om,
    post,
    seed_table,
)

# -- §1.2, §1.3, §1.4: OpenLineage bodies -------------------------------------------------------


def _entries(reply: httpx2.Response) -> set[str]:
    message = reply.json()["message"]
    assert message.startswith("["), message
    assert message.endswith("]"), message
    return set(message[1:-1].split(", "))


def test_missing_required_fields_are_all_listed() -> None:
    """ref §1.3: one `query param <leaf> must not be null` per violation."""
    fake = om()
    bad = event()
    del bad["eventTime"], bad["producer"]
    reply = post(fake, [bad])
    assert reply.status_code == 400
    assert set(reply.json()) == {"code", "message"}
    assert _entries(reply) == {
        "query param eventTime must not be null",
        "query param producer must not be null",
    }
    assert fake.requests[-1].violation == "required"


@pytest.mark.parametrize(
    ("change", "leaf"),
    [
        (lambda e: e["run"].pop("runId"), "runId"),
        (lambda e: e["job"].pop("namespace"), "namespace"),
        (lambda e: e["inputs"][0].pop("name"), "name"),
        (
            lambda e: e["inputs"][0].update(facets={"schema": {"fields": [{"name": "id"}]}}),
            "type",
        ),
        (
            lambda e: e["inputs"][0].update(
                facets={"symlinks": {"identifiers": [{"namespace": "n", "name": "a.b"}]}}
            ),
            "type",
        ),
        (
            lambda e: e["outputs"][0].update(
                outputFacets={
                    "columnLineage": {
                        "fields": {"id": {"inputFields": [{"namespace": NS, "name": "a.b"}]}}
                    }
                }
            ),
            "field",
        ),
        (lambda e: e["run"].update(facets={"parent": {"run": {"runId": RUN_ID}}}), "job"),
        (lambda e: e.update(eventTime=None), "eventTime"),  # null is absent
    ],
)
def test_nested_required_fields(change: Any, leaf: str) -> None:
    """ref §1.2, §1.3: required fields of every nested object (run, job, dataset, facets)."""
    bad = event()
    change(bad)
    reply = post(om(), [bad])
    assert reply.json() == {"code": 400, "message": f"[query param {leaf} must not be null]"}


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e["run"].update(runId="not-a-uuid"),
        lambda e: e["run"].update(runId="{" + RUN_ID + "}"),
        lambda e: e["run"].update(runId=RUN_ID.replace("-", "")),
        lambda e: e.update(producer="not a uri"),
        lambda e: e.update(schemaURL="http://"),
        lambda e: e.update(eventType="DONE"),
        lambda e: e.update(inputs="shop.sales.orders"),
        lambda e: e["job"].update(name={"a": 1}),
        lambda e: e["outputs"][0].update(facets={"datasource": {"name": "d", "uri": "a b"}}),
    ],
)
def test_binding_errors_are_invalid_request_format(change: Any) -> None:
    """ref §1.3: bad UUID, bad URI, unknown enum value, wrong type → Invalid request format."""
    fake = om()
    bad = event()
    change(bad)
    reply = post(fake, [bad])
    assert reply.json() == {"code": 400, "message": "Invalid request format"}
    assert fake.requests[-1].violation == "format"


def test_binding_errors_come_before_missing_fields() -> None:
    """ref §1.3: Jackson fails before bean validation runs."""
    bad = event()
    del bad["producer"]
    bad["run"]["runId"] = "nope"
    assert post(om(), [bad]).json()["message"] == "Invalid request format"


def test_malformed_json() -> None:
    """ref §1.3: Dropwizard's JsonProcessingExceptionMapper."""
    fake = om()
    reply = client(fake).post(
        "/api/v1/openlineage/lineage/batch",
        content=b'{"events": [',
        headers={**bearer("bot-jwt"), "Content-Type": "application/json"},
    )
    assert reply.status_code == 400
    assert reply.json()["message"] == "Unable to process JSON"
    assert "details" in reply.json()
    assert fake.requests[-1].violation == "json"


def test_events_must_be_a_non_empty_list() -> None:
    """ref §1.2, §1.3: `events` required, minItems 1."""
    fake = om()
    http = client(fake)
    empty = http.post(
        "/api/v1/openlineage/lineage/batch", json={"events": []}, headers=bearer("bot-jwt")
    )
    assert empty.json() == {
        "code": 400,
        "message": "[query param events size must be between 1 and 2147483647]",
    }
    none = http.post("/api/v1/openlineage/lineage/batch", json={}, headers=bearer("bot-jwt"))
    assert none.json()["message"] == "[query param events must not be null]"


def test_unknown_fields_are_accepted() -> None:
    """ref §1.2: Dropwizard's mapper ignores unknown properties despite additionalProperties."""
    fake = om()
    extra = event(ownVersion="1")
    extra["inputs"][0]["facets"] = {"dataQuality": {"rows": 3}, "schema": {"fields": [], "x": 1}}
    reply = client(fake).post(
        "/api/v1/openlineage/lineage/batch",
        json={"events": [extra], "note": "hi"},
        headers=bearer("bot-jwt"),
    )
    assert reply.status_code == 200
    assert reply.json()["lineageEdgesCreated"] == 1


def test_one_bad_event_refuses_the_whole_batch() -> None:
    """ref §1.3: validation is of the whole body; nothing is written."""
    fake = om()
    bad = event()
    bad["run"]["runId"] = "x"
    assert post(fake, [event(), bad]).status_code == 400
    assert fake.edges == {}


@pytest.mark.parametrize(
    ("version", "time", "ok"),
    [
        ("2.0", "2026-11-30T03:55:00Z", True),
        ("2.0", "2026-11-30T03:55:00.5Z", True),
        ("2.0", "2026-11-30T03:55:00.123456789Z", True),
        ("2.0", 1764474900000, True),
        ("2.0", "1764474900000", True),
        ("2.0", "2026-11-30T03:55:00+00:00", False),
        ("2.0", "2026-11-30T03:55:00.123+00:00", False),
        ("2.0", "2026-11-30T03:55:00+0000", False),
        ("2.0", "2026-11-30T03:55:00", False),
        ("1.12", "2026-11-30T03:55:00+00:00", True),
        ("1.12", "2026-11-30T03:55:00.123456-05:00", True),
        ("1.12", "2026-11-30T03:55:00", True),
        ("1.12", "2026-11-30", True),
        ("1.12", "2026-11-30 03:55:00Z", False),
        ("1.12", "yesterday", False),
    ],
)
def test_event_time_per_version(version: str, time: Any, ok: bool) -> None:
    """ref §1.4, §6: 2.0 accepts only `...Z` (and epoch millis); 1.12 lenient ISO-8601."""
    reply = post(om(version), [event(eventTime=time)])
    if ok:
        assert reply.status_code == 200
    else:
        assert reply.json() == {"code": 400, "message": "Invalid request format"}


# -- §1.5: answers --------------------------------------------------------------------------------


def test_single_event_answers() -> None:
    """ref §1.5 (single): 200 with the edge count, no summary."""
    fake = om()
    created = post(fake, event(), batch=False)
    assert created.json() == {
        "status": "success",
        "message": "Created 1 lineage edge(s)",
        "lineageEdgesCreated": 1,
    }
    skipped = post(fake, event(eventType="START"), batch=False)
    assert skipped.json() == {
        "status": "success",
        "message": "Event processed, no lineage edges created",
        "lineageEdgesCreated": 0,
    }


def test_single_event_mapper_exception_is_500() -> None:
    """ref §1.5 (single): a mapper exception → 500 with OM's failure body."""
    fake = om()
    fake.fail_events(lambda _event: "boom")
    reply = post(fake, event(), batch=False)
    assert reply.status_code == 500
    assert reply.json() == {
        "status": "failure",
        "message": "Error processing event: boom",
        "lineageEdgesCreated": 0,
    }
    assert fake.requests[-1].violation == "mapper"


@pytest.mark.parametrize(
    ("kinds", "status", "counts"),
    [
        (["ok", "fail"], "partial_success", (2, 1, 1, 0)),
        (["fail", "fail"], "failure", (2, 0, 2, 0)),
        (["fail", "skip"], "success", (2, 0, 1, 1)),  # OM's rule: neither branch → success
        (["skip", "skip"], "success", (2, 0, 0, 2)),
        (["ok", "skip"], "success", (2, 1, 0, 1)),
    ],
)
def test_batch_status_summary_and_failed_events(
    kinds: list[str], status: str, counts: tuple[int, int, int, int]
) -> None:
    """ref §1.5 (batch): summary, failedEvents (only when not empty), the status rule."""
    fake = om()
    fake.fail_events(lambda e: "mapper says no" if e["job"]["name"] == "fail" else None)
    events = [
        event(eventType="START" if k == "skip" else "COMPLETE", job={"namespace": "dbt", "name": k})
        for k in kinds
    ]
    reply = post(fake, events)
    assert reply.status_code == 200
    body = reply.json()
    received, successful, failed, skipped = counts
    assert body["status"] == status
    assert body["summary"] == {
        "received": received,
        "successful": successful,
        "failed": failed,
        "skipped": skipped,
    }
    assert body["message"] == (
        f"Processed {received} events: {successful} successful, {failed} failed, "
        f"{skipped} skipped. Created {successful} lineage edges."
    )
    expected = [
        {"index": i, "reason": "mapper says no", "retriable": False}
        for i, k in enumerate(kinds)
        if k == "fail"
    ]
    assert body.get("failedEvents") == (expected or None)


@pytest.mark.parametrize(
    ("version", "change", "settings"),
    [
        ("2.0", lambda e: e.update(eventType="RUNNING"), {}),
        ("2.0", lambda e: e.update(inputs=[]), {}),
        ("2.0", lambda e: e.pop("outputs"), {}),
        ("2.0", lambda e: e["outputs"][0].update(name="shop.marts.nope"), {}),
        ("2.0", lambda e: e["inputs"][0].update(name="nope.nope"), {}),
        ("2.0", lambda _event: None, {"eventTypeFilter": ["START"]}),
        ("1.12", lambda _event: None, {"eventTypeFilter": []}),  # 1.12.0: empty filter = nothing
    ],
)
def test_what_makes_an_event_skipped(version: str, change: Any, settings: dict[str, Any]) -> None:
    """ref §1.5 "What makes an event skipped": filtered type, no inputs/outputs, unresolved."""
    fake = om(version)
    fake.settings.update(settings)
    bad = event()
    change(bad)
    body = post(fake, [bad]).json()
    assert body["summary"]["skipped"] == 1
    assert fake.edges == {}


def test_missing_event_type_is_complete_and_empty_filter_on_2_0_is_complete() -> None:
    """ref §1.5, §6: no eventType = COMPLETE; 2.0's empty eventTypeFilter falls back to COMPLETE."""
    fake = om("2.0")
    fake.settings["eventTypeFilter"] = []
    bare = event()
    del bare["eventType"]
    assert post(fake, [bare]).json()["summary"]["successful"] == 1


def test_failed_edge_writes_are_not_counted() -> None:
    """ref §1.5: an addLineage that throws is not counted; all failed → the event is skipped."""
    fake = om()
    seed_table(fake, "pg.shop.sales.customers")
    fake.fail_edges(lambda src, _dst: src == SRC)
    two = event(inputs=[dataset("shop.sales.orders"), dataset("shop.sales.customers")])
    assert post(fake, [two]).json()["lineageEdgesCreated"] == 1
    assert post(fake, [event()]).json()["summary"]["skipped"] == 1
