"""JetStream throughput: publishing with acknowledgement, and relaying into the OM stand-in.

`make bench-nats`. Starts a nats-server on a free loopback port, publishes N events through
JetStreamTransport (one acknowledged publish each), then drains them with the relay into the
in-memory OpenMetadata stand-in (bootstrap + batch posts). Prints a table row per measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _event(i: int) -> dict:
    schema = {"schema": {"fields": [{"name": f"c{j}", "type": "INTEGER"} for j in range(20)]}}
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/bench",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
        "run": {"runId": f"01a22a97-c811-7ab0-b0d7-{i:012d}"},
        "job": {"namespace": "dbt", "name": f"job_{i % 50}"},
        "inputs": [{"namespace": "duckdb://pod", "name": f"w.s.src_{i % 100}", "facets": schema}],
        "outputs": [
            {"namespace": "duckdb://pod", "name": f"w.s.model_{i % 200}", "facets": schema}
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    import httpx2

    from dbt_oml.relay import Relay
    from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport
    from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport
    from tests.fakes.openmetadata import FakeOpenMetadata, Principal

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = Path(tempfile.mkdtemp())
    server = shutil.which("nats-server") or "/usr/sbin/nats-server"
    proc = subprocess.Popen(
        [server, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(store)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.1)
        config = {
            "servers": [f"nats://127.0.0.1:{port}"],
            "subject": "bench.events",
            "stream": "BENCH",
            "outbox_dir": str(store / "outbox"),
        }
        publisher = JetStreamTransport(JetStreamConfig.from_dict(config))
        events = [_event(i) for i in range(args.events)]
        start = time.perf_counter()
        for event in events:
            publisher.emit(event)
        publish_s = time.perf_counter() - start
        publisher.close()
        om = FakeOpenMetadata(validate_schemas=False)
        om.add_token("t", Principal("bot"))
        om_config = OpenMetadataConfig.from_dict(
            {"url": "http://om.bench", "jwt_token": "t", "outbox_dir": str(store / "om")}
        )
        target = OpenMetadataTransport(
            om_config, http=httpx2.Client(transport=httpx2.WSGITransport(app=om))
        )
        relay = Relay(
            source=JetStreamConfig.from_dict(config), om=target, batch=200, fetch_timeout=1.0
        )
        start = time.perf_counter()
        report = asyncio.run(relay.run(once=True))
        relay_s = time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print("| measurement | events | seconds | events/s |")
    print("|---|---|---|---|")
    print(
        f"| publish, one acknowledged publish per event | {args.events} | {publish_s:.2f} | {args.events / publish_s:,.0f} |"
    )
    print(
        f"| relay --once into the OM stand-in (batch 200, bootstrap + post) | {report.delivered} | {relay_s:.2f} "
        f"| {report.delivered / relay_s:,.0f} |"
    )


if __name__ == "__main__":
    main()
