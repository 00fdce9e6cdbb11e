"""Wire it together: run dbt, listen, keep the artifacts, build the events, deliver them.

The only module that knows the order of things. It raises DbtOmlError for bad input and never
lets a lineage problem change dbt's result: the caller (cli) decides the exit code.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from openlineage.client.event_v2 import RunEvent, RunState

from dbt_oml import __version__
from dbt_oml.artifacts import (
    KEPT_MANIFEST,
    KEPT_RUN_RESULTS,
    Manifest,
    RunArtifacts,
    parse_time,
    read_artifacts,
    read_manifest,
)
from dbt_oml.config import Settings
from dbt_oml.dbt_process import (
    DbtContext,
    NodeStarted,
    docs_generate_args,
    run_dbt,
)
from dbt_oml.delivery import Delivery, DeliveryReport, Emitter
from dbt_oml.errors import ArtifactError, ConfigError, DbtOmlError
from dbt_oml.events import (
    BUILD_COMMANDS,
    EventBuilder,
    EventSettings,
    Invocation,
    build_events,
)
from dbt_oml.lineage import ModelLineage
from dbt_oml.lineage_batch import ANALYSED_TYPES, analyse_models
from dbt_oml.lineage_cache import DiskCache
from dbt_oml.lineage_view import LineageView
from dbt_oml.namespaces import CatalogSpec, Namespaces, resolve_namespaces

logger = logging.getLogger(__name__)

PRODUCER = f"https://github.com/dbt-oml/dbt-oml/tree/{__version__}"
#: dbt-oml's own files inside dbt's target directory.
STATE_DIR = "dbt_oml"
NODE_STARTS = "node_starts.json"
#: Commands that change relations, after which `dbt docs generate` is worth its time.
CATALOG_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "retry"})


@dataclass(slots=True)
class Report:
    """What a dbt-oml command did, for the summary and the exit code."""

    dbt_return_code: int | None = None
    events_built: int = 0
    delivery: DeliveryReport = field(default_factory=DeliveryReport)
    destination: str = ""
    namespaces: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    dbt_error: str | None = None
    lineage_models: int = 0
    opaque: dict[str, str] = field(default_factory=dict)
    refused: str | None = None


def make_emitter(settings: Settings, target_path: Path) -> tuple[Emitter | None, str]:
    """The openlineage-python client to send with, and a description of where events go.

    Without any OpenLineage configuration, events go to a JSON-lines file in the target
    directory (the embedded default: no servers needed).
    """
    if settings.dry_run:
        return None, "stdout (--dry-run)"
    from openlineage.client import OpenLineageClient

    config: dict[str, Any] | None
    if settings.transport is not None:
        config = {"transport": dict(settings.transport)}
        where = f"{settings.transport.get('type')} transport (dbt-oml config)"
    elif settings.openlineage_configured:
        config, where = None, "openlineage-python's configured transport"
    else:
        events_file = settings.events_file or target_path / "openlineage" / "events.jsonl"
        events_file.parent.mkdir(parents=True, exist_ok=True)
        config = {"transport": {"type": "file", "log_file_path": str(events_file), "append": True}}
        where = str(events_file)
    try:
        client = OpenLineageClient(config=config) if config else OpenLineageClient()
    except (ValueError, TypeError, KeyError, ImportError, AttributeError) as e:
        raise ConfigError(
            key="transport",
            source="openlineage config",
            reason=f"the transport cannot be created ({type(e).__name__}: {e})",
            hint="check openlineage.yml / OPENLINEAGE__TRANSPORT__* / the transport: setting",
        ) from e
    if settings.openlineage_configured and settings.transport is None:
        where = f"{client.transport.kind} transport (openlineage config)"
    return client, where


def _namespaces(
    settings: Settings, catalogs: Sequence[CatalogSpec], cwd: Path, report: Report
) -> Namespaces:
    resolution = resolve_namespaces(
        catalogs,
        overrides=settings.namespaces,
        duckdb_default=settings.duckdb_namespace,
        cwd=str(cwd),
    )
    for problem in resolution.problems:
        report.problems.append(str(problem))
    report.namespaces = dict(resolution.namespaces.by_catalog)
    return resolution.namespaces


def _event_settings(settings: Settings, cwd: Path, project_root: Path) -> EventSettings:
    return EventSettings(
        project_root=str(project_root),
        producer=PRODUCER,
        adapter_version=__version__,
        job_namespace=settings.job_namespace,
        parent_job_name=settings.parent_job_name,
        job_naming=settings.job_naming,
        cwd=str(cwd),
    )


def _invocation(ctx: DbtContext) -> Invocation:
    return Invocation(
        invocation_id=ctx.invocation_id,
        started_at=ctx.started_at,
        command=ctx.command,
        project_name=ctx.project_name,
        profile_name=ctx.profile_name,
        target_name=ctx.target_name,
        dbt_version=ctx.dbt_version,
        adapter_type=ctx.adapter_type,
    )


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

    def on_invocation(self, context: DbtContext) -> None:
        self.context = context
        namespaces = _namespaces(self.settings, context.catalogs, self.cwd, self.report)
        emitter, where = make_emitter(self.settings, context.target_path)
        self.report.destination = where
        self.delivery = Delivery(emitter, outbox=outbox_path(self.settings, context), target=where)
        self.builder = EventBuilder(
            invocation=_invocation(context),
            namespaces=namespaces,
            settings=_event_settings(self.settings, self.cwd, context.project_root),
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


def outbox_path(settings: Settings, context: DbtContext) -> Path:
    folder = settings.outbox_dir or context.target_path / STATE_DIR / "outbox"
    return folder / f"{context.invocation_id}.jsonl"


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


def _write_node_starts(ctx: DbtContext, starts: Mapping[str, datetime]) -> None:
    folder = ctx.target_path / STATE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "invocation_id": ctx.invocation_id,
        "node_starts": {k: v.isoformat() for k, v in starts.items()},
    }
    (folder / NODE_STARTS).write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")


def read_node_starts(target: Path, invocation_id: str | None) -> dict[str, datetime]:
    """Node start times recorded live by `dbt-oml build`, if they belong to this invocation."""
    try:
        doc = json.loads((target / STATE_DIR / NODE_STARTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("invocation_id") != invocation_id:
        return {}
    starts = {k: parse_time(v) for k, v in (doc.get("node_starts") or {}).items()}
    return {k: v for k, v in starts.items() if v is not None}


def build(
    settings: Settings, dbt_args: Sequence[str], *, cwd: Path, report: Report | None = None
) -> Report:
    """`dbt-oml <command> ...`: run dbt with live events, then the enriched terminal events.

    `report` is filled in as the run goes, so a caller still knows dbt's exit code if
    something after dbt fails.
    """
    report = report if report is not None else Report()
    live = LiveEmitter(settings, cwd=cwd, report=report)
    invocation = run_dbt(dbt_args, live)
    report.dbt_return_code = invocation.return_code
    report.dbt_error = invocation.error
    report.problems += invocation.listener_errors
    ctx = live.context
    if ctx is None or live.delivery is None or live.builder is None:
        return report  # dbt stopped before resolving a profile (usage error, --version, ...)
    builder, delivery = live.builder, live.delivery
    try:
        if ctx.command in BUILD_COMMANDS and _keep_build_artifacts(ctx):
            _write_node_starts(ctx, invocation.node_starts)
            if settings.docs_generate and ctx.command in CATALOG_COMMANDS:
                docs = run_dbt(docs_generate_args(ctx))
                if docs.return_code != 0:
                    report.problems.append(
                        f"dbt docs generate failed ({docs.error}); schema facets use the "
                        "declared columns"
                    )
            artifacts = read_artifacts(ctx.target_path)
            if not settings.docs_generate and artifacts.catalog is not None:
                generated = artifacts.catalog.generated_at
                if generated is None or generated < ctx.started_at:
                    artifacts = RunArtifacts(
                        manifest=artifacts.manifest, run_results=artifacts.run_results
                    )
            lineage = column_lineage_for(
                settings,
                artifacts,
                project_root=ctx.project_root,
                target_path=ctx.target_path,
                dialect=ctx.adapter_type,
                default_catalog=ctx.catalogs[0].alias if ctx.catalogs else None,
                report=report,
            )
            events = build_events(
                artifacts,
                invocation=builder.invocation,
                namespaces=builder.namespaces,
                settings=builder.settings,
                node_starts=invocation.node_starts,
                ended_at=invocation.ended_at,
                error=invocation.error,
                lineage=lineage,
            )
            events[-1:-1] = _aborts(builder, artifacts, live.sent_starts, invocation.node_starts)
            for event in events[1:]:  # the parent START went out live
                if event.eventType is RunState.START and event.run.runId in live.sent_starts:
                    continue
                report.events_built += 1
                if report.refused is not None:
                    delivery.keep(event)
                else:
                    delivery.send(event)
        else:
            report.events_built += 1
            delivery.send(builder.parent_end(at=invocation.ended_at, error=invocation.error))
    except DbtOmlError as e:
        report.problems.append(str(e))
        report.events_built += 1
        delivery.send(builder.parent_end(at=invocation.ended_at, error=invocation.error or str(e)))
    finally:
        report.delivery = delivery.close()
    return report


def _seed_headers(manifest: Manifest, project_root: Path) -> dict[str, tuple[str, ...]]:
    """Each seed's column names from its CSV header (`select *` over a seed without catalog)."""
    out: dict[str, tuple[str, ...]] = {}
    for uid, node in manifest.nodes.items():
        if node.resource_type != "seed" or not node.original_file_path:
            continue
        try:
            with (project_root / node.original_file_path).open(encoding="utf-8", newline="") as f:
                header = next(csv.reader(f), [])
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
        if header:
            out[uid] = tuple(h.strip() for h in header)
    return out


