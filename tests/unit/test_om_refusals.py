"""What OpenMetadata refuses for good costs only the events concerned, with OM's reason (issue 27
item 12). Before: a 400 on one table's PUT during bootstrap failed the whole batch as a terminal
error, which the relay filed as retryable and nak'ed forever (no max_deliver), and a
`failedEvents` entry without a reason was logged as "(None)"."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from dbt_oml.errors import Fault, RateLimitedError, TerminalDeliveryError, classify, status_error
from dbt_oml.relay.verdicts import Action, verdicts_of
from tests.support.fakes.openmetadata import FakeOpenMetadata
from tests.support.om_transport import om, sample_event, transport

__all__ = ["om"]  # the fixture (tests/support/om_transport.py)


def _two_events() -> tuple[dict[str, Any], dict[str, Any]]:
    """(bad, good): bad reads crm.sales.orders, the first table bootstrap PUTs, which
    `_refusing` makes OM answer with 400; good reads and writes other tables."""
    good = sample_event()
    bad = copy.deepcopy(good)
    bad["run"]["runId"] = "01a22a97-c811-7ab0-b0d7-000000000002"
    bad["job"]["name"] = "model.shop.stg_orders"
    bad["inputs"][0]["name"] = "crm.sales.orders"
    bad["outputs"][0]["name"] = "warehouse.staging.stg_orders"
    for spec in bad["outputs"][0]["facets"]["columnLineage"]["fields"].values():
        spec["inputFields"][0]["name"] = "crm.sales.orders"
    return bad, good


def _refusing(om: FakeOpenMetadata) -> FakeOpenMetadata:
    om.fail_next([400], "/api/v1/tables", method="PUT")  # the first table PUT only
    return om


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_table_om_refuses_rejects_its_events_only(om: FakeOpenMetadata, tmp_path: Path) -> None:
    bad, good = _two_events()
    t = transport(_refusing(om), tmp_path)
    outcome = t.deliver([bad, good])
    assert outcome.delivered == [1]
    [(index, reason)] = outcome.rejected
    assert index == 0
    assert "crm.sales.orders" in reason
    assert "OpenMetadata refused its table: 400" in reason
    assert not outcome.kept
    assert om.entity("table", "duckdb_pod.warehouse.staging.stg_customers") is not None
    assert om.entity("table", "duckdb_pod.crm.sales.orders") is None


def test_the_refused_event_is_kept_for_replay_and_counted_once(
    om: FakeOpenMetadata, tmp_path: Path
) -> None:
    bad, good = _two_events()
    t = transport(_refusing(om), tmp_path)
    t.emit(bad)
    t.emit(good)
    assert t.close() is False
    rejected = _lines(tmp_path / "outbox" / "openmetadata.rejected.jsonl")
    retried = _lines(tmp_path / "outbox" / "openmetadata.jsonl")
    assert (t.delivered, len(rejected), len(retried)) == (1, 1, 0)
    assert rejected[0]["run"]["runId"] == bad["run"]["runId"]  # lost: 0, duplicated: 0
    assert "400" in t.problems[0]


def test_the_relay_dead_letters_it_with_oms_reason(om: FakeOpenMetadata, tmp_path: Path) -> None:
    bad, good = _two_events()
    verdicts = verdicts_of(transport(_refusing(om), tmp_path).deliver([bad, good]), 2)
    assert [v.action for v in verdicts] == [Action.DEAD, Action.ACK]
    assert "OpenMetadata refused its table: 400" in verdicts[0].reason


def test_a_failed_event_without_a_reason_says_so(om: FakeOpenMetadata, tmp_path: Path) -> None:
    """OM's mapper puts e.getMessage() there, which is null for some exceptions (omitted)."""
    om.fail_events(lambda _event: "")  # a null message: OM omits `reason`
    t = transport(om, tmp_path)
    outcome = t.deliver([sample_event()])
    reasons = [why for _, why in [*outcome.kept, *outcome.rejected]]
    assert reasons, outcome
    assert all("None" not in why for why in reasons)


def test_one_classification_of_statuses() -> None:
    assert [classify(s) for s in (200, 204, 408, 429, 500, 503, 400, 404, 409, 413)] == [
        None,
        None,
        Fault.RETRYABLE,
        Fault.RETRYABLE,
        Fault.RETRYABLE,
        Fault.RETRYABLE,
        Fault.TERMINAL,
        Fault.TERMINAL,
        Fault.TERMINAL,
        Fault.TERMINAL,
    ]
    limited = status_error(429, target="om", reason="429", retry_after=3.0)
    assert isinstance(limited, RateLimitedError)
    assert (limited.status, limited.retry_after) == (429, 3.0)
    refused = status_error(400, target="om", reason="400 bad")
    assert isinstance(refused, TerminalDeliveryError)
    assert refused.status == 400
