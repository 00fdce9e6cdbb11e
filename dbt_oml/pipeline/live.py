"""Wire it together: run dbt, listen, keep the artifacts, build the events, deliver them.

The only module that knows the order of things. It raises DbtOmlError for bad input and never
lets a lineage problem change dbt's result: the caller (cli) decides the exit code.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from openlineage.client.event_v2 import RunEvent, RunState

from dbt_oml.artifacts import (
    KEPT_MANIFEST,
    KEPT_RUN_RESULTS,
    Catalog,
    Column,
    Manifest,
    Node,
    RunArtifacts,
    read_artifacts,
    read_manifest,
)
from dbt_oml.config import Settings
from dbt_oml.dbt.relation_columns import live_catalog
from dbt_oml.dbt.runner import (
    DbtContext,
    NodeStarted,
    docs_generate_args,
    run_dbt,
)
from dbt_oml.delivery.emitter import Delivery, Unconfigured
from dbt_oml.errors import ArtifactError, ConfigError, DbtOmlError
from dbt_oml.events.builder import (
    BUILD_COMMANDS,
    EventBuilder,
    iter_events,
)
from dbt_oml.lineage.batch import ColumnLookup
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.pipeline.lineage import column_lineage_for
from dbt_oml.pipeline.run_state import (
    Progress,
    Report,
    check_transport,
    copies_column_lineage,
    event_settings,
    invocation_of,
    make_emitter,
    namespaces_for,
    outbox_path,
    quiet_gc,
    write_node_starts,
)

logger = logging.getLogger(__name__)

#: Commands that change relations, after which `dbt docs generate` is worth its time.
CATALOG_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "retry"})


class LiveEmitter:
    """The dbt listener of `dbt-oml build`: sends the START events while dbt runs."""

    def __init__(self, settings: Settings, *, cwd: Path, report: Report) -> None:
        self.settings = settings
        self.cwd = cwd
        self.report = report
        self.context: DbtContext | None = None
        self.delivery: Delivery | None = None
        self.builder: EventBuilder | None = None
        self._manifest_checked = False
        self.sent_starts: set[str] = set()
        self.sent_ends: set[str] = set()  # plugin mode: node runs ended as dbt finished them
        self.node_lineage: Mapping[str, ModelLineage] = {}  # plugin mode: lineage already made
        self.live_catalog: tuple[Catalog | None, str | None] | None = None

    def on_invocation(self, context: DbtContext) -> None:
        self.context = context
        namespaces = namespaces_for(self.settings, context.catalogs, self.cwd, self.report)
        outbox = outbox_path(self.settings, context.target_path, context.invocation_id)
        try:
            emitter, where = make_emitter(self.settings, context.target_path)
        except ConfigError as e:  # the plugin: dbt runs on, every event goes to the outbox
            logger.error("%s; events are kept in %s", e, outbox)
            emitter, where = Unconfigured(str(e)), "nowhere (transport not configured)"
        self.report.destination = where
        self.delivery = Delivery(emitter, outbox=outbox, target=where)
        self.delivery.held = isinstance(emitter, Unconfigured)
        self.builder = EventBuilder(
            invocation=invocation_of(context),
            namespaces=namespaces,
            settings=event_settings(
                self.settings,
                self.cwd,
                context.project_root,
                copy_column_lineage=copies_column_lineage(emitter),
            ),
            manifest=Manifest(
                path="",
                dbt_version=context.dbt_version,
                invocation_id=None,
                adapter_type=context.adapter_type,
                project_name=context.project_name,
                nodes={},
            ),
        )
        self._send(self.builder.parent_start())

    def on_node_start(self, event: NodeStarted) -> None:
        if self.builder is None or self.context is None:
            return
        if not self._manifest_checked:
            self._manifest_checked = True
            self._load_manifest(self.context)
        start = self.builder.node_start(event.unique_id, event.started_at)
        if start is not None:
            self.sent_starts.add(start.run.runId)
            self._send(start)

    def columns_at_end(self, context: DbtContext) -> None:
        """At the end of a command that gets node events but no `dbt docs generate` (`test`,
        or any with --no-docs-generate): the relations' real columns from the adapter dbt
        still holds, as the plugin reads them.

        One metadata query (DuckDB) inside the open connection instead of a second dbt
        invocation, and the same columns and types as plugin mode by construction.
        """
        if context.command not in BUILD_COMMANDS:
            return
        if self.settings.docs_generate and context.command in CATALOG_COMMANDS:
            return  # catalog.json comes from `dbt docs generate`
        manifest = read_manifest(context.target_path / "manifest.json")
        self.live_catalog = live_catalog(manifest, now=datetime.now(timezone.utc))

    def _load_manifest(self, context: DbtContext) -> None:
        assert self.builder is not None
        try:
            manifest = read_manifest(context.target_path / "manifest.json")
        except ArtifactError as e:
            self.report.problems.append(f"live START events skipped: {e}")
            return
        if manifest.invocation_id != context.invocation_id:
            self.report.problems.append(
                "live START events skipped: manifest.json was not written by this invocation "
                "(--no-write-json?)"
            )
            return
        self.builder.manifest = manifest

    def _send(self, event: RunEvent) -> None:
        assert self.delivery is not None
        self.report.events_built += 1
        self.delivery.send(event)


def _keep_build_artifacts(ctx: DbtContext) -> bool:
    """Copy the build's run_results/manifest aside before docs generate overwrites them.

    Returns False when run_results.json was not written by this invocation (a parse error).
    """
    target = ctx.target_path
    results = target / "run_results.json"
    try:
        doc = json.loads(results.read_text(encoding="utf-8"))
        invocation = doc.get("metadata", {}).get("invocation_id")
    except (OSError, ValueError, AttributeError):
        return False
    if invocation != ctx.invocation_id:
        return False
    shutil.copyfile(results, target / KEPT_RUN_RESULTS)
    if (target / "manifest.json").exists():
        shutil.copyfile(target / "manifest.json", target / KEPT_MANIFEST)
    return True


def catalog_lookup(emitter: object, builder: EventBuilder) -> ColumnLookup | None:
    """Columns the configured transport's catalog holds (OpenMetadata: ingested tables)."""
    columns_for = getattr(getattr(emitter, "transport", None), "columns_for", None)
    if not callable(columns_for):
        return None

    def lookup(node: Node) -> tuple[Column, ...] | None:
        ref = builder.dataset(node)
        found = columns_for(ref.namespace, ref.name)
        return tuple(Column(name=n, type=t) for n, t in found) if found else None

    return lookup


