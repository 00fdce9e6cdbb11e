"""The build's artifacts after dbt: kept aside while `dbt docs generate` runs and put back after
it (target/ ends as the build left it: `dbt retry`, `result:` selectors and artifact uploads see
the build), read with this run's catalog; and the columns a transport's catalog (OpenMetadata)
holds for the rest."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

from dbt_oml.artifacts import (
    DOCS_GENERATE_DIR,
    KEPT_MANIFEST,
    KEPT_RUN_RESULTS,
    Catalog,
    Column,
    Node,
    RunArtifacts,
    read_artifacts,
)
from dbt_oml.config import Settings
from dbt_oml.dbt.runner import DbtContext, DbtInvocation, docs_generate_args, run_dbt
from dbt_oml.events.node_events import EventBuilder
from dbt_oml.lineage.batch import ColumnLookup
from dbt_oml.pipeline.report import Report
from dbt_oml.transports.base import column_source

#: Commands that change relations, after which `dbt docs generate` is worth its time.
CATALOG_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "retry"})

#: The artifacts `dbt docs generate` writes over the build's.
_OVERWRITTEN = (("run_results.json", KEPT_RUN_RESULTS), ("manifest.json", KEPT_MANIFEST))
#: Where earlier releases kept the build's copies, beside dbt's own files.
_LEGACY = ("run_results.build.json", "manifest.build.json")


def _invocation_of(results: Path) -> object:
    try:
        return json.loads(results.read_text(encoding="utf-8")).get("metadata", {})["invocation_id"]
    except (OSError, ValueError, AttributeError, KeyError, TypeError, RecursionError):
        return None


def wrote_run_results(ctx: DbtContext) -> bool:
    """Whether this invocation wrote target/run_results.json (a parse error writes none)."""
    return _invocation_of(ctx.target_path / "run_results.json") == ctx.invocation_id


def docs_generate(ctx: DbtContext) -> DbtInvocation:
    """`dbt docs generate` for catalog.json, the build's run_results/manifest kept aside in
    target/dbt_oml/build/ while it runs and put back after it."""
    target = ctx.target_path
    (target / KEPT_RUN_RESULTS).parent.mkdir(parents=True, exist_ok=True)
    for legacy in _LEGACY:
        (target / legacy).unlink(missing_ok=True)
    for name, kept in _OVERWRITTEN:
        if (target / name).exists():
            shutil.copyfile(target / name, target / kept)
    try:
        return run_dbt(docs_generate_args(ctx))
    finally:
        put_back_build_artifacts(ctx)
        with contextlib.suppress(OSError):  # stays only when something was not put back
            (target / KEPT_RUN_RESULTS).parent.rmdir()


def put_back_build_artifacts(ctx: DbtContext) -> None:
    """After `dbt docs generate`: its run_results.json and manifest.json go to
    target/dbt_oml/docs_generate/, the build's come back to target/ (each an atomic rename).

    A killed process in between leaves the build's copies in target/dbt_oml/build/, which
    `read_artifacts` prefers to a docs generate's run_results.json.
    """
    target = ctx.target_path
    if wrote_run_results(ctx):
        for _, kept in _OVERWRITTEN:  # docs generate wrote nothing over them (a parse error)
            (target / kept).unlink(missing_ok=True)
        return
    docs = target / DOCS_GENERATE_DIR
    docs.mkdir(parents=True, exist_ok=True)
    for name, kept in _OVERWRITTEN:
        if not (target / kept).exists():
            continue
        if (target / name).exists():
            os.replace(target / name, docs / name)
        os.replace(target / kept, target / name)


def catalog_lookup(emitter: object, builder: EventBuilder) -> ColumnLookup | None:
    """Columns the configured transport's catalog holds (OpenMetadata: ingested tables)."""
    columns_for = column_source(getattr(emitter, "transport", None))
    if columns_for is None:
        return None

    def lookup(node: Node) -> tuple[Column, ...] | None:
        ref = builder.dataset(node)
        found = columns_for(ref.namespace, ref.name)
        return tuple(Column(name=n, type=t) for n, t in found) if found else None

    return lookup


def catalog_phase(settings: Settings, ctx: DbtContext) -> str | None:
    """What reading this run's artifacts will wait for, when it waits (docs generate)."""
    if settings.dbt.docs_generate and ctx.command in CATALOG_COMMANDS:
        return "catalog.json (dbt docs generate)"
    return None


def catalog_by_docs_generate(settings: Settings, ctx: DbtContext, report: Report) -> None:
    """catalog.json by `dbt docs generate`, when the settings and the command want one."""
    if settings.dbt.docs_generate and ctx.command in CATALOG_COMMANDS:
        docs = docs_generate(ctx)
        if docs.return_code != 0:
            report.problems.append(
                f"dbt docs generate failed ({docs.error}); schema facets use the declared columns"
            )


def artifacts_with_catalog(
    settings: Settings,
    ctx: DbtContext,
    report: Report,
    live: tuple[Catalog | None, str | None] | None = None,
    *,
    catalog_written: Catalog | None = None,
) -> RunArtifacts:
    """The build's artifacts, with this run's catalog.json (from `dbt docs generate`), or the
    columns read from the warehouse at the end of the command (`live`, for `test`).

    A catalog.json written before this invocation started (docs generate off or failed) is
    not this run's: the declared columns are used instead. An unreadable one is a warning.
    `catalog_written`: what the build's end wrote (dbt.catalog_file): no docs generate, and
    catalog.json is not read back.
    """
    if catalog_written is None:
        catalog_by_docs_generate(settings, ctx, report)
    artifacts = read_artifacts(ctx.target_path, catalog=catalog_written)
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
