"""What a run's events are built from: its namespaces, the event settings, the invocation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dbt_oml.config import Settings
from dbt_oml.dbt.runner import DbtContext
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.namespaces import CatalogSpec, Namespaces, resolve_namespaces
from dbt_oml.pipeline.report import Report
from dbt_oml.redaction import Redactor
from dbt_oml.version import __version__

#: OpenLineage `producer` (and every facet's `_producer`): dbt-oml's PyPI release, by version.
PRODUCER = f"https://pypi.org/project/dbt-oml/{__version__}/"


def namespaces_for(
    settings: Settings, catalogs: Sequence[CatalogSpec], cwd: Path, report: Report
) -> Namespaces:
    resolution = resolve_namespaces(
        catalogs,
        overrides=settings.namespace.namespaces,
        duckdb_default=settings.namespace.duckdb_namespace,
        cwd=str(cwd),
    )
    for problem in resolution.problems:
        report.problems.append(str(problem))
    report.namespaces = dict(resolution.namespaces.by_catalog)
    return resolution.namespaces


def event_settings(
    settings: Settings, cwd: Path, project_root: Path, redactor: Redactor
) -> EventSettings:
    return EventSettings(
        project_root=str(project_root),
        producer=PRODUCER,
        adapter_version=__version__,
        job_namespace=settings.emit.job_namespace,
        parent_job_name=settings.emit.parent_job_name,
        extended_job_name=settings.emit.extended_job_name,
        job_naming=settings.emit.job_naming,
        cwd=str(cwd),
        orchestrator=settings.emit.orchestrator,
        redact=redactor,
    )


def invocation_of(ctx: DbtContext) -> Invocation:
    return Invocation(
        invocation_id=ctx.invocation_id,
        started_at=ctx.started_at,
        command=ctx.command,
        project_name=ctx.project_name,
        project_version=ctx.project_version,
        profile_name=ctx.profile_name,
        dbt_version=ctx.dbt_version,
        adapter_type=ctx.adapter_type,
        selected=ctx.select,
        selector=ctx.selector,
    )
