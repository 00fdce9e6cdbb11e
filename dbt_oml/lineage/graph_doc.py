"""The column graph as JSON: the `graph` part of the `dbt-oml lineage --json` document (and of
the explorer's data), each node placed on its catalog and namespace when those are known.

Pure: takes the column graph and, optionally, the namespaces the pipeline derived from the
profile (already free of user names, passwords and tokens); no I/O, no environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from dbt_oml.lineage.filerefs import file_dataset

if TYPE_CHECKING:
    from dbt_oml.lineage.graph import ColumnGraph, GraphNode
    from dbt_oml.lineage.types import Transformation
    from dbt_oml.namespaces import Namespaces

#: database.schema.table: a relation name with its catalog in front.
_QUALIFIED_PARTS: Final = 3


def transformations_json(transforms: tuple[Transformation, ...]) -> list[dict[str, Any]]:
    """Transformations as JSON: type, subtype, masking (and a description when there is one)."""
    return [
        {
            "type": t.type,
            "subtype": t.subtype,
            "masking": t.masking,
            **({"description": t.description} if t.description else {}),
        }
        for t in transforms
    ]


def placement(node: GraphNode, namespaces: Namespaces) -> dict[str, str | None]:
    """The node's catalog and the namespace of the server it lives on.

    A relation's catalog is the first part of its `database.schema.table` name (none when the
    name has no database: the connection's main catalog). A file has no catalog; its namespace is
    its storage's (`file`, `s3://bucket`, credentials dropped).

    >>> from dbt_oml.lineage.graph import GraphNode
    >>> from dbt_oml.namespaces import Namespaces
    >>> ns = Namespaces(by_catalog={"crm": "mysql://db:3306"}, fallback="duckdb:///w/dev.duckdb")
    >>> placement(GraphNode("source.p.crm.c", "source", "c", "crm.sales.c", ()), ns)
    {'catalog': 'crm', 'namespace': 'mysql://db:3306'}
    >>> placement(GraphNode("file:s3://lake/e.parquet", "file", "e", "s3://lake/e.parquet", ()), ns)
    {'catalog': None, 'namespace': 's3://lake'}
    """
    if node.kind == "file":
        path = node.id.removeprefix("file:")
        return {"catalog": None, "namespace": file_dataset(path, cwd="/").namespace}
    parts = node.relation.split(".")
    catalog = parts[0] if len(parts) >= _QUALIFIED_PARTS else None
    return {"catalog": catalog, "namespace": namespaces.for_database(catalog)}


def graph_json(
    graph: ColumnGraph, keep: set[str] | None = None, *, namespaces: Namespaces | None = None
) -> dict[str, Any]:
    """The nodes and column edges (of the `keep` nodes, or all) as JSON.

    With `namespaces`, every node also carries `catalog` and `namespace` (see `placement`);
    without, the nodes have neither key.
    """
    nodes = [n for n in graph.nodes.values() if keep is None or n.id in keep]
    return {
        "nodes": [
            {
                "id": n.id,
                "kind": n.kind,
                "name": n.name,
                "relation": n.relation,
                "columns": list(n.columns),
                "opaque": n.opaque,
                "path": n.path,
                "materialized": n.materialized,
                "depends_on": [d for d in n.depends_on if keep is None or d in keep],
                **(placement(n, namespaces) if namespaces is not None else {}),
            }
            for n in sorted(nodes, key=lambda n: n.id)
        ],
        "edges": [
            {
                "from": [e.source, e.source_column],
                "to": [e.target, e.target_column],
                "transformations": transformations_json(e.transformations),
            }
            for e in sorted(
                graph.edges(), key=lambda e: (e.target, e.target_column, e.source, e.source_column)
            )
            if keep is None or (e.source in keep and e.target in keep)
        ],
        "rows": [
            {
                "from": [r.source, r.source_column],
                "to": r.target,
                "transformations": transformations_json(r.transformations),
            }
            for r in sorted(graph.rows_edges(), key=lambda r: (r.target, r.source, r.source_column))
            if keep is None or (r.source in keep and r.target in keep)
        ],
    }
