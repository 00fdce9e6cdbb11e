"""What `dbt-oml relay` delivers, against real nats-servers: poison and the events OpenMetadata
fails dead-lettered with their reason, kept events nak'ed and counted once, one retry budget per
batch, replicas sharing the consumer, and the counts it reports.

Issue 11, items 1, 2 and 4 (each test failed on the relay before the rewrite), and issue 16.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.support.fakes.openmetadata import FakeOpenMetadata, serve
from tests.support.nats_server import js_call
from tests.support.relay_helpers import (
    BATCH_PATH,
    consumer,
    event,
    publish,
    server_fixture,  # noqa: F401 - pytest finds the fixture `server` here
    stream_fixture,  # noqa: F401 - and `stream`
    valid_events,
    write_config,
)

pytestmark = [pytest.mark.integration, pytest.mark.nats]
nats = pytest.importorskip("nats", reason="needs dbt-oml[nats]")


def dead_letters(stream: dict[str, Any]) -> list[tuple[bytes, str]]:
    """Every message on <subject>.dead, with its Dbt-Oml-Reason header."""

    async def call(js: Any) -> list[tuple[bytes, str]]:
        sub = await js.pull_subscribe(f"{stream['subject']}.dead", stream=stream["stream"])
        try:
            messages = await sub.fetch(100, timeout=2)
        except (nats.errors.TimeoutError, asyncio.TimeoutError):  # nats-py raises either
            return []
        return [(m.data, (m.headers or {}).get("Dbt-Oml-Reason", "")) for m in messages]

    found: list[tuple[bytes, str]] = js_call(stream["servers"][0], call)
    return found


# -- 1. poison ---------------------------------------------------------------------------------


def test_poison_is_dead_lettered_with_its_reason_and_the_rest_delivered(
    stream: dict[str, Any], tmp_path: Path
) -> None:
    no_time = {k: v for k, v in event().items() if k != "eventTime"}
    poison = {
        b"[]": "not a JSON object",
        b'"x"': "not a JSON object",
        b"{}": "eventTime None",
        json.dumps(no_time).encode(): "eventTime None",
        json.dumps({**event(), "eventTime": "yesterday"}).encode(): "eventTime 'yesterday'",
        json.dumps({**event(), "inputs": {"a": 1}}).encode(): "inputs is not a list",
    }
    publish(stream, [*poison, *valid_events(2)])
    om = FakeOpenMetadata.with_bot()
    with serve(om) as url:
        relay = run_cli(["relay", "--once"], cwd=write_config(tmp_path / "p", stream, url))
    assert relay.returncode == 0, relay.stderr[-3000:]
    assert "Traceback" not in relay.stderr
    assert "received 8, delivered 2, retried 0, dead-lettered 6" in relay.stderr
    reasons = dict(dead_letters(stream))
    assert set(reasons) == set(poison)
    for payload, fragment in poison.items():
        assert reasons[payload].startswith("not an OpenLineage RunEvent: "), reasons[payload]
        assert fragment in reasons[payload]
    assert consumer(stream) == (0, 0)
    assert om.count("POST", BATCH_PATH) >= 1


# -- 2. OpenMetadata's answers -----------------------------------------------------------------


def test_events_om_fails_are_dead_lettered_with_oms_reason(
    stream: dict[str, Any], tmp_path: Path
) -> None:
    publish(stream, valid_events(3))
    om = FakeOpenMetadata.with_bot()
    om.fail_events(lambda e: "mapper exploded on job_1" if e["job"]["name"] == "job_1" else None)
    with serve(om) as url:
        relay = run_cli(["relay", "--once"], cwd=write_config(tmp_path / "p", stream, url))
    assert relay.returncode == 0, relay.stderr[-3000:]
    assert "received 3, delivered 2, retried 0, dead-lettered 1" in relay.stderr
    [(payload, reason)] = dead_letters(stream)
    assert json.loads(payload)["job"]["name"] == "job_1"
    assert reason.startswith("OpenMetadata rejected it: ")
    assert "mapper exploded on job_1" in reason
    assert consumer(stream) == (0, 0)


@dataclass
class Answer:
    delivered: list[int] = field(default_factory=list)
    kept: list[tuple[int, str]] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class StubOM:
    """OpenMetadataTransport's relay contract, answering with `answer(events)`."""

    answer: Callable[[list[dict[str, Any]]], Answer]
    resets: int = 0
    calls: list[list[str]] = field(default_factory=list)
    loop_running: list[bool] = field(default_factory=list)
    on_call: Callable[[], None] | None = None

    def reset_budget(self) -> None:
        self.resets += 1

    def deliver(self, events: list[dict[str, Any]]) -> Answer:
        try:
            asyncio.get_running_loop()
            self.loop_running.append(True)
        except RuntimeError:
            self.loop_running.append(False)
        self.calls.append([e["job"]["name"] for e in events])
        try:
            return self.answer(events)
        finally:
            if self.on_call is not None:
                self.on_call()


def _relay(stream: dict[str, Any], om: StubOM, **kwargs: Any) -> Any:
    from dbt_oml.relay import Relay
    from dbt_oml.transports.jetstream import JetStreamConfig

    return Relay(source=JetStreamConfig.from_dict(stream), om=om, **kwargs)


