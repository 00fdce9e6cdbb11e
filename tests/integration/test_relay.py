"""`dbt-oml relay` under poison, OpenMetadata's answers and NATS faults, against real nats-servers.

Issue 11, items 1-4 and 6: each test failed on the relay before the rewrite.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env, free_port, run_cli
from tests.fakes.openmetadata import FakeOpenMetadata, serve
from tests.integration.nats_server import NatsServer, Watched, js_call

pytestmark = [pytest.mark.integration, pytest.mark.nats]
nats = pytest.importorskip("nats", reason="needs dbt-oml[nats]")

BATCH_PATH = "/api/v1/openlineage/lineage/batch"
_SCHEMA = {"schema": {"fields": [{"name": "id", "type": "INTEGER"}]}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    running = NatsServer(tmp_path_factory.mktemp("nats")).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A server of the test's own, to kill and restart."""
    running = NatsServer(tmp_path / "nats").start()
    try:
        yield running
    finally:
        running.stop()


def _stream(url: str, name: str) -> dict[str, Any]:
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    tag = "".join(c for c in name if c.isalnum())[:30].upper() + digest.upper()
    return {"servers": [url], "subject": f"ol.{tag.lower()}", "stream": "T" + tag}


@pytest.fixture
def stream(server: NatsServer, request: pytest.FixtureRequest) -> dict[str, Any]:
    return _stream(server.url, request.node.name)


def event(
    job: str = "dbt-run-x", run: str = "01a22a97-c811-7ab0-b0d7-94051423011d"
) -> dict[str, Any]:
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
        "run": {"runId": run},
        "job": {"namespace": "dbt", "name": job},
        "inputs": [{"namespace": "duckdb://pod", "name": "crm.sales.customers", "facets": _SCHEMA}],
        "outputs": [
            {"namespace": "duckdb://pod", "name": f"warehouse.staging.{job}", "facets": _SCHEMA}
        ],
    }


def valid_events(n: int) -> list[bytes]:
    return [
        json.dumps(event(f"job_{i}", f"01a22a97-c811-7ab0-b0d7-9405142301{i:02d}")).encode()
        for i in range(n)
    ]


def publish(
    stream: dict[str, Any], payloads: list[bytes], *, subjects: list[str] | None = None
) -> None:
    from nats.js.api import StreamConfig

    from dbt_oml.transports.jetstream import JetStreamConfig, ensure_stream

    async def call(js: Any) -> None:
        if subjects is None:
            await ensure_stream(js, JetStreamConfig.from_dict(stream))
        else:
            await js.add_stream(StreamConfig(name=stream["stream"], subjects=subjects))
        for payload in payloads:
            await js.publish(stream["subject"], payload, stream=stream["stream"])

    js_call(stream["servers"][0], call)


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


def consumer(stream: dict[str, Any], durable: str = "dbt-oml-relay") -> tuple[int, int]:
    """(messages not yet delivered, delivered but not acked) of the relay's consumer."""

    async def call(js: Any) -> tuple[int, int]:
        info = await js.consumer_info(stream["stream"], durable)
        return info.num_pending, info.num_ack_pending

    state: tuple[int, int] = js_call(stream["servers"][0], call)
    return state


def write_config(proj: Path, stream: dict[str, Any], om_url: str, **relay: Any) -> Path:
    """The relay's dbt-oml.yml. The messages of these tests are in the stream before the relay
    starts (a fetch returns at once), so `--once` needs no more than 0.5 s to see there are none
    left (the default, 2 s, is the end of every `--once` run)."""
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "token").write_text("bot-jwt\n")
    om = {"url": om_url, "jwt_token_file": str(proj / "token"), "retry_budget": 1}
    doc = {
        "transport": {"type": "jetstream", **stream},
        "relay": {"openmetadata": om, "batch": 20, "fetch_timeout": 0.5, **relay},
    }
    (proj / "dbt-oml.yml").write_text(json.dumps(doc))
    return proj


def relay_process(proj: Path, *args: str, env: dict[str, str] | None = None) -> Watched:
    command = [sys.executable, "-m", "dbt_oml", "relay", *args]
    return Watched(command, cwd=proj, env=clean_env(env))


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


# -- 3. NATS faults ----------------------------------------------------------------------------


