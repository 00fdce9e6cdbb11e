"""Events of two runs made comparable: without what differs between any two runs (run ids,
times, the project's path)."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import CliRun

#: Keys whose values differ between any two runs of the same build.
PER_RUN = {"runId", "eventTime", "invocation_id", "startedAt", "completedAt"}


def scrub(value: Any) -> Any:
    """`value` without the keys that differ between any two runs of the same build."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in PER_RUN}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def comparable(run: CliRun) -> dict[tuple[str, str], list[str]]:
    """Events by (eventType, job), without what differs between any two runs."""
    out: dict[tuple[str, str], list[str]] = {}
    for event in run.events:
        text = json.dumps(event).replace(str(run.project), "<project>")
        doc = scrub(json.loads(text))
        out.setdefault((doc["eventType"], doc["job"]["name"]), []).append(
            json.dumps(doc, sort_keys=True)
        )
    return {k: sorted(v) for k, v in out.items()}
