"""What a model's column computes, comparable across two builds of a project: every CTE and
subquery the column passes through inlined into one expression over the model's input columns,
with relations named by dbt unique_id (so a production and a development target compare equal).

Pure: sqlglot only, no I/O. Used by impact analysis to tell a renamed column (same definition,
new name) from a changed one (new definition), for models whose compiled SQL changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.lineage import Node as LineageNode
from sqlglot.lineage import lineage
from sqlglot.schema import MappingSchema

from dbt_oml.artifacts import Manifest, Node, RelationKey, relations_by_key

#: (relation key: lower-cased catalog, schema, table) -> dbt unique_id
RelationIndex = Mapping[tuple[str, str, str], str]
#: (unique_id, column) -> the column's name in the other build (renames found upstream)
Renames = Mapping[tuple[str, str], str]


def relation_index(manifest: Manifest) -> dict[RelationKey, str]:
    """Every relation of a manifest (its unique_id) by its lower-cased (catalog, schema, table)."""
    return {key: n.unique_id for key, n in relations_by_key(manifest.nodes.values()).items()}


def normalized_sql(node: Node, manifest: Manifest, sql: str | None = None) -> str:
    """The compiled SQL with each relation it reads named by unique_id, whitespace collapsed.

    >>> from dbt_oml.artifacts import Manifest, Node, RelationKey, relations_by_key
    >>> src = Node(unique_id="source.p.s.t", resource_type="source", name="t", package_name="p",
    ...            database="prod", schema="raw", identifier="t", relation_name='"prod"."raw"."t"')
    >>> m = Node(unique_id="model.p.m", resource_type="model", name="m", package_name="p",
    ...          database="prod", schema="x", identifier="m", depends_on=("source.p.s.t",),
    ...          compiled_code='select  a\\nfrom "prod"."raw"."t"')
    >>> manifest = Manifest(path="", dbt_version="", invocation_id=None, adapter_type=None,
    ...                     project_name="p", nodes={n.unique_id: n for n in (src, m)})
    >>> normalized_sql(m, manifest)
    'select a from {{source.p.s.t}}'
    """
    text = sql if sql is not None else node.compiled_code or ""
    names = {
        parent.relation_name: parent.unique_id
        for parent in manifest.relations_read(node)
        if parent.relation_name
    }
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, "{{" + names[name] + "}}")
    return " ".join(text.split())


def schema_of(manifest: Manifest, columns: Mapping[str, tuple[str, ...]]) -> MappingSchema:
    """A sqlglot schema of every relation whose columns are known (types unknown)."""
    tables: dict[str, Any] = {}
    for uid, names in columns.items():
        node = manifest.get(uid)
        if node is None or not node.is_relation or not names:
            continue
        tables.setdefault(node.database or "", {}).setdefault(node.schema or "", {})[
            node.identifier or node.name
        ] = dict.fromkeys(names, "UNKNOWN")
    return MappingSchema(tables, dialect="duckdb")


@dataclass(frozen=True, slots=True)
class Definitions:
    """Per output column (lower-cased): its inlined definition; empty when sqlglot cannot."""

    columns: Mapping[str, str]
    problem: str | None = None


def definitions(
    sql: str,
    *,
    schema: MappingSchema,
    index: RelationIndex,
    dialect: str = "duckdb",
    renames: Renames | None = None,
) -> Definitions:
    """Each output column of `sql` as one expression over the model's input columns.

    A column of an input relation is written `<unique_id>.column`, after `renames` (so a
    model that follows an upstream rename compares equal to the old build).

    >>> s = MappingSchema({"w": {"m": {"t": {"a": "INT", "b": "INT"}}}}, dialect="duckdb")
    >>> sql = "with r as (select lower(a) as x from w.m.t) select x as y from r"
    >>> definitions(sql, schema=s, index={("w", "m", "t"): "source.p.s.t"}).columns
    {'y': 'LOWER(<source.p.s.t>.a)'}
    """
    renames = renames or {}

    def leaf(table: exp.Table, column: str) -> str:
        key = (table.catalog.lower(), table.db.lower(), table.name.lower())
        uid = index.get(key)
        if uid is None:
            return f"<{table.this.sql(dialect=dialect)}>.{column}"
        return f"<{uid}>.{renames.get((uid, column.lower()), column.lower())}"

    try:
        nodes = lineage(None, sql, schema=schema, dialect=dialect)
    except (SqlglotError, RecursionError) as e:
        return Definitions({}, problem=str(e).splitlines()[0][:200] if str(e) else repr(e))
    memo: dict[int, str] = {}
    out: dict[str, str] = {}
    for name, node in nodes.items():
        try:
            out[name.lower()] = _inline(node, leaf, memo, dialect)
        except (SqlglotError, RecursionError):
            continue
    return Definitions(out)


def _inline(
    node: LineageNode,
    leaf: Callable[[exp.Table, str], str],
    memo: dict[int, str],
    dialect: str,
) -> str:
    found = memo.get(id(node))
    if found is not None:
        return found
    expression = node.expression
    if isinstance(expression, exp.Table):
        text = leaf(expression, node.name.split(".")[-1])
        memo[id(node)] = text
        return text
    body = exp.Paren(this=expression.unalias().copy())  # a root that can be replaced too
    below = {child.name.lower(): child for child in node.downstream}
    for column in list(body.find_all(exp.Column)):
        key = f"{column.table}.{column.name}".lower() if column.table else column.name.lower()
        child = below.get(key)
        if child is not None:
            text = _inline(child, leaf, memo, dialect)
            column.replace(exp.var(f"({text})" if " " in text else text))
    for table in list(body.find_all(exp.Table)):
        table.replace(exp.var(leaf(table, "*").removesuffix(".*")))
    text = str(body.this.sql(dialect=dialect))
    memo[id(node)] = text
    return text
