"""Send events through the openlineage-python client; keep what could not be delivered.

Delivery never raises into dbt-oml's caller: each failure is counted, and once the transport has
failed a few times in a row, or once it could not reach its backend at all (after its own
retries), the remaining events go straight to the outbox (a JSON-lines file that `dbt-oml replay`
sends later), so a dead backend costs one failed send, not one per event.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from openlineage.client.event_v2 import (
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
)
from openlineage.client.facet_v2 import tags_run

from dbt_oml.delivery.outbox import append_events, read_lines
from dbt_oml.errors import ArtifactError
from dbt_oml.events import serialize
from dbt_oml.redaction import Redactor

logger = logging.getLogger(__name__)

#: After this many consecutive failures the transport is not tried again in this run.
MAX_CONSECUTIVE_FAILURES = 3
#: What says the backend cannot be reached at all: refused, unknown host, no answer in time.
_UNREACHABLE = (ConnectionError, TimeoutError, socket.gaierror)


def unreachable(error: BaseException) -> bool:
    """Whether `error`, or what it was raised from, says the backend cannot be reached.

    Client libraries wrap the socket's error (requests: ConnectionError from urllib3's
    MaxRetryError from NewConnectionError from ConnectionRefusedError): the chain is walked.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, _UNREACHABLE):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


class Emitter(Protocol):
    def emit(self, event: RunEvent) -> None: ...
    def close(self, timeout: float = -1.0) -> bool: ...


class Unconfigured:
    """Stands in for a transport that could not be created: nothing is sent, all is kept."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def emit(self, event: RunEvent) -> None:  # noqa: ARG002 - Delivery holds: never called
        raise RuntimeError(self.reason)

    def close(self, timeout: float = -1.0) -> bool:  # noqa: ARG002
        return False


@dataclass(slots=True)
class DeliveryReport:
    delivered: int = 0
    failed: int = 0
    outbox: Path | None = None
    #: the durable outbox (`s3://...`) that holds them once the run's files went up
    kept_remotely: str | None = None
    errors: list[str] = field(default_factory=list)
    collected: list[dict[str, Any]] = field(default_factory=list)
    #: the transport's own summary lines (e.g. what dbt metadata OpenMetadata got)
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class TransportSummary:
    """What a transport itself kept (a batching one decides at close) and its summary lines."""

    undelivered: int = 0
    outbox: Path | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def to_dict(event: RunEvent) -> dict[str, Any]:
    return serialize.to_dict(event)  # what Serde.to_dict gives, in one pass


def _run_facets(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Facets stay plain mappings, except `tags`, which the client updates in place."""
    facets = dict(raw)
    tags = facets.get("tags")
    if isinstance(tags, Mapping):
        facets["tags"] = tags_run.TagsRunFacet(
            tags=[tags_run.TagsRunFacetFields(**t) for t in tags.get("tags") or ()],
            producer=tags.get("_producer", ""),
        )
    return facets


def from_dict(doc: Mapping[str, Any]) -> RunEvent:
    """Rebuild a RunEvent from its JSON form."""
    run, job = doc["run"], doc["job"]
    return RunEvent(
        eventType=RunState(doc["eventType"]),
        eventTime=doc["eventTime"],
        run=Run(runId=run["runId"], facets=_run_facets(run.get("facets") or {})),
        job=Job(namespace=job["namespace"], name=job["name"], facets=job.get("facets") or {}),
        inputs=[
            InputDataset(
                namespace=d["namespace"],
                name=d["name"],
                facets=d.get("facets") or {},
                inputFacets=d.get("inputFacets") or {},
            )
            for d in doc.get("inputs") or ()
        ],
        outputs=[
            OutputDataset(
                namespace=d["namespace"],
                name=d["name"],
                facets=d.get("facets") or {},
                outputFacets=d.get("outputFacets") or {},
            )
            for d in doc.get("outputs") or ()
        ],
        producer=doc.get("producer") or "",
    )


