"""NATS JetStream: the transport and the relay against a real nats-server on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.conftest import (
    RUN_STG_ORDERS,
    CliRun,
    clean_env,
    copy_project,
    free_port,
    run_cli,
    run_plain_dbt,
)
from tests.support.fakes.openmetadata import FakeOpenMetadata, serve
from tests.support.nats_server import Watched

pytestmark = [pytest.mark.integration, pytest.mark.nats]
nats = pytest.importorskip("nats", reason="needs dbt-oml[nats]")

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
BUILD = ["build", "--profiles-dir", ".", "--duckdb-namespace", "duckdb://pod/{alias}"]
#: stg_orders' run; no catalog.json: the live catalog gives the same events, in one dbt run
RUN_ONE = [*RUN_STG_ORDERS, "--no-docs-generate"]


@pytest.fixture(scope="module")
def nats_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not Path(NATS_SERVER).exists():
        pytest.skip("nats-server is not installed (apt-get install nats-server)")
    port = free_port()
    store = tmp_path_factory.mktemp("nats")
    proc = subprocess.Popen(
        [NATS_SERVER, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):  # bounded: 10 s
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail("nats-server exited")
                time.sleep(0.1)  # readiness poll, bounded above
        else:
            pytest.fail("nats-server did not start within 10 s")
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def stream(nats_url: str, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """A stream per test, deleted afterwards."""
    name = "T" + "".join(c for c in request.node.name if c.isalnum())[:40].upper()
    config = {"servers": [nats_url], "subject": f"ol.{name.lower()}", "stream": name}
    yield config
    asyncio.run(_delete_stream(nats_url, name))


async def _delete_stream(url: str, name: str) -> None:
    nc = await nats.connect(url)
    with contextlib.suppress(Exception):  # already gone
        await nc.jetstream().delete_stream(name)
    await nc.drain()


async def _stream_info(url: str, name: str) -> Any:
    nc = await nats.connect(url)
    try:
        return await nc.jetstream().stream_info(name)
    finally:
        await nc.drain()


_SCHEMA = {"schema": {"fields": [{"name": "id", "type": "INTEGER"}]}}


def _event(run_id: str = "01a22a97-c811-7ab0-b0d7-94051423011d") -> dict[str, Any]:
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/p",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
        "run": {"runId": run_id},
        "job": {"namespace": "dbt", "name": "dbt-run-x"},
        "inputs": [{"namespace": "duckdb://pod", "name": "crm.sales.customers", "facets": _SCHEMA}],
        "outputs": [
            {"namespace": "duckdb://pod", "name": "warehouse.staging.customers", "facets": _SCHEMA}
        ],
    }


def test_the_same_run_published_twice_is_stored_once(
    stream: dict[str, Any], tmp_path: Path
) -> None:
    from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport

    t = JetStreamTransport(JetStreamConfig.from_dict({**stream, "outbox_dir": str(tmp_path)}))
    t.emit(_event())
    t.emit(_event())
    t.emit(_event("01a22a97-c811-7ab0-b0d7-94051423011e"))
    assert t.close() is True
    info = asyncio.run(_stream_info(stream["servers"][0], stream["stream"]))
    assert info.state.messages == 2


async def _add_stream(url: str, name: str, **config: Any) -> None:
    from nats.js.api import StreamConfig

    nc = await nats.connect(url)
    try:
        await nc.jetstream().add_stream(StreamConfig(name=name, **config))
    finally:
        await nc.drain()


@pytest.mark.parametrize(
    ("existing", "says"),
    [
        ({"subjects": ["elsewhere.>"]}, "takes elsewhere.>, not "),
        ({"max_msgs": 1, "discard": "new"}, "is full (messages 1 of 1) and refuses new"),
    ],
)
def test_a_stream_that_cannot_take_the_events_is_said_at_once(
    stream: dict[str, Any], tmp_path: Path, existing: dict[str, Any], says: str
) -> None:
    """A stream that exists with other subjects, or full with discard: new: one line that says
    so (not 'no leader' after the publish timeout), every event kept."""
    from nats.js.api import DiscardPolicy

    from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport

    url, name = stream["servers"][0], stream["stream"]
    config = {"subjects": [stream["subject"]], **existing}
    if "discard" in config:
        config["discard"] = DiscardPolicy(config["discard"])
    asyncio.run(_add_stream(url, name, **config))
    if existing.get("max_msgs"):  # fill it
        first = JetStreamTransport(
            JetStreamConfig.from_dict({**stream, "outbox_dir": str(tmp_path)})
        )
        first.emit(_event("01a22a97-c811-7ab0-b0d7-940514230100"))
        assert first.close() is True
    kept = tmp_path / "kept"
    t = JetStreamTransport(
        JetStreamConfig.from_dict({**stream, "outbox_dir": str(kept), "publish_timeout": 30})
    )
    for i in range(3):
        t.emit(_event(f"01a22a97-c811-7ab0-b0d7-9405142301{i:02d}"))
    assert t.close() is False
    assert len(t.problems) == 1, t.problems
    assert says in t.problems[0]
    assert "leader" not in t.problems[0]
    assert len((kept / "jetstream.jsonl").read_text().splitlines()) == 3


def test_unreachable_server_keeps_everything_and_says_why_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport

    port = free_port()
    config = {
        "servers": [f"nats://etl:s3cr3t@127.0.0.1:{port}"],
        "connect_timeout": 0.5,
        "outbox_dir": str(tmp_path),
    }
    with caplog.at_level(logging.DEBUG):
        t = JetStreamTransport(JetStreamConfig.from_dict(config))
        for i in range(3):
            t.emit(_event(f"01a22a97-c811-7ab0-b0d7-9405142301{i:02d}"))
        assert t.close() is False
    reason = f"delivery to NATS nats://***@127.0.0.1:{port} failed: connection refused"
    assert t.problems == [reason]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []  # nats-py's too
    assert "s3cr3t" not in caplog.text
    assert "Traceback" not in capfd.readouterr().err
    outbox = tmp_path / "jetstream.jsonl"
    assert len(outbox.read_text().splitlines()) == 3
    assert stat.S_IMODE(outbox.stat().st_mode) == 0o600
    [line] = (tmp_path / "jetstream.reasons.log").read_text().splitlines()
    assert line.endswith(f" 3 event(s): {reason}")


@pytest.mark.parametrize("mode", ["wrapper", "plugin"])
def test_unreachable_nats_in_a_dbt_run_is_one_line(tmp_path: Path, mode: str) -> None:
    proj = copy_project(tmp_path / "p")
    port = free_port()
    env = {
        "OPENLINEAGE__TRANSPORT__TYPE": "jetstream",
        "OPENLINEAGE__TRANSPORT__SERVERS": f"nats://etl:s3cr3t@127.0.0.1:{port}",
    }
    if mode == "plugin":
        run = run_plain_dbt(RUN_STG_ORDERS[:5], cwd=proj, env=env | {"DBT_OML_PLUGIN": "1"})
    else:
        run = run_cli(RUN_ONE, cwd=proj, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    output = run.stdout + run.stderr
    assert "Traceback" not in output
    assert "s3cr3t" not in output
    refused = [line for line in output.splitlines() if "connection refused" in line]
    assert len(refused) == 1, output[-3000:]
    assert f"NATS nats://***@127.0.0.1:{port}" in refused[0]


class Published(NamedTuple):
    stream: dict[str, Any]
    run: CliRun
    stored: int | None  # messages in the stream right after the build (None: it failed)


@pytest.fixture(scope="module")
def published(nats_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Published]:
    """One `dbt-oml build` of the bundled project into a stream of the module's, for the tests
    that read it (the project and the stream).

    What a test publishes again of this run is stored once: the same Nats-Msg-Id, within the
    stream's duplicate window (24 h).
    """
    stream = {"servers": [nats_url], "subject": "ol.tpublished", "stream": "TPUBLISHED"}
    proj = copy_project(tmp_path_factory.mktemp("published") / "p")
    (proj / "dbt-oml.yml").write_text(json.dumps({"transport": {"type": "jetstream", **stream}}))
    built = run_cli(BUILD, cwd=proj)
    stored = None
    if built.returncode == 0:
        stored = asyncio.run(_stream_info(nats_url, stream["stream"])).state.messages
    yield Published(stream, built, stored)
    asyncio.run(_delete_stream(nats_url, stream["stream"]))


def test_build_then_emit_of_the_same_run_is_stored_once(published: Published) -> None:
    """The events of one run are the same from `build` and from `emit`: the dedupe ids match."""
    stream, built, stored = published
    assert built.returncode == 0, built.stderr[-3000:]
    emitted = run_cli(["emit", *BUILD[1:]], cwd=built.project)
    assert emitted.returncode == 0, emitted.stderr[-3000:]
    info = asyncio.run(_stream_info(stream["servers"][0], stream["stream"]))
    sent = [re.search(r"(\d+) events, (\d+) delivered", r.stderr) for r in (built, emitted)]
    assert [m.groups() for m in sent if m] == [(str(stored), str(stored))] * 2  # 88 at the time
    assert info.state.messages == stored


def _relay_config(proj: Path, stream: dict[str, Any], om_url: str, **extra: Any) -> Path:
    """dbt-oml.yml of a relay. A fetch returns at once what the stream holds for the consumer, so
    `--once` needs 0.5 s, not the default 2 s, to see there is nothing more (what comes back later,
    nak'ed or unacked, needs a longer `fetch_timeout`)."""
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "token").write_text("bot-jwt\n")
    relay = {
        "jetstream": stream,
        "openmetadata": {"url": om_url, "jwt_token_file": str(proj / "token"), "retry_budget": 1},
        "batch": 20,
        "fetch_timeout": 0.5,
        **extra,
    }
    (proj / "dbt-oml.yml").write_text(
        json.dumps({"relay": relay, "transport": {"type": "jetstream", **stream}})
    )
    return proj