def test_nats_unreachable_once_exits_4_with_one_line(tmp_path: Path) -> None:
    port = free_port()
    stream = _stream(f"nats://etl:s3cr3t@127.0.0.1:{port}", "down")
    relay = run_cli(
        ["relay", "--once"], cwd=write_config(tmp_path / "p", stream, "https://om.invalid")
    )
    assert relay.returncode == 4, relay.stderr[-3000:]
    lines = relay.stderr.strip().splitlines()
    assert lines == [
        f"dbt-oml relay: NATS nats://***@127.0.0.1:{port}: connection refused; unacked messages "
        "stay in the stream, run again when NATS is reachable"
    ]


def _held(server: NatsServer) -> tuple[dict[str, Any], FakeOpenMetadata, Any, Any]:
    """Three events, and a stand-in that holds the first batch: (stream, om, arrived, release)."""
    stream = _stream(server.url, "mid")
    publish(stream, valid_events(3))
    om = FakeOpenMetadata.with_bot()
    arrived, release = om.hold(BATCH_PATH)
    return stream, om, arrived, release


def _delivered_after(relay: Watched, index: int, count: int) -> None:
    """Wait until batch lines after line `index` add up to `count` delivered events."""
    total = 0
    while total < count:
        index = relay.stderr.wait_for(r"relay batch: .*: delivered \d+", after=index + 1)
        total += int(relay.stderr.lines[index].split("delivered ")[1].split(",")[0])


def test_nats_dies_mid_batch_service_reconnects_then_sigterm_exits_0(
    own_server: NatsServer, tmp_path: Path
) -> None:
    stream, om, arrived, release = _held(own_server)
    with serve(om) as url:
        proj = write_config(tmp_path / "p", stream, url, ack_wait=2, fetch_timeout=1)
        relay = relay_process(proj)
        try:
            assert arrived.wait(timeout=120), relay.stderr.text[-3000:]
            own_server.stop()  # OM has the batch; the acks will have nowhere to go
            release.set()
            lost = relay.stderr.wait_for(r"relay: NATS .*: .*; reconnecting in")
            own_server.start()
            _delivered_after(relay, lost, 3)  # redelivered after ack_wait, taken again
            code = relay.terminate(timeout=30)
        finally:
            relay.kill()
    assert code == 0, relay.stderr.text[-3000:]
    assert "Traceback" not in relay.stderr.text
    assert consumer(stream) == (0, 0)


def test_nats_dies_mid_batch_once_exits_4_with_one_line(
    own_server: NatsServer, tmp_path: Path
) -> None:
    stream, om, arrived, release = _held(own_server)
    with serve(om) as url:
        relay = relay_process(write_config(tmp_path / "p", stream, url), "--once")
        try:
            assert arrived.wait(timeout=120), relay.stderr.text[-3000:]
            own_server.stop()
            release.set()
            code = relay.wait(timeout=60)
        finally:
            relay.kill()
    assert code == 4, relay.stderr.text[-3000:]
    assert relay.stderr.lines[-1] == (
        f"dbt-oml relay: NATS {own_server.url}: the connection was lost; unacked messages stay "
        "in the stream, run again when NATS is reachable"
    )
    assert "Traceback" not in relay.stderr.text
    assert sum("NATS" in line for line in relay.stderr.lines) == 1


def test_sigterm_while_nats_is_down_exits_0(own_server: NatsServer, tmp_path: Path) -> None:
    stream = _stream(own_server.url, "sigterm")
    publish(stream, [])
    proj = write_config(tmp_path / "p", stream, "https://om.invalid", ack_wait=3, fetch_timeout=1)
    relay = relay_process(proj)
    try:
        relay.stderr.wait_for("relay: reading")
        own_server.stop()
        relay.stderr.wait_for("reconnecting in")
        code = relay.terminate(timeout=3 + 10)  # ack_wait, and a margin for a loaded machine
    finally:
        relay.kill()
    assert code == 0, relay.stderr.text[-3000:]
    assert "Traceback" not in relay.stderr.text


