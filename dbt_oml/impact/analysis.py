"""`dbt-oml impact`: what downstream reads given columns, or the columns a change touches.

Pure: works on two builds of a project (a production `--state` and the current one), each as
artifacts already analysed into a column graph. Models whose compiled SQL changed (relations
named by unique_id, so targets compare equal) have their columns compared: a column gone is
removed, one with the same definition under a new name renamed, one whose definition differs
changed (impact.sql). Every column, model (rows), dbt test and exposure downstream of a changed
column is listed with the path from it. Readers that are opaque now because they still read the
old name keep their production lineage when their own SQL did not change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from sqlglot.schema import MappingSchema

from dbt_oml.artifacts import Manifest, Node
from dbt_oml.impact.exposures import Exposure
from dbt_oml.impact.sql import (
    Definitions,
    definitions,
    normalized_sql,
    relation_index,
    schema_of,
)
from dbt_oml.lineage.graph import ColumnGraph, Edge, Key, RowsEdge, file_id
from dbt_oml.lineage.types import ModelLineage, SourceColumn, Transformation

#: Change kinds; "selected" is a column named on the command line.
REMOVED, RENAMED, CHANGED, SELECTED = "removed", "renamed", "changed", "selected"
FAIL_ON: Final = {"removed": {REMOVED, RENAMED}, "changed": {REMOVED, RENAMED, CHANGED}}
Path = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ColumnChange:
    node: str
    column: str
    change: str
    new_name: str | None = None
    before: str = ""
    """The column's definition in the state build (changed columns)."""
    after: str = ""


@dataclass(frozen=True, slots=True)
class Reader:
    """A column (or, with column None, a model's rows) that reads a changed column."""

    node: str
    column: str | None
    path: Path
    """(node, column) from the changed column to the column read, both included."""
    transformations: tuple[Transformation, ...]
    direct: bool
    """Every hop carries the value (DIRECT); else some hop only shapes it."""
    via_state: bool = False
    """The reader is opaque in the current build; its lineage is the --state build's."""


@dataclass(frozen=True, slots=True)
class TestReader:
    node: str
    name: str
    column: str | None
    path: Path
    """From the changed column to the (model, column) the test checks."""


@dataclass(frozen=True, slots=True)
class ExposureReader:
    exposure: Exposure
    path: Path
    """From the changed column to a column of the model the exposure uses."""


@dataclass(frozen=True, slots=True)
class Impact:
    change: ColumnChange
    columns: tuple[Reader, ...] = ()
    rows: tuple[Reader, ...] = ()
    tests: tuple[TestReader, ...] = ()
    exposures: tuple[ExposureReader, ...] = ()

    @property
    def still_read(self) -> bool:
        """Something downstream reads the column under its old name (it breaks when removed)."""
        old = self.change.column.lower()
        readers = (*self.columns, *self.rows)
        return any(r.path[0][1].lower() == old for r in readers) or any(
            t.path[0][1].lower() == old for t in self.tests
        )


@dataclass(frozen=True, slots=True)
class Build:
    """One build of the project: manifest, compiled SQL, analysed models and column graph."""

    manifest: Manifest
    graph: ColumnGraph
    models: Mapping[str, ModelLineage]
    sql: Mapping[str, str]
    """Compiled SQL by unique_id (run_results first, then the manifest)."""


@dataclass(slots=True)
class Comparison:
    changes: list[ColumnChange] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    renames: dict[tuple[str, str], str] = field(default_factory=dict)
    """(unique_id, current name lower-cased) -> the state build's name."""


@dataclass(frozen=True, slots=True)
class Report:
    impacts: tuple[Impact, ...]
    comparison: Comparison | None = None
    state: str | None = None

    def failing(self, fail_on: str | None) -> list[Impact]:
        """The impacts that make `--fail-on KIND` exit 1."""
        kinds = FAIL_ON.get(fail_on or "", set())
        return [i for i in self.impacts if i.change.change in kinds and i.still_read]


# -- comparing two builds ----------------------------------------------------------------


def _order(manifest: Manifest, uids: Iterable[str]) -> list[str]:
    """`uids` parents first (dependency order of the manifest)."""
    wanted, out, seen = set(uids), [], set()

    def visit(uid: str) -> None:
        if uid in seen:
            return
        seen.add(uid)
        node = manifest.get(uid)
        for parent in node.depends_on if node else ():
            visit(parent)
        if uid in wanted:
            out.append(uid)

    for uid in sorted(wanted):
        visit(uid)
    return out


