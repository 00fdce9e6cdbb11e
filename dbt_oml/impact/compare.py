"""Which models of two builds changed (compiled SQL, relations named by unique_id), and how
their columns changed: removed, renamed (same definition, new name) or changed (impact.sql).

Pure: works on two builds already analysed into column lineage; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlglot.schema import MappingSchema

from dbt_oml.artifacts import Manifest, Node
from dbt_oml.impact.findings import CHANGED, REMOVED, RENAMED, Build, ColumnChange, Comparison
from dbt_oml.impact.sql import (
    Definitions,
    definitions,
    normalized_sql,
    relation_index,
    schema_of,
)
from dbt_oml.lineage.graph import Key


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
        old_defs = _defs(
            state, uid, schema=schemas[0], index=indexes[0], renames={}, dialect=dialect
        )
        old = _Side(state, uid, old_defs, {})
        renames = result.renames
        new_defs = _defs(
            current, uid, schema=schemas[1], index=indexes[1], renames=renames, dialect=dialect
        )
        new = _Side(current, uid, new_defs, renames)
        found = _diff(uid, before, after, sides=(old, new), renames=result.renames)
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
    *,
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
    *,
    sides: tuple[_Side, _Side],
    renames: dict[Key, str],
) -> list[ColumnChange]:
    old, new = sides
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