def _state(om: FakeOpenMetadata) -> tuple[set[str], set[tuple[str, str, str]]]:
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


def test_build_then_relay_matches_the_direct_transport(
    published: Published, tmp_path: Path
) -> None:
    direct = FakeOpenMetadata.with_bot()
    with serve(direct) as url:
        proj = copy_project(tmp_path / "direct")
        (proj / "token").write_text("bot-jwt\n")
        env = {
            "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
            "OPENLINEAGE__TRANSPORT__URL": url,
            "OPENLINEAGE__TRANSPORT__JWT_TOKEN_FILE": str(proj / "token"),
        }
        assert run_cli(BUILD, cwd=proj, env=env).returncode == 0
    built = published.run  # the same build, into JetStream
    assert built.returncode == 0, built.stderr[-3000:]
    assert "delivered to jetstream transport" in built.stderr
    relayed = FakeOpenMetadata.with_bot()
    with serve(relayed) as url:
        proj = _relay_config(tmp_path / "relayed", published.stream, url)
        relay = run_cli(["relay", "--once"], cwd=proj)
    assert relay.returncode == 0, relay.stderr[-3000:]
    assert "dead-lettered 0" in relay.stderr
    relayed_tables, relayed_edges = _state(relayed)
    direct_tables, direct_edges = _state(direct)
    assert relayed_tables == direct_tables
    assert sorted(relayed_edges - direct_edges) == sorted(direct_edges - relayed_edges) == []