def _analysed(node: Node | None) -> bool:
    return node is not None and node.resource_type in {"model", "snapshot"} and node.is_relation


def modified_models(
    state: tuple[Manifest, Mapping[str, str]], current: tuple[Manifest, Mapping[str, str]]
) -> tuple[list[str], list[str], list[str]]:
    """(modified, added, removed) models and snapshots of two (manifest, compiled SQL) builds,
    by their relation-neutral SQL."""
    (old, old_sql), (new, new_sql) = state, current
    before = {u for u, n in old.nodes.items() if _analysed(n)}
    after = {u for u, n in new.nodes.items() if _analysed(n)}
    modified = []
    for uid in sorted(before & after):
        a, b = _sql_of(old, old_sql, uid), _sql_of(new, new_sql, uid)
        if a is None or b is None:
            continue
        if normalized_sql(old.nodes[uid], old, a) != normalized_sql(new.nodes[uid], new, b):
            modified.append(uid)
    return modified, sorted(after - before), sorted(before - after)


def _sql_of(manifest: Manifest, sql: Mapping[str, str], uid: str) -> str | None:
    node = manifest.get(uid)
    return sql.get(uid) or (node.compiled_code if node else None)


def _sql(build: Build, uid: str) -> str | None:
    return _sql_of(build.manifest, build.sql, uid)


def _columns(build: Build, uid: str) -> dict[str, str]:
    """lower-cased -> spelled output columns: the analysed ones, else the known ones."""
    lineage = build.models.get(uid)
    if lineage is not None:
        return {e.output.lower(): e.output for e in lineage.columns}
    node = build.graph.nodes.get(uid)
    return {c.lower(): c for c in node.columns} if node else {}


def _inputs(build: Build, uid: str, column: str, renames: Mapping[Key, str]) -> frozenset[str]:
    return frozenset(
        f"{e.source}.{renames.get((e.source, e.source_column.lower()), e.source_column.lower())}"
        f":{sorted(t[:3] for t in e.transformations)}"
        for e in build.graph.upstream.get((uid, column), [])
    )


@dataclass(frozen=True, slots=True)
class _Side:
    """One build's view of one modified model: its column definitions and the renames above."""

    build: Build
    uid: str
    defs: Definitions
    renames: Mapping[Key, str]

    def same(self, column: str, other: _Side, other_column: str) -> bool:
        mine, theirs = self.defs.columns.get(column), other.defs.columns.get(other_column)
        if mine is not None and theirs is not None:
            return mine == theirs
        return _inputs(self.build, self.uid, column, self.renames) == _inputs(
            other.build, other.uid, other_column, other.renames
        )


def compare(state: Build, current: Build, *, dialect: str = "duckdb") -> Comparison:
    """The removed, renamed and changed columns of the models whose compiled SQL changed."""
    result = Comparison()
    result.modified, result.added, result.removed = modified_models(
        (state.manifest, state.sql), (current.manifest, current.sql)
    )
    state_cols = {u: tuple(n.columns) for u, n in state.graph.nodes.items()}
    current_cols = {u: tuple(n.columns) for u, n in current.graph.nodes.items()}
    schemas = (schema_of(state.manifest, state_cols), schema_of(current.manifest, current_cols))
    indexes = (relation_index(state.manifest), relation_index(current.manifest))
    for uid in _order(current.manifest, result.modified):
        before, after = _columns(state, uid), _columns(current, uid)
        opaque = current.graph.nodes[uid].opaque if uid in current.graph.nodes else None
        if not after:
            result.notes.append(f"{uid}: its columns cannot be compared (opaque now: {opaque})")
            continue
        old = _Side(state, uid, _defs(state, uid, schemas[0], indexes[0], {}, dialect), {})
        renames = result.renames
        new = _Side(
            current, uid, _defs(current, uid, schemas[1], indexes[1], renames, dialect), renames
        )
        found = _diff(uid, before, after, old, new, result.renames)
        if not found:
            result.notes.append(
                f"{uid}: compiled SQL changed, no column's definition did (its rows may have)"
            )
        result.changes += found
    for uid in result.removed:
        result.changes += [ColumnChange(uid, c, REMOVED) for c in _columns(state, uid).values()]
    return result


