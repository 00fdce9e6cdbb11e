"""The datasets of a node's events: its dataset, inputs (through ephemeral models, files the
SQL reads) and output, with their facets, each built once per node.

A dataset is named as dbt-ol names it, `database.schema.table` joined with dots. When a part
holds a dot itself (a table `v1.orders`), that name no longer says which part is which, so the
dataset also carries OpenLineage's `hierarchy` facet (DATABASE, SCHEMA, TABLE); only then, so
every other event stays as dbt-ol would send it.

Pure: the mixin reads the manifest and catalog the EventBuilder holds; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from openlineage.client.event_v2 import InputDataset, OutputDataset
from openlineage.client.facet_v2 import DatasetFacet, hierarchy_dataset

from dbt_oml.artifacts import (
    Catalog,
    Column,
    Manifest,
    Node,
    RelationKey,
    relation_key,
    relations_by_key,
)
from dbt_oml.events import facets
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.recent import Recent
from dbt_oml.lineage.filerefs import file_dataset, file_paths
from dbt_oml.lineage.model import SourceColumn
from dbt_oml.namespaces import Namespaces

#: The levels of a relation's `hierarchy` facet, highest first.
HIERARCHY_LEVELS = ("DATABASE", "SCHEMA", "TABLE")


@dataclass(frozen=True, slots=True)
class DatasetRef:
    namespace: str
    name: str


def hierarchy(
    parts: tuple[str | None, ...], producer: str
) -> hierarchy_dataset.HierarchyDatasetFacet | None:
    """The `hierarchy` facet of a relation (database, schema, table), only when a part of its
    name holds a `.`: then the dot-joined dataset name no longer says which part is which.

    >>> [level.name for level in hierarchy(("warehouse", "core", "v1.orders"), "p").hierarchy]
    ['warehouse', 'core', 'v1.orders']
    >>> hierarchy(("warehouse", "core", "orders"), "p") is None
    True
    """
    named = [p for p in parts if p]
    if len(named) != len(HIERARCHY_LEVELS) or not any("." in p for p in named):
        return None
    levels = [
        hierarchy_dataset.HierarchyDatasetFacetLevel(type=level, name=part)
        for level, part in zip(HIERARCHY_LEVELS, named, strict=True)
    ]
    return hierarchy_dataset.HierarchyDatasetFacet(hierarchy=levels, producer=producer)


class DatasetsMixin:
    """The dataset half of EventBuilder (which declares these attributes as fields)."""

    invocation: Invocation
    namespaces: Namespaces
    settings: EventSettings
    manifest: Manifest
    catalog: Catalog | None
    _columns: Recent[str, tuple[Column, ...]]
    _relations: dict[RelationKey, Node] | None
    #: dataset facets per recent node
    _facets: Recent[str, dict[str, DatasetFacet]]
    _names: Recent[str, dict[str, str]]
    #: `hierarchy` per (namespace, name) of a relation the SQL names that is no dbt node
    _plain_facets: dict[tuple[str, str], dict[str, DatasetFacet]]
    _files: Recent[str, list[str]]

    def dataset(self, node: Node) -> DatasetRef:
        name = ".".join(p for p in (node.database, node.schema, node.identifier) if p)
        return DatasetRef(self.namespaces.for_database(node.database), name)

    def relation(self, catalog: str, schema: str, table: str) -> Node | None:
        """The dbt node behind a relation the SQL names (case-insensitive, as DuckDB matches)."""
        if self._relations is None:
            self._relations = relations_by_key(self.manifest.nodes.values())
        return self._relations.get(relation_key(catalog, schema, table))

    def resolve(self, source: SourceColumn) -> tuple[str, str, str]:
        """(namespace, dataset name, field) of a source column, named as the event's inputs are."""
        if source.catalog == "file":
            ref = file_dataset(source.table, cwd=self.settings.cwd)
            return ref.namespace, ref.name, source.column
        node = self.relation(source.catalog, source.schema, source.table)
        if node is not None:
            ds = self.dataset(node)
            names = self._names.get(node.unique_id)
            if names is None:
                names = {}
                for c in self.columns(node):
                    names.setdefault(c.name.lower(), c.name)
                self._names[node.unique_id] = names
            return ds.namespace, ds.name, names.get(source.column.lower(), source.column)
        parts = (source.catalog, source.schema, source.table)
        name = ".".join(p for p in parts if p)
        namespace = self.namespaces.for_database(source.catalog)
        levels = hierarchy(parts, self.settings.producer)
        if levels is not None:  # for the plain input this relation becomes
            self._plain_facets.setdefault((namespace, name), {"hierarchy": levels})
        return namespace, name, source.column

    def columns(self, node: Node) -> tuple[Column, ...]:
        cached = self._columns.get(node.unique_id)
        if cached is None:
            from_catalog = self.catalog.columns.get(node.unique_id) if self.catalog else None
            cached = facets.merged_columns(node, from_catalog)
            self._columns[node.unique_id] = cached
        return cached

    def upstream(self, node: Node) -> list[Node]:
        """The relations a node reads, looking through ephemeral models to what they read."""
        return self.manifest.relations_read(node)

    def dataset_facets(self, node: Node) -> dict[str, DatasetFacet]:
        """schema (and where it came from), dataSource, documentation and ownership."""
        cached = self._facets.get(node.unique_id)
        if cached is None:
            cached = self._facets[node.unique_id] = self._dataset_facets(node)
        return dict(cached)

    def _dataset_facets(self, node: Node) -> dict[str, DatasetFacet]:
        ref = self.dataset(node)
        columns = self.columns(node)
        out = facets.dataset_facets(
            node=node,
            namespace=ref.namespace,
            name=ref.name,
            columns=columns,
            producer=self.settings.producer,
        )
        levels = hierarchy((node.database, node.schema, node.identifier), self.settings.producer)
        if levels is not None:
            out["hierarchy"] = levels
        if columns:
            from_catalog = bool(self.catalog and self.catalog.columns.get(node.unique_id))
            out["dbt_oml_schema"] = facets.schema_source(
                from_catalog=from_catalog, producer=self.settings.producer
            )
        return out

    def input_dataset(self, node: Node) -> InputDataset:
        ref = self.dataset(node)
        return InputDataset(
            namespace=ref.namespace,
            name=ref.name,
            facets=self.dataset_facets(node),
        )

    def inputs(self, node: Node, sql: str | None) -> list[InputDataset]:
        out = [self.input_dataset(parent) for parent in self.upstream(node)]
        paths = self._file_paths(sql) if sql else []
        cwd = self.settings.cwd
        if node.resource_type == "seed" and node.original_file_path:
            paths, cwd = [node.original_file_path], self.settings.project_root or cwd
        for path in paths:
            ref = file_dataset(path, cwd=cwd)
            out.append(self._plain_input(ref.namespace, ref.name))
        return out

    def _file_paths(self, sql: str) -> list[str]:
        found = self._files.get(sql)
        if found is None:
            try:
                found = file_paths(sql, dialect=self.invocation.adapter_type)
            except RecursionError:
                found = []  # nested deeper than sqlglot parses: the model keeps its other inputs
            self._files[sql] = found
        return found

    def _plain_input(self, namespace: str, name: str) -> InputDataset:
        """An input that is not a dbt node (a file, a table the SQL names directly)."""
        plain = facets.dataset_facets(
            node=None,
            namespace=namespace,
            name=name,
            columns=(),
            producer=self.settings.producer,
        )
        return InputDataset(
            namespace=namespace,
            name=name,
            facets={**plain, **self._plain_facets.get((namespace, name), {})},
        )

    def output(self, node: Node, rows: int | None = None) -> OutputDataset:
        ref = self.dataset(node)
        return OutputDataset(
            namespace=ref.namespace,
            name=ref.name,
            facets=self.dataset_facets(node),
            outputFacets=facets.output_statistics(rows, self.settings.producer),
        )
