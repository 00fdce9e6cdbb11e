"""The project's column graph: every relation (model, snapshot, seed, source, file) with its
columns, and one edge per (input column -> output column) that the analysed models carry.

Pure: built from the manifest, the analysed models and the known columns; no I/O. Seeds end at
their CSV file and dbt-duckdb file sources at the files they read, so every path ends at a file
or a source. Column names are matched case-insensitively (DuckDB's rule) and shown as spelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dbt_oml.artifacts import (
    Column,
    Manifest,
    Node,
    RelationKey,
    relation_key,
    relation_parts,
    relations_by_key,
)
from dbt_oml.lineage.filerefs import file_paths
from dbt_oml.lineage.types import DIRECT, IDENTITY, ModelLineage, SourceColumn, Transformation

#: (node id, lower-cased column name)
Key = tuple[str, str]
Transforms = tuple[Transformation, ...]


@dataclass(frozen=True, slots=True)
class GraphNode:
    """A relation or file: what it is, where it lives, its columns, and why it may be opaque."""

    id: str
    """The dbt unique_id, `file:<path>` for a file, `relation:<db.schema.table>` otherwise."""
    kind: str
    """model, snapshot, seed, source, file or relation (a relation dbt does not know)."""
    name: str
    relation: str
    columns: tuple[str, ...]
    opaque: str | None = None
    """Why a model or snapshot has no column lineage (None: it has, or it is no model)."""
    path: str | None = None
    """The node's file in the project (models/x.sql, seeds/x.csv)."""
    materialized: str | None = None
    depends_on: tuple[str, ...] = ()
    """The relations it reads (dbt's dependencies, through ephemeral models)."""


@dataclass(frozen=True, slots=True)
class Edge:
    """The value (or the shape, for INDIRECT) of `target`'s column depends on `source`'s."""

    source: str
    source_column: str
    target: str
    target_column: str
    transformations: Transforms

    @property
    def direct(self) -> bool:
        return any(t.type == DIRECT for t in self.transformations)


@dataclass(frozen=True, slots=True)
class RowsEdge:
    """Model `target` reads `source`'s column to shape its rows (JOIN, FILTER, GROUP BY, ...)."""

    source: str
    source_column: str
    target: str
    transformations: Transforms


@dataclass(slots=True)
class ColumnGraph:
    """Nodes by id, and the column edges indexed both ways."""

    nodes: dict[str, GraphNode] = field(default_factory=dict)
    upstream: dict[Key, list[Edge]] = field(default_factory=dict)
    """(node, column) -> the edges into it."""
    downstream: dict[Key, list[Edge]] = field(default_factory=dict)
    """(node, column) -> the edges out of it."""
    rows: dict[Key, list[RowsEdge]] = field(default_factory=dict)
    """(node, column) -> the models whose rows it shapes."""

    def edges(self) -> Iterable[Edge]:
        for found in self.upstream.values():
            yield from found

    def rows_edges(self) -> Iterable[RowsEdge]:
        for found in self.rows.values():
            yield from found

    def column(self, node_id: str, name: str) -> str | None:
        """The column of a node as spelled, matched case-insensitively; None if unknown."""
        node = self.nodes.get(node_id)
        lowered = name.lower()
        if node is not None:
            for column in node.columns:
                if column.lower() == lowered:
                    return column
        return None


def relation_text(node: Node) -> str:
    return ".".join(p for p in relation_parts(node) if p)


def file_id(path: str) -> str:
    return f"file:{path}"


@dataclass(slots=True)
class _Builder:
    manifest: Manifest
    graph: ColumnGraph = field(default_factory=ColumnGraph)
    index: dict[RelationKey, Node] = field(default_factory=dict)
    columns: dict[str, dict[str, str]] = field(default_factory=dict)
    """node id -> lower-cased column -> spelling, in order of discovery."""
    extra: dict[str, GraphNode] = field(default_factory=dict)

    def add_columns(self, node_id: str, names: Iterable[str]) -> None:
        known = self.columns.setdefault(node_id, {})
        for name in names:
            known.setdefault(name.lower(), name)

    def resolve(self, source: SourceColumn) -> str:
        """The node id a source column belongs to (files and unknown relations get a node)."""
        if source.catalog == "file":
            node_id = file_id(source.table)
            self.extra.setdefault(
                node_id, GraphNode(node_id, "file", source.table, source.table, ())
            )
            return node_id
        node = self.index.get(relation_key(source.catalog, source.schema, source.table))
        if node is not None:
            return node.unique_id
        text = ".".join(p for p in (source.catalog, source.schema, source.table) if p)
        node_id = f"relation:{text}"
        self.extra.setdefault(node_id, GraphNode(node_id, "relation", source.table, text, ()))
        return node_id

    def spelled(self, node_id: str, name: str) -> str:
        """A column as the catalog spells it (the engine's spelling is per project)."""
        return self.columns.get(node_id, {}).get(name.lower(), name)

    def edge(self, edge: Edge) -> None:
        edge = Edge(
            edge.source,
            self.spelled(edge.source, edge.source_column),
            edge.target,
            self.spelled(edge.target, edge.target_column),
            edge.transformations,
        )
        self.graph.upstream.setdefault((edge.target, edge.target_column.lower()), []).append(edge)
        self.graph.downstream.setdefault((edge.source, edge.source_column.lower()), []).append(edge)
        self.add_columns(edge.source, [edge.source_column])
        self.add_columns(edge.target, [edge.target_column])


