"""The JetStream transport's publish path against an in-process JetStream context: what is
acked is counted, what is not is kept in the private outbox, and every try carries one id."""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from openlineage.client.event_v2 import Job, Run, RunEvent, RunState

from dbt_oml.delivery.outbox import read_events
from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport, message_id

nats = pytest.importorskip("nats", reason="needs dbt-oml[nats]")
from nats.js import errors as js_errors  # noqa: E402

RUN_ID = "01a22a97-c811-7ab0-b0d7-94051423011d"


def _event(kind: str = "COMPLETE", time: str = "2026-11-30T03:55:00.123Z") -> dict[str, Any]:
    return {
        "eventTime": time,
        "eventType": kind,
        "run": {"runId": RUN_ID},
        "job": {"namespace": "dbt", "name": "jaffle.stg_orders"},
        "producer": "https://example.com/dbt-oml",
    }


@dataclass
class Ack:
    stream: str
    seq: int
    duplicate: bool = False


@dataclass
class FakeJetStream:
    """Records every publish try (failed ones too); fails with `faults` first, in order."""

    faults: list[BaseException] = field(default_factory=list)
    tries: list[dict[str, Any]] = field(default_factory=list)
    stored: dict[str, bytes] = field(default_factory=dict)

    async def publish(self, subject: str, payload: bytes, **kwargs: Any) -> Ack:
        self.tries.append({"subject": subject, "payload": payload, **kwargs})
        if self.faults:
            raise self.faults.pop(0)
        msg_id = kwargs["headers"]["Nats-Msg-Id"]
        duplicate = msg_id in self.stored  # JetStream's duplicate window
        self.stored.setdefault(msg_id, payload)
        return Ack(stream=kwargs["stream"], seq=len(self.stored), duplicate=duplicate)


@dataclass
class Connection:
    is_connected: bool = True
    closed: int = 0

    async def close(self) -> None:
        self.closed += 1
        self.is_connected = False


def _transport(tmp_path: Path, js: FakeJetStream, **settings: Any) -> JetStreamTransport:
    config = JetStreamConfig.from_dict({"outbox_dir": str(tmp_path / "outbox"), **settings})
    transport = JetStreamTransport(config)
    # no seam to inject a connection: the same attributes _open() sets once connected
    transport._js, transport._nc, transport._reached = js, Connection(), True
    return transport


class TestAcked:
    def test_an_acked_publish_is_counted_and_nothing_is_kept(self, tmp_path: Path) -> None:
        js = FakeJetStream()
        transport = _transport(tmp_path, js, subject="lineage.dbt", stream="LINEAGE")
        transport.emit(_event("START"))
        transport.emit(_event("COMPLETE"))
        assert transport.close() is True
        assert (transport.delivered, transport.undelivered) == (2, 0)
        assert [(t["subject"], t["stream"]) for t in js.tries] == [("lineage.dbt", "LINEAGE")] * 2
        assert json.loads(js.tries[0]["payload"]) == _event("START")
        assert js.tries[0]["headers"] == {"Nats-Msg-Id": message_id(_event("START"))}
        assert transport.problems == []
        assert not (tmp_path / "outbox").exists()

    def test_a_run_event_object_is_published_as_its_json(self, tmp_path: Path) -> None:
        js = FakeJetStream()
        transport = _transport(tmp_path, js)
        transport.emit(
            RunEvent(
                eventType=RunState.START,
                eventTime="2026-11-30T03:55:00.123Z",
                run=Run(runId=RUN_ID),
                job=Job(namespace="dbt", name="j"),
                producer="https://example.com/dbt-oml",
            )
        )
        assert transport.close() is True
        doc = json.loads(js.tries[0]["payload"])
        assert (doc["eventType"], doc["run"]["runId"], doc["job"]["name"]) == ("START", RUN_ID, "j")
        assert js.tries[0]["headers"]["Nats-Msg-Id"] == message_id(doc)


class TestKept:
    def test_a_refused_publish_keeps_the_event_in_a_private_outbox(self, tmp_path: Path) -> None:
        refused = js_errors.BadRequestError(description="maximum payload exceeded")
        js = FakeJetStream(faults=[refused])
        transport = _transport(tmp_path, js)
        transport.emit(_event("START"))
        transport.emit(_event("COMPLETE"))  # the next one is still published
        assert transport.close() is False
        assert (transport.delivered, transport.undelivered) == (1, 1)
        outbox = tmp_path / "outbox" / "jetstream.jsonl"
        assert transport.outbox == outbox
        assert stat.S_IMODE(outbox.stat().st_mode) == 0o600
        events, problems = read_events(outbox)
        assert (events, problems) == ([_event("START")], [])
        [problem] = transport.problems
        assert problem.startswith("publish to 'openlineage.events' failed")
        assert "maximum payload exceeded" in problem
        reasons = (tmp_path / "outbox" / "jetstream.reasons.log").read_text()
        assert "maximum payload exceeded" in reasons
        assert list(js.stored) == [message_id(_event("COMPLETE"))]

    def test_one_problem_line_per_cause(self, tmp_path: Path) -> None:
        refused = js_errors.BadRequestError(description="wrong stream")
        js = FakeJetStream(faults=[refused, js_errors.BadRequestError(description="wrong stream")])
        transport = _transport(tmp_path, js)
        transport.emit(_event("START"))
        transport.emit(_event("COMPLETE"))
        assert transport.close() is False
        assert transport.undelivered == 2
        assert len(transport.problems) == 1
        assert len(read_events(tmp_path / "outbox" / "jetstream.jsonl")[0]) == 2


class TestRetriedPublish:
    def test_every_try_carries_the_same_message_id(self, tmp_path: Path) -> None:
        faults = [js_errors.NoStreamResponseError(), nats.errors.TimeoutError()]
        js = FakeJetStream(faults=faults)
        transport = _transport(tmp_path, js)
        transport.emit(_event())
        assert transport.close() is True
        assert len(js.tries) == 3
        assert {t["headers"]["Nats-Msg-Id"] for t in js.tries} == {message_id(_event())}
        assert len({t["payload"] for t in js.tries}) == 1
        assert transport.delivered == 1
        assert len(js.stored) == 1

    def test_a_second_emit_of_the_same_event_is_stored_once(self, tmp_path: Path) -> None:
        js = FakeJetStream()
        transport = _transport(tmp_path, js)
        transport.emit(_event())
        transport.emit(dict(reversed(list(_event().items()))))  # key order does not matter
        assert transport.close() is True
        assert len(js.stored) == 1

    def test_the_id_changes_with_run_type_job_and_time(self) -> None:
        base = message_id(_event())
        assert message_id(_event("START")) != base
        assert message_id(_event(time="2026-11-30T03:55:01.000Z")) != base
        other_job = {**_event(), "job": {"namespace": "dbt", "name": "other"}}
        assert message_id(other_job) != base
        other_run = {**_event(), "run": {"runId": "01a22a97-c811-7ab0-b0d7-000000000000"}}
        assert message_id(other_run) != base
        assert message_id({**_event(), "inputs": [{"name": "x"}]}) == base
