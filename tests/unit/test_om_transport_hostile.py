"""The OpenMetadata transport in a hostile world (issue 27): a proxy or an SSO page answering
instead of OM, rate limits and body limits in front of it, failures deep in a request. Nothing is
counted delivered that OM did not take; every failure keeps the batch."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx2
import pytest

from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport
from tests.support.fakes.openmetadata import FakeOpenMetadata
from tests.support.om_transport import BASE, FakeTime, om, sample_event, transport

__all__ = ["om"]  # the fixture (tests/support/om_transport.py)


# -- a hostile world: a proxy or an SSO page answering instead of OM (issue 27) -------------


def _kept(t: OpenMetadataTransport) -> int:
    path = Path(t.config.outbox_dir) / "openmetadata.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("auth", ["login", "oauth"])
def test_a_token_endpoint_answering_html_keeps_every_event(
    om: FakeOpenMetadata, tmp_path: Path, auth: str
) -> None:
    """200 with an HTML page from the login or token endpoint: no token, nothing counted
    delivered, every event kept, one line naming the endpoint (before: a KeyError/ValueError
    after the buffer was emptied: 3 'delivered', OM got nothing, the outbox empty)."""
    om.passwords["etl@example.com"] = "pw"
    om.oauth_clients["dbt-oml"] = "s3cret"
    creds = (
        {"jwt_token": None, "user": "etl@example.com", "password": "pw"}
        if auth == "login"
        else {
            "jwt_token": None,
            "client_id": "dbt-oml",
            "client_secret": "s3cret",
            "oauth_token_url": f"{BASE}/oauth/token",
        }
    )
    om.answer_html_next("/api/v1/users/login" if auth == "login" else "/oauth/token")
    t = transport(om, tmp_path, **creds)
    for _ in range(3):
        t.emit(sample_event())
    assert t.close() is False
    assert t.delivered == 0
    assert _kept(t) == 3
    assert om.edges == {}
    (problem,) = t.problems
    assert "200 without a token (text/html" in problem
    assert "s3cret" not in problem


@pytest.mark.parametrize("endpoint", ["/api/v1/openlineage/lineage/batch", "/api/v1/openlineage"])
def test_a_200_that_is_not_oms_answer_counts_nothing_delivered(
    om: FakeOpenMetadata, tmp_path: Path, endpoint: str
) -> None:
    """A proxy's HTML page with 200 on the OpenLineage endpoints: nothing counted delivered,
    all kept; the next flush sends them (before: events counted delivered, OM held nothing)."""
    om.answer_html_next(endpoint, times=99)  # the page stands for the whole retry budget
    t = transport(om, tmp_path)
    for _ in range(3):
        t.emit(sample_event())
    assert t.close() is False
    assert (t.delivered, _kept(t), om.edges) == (0, 3, {})
    assert "not OpenMetadata's answer" in t.problems[0]


def test_an_unexpected_failure_in_delivery_keeps_the_batch(
    om: FakeOpenMetadata, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = transport(om, tmp_path)

    def broken(events: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(t, "deliver", broken)
    for _ in range(3):
        t.emit(sample_event())
    assert t.close() is False
    assert (t.delivered, _kept(t)) == (0, 3)
    assert "delivery failed unexpectedly (RuntimeError: a bug)" in t.problems[0]


def test_a_413_halves_the_batch_until_it_fits(om: FakeOpenMetadata, tmp_path: Path) -> None:
    """A proxy's body limit (413) on the batch: halves are posted (before: every flush got 413
    again, nothing ever went through)."""
    om.fail_next([413, 413], "/api/v1/openlineage/lineage/batch")  # 4, then the first 2
    t = transport(om, tmp_path)
    for _ in range(4):
        t.emit(sample_event())
    assert t.close() is True, t.problems
    assert t.delivered == 4
    batches = [r for r in om.requests if r.path.endswith("/batch")]
    assert [r.status for r in batches] == [413, 413, 200, 200, 200]  # 4; 2; 1, 1; 2


def test_a_proxy_page_for_a_moment_is_retried_within_the_budget(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """Retryable like a 502 (before: not retried, the batch kept until the next flush)."""
    om.answer_html_next("/api/v1/openlineage/lineage/batch")
    time = FakeTime()
    t = transport(om, tmp_path, time)
    for _ in range(3):
        t.emit(sample_event())
    assert t.close() is True, t.problems
    assert (t.delivered, _kept(t), time.slept) == (3, 0, [0.5])
    assert len(om.edges) == 1


@pytest.mark.parametrize(
    "prefix",
    [
        "/api/v1/system/settings",
        "/api/v1/services/databaseServices",
        "/api/v1/databases",
        "/api/v1/tables",
        "/api/v1/services/pipelineServices",
        "/api/v1/pipelines",
    ],
)
def test_a_bootstrap_endpoint_answering_html_keeps_every_event(
    om: FakeOpenMetadata, tmp_path: Path, prefix: str
) -> None:
    """A proxy page on the settings or an entity endpoint is no entity written: the batch is
    kept whole, START events too (before: bootstrap took the page for OM's answer, and 3 to 6
    of 6 events were counted delivered, some while OM held nothing)."""
    om.answer_html_next(prefix, times=999)
    t = transport(om, tmp_path)
    for _ in range(3):
        t.emit(sample_event("START"))
        t.emit(sample_event())
    assert t.close() is False
    assert (t.delivered, t.undelivered, _kept(t), om.edges) == (0, 6, 6, {})
    (problem,) = t.problems
    assert "not OpenMetadata's answer" in problem
    assert prefix in problem


# -- 429 and 413 from what stands in front of OM (issue 27 item 6) ---------------------------


def test_a_gateways_429_is_retried_after_its_retry_after(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.rate_limit_next("/api/v1/openlineage/lineage/batch", "7")
    time = FakeTime()
    t = transport(om, tmp_path, time)
    for _ in range(3):
        t.emit(sample_event())
    assert t.close() is True, t.problems
    assert (t.delivered, time.slept, len(om.edges)) == (3, [7.0], 1)


def test_a_retry_after_date_is_counted_from_the_injected_clock(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.rate_limit_next("/api/v1/openlineage/lineage/batch", "Wed, 02 Dec 2026 10:00:06 GMT")
    time = FakeTime()
    cfg = OpenMetadataConfig.from_dict(
        {"url": BASE, "jwt_token": "bot-jwt", "outbox_dir": str(tmp_path / "outbox")}
    )
    t = OpenMetadataTransport(
        cfg,
        http=httpx2.Client(transport=httpx2.WSGITransport(app=om)),
        sleep=time.sleep,
        clock=time.clock,
        now=lambda: datetime(2026, 12, 2, 10, 0, tzinfo=timezone.utc),
    )
    t.emit(sample_event())
    assert t.close() is True, t.problems
    assert time.slept == [6.0]


def test_a_retry_after_beyond_the_budget_keeps_the_batch_at_once(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    om.rate_limit_next("/api/v1/openlineage/lineage/batch", "3600", times=99)
    time = FakeTime()
    t = transport(om, tmp_path, time)
    for _ in range(3):
        t.emit(sample_event())
    assert t.close() is False
    assert (t.delivered, _kept(t), time.slept, om.edges) == (0, 3, [], {})
    assert "429" in t.problems[0]


def _big(size: int) -> dict[str, Any]:
    event = sample_event()
    event["job"]["facets"] = {
        "sql": {
            "_producer": "https://example.com/producer",
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json",
            "query": "select 1 -- " + "x" * size,
        }
    }
    return event


def test_a_413_above_the_body_limit_narrows_to_the_one_event_too_big(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """Halves until each part fits; the event that alone is over the limit is rejected with
    the reason, the others delivered."""
    om.limit_body(20_000)
    t = transport(om, tmp_path)
    for event in (sample_event(), sample_event(), sample_event(), _big(30_000)):
        t.emit(event)
    assert t.close() is False
    rejected = (Path(t.config.outbox_dir) / "openmetadata.rejected.jsonl").read_text().splitlines()
    assert (t.delivered, _kept(t), len(rejected)) == (3, 0, 1)
    assert len(json.loads(rejected[0])["job"]["facets"]["sql"]["query"]) > 30_000
    assert "413" in t.problems[0]
    batches = [r.status for r in om.requests if r.path.endswith("/batch")]
    assert batches == [413, 200, 413, 200, 413]  # 4; 2; 2 -> 1, 1
    assert len(om.edges) == 1


def _storage_event() -> dict[str, Any]:
    """Postable, but no table edge to count (an object-storage input: ref §2.3)."""
    event = sample_event()
    event["inputs"] = [{"namespace": "s3://bucket", "name": "raw/customers.csv"}]
    return event


def test_a_413_from_the_single_endpoint_rejects_that_event_only(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """Before: the one-by-one post read a 413 as "0 edges drawn", so an event with no table
    edge to count was counted delivered while OM took nothing."""
    om.fail_next([400], "/api/v1/openlineage/lineage/batch")  # the batch: one by one
    om.fail_next([413], "/api/v1/openlineage/lineage")  # the first event alone
    t = transport(om, tmp_path)
    t.emit(_storage_event())
    t.emit(sample_event())
    assert t.close() is False
    rejected = (Path(t.config.outbox_dir) / "openmetadata.rejected.jsonl").read_text().splitlines()
    assert (t.delivered, _kept(t), len(rejected)) == (1, 0, 1)
    assert json.loads(rejected[0])["inputs"][0]["namespace"] == "s3://bucket"
    assert "413" in t.problems[0]


def test_a_single_endpoint_answering_404_keeps_the_batch(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """A status OM does not answer there (a proxy route, an OM without the endpoint) took
    nothing: before, an event with no table edge to count was counted delivered."""
    om.fail_next([400], "/api/v1/openlineage/lineage/batch")
    om.fail_next([404], "/api/v1/openlineage/lineage")
    t = transport(om, tmp_path)
    t.emit(_storage_event())
    t.emit(sample_event())
    assert t.close() is False
    assert (t.delivered, _kept(t)) == (0, 2)
    assert "404" in t.problems[0]


def test_an_exception_deep_in_a_request_keeps_the_batch(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    """Not one of ours (a bug in the HTTP stack, say): the batch is kept whole, the reason is
    one line."""

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        if environ["PATH_INFO"].endswith("/batch"):
            raise ValueError("a bug below the client")
        return om(environ, start_response)

    cfg = OpenMetadataConfig.from_dict(
        {"url": BASE, "jwt_token": "bot-jwt", "outbox_dir": str(tmp_path / "outbox")}
    )
    t = OpenMetadataTransport(cfg, http=httpx2.Client(transport=httpx2.WSGITransport(app=app)))
    for _ in range(2):
        t.emit(sample_event("START"))
        t.emit(sample_event())
    assert t.close() is False
    assert (t.delivered, _kept(t)) == (0, 4)
    assert "delivery failed unexpectedly (ValueError: a bug below the client)" in t.problems[0]
