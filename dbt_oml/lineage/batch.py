"""Column lineage for every model of a run: schema assembly, dependency order, cache seam.

No file or network I/O: the seed CSV headers and the cache are passed in. Not pure in one way:
with `workers` > 1 on a large project it starts worker processes (`lineage.workers`, whose spawn
sets up each worker's `__main__`); with one worker everything runs in this process.

The schema used to expand `*` comes, best source first, from catalog.json; the analysed outputs
of upstream models (models are analysed in dependency order); seed CSV headers; columns declared
in YAML; and an optional extra lookup (the OpenMetadata transport's columns for relations dbt
cannot introspect).

sqlglot (with the engine) is imported on the first model that must be analysed: a warm run,
every model a cache hit, never loads it (the cache key needs only lineage.version).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

from dbt_oml.artifacts import Column, Node, RunArtifacts, relation_parts
from dbt_oml.lineage.model import ModelLineage, build_schema, wants_own_columns
from dbt_oml.lineage.types import Lasting
from dbt_oml.lineage.version import ENGINE_VERSION
from dbt_oml.lineage.workers import (
    MODEL_TIMEOUT,
    Analyse,
    Prestarted,
    WorkerSetup,
    analyse_one,
    analyse_parallel,
)

if TYPE_CHECKING:
    from sqlglot.schema import MappingSchema  # sqlglot loads on the first cache miss only

logger = logging.getLogger(__name__)

#: `_order`'s marks: a node's parents are being walked / the node is placed in the order.
_VISITING: Final = 1
_PLACED: Final = 2

#: Columns of a relation as (name, type) pairs; None when nothing is known.
ColumnLookup = Callable[[Node], tuple[Column, ...] | None]


class LineageCache(Protocol):
    """Content-addressed storage of analysed models (see lineage.cache.DiskCache)."""

    def get(self, key: str) -> ModelLineage | Lasting | None: ...
    def put(self, key: str, value: ModelLineage | Lasting) -> None: ...
    def put_entry(self, key: str, text: str) -> None:
        """`put` of a lineage already encoded (codec.lineage_to_json), as a worker sent it."""

    def flush(self) -> None:
        """Store what `put` was given (called once, at the end of `analyse_models`)."""


@dataclass(slots=True)
class LineageReport:
    """Per model: its lineage, or why it is opaque."""

    models: dict[str, ModelLineage] = field(default_factory=dict)
    opaque: dict[str, str] = field(default_factory=dict)
    found: set[str] = field(default_factory=set)
    """The models with lineage (in `models` too, unless the analysis was asked not to keep it)."""
    cache_hits: int = 0
    analysed: int = 0


ANALYSED_TYPES = frozenset({"model", "snapshot"})


def _order(artifacts: RunArtifacts, wanted: set[str]) -> list[Node]:
    """The wanted nodes and their model ancestors, parents before children (stable order)."""
    nodes = artifacts.manifest.nodes
    out: list[Node] = []
    state: dict[str, int] = {}
    for uid in sorted(wanted):
        stack: list[tuple[str, bool]] = [(uid, False)]
        while stack:
            current, expanded = stack.pop()
            node = nodes.get(current)
            if node is None or node.resource_type not in ANALYSED_TYPES:
                continue
            if expanded:
                if state.get(current) != _PLACED:
                    state[current] = _PLACED
                    out.append(node)
                continue
            if state.get(current):
                continue
            state[current] = _VISITING
            stack.append((current, True))
            stack.extend((p, False) for p in reversed(node.depends_on) if not state.get(p))
    return out


def _independent(artifacts: RunArtifacts, todo: list[_Job], tables: _Tables) -> list[_Job]:
    """The jobs whose upstream columns are all known up front (for the workers), in the order
    the run's events will ask for them."""
    ready = (t for t in todo if all(p in tables.known for p in _relations(artifacts, t[0])))
    return sorted(ready, key=_finish_order(artifacts))


def _finish_order(artifacts: RunArtifacts) -> Callable[[_Job], int]:
    """Sort key of a job: when its node finished in the run, the order the run's events are
    built in (untimed nodes last). Jobs without a dependency on each other may go in any order;
    this one lets each model's events be built as soon as the model is analysed."""
    results = artifacts.run_results.results if artifacts.run_results else ()
    timed = sorted((r.completed_at, r.unique_id) for r in results if r.completed_at)
    rank = {uid: i for i, (_, uid) in enumerate(timed)}
    return lambda job: rank.get(job[0].unique_id, len(rank))


