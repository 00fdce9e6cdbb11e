"""What one relayed message becomes: a verdict from the OpenMetadata transport's outcome.

Pure: reads a message's bytes, maps the transport's answer (delivered / kept / rejected) to ack,
retry or dead letter, and writes a dead letter's reason as a header value.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from dbt_oml.om.event_check import event_problem
from dbt_oml.redaction import Redactor, mask

#: The header of a dead letter that says why it is one.
REASON_HEADER: Final = "Dbt-Oml-Reason"
_MAX_REASON: Final = 1000


class Outcome(Protocol):
    """What the OpenMetadata transport did with each event of a batch (indexes into it)."""

    @property
    def delivered(self) -> Sequence[int]: ...
    @property
    def kept(self) -> Sequence[tuple[int, str]]: ...
    @property
    def rejected(self) -> Sequence[tuple[int, str]]: ...


class OpenMetadataSink(Protocol):
    """The part of OpenMetadataTransport the relay uses (blocking calls)."""

    def deliver(self, events: list[dict[str, Any]]) -> Outcome: ...
    def reset_budget(self) -> None: ...


class Action(enum.Enum):
    ACK = "delivered"
    RETRY = "retried"
    DEAD = "dead-lettered"


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    reason: str = ""
    #: an unexpected failure for this event alone: dead-lettered once it has failed too often
    suspect: bool = False


def read_event(data: bytes) -> tuple[dict[str, Any] | None, str]:
    """A message as an event, or None and why it is not an OpenLineage RunEvent.

    >>> read_event(b"[]")
    (None, 'not an OpenLineage RunEvent: not a JSON object')
    """
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError: ValueError
        return None, f"not JSON ({type(e).__name__}: {e})"
    problem = event_problem(doc)
    if problem is not None:
        return None, f"not an OpenLineage RunEvent: {problem}"
    return doc, ""


def verdicts_of(outcome: Outcome, count: int) -> list[Verdict]:
    """One verdict per event from the transport's outcome; an index it forgot is retried."""
    verdicts = [Verdict(Action.RETRY, "OpenMetadata gave no answer for it")] * count
    for i in outcome.delivered:
        if 0 <= i < count:
            verdicts[i] = Verdict(Action.ACK)
    for i, reason in outcome.kept:
        if 0 <= i < count:
            verdicts[i] = Verdict(Action.RETRY, reason)
    for i, reason in outcome.rejected:
        if 0 <= i < count:
            verdicts[i] = Verdict(Action.DEAD, f"OpenMetadata rejected it: {reason}")
    return verdicts


def header_value(reason: str, redactor: Redactor | None = None) -> str:
    """A reason as one header line: redacted (by the relay's redactor), ASCII, no line breaks,
    at most 1000 characters.

    >>> header_value("bad\\r\\n  thing: é")
    'bad thing: \\\\xe9'
    """
    one_line = " ".join((redactor or mask)(reason).split())
    return one_line.encode("ascii", "backslashreplace").decode("ascii")[:_MAX_REASON]
