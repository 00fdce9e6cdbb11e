"""`dbt-oml impact` from artifacts: read the current and the `--state` build, analyse both,
and hand them to the pure impact analysis.

An I/O adapter like pipeline.lineage: reads artifacts, seed headers and the lineage cache. The
current build's catalog.json, when there is one, may predate the change: the catalog entries of
models whose SQL changed are not used (their columns come from the SQL). Without a current catalog,
the state's columns of sources (which the change does not build) are used.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dbt_oml.artifacts import Catalog, RunArtifacts, read_artifacts
from dbt_oml.config import Settings
from dbt_oml.dbt.project import ProjectOptions, resolve_project
from dbt_oml.errors import ArtifactError, SelectionError
from dbt_oml.impact.analysis import (
    SELECTED,
    Build,
    ColumnChange,
    Report,
    analyse_impact,
    bearing_on,
    borrow,
    columns_tested,
    compare,
    modified_models,
    uncompiled,
)
from dbt_oml.impact.exposures import read_exposures
from dbt_oml.impact.selection import affected_models, changes_between
from dbt_oml.impact.sql import schema_of
from dbt_oml.lineage.cache import DiskCache
from dbt_oml.lineage.graph import ColumnGraph
from dbt_oml.lineage.model import ModelLineage, schema_case
from dbt_oml.lineage.view import LineageView
from dbt_oml.lineage.workers import analyse_one
from dbt_oml.pipeline.lineage import lineage_cache, project_graph


def compiled_sql(artifacts: RunArtifacts) -> dict[str, str]:
    """Each node's compiled SQL: run_results.json first (what ran), then the manifest."""
    out = {u: n.compiled_code for u, n in artifacts.manifest.nodes.items() if n.compiled_code}
    if artifacts.run_results is not None:
        out.update(
            {r.unique_id: r.compiled_code for r in artifacts.run_results.results if r.compiled_code}
        )
    return out


def uncompiled_models(artifacts: RunArtifacts) -> tuple[tuple[str, ...], int]:
    """The models and snapshots of these artifacts with no compiled SQL, and how many in all."""
    return uncompiled(artifacts.manifest, compiled_sql(artifacts))


def _without(
    artifacts: RunArtifacts, stale: set[str], fallback: RunArtifacts | None
) -> RunArtifacts:
    """The artifacts without the catalog entries of `stale` models; with the fallback's
    source columns when there is no catalog at all."""
    catalog = artifacts.catalog
    if catalog is not None:
        columns = {u: c for u, c in catalog.columns.items() if u not in stale}
        return dataclasses.replace(artifacts, catalog=dataclasses.replace(catalog, columns=columns))
    if fallback is None or fallback.catalog is None:
        return artifacts
    sources = {
        u: c
        for u, c in fallback.catalog.columns.items()
        if u.startswith("source.") and u in artifacts.manifest.nodes
    }
    borrowed = Catalog(path=fallback.catalog.path, generated_at=None, columns=sources)
    return dataclasses.replace(artifacts, catalog=borrowed)


def _build(
    artifacts: RunArtifacts,
    *,
    project_dir: Path,
    cache: DiskCache | None,
    dialect: str,
    default_catalog: str | None,
) -> Build:
    models, graph = project_graph(
        artifacts,
        project_dir=project_dir,
        dialect=dialect,
        default_catalog=default_catalog,
        cache=cache,
    )
    return Build(artifacts.manifest, graph, models, compiled_sql(artifacts))


def _singular_tests(
    build: Build, *, dialect: str, default_catalog: str | None
) -> dict[str, ModelLineage]:
    """The column lineage of each singular test's SQL (what its WHERE and computations read)."""
    columns = {u: n.columns for u, n in build.graph.nodes.items()}
    schema = schema_of(build.manifest, columns)
    case = schema_case(schema.mapping)
    out: dict[str, ModelLineage] = {}
    for uid, node in build.manifest.nodes.items():
        sql = build.sql.get(uid)
        if node.test is None or node.test.generic or not sql:
            continue
        outcome = analyse_one(
            sql,
            schema=schema,
            dialect=dialect,
            unique_id=uid,
            default_catalog=default_catalog,
            case=case,
        )
        if not isinstance(outcome, str):
            out[uid] = outcome
    return out


def impact(
    options: ProjectOptions,
    *,
    state: Path | None,
    columns: Sequence[str],
    settings: Settings | None = None,
) -> tuple[Report, ColumnGraph]:
    """The impact report of a `--state` comparison and/or named MODEL.COLUMNs, and the graph
    the names in it come from.

    Raises:
        ArtifactError: missing or unreadable artifacts (here or in the state directory).
        SelectionError: a named model or column is not in the project.
    """
    project = resolve_project(options)
    current = read_artifacts(project.target_path)
    previous = None
    if state is not None:
        if not (state / "manifest.json").is_file():
            raise ArtifactError(
                path=str(state / "manifest.json"),
                reason="not found",
                hint="--state takes the target directory of the production build",
            )
        previous = read_artifacts(state)
    report, graph = impact_of_artifacts(
        current,
        previous,
        columns=columns,
        project_dir=project.project_dir,
        cache=lineage_cache(project.target_path, settings, project=current.manifest.project_name),
        dialect=project.adapter_type,
        default_catalog=project.catalogs[0].alias if project.catalogs else None,
    )
    missing, total = uncompiled_models(current)
    # a comparison needs every model's compiled SQL; named columns only their descendants'
    roots = None if state is not None else [i.change.node for i in report.impacts]
    missing = bearing_on(graph, missing, roots)
    state_text = str(state) if state else None
    return dataclasses.replace(report, state=state_text, uncompiled=missing, analysed=total), graph


