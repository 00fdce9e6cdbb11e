"""Wire it together: run dbt, listen, keep the artifacts, build the events, deliver them.

The only module that knows the order of things. It raises DbtOmlError for bad input and never
lets a lineage problem change dbt's result: the caller (cli) decides the exit code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from openlineage.client.event_v2 import RunEvent

from dbt_oml.artifacts import Catalog, Manifest, RunArtifacts, read_manifest
from dbt_oml.config import Settings, plan_settings
from dbt_oml.dbt.catalog_file import write_catalog
from dbt_oml.dbt.relation_columns import live_catalog
from dbt_oml.dbt.runner import (
    DbtContext,
    NodeFinished,
    NodeStarted,
    compiled_everything,
    run_dbt,
)
from dbt_oml.delivery.emitter import Delivery, Unconfigured
from dbt_oml.errors import ArtifactError, ConfigError, DbtOmlError
from dbt_oml.events.node_events import BUILD_COMMANDS, EventBuilder
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.lineage.workers import Prestarted
from dbt_oml.namespaces import override_error
from dbt_oml.pipeline.catalog import (
    CATALOG_COMMANDS,
    artifacts_with_catalog,
    catalog_by_docs_generate,
    catalog_phase,
    wrote_run_results,
)
from dbt_oml.pipeline.ends import EarlyLineage, start_early, terminal_events
from dbt_oml.pipeline.lineage import (
    closing_workers,
    prestart,
)
from dbt_oml.pipeline.memory import freeze_survivors, quiet_gc
from dbt_oml.pipeline.outbox import keep_durably, outbox_path
from dbt_oml.pipeline.report import Progress, Report, phase
from dbt_oml.pipeline.run_inputs import event_settings, invocation_of, namespaces_for
from dbt_oml.pipeline.running import RunningLineage
from dbt_oml.pipeline.sending import (
    add_bootstrap_plan,
    check_transport,
    delivery_for,
    make_emitter,
    verify_delivered,
)
from dbt_oml.pipeline.state_files import write_node_starts
from dbt_oml.redaction import Redactor

logger = logging.getLogger(__name__)


class LiveEmitter:
    """The dbt listener of `dbt-oml build`: sends the START events while dbt runs."""

    def __init__(
        self,
        settings: Settings,
        *,
        cwd: Path,
        report: Report,
        redactor: Redactor,
        prestart: bool = False,
    ) -> None:
        """`prestart`: dbt runs in dbt-oml's own process (`dbt-oml build`, which closes the
        workers; not the plugin, a guest in a plain dbt): the lineage workers of a cold pod
        start while dbt runs, and what dbt holds as its first node starts leaves the
        collector's passes (pipeline.memory.freeze_survivors)."""
        self.settings = settings
        self.cwd = cwd
        self.report = report
        self.redactor = redactor
        """The run's: the profile's secrets join the settings' when dbt has resolved it."""
        self.context: DbtContext | None = None
        self.delivery: Delivery | None = None
        self.builder: EventBuilder | None = None
        self._manifest_checked = False
        self.sent_starts: set[str] = set()
        self.sent_ends: set[str] = set()  # plugin mode: node runs ended as dbt finished them
        self.node_lineage: Mapping[str, ModelLineage] = {}  # plugin mode: lineage already made
        self.live_catalog: tuple[Catalog | None, str | None] | None = None
        #: catalog.json as the build's end wrote it (dbt.catalog_file), not read back from disk
        self.catalog_written: Catalog | None = None
        self.started: Prestarted | None = None  # lineage workers started while dbt runs
        self.early: EarlyLineage | None = None  # their work, started as the catalog came in
        self.running: RunningLineage | None = None  # they analyse each model dbt has built
        self.prestart = prestart
        self.held: list[RunEvent] | None = None  # until the manifest confirms an override
        self.refusal: ConfigError | None = None  # an override names no catalog: nothing is sent

    def on_invocation(self, context: DbtContext) -> None:
        self.context = context
        self.redactor.add(*context.secrets)
        namespaces = namespaces_for(self.settings, context.catalogs, self.cwd, self.report)
        outbox = outbox_path(self.settings, context.target_path, context.invocation_id)
        try:
            emitter, where = make_emitter(self.settings, context.target_path, self.redactor)
        except ConfigError as e:  # the plugin: dbt runs on, every event goes to the outbox
            logger.error("%s; events are kept in %s", e, outbox)  # noqa: TRY400 - user's config, no traceback
            emitter, where = Unconfigured(str(e)), "nowhere (transport not configured)"
        self.report.destination = where
        self.delivery = delivery_for(emitter, outbox=outbox, target=where, redactor=self.redactor)
        self.delivery.held = isinstance(emitter, Unconfigured)
        self.delivery.sent = [] if self.settings.emit.verify else None
        self.builder = EventBuilder(
            invocation=invocation_of(context),
            namespaces=namespaces,
            settings=event_settings(self.settings, self.cwd, context.project_root, self.redactor),
            manifest=Manifest(
                path="",
                dbt_version=context.dbt_version,
                invocation_id=None,
                adapter_type=context.adapter_type,
                project_name=context.project_name,
                nodes={},
            ),
        )
        self.settle(None)
        self._send(self.builder.parent_start())

    def settle(self, manifest: Manifest | None, *, final: bool = False) -> None:
        """Hold the events while only the manifest can confirm a namespace override's catalog;
        when one names no catalog of the profile or the manifest, send nothing (`refusal`)."""
        ctx, _, delivery = self.wired()
        nodes = manifest.nodes.values() if manifest else ()
        error = override_error(self.settings, [c.alias for c in ctx.catalogs], nodes)
        if error is not None and manifest is None and not final:
            self.held = self.held or []
        elif error is not None:  # plugin mode sends node ends itself: kept, not sent
            self.refusal, self.held, delivery.held = error, None, True
        else:
            held, self.held = self.held or [], None
            for event in held:
                self._send(event)

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

    def node_done(self, event: NodeFinished) -> None:
        """In the dbt thread that ran the node (`run_dbt`'s on_finished)."""
        if self.running is not None:
            self.running.finished(event.unique_id, event.status)

    def await_running(self, progress: Progress | None) -> None:
        """The analyses the lineage workers still have under way (`dbt-oml build`, cold pod)."""
        if self.running is not None:
            if waiting := self.running.submitted - self.running.answered:
                phase(progress, f"column lineage of the last {waiting} models dbt built")
            self.node_lineage = self.running.settle()

    def columns_at_end(self, context: DbtContext) -> None:
        """At the end of a command that gets node events but no `dbt docs generate` (`test`,
        or any with --no-docs-generate): the relations' real columns from the adapter dbt
        still holds, as the plugin reads them.

        One metadata query (DuckDB) inside the open connection instead of a second dbt
        invocation, and the same columns and types as plugin mode by construction.
        """
        if context.command not in BUILD_COMMANDS:
            return
        if self.running is not None:
            self.running.read_waiting()  # the models dbt finished last, to the workers
        if self.settings.dbt.docs_generate and context.command in CATALOG_COMMANDS:
            if compiled_everything(context):  # what `docs generate --no-compile` would write
                early = self.lineage_early if self.running is None else None
                written = write_catalog(context.target_path, early=early)
                if isinstance(written, str):
                    logger.debug("catalog.json by dbt docs generate: %s", written)
                else:
                    self.catalog_written = written
            return  # else catalog.json comes from `dbt docs generate`
        manifest = read_manifest(context.target_path / "manifest.json")
        self.live_catalog = live_catalog(manifest, now=datetime.now(timezone.utc))

    def lineage_early(self, catalog: Catalog) -> None:
        """dbt.catalog_file's `early`: the run's lineage starts on the catalog's rows."""
        if self.held is None and self.refusal is None:
            self.early = start_early(self, catalog)

    def wired(self) -> tuple[DbtContext, EventBuilder, Delivery]:
        """The context, builder and delivery that on_invocation set up.

        Raises:
            DbtOmlError: dbt has not started an invocation (events asked for before dbt ran).
        """
        if self.context is None or self.builder is None or self.delivery is None:
            raise DbtOmlError("no dbt invocation has started: there is nothing to send events for")
        return self.context, self.builder, self.delivery

    def _load_manifest(self, context: DbtContext) -> None:
        _, builder, _ = self.wired()
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
        builder.manifest = manifest
        if self.prestart:  # dbt-oml's own process (not the plugin's guest in a plain dbt)
            freeze_survivors()
        if self.held is not None:
            self.settle(manifest)
        if self.prestart and self.started is None and context.command in BUILD_COMMANDS:
            self.started = prestart(self.settings, manifest, context.target_path)
            if (
                self.settings.lineage.during_run
                and self.started is not None
                and self.started.running
                and context.adapter_type == "duckdb"
            ):
                # asked for only: at 500 models it cost the run 3.2 s and saved 0.7 s after
                # dbt (benchmarks/README.md 0e). DuckDB only: another adapter's columns would
                # take a query per relation in dbt's threads, which nothing here has measured
                self.running = RunningLineage(self.settings, manifest, context, self.started)

    def _send(self, event: RunEvent) -> None:
        _, _, delivery = self.wired()
        if self.refusal is not None:
            return
        if self.held is not None:
            self.held.append(event)
            return
        self.report.events_built += 1
        delivery.send(event)


