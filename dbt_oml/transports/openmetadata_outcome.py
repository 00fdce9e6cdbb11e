"""What became of each event a batch gave OpenMetadata, and the checks that decide it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt_oml.errors import TransientDeliveryError
from dbt_oml.om.bootstrap import BootstrapReport
from dbt_oml.om.client import Reply

#: The `status` of every answer of OM's OpenLineage endpoints (ref §1.5).
OM_STATUSES = frozenset({"success", "partial_success", "failure"})
EVENT_PATH = "/api/v1/openlineage/lineage"
BATCH_PATH = f"{EVENT_PATH}/batch"


@dataclass(slots=True)
class Outcome:
    """What became of each event of a `deliver` call (indexes into the events given)."""

    delivered: list[int] = field(default_factory=list)
    #: not taken now; retrying later may help (an input OM could not resolve yet)
    kept: list[tuple[int, str]] = field(default_factory=list)
    #: refused for good (OM's failedEvents, a 400 for this event alone, not a RunEvent)
    rejected: list[tuple[int, str]] = field(default_factory=list)


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


def check_answer(reply: Reply, target: str) -> None:
    """A 2xx that is not OpenMetadata's answer (a proxy's or an SSO page, HTML) took nothing:
    TransientDeliveryError, so every event of the batch is kept (ref §1.5: OM's answer always
    has `status`)."""
    body = reply.body
    if reply.ok and not (isinstance(body, dict) and body.get("status") in OM_STATUSES):
        raise TransientDeliveryError(
            target=target,
            reason=f"{reply.status} that is not OpenMetadata's answer "
            f"({reply.message[:80]!r}): a proxy or a login page answered; check the url",
        )