def test_kept_events_come_back_and_are_counted_once(stream: dict[str, Any]) -> None:
    """OM keeps events it cannot resolve yet: nak'ed (never dead-lettered), counted once."""
    publish(stream, valid_events(3))
    seen: set[str] = set()
    delivered: set[str] = set()

    def answer(events: list[dict[str, Any]]) -> Answer:
        out = Answer()
        for i, e in enumerate(events):
            name = e["job"]["name"]
            if name in seen:
                out.delivered.append(i)
                delivered.add(name)
            else:
                out.kept.append((i, "input not in OpenMetadata yet"))
            seen.add(name)
        return out

    async def main() -> Any:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def all_delivered() -> None:
            if len(delivered) == 3:
                loop.call_soon_threadsafe(stop.set)

        om = StubOM(answer, on_call=all_delivered)
        relay = _relay(stream, om, backoff=lambda _: 0.0, fetch_timeout=0.5)
        return await asyncio.wait_for(relay.run(once=False, stop=stop), 60)

    report = asyncio.run(main())
    assert (report.received, report.delivered, report.retried, report.dead_lettered) == (3, 3, 3, 0)
    assert dead_letters(stream) == []
    assert consumer(stream) == (0, 0)


def test_after_seed_nothing_is_dead_lettered(stream: dict[str, Any], tmp_path: Path) -> None:
    """Seeds read files: OM skips their events; they are not poison."""
    from tests.conftest import copy_project

    proj = copy_project(tmp_path / "p")
    om = FakeOpenMetadata.with_bot()
    with serve(om) as url:
        write_config(proj, stream, url)
        # the catalog is not the point: the live one gives the same events (one dbt run, not two)
        seeded = run_cli(["seed", "--profiles-dir", ".", "--no-docs-generate"], cwd=proj)
        assert seeded.returncode == 0, seeded.stderr[-3000:]
        relay = run_cli(["relay", "--once"], cwd=proj)
    assert relay.returncode == 0, relay.stderr[-3000:]
    assert "dead-lettered 0" in relay.stderr
    assert dead_letters(stream) == []


# -- 5. replicas (issue 16) ---------------------------------------------------------------------


def test_two_replicas_share_the_consumer_and_deliver_each_event_once(
    stream: dict[str, Any],
) -> None:
    """Two relays on one durable: both hold a batch at the same time; no event goes twice."""
    publish(stream, valid_events(20))
    both_hold_a_batch = threading.Barrier(2, timeout=60)

    def answerer() -> Callable[[list[dict[str, Any]]], Answer]:
        first = [True]

        def answer(events: list[dict[str, Any]]) -> Answer:
            if first[0]:
                first[0] = False
                both_hold_a_batch.wait()  # returns when the other replica holds a batch too
            return Answer(delivered=list(range(len(events))))

        return answer

    async def main() -> list[Any]:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def all_delivered() -> None:
            if sum(len(call) for om in oms for call in om.calls) >= 20:
                loop.call_soon_threadsafe(stop.set)

        oms = [StubOM(answerer(), on_call=all_delivered) for _ in range(2)]
        relays = [_relay(stream, om, batch=5, fetch_timeout=0.5) for om in oms]
        reports = await asyncio.gather(*(r.run(once=False, stop=stop) for r in relays))
        return [(report, om) for report, om in zip(reports, oms, strict=True)]

    results = asyncio.run(asyncio.wait_for(main(), 120))
    assert both_hold_a_batch.broken is False
    names = [name for _, om in results for call in om.calls for name in call]
    assert sorted(names) == sorted(f"job_{i}" for i in range(20))  # each once
    assert all(report.delivered > 0 for report, _ in results)
    assert sum(report.delivered for report, _ in results) == 20
    assert consumer(stream) == (0, 0)


# -- 4. budget, event loop, counts --------------------------------------------------------------


def test_one_retry_budget_per_batch_and_delivery_off_the_event_loop(
    stream: dict[str, Any],
) -> None:
    publish(stream, valid_events(5))
    om = StubOM(lambda events: Answer(delivered=list(range(len(events)))))
    report = asyncio.run(_relay(stream, om, batch=2, fetch_timeout=0.5).run(once=True))
    assert (report.batches, report.received, report.delivered) == (3, 5, 5)
    assert om.resets == len(om.calls) == 3
    assert om.loop_running == [False, False, False]


def test_an_empty_stream_logs_no_received_0(stream: dict[str, Any], tmp_path: Path) -> None:
    publish(stream, [])
    relay = run_cli(
        ["relay", "--once"], cwd=write_config(tmp_path / "p", stream, "https://om.invalid")
    )
    assert relay.returncode == 0, relay.stderr[-3000:]
    assert "received 0" not in relay.stderr
    assert f"nothing to relay on '{stream['subject']}'" in relay.stderr


def test_a_delivery_bug_never_stops_the_relay(stream: dict[str, Any]) -> None:
    """An exception no one expected: the batch is split, the culprit retried, then dead-lettered."""
    publish(stream, valid_events(3))

    def answer(events: list[dict[str, Any]]) -> Answer:
        if any(e["job"]["name"] == "job_1" for e in events):
            raise KeyError("facets")
        return Answer(delivered=list(range(len(events))))

    async def main() -> Any:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def second_try_alone() -> None:
            if om.calls.count(["job_1"]) == 2:
                loop.call_soon_threadsafe(stop.set)  # the batch in hand still settles

        om = StubOM(answer, on_call=second_try_alone)
        relay = _relay(stream, om, backoff=lambda _: 0.0, poison_after=2)
        return await relay.run(once=False, stop=stop)

    report = asyncio.run(asyncio.wait_for(main(), 60))
    assert (report.delivered, report.dead_lettered) == (2, 1)
    [(payload, reason)] = dead_letters(stream)
    assert json.loads(payload)["job"]["name"] == "job_1"
    assert "KeyError" in reason
