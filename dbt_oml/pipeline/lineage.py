"""Column lineage for a run: seed headers from disk, the cache in target/, the guard.

I/O adapter around the pure lineage.batch: reads seed CSV headers and keeps the on-disk cache.
Plugin mode analyses models as their nodes finish (plugin.nodes) through the same cache, held by
a NodeLineage, so the end of the run prunes only what neither of them used.
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt_oml.artifacts import (
    Column,
    Manifest,
    Node,
    RunArtifacts,
)
from dbt_oml.config import Settings
from dbt_oml.dbt.relation_columns import relation_columns
from dbt_oml.lineage.batch import (
    ANALYSED_TYPES,
    PARALLEL_THRESHOLD,
    ColumnLookup,
    LineageCache,
    Settled,
    analyse_models,
    known_columns,
)
from dbt_oml.lineage.cache import DiskCache
from dbt_oml.lineage.graph import ColumnGraph, build_graph
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.lineage.workers import Prestarted
from dbt_oml.pipeline.feed import LineageFeed
from dbt_oml.pipeline.report import Report
from dbt_oml.pipeline.state_files import STATE_DIR
from dbt_oml.stores import shared_store

logger = logging.getLogger(__name__)


def seed_headers(manifest: Manifest, project_root: Path) -> dict[str, tuple[str, ...]]:
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


#: After a partial run (--select), the cache keeps up to this many entries per model of the project.
CACHE_ENTRIES_PER_MODEL = 2


def lineage_cache(
    target_path: Path, settings: Settings | None = None, *, project: str | None = None
) -> DiskCache:
    """The lineage cache of a project's target (the wrapper's, emit's and the plugin's), over
    the shared store `settings` name for the dbt `project`, if any."""
    shared = shared_store(settings, scope=project or "project") if settings else None
    return DiskCache(_cache_root(target_path), shared)


def _cache_root(target_path: Path) -> Path:
    return target_path / STATE_DIR / "lineage-cache"


class NodeLineage(dict[str, ModelLineage]):
    """Plugin mode: the models analysed as their nodes finished, by unique_id, and the disk cache
    those analyses read and wrote (a warm plugin run re-analyses nothing).

    Given as `known` to column_lineage_for at the end of the run, its cache is the one the end
    goes on with: the run's pruning then keeps every entry the nodes used.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cache: DiskCache | None = None

    def cache_for(self, target_path: Path, settings: Settings, *, project: str) -> DiskCache:
        """The cache of `target_path`, one instance for the whole run."""
        if self.cache is None or self.cache.root != _cache_root(target_path):
            self.cache = lineage_cache(target_path, settings, project=project)  # reads nothing yet
        return self.cache


class Spellings:
    """Each name's spelling by the earliest relation of the manifest that has it, as the run's
    catalog would spell it (the lineage engine gives names back in that spelling), for runs
    that read the relations' columns a few at a time, as nodes finish (plugin mode, and a
    build's lineage while dbt runs)."""

    def __init__(self, manifest: Manifest) -> None:
        self._rank = {uid: i for i, uid in enumerate(manifest.nodes)}
        self._seen: dict[str, tuple[int, str]] = {}

    def add(self, node: Node, columns: tuple[Column, ...]) -> None:
        rank = self._rank.get(node.unique_id, len(self._rank))
        table = node.identifier or node.name
        for name in (node.database or "", node.schema or "", table, *(c.name for c in columns)):
            known = self._seen.get(name.lower())
            if known is None or rank < known[0]:
                self._seen[name.lower()] = (rank, name)

    def of(
        self, nodes: Iterable[Node], columns: Mapping[str, tuple[Column, ...]]
    ) -> dict[str, str]:
        """lower-case name -> spelling, for the names of these relations and their columns."""
        out: dict[str, str] = {}
        for node in nodes:
            table = node.identifier or node.name
            names = (node.database or "", node.schema or "", table)
            for name in (*names, *(c.name for c in columns.get(node.unique_id, ()))):
                seen = self._seen.get(name.lower())
                if seen is not None:
                    out[name.lower()] = seen[1]
        return out


class RelationsRead:
    """The columns of a run's relations read through dbt's adapter a few at a time, as nodes
    finish (plugin mode, and a build's lineage while dbt runs): each relation once, with the
    spelling the run's catalog would give each name."""

    def __init__(self) -> None:
        self.columns: dict[str, tuple[Column, ...]] = {}
        """Found, by unique_id (a relation the adapter does not know has none)."""
        self.read: set[str] = set()
        self._spellings: Spellings | None = None

    def read_now(self, adapter: Any, manifest: Manifest, nodes: Iterable[Node]) -> None:
        """Read the relations among `nodes` not read yet (one query with DuckDB).

        Raises whatever the adapter raises."""
        missing = {n.unique_id: n for n in nodes if n.unique_id not in self.read}
        if not missing:
            return
        found = relation_columns(adapter, missing.values())
        self.columns.update(found)
        self.read.update(missing)
        if self._spellings is None:
            self._spellings = Spellings(manifest)
        for uid, columns in found.items():
            self._spellings.add(missing[uid], columns)

    def spelling(self, nodes: Iterable[Node]) -> dict[str, str]:
        """lower-case name -> spelling, for these relations' names and columns."""
        if self._spellings is None:
            return {}
        return self._spellings.of(nodes, self.columns)