def build(
    settings: Settings,
    dbt_args: Sequence[str],
    *,
    cwd: Path,
    redactor: Redactor,
    report: Report | None = None,
    progress: Progress | None = None,
    announce: Callable[[], None] | None = None,
) -> Report:
    """`dbt-oml <command> ...`: run dbt with live events, then the enriched terminal events.

    `report` is filled in as the run goes, so a caller still knows dbt's exit code if
    something after dbt fails; `announce` is called once the transport is checked.
    """
    from dbt_oml.dbt.own_runs import suppressed

    report = report if report is not None else Report()
    check_transport(settings)  # a typo in the transport must not cost a two-hour build
    if announce is not None:
        announce()
    live = LiveEmitter(settings, cwd=cwd, report=report, redactor=redactor, prestart=True)
    with suppressed():  # the dbt plugin stays inert inside dbt-oml's own dbt runs
        invocation = run_dbt(dbt_args, live, at_end=live.columns_at_end, on_finished=live.node_done)
        report.dbt_return_code = invocation.return_code
        report.dbt_error = invocation.error
        report.problems += invocation.listener_errors
        ctx = live.context
        if ctx is None or live.delivery is None:
            return report  # dbt stopped before resolving a profile (usage error, --version, ...)
        error = invocation.error
        artifacts = None
        try:
            if ctx.command in BUILD_COMMANDS and (live.early is not None or wrote_run_results(ctx)):
                write_node_starts(ctx, invocation.node_starts)
                artifacts = _artifacts(live, ctx, progress)
        except DbtOmlError as e:
            report.problems.append(str(e))
            error = error or str(e)
    try:
        with closing_workers(live.started):  # the lineage workers of a cold pod, used or not
            finish(
                live,
                artifacts,
                node_starts=invocation.node_starts,
                ended_at=invocation.ended_at,
                error=error,
                progress=progress,
            )
        if settings.lineage.explorer and artifacts is not None and not settings.emit.dry_run:
            phase(progress, "the lineage explorer page")
            _write_explorer(settings, ctx, artifacts, report)
    finally:
        if progress is not None:
            progress.end()
    return report