def column_lineage_for(
    settings: Settings,
    artifacts: RunArtifacts,
    *,
    project_root: Path,
    target_path: Path,
    dialect: str,
    default_catalog: str | None,
    report: Report,
) -> dict[str, ModelLineage]:
    """Column lineage of the models that completed, recording the opaque ones in the report."""
    if not settings.column_lineage or artifacts.run_results is None:
        return {}
    nodes = artifacts.manifest.nodes
    wanted = {
        r.unique_id
        for r in artifacts.run_results.results
        if r.status == "success"
        and r.unique_id in nodes
        and nodes[r.unique_id].resource_type in ANALYSED_TYPES
    }
    if not wanted:
        return {}
    result = analyse_models(
        artifacts,
        wanted=wanted,
        dialect=dialect,
        default_catalog=default_catalog,
        seed_headers=_seed_headers(artifacts.manifest, project_root),
        cache=DiskCache(target_path / STATE_DIR / "lineage-cache"),
        workers=min(os.cpu_count() or 1, 8),
    )
    models = {uid: lin for uid, lin in result.models.items() if uid in wanted}
    report.opaque.update({uid: why for uid, why in result.opaque.items() if uid in wanted})
    report.lineage_models = len(models)
    if not models and not settings.allow_empty_column_lineage:
        report.refused = (
            f"none of the {len(wanted)} models that ran has column lineage; sending would make "
            "OpenMetadata replace the column lineage it holds with none. Fix the cause above "
            "(missing catalog.json?) or pass --allow-empty-column-lineage"
        )
    return models


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