def build(
    settings: Settings,
    dbt_args: Sequence[str],
    *,
    cwd: Path,
    report: Report | None = None,
    progress: Progress | None = None,
) -> Report:
    """`dbt-oml <command> ...`: run dbt with live events, then the enriched terminal events.

    `report` is filled in as the run goes, so a caller still knows dbt's exit code if
    something after dbt fails.
    """
    from dbt_oml.dbt.own_runs import suppressed

    report = report if report is not None else Report()
    check_transport(settings)  # a typo in the transport must not cost a two-hour build
    live = LiveEmitter(settings, cwd=cwd, report=report)
    with suppressed():  # the dbt plugin stays inert inside dbt-oml's own dbt runs
        invocation = run_dbt(dbt_args, live, at_end=live.columns_at_end)
        report.dbt_return_code = invocation.return_code
        report.dbt_error = invocation.error
        report.problems += invocation.listener_errors
        ctx = live.context
        if ctx is None or live.delivery is None:
            return report  # dbt stopped before resolving a profile (usage error, --version, ...)
        error = invocation.error
        artifacts = None
        try:
            if ctx.command in BUILD_COMMANDS and _keep_build_artifacts(ctx):
                write_node_starts(ctx, invocation.node_starts)
                artifacts = _artifacts_with_catalog(settings, ctx, report, live.live_catalog)
        except DbtOmlError as e:
            report.problems.append(str(e))
            error = error or str(e)
    finish(
        live,
        artifacts,
        node_starts=invocation.node_starts,
        ended_at=invocation.ended_at,
        error=error,
        progress=progress,
    )
    if settings.explorer and artifacts is not None and not settings.dry_run:
        _write_explorer(settings, ctx, artifacts, report)
    return report


def _write_explorer(
    settings: Settings, ctx: DbtContext, artifacts: RunArtifacts, report: Report
) -> None:
    """`--explorer`: the lineage page next to the events (the analyses come from the cache)."""
    from dbt_oml.pipeline.offline import build_explorer

    events = settings.events_file or ctx.target_path / "openlineage" / "events.jsonl"
    try:
        report.explorer = build_explorer(
            artifacts,
            events.with_name("lineage.html"),
            project_dir=ctx.project_root,
            target_path=ctx.target_path,
            dialect=ctx.adapter_type,
            default_catalog=ctx.catalogs[0].alias if ctx.catalogs else None,
        )
    except (DbtOmlError, OSError) as e:
        report.problems.append(f"the explorer page was not written: {e}")


