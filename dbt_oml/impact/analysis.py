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

from dbt_oml.artifacts import Manifest, Node, RelationKey, relation_key
from dbt_oml.impact.compare import compare, modified_models
from dbt_oml.impact.exposures import Exposure
from dbt_oml.impact.findings import (
    CHANGED,
    FAIL_ON,
    REMOVED,
    RENAMED,
    SELECTED,
    Build,
    ColumnChange,
    Comparison,
    ExposureReader,
    Impact,
    OpaqueReader,
    Path,
    Reader,
    Report,
    TestReader,
)
from dbt_oml.impact.sql import relation_index
from dbt_oml.lineage.graph import ColumnGraph, Edge, Key, RowsEdge, file_id
from dbt_oml.lineage.types import ModelLineage, SourceColumn

__all__ = [
    "CHANGED",
    "FAIL_ON",
    "REMOVED",
    "RENAMED",
    "SELECTED",
    "Build",
    "ColumnChange",
    "Comparison",
    "ExposureReader",
    "Impact",
    "OpaqueReader",
    "Path",
    "Reader",
    "Report",
    "TestReader",
    "analyse_impact",
    "bearing_on",
    "borrow",
    "columns_tested",
    "compare",
    "impact_of",
    "modified_models",
    "readers",
    "uncompiled",
]


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


def uncompiled(manifest: Manifest, sql: Mapping[str, str]) -> tuple[tuple[str, ...], int]:
    """The models and snapshots without compiled SQL (`sql`: by unique_id, from run_results and
    the manifest), and how many there are: after `dbt run -s one_model` the manifest has no
    compiled code for the others, and what they read is unknown."""
    built = [
        uid
        for uid, node in manifest.nodes.items()
        if node.resource_type in {"model", "snapshot"} and node.materialized != "ephemeral"
    ]
    return tuple(sorted(uid for uid in built if not sql.get(uid))), len(built)


def bearing_on(
    graph: ColumnGraph,
    missing: Iterable[str],
    roots: Iterable[str] | None,
    *,
    upstream: bool = False,
    downstream: bool = True,
) -> tuple[str, ...]:
    """Of the models without compiled SQL, those an answer about `roots` rests on: the roots,
    their ancestors (`upstream`) and their descendants (`downstream`), by dbt's dependencies
    (known without compiled SQL); every one when `roots` is None (a whole-project answer)."""
    missing = set(missing)
    if roots is None:
        return tuple(sorted(missing))
    children: dict[str, list[str]] = {}
    for uid, node in graph.nodes.items():
        for parent in node.depends_on:
            children.setdefault(parent, []).append(uid)
    reached = set(roots)
    for on, wanted in ((True, upstream), (False, downstream)):
        stack = list(roots) if wanted else []
        seen = set(stack)
        while stack:
            uid = stack.pop()
            found = graph.nodes.get(uid)
            near = (found.depends_on if found else ()) if on else children.get(uid, [])
            stack += [n for n in near if n not in seen]
            seen.update(near)
        reached |= seen
    return tuple(sorted(missing & reached))


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


def _node_id(index: Mapping[RelationKey, str], source: SourceColumn) -> str:
    if source.catalog == "file":
        return file_id(source.table)
    key = relation_key(source.catalog, source.schema, source.table)
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
    return Impact(
        change,
        tuple(columns),
        tuple(rows),
        tuple(found_tests),
        tuple(found_exposures),
        _opaque_readers(graph, reached, via_state or set()),
    )


def _opaque_readers(
    graph: ColumnGraph, reached: Mapping[Key, Path], via_state: set[str]
) -> tuple[OpaqueReader, ...]:
    """The opaque models that read a relation carrying the column (the changed one or a
    column reader): `select *` passes it on, other SQL may use it; no lineage tells which."""
    carrying: dict[str, Path] = {}
    for (carrier, _), path in reached.items():
        carrying.setdefault(carrier, path)
    found = []
    for uid, node in sorted(graph.nodes.items()):
        if not node.opaque or uid in via_state or uid in carrying:
            continue
        read = next((d for d in node.depends_on if d in carrying), None)
        if read is not None:
            found.append(OpaqueReader(uid, node.opaque, carrying[read]))
    return tuple(found)


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
