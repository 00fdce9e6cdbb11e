"""The OM transport's test harness: a fake clock, a sample run event and a transport wired in
process to the OM stand-in (no sockets, no sleeps)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport
from tests.support.fakes.openmetadata import FakeOpenMetadata

BASE = "http://om.test"
NS = "duckdb://pod"


class FakeTime:
    """A clock that moves only when the transport sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def sample_event(
    event_type: str = "COMPLETE", *, time: str = "2026-11-30T03:55:00.123Z", source_ns: str = NS
) -> dict[str, Any]:
    """A model's run event: one input, one output with a column lineage of one column."""
    columns = [{"name": "id", "type": "INTEGER"}, {"name": "email", "type": "VARCHAR"}]
    lineage = {
        "fields": {
            "id": {
                "inputFields": [
                    {"namespace": source_ns, "name": "crm.sales.customers", "field": "id"}
                ],
                "transformationDescription": "id",
            }
        }
    }
    return {
        "eventTime": time,
        "eventType": event_type,
        "producer": "https://example.com/producer",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "01a22a97-c811-7ab0-b0d7-94051423011d"},
        "job": {"namespace": "dbt", "name": "dbt-run-shop"},
        "inputs": [
            {
                "namespace": source_ns,
                "name": "crm.sales.customers",
                "facets": {"schema": {"fields": columns}},
            }
        ],
        "outputs": [
            {
                "namespace": NS,
                "name": "warehouse.staging.stg_customers",
                "facets": {"schema": {"fields": columns}, "columnLineage": lineage},
            }
        ],
    }


@pytest.fixture
def om() -> FakeOpenMetadata:
    return FakeOpenMetadata.with_bot()  # IngestionBotRole + LineageBotRole, not an admin


def transport(
    om: FakeOpenMetadata, tmp_path: Path, time: FakeTime | None = None, **config: Any
) -> OpenMetadataTransport:
    """An OpenMetadata transport talking in process to `om`, sleeping on `time`."""
    cfg = OpenMetadataConfig.from_dict(
        {"url": BASE, "jwt_token": "bot-jwt", "outbox_dir": str(tmp_path / "outbox"), **config}
    )
    time = time or FakeTime()
    return OpenMetadataTransport(
        cfg,
        http=httpx2.Client(transport=httpx2.WSGITransport(app=om)),
        sleep=time.sleep,
        clock=time.clock,
    )