def impact_of_artifacts(
    current: RunArtifacts,
    previous: RunArtifacts | None,
    *,
    columns: Sequence[str] = (),
    project_dir: Path,
    cache: DiskCache | None = None,
    dialect: str = "duckdb",
    default_catalog: str | None = None,
) -> tuple[Report, ColumnGraph]:
    """`impact` on artifacts already read (`previous`: the --state build, or None)."""
    stale: set[str] = set()
    if previous is not None:
        stale = set(
            modified_models(
                (previous.manifest, compiled_sql(previous)),
                (current.manifest, compiled_sql(current)),
            )[0]
        )
    build = functools.partial(
        _build,
        project_dir=project_dir,
        cache=cache,
        dialect=dialect,
        default_catalog=default_catalog,
    )
    now = build(_without(current, stale, previous))
    changes: list[ColumnChange] = []
    graph, borrowed, comparison, selected = now.graph, set[str](), None, None
    if previous is not None:
        before = build(previous)
        comparison = compare(before, now, dialect=dialect)
        graph, borrowed = borrow(now, before, comparison.modified)
        changes += comparison.changes
        modified, whole = changes_between(before, now, comparison)
        code = code_changes(Path(previous.manifest.path), Path(current.manifest.path))
        modified = [c for c in modified if c.uid in code or not _incremental(now, c.uid)]
        selected = tuple(sorted(affected_models(graph, modified, whole=whole, dialect=dialect)))
    view = LineageView(graph)
    for text in columns:
        node_name, _, column = text.rpartition(".")
        if not node_name:
            raise SelectionError(what=repr(text), reason="expected MODEL.COLUMN")
        node = view.find_node(node_name)
        changes.append(ColumnChange(node.id, view.find_column(node, column), SELECTED))
    tested = columns_tested(
        now.manifest,
        singular=_singular_tests(now, dialect=dialect, default_catalog=default_catalog),
    )
    impacts = analyse_impact(
        changes,
        graph,
        tests=tested,
        manifest=now.manifest,
        exposures=read_exposures(Path(current.manifest.path)),
        via_state=borrowed,
    )
    return Report(impacts, comparison, selected=selected), graph


def _incremental(build: Build, uid: str) -> bool:
    node = build.manifest.get(uid)
    return node is not None and node.materialized == "incremental"


def code_changes(state: Path, current: Path) -> set[str]:
    """The nodes whose code differs between two manifests, as dbt's `state:modified` sees it:
    the node's file, a macro it calls (through the macros those call), or an ephemeral model
    whose SQL it inlines (and theirs). An incremental model whose compiled SQL differs with none
    of them is the other `is_incremental()` branch (a first build against a later compile): no
    change of its own. Any other compiled difference (a var, an env_var) still counts."""
    old, new = (json.loads(path.read_text(encoding="utf-8")) for path in (state, current))
    memo: dict[tuple[int, str], str] = {}

    def macros(doc: dict[str, Any], uid: str, seen: set[str]) -> str:
        key = (id(doc), uid)
        if key not in memo:
            macro = (doc.get("macros") or {}).get(uid) or {}
            seen.add(uid)
            calls = ((macro.get("depends_on") or {}).get("macros")) or []
            memo[key] = str(macro.get("macro_sql")) + "".join(
                macros(doc, c, seen) for c in calls if c not in seen
            )
        return memo[key]

    def code(doc: dict[str, Any], uid: str, inlining: frozenset[str] = frozenset()) -> str | None:
        nodes = doc.get("nodes") or {}
        node = nodes.get(uid)
        if node is None:
            return None
        calls = ((node.get("depends_on") or {}).get("macros")) or []
        checksum = (node.get("checksum") or {}).get("checksum")
        inlined = [  # an ephemeral model's SQL is part of its readers' own
            code(doc, parent, inlining | {uid}) or ""
            for parent in sorted(((node.get("depends_on") or {}).get("nodes")) or [])
            if parent not in inlining
            and ((nodes.get(parent) or {}).get("config") or {}).get("materialized") == "ephemeral"
        ]
        return (
            str(checksum) + "".join(macros(doc, c, set()) for c in sorted(calls)) + "".join(inlined)
        )

    return {uid for uid in new.get("nodes") or {} if code(old, uid) != code(new, uid)}