class Delivery:
    """Sends events one by one through an emitter, or collects them for --dry-run."""

    def __init__(
        self,
        emitter: Emitter | None,
        *,
        outbox: Path,
        target: str,
        redactor: Redactor,
        summarise: Callable[[], TransportSummary] | None = None,
        adapt: Callable[[RunEvent], RunEvent] | None = None,
    ) -> None:
        """`redactor`, the run's, for what is kept and reported; `summarise`, called after the
        emitter closed: what its transport kept itself; `adapt`, applied to each event before it
        is emitted (what the backend needs)."""
        self._emitter = emitter
        self._redactor = redactor
        self._summarise = summarise
        self._adapt = adapt
        self._outbox = outbox
        self._target = target
        self._lock = threading.Lock()  # one emit at a time
        self._spool_lock = threading.Lock()  # the outbox file; never held while emitting
        self._consecutive = 0
        self.held = False  # set: keep events in the outbox instead of sending (refused on purpose)
        self.sent: list[dict[str, Any]] | None = None
        """Set to a list: each event handed to the emitter is kept in it (for `verify`)."""
        self.report = DeliveryReport()

    @property
    def emitter(self) -> Emitter | None:
        return self._emitter

    def send(self, event: RunEvent) -> None:
        if self.held:
            self.keep(event)
            return
        with self._lock:
            if self._emitter is None:
                self.report.collected.append(to_dict(event))
                return
            if self._consecutive >= MAX_CONSECUTIVE_FAILURES:
                self._spool(event)
                return
            try:
                self._emitter.emit(self._adapt(event) if self._adapt else event)
            except Exception as e:
                logger.debug("emit failed", exc_info=True)
                self._failed(event, e)
            else:
                self._consecutive = 0
                self.report.delivered += 1
                if self.sent is not None:
                    self.sent.append(to_dict(event))

    def _failed(self, event: RunEvent, error: Exception) -> None:
        """Count a failed send and keep its event; stop trying once the backend looks dead."""
        self._consecutive += 1
        self.report.errors.append(self._redactor(f"{type(error).__name__}: {error}"))
        self._spool(event)
        if unreachable(error):  # the transport's own retries are behind this failure
            self._consecutive = MAX_CONSECUTIVE_FAILURES
            logger.warning(
                "%s cannot be reached; keeping the remaining events in %s",
                self._target,
                self._outbox,
            )
        elif self._consecutive == MAX_CONSECUTIVE_FAILURES:
            logger.warning(
                "%s failed %d times in a row; keeping the remaining events in %s",
                self._target,
                self._consecutive,
                self._outbox,
            )

    def keep(self, event: RunEvent) -> None:
        """Keep an event in the outbox without sending it (delivery was refused on purpose)."""
        if self._emitter is not None:
            self._spool(event)  # not behind an emit in progress: a slow backend holds no caller
            return
        with self._lock:
            self.report.collected.append(to_dict(event))

    def send_all(self, events: Iterable[RunEvent]) -> None:
        for event in events:
            self.send(event)

    def _spool(self, event: RunEvent) -> None:
        with self._spool_lock:
            self.report.failed += 1
            append_events(self._outbox, [to_dict(event)], self._redactor)
            self.report.outbox = self._outbox

    def close(self, timeout: float = 10.0) -> DeliveryReport:
        """Close the emitter; a batching transport delivers (or keeps) its buffer here."""
        if self._emitter is not None:
            try:
                self._emitter.close(timeout)
            except Exception as e:  # noqa: BLE001 - closing a broken transport is best effort
                self.report.errors.append(self._redactor(f"close: {type(e).__name__}: {e}"))
            if self._summarise is not None:
                self._add(self._summarise())
        return self.report

    def _add(self, kept: TransportSummary) -> None:
        if kept.undelivered:
            self.report.failed += kept.undelivered
            self.report.delivered = max(0, self.report.delivered - kept.undelivered)
            self.report.outbox = kept.outbox or self.report.outbox
        self.report.errors += [self._redactor(p) for p in kept.problems]
        self.report.notes += [self._redactor(n) for n in kept.notes]


def read_outbox(path: Path) -> list[RunEvent]:
    """The events kept in an outbox file, in order (read_kept, without the skipped lines)."""
    return read_kept(path)[0]


def read_kept(path: Path) -> tuple[list[RunEvent], tuple[int, ...]]:
    """The events kept in an outbox file, in order, and the numbers of its lines that are none.

    A line that is not an event (torn by a crash mid-write, nested too deep, edited by hand) is
    skipped with a WARNING naming the file and line; the rest of the file still counts.

    Raises:
        ArtifactError: the file does not exist or cannot be read.
    """
    try:
        read = read_lines(path)
    except FileNotFoundError:
        raise ArtifactError(path=str(path), reason="not found") from None
    except OSError as e:
        raise ArtifactError(path=str(path), reason=f"cannot be read ({e.strerror})") from e
    for problem in read.problems:
        logger.warning("%s", problem)
    events, skipped = [], list(read.skipped)
    for number, doc in read.events:
        try:
            events.append(from_dict(doc))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            logger.warning("%s:%d: skipped, not an OpenLineage event (%r)", path, number, e)
            skipped.append(number)
    return events, tuple(sorted(skipped))