def _artifacts_with_catalog(
    settings: Settings,
    ctx: DbtContext,
    report: Report,
    live: tuple[Catalog | None, str | None] | None = None,
) -> RunArtifacts:
    """The build's artifacts, with this run's catalog.json (from `dbt docs generate`), or the
    columns read from the warehouse at the end of the command (`live`, for `test`).

    A catalog.json written before this invocation started (docs generate off or failed) is
    not this run's: the declared columns are used instead. An unreadable one is a warning.
    """
    if settings.docs_generate and ctx.command in CATALOG_COMMANDS:
        docs = run_dbt(docs_generate_args(ctx))
        if docs.return_code != 0:
            report.problems.append(
                f"dbt docs generate failed ({docs.error}); schema facets use the declared columns"
            )
    artifacts = read_artifacts(ctx.target_path)
    report.problems += artifacts.problems
    catalog = artifacts.catalog
    if live is not None:
        catalog, problem = live
        report.problems += [problem] if problem else []
    elif catalog is not None and (
        catalog.generated_at is None or catalog.generated_at < ctx.started_at
    ):
        catalog = None
    return replace(artifacts, catalog=catalog)


def finish(
    live: LiveEmitter,
    artifacts: RunArtifacts | None,
    *,
    node_starts: Mapping[str, datetime],
    ended_at: datetime,
    error: str | None,
    progress: Progress | None = None,
) -> None:
    """After dbt: the terminal events (column lineage included), then close the delivery.

    Shared by `dbt-oml build` and the dbt plugin. Without artifacts (a command that builds
    nothing, a parse error) only the invocation's run is ended.
    """
    with quiet_gc():
        _finish(
            live,
            artifacts,
            node_starts=node_starts,
            ended_at=ended_at,
            error=error,
            progress=progress,
        )


def _finish(
    live: LiveEmitter,
    artifacts: RunArtifacts | None,
    *,
    node_starts: Mapping[str, datetime],
    ended_at: datetime,
    error: str | None,
    progress: Progress | None = None,
) -> None:
    settings, report = live.settings, live.report
    builder, delivery, ctx = live.builder, live.delivery, live.context
    if artifacts is not None and artifacts.run_results is not None:
        # the end as run_results.json records it, as `dbt-oml emit` reads it: the same run then
        # always gives the same events (and the same JetStream de-duplication ids)
        ended_at = artifacts.run_results.generated_at or ended_at
    assert builder is not None
    assert delivery is not None
    assert ctx is not None
    try:
        if artifacts is None:
            report.events_built += 1
            delivery.send(builder.parent_end(at=ended_at, error=error))
            return
        lineage = column_lineage_for(
            settings,
            artifacts,
            project_root=ctx.project_root,
            target_path=ctx.target_path,
            dialect=ctx.adapter_type,
            default_catalog=ctx.catalogs[0].alias if ctx.catalogs else None,
            report=report,
            progress=progress,
            extra=catalog_lookup(delivery.emitter, builder),
            known=live.node_lineage,
        )
        events = iter_events(
            artifacts,
            invocation=builder.invocation,
            namespaces=builder.namespaces,
            settings=builder.settings,
            node_starts=node_starts,
            ended_at=ended_at,
            error=error,
            lineage=lineage,
        )
        delivery.held = delivery.held or report.refused is not None
        next(events)  # the parent START went out live; each event is built, sent, dropped
        held: RunEvent | None = None  # the invocation's end: the aborts go before it
        for event in events:
            if held is not None:
                _send_terminal(live, held)
            held = event
        for last in [*_aborts(builder, artifacts, live.sent_starts, node_starts), held]:
            if last is not None:
                _send_terminal(live, last)
    except DbtOmlError as e:
        report.problems.append(str(e))
        report.events_built += 1
        delivery.send(builder.parent_end(at=ended_at, error=error or str(e)))
    except Exception:
        # a dbt-oml bug: the invocation's run still ends as dbt ended it; the CLI reports the bug
        report.events_built += 1
        delivery.send(builder.parent_end(at=ended_at, error=error))
        raise
    finally:
        report.delivery = delivery.close()


def _send_terminal(live: LiveEmitter, event: RunEvent) -> None:
    """Send an event of the end of the run, unless it is a START that went out live."""
    if event.eventType is RunState.START and event.run.runId in live.sent_starts:
        return
    if event.eventType is not RunState.START and event.run.runId in live.sent_ends:
        return
    assert live.delivery is not None
    live.report.events_built += 1
    live.delivery.send(event)


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
