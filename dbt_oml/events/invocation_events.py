"""Every event of one dbt invocation, in time order: its START, its nodes' and tests' events,
its end.

Pure: no I/O, no environment; clocks and ids are inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import datetime
from functools import partial
from operator import itemgetter

from openlineage.client.event_v2 import RunEvent

from dbt_oml.artifacts import RunArtifacts
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.node_events import BUILD_COMMANDS, EventBuilder, Lineages
from dbt_oml.events.quality import per_test_events, skipped_tests, test_events
from dbt_oml.namespaces import Namespaces
from dbt_oml.times import format_time


def build_events(
    artifacts: RunArtifacts,
    *,
    invocation: Invocation,
    namespaces: Namespaces,
    settings: EventSettings,
    node_starts: Mapping[str, datetime] | None = None,
    ended_at: datetime | None = None,
    error: str | None = None,
    lineage: Lineages | None = None,
) -> list[RunEvent]:
    """Every event of an invocation, in time order: the parent START first, its end last.

    Args:
        artifacts: the invocation's manifest, run results and (optional) catalog.
        invocation: the dbt invocation the events describe.
        namespaces: the namespace of every catalog.
        settings: job namespace, naming, producer.
        node_starts: the real start time of each node, when it was observed live; otherwise
            each node's first timing entry in run_results.json is used.
        ended_at: when the invocation ended (default: the last node end, or its start).
        error: the invocation's error, if it failed.
        lineage: column lineage per model unique_id (models without an entry get none).
    """
    return list(
        iter_events(
            artifacts,
            invocation=invocation,
            namespaces=namespaces,
            settings=settings,
            node_starts=node_starts,
            ended_at=ended_at,
            error=error,
            lineage=lineage,
        )
    )


def iter_events(  # noqa: PLR0913 - keyword-only, each an input of the run's events
    artifacts: RunArtifacts,
    *,
    invocation: Invocation,
    namespaces: Namespaces,
    settings: EventSettings,
    node_starts: Mapping[str, datetime] | None = None,
    ended_at: datetime | None = None,
    error: str | None = None,
    lineage: Lineages | None = None,
    started_live: Collection[str] = frozenset(),
) -> Iterator[RunEvent]:
    """`build_events`, one event at a time: each node event is built only when it is next, so a
    caller that sends as it goes holds one event, not a run's worth (arguments as there).
    `started_live`: the run ids of node STARTs already sent (a build's, while dbt ran): those
    are not built again."""
    builder = EventBuilder(
        invocation=invocation,
        namespaces=namespaces,
        settings=settings,
        manifest=artifacts.manifest,
        catalog=artifacts.catalog,
        lineage=lineage or {},
    )
    body: list[tuple[str, Callable[[], RunEvent | None]]] = []
    results = artifacts.run_results.results if artifacts.run_results else ()
    for result in results:
        # a node that failed before dbt timed it (or whose timing does not read) still ran: it
        # starts with the invocation
        started = (node_starts or {}).get(result.unique_id) or result.started_at
        started = started or (invocation.started_at if result.status != "skipped" else None)
        node = builder.manifest.get(result.unique_id)
        if started is None or result.status == "skipped" or not builder.emits_for(node):
            continue  # no run of its own (node_start/node_end give none)
        if builder.node_run_id(result.unique_id, started) not in started_live:
            start = partial(builder.node_start, result.unique_id, started)
            body.append((format_time(started), start))
        ended = format_time(result.completed_at or started)
        body.append((ended, partial(builder.node_end, result, started)))
    if invocation.command in BUILD_COMMANDS:
        tests = test_events(builder, results) + per_test_events(builder, results)
        body += [(e.eventTime, partial(_same, e)) for e in tests]
    body.sort(key=itemgetter(0))  # stable: a node's START before its end at the same instant
    last = body[-1][0] if body else None
    ends = [r.completed_at for r in results if r.completed_at]
    end_at = ended_at or max(ends, default=invocation.started_at)
    if last is not None and format_time(end_at) < last:
        end_at = max(ends, default=end_at)
    yield builder.parent_start()
    for _, make in body:
        event = make()
        if event is not None:
            yield event
    end = builder.parent_end(at=end_at, error=error)
    if invocation.command in BUILD_COMMANDS:  # tests dbt skipped have no run of their own
        end.run.facets = {**(end.run.facets or {}), **skipped_tests(builder, results, at=end_at)}
    yield end


def _same(event: RunEvent) -> RunEvent:
    return event