def _defs(
    build: Build,
    uid: str,
    schema: MappingSchema,
    index: Mapping[tuple[str, str, str], str],
    renames: Mapping[Key, str],
    dialect: str,
) -> Definitions:
    sql = _sql(build, uid)
    if not sql:
        return Definitions({})
    return definitions(sql, schema=schema, index=index, dialect=dialect, renames=renames)


def _diff(
    uid: str,
    before: Mapping[str, str],
    after: Mapping[str, str],
    old: _Side,
    new: _Side,
    renames: dict[Key, str],
) -> list[ColumnChange]:
    out: list[ColumnChange] = []
    gone = [c for c in before if c not in after]
    fresh = [c for c in after if c not in before]
    for column in gone:
        matches = [f for f in fresh if old.same(column, new, f)]
        if len(matches) == 1:
            fresh.remove(matches[0])
            renames[(uid, matches[0])] = column
            out.append(ColumnChange(uid, before[column], RENAMED, new_name=after[matches[0]]))
        else:
            out.append(ColumnChange(uid, before[column], REMOVED))
    for column in before:
        if column in after and not old.same(column, new, column):
            out.append(
                ColumnChange(
                    uid,
                    before[column],
                    CHANGED,
                    before=old.defs.columns.get(column, ""),
                    after=new.defs.columns.get(column, ""),
                )
            )
    return out


def borrow(current: Build, state: Build, modified: Iterable[str]) -> tuple[ColumnGraph, set[str]]:
    """The current graph, where a model is opaque now but its SQL did not change, with the
    state build's edges into it (it is opaque because it still reads what changed)."""
    changed = set(modified)
    graph = ColumnGraph(
        nodes=dict(current.graph.nodes),
        upstream={k: list(v) for k, v in current.graph.upstream.items()},
        downstream={k: list(v) for k, v in current.graph.downstream.items()},
        rows={k: list(v) for k, v in current.graph.rows.items()},
    )
    borrowed: set[str] = set()
    for uid, node in current.graph.nodes.items():
        if not node.opaque or uid in changed or uid not in state.models:
            continue
        borrowed.add(uid)
        for edge in _edges_into(state.graph, uid):
            graph.upstream.setdefault((uid, edge.target_column.lower()), []).append(edge)
            graph.downstream.setdefault((edge.source, edge.source_column.lower()), []).append(edge)
        for rows in (r for r in state.graph.rows_edges() if r.target == uid):
            graph.rows.setdefault((rows.source, rows.source_column.lower()), []).append(rows)
    return graph, borrowed


def _edges_into(graph: ColumnGraph, uid: str) -> list[Edge]:
    return [e for (target, _), edges in graph.upstream.items() if target == uid for e in edges]


# -- what reads a column -----------------------------------------------------------------


def readers(
    graph: ColumnGraph, node: str, column: str, *, via_state: set[str] | None = None
) -> tuple[list[Reader], list[Reader]]:
    """Every column downstream of (node, column), and every model whose rows it shapes, each
    with its shortest path (breadth first)."""
    via_state = via_state or set()
    start = (node, column.lower())
    spelled = graph.column(node, column) or column
    queue: deque[tuple[Key, Path, bool]] = deque([(start, ((node, spelled),), True)])
    seen, seen_rows = {start}, set()
    columns: list[Reader] = []
    rows: list[Reader] = []
    while queue:
        key, path, direct = queue.popleft()
        for edge in sorted(graph.downstream.get(key, []), key=_edge_order):
            far = (edge.target, edge.target_column.lower())
            if far in seen:
                continue
            seen.add(far)
            step = (*path, (edge.target, edge.target_column))
            both = direct and edge.direct
            columns.append(
                Reader(
                    edge.target,
                    edge.target_column,
                    step,
                    edge.transformations,
                    both,
                    edge.target in via_state,
                )
            )
            queue.append((far, step, both))
        for rows_edge in sorted(graph.rows.get(key, []), key=_rows_order):
            if rows_edge.target in seen_rows:
                continue
            seen_rows.add(rows_edge.target)
            rows.append(
                Reader(
                    rows_edge.target,
                    None,
                    path,
                    rows_edge.transformations,
                    False,
                    rows_edge.target in via_state,
                )
            )
    return columns, rows


def _edge_order(edge: Edge) -> tuple[str, str]:
    return (edge.target, edge.target_column)


def _rows_order(edge: RowsEdge) -> str:
    return edge.target