def resolve_context(
    *,
    project_dir: Path,
    profiles_dir: Path | None,
    profile: str | None,
    target: str | None,
    target_path: Path | None,
    cli_vars: Mapping[str, Any],
    environ: Mapping[str, str],
) -> tuple[str, str | None, str | None, Path, tuple[CatalogSpec, ...], str]:
    """Resolve project, profile, target and catalogs with dbt's own loaders (for `emit`)."""
    from argparse import Namespace as Args

    from dbt.config.runtime import load_profile, load_project
    from dbt.flags import set_from_args
    from dbt_common.context import set_invocation_context
    from dbt_common.exceptions import DbtBaseException

    from dbt_oml.dbt_process import catalogs_of

    if not (project_dir / "dbt_project.yml").is_file():
        raise ConfigError(
            key="project-dir",
            source=str(project_dir),
            reason="has no dbt_project.yml",
            hint="pass --project-dir or set DBT_PROJECT_DIR",
        )
    set_invocation_context(dict(environ))
    profiles = profiles_dir or (
        project_dir if (project_dir / "profiles.yml").is_file() else Path.home() / ".dbt"
    )
    set_from_args(Args(PROFILES_DIR=str(profiles), TARGET=target, PROFILE=profile), None)
    try:
        loaded = load_profile(str(project_dir), dict(cli_vars), profile, target, None)
        project = load_project(str(project_dir), False, loaded, dict(cli_vars))
    except DbtBaseException as e:
        first = str(e).strip().splitlines()
        raise ConfigError(
            key="profile",
            source=str(profiles),
            reason=first[-1] if first else type(e).__name__,
            hint="pass --profiles-dir/--target as for dbt",
        ) from e
    tpath = target_path or Path(project.target_path)
    if not tpath.is_absolute():
        tpath = project_dir / tpath
    adapter = str(loaded.credentials.type)
    return (
        project.project_name,
        loaded.profile_name,
        loaded.target_name,
        tpath,
        catalogs_of(adapter, loaded.credentials),
        adapter,
    )