def test_om_down_nothing_acked_then_everything_delivered(
    stream: dict[str, Any], published: Published, tmp_path: Path
) -> None:
    proj = copy_project(tmp_path / "p")
    _relay_config(proj, stream, f"http://127.0.0.1:{free_port()}")  # OM is down
    built = run_cli(RUN_ONE, cwd=proj)
    assert built.returncode == 0, built.stderr[-3000:]
    down = run_cli(["relay", "--once"], cwd=proj)
    assert down.returncode == 4, down.stderr[-3000:]
    assert "delivered 0" in down.stderr
    om = FakeOpenMetadata.with_bot()
    with serve(om) as url:
        # the nak'ed messages come back 1 s after the nak (the first backoff): more than that
        _relay_config(proj, stream, url, fetch_timeout=2)
        up = run_cli(["relay", "--once"], cwd=proj)
    assert up.returncode == 0, up.stderr[-3000:]
    assert "dead-lettered 0" in up.stderr
    src = om.entity("table", "duckdb_pod_crm.crm.sales.order_lines_v2")
    dst = om.entity("table", "duckdb_pod_warehouse.warehouse.staging.stg_orders")
    assert om.edges[(src["id"], dst["id"])]["columnsLineage"]


def test_a_poison_event_is_dead_lettered_and_the_rest_delivered(
    stream: dict[str, Any], tmp_path: Path
) -> None:
    async def publish() -> None:
        nc = await nats.connect(stream["servers"][0])
        js = nc.jetstream()
        from dbt_oml.transports.jetstream import JetStreamConfig, ensure_stream

        await ensure_stream(js, JetStreamConfig.from_dict(stream))
        await js.publish(stream["subject"], b"{not json", stream=stream["stream"])
        bad = _event("not-a-uuid")  # OM answers 400 for the whole batch
        await js.publish(stream["subject"], json.dumps(bad).encode(), stream=stream["stream"])
        await js.publish(stream["subject"], json.dumps(_event()).encode(), stream=stream["stream"])
        await nc.drain()

    asyncio.run(publish())
    om = FakeOpenMetadata.with_bot()
    proj = tmp_path / "p"
    proj.mkdir()
    with serve(om) as url:
        _relay_config(proj, stream, url)
        relay = run_cli(["relay", "--once"], cwd=proj)
    assert relay.returncode == 0, relay.stderr[-3000:]
    assert "received 3, delivered 1, retried 0, dead-lettered 2" in relay.stderr
    info = asyncio.run(_stream_info(stream["servers"][0], stream["stream"]))
    assert info.state.messages == 5  # 3 events + 2 dead letters on <subject>.dead


