"""Events of the mini artifacts (tests/fixtures/artifacts/mini), built as `dbt-oml` builds them,
and finding one among them."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from openlineage.client.event_v2 import RunEvent
from openlineage.client.serde import Serde

from dbt_oml.artifacts import read_artifacts
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import build_events, iter_events
from dbt_oml.namespaces import Namespaces
from dbt_oml.runs import JobNaming

NS = Namespaces(
    by_catalog={"warehouse": "duckdb://pod", "crm": "mysql://crm:3306", "dw": "postgres://dw:5432"},
    fallback="duckdb://pod",
)
STARTED = datetime(2026, 11, 30, 3, 55, 0, tzinfo=timezone.utc)


def events_of(target: Path, **kw: Any) -> list[dict[str, Any]]:
    """The events `dbt-oml` builds from the artifacts in `target`, as JSON documents (`naming`,
    `command` and iter_events' own keywords may be given)."""
    arts = read_artifacts(target)
    inv = Invocation(
        invocation_id="11111111-2222-3333-4444-555555555555",
        started_at=STARTED,
        command=kw.pop("command", "build"),
        project_name="jaffle_oml",
        profile_name="jaffle_oml",
        dbt_version="1.11.16",
        project_version="1.0.0",
    )
    settings = EventSettings(
        producer="https://example.com/dbt-oml",
        adapter_version="0.1.0",
        job_naming=kw.pop("naming", JobNaming.DBT_OL),
        cwd="/w",
        project_root="/w/project",
    )
    events = iter_events(arts, invocation=inv, namespaces=NS, settings=settings, **kw)
    return [Serde.to_dict(e) for e in events]


def event_by(events: list[dict[str, Any]], suffix: str, kind: str) -> dict[str, Any]:
    """The one event of `kind` whose job name ends with `suffix`."""
    found = [e for e in events if e["job"]["name"].endswith(suffix) and e["eventType"] == kind]
    assert len(found) == 1, [e["job"]["name"] for e in events]
    return found[0]


def run_events(target: Path) -> list[RunEvent]:
    """The events built from the artifacts in `target`, as RunEvents, with minimal settings."""
    return build_events(
        read_artifacts(target),
        invocation=Invocation(
            invocation_id="inv", started_at=STARTED, command="build", project_name="p"
        ),
        namespaces=Namespaces(by_catalog={}, fallback="duckdb://pod"),
        settings=EventSettings(producer="https://example.com/p", adapter_version="0"),
    )