def prestart(settings: Settings, manifest: Manifest, target_path: Path) -> Prestarted | None:
    """Lineage worker processes started now, when the run will analyse enough models to use
    them: a large project, nothing in this pod's cache, no shared one (a cold pod). They start
    (spawn, imports) while dbt runs or the artifacts are read; the caller closes them."""
    workers = min(os.cpu_count() or 1, 8)
    if workers == 1 or not settings.lineage.column_lineage or settings.lineage.shared_cache:
        return None
    if len(analysable(manifest)) < PARALLEL_THRESHOLD or not lineage_cache(target_path).empty():
        return None
    return Prestarted(workers, manifest.adapter_type).start()


@contextmanager
def closing_workers(started: Prestarted | None) -> Iterator[None]:
    """Stop `prestart`'s workers when the block ends, used or not."""
    try:
        yield
    finally:
        if started is not None:
            started.close()


@contextmanager
def prestarted(
    settings: Settings, manifest: Manifest, target_path: Path
) -> Iterator[Prestarted | None]:
    """`prestart`'s workers for the block (they start while it sets up, say, the transport)."""
    started = prestart(settings, manifest, target_path)
    with closing_workers(started):
        yield started


def analysable(manifest: Manifest) -> set[str]:
    """The manifest's nodes column lineage is made for (ephemeral models are inlined)."""
    return {
        uid
        for uid, n in manifest.nodes.items()
        if n.resource_type in ANALYSED_TYPES and n.materialized != "ephemeral"
    }


def _completed_models(artifacts: RunArtifacts) -> set[str]:
    """The analysed kinds of node that completed in this run."""
    nodes = artifacts.manifest.nodes
    results = artifacts.run_results.results if artifacts.run_results else ()
    return {
        r.unique_id
        for r in results
        if r.status == "success"
        and r.unique_id in nodes
        and nodes[r.unique_id].resource_type in ANALYSED_TYPES
    }


def prune_cache(cache: DiskCache, artifacts: RunArtifacts, wanted: set[str]) -> None:
    """Drop the cache entries this run did not use: all of them when every model of the manifest
    was analysed; else the least recently used beyond a bound (the other models' entries stay)."""
    models = analysable(artifacts.manifest)
    complete = wanted.issuperset(models)
    cache.share(keep_at_most=CACHE_ENTRIES_PER_MODEL * len(models))
    _say_from_shared(cache)
    removed = cache.prune(keep_at_most=0 if complete else CACHE_ENTRIES_PER_MODEL * len(models))
    if removed:
        logger.debug("lineage cache: %d stale entries removed", removed)


def _say_from_shared(cache: DiskCache) -> None:
    """The INFO line saying how many models this run took from the shared store, if any."""
    if cache.from_shared:
        where = cache.shared.where if cache.shared is not None else "the shared store"
        logger.info("lineage cache: %d models from %s", cache.from_shared, where)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectPlace:
    """Where a dbt project's lineage is made: its folders, SQL dialect and default catalog."""

    project_root: Path
    target_path: Path
    dialect: str
    default_catalog: str | None