#: test unique_id -> the (node, lower-cased column) pairs it checks
TestReads = Mapping[str, frozenset[Key]]


def columns_tested(
    manifest: Manifest, *, singular: Mapping[str, ModelLineage] | None = None
) -> dict[str, frozenset[Key]]:
    """The columns each dbt test checks.

    A generic test checks its column (and a relationships test the `field` of the other
    model); a singular test the columns its WHERE/JOIN/GROUP BY use and those it computes
    with (`singular`: its analysed SQL), not the columns it only shows.
    """
    index = relation_index(manifest)
    out: dict[str, frozenset[Key]] = {}
    for uid, node in manifest.nodes.items():
        info = node.test
        if info is None:
            continue
        reads: set[Key] = set()
        attached = info.attached_node or (node.depends_on[0] if node.depends_on else None)
        if info.generic and info.column and attached:
            reads.add((attached, _unquote(info.column)))
            field_name = dict(info.kwargs).get("field")
            others = [d for d in node.depends_on if d != attached]
            if field_name and len(others) == 1:
                reads.add((others[0], _unquote(field_name)))
        lineage = (singular or {}).get(uid)
        if lineage is not None and not info.generic:
            sources = [s for s, _ in lineage.dataset]
            sources += [
                s
                for e in lineage.columns
                for s, ts in e.inputs
                if any(t.subtype != "IDENTITY" for t in ts)
            ]
            reads |= {(_node_id(index, s), s.column.lower()) for s in sources}
        if reads:
            out[uid] = frozenset(reads)
    return out


def _unquote(name: str) -> str:
    return name.strip().strip('"`[]').lower()


def _node_id(index: Mapping[tuple[str, str, str], str], source: SourceColumn) -> str:
    if source.catalog == "file":
        return file_id(source.table)
    key = (source.catalog.lower(), source.schema.lower(), source.table.lower())
    return index.get(key, ".".join(key))


def impact_of(
    change: ColumnChange,
    graph: ColumnGraph,
    *,
    tests: TestReads,
    manifest: Manifest,
    exposures: Iterable[Exposure] = (),
    via_state: set[str] | None = None,
    also: Iterable[str] = (),
) -> Impact:
    """Everything downstream of one changed column (and of its `also` names: a renamed
    column's new name, read by models that follow the rename)."""
    columns, rows = readers(graph, change.node, change.column, via_state=via_state)
    for name in also:
        more_columns, more_rows = readers(graph, change.node, name, via_state=via_state)
        known = {(r.node, r.column) for r in (*columns, *rows)}
        columns += [r for r in more_columns if (r.node, r.column) not in known]
        rows += [r for r in more_rows if (r.node, r.column) not in known]
    reached: dict[Key, Path] = {
        (change.node, change.column.lower()): ((change.node, change.column),)
    }
    for name in also:
        reached.setdefault((change.node, name.lower()), ((change.node, name),))
    for reader in columns:
        reached.setdefault((reader.node, (reader.column or "").lower()), reader.path)
    found_tests = []
    for uid, keys in sorted(tests.items()):
        hit = next((k for k in sorted(keys) if k in reached), None)
        if hit is not None:
            test = manifest.nodes[uid]
            found_tests.append(TestReader(uid, test.name, _checked(test), reached[hit]))
    by_model: dict[str, Path] = {}
    for (node, _), path in reached.items():
        by_model.setdefault(node, path)
    for reader in rows:
        by_model.setdefault(reader.node, reader.path)
    found_exposures = [
        ExposureReader(e, by_model[dep])
        for e in exposures
        for dep in [next((d for d in e.depends_on if d in by_model), None)]
        if dep is not None
    ]
    return Impact(change, tuple(columns), tuple(rows), tuple(found_tests), tuple(found_exposures))


def _checked(node: Node) -> str | None:
    return node.test.column if node.test else None


def analyse_impact(
    changes: Iterable[ColumnChange],
    graph: ColumnGraph,
    *,
    tests: TestReads,
    manifest: Manifest,
    exposures: Iterable[Exposure] = (),
    via_state: set[str] | None = None,
) -> tuple[Impact, ...]:
    """The impact of every change (a renamed column: readers of both names)."""
    exposures = tuple(exposures)
    return tuple(
        impact_of(
            c,
            graph,
            tests=tests,
            manifest=manifest,
            exposures=exposures,
            via_state=via_state,
            also=[c.new_name] if c.new_name else [],
        )
        for c in changes
    )
