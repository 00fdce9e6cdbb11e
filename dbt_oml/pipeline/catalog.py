"""The build's artifacts after dbt: kept aside before `dbt docs generate`, read back with this
run's catalog, and the columns a transport's catalog (OpenMetadata) holds for the rest."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

from dbt_oml.artifacts import (
    KEPT_MANIFEST,
    KEPT_RUN_RESULTS,
    Catalog,
    Column,
    Node,
    RunArtifacts,
    read_artifacts,
)
from dbt_oml.config import Settings
from dbt_oml.dbt.runner import DbtContext, docs_generate_args, run_dbt
from dbt_oml.events.builder import EventBuilder
from dbt_oml.lineage.batch import ColumnLookup
from dbt_oml.pipeline.run_state import Report

#: Commands that change relations, after which `dbt docs generate` is worth its time.
CATALOG_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "retry"})


def keep_build_artifacts(ctx: DbtContext) -> bool:
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


def artifacts_with_catalog(
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
