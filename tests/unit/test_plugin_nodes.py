"""plugin_nodes: a dbt NodeFinished event read as run_results.json records the node."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from dbt.events.types import NodeFinished
from dbt_common.events.base_types import msg_from_base_event

from dbt_oml.plugin.nodes import _result_of


def finished(resource_type: str = "model", **run_result: Any) -> Any:
    event = NodeFinished(
        node_info={"unique_id": f"{resource_type}.p.a", "resource_type": resource_type},
        run_result={"status": "success", "message": "OK", **run_result},
    )
    return msg_from_base_event(event)


def test_result_of_a_model() -> None:
    result = _result_of(
        finished(
            adapter_response={"rows_affected": 3},
            timing_info=[
                {
                    "name": "execute",
                    "started_at": "2026-01-01T00:00:00Z",
                    "completed_at": "2026-01-01T00:00:01.5Z",
                }
            ],
        )
    )
    assert result is not None
    assert (result.unique_id, result.status, result.message) == ("model.p.a", "success", "OK")
    assert result.rows_affected == 3
    assert result.completed_at == datetime(2026, 1, 1, 0, 0, 1, 500000, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("response", "rows"),
    [
        ({"rows_affected": -1}, None),
        ({}, None),
        ({"rows_affected": 2.5}, None),
        ({"rows_affected": 7}, 7),
    ],
    ids=["duckdb-view", "absent", "fraction", "count"],
)
def test_rows_affected(response: dict[str, Any], rows: int | None) -> None:
    result = _result_of(finished(adapter_response=response))
    assert result is not None
    assert result.rows_affected == rows


def test_tests_are_left_to_the_end_of_the_run() -> None:
    assert _result_of(finished("test")) is None


def test_untimed_phases_have_no_times() -> None:
    result = _result_of(finished(timing_info=[{"name": "compile"}]))
    assert result is not None
    assert result.timing[0].started_at is None
    assert result.completed_at is None
