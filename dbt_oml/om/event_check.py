"""Is this a RunEvent OpenMetadata can read? One reason per malformed event, never an exception.

Pure. OM's batch endpoint answers 400 for the whole batch when one event lacks a required field
or has an unparseable value (docs/reference/openmetadata-api.md §1.2-1.4), so anything that is
not a valid RunEvent is refused here, per event, before a batch is posted.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

EVENT_TYPES = frozenset({"START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"})
_ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$")


def _time_problem(value: object) -> str | None:
    if not isinstance(value, str) or not _ISO.match(value):
        return f"eventTime {value!r} is not an ISO-8601 date-time"
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return f"eventTime {value!r} is not a valid date-time"
    return None


def _datasets_problem(event: Mapping[str, Any], key: str) -> str | None:
    datasets = event.get(key, [])
    if datasets is None:
        return None
    if not isinstance(datasets, list):
        return f"{key} is not a list"
    for i, dataset in enumerate(datasets):
        if not isinstance(dataset, Mapping):
            return f"{key}[{i}] is not an object"
        for field in ("namespace", "name"):
            if not isinstance(dataset.get(field), str) or not dataset[field]:
                return f"{key}[{i}].{field} is missing"
        for facets in ("facets", "inputFacets", "outputFacets"):
            if dataset.get(facets) is not None and not isinstance(dataset[facets], Mapping):
                return f"{key}[{i}].{facets} is not an object"
    return None


def event_problem(event: object) -> str | None:
    """Why `event` is not a RunEvent OpenMetadata can take, or None when it is.

    >>> event_problem([]), event_problem({"eventTime": "yesterday"})[:25]
    ('not a JSON object', "eventTime 'yesterday' is ")
    """
    if not isinstance(event, Mapping):
        return "not a JSON object"
    problem = _time_problem(event.get("eventTime"))
    if problem:
        return problem
    event_type = event.get("eventType")
    if event_type is not None and event_type not in EVENT_TYPES:
        return f"eventType {event_type!r} is not an OpenLineage run state"
    run, job = event.get("run"), event.get("job")
    if not isinstance(run, Mapping):
        return "run is missing"
    try:
        uuid.UUID(str(run.get("runId")))
    except ValueError:
        return f"run.runId {run.get('runId')!r} is not a UUID"
    if not isinstance(job, Mapping) or not all(
        isinstance(job.get(k), str) and job.get(k) for k in ("namespace", "name")
    ):
        return "job.namespace or job.name is missing"
    for key in ("producer", "schemaURL"):
        if not isinstance(event.get(key), str) or not event[key]:
            return f"{key} is missing"
    return _datasets_problem(event, "inputs") or _datasets_problem(event, "outputs")