def _artifacts(live: LiveEmitter, ctx: DbtContext, progress: Progress | None) -> RunArtifacts:
    """The build's artifacts with its catalog: as read when the catalog came in (start_early),
    else now (after `dbt docs generate` when the build's end did not write catalog.json).

    Raises:
        ArtifactError: an artifact of the run is missing or unreadable.
    """
    settings, report = live.settings, live.report
    if live.catalog_written is None:
        phase(progress, catalog_phase(settings, ctx))
    if live.early is None:
        return artifacts_with_catalog(
            settings, ctx, report, live.live_catalog, catalog_written=live.catalog_written
        )
    if live.catalog_written is None:  # dbt's catalog objects failed after the early catalog
        catalog_by_docs_generate(settings, ctx, report)
    return live.early.artifacts


def plain(dbt_args: Sequence[str]) -> Report:
    """A dbt command that runs no nodes (`ls`, `compile`, `debug`, `deps`, ...): dbt alone, as
    dbt-ol leaves it: no events, no lines of dbt-oml's, dbt's exit code."""
    from dbt_oml.dbt.own_runs import suppressed

    report = Report()
    with suppressed():  # the dbt plugin too
        invocation = run_dbt(dbt_args)
    report.dbt_return_code = invocation.return_code
    report.dbt_error = invocation.error
    return report


def _write_explorer(
    settings: Settings, ctx: DbtContext, artifacts: RunArtifacts, report: Report
) -> None:
    """`--explorer`: the lineage page next to the events (the analyses come from the cache)."""
    from dbt_oml.pipeline.offline import build_explorer

    events = settings.transport.events_file or ctx.target_path / "openlineage" / "events.jsonl"
    try:
        report.explorer = build_explorer(
            artifacts,
            events.with_name("lineage.html"),
            project_dir=ctx.project_root,
            target_path=ctx.target_path,
            dialect=ctx.adapter_type,
            catalogs=ctx.catalogs,
            settings=settings,
        )
    except (DbtOmlError, OSError) as e:
        report.problems.append(f"the explorer page was not written: {e}")


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
    nothing, a parse error) only the invocation's run is ended. With --dry-run, the report
    also gets the OpenMetadata bootstrap plan for the console.
    """
    ctx, builder, delivery = live.wired()
    report = live.report
    if live.held is not None:
        live.settle(artifacts.manifest if artifacts else None, final=True)
    if live.refusal is not None:
        report.delivery = delivery.close()
        keep_durably(live.settings, ctx.target_path, report)
        raise live.refusal
    if artifacts is not None and artifacts.run_results is not None:
        # the end as run_results.json records it, as `dbt-oml emit` reads it: the same run then
        # always gives the same events (and the same JetStream de-duplication ids)
        ended_at = artifacts.run_results.generated_at or ended_at
    with quiet_gc():
        try:
            if artifacts is None:
                report.events_built += 1
                delivery.send(builder.parent_end(at=ended_at, error=error))
            else:
                live.await_running(progress)
                terminal_events(
                    live,
                    artifacts,
                    node_starts=node_starts,
                    ended_at=ended_at,
                    error=error,
                    progress=progress,
                )
        except DbtOmlError as e:
            report.problems.append(str(e))
            report.events_built += 1
            delivery.send(builder.parent_end(at=ended_at, error=error or str(e)))
        except Exception:
            # a dbt-oml bug: the invocation's run still ends as dbt ended it; the CLI reports it
            report.events_built += 1
            delivery.send(builder.parent_end(at=ended_at, error=error))
            raise
        finally:
            report.delivery = delivery.close()
    keep_durably(live.settings, ctx.target_path, report)
    verify_delivered(live.settings, delivery.sent, report, live.redactor)
    if live.settings.emit.dry_run:
        add_bootstrap_plan(plan_settings(live.settings), report)
