"""The end of a run: each node's terminal event with its column lineage, the ABORTs of the
nodes dbt started and then skipped, and the invocation's end, each built, sent and dropped.

Called by pipeline.live's `finish` (the wrapper's and the plugin's end of the run); the node
STARTs and ends that went out live are not sent again. On a cold pod the wrapper's lineage may
start earlier, on the catalog the build's end has just read (`start_early`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from openlineage.client.event_v2 import RunEvent, RunState

from dbt_oml.artifacts import Catalog, RunArtifacts
from dbt_oml.errors import DbtOmlError
from dbt_oml.events.invocation_events import iter_events
from dbt_oml.events.node_events import EventBuilder
from dbt_oml.lineage.workers import STARTUP
from dbt_oml.pipeline.catalog import artifacts_with_catalog, catalog_lookup, wrote_run_results
from dbt_oml.pipeline.feed import LineageFeed
from dbt_oml.pipeline.lineage import ProjectPlace, lineage_feed
from dbt_oml.pipeline.report import Progress, phase
from dbt_oml.pipeline.sending import reaches_openmetadata

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from dbt_oml.config import Settings
    from dbt_oml.dbt.runner import DbtContext
    from dbt_oml.delivery.emitter import Delivery
    from dbt_oml.lineage.model import ModelLineage
    from dbt_oml.lineage.workers import Prestarted
    from dbt_oml.pipeline.report import Report


class LiveRun(Protocol):
    """What the end of a run needs of the run's listener (pipeline.live.LiveEmitter)."""

    settings: Settings
    report: Report
    node_lineage: Mapping[str, ModelLineage]
    started: Prestarted | None
    sent_starts: set[str]
    sent_ends: set[str]
    early: EarlyLineage | None

    def wired(self) -> tuple[DbtContext, EventBuilder, Delivery]: ...


class HeldProgress:
    """A counted phase's advances, held until the phase is shown: lineage that starts while dbt
    still has the console (`start_early`) shows its count once the end of the run says what
    is counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._to: Callable[[int, int], None] | None = None
        self._last: tuple[int, int] | None = None

    def advance(self, done: int, total: int) -> None:
        with self._lock:
            self._last = (done, total)
            if self._to is not None:
                self._to(done, total)

    def show(self, to: Callable[[int, int], None] | None) -> None:
        """From now on advances go to `to` (None: nowhere), the last one held first."""
        with self._lock:
            self._to = to
            if to is not None and self._last is not None:
                to(*self._last)


@dataclass(frozen=True, slots=True)
class EarlyLineage:
    """The run's column lineage, started on the catalog the build's end read (`start_early`)."""

    feed: LineageFeed
    artifacts: RunArtifacts
    """The run's artifacts as read then, with that catalog: the end of the run's."""
    progress: HeldProgress


def start_early(live: LiveRun, catalog: Catalog) -> EarlyLineage | None:
    """The run's column lineage, started in the lineage workers on the catalog the build's end
    has just read from the adapter (dbt.catalog_file's `early`), while dbt's catalog objects
    and catalog.json are still to be made: at 500 models the workers get them 0.05-0.09 s
    sooner (benchmarks/README.md 0l).

    Only with workers started for the run (`live.started`) and a run_results.json of this
    invocation. Returns once the workers have the models (or the lineage has ended), so that
    they start before the rest of the catalog's work; None: nothing started, the end of the
    run starts the lineage as it would have (`terminal_events`)."""
    ctx, _, _ = live.wired()
    started = live.started
    if started is None or not started.running or not wrote_run_results(ctx):
        return None
    try:
        artifacts = artifacts_with_catalog(live.settings, ctx, live.report, catalog_written=catalog)
    except DbtOmlError:
        return None  # read again after dbt, where what is wrong is reported
    held = HeldProgress()
    feed = _lineage(live, artifacts, held.advance)
    started.dispatched.wait(STARTUP)
    logger.debug("column lineage: started on the catalog's rows, before catalog.json is written")
    return EarlyLineage(feed=feed, artifacts=artifacts, progress=held)


def terminal_events(
    live: LiveRun,
    artifacts: RunArtifacts,
    *,
    node_starts: Mapping[str, datetime],
    ended_at: datetime,
    error: str | None,
    progress: Progress | None,
) -> None:
    """The enriched end of every node and of the invocation, each built, sent and dropped.

    On a cold pod the models are analysed by the lineage workers while the events of the ones
    analysed first are built and sent (pipeline.feed), as `dbt-oml emit` does."""
    report = live.report
    _, builder, delivery = live.wired()
    guard = reaches_openmetadata(delivery.emitter)
    phase(progress, f"column lineage and events to {report.destination or 'the transport'}")
    advance = progress.advance if progress is not None else None
    if live.early is not None:
        lineage = live.early.feed
        live.early.progress.show(advance)
    else:
        lineage = _lineage(live, artifacts, advance)
    if guard:
        lineage.decided()  # the run-level guard is known before anything is sent
    events = iter_events(
        artifacts,
        invocation=builder.invocation,
        namespaces=builder.namespaces,
        settings=builder.settings,
        node_starts=node_starts,
        ended_at=ended_at,
        error=error,
        lineage=lineage,  # each model's events wait for its lineage only
        started_live=live.sent_starts,
    )
    delivery.held = delivery.held or report.refused is not None
    next(events)  # the parent START went out live
    held: RunEvent | None = None  # the invocation's end: the aborts go before it
    for event in events:
        if held is not None:
            _send_terminal(live, held)
        held = event
    for last in [*_aborts(builder, artifacts, live.sent_starts, node_starts), held]:
        if last is not None:
            _send_terminal(live, last)
    lineage.result()


def _lineage(
    live: LiveRun, artifacts: RunArtifacts, progress: Callable[[int, int], None] | None
) -> LineageFeed:
    """The run's column lineage as it comes (pipeline.lineage.lineage_feed), in its workers."""
    ctx, builder, delivery = live.wired()
    return lineage_feed(
        live.settings,
        artifacts,
        place=place_of(ctx),
        report=live.report,
        progress=progress,
        extra=catalog_lookup(delivery.emitter, builder),
        known=live.node_lineage,
        guard=reaches_openmetadata(delivery.emitter),
        started=live.started,
    )


def place_of(ctx: DbtContext) -> ProjectPlace:
    """Where the run's project makes its lineage."""
    return ProjectPlace(
        project_root=ctx.project_root,
        target_path=ctx.target_path,
        dialect=ctx.adapter_type,
        default_catalog=ctx.catalogs[0].alias if ctx.catalogs else None,
    )


def _send_terminal(live: LiveRun, event: RunEvent) -> None:
    """Send an event of the end of the run, unless its run ended live (plugin mode); the STARTs
    that went out live are not built at all (iter_events' started_live)."""
    if event.eventType is not RunState.START and event.run.runId in live.sent_ends:
        return
    _, _, delivery = live.wired()
    live.report.events_built += 1
    delivery.send(event)


def _aborts(
    builder: EventBuilder,
    artifacts: RunArtifacts,
    sent: set[str],
    starts: Mapping[str, datetime],
) -> list[RunEvent]:
    """dbt fires NodeStart before it decides to skip a node: end those runs with ABORT."""
    out = []
    for result in artifacts.run_results.results if artifacts.run_results else ():
        started = starts.get(result.unique_id)
        if result.status != "skipped" or started is None:
            continue
        if builder.node_run_id(result.unique_id, started) not in sent:
            continue
        event = builder.node_abort(result.unique_id, started, result.completed_at or started)
        if event is not None:
            out.append(event)
    return out