def emit(
    settings: Settings,
    *,
    project_dir: Path,
    profiles_dir: Path | None,
    profile: str | None,
    target: str | None,
    target_path: Path | None,
    cli_vars: Mapping[str, Any],
    environ: Mapping[str, str],
    cwd: Path,
) -> Report:
    """`dbt-oml emit`: build and send the events of existing artifacts, without running dbt."""
    report = Report()
    project, profile_name, target_name, tpath, catalogs, adapter = resolve_context(
        project_dir=project_dir,
        profiles_dir=profiles_dir,
        profile=profile,
        target=target,
        target_path=target_path,
        cli_vars=cli_vars,
        environ=environ,
    )
    artifacts = read_artifacts(tpath)
    results = artifacts.run_results
    if results is None:
        raise ArtifactError(
            path=str(tpath / "run_results.json"),
            reason="not found",
            hint="run dbt (or dbt-oml) first",
        )
    invocation_id = results.invocation_id or artifacts.manifest.invocation_id or "unknown"
    started = results.invocation_started_at or results.generated_at or datetime.now(timezone.utc)
    invocation = Invocation(
        invocation_id=invocation_id,
        started_at=started,
        command=results.command or "build",
        project_name=artifacts.manifest.project_name or project,
        profile_name=profile_name,
        target_name=target_name,
        dbt_version=results.dbt_version,
        adapter_type=adapter,
    )
    namespaces = _namespaces(settings, catalogs, cwd, report)
    failed = [r.unique_id for r in results.results if r.status in {"error", "fail"}]
    error = f"{len(failed)} node(s) failed: {', '.join(failed[:5])}" if failed else None
    lineage = column_lineage_for(
        settings,
        artifacts,
        project_root=project_dir,
        target_path=tpath,
        dialect=adapter,
        default_catalog=catalogs[0].alias if catalogs else None,
        report=report,
    )
    events = build_events(
        artifacts,
        invocation=invocation,
        namespaces=namespaces,
        settings=_event_settings(settings, cwd, project_dir),
        node_starts=read_node_starts(tpath, invocation_id),
        ended_at=results.generated_at,
        error=error,
        lineage=lineage,
    )
    emitter, where = make_emitter(settings, tpath)
    report.destination = where
    state = DbtContext(
        invocation_id=invocation_id,
        started_at=started,
        command=invocation.command,
        project_name=project,
        project_root=project_dir,
        target_path=tpath,
        profiles_dir=None,
        profile_name=profile_name,
        target_name=target_name,
        adapter_type=adapter,
        dbt_version=results.dbt_version,
        catalogs=catalogs,
    )
    delivery = Delivery(emitter, outbox=outbox_path(settings, state), target=where)
    for event in events:
        if report.refused is not None:
            delivery.keep(event)
        else:
            delivery.send(event)
    report.events_built = len(events)
    report.delivery = delivery.close()
    return report


def replay(settings: Settings, files: Sequence[Path], *, target_path: Path) -> Report:
    """`dbt-oml replay FILE...`: send events kept in outbox files; a file is removed once sent."""
    from dbt_oml.delivery import read_outbox

    report = Report()
    emitter, where = make_emitter(settings, target_path)
    report.destination = where
    for path in files:
        events = read_outbox(path)
        retry = path.with_suffix(".retry.jsonl")
        delivery = Delivery(emitter, outbox=retry, target=where)
        delivery.send_all(events)
        report.events_built += len(events)
        report.delivery.delivered += delivery.report.delivered
        report.delivery.failed += delivery.report.failed
        report.delivery.errors += delivery.report.errors
        collected = delivery.report.collected
        report.delivery.collected += collected
        if emitter is not None:
            if delivery.report.failed:
                retry.replace(path)  # keep exactly what is still undelivered
                report.delivery.outbox = path
            else:
                path.unlink()
    if emitter is not None:
        emitter.close(10.0)
    return report


def lineage_view(
    *,
    project_dir: Path,
    profiles_dir: Path | None,
    profile: str | None,
    target: str | None,
    target_path: Path | None,
    cli_vars: Mapping[str, Any],
    environ: Mapping[str, str],
) -> LineageView:
    """`dbt-oml lineage`: analyse every model of existing artifacts, for tracing upstream."""
    _, _, _, tpath, catalogs, adapter = resolve_context(
        project_dir=project_dir,
        profiles_dir=profiles_dir,
        profile=profile,
        target=target,
        target_path=target_path,
        cli_vars=cli_vars,
        environ=environ,
    )
    artifacts = read_artifacts(tpath)
    wanted = {
        uid
        for uid, n in artifacts.manifest.nodes.items()
        if n.resource_type in ANALYSED_TYPES and n.materialized != "ephemeral"
    }
    result = analyse_models(
        artifacts,
        wanted=wanted,
        dialect=adapter,
        default_catalog=catalogs[0].alias if catalogs else None,
        seed_headers=_seed_headers(artifacts.manifest, project_dir),
        cache=DiskCache(tpath / STATE_DIR / "lineage-cache"),
        workers=min(os.cpu_count() or 1, 8),
    )
    return LineageView(manifest=artifacts.manifest, models=result.models, opaque=result.opaque)
