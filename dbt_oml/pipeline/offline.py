"""The commands that work on existing artifacts without running dbt: emit, replay, lineage.

dbt's own loaders resolve the project, profile and target (dbt.project.resolve_project), so
DBT_* variables and profile Jinja work exactly as for dbt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from openlineage.client.event_v2 import RunEvent

from dbt_oml.artifacts import RunArtifacts, RunResults, failure_summary, read_artifacts
from dbt_oml.config import Settings, plan_settings
from dbt_oml.dbt.project import ProjectOptions, ResolvedProject, resolve_project
from dbt_oml.delivery.claims import claim, recover, release, set_aside
from dbt_oml.delivery.emitter import Delivery, read_kept
from dbt_oml.delivery.outbox import REJECTED_SUFFIX
from dbt_oml.errors import ArtifactError
from dbt_oml.events.invocation import Invocation
from dbt_oml.events.invocation_events import iter_events
from dbt_oml.lineage.view import LineageView
from dbt_oml.namespaces import CatalogSpec, Namespaces, override_error, resolve_namespaces
from dbt_oml.pipeline.feed import LineageFeed
from dbt_oml.pipeline.lineage import (
    ProjectPlace,
    lineage_cache,
    lineage_feed,
    prestarted,
    project_graph,
)
from dbt_oml.pipeline.memory import one_heap, quiet_gc, release_freed
from dbt_oml.pipeline.outbox import keep_durably, outbox_folder, outbox_path, remote_outbox
from dbt_oml.pipeline.report import Progress, Report, phase
from dbt_oml.pipeline.run_inputs import event_settings, namespaces_for
from dbt_oml.pipeline.sending import (
    add_bootstrap_plan,
    delivery_for,
    make_emitter,
    reaches_openmetadata,
    verify_delivered,
)
from dbt_oml.pipeline.state_files import STATE_DIR, read_node_starts
from dbt_oml.redaction import Redactor

logger = logging.getLogger(__name__)
#: Called once before the transport is made: the CLI says where the events go.
Announce = Callable[[], None]


def _run_results(project: ResolvedProject, artifacts: RunArtifacts) -> RunResults:
    if artifacts.run_results is None:
        raise ArtifactError(
            path=str(project.target_path / "run_results.json"),
            reason="not found",
            hint="run dbt (or dbt-oml) first",
        )
    return artifacts.run_results


def _invocation(project: ResolvedProject, artifacts: RunArtifacts) -> Invocation:
    results = _run_results(project, artifacts)
    return Invocation(
        invocation_id=results.invocation_id or artifacts.manifest.invocation_id or "unknown",
        started_at=results.invocation_started_at
        or results.generated_at
        or datetime.now(timezone.utc),
        command=results.command or "build",
        project_name=artifacts.manifest.project_name or project.project_name,
        project_version=project.project_version,
        profile_name=project.profile_name,
        dbt_version=results.dbt_version,
        adapter_type=project.adapter_type,
        selected=results.selected,
        selector=results.args.get("selector") or None,
    )


def emit(
    settings: Settings,
    options: ProjectOptions,
    *,
    cwd: Path,
    redactor: Redactor,
    announce: Announce | None = None,
    progress: Progress | None = None,
    plan: bool = True,
) -> Report:
    """`dbt-oml emit`: build and send the events of existing artifacts, without running dbt.

    `redactor` is the command's (the profile's secrets join it); `announce` is called once the
    artifacts and settings are checked, before the transport is made (the CLI's line saying
    where events go); `progress` hears each phase; `plan`: a dry run asks OM for its bootstrap
    plan (`verify`, which reads OM itself, does not)."""
    one_heap()  # before the lineage and pool threads start
    with quiet_gc():
        try:
            return _emit(
                settings,
                options,
                cwd=cwd,
                redactor=redactor,
                announce=announce,
                progress=progress,
                plan=plan,
            )
        finally:
            if progress is not None:
                progress.end()


def _place(project: ResolvedProject) -> ProjectPlace:
    return ProjectPlace(
        project_root=project.project_dir,
        target_path=project.target_path,
        dialect=project.adapter_type,
        default_catalog=project.catalogs[0].alias if project.catalogs else None,
    )


def _emit(
    settings: Settings,
    options: ProjectOptions,
    *,
    cwd: Path,
    redactor: Redactor,
    announce: Announce | None,
    progress: Progress | None,
    plan: bool,
) -> Report:
    report = Report()
    project = resolve_project(options)
    redactor.add(*project.secrets)
    artifacts = read_artifacts(project.target_path)
    release_freed()  # the JSON documents' pages, before the lineage workers start work
    report.problems += artifacts.problems
    invocation = _invocation(project, artifacts)
    results = _run_results(project, artifacts)
    failed = [r for r in results.results if r.status in {"error", "fail"}]
    nodes = artifacts.manifest.nodes.values()
    error = override_error(settings, [c.alias for c in project.catalogs], nodes)
    if error is not None:  # before anything is sent: a typo in a catalog name would do nothing
        raise error
    if announce is not None:
        announce()
    with prestarted(settings, artifacts.manifest, project.target_path) as started:
        emitter, report.destination = make_emitter(settings, project.target_path, redactor)
        guard = reaches_openmetadata(emitter)
        phase(progress, f"column lineage and events to {report.destination}")
        lineage = lineage_feed(
            settings,
            artifacts,
            place=_place(project),
            report=report,
            progress=progress.advance if progress is not None else None,
            guard=guard,
            started=started,
        )
        events = iter_events(
            artifacts,
            invocation=invocation,
            namespaces=namespaces_for(settings, project.catalogs, cwd, report),
            settings=event_settings(settings, cwd, project.project_dir, redactor),
            node_starts=read_node_starts(project.target_path, invocation.invocation_id),
            ended_at=results.generated_at,
            error=failure_summary((r.unique_id, r.status) for r in failed) if failed else None,
            lineage=lineage,  # each model's events wait for its lineage only
        )
        outbox = outbox_path(settings, project.target_path, invocation.invocation_id)
        delivery = delivery_for(
            emitter, outbox=outbox, target=report.destination, redactor=redactor
        )
        _send(events, delivery, lineage, report=report, guard=guard, verify=settings.emit.verify)
    report.delivery = delivery.close()
    keep_durably(settings, project.target_path, report)
    verify_delivered(settings, delivery.sent, report, redactor)
    if settings.emit.dry_run and plan:
        add_bootstrap_plan(plan_settings(settings), report)
    return report


def _send(
    events: Iterator[RunEvent],
    delivery: Delivery,
    lineage: LineageFeed,
    *,
    report: Report,
    guard: bool,
    verify: bool,
) -> None:
    """Each event built, sent and dropped in turn, while the lineage still comes; `guard`: the
    run-level guard (no model with column lineage) is known before anything is sent."""
    if guard:
        lineage.decided()
    delivery.held = report.refused is not None
    delivery.sent = [] if verify else None
    for event in events:
        report.events_built += 1
        delivery.send(event)
    lineage.result()


def outbox_files(settings: Settings, target_path: Path) -> tuple[Path | str, list[Path]]:
    """The outbox of a project's target (a durable one's URL), and the files `dbt-oml flush` sends.

    `*.rejected.jsonl` (events the server refused for good, lines that are no event) stay where
    they are: `dbt-oml replay FILE` sends them on purpose, flush never. With a durable outbox,
    the objects waiting there are claimed and copied into the local outbox first (remote.pull).
    """
    outbox = outbox_folder(settings, target_path)
    if outbox.is_dir():
        recover(outbox)
    remote = remote_outbox(settings)
    if remote is not None:
        pulled = remote.pull(outbox)
        for note in pulled.notes:
            logger.info("%s", note)
        for problem in pulled.problems:
            logger.warning("%s", problem)
    files = sorted(outbox.glob("*.jsonl")) if outbox.is_dir() else []
    for folder in (f for f in files if not f.is_file()):
        logger.warning("%s: a directory, not an outbox file: left alone", folder)
    kept = [f for f in files if f.is_file() and not f.name.endswith(REJECTED_SUFFIX)]
    return (remote.display if remote is not None else outbox), kept


def replay(
    settings: Settings,
    files: Sequence[Path],
    *,
    target_path: Path,
    redactor: Redactor,
    announce: Announce | None = None,
) -> Report:
    """`dbt-oml replay FILE...` / `dbt-oml flush`: send kept events again.

    The files are set aside while their events are sent; whatever is still not accepted is kept
    again in the outbox (by dbt-oml, or by a batching transport such as OpenMetadata's), so only
    what was delivered leaves it.
    """
    report = Report()
    if announce is not None:
        announce()
    emitter, report.destination = make_emitter(settings, target_path, redactor)
    staged = claim(files) if emitter is not None else list(files)
    kept = {path: read_kept(path) for path in staged}
    events = [event for file_events, _ in kept.values() for event in file_events]
    report.events_built = len(events)
    if emitter is None:
        staged = []
    first = files[0] if files else target_path / STATE_DIR / "outbox" / "replay.jsonl"
    retry = first.with_name(f"{first.stem}.retry.jsonl")
    delivery = delivery_for(emitter, outbox=retry, target=report.destination, redactor=redactor)
    delivery.sent = [] if settings.emit.verify else None
    delivery.send_all(events)
    report.delivery = delivery.close()
    verify_delivered(settings, delivery.sent, report, redactor)
    for path in staged:
        _set_aside(path, kept[path][1], redactor)
        release(path, all_delivered=not report.delivery.failed)
    remote = remote_outbox(settings)
    if remote is not None:  # kept again: up; then what the claims were copied from: gone
        synced = remote.settle(outbox_folder(settings, target_path), staged)
        report.delivery.notes += synced.notes
        report.problems += synced.problems
        if report.delivery.failed and not synced.problems:  # kept again, and up there
            report.delivery.kept_remotely = remote.display
    if settings.emit.dry_run:
        add_bootstrap_plan(plan_settings(settings), report)
    return report


def _set_aside(claimed: Path, skipped: tuple[int, ...], redactor: Redactor) -> None:
    """Keep a claim's lines that are no event (each already warned about) before it goes."""
    rejected = set_aside(claimed, skipped, redactor)
    if rejected is not None:
        logger.warning(
            "%d line(s) that are no event kept in %s (never sent by flush)",
            len(skipped),
            rejected,
        )


def lineage_view(
    options: ProjectOptions, settings: Settings | None = None
) -> tuple[LineageView, tuple[str, ...], int]:
    """`dbt-oml lineage`: analyse every model of existing artifacts, for tracing upstream; with
    the models and snapshots that have no compiled SQL (a partial run's), and how many in all.
    `settings` name the shared lineage cache, if any (a new pod's analyses come from there)."""
    from dbt_oml.pipeline.impact import uncompiled_models

    project = resolve_project(options)
    artifacts = read_artifacts(project.target_path)
    view = view_of(
        artifacts,
        project_dir=project.project_dir,
        target_path=project.target_path,
        dialect=project.adapter_type,
        default_catalog=project.catalogs[0].alias if project.catalogs else None,
        namespaces=resolve_namespaces(
            project.catalogs, overrides={}, cwd=str(project.project_dir)
        ).namespaces,
        settings=settings,
    )
    return (view, *uncompiled_models(artifacts))


def view_of(
    artifacts: RunArtifacts,
    *,
    project_dir: Path,
    target_path: Path,
    dialect: str,
    default_catalog: str | None,
    namespaces: Namespaces | None = None,
    settings: Settings | None = None,
) -> LineageView:
    """The column graph of every model of these artifacts (cached analyses reused, those of the
    shared lineage cache `settings` name too); with the catalogs' namespaces, each relation of
    the explorer shows where it lives."""
    project = artifacts.manifest.project_name
    _, graph = project_graph(
        artifacts,
        project_dir=project_dir,
        dialect=dialect,
        default_catalog=default_catalog,
        cache=lineage_cache(target_path, settings, project=project),
    )
    return LineageView(graph, namespaces=namespaces)


def build_explorer(
    artifacts: RunArtifacts,
    path: Path,
    *,
    project_dir: Path,
    target_path: Path,
    dialect: str,
    catalogs: Sequence[CatalogSpec],
    settings: Settings,
) -> Path:
    """`dbt-oml build --explorer`: the whole project's explorer page from the run's artifacts,
    each relation with the namespace its events carry."""
    from dbt_oml.lineage.view import Query, answer

    resolution = resolve_namespaces(
        catalogs,
        overrides=settings.namespace.namespaces,
        duckdb_default=settings.namespace.duckdb_namespace,
        cwd=str(project_dir),
    )
    view = view_of(
        artifacts,
        project_dir=project_dir,
        target_path=target_path,
        dialect=dialect,
        default_catalog=catalogs[0].alias if catalogs else None,
        namespaces=resolution.namespaces,
        settings=settings,
    )
    return write_explorer(path, answer(view, Query()).document)


def write_explorer(path: Path, document: Mapping[str, Any]) -> Path:
    """`dbt-oml lineage --html FILE`: the explorer page for a lineage document, one file."""
    from dbt_oml.explorer import render

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(document), encoding="utf-8")
    return path.resolve()