async def _consumer(url: str, stream: str, durable: str) -> Any:
    nc = await nats.connect(url)
    try:
        return await nc.jetstream().consumer_info(stream, durable)
    finally:
        await nc.close()


def _delivered(relay: Watched, count: int) -> None:
    """Until the relay's batch lines add up to `count` delivered events (bounded: wait_for)."""
    total, index = 0, -1
    while total < count:
        index = relay.stderr.wait_for(r"relay batch: .*: delivered \d+", after=index + 1)
        total += int(relay.stderr.lines[index].split("delivered ")[1].split(",")[0])


def test_relay_killed_mid_batch_then_restarted(
    stream: dict[str, Any], published: Published, tmp_path: Path
) -> None:
    proj = copy_project(tmp_path / "p")
    _relay_config(proj, stream, "http://unused")
    assert run_cli(RUN_ONE, cwd=proj).returncode == 0
    om = FakeOpenMetadata.with_bot()
    arrived, release = om.hold("/api/v1/openlineage/lineage/batch")
    with serve(om) as url:
        _relay_config(proj, stream, url, ack_wait=2, fetch_timeout=6)
        relay = subprocess.Popen(
            [sys.executable, "-m", "dbt_oml", "relay"],
            cwd=proj,
            env=clean_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert arrived.wait(timeout=120), "the relay never posted a batch"
        finally:
            relay.kill()  # dies after OM got the batch, before it could ack
            relay.wait(timeout=10)
        release.set()
        created_before = sum(1 for r in om.requests if r.status == 201)
        # restarted as it ran: a service, stopped (SIGTERM) once the events unacked by the
        # killed one came back (after ack_wait) and went through; --once would then wait out
        # one more fetch_timeout, longer than ack_wait, to see that nothing else comes
        again = Watched([sys.executable, "-m", "dbt_oml", "relay"], cwd=proj, env=clean_env())
        try:
            _delivered(again, 4)
            code = again.terminate(timeout=2 + 30)  # ack_wait, and a margin for a loaded machine
        finally:
            again.kill()
        created_after = sum(1 for r in om.requests if r.status == 201)
    assert code == 0, again.stderr.text[-3000:]
    assert "Traceback" not in again.stderr.text
    # every event of the run came back and went through
    assert "received 4, delivered 4, retried 0, dead-lettered 0" in again.stderr.text
    assert created_after == created_before  # the re-delivery created no entity twice
    info = asyncio.run(_consumer(stream["servers"][0], stream["stream"], "dbt-oml-relay"))
    assert (info.num_pending, info.num_ack_pending) == (0, 0)
    src = om.entity("table", "duckdb_pod_crm.crm.sales.order_lines_v2")
    dst = om.entity("table", "duckdb_pod_warehouse.warehouse.staging.stg_orders")
    assert om.edges[(src["id"], dst["id"])]["columnsLineage"]
