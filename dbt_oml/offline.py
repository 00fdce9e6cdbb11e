"""The commands that work on existing artifacts without running dbt: emit, replay, lineage.

dbt's own loaders resolve the project, profile and target, so DBT_* variables and profile Jinja
work exactly as for dbt.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dbt_oml.artifacts import (
    read_artifacts,
)
from dbt_oml.config import Settings
from dbt_oml.dbt_process import (
    DbtContext,
)
from dbt_oml.delivery import Delivery
from dbt_oml.errors import ArtifactError, ConfigError
from dbt_oml.events import (
    Invocation,
    build_events,
)
from dbt_oml.lineage_batch import ANALYSED_TYPES, analyse_models
from dbt_oml.lineage_cache import DiskCache
from dbt_oml.lineage_run import column_lineage_for, seed_headers
from dbt_oml.lineage_view import LineageView
from dbt_oml.namespaces import CatalogSpec
from dbt_oml.run_state import (
    STATE_DIR,
    Report,
    event_settings,
    make_emitter,
    namespaces_for,
    outbox_path,
    read_node_starts,
)

logger = logging.getLogger(__name__)


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
    namespaces = namespaces_for(settings, catalogs, cwd, report)
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
        settings=event_settings(settings, cwd, project_dir),
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
        seed_headers=seed_headers(artifacts.manifest, project_dir),
        cache=DiskCache(tpath / STATE_DIR / "lineage-cache"),
        workers=min(os.cpu_count() or 1, 8),
    )
    return LineageView(manifest=artifacts.manifest, models=result.models, opaque=result.opaque)
