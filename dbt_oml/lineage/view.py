"""`dbt-oml lineage`: a column's lineage as a tree, upstream to files and sources or downstream
to every reader, and the project's column graph as one JSON document (the explorer's data too).

Pure: takes the column graph (lineage.graph), returns plain data or text lines. The JSON shape
(`document`, version 1) is documented in docs/column-lineage.md and kept stable:
new keys may be added, none renamed or removed.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from dbt_oml.errors import SelectionError
from dbt_oml.lineage.graph import ColumnGraph, Edge, GraphNode, RowsEdge
from dbt_oml.lineage.graph_doc import graph_json, transformations_json
from dbt_oml.lineage.types import Transformation
from dbt_oml.namespaces import Namespaces

#: The version of the JSON document; bumped only if a key is renamed or removed.
DOCUMENT_VERSION: Final = 1
#: A source's unique id: source.<project>.<source_name>.<table_name>.
_SOURCE_ID_PARTS: Final = 4
Direction = Literal["upstream", "downstream"]


@dataclass(frozen=True, slots=True)
class Hop:
    """One column on the way upstream (or downstream), with how it feeds the column before it."""

    node: str
    relation: str
    column: str
    kind: str
    transformations: tuple[Transformation, ...] = ()
    children: tuple[Hop, ...] = ()
    opaque: str | None = None
    repeated: bool = False
    """Already shown earlier in this tree: its own hops are not repeated."""
    rows: bool = False
    """Downstream only: the model reads the column to shape its rows (JOIN, WHERE, ...)."""


@dataclass(frozen=True, slots=True)
class TreeOptions:
    depth: int | None = None
    """Hops to follow (None: all the way)."""
    direct_only: bool = False
    """Follow only edges that carry the value (DIRECT), not those that shape it (INDIRECT)."""


@dataclass(slots=True)
class LineageView:
    """The column graph of a project, and the lookups `dbt-oml lineage` needs."""

    graph: ColumnGraph
    namespaces: Namespaces | None = None
    """Each catalog's namespace: with them, the document's nodes say where each relation lives."""
    _names: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in self.graph.nodes.values():
            if node.kind in {"file", "relation"}:
                continue
            for name in _names_of(node):
                self._names.setdefault(name.lower(), []).append(node.id)

    def find_node(self, name: str) -> GraphNode:
        """A model, snapshot, seed or source by unique_id or name (sources: `source.table`).

        Raises:
            SelectionError: no such node (close names suggested), or the name is ambiguous.
        """
        node = self.graph.nodes.get(name)
        if node is not None:
            return node
        found = self._names.get(name.lower(), [])
        if len(found) > 1:
            models = [f for f in found if self.graph.nodes[f].kind in {"model", "snapshot"}]
            if len(models) == 1:
                return self.graph.nodes[models[0]]
            raise SelectionError(
                what=f"{name!r}", reason="names several nodes", suggestions=sorted(found)
            )
        if found:
            return self.graph.nodes[found[0]]
        close = difflib.get_close_matches(name.lower(), list(self._names), n=6, cutoff=0.6)
        shown = dict.fromkeys(_display(self.graph.nodes[i]) for c in close for i in self._names[c])
        raise SelectionError(
            what=f"model {name!r}",
            reason="not in the project (no model, snapshot, seed or source of that name)",
            suggestions=list(shown)[:3],
        )

    def find_column(self, node: GraphNode, column: str) -> str:
        """The node's column as spelled.

        Raises:
            SelectionError: the node has no such column (close names suggested).
        """
        found = self.graph.column(node.id, column)
        if found is not None:
            return found
        lowered = {c.lower(): c for c in node.columns}
        close = difflib.get_close_matches(column.lower(), list(lowered), n=3, cutoff=0.6)
        reason = f"has no column {column!r}"
        if node.opaque:
            reason += f" that dbt-oml knows of (opaque: {node.opaque})"
        return _raise(node.id, reason, [lowered[c] for c in close])

    def tree(
        self, node_id: str, column: str, direction: Direction, options: TreeOptions
    ) -> tuple[Hop, ...]:
        """The hops from one column, upstream or downstream, each (node, column) expanded once."""
        expanded: set[tuple[str, str]] = set()

        def hops(key: tuple[str, str], depth: int) -> tuple[Hop, ...]:
            if options.depth is not None and depth >= options.depth:
                return ()
            expanded.add(key)
            out: list[Hop] = []
            for edge in self._edges(key, direction):
                if options.direct_only and not edge.direct:
                    continue
                far, far_column = (
                    (edge.source, edge.source_column)
                    if direction == "upstream"
                    else (edge.target, edge.target_column)
                )
                far_key = (far, far_column.lower())
                repeated = far_key in expanded and bool(self._edges(far_key, direction))
                children = () if repeated else hops(far_key, depth + 1)
                out.append(
                    self._hop(far, far_column, edge.transformations, children, repeated=repeated)
                )
            if direction == "downstream" and not options.direct_only:
                for rows in self._rows(key):
                    out.append(self._hop(rows.target, "", rows.transformations, (), rows=True))
            return tuple(out)

        return hops((node_id, column.lower()), 0)

    def _edges(self, key: tuple[str, str], direction: Direction) -> list[Edge]:
        found = (self.graph.upstream if direction == "upstream" else self.graph.downstream).get(
            key, []
        )
        return sorted(
            found,
            key=lambda e: (e.source, e.source_column, e.target, e.target_column),
        )

    def _rows(self, key: tuple[str, str]) -> list[RowsEdge]:
        return sorted(self.graph.rows.get(key, []), key=lambda r: r.target)

    def _hop(
        self,
        node_id: str,
        column: str,
        transformations: tuple[Transformation, ...],
        children: tuple[Hop, ...],
        *,
        repeated: bool = False,
        rows: bool = False,
    ) -> Hop:
        node = self.graph.nodes[node_id]
        return Hop(
            node=node_id,
            relation=node.relation,
            column=column,
            kind=node.kind,
            transformations=transformations,
            children=children,
            opaque=node.opaque,
            repeated=repeated,
            rows=rows,
        )


def _raise(what: str, reason: str, suggestions: list[str]) -> str:
    raise SelectionError(what=what, reason=reason, suggestions=suggestions)


def _display(node: GraphNode) -> str:
    """How a node is named on the command line: `source.table` for sources, else its name."""
    return _names_of(node)[-1]


def _names_of(node: GraphNode) -> list[str]:
    names = [node.name]
    if node.kind == "source":
        parts = node.id.split(".")
        if len(parts) >= _SOURCE_ID_PARTS:
            names.append(".".join(parts[-2:]))  # source_name.table_name
    return names


def describe(transforms: Iterable[Transformation]) -> str:
    """`DIRECT TRANSFORMATION masked, field _meta.params`: how an input reaches an output."""
    return ", ".join(
        f"{t.type} {t.subtype}"
        + (" masked" if t.masking else "")
        + (f" ({t.description})" if t.description else "")
        for t in transforms
    )


def as_text(root: str, column: str, hops: tuple[Hop, ...], direction: Direction) -> list[str]:
    """The tree as indented lines: `<-` upstream, `->` downstream."""
    arrow = "<-" if direction == "upstream" else "->"
    lines = [f"{root}.{column}" + ("" if direction == "upstream" else "  (downstream)")]

    def walk(items: tuple[Hop, ...], depth: int) -> None:
        for hop in items:
            kind = hop.kind + (f", opaque: {hop.opaque}" if hop.opaque else "")
            name = hop.relation if hop.rows else f"{hop.relation}.{hop.column}"
            how = describe(hop.transformations)
            more = "  (see above)" if hop.repeated else ""
            what = "rows: " if hop.rows else ""
            lines.append(f"{'  ' * depth}{arrow} {name}  [{what}{how}]  ({kind}){more}")
            walk(hop.children, depth + 1)

    if not hops:
        lines.append(
            "  (no upstream columns: a constant, count(*), or an opaque model)"
            if direction == "upstream"
            else "  (nothing downstream reads it)"
        )
    walk(hops, 1)
    return lines


def hops_json(hops: tuple[Hop, ...], direction: Direction) -> list[dict[str, Any]]:
    """A tree as JSON: each hop with its node, column, transformations and next hops."""
    return [
        {
            "node": h.node,
            "relation": h.relation,
            "column": h.column,
            "kind": h.kind,
            "opaque": h.opaque,
            "transformations": transformations_json(h.transformations),
            "repeated": h.repeated,
            **({"rows": True} if h.rows else {}),
            direction: hops_json(h.children, direction),
        }
        for h in hops
    ]


@dataclass(frozen=True, slots=True)
class Query:
    """What `dbt-oml lineage` was asked."""

    model: str | None = None
    column: str | None = None
    upstream: bool = True
    downstream: bool = False
    options: TreeOptions = TreeOptions()


@dataclass(frozen=True, slots=True)
class Answer:
    """The trees of every column asked for, and the document that holds them."""

    root: GraphNode | None
    upstream: dict[str, tuple[Hop, ...]]
    downstream: dict[str, tuple[Hop, ...]]
    document: dict[str, Any]


def answer(view: LineageView, query: Query) -> Answer:
    """The trees and the JSON document for a query (no model: the whole project's graph).

    Raises:
        SelectionError: unknown model or column, or upstream of an opaque model.
    """
    if query.model is None:
        doc = _document(None, query, up={}, down={}, view=view, keep=None)
        return Answer(None, {}, {}, doc)
    node = view.find_node(query.model)
    if query.column is not None:
        columns = [view.find_column(node, query.column)]
    else:
        columns = list(node.columns)
    if query.upstream and node.opaque and not query.downstream:
        _raise(node.id, f"has no column lineage: {node.opaque}", [])
    if not columns:
        _raise(node.id, "has no known columns (no catalog entry and no column lineage)", [])
    up = {c: view.tree(node.id, c, "upstream", query.options) for c in columns if query.upstream}
    down = {
        c: view.tree(node.id, c, "downstream", query.options) for c in columns if query.downstream
    }
    keep = {node.id} | {h for trees in (up, down) for hops in trees.values() for h in _ids(hops)}
    doc = _document(node, query, up=up, down=down, view=view, keep=keep)
    return Answer(node, up, down, doc)


def _ids(hops: tuple[Hop, ...]) -> Iterable[str]:
    for hop in hops:
        yield hop.node
        yield from _ids(hop.children)


def _document(
    node: GraphNode | None,
    query: Query,
    *,
    up: dict[str, tuple[Hop, ...]],
    down: dict[str, tuple[Hop, ...]],
    view: LineageView,
    keep: set[str] | None,
) -> dict[str, Any]:
    return {
        "version": DOCUMENT_VERSION,
        "model": node.id if node else None,
        "column": query.column,
        "direction": _direction(query),
        "depth": query.options.depth,
        "direct_only": query.options.direct_only,
        "columns": {c: hops_json(h, "upstream") for c, h in up.items()},
        "downstream": {c: hops_json(h, "downstream") for c, h in down.items()},
        "graph": graph_json(view.graph, keep, namespaces=view.namespaces),
    }


def _direction(query: Query) -> str:
    if query.upstream and query.downstream:
        return "both"
    return "downstream" if query.downstream else "upstream"


def text_lines(result: Answer) -> list[str]:
    """Every tree of an answer as text lines, upstream first."""
    if result.root is None:
        raise SelectionError(
            what="lineage",
            reason="the text view needs a MODEL (the whole project: --json or --html)",
        )
    lines: list[str] = []
    for column, hops in result.upstream.items():
        lines += as_text(result.root.id, column, hops, "upstream")
    for column, hops in result.downstream.items():
        lines += as_text(result.root.id, column, hops, "downstream")
    return lines