def column_lineage_for(  # noqa: PLR0913 - keyword-only, each optional part of a run
    settings: Settings,
    artifacts: RunArtifacts,
    *,
    place: ProjectPlace,
    report: Report,
    progress: Callable[[int, int], None] | None = None,
    extra: ColumnLookup | None = None,
    known: Mapping[str, ModelLineage] | None = None,
    guard: bool = True,
    started: Prestarted | None = None,
    settled: Settled | None = None,
) -> dict[str, ModelLineage]:
    """Column lineage of the models that completed, recording the opaque ones in the report.

    `guard`: the events may reach OpenMetadata, so a run where none of the models has column
    lineage is refused (`report.refused`); off for a file or the console, which replace nothing.
    `known`: models already analysed in this run (plugin mode, as each node finished); they and
    the ones already reported opaque are not analysed again. A NodeLineage brings the cache its
    analyses used, so pruning keeps their entries (any other mapping: nothing is pruned when
    every model is known, as nothing of this cache was looked up). `started`: `prestart`'s.
    `settled` hears each model's outcome as it comes (a LineageFeed), then the only holder of
    the lineage found here (the models known before are returned)."""
    wanted = lineage_wanted(settings, artifacts)
    if not wanted:
        return {}
    done = {uid: lin for uid, lin in (known or {}).items() if uid in wanted}
    todo = wanted - set(done) - set(report.opaque)
    if settled is not None:
        for uid in wanted - todo:
            settled(uid, done.get(uid))
    shared = known.cache if isinstance(known, NodeLineage) else None
    if not todo:
        if shared is not None:
            prune_cache(shared, artifacts, wanted)
        return _checked(settings, report, wanted, done, found=len(done), guard=guard)
    project = artifacts.manifest.project_name
    cache = shared or lineage_cache(place.target_path, settings, project=project)
    result = analyse_models(
        artifacts,
        wanted=todo,
        dialect=place.dialect,
        default_catalog=place.default_catalog,
        seed_headers=seed_headers(artifacts.manifest, place.project_root),
        cache=cache,
        workers=min(os.cpu_count() or 1, 8),
        progress=progress,
        extra=extra,
        started=started,
        settled=settled,
        keep=settled is None,
    )
    hits, analysed = result.cache_hits, result.analysed
    logger.debug("column lineage: %d models from the cache, %d analysed here", hits, analysed)
    if shared is not None or not done:  # else entries used elsewhere are unknown here: kept
        prune_cache(cache, artifacts, wanted)
    models = {**done, **{uid: lin for uid, lin in result.models.items() if uid in todo}}
    report.opaque.update({uid: why for uid, why in result.opaque.items() if uid in todo})
    found = len(done) + len(result.found & todo)
    return _checked(settings, report, wanted, models, found=found, guard=guard)


def lineage_feed(  # noqa: PLR0913 - keyword-only, column_lineage_for's
    settings: Settings,
    artifacts: RunArtifacts,
    *,
    place: ProjectPlace,
    report: Report,
    progress: Callable[[int, int], None] | None,
    guard: bool,
    started: Prestarted | None,
    extra: ColumnLookup | None = None,
    known: Mapping[str, ModelLineage] | None = None,
) -> LineageFeed:
    """The run's column lineage as it comes (pipeline.feed), for `dbt-oml emit` and the end of
    `dbt-oml build`: with worker processes started for it, made in a thread while the events
    are built; else here, first (a cache hit or a small project is Python in this process,
    where a second thread would only take turns for the GIL)."""

    def work(settled: Settled) -> dict[str, ModelLineage]:
        try:
            return column_lineage_for(
                settings,
                artifacts,
                place=place,
                report=report,
                progress=progress,
                extra=extra,
                known=known,
                guard=guard,
                started=started,
                settled=settled,
            )
        finally:
            if started is not None:  # whatever happened, no one waits for the hand-over
                started.dispatched.set()

    wanted = lineage_wanted(settings, artifacts)
    if started is None:
        return LineageFeed.made(wanted, work)
    return LineageFeed.start(wanted, work)


def lineage_wanted(settings: Settings, artifacts: RunArtifacts) -> set[str]:
    """The models column lineage is made for: those of the analysed kinds that completed."""
    if not settings.lineage.column_lineage or artifacts.run_results is None:
        return set()
    return _completed_models(artifacts)


def _checked(
    settings: Settings,
    report: Report,
    wanted: set[str],
    models: dict[str, ModelLineage],
    *,
    found: int,
    guard: bool,
) -> dict[str, ModelLineage]:
    """Record the count (`found`: models with lineage); the run-level guard when none has."""
    report.lineage_models = found
    if guard and not found and not settings.lineage.allow_empty_column_lineage:
        report.refused = (
            f"none of the {len(wanted)} models that ran has column lineage; sending would make "
            "OpenMetadata replace the column lineage it holds with none. Fix the cause above "
            "(missing catalog.json?) or pass --allow-empty-column-lineage"
        )
    return models


def project_graph(
    artifacts: RunArtifacts,
    *,
    project_dir: Path,
    dialect: str,
    default_catalog: str | None,
    cache: LineageCache | None,
) -> tuple[dict[str, ModelLineage], ColumnGraph]:
    """Every (non-ephemeral) model analysed, and the project's column graph over them.

    Shared by `dbt-oml lineage` (and the explorer) and `dbt-oml impact`.
    """
    wanted = analysable(artifacts.manifest)
    headers = seed_headers(artifacts.manifest, project_dir)
    result = analyse_models(
        artifacts,
        wanted=wanted,
        dialect=dialect,
        default_catalog=default_catalog,
        seed_headers=headers,
        cache=cache,
        workers=min(os.cpu_count() or 1, 8),
    )
    if isinstance(cache, DiskCache):
        _say_from_shared(cache)
    graph = build_graph(
        artifacts.manifest,
        result.models,
        opaque=result.opaque,
        known=known_columns(artifacts, seed_headers=headers),
    )
    return dict(result.models), graph
