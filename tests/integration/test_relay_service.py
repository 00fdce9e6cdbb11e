"""`dbt-oml relay` as a service, against real nats-servers: NATS unreachable or dying mid-batch,
reconnects, SIGTERM, the dead-letter subjects it refuses at start, and where it reads its settings.

Issue 11, items 3 and 6: each test failed on the relay before the rewrite.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env, free_port, run_cli
from tests.support.fakes.openmetadata import FakeOpenMetadata, serve
from tests.support.nats_server import NatsServer, Watched
from tests.support.relay_helpers import (
    BATCH_PATH,
    consumer,
    publish,
    server_fixture,  # noqa: F401 - pytest finds the fixture `server` here
    stream_fixture,  # noqa: F401 - and `stream`
    stream_settings,
    valid_events,
    write_config,
)

pytestmark = [pytest.mark.integration, pytest.mark.nats]
pytest.importorskip("nats", reason="needs dbt-oml[nats]")


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A server of the test's own, to kill and restart."""
    running = NatsServer(tmp_path / "nats").start()
    try:
        yield running
    finally:
        running.stop()


def relay_process(proj: Path, *args: str, env: dict[str, str] | None = None) -> Watched:
    command = [sys.executable, "-m", "dbt_oml", "relay", *args]
    return Watched(command, cwd=proj, env=clean_env(env))


# -- 3. NATS faults ----------------------------------------------------------------------------


def test_nats_unreachable_once_exits_4_with_one_line(tmp_path: Path) -> None:
    port = free_port()
    stream = stream_settings(f"nats://etl:s3cr3t@127.0.0.1:{port}", "down")
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
    stream = stream_settings(server.url, "mid")
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
    stream = stream_settings(own_server.url, "sigterm")
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