def build_graph(
    manifest: Manifest,
    models: Mapping[str, ModelLineage],
    *,
    opaque: Mapping[str, str] | None = None,
    known: Mapping[str, tuple[Column, ...]] | None = None,
) -> ColumnGraph:
    """The column graph of a project.

    Args:
        manifest: the project's nodes.
        models: the analysed models' column lineage, by unique_id.
        opaque: why the other models have none, by unique_id.
        known: the columns of relations as the catalog (or YAML, seed headers) gives them.

    >>> from dbt_oml.artifacts import Manifest, Node
    >>> from dbt_oml.lineage.types import ColumnEdge
    >>> seed = Node(unique_id="seed.p.s", resource_type="seed", name="s", package_name="p",
    ...             database="w", schema="m", identifier="s", original_file_path="seeds/s.csv")
    >>> model = Node(unique_id="model.p.m", resource_type="model", name="m", package_name="p",
    ...              database="w", schema="m", identifier="m", depends_on=("seed.p.s",))
    >>> manifest = Manifest(path="", dbt_version="", invocation_id=None, adapter_type="duckdb",
    ...                     project_name="p", nodes={n.unique_id: n for n in (seed, model)})
    >>> lin = ModelLineage(columns=(ColumnEdge("a", ((SourceColumn("w", "m", "s", "a"),
    ...                                                (IDENTITY,)),)),))
    >>> g = build_graph(manifest, {"model.p.m": lin})
    >>> [(e.source, e.source_column) for e in g.upstream[("model.p.m", "a")]]
    [('seed.p.s', 'a')]
    >>> [(e.source, e.source_column) for e in g.upstream[("seed.p.s", "a")]]
    [('file:seeds/s.csv', 'a')]
    """
    builder = _Builder(manifest, index=relations_by_key(manifest.nodes.values()))
    known = known or {}
    relations = [n for n in manifest.nodes.values() if n.is_relation]
    for node in relations:
        builder.add_columns(node.unique_id, (c.name for c in known.get(node.unique_id, ())))
    for uid, lineage in models.items():
        _add_model(builder, uid, lineage)
    for node in relations:
        _leaf_files(builder, node)
    _add_nodes(builder, relations, opaque or {})
    return builder.graph


def _add_model(builder: _Builder, uid: str, lineage: ModelLineage) -> None:
    """A model's column edges and the rows edges of what filters or groups it."""
    builder.add_columns(uid, (e.output for e in lineage.columns))
    for column in lineage.columns:
        for source, transforms in column.inputs:
            edge = Edge(builder.resolve(source), source.column, uid, column.output, transforms)
            builder.edge(edge)
    for source, transforms in lineage.dataset:
        node_id = builder.resolve(source)
        builder.add_columns(node_id, [source.column])
        builder.graph.rows.setdefault((node_id, source.column.lower()), []).append(
            RowsEdge(node_id, builder.spelled(node_id, source.column), uid, transforms)
        )


def _add_nodes(builder: _Builder, relations: list[Node], opaque: Mapping[str, str]) -> None:
    """The graph's nodes: the project's relations, then the files and unknown relations read."""
    for node in relations:
        builder.graph.nodes[node.unique_id] = GraphNode(
            id=node.unique_id,
            kind=node.resource_type,
            name=node.name,
            relation=relation_text(node),
            columns=tuple(builder.columns.get(node.unique_id, {}).values()),
            opaque=opaque.get(node.unique_id),
            path=node.original_file_path,
            materialized=node.materialized,
            depends_on=tuple(p.unique_id for p in builder.manifest.relations_read(node)),
        )
    for node_id, extra in builder.extra.items():
        builder.graph.nodes[node_id] = GraphNode(
            id=node_id,
            kind=extra.kind,
            name=extra.name,
            relation=extra.relation,
            columns=tuple(builder.columns.get(node_id, {}).values()),
            path=extra.path,
        )


def _leaf_files(builder: _Builder, node: Node) -> None:
    """A seed's CSV file and a file source's files, with identity edges from their columns."""
    if node.resource_type == "seed" and node.original_file_path:
        paths = [node.original_file_path]
    elif node.resource_type == "source" and _reads_files(node.relation_name or ""):
        # parsed by sqlglot to find the files read, never executed
        paths = file_paths(f"select * from {node.relation_name}")  # noqa: S608 - parsed, not run
    else:
        return
    names = list(builder.columns.get(node.unique_id, {}).values())
    for path in paths:
        node_id = file_id(path)
        builder.extra.setdefault(node_id, GraphNode(node_id, "file", path, path, (), path=path))
        for name in names:
            builder.edge(Edge(node_id, name, node.unique_id, name, (IDENTITY,)))


def _reads_files(relation_name: str) -> bool:
    """dbt-duckdb's `external_location`: `source()` renders to a file read, not a table."""
    text = relation_name.strip()
    return "(" in text or text.startswith("'")