def test_sigterm_while_om_holds_the_batch_exits_0_and_nothing_is_acked(
    own_server: NatsServer, tmp_path: Path
) -> None:
    stream, om, arrived, release = _held(own_server)
    with serve(om) as url:
        proj = write_config(tmp_path / "p", stream, url, ack_wait=3, fetch_timeout=1)
        relay = relay_process(proj)
        try:
            assert arrived.wait(timeout=120), relay.stderr.text[-3000:]
            code = relay.terminate(timeout=3 + 10)  # ack_wait, and a margin for a loaded machine
        finally:
            release.set()
            relay.kill()
    assert code == 0, relay.stderr.text[-3000:]
    assert "Traceback" not in relay.stderr.text
    pending, unacked = consumer(stream)
    assert pending + unacked == 3  # none was acked: all three come back


@pytest.mark.parametrize(
    ("subjects", "dead", "message"),
    [
        (["{subject}"], None, "'{subject}.dead' is not a subject of stream"),
        (["{subject}", "{subject}.>"], "{subject}", "'{subject}' is what the relay reads"),
    ],
    ids=["outside-the-stream", "read-by-the-relay"],
)
def test_a_dead_letter_subject_that_cannot_work_is_refused_at_start(
    stream: dict[str, Any], tmp_path: Path, subjects: list[str], dead: str | None, message: str
) -> None:
    fill = {"subject": stream["subject"]}
    publish(stream, valid_events(1), subjects=[s.format(**fill) for s in subjects])
    extra = {"dead_letter_subject": dead.format(**fill)} if dead else {}
    relay = run_cli(
        ["relay", "--once"], cwd=write_config(tmp_path / "p", stream, "https://om.invalid", **extra)
    )
    assert relay.returncode == 3, relay.stderr[-3000:]
    assert message.format(**fill) in relay.stderr
    assert len(relay.stderr.strip().splitlines()) == 1


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


# -- 6. the producer's own configuration ---------------------------------------------------------


def _ol_env(stream: dict[str, Any]) -> dict[str, str]:
    return {
        "OPENLINEAGE__TRANSPORT__TYPE": "jetstream",
        "OPENLINEAGE__TRANSPORT__SERVERS": stream["servers"][0],
        "OPENLINEAGE__TRANSPORT__SUBJECT": stream["subject"],
        "OPENLINEAGE__TRANSPORT__STREAM": stream["stream"],
    }


def _om_env(url: str) -> dict[str, str]:
    return {"OM_HOST": url, "OM_JWT_TOKEN": "bot-jwt"}


#: No dbt-oml.yml here: the relay's own variable for write_config's short fetch_timeout
_SHORT_FETCH = {"DBT_OML_RELAY_FETCH_TIMEOUT": "0.5"}


def test_relay_reads_openlineage_transport_variables(
    stream: dict[str, Any], tmp_path: Path
) -> None:
    publish(stream, valid_events(2))
    om = FakeOpenMetadata.with_bot()
    with serve(om) as url:
        relay = run_cli(
            ["relay", "--once"], cwd=tmp_path, env=_ol_env(stream) | _om_env(url) | _SHORT_FETCH
        )
    assert relay.returncode == 0, relay.stderr[-3000:]
    assert "received 2, delivered 2" in relay.stderr


def test_relay_reads_the_openlineage_config_file(stream: dict[str, Any], tmp_path: Path) -> None:
    publish(stream, valid_events(2))
    config = tmp_path / "conf" / "ol.yml"
    config.parent.mkdir()
    config.write_text(json.dumps({"transport": {"type": "jetstream", **stream}}))
    om = FakeOpenMetadata.with_bot()
    with serve(om) as url:
        env = {"OPENLINEAGE_CONFIG": str(config)} | _om_env(url) | _SHORT_FETCH
        relay = run_cli(["relay", "--once"], cwd=tmp_path, env=env)
    assert relay.returncode == 0, relay.stderr[-3000:]
    assert "received 2, delivered 2" in relay.stderr


def test_a_bad_nats_setting_names_where_it_was_read(tmp_path: Path) -> None:
    env = {
        "OPENLINEAGE__TRANSPORT__TYPE": "jetstream",
        "OPENLINEAGE__TRANSPORT__STORAGE": "disk",
        "OM_HOST": "https://om.invalid",
    }
    relay = run_cli(["relay", "--once"], cwd=tmp_path, env=env)
    assert relay.returncode == 3, relay.stderr[-3000:]
    assert relay.stderr.strip() == (
        "dbt-oml relay: config 'transport.storage' (OPENLINEAGE__TRANSPORT__* variables): "
        "'disk' is not file or memory"
    )
