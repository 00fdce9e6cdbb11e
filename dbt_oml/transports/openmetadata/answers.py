"""What became of each event a batch gave OpenMetadata, and the checks that decide it."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from dbt_oml.errors import status_error
from dbt_oml.om.bootstrap import BootstrapReport
from dbt_oml.om.client import Reply
from dbt_oml.om.names import sample

logger = logging.getLogger(__name__)

EVENT_PATH = "/api/v1/openlineage/lineage"
BATCH_PATH = f"{EVENT_PATH}/batch"
#: Why an event is rejected when a body limit in front of OM (413) refuses it even alone.
TOO_LARGE = (
    "413: the event alone is over the body size limit in front of OpenMetadata (a proxy's "
    "client_max_body_size?): raise the limit, then `dbt-oml replay` it"
)


def processed_by_om(event: Mapping[str, Any], allowed: set[str]) -> bool:
    """Whether OM would draw from this (valid) event: a kept type (missing = COMPLETE), outputs."""
    return event.get("eventType", "COMPLETE") in allowed and bool(outputs_of(event))


def outputs_of(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    outputs = event.get("outputs")
    return [o for o in outputs if isinstance(o, Mapping)] if isinstance(outputs, list) else []


def unresolved(event: Mapping[str, Any], report: BootstrapReport) -> str:
    missing = [
        f"{d.get('namespace')}/{d.get('name')}"
        for d in [*(event.get("inputs") or []), *(event.get("outputs") or [])]
        if (d.get("namespace"), d.get("name")) not in report.ensured
    ]
    if missing:
        return (
            "it could not resolve "
            + ", ".join(missing[:3])
            + (" (no OpenMetadata service for them: map their namespace in `services`)")
        )
    return (
        "it could not resolve every dataset (namespaceToServiceMapping names a service that is "
        "not there, or spelled differently: OM 1.12 looks mapped names up exactly)"
    )


def refusal(reply: Reply, target: str) -> str | None:
    """Why the single endpoint refused one event (400: OM's reason; 413: too large), or None
    when it answered; TerminalDeliveryError for any other non-2xx (a 404: no such endpoint
    there), which keeps the whole batch."""
    if reply.status == HTTPStatus.BAD_REQUEST:
        return f"OpenMetadata refused it: {reply.message}"
    if reply.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE:
        return TOO_LARGE
    if not reply.ok:
        raise status_error(reply.status, target=target, reason=f"{reply.status} {reply.message}")
    return None


def log_advisories(dropped_inputs: set[str], guarded: set[str]) -> None:
    """The INFO lines of a run's end: file inputs OM cannot resolve, column lineage kept."""
    if dropped_inputs:
        logger.info(
            "OpenMetadata resolves no local files: %d file input(s) left out of its copy of "
            "the events (%s)",
            len(dropped_inputs),
            sample(sorted(dropped_inputs)),
        )
    if guarded:
        logger.info(
            "kept the column lineage OpenMetadata holds on edges into %d table(s) whose "
            "model has none in this run (%s); --allow-empty-column-lineage replaces it",
            len(guarded),
            sample(sorted(guarded)),
        )


def refused_by_om(event: Mapping[str, Any], report: BootstrapReport) -> str | None:
    """Why OpenMetadata cannot take an event, when bootstrap found that OM refuses a table it
    names (a 400 on the table, its schema or database; a name OM rejects); None otherwise."""
    for dataset in [*(event.get("inputs") or []), *(event.get("outputs") or [])]:
        key = (str(dataset.get("namespace")), str(dataset.get("name")))
        why = report.refused.get(key)
        if why is not None:
            return f"{key[0]}/{key[1]}: {why}"
    return None
