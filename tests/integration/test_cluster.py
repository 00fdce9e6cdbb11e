"""A three-node JetStream cluster: a node dies while `dbt-oml build` publishes, another restarts
while two relay replicas drain the stream into OpenMetadata; OM ends as after a run without faults.

Issue 16. Every wait is on a log line or a condition, in bounded loops.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env, copy_project, run_cli
from tests.support.fakes.openmetadata import FakeOpenMetadata, serve
from tests.support.nats_server import (
    PROBE_TIMEOUT,
    NatsCluster,
    Watched,
    js_call,
    wait_for_value,
)

pytestmark = [pytest.mark.integration, pytest.mark.nats]
nats = pytest.importorskip("nats", reason="needs dbt-oml[nats]")

BATCH_PATH = "/api/v1/openlineage/lineage/batch"
BUILD = ["build", "--profiles-dir", ".", "--duckdb-namespace", "duckdb://pod/{alias}"]
SUBJECT, STREAM = "ol.cluster", "OLCLUSTER"
DURABLE = "dbt-oml-relay"
SUMMARY = re.compile(
    r"dbt-oml relay: received (\d+), delivered (\d+), retried (\d+), dead-lettered (\d+)"
)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[NatsCluster]:
    running = NatsCluster(tmp_path / "nats").start()
    try:
        yield running
    finally:
        running.stop()


def _dbt_oml(proj: Path, *args: str) -> Watched:
    return Watched([sys.executable, "-m", "dbt_oml", *args], cwd=proj, env=clean_env())


def _write_config(proj: Path, servers: list[str], om_url: str) -> None:
    (proj / "token").write_text("bot-jwt\n")
    transport = {
        "type": "jetstream",
        "servers": servers,
        "subject": SUBJECT,
        "stream": STREAM,
        "num_replicas": 3,
    }
    om = {"url": om_url, "jwt_token_file": str(proj / "token"), "retry_budget": 5}
    relay = {"openmetadata": om, "batch": 5, "ack_wait": 5, "fetch_timeout": 1}
    (proj / "dbt-oml.yml").write_text(json.dumps({"transport": transport, "relay": relay}))


def _stream_messages(
    cluster: NatsCluster, subject: str | None = None, *, timeout: float = 5
) -> int:
    async def count(js: Any) -> int:
        info = await js.stream_info(STREAM, subjects_filter=subject)
        if subject is None:
            return int(info.state.messages)
        return int((info.state.subjects or {}).get(subject, 0))

    found: int = js_call(cluster.running_urls(), count, timeout=timeout)
    return found


def _stored_at(cluster: NatsCluster) -> list[float]:
    """When each message of the stream was stored: the time its leader gave it (this machine's
    clock), as seconds since the epoch."""

    async def times(js: Any) -> list[float]:
        state = (await js.stream_info(STREAM)).state
        found = []
        for seq in range(state.first_seq, state.last_seq + 1):
            found.append((await js.get_msg(STREAM, seq)).time.timestamp())
        return found

    stored: list[float] = js_call(cluster.running_urls(), times)
    return stored


def _consumer_settled(cluster: NatsCluster) -> bool | None:
    async def state(js: Any) -> tuple[int, int]:
        info = await js.consumer_info(STREAM, DURABLE)
        return info.num_pending, info.num_ack_pending

    return js_call(cluster.running_urls(), state, timeout=PROBE_TIMEOUT) == (0, 0) or None


def _posted(om: FakeOpenMetadata) -> Counter[tuple[str, str, str]]:
    """Every event OM accepted in a batch post: (job, event type, run id), with repeats."""
    return Counter(
        (e["job"]["name"], e["eventType"], e["run"]["runId"])
        for r in om.requests
        if r.method == "POST" and r.path == BATCH_PATH and r.status == 200
        for e in (r.body or {}).get("events", [])
    )


def _state(om: FakeOpenMetadata) -> tuple[set[str], set[tuple[str, str, str]]]:
    """Tables, and edges with their column lineage, by fully qualified name."""
    by_id = {t["id"]: t["fullyQualifiedName"] for t in om.entities["table"].values()}
    edges = {
        (
            by_id[a],
            by_id[b],
            json.dumps(
                sorted(
                    (c["toColumn"], sorted(c["fromColumns"]), c.get("function"))
                    for c in d["columnsLineage"] or []
                )
            ),
        )
        for (a, b), d in om.edges.items()
    }
    return set(by_id.values()), edges


def _reference(tmp_path: Path) -> FakeOpenMetadata:
    """The same build straight into OpenMetadata, no NATS and no faults."""
    om = FakeOpenMetadata.with_bot()
    with serve(om) as url:
        proj = copy_project(tmp_path / "reference")
        (proj / "token").write_text("bot-jwt\n")
        env = {
            "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
            "OPENLINEAGE__TRANSPORT__URL": url,
            "OPENLINEAGE__TRANSPORT__JWT_TOKEN_FILE": str(proj / "token"),
        }
        built = run_cli(BUILD, cwd=proj, env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    return om


def test_a_node_dies_while_publishing_another_restarts_while_two_relays_drain(
    cluster: NatsCluster, tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    om = FakeOpenMetadata.with_bot()
    with serve(om) as url, ThreadPoolExecutor(max_workers=1) as pool:
        # the reference needs no NATS: it builds while the clustered build waits on the cluster
        reference_built = pool.submit(_reference, tmp_path)
        proj = copy_project(tmp_path / "clustered")
        _write_config(proj, cluster.urls, url)

        # 1. publishing: the stream's leader dies after the first event
        build = _dbt_oml(proj, *BUILD)
        try:
            wait_for_value(
                lambda: _stream_messages(cluster, timeout=PROBE_TIMEOUT) >= 1 or None,
                "first event",
            )
            killed = cluster.node(cluster.stream_leader(STREAM))
            before_kill = time.time()
            killed.stop()
            after_kill = time.time()  # the old leader is dead: what is stored later, a new one took
            code = build.wait(timeout=300)
        finally:
            build.kill()
        assert code == 0, build.stderr.text[-3000:]
        [sent] = re.findall(r"dbt-oml: (\d+) events, (\d+) delivered to", build.stderr.text)
        assert sent[0] == sent[1], build.stderr.text[-3000:]
        assert "NOT delivered" not in build.stderr.text
        total = int(sent[0])
        assert _stream_messages(cluster) == total  # a publish tried twice is stored once
        stored_at = _stored_at(cluster)
        # the build published both before the kill and after it (through the new leader)
        before = sum(t < before_kill for t in stored_at)
        after = sum(t > after_kill for t in stored_at)
        assert before >= 1, f"none of {total} events stored before the kill"
        assert after >= 1, f"all {total} events stored before the kill"
        reference = reference_built.result()
        killed.start()
        cluster.wait_current(STREAM)

        # 2. relaying: two replicas; a node dies while OM holds a batch, then comes back
        arrived, release = om.hold(BATCH_PATH)
        relays = [_dbt_oml(proj, "relay"), _dbt_oml(proj, "relay")]
        try:
            assert arrived.wait(timeout=120), relays[0].stderr.text[-3000:]
            for relay in relays:  # both replicas are on the consumer before its leader dies
                relay.stderr.wait_for("relay: reading", timeout=120)
            restarted = cluster.node(cluster.consumer_leader(STREAM, DURABLE))
            restarted.stop()
            release.set()
            restarted.start()
            expected = {(job, kind) for job, kind, _ in _posted(reference)}
            wait_for_value(
                lambda: {(job, kind) for job, kind, _ in _posted(om)} >= expected or None,
                "every event in OpenMetadata",
                timeout=300,
            )
            wait_for_value(lambda: _consumer_settled(cluster), "every message acked")
            for relay in relays:  # a replica that lost its node is back on the stream
                lost = [i for i, line in enumerate(relay.stderr.lines) if "reconnecting in" in line]
                if lost:
                    relay.stderr.wait_for("relay: reading", after=lost[-1], timeout=120)
            codes = [relay.terminate(timeout=5 + 30) for relay in relays]
        finally:
            release.set()
            for relay in relays:
                relay.kill()
    logs = [relay.stderr.text for relay in relays]
    assert codes == [0, 0], logs[0][-2000:] + logs[1][-2000:]
    assert all("Traceback" not in log for log in logs)
    summaries = [SUMMARY.findall(log) for log in logs]
    assert all(len(found) == 1 for found in summaries), "\n---\n".join(logs)
    counts = [tuple(map(int, found[0])) for found in summaries]
    assert [dead for *_, dead in counts] == [0, 0]
    # which replica takes which batch is JetStream's choice: one may end with none
    assert _stream_messages(cluster, f"{SUBJECT}.dead") == 0

    # 3. OpenMetadata: the same as without faults; repeats of a post are at-least-once
    assert _state(om) == _state(reference)
    posted, expected_events = _posted(om), _posted(reference)
    assert sum(expected_events.values()) == len(expected_events) > 0  # no fault, no repeat
    # each event of the run once, whatever the repeats: the same (job, type) pairs as often
    assert len(posted) == len(expected_events)
    assert Counter((j, k) for j, k, _ in posted) == Counter((j, k) for j, k, _ in expected_events)
    duplicates = sum(posted.values()) - len(posted)
    assert duplicates >= 0
    record_property("duplicate_posts", duplicates)
    record_property("events_in_openmetadata", len(posted))
    record_property("events_stored_when_the_stream_leader_died", before)
    retried_publishes = re.findall(
        r"JetStream: (\d+) event\(s\) published again", build.stderr.text
    )
    reconnects = [sum("reconnecting in" in line for line in relay.stderr.lines) for relay in relays]
    print(  # noqa: T201 - the numbers the issue asks for
        f"\ncluster: {len(posted)} events in OpenMetadata, {duplicates} duplicate post(s); "
        f"{before} of {total} events stored when the stream leader died; "
        f"relays (received, delivered, retried, dead-lettered): {counts}, "
        f"reconnections {reconnects}; "
        f"publishes retried: {retried_publishes or ['0']}; stream leader killed: {killed.name}; "
        f"consumer leader restarted: {restarted.name}"
    )


def _event(job: str) -> dict[str, Any]:
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
        "run": {"runId": "01a22a97-c811-7ab0-b0d7-94051423011d"},
        "job": {"namespace": "dbt", "name": job},
    }


def _transport(cluster: NatsCluster, tmp_path: Path, **settings: Any) -> Any:
    from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport

    config = {
        "servers": cluster.urls,
        "subject": SUBJECT,
        "stream": STREAM,
        "num_replicas": 3,
        "outbox_dir": str(tmp_path / "outbox"),
        **settings,
    }
    return JetStreamTransport(JetStreamConfig.from_dict(config))


def test_a_publish_retried_through_a_leader_election_is_stored_once(
    cluster: NatsCluster, tmp_path: Path
) -> None:
    first = _transport(cluster, tmp_path)
    first.emit(_event("a"))
    assert first.close() is True, first.problems
    cluster.node(cluster.stream_leader(STREAM)).stop()  # the stream has no leader for seconds
    again = _transport(cluster, tmp_path)
    again.emit(_event("a"))  # the same event: the same Nats-Msg-Id
    again.emit(_event("b"))
    assert again.close() is True, again.problems
    assert (again.delivered, again.undelivered) == (2, 0)
    assert _stream_messages(cluster) == 2
    [note] = again.notes
    assert note.startswith("JetStream: 1 event(s) published again after a NATS fault (")


def test_a_stream_without_quorum_keeps_events_in_the_outbox_within_the_budget(
    cluster: NatsCluster, tmp_path: Path
) -> None:
    ready = _transport(cluster, tmp_path)
    ready.emit(_event("a"))
    assert ready.close() is True, ready.problems
    for node in cluster.nodes[1:]:
        node.stop()  # one server of three: no quorum, no leader
    transport = _transport(cluster, tmp_path, publish_timeout=1, retry_budget=2)
    for job in ("b", "c", "d"):
        transport.emit(_event(job))
    assert transport.close() is False
    assert (transport.delivered, transport.undelivered) == (0, 3)
    [problem] = transport.problems
    assert problem.startswith(f"delivery to NATS {', '.join(cluster.urls)} failed: ")
    assert problem.endswith(" of retries: retry_budget)")
    assert transport.notes == []  # none was published again
    outbox = tmp_path / "outbox" / "jetstream.jsonl"
    assert [json.loads(line)["job"]["name"] for line in outbox.read_text().splitlines()] == [
        "b",
        "c",
        "d",
    ]
