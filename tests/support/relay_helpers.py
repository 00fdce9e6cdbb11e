"""Shared by the relay's integration tests (test_relay_service, test_relay_delivery): a nats-server
per module and a stream per test, OpenLineage events to publish, the state of the relay's consumer
and the relay's dbt-oml.yml."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.nats_server import NatsServer, js_call

BATCH_PATH = "/api/v1/openlineage/lineage/batch"
_SCHEMA = {"schema": {"fields": [{"name": "id", "type": "INTEGER"}]}}


@pytest.fixture(name="server", scope="module")
def server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    running = NatsServer(tmp_path_factory.mktemp("nats")).start()
    try:
        yield running
    finally:
        running.stop()


def stream_settings(url: str, name: str) -> dict[str, Any]:
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    tag = "".join(c for c in name if c.isalnum())[:30].upper() + digest.upper()
    return {"servers": [url], "subject": f"ol.{tag.lower()}", "stream": "T" + tag}


@pytest.fixture(name="stream")
def stream_fixture(server: NatsServer, request: pytest.FixtureRequest) -> dict[str, Any]:
    return stream_settings(server.url, request.node.name)


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