def _own_columns(artifacts: RunArtifacts) -> dict[str, tuple[str, ...]]:
    """Models' own catalog columns, where their SQL may need them (a `select *` over a file or a
    relation nobody knows the columns of; a PIVOT whose columns come from the data)."""
    if artifacts.catalog is None:
        return {}
    out = {}
    for uid, columns in artifacts.catalog.columns.items():
        node = artifacts.manifest.nodes.get(uid)
        sql = node.compiled_code if node else None
        if (
            node is not None
            and node.resource_type in ANALYSED_TYPES
            and columns
            and sql
            and wants_own_columns(sql)
        ):
            out[uid] = tuple(c.name for c in columns)
    return out


def _key(
    node: Node,
    sql: str,
    dialect: str,
    upstream: Mapping[str, tuple[Column, ...]],
    *,
    own: tuple[str, ...] = (),
    respelled: Mapping[str, str] | None = None,
) -> str:
    doc = {
        "engine": ENGINE_VERSION,
        "dialect": dialect,
        "sql": sql,
        "upstream": {k: [[c.name, c.type] for c in v] for k, v in sorted(upstream.items())},
        "relation": [node.database, node.schema, node.identifier],
        **({"own": list(own)} if own else {}),
        **({"spelled": sorted(respelled.items())} if respelled else {}),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


@dataclass(slots=True)
class _Tables:
    """{catalog: {schema: {table: {column: type}}}} plus the original spelling of every name."""

    tables: dict[str, dict[str, dict[str, dict[str, str]]]] = field(default_factory=dict)
    case: dict[str, str] = field(default_factory=dict)
    known: dict[str, tuple[Column, ...]] = field(default_factory=dict)

    def add(self, node: Node, columns: tuple[Column, ...]) -> None:
        db, schema, table = relation_parts(node)
        self.tables.setdefault(db, {}).setdefault(schema, {})[table] = {
            c.name: (c.type or "UNKNOWN") for c in columns
        }
        for name in (db, schema, table, *(c.name for c in columns)):
            lowered = name.lower()  # a new string, even when equal: the name serves as both
            self.case.setdefault(name if lowered == name else lowered, name)
        self.known[node.unique_id] = columns

    def add_all(self, artifacts: RunArtifacts, known: Mapping[str, tuple[Column, ...]]) -> None:
        for uid, columns in known.items():
            self.add(artifacts.manifest.nodes[uid], columns)


def known_columns(
    artifacts: RunArtifacts,
    *,
    seed_headers: Mapping[str, tuple[str, ...]] | None = None,
    extra: ColumnLookup | None = None,
) -> dict[str, tuple[Column, ...]]:
    """Columns of every relation node that some source knows, by unique_id (best first)."""
    catalog = artifacts.catalog.columns if artifacts.catalog else {}
    out: dict[str, tuple[Column, ...]] = {}
    for uid, node in artifacts.manifest.nodes.items():
        if not node.is_relation:
            continue
        if catalog.get(uid):
            out[uid] = catalog[uid]
        elif node.resource_type == "seed" and seed_headers and seed_headers.get(uid):
            out[uid] = tuple(Column(name=n) for n in seed_headers[uid])
        elif node.resource_type == "source" and extra is not None and (found := extra(node)):
            out[uid] = found
        elif node.columns and node.resource_type in {"source", "seed"}:
            out[uid] = node.columns
    return out


#: Below this many models to analyse, worker processes cost more than they save.
PARALLEL_THRESHOLD = 200


def analyse_models(  # noqa: PLR0913 - keyword-only options with defaults; 30 call sites
    artifacts: RunArtifacts,
    *,
    wanted: set[str],
    dialect: str,
    default_catalog: str | None = None,
    seed_headers: Mapping[str, tuple[str, ...]] | None = None,
    extra: ColumnLookup | None = None,
    cache: LineageCache | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    timeout: float = MODEL_TIMEOUT,
    analyse: Analyse = analyse_one,
    spelling: Mapping[str, str] | None = None,
    started: Prestarted | None = None,
    settled: Settled | None = None,
    keep: bool = True,
) -> LineageReport:
    """Column lineage of the `wanted` models (analysing their model ancestors first).

    A model without catalog columns lends its analysed outputs to its children, so a `select *`
    over it still expands; one model's failure only makes that model (and any `*` over it) opaque.
    With `workers` > 1 and a large project, models whose upstream columns are all known up front
    are analysed in parallel processes, each model within `timeout` seconds; the rest follow in
    dependency order. Whatever goes wrong with one model (a LineageError, RecursionError on
    hostile SQL, a bug, a hung worker) makes that model opaque with the reason; this never
    raises for a model. `progress` hears (models analysed, models to analyse); `analyse` is
    the per-model seam (tests); `spelling` (lower-case name -> spelling) is what a wider
    catalog would have spelled first (the plugin gives one model's relations); `started`:
    workers started earlier; `settled` hears each outcome as it comes (None: opaque); `keep`:
    False when `settled` is the only reader of the lineage (the report then counts the models
    with lineage, `found`, and holds none of them).
    """
    tables = _Tables(case=dict(spelling or {}))
    tables.add_all(artifacts, known_columns(artifacts, seed_headers=seed_headers, extra=extra))
    run = _Analysis.over(
        artifacts, tables, dialect=dialect, default_catalog=default_catalog, cache=cache
    )
    run.analyse, run.settled, run.keep = analyse, settled or _unheard, keep
    todo = run.plan(wanted)
    total, finished = len(todo), 0
    run.progress = (lambda done: progress(done, total)) if progress is not None else None
    independent = _independent(artifacts, todo, tables)
    if workers > 1 and len(independent) >= PARALLEL_THRESHOLD:
        done = run.parallel(independent, workers=workers, timeout=timeout, started=started)
        todo = [t for t in todo if t[0].unique_id not in done]
        finished = len(done)
    for node, sql, key in todo:
        finished += 1
        if progress is not None and finished % 50 == 0:
            progress(finished, total)
        run.done(node, key, run.one(node, sql))
    if cache is not None:
        cache.flush()
    return run.report


#: A model to analyse: its node, SQL (files read as relations) and cache key.
_Job = tuple[Node, str, str]
#: Hears a model's outcome: (unique_id, its lineage or None when it is opaque).
Settled = Callable[[str, ModelLineage | None], None]


def _unheard(_unique_id: str, _lineage: ModelLineage | None) -> None:
    """No one listens for outcomes as they come."""


@dataclass(slots=True, kw_only=True)
class _Analysis:
    """One `analyse_models` call: how it analyses a model, and what it has found so far."""

    artifacts: RunArtifacts
    dialect: str
    default_catalog: str | None
    cache: LineageCache | None
    analyse: Analyse
    tables: _Tables
    schema: _LazySchema
    own: dict[str, tuple[str, ...]]
    settled: Settled
    keep: bool = True
    report: LineageReport = field(default_factory=LineageReport)
    progress: Callable[[int], None] | None = None
    """Hears how many models the workers have analysed, every 50 and at the end."""

    @classmethod
    def over(
        cls,
        artifacts: RunArtifacts,
        tables: _Tables,
        *,
        dialect: str,
        default_catalog: str | None,
        cache: LineageCache | None,
    ) -> _Analysis:
        """An analysis of `artifacts` over the relations' columns in `tables`."""
        return cls(
            artifacts=artifacts,
            dialect=dialect,
            default_catalog=default_catalog,
            cache=cache,
            analyse=analyse_one,
            tables=tables,
            schema=_LazySchema(tables, dialect),
            own=_own_columns(artifacts),
            settled=_unheard,
        )

    def plan(self, wanted: set[str]) -> list[_Job]:
        """The models to analyse, in dependency order; cached and SQL-less ones are settled."""
        external = file_sources(self.artifacts)
        run_results = self.artifacts.run_results
        results = {r.unique_id: r for r in run_results.results} if run_results else {}
        todo: list[_Job] = []
        for node in _order(self.artifacts, wanted):
            if node.materialized == "ephemeral":
                continue  # inlined as a CTE into its readers
            result = results.get(node.unique_id)
            sql = (result.compiled_code if result else None) or node.compiled_code
            if not sql:
                self.opaque(node, "no compiled SQL in the artifacts")
                continue
            sql = read_as_relations(sql, external)
            known = self.tables.known
            upstream = {p: known[p] for p in _relations(self.artifacts, node) if p in known}
            own = self.own.get(node.unique_id, ())
            respelled = self.respelled(node, upstream)
            key = _key(node, sql, self.dialect, upstream, own=own, respelled=respelled)
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is not None:
                self.report.cache_hits += 1
                if isinstance(cached, Lasting):
                    self.opaque(node, cached)  # the verdict this SQL always gets
                else:
                    self.record(node, cached)
                continue
            todo.append((node, sql, key))
        return todo

    def respelled(self, node: Node, upstream: Mapping[str, tuple[Column, ...]]) -> dict[str, str]:
        """The names this model's lineage gives back that the run's catalog spells otherwise
        than the relation holding them does (names are given back in the catalog's first
        spelling): two runs that differ there must not share a cache entry."""
        nodes = self.artifacts.manifest.nodes
        names = [*relation_parts(node), *self.own.get(node.unique_id, ())]
        for uid, columns in upstream.items():
            names += [*relation_parts(nodes[uid]), *(c.name for c in columns)]
        case = self.tables.case
        return {n.lower(): case[n.lower()] for n in names if case.get(n.lower(), n) != n}

    def parallel(
        self, jobs: list[_Job], *, workers: int, timeout: float, started: Prestarted | None
    ) -> set[str]:
        """Analyse jobs in worker processes; the unique_ids done (none when no pool can start)."""
        setup = WorkerSetup(
            tables=self.tables.tables,
            case=self.tables.case,
            dialect=self.dialect,
            default_catalog=self.default_catalog,
            timeout=timeout,
            analyse=self.analyse,
            own_columns={
                n.unique_id: self.own[n.unique_id] for n, _, _ in jobs if n.unique_id in self.own
            },
        )
        waiting = {n.unique_id: (n, key) for n, _, key in jobs}
        arrivals = [0]

        def arrived(unique_id: str, outcome: ModelLineage | str, entry: str | None) -> None:
            self.done(*waiting[unique_id], outcome, entry=entry)
            arrivals[0] += 1
            count = arrivals[0]
            if self.progress is not None and (count % 50 == 0 or count == len(jobs)):
                self.progress(count)

        return analyse_parallel(
            [(n.unique_id, sql) for n, sql, _ in jobs],
            setup=setup,
            workers=workers,
            started=started,
            each=arrived,  # recorded as they come; none when no pool could run: all go serially
        )

    def one(self, node: Node, sql: str) -> ModelLineage | str:
        """One model analysed in this process (a string: why it is opaque)."""
        own = self.own.get(node.unique_id)
        return self.analyse(
            sql,
            schema=self.schema.get(),
            dialect=self.dialect,
            unique_id=node.unique_id,
            default_catalog=self.default_catalog,
            case=self.tables.case,
            **({"own_columns": own} if own is not None else {}),
        )

    def done(
        self, node: Node, key: str, outcome: ModelLineage | str, *, entry: str | None = None
    ) -> None:
        """Record a model's outcome: opaque with its reason, or analysed (and cached; `entry`:
        the lineage encoded already)."""
        if isinstance(outcome, str):
            if isinstance(outcome, Lasting) and self.cache is not None:
                self.cache.put(key, outcome)
            self.opaque(node, outcome)
            return
        self.report.analysed += 1
        if self.cache is not None and entry is not None:
            self.cache.put_entry(key, entry)
        elif self.cache is not None:
            self.cache.put(key, outcome)
        self.record(node, outcome)

    def record(self, node: Node, lineage: ModelLineage) -> None:
        self.report.found.add(node.unique_id)
        if self.keep:
            self.report.models[node.unique_id] = lineage
        if node.unique_id not in self.tables.known:  # its children's `*` expands to its outputs
            self.schema.add(node, tuple(Column(name=e.output) for e in lineage.columns))
        self.settled(node.unique_id, lineage)

    def opaque(self, node: Node, reason: str) -> None:
        self.report.opaque[node.unique_id] = reason
        self.settled(node.unique_id, None)


class _LazySchema:
    """The MappingSchema, built on the first cache miss (a warm run never needs it)."""

    def __init__(self, tables: _Tables, dialect: str) -> None:
        self.tables = tables
        self.dialect = dialect
        self.schema: MappingSchema | None = None

    def get(self) -> MappingSchema:
        if self.schema is None:
            self.schema = build_schema(self.tables.tables, dialect=self.dialect)
        return self.schema

    def add(self, node: Node, columns: tuple[Column, ...]) -> None:
        self.tables.add(node, columns)
        if self.schema is not None:
            types = {c.name: "UNKNOWN" for c in columns}
            self.schema.add_table(_table_ref(node), types, dialect=self.dialect)


def file_sources(artifacts: RunArtifacts) -> dict[str, str]:
    """dbt-duckdb sources with `external_location`: the file read `source()` compiles to (its
    `relation_name`, e.g. `read_json('data/x/*.json')`) -> the source's own relation name.

    The lineage engine then attributes their columns to the source's dataset, which the event
    already lists as an input, never to the files. A location two sources share maps to neither.
    """
    found: dict[str, list[str]] = {}
    for node in artifacts.manifest.nodes.values():
        text = (node.relation_name or "").strip()
        if node.resource_type == "source" and ("(" in text or text.startswith("'")):
            found.setdefault(text, []).append(_table_ref(node))
    return {text: refs[0] for text, refs in found.items() if len(refs) == 1}


def read_as_relations(sql: str, sources: Mapping[str, str]) -> str:
    """`sql` with each file read of a source (as dbt rendered it) replaced by the source itself.

    >>> read_as_relations("select a from read_json('x/*.json') as s",
    ...                   {"read_json('x/*.json')": '"w"."api"."x"'})
    'select a from "w"."api"."x" as s'
    """
    for text in sorted((t for t in sources if t in sql), key=len, reverse=True):
        sql = sql.replace(text, sources[text])
    return sql


def _relations(artifacts: RunArtifacts, node: Node) -> list[str]:
    """unique_ids of the relations a model reads (ephemeral models are inlined into its SQL)."""
    return sorted(n.unique_id for n in artifacts.manifest.relations_read(node))


def _table_ref(node: Node) -> str:
    parts = relation_parts(node)
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts if p)
