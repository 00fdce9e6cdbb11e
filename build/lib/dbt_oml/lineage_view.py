"""`dbt-oml lineage`: a model's column lineage, followed upstream to sources, as a tree.

Pure: takes the analysed models and the manifest, returns plain data (for --json) or text lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dbt_oml.artifacts import Manifest, Node
from dbt_oml.lineage import ModelLineage, SourceColumn, Transformation


@dataclass(frozen=True, slots=True)
class Hop:
    """One column on the way upstream, with how it feeds the column below it."""

    relation: str
    column: str
    kind: str
    transformations: tuple[Transformation, ...] = ()
    upstream: tuple[Hop, ...] = ()


@dataclass(slots=True)
class LineageView:
    manifest: Manifest
    models: Mapping[str, ModelLineage]
    opaque: Mapping[str, str] = field(default_factory=dict)
    _index: dict[tuple[str, str, str], Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in self.manifest.nodes.values():
            if node.is_relation:
                key = (
                    (node.database or "").lower(),
                    (node.schema or "").lower(),
                    (node.identifier or "").lower(),
                )
                self._index[key] = node

    def find_model(self, name: str) -> Node | None:
        """A model or snapshot by unique_id or by name."""
        node = self.manifest.get(name)
        if node is not None:
            return node
        matches = [
            n
            for n in self.manifest.nodes.values()
            if n.resource_type in {"model", "snapshot"} and n.name == name
        ]
        return matches[0] if len(matches) == 1 else None

    def trace(
        self, node: Node, column: str, seen: frozenset[tuple[str, str]] = frozenset()
    ) -> tuple[Hop, ...]:
        lineage = self.models.get(node.unique_id)
        if lineage is None:
            return ()
        edge = next((e for e in lineage.columns if e.output.lower() == column.lower()), None)
        if edge is None:
            return ()
        return tuple(self._hop(source, transforms, seen) for source, transforms in edge.inputs)

    def _hop(
        self,
        source: SourceColumn,
        transforms: tuple[Transformation, ...],
        seen: frozenset[tuple[str, str]],
    ) -> Hop:
        if source.catalog == "file":
            return Hop(source.table, source.column, "file", transforms)
        relation = ".".join(p for p in (source.catalog, source.schema, source.table) if p)
        node = self._index.get(
            (source.catalog.lower(), source.schema.lower(), source.table.lower())
        )
        if node is None:
            return Hop(relation, source.column, "relation", transforms)
        key = (node.unique_id, source.column.lower())
        upstream = () if key in seen else self.trace(node, source.column, seen | {key})
        kind = node.resource_type
        if kind in {"model", "snapshot"} and node.unique_id in self.opaque:
            kind = f"{kind}, opaque: {self.opaque[node.unique_id]}"
        return Hop(relation, source.column, kind, transforms, upstream)


def _tx(transforms: tuple[Transformation, ...]) -> str:
    return ", ".join(f"{t.type} {t.subtype}" + (" masked" if t.masking else "") for t in transforms)


def as_text(root: str, column: str, hops: tuple[Hop, ...]) -> list[str]:
    lines = [f"{root}.{column}"]

    def walk(items: tuple[Hop, ...], depth: int) -> None:
        for hop in items:
            how = _tx(hop.transformations)
            lines.append(f"{'  ' * depth}<- {hop.relation}.{hop.column}  [{how}]  ({hop.kind})")
            walk(hop.upstream, depth + 1)

    if not hops:
        lines.append("  (no upstream columns: a constant, count(*), or an opaque model)")
    walk(hops, 1)
    return lines


def as_json(hops: tuple[Hop, ...]) -> list[dict[str, Any]]:
    return [
        {
            "relation": h.relation,
            "column": h.column,
            "kind": h.kind,
            "transformations": [
                {"type": t.type, "subtype": t.subtype, "masking": t.masking}
                for t in h.transformations
            ],
            "upstream": as_json(h.upstream),
        }
        for h in hops
    ]
