"""JetStream throughput: publishing with acknowledgement, and relaying into the OM stand-in.

`make bench-nats`. For a single nats-server (stream R1) and a three-node cluster (stream R3), all
on loopback, and two kinds of events ("new": every event writes tables OM has not seen; "known":
the same few tables again, the steady state): publishes the events through JetStreamTransport
(one acknowledged publish each), then drains them with 1 and 2 `dbt-oml relay` processes
(replicas on one durable consumer, stopped with SIGTERM once OM has every event; each measurement
has its own durable and its own stand-in, so each relays every event into an empty OM). The
OpenMetadata stand-in is served by a threaded HTTP server that answers each request after
`--om-latency` seconds (a real OM's network and database time; the stand-in itself adds none).
Prints one Markdown table; the relay's seconds run from OM's first request to its last answer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SUMMARY = re.compile(r"dbt-oml relay: received (\d+), delivered (\d+)")


def _event(i: int, tables: int) -> dict[str, Any]:
    """Event i of a run whose models write `tables` distinct tables (and read as many sources)."""
    schema = {"schema": {"fields": [{"name": f"c{j}", "type": "INTEGER"} for j in range(20)]}}
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/bench",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
        "run": {"runId": f"01a22a97-c811-7ab0-b0d7-{i:012d}"},
        "job": {"namespace": "dbt", "name": f"job_{i % 50}"},
        "inputs": [
            {"namespace": "duckdb://pod", "name": f"w.s.src_{i % tables}", "facets": schema}
        ],
        "outputs": [
            {"namespace": "duckdb://pod", "name": f"w.s.model_{i % tables}", "facets": schema}
        ],
    }


# -- OpenMetadata with a per-request latency ------------------------------------------------------


@dataclass
class Slowed:
    """WSGI middleware: each request waits `latency` s (outside the stand-in's lock), then the
    stand-in answers; records when the first request came and the last answer left."""

    app: Callable[..., Iterable[bytes]]
    latency: float
    requests: int = 0
    first: float | None = None
    last: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        came = time.perf_counter()
        if self.latency:
            time.sleep(self.latency)  # the knob: OM's network and database time per request
        body = list(self.app(environ, start_response))
        with self._lock:
            self.requests += 1
            self.first = came if self.first is None else min(self.first, came)
            self.last = max(self.last or 0.0, time.perf_counter())
        return body


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""


@contextlib.contextmanager
def serve_om(latency: float) -> Iterator[tuple[str, Slowed]]:
    from tests.support.fakes.openmetadata import FakeOpenMetadata, Principal

    om = FakeOpenMetadata(validate_schemas=False)
    om.add_token("bench-jwt", Principal("bot"))
    app = Slowed(om, latency)
    server = make_server("127.0.0.1", 0, app, server_class=_ThreadingServer, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", app
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# -- NATS -----------------------------------------------------------------------------------------


@contextlib.contextmanager
def nats_servers(topology: str, store: Path) -> Iterator[list[str]]:
    """URLs of a single nats-server or of a three-node JetStream cluster (see tests)."""
    from tests.support.nats_server import NatsCluster, NatsServer

    if topology == "single":
        server = NatsServer(store / "single").start()
        try:
            yield [server.url]
        finally:
            server.stop()
    else:
        cluster = NatsCluster(store / "cluster").start()
        try:
            yield cluster.urls
        finally:
            cluster.stop()


@dataclass(frozen=True)
class Scenario:
    """Events whose models write `tables` distinct tables (and read as many sources)."""

    name: str
    events: int
    tables: int

    @property
    def stream(self) -> str:
        return f"BENCH_{self.name.upper()}"

    @property
    def subject(self) -> str:
        return f"bench.{self.name}"


def publish(servers: list[str], scenario: Scenario, *, replicas: int, outbox: Path) -> float:
    """Seconds to publish the scenario's events, each acknowledged by the stream."""
    from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport

    config = {
        "servers": servers,
        "subject": scenario.subject,
        "stream": scenario.stream,
        "num_replicas": replicas,
        "outbox_dir": str(outbox),
    }
    publisher = JetStreamTransport(JetStreamConfig.from_dict(config))
    docs = [_event(i, scenario.tables) for i in range(scenario.events)]
    start = time.perf_counter()
    for doc in docs:
        publisher.emit(doc)
    seconds = time.perf_counter() - start
    if not publisher.close():
        raise SystemExit(f"publishing failed: {publisher.problems}")
    return seconds


def relay(
    servers: list[str],
    scenario: Scenario,
    *,
    replicas: int,
    latency: float,
    batch: int,
    work: Path,
) -> tuple[int, float, int]:
    """(events delivered, seconds from OM's first request to its last answer, OM requests).

    Each call has its own durable consumer (so it relays every event of the stream) and its own
    OM stand-in (so every table is new to OM again).
    """
    durable = f"bench-{scenario.name}-{replicas}-{round(latency * 1000)}ms"
    with serve_om(latency) as (url, om):
        folder = work / durable
        folder.mkdir(parents=True)
        (folder / "token").write_text("bench-jwt\n")
        transport = {
            "type": "jetstream",
            "servers": servers,
            "subject": scenario.subject,
            "stream": scenario.stream,
        }
        target = {"url": url, "jwt_token_file": str(folder / "token"), "outbox_dir": str(folder)}
        settings = {"openmetadata": target, "durable": durable, "batch": batch, "fetch_timeout": 1}
        (folder / "dbt-oml.yml").write_text(json.dumps({"transport": transport, "relay": settings}))
        command = [sys.executable, "-m", "dbt_oml", "relay"]
        processes = [
            subprocess.Popen(command, cwd=folder, stderr=subprocess.PIPE, text=True)
            for _ in range(replicas)
        ]
        try:
            _wait_delivered(om.app, scenario.events, processes)
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
        delivered = 0
        for process in processes:
            _, err = process.communicate(timeout=120)
            found = SUMMARY.search(err)
            if process.returncode != 0:
                raise SystemExit(f"relay failed ({process.returncode}):\n{err[-3000:]}")
            delivered += int(found.group(2)) if found else 0  # the others took everything
        assert om.first is not None
        assert om.last is not None
        return delivered, om.last - om.first, om.requests


def _wait_delivered(om: Any, events: int, processes: list[subprocess.Popen[str]]) -> None:
    """Until OM has taken every event (bounded: 30 minutes), or a relay died."""
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        runs = {
            e["run"]["runId"]
            for r in list(om.requests)
            if r.path.endswith("/lineage/batch") and r.status == 200
            for e in r.body["events"]
        }
        if len(runs) >= events:
            return
        if any(p.poll() is not None for p in processes):
            raise SystemExit("a relay ended before OpenMetadata had every event")
        time.sleep(0.2)  # a benchmark's poll: the rate is read from OM's own timestamps
    raise SystemExit(f"OpenMetadata did not get all {events} events within 30 minutes")


# -- the table ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--new-events",
        type=int,
        default=1000,
        help="events of the 'new' scenario: each writes a table OM has not seen (default 1000)",
    )
    parser.add_argument(
        "--known-events",
        type=int,
        default=10000,
        help="events of the 'known' scenario: the same tables again and again (default 10000)",
    )
    parser.add_argument("--known-tables", type=int, default=20, help="its tables (default 20)")
    parser.add_argument("--batch", type=int, default=100, help="relay batch (messages per fetch)")
    parser.add_argument(
        "--om-latency",
        type=float,
        action="append",
        help="seconds the OM stand-in takes per request (repeat for several; default 0.02 and 0)",
    )
    parser.add_argument("--topology", choices=["single", "cluster"], action="append")
    parser.add_argument("--replicas", type=int, action="append", help="relay replicas (1, 2)")
    args = parser.parse_args()
    scenarios = [
        Scenario("new", args.new_events, args.new_events),
        Scenario("known", args.known_events, args.known_tables),
    ]
    scenarios = [s for s in scenarios if s.events > 0]
    latencies = args.om_latency or [0.02, 0.0]
    if not Path(shutil.which("nats-server") or "/usr/sbin/nats-server").exists():
        raise SystemExit("nats-server is not installed (apt-get install nats-server)")

    print("| NATS | events | measurement | OM latency | OM requests | seconds | events/s |")
    print("|---|---|---|---|---|---|---|")
    for topology in args.topology or ["single", "cluster"]:
        stream_replicas = 1 if topology == "single" else 3
        where = "1 node, R1" if topology == "single" else "3 nodes, R3"
        with tempfile.TemporaryDirectory() as tmp, nats_servers(topology, Path(tmp)) as servers:
            for scenario in scenarios:
                what = f"{scenario.events} ({scenario.name}: {scenario.tables} tables)"
                outbox = Path(tmp) / "outbox"
                seconds = publish(servers, scenario, replicas=stream_replicas, outbox=outbox)
                rate = scenario.events / seconds
                print(f"| {where} | {what} | publish | - | - | {seconds:.2f} | {rate:,.0f} |")
                for latency in latencies:
                    for replicas in args.replicas or [1, 2]:
                        delivered, seconds, requests = relay(
                            servers,
                            scenario,
                            replicas=replicas,
                            latency=latency,
                            batch=args.batch,
                            work=Path(tmp),
                        )
                        print(
                            f"| {where} | {what} | relay, {replicas} replica(s) "
                            f"| {latency * 1000:g} ms | {requests} | {seconds:.2f} "
                            f"| {delivered / seconds:,.0f} |",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
