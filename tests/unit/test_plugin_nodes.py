"""plugin_nodes: a dbt NodeFinished event read as run_results.json records the node; where a
node's end goes when the backend is slow."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from dbt.events.types import NodeFinished
from dbt_common.events.base_types import msg_from_base_event
from openlineage.client.event_v2 import Job, Run, RunEvent, RunState

from dbt_oml.artifacts import NodeResult
from dbt_oml.config import load_settings
from dbt_oml.config.settings import changed
from dbt_oml.dbt.runner import Bridge, DbtContext
from dbt_oml.delivery.emitter import Delivery, read_outbox
from dbt_oml.pipeline.live import LiveEmitter
from dbt_oml.pipeline.report import Report
from dbt_oml.plugin.nodes import MAX_QUEUED, NodeEnds, _result_of
from dbt_oml.redaction import Redactor


def finished(resource_type: str = "model", uid: str | None = None, **run_result: Any) -> Any:
    event = NodeFinished(
        node_info={"unique_id": uid or f"{resource_type}.p.a", "resource_type": resource_type},
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


class StalledBackend:
    """An emitter whose server takes nothing until `release` is set."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.got: list[str] = []

    def emit(self, event: RunEvent) -> None:
        self.entered.set()
        self.release.wait(timeout=300)
        self.got.append(event.job.name)

    def close(self, timeout: float = -1.0) -> bool:
        return True


class ReadyEnds(NodeEnds):
    """Each node's end as a ready event: this test is about where it goes, not how it is built
    (that needs dbt's adapter; the plugin's integration tests build it)."""

    def _build(self, result: NodeResult, context: DbtContext) -> RunEvent | None:
        return RunEvent(
            eventType=RunState.COMPLETE,
            eventTime="2026-01-01T00:00:00.000Z",
            run=Run(runId=str(uuid.uuid4())),
            job=Job(namespace="dbt", name=result.unique_id),
            producer="https://example.com/dbt-oml",
        )


def _context(tmp_path: Path) -> DbtContext:
    return DbtContext(
        invocation_id="11111111-2222-3333-4444-555555555555",
        started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        command="build",
        project_name="p",
        project_version=None,
        project_root=tmp_path,
        target_path=tmp_path / "target",
        profiles_dir=None,
        profile_name="p",
        target_name="dev",
        adapter_type="duckdb",
        dbt_version="1.11.0",
        catalogs=(),
    )


def test_with_the_queue_full_a_nodes_end_goes_to_the_outbox_without_waiting(
    tmp_path: Path,
) -> None:
    base = load_settings(cli={}, environ={}, cwd=tmp_path, home=tmp_path)
    events_file = tmp_path / "events.jsonl"
    transport = {"type": "file", "log_file_path": str(events_file), "append": True}
    live = LiveEmitter(
        changed(base, transport=transport), cwd=tmp_path, report=Report(), redactor=Redactor()
    )
    context = _context(tmp_path)
    live.on_invocation(context)  # the invocation's START, through the file transport
    before = live.report.events_built
    backend, outbox = StalledBackend(), tmp_path / "outbox.jsonl"
    live.delivery = Delivery(backend, outbox=outbox, target="a stalled server", redactor=Redactor())
    bridge = Bridge(live)
    ends = ReadyEnds(live, enqueue=bridge.enqueue, queued=bridge.items.qsize, node_starts={})
    names = [f"model.p.m{i:04}" for i in range(MAX_QUEUED + 1)]
    late = threading.Thread(
        target=ends.on_node_finished, args=(finished(uid="model.p.late"), context)
    )
    try:
        ends.on_node_finished(finished(uid=names[0]), context)
        assert backend.entered.wait(timeout=60)  # the listener is held by the backend
        for name in names[1:]:
            ends.on_node_finished(finished(uid=name), context)
        assert bridge.items.qsize() == MAX_QUEUED
        assert not outbox.exists()
        late.start()  # dbt's thread, with MAX_QUEUED events waiting behind a stalled backend
        late.join(timeout=60)
        assert not late.is_alive()  # it returned while the backend still holds the first event
        assert [e.job.name for e in read_outbox(outbox)] == ["model.p.late"]
        assert bridge.items.qsize() == MAX_QUEUED
        assert backend.got == []
    finally:
        backend.release.set()
        bridge.close()
    assert backend.got == names  # the queued ones are delivered in order once it answers
    assert live.report.events_built - before == len(names) + 1
    assert len(ends.sent) == len(names) + 1
    report = live.delivery.close()
    assert (report.delivered, report.failed, report.outbox) == (len(names), 1, outbox)
