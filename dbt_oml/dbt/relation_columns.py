"""The real columns of a project's relations, read through the adapter dbt still holds.

I/O adapter for the dbt plugin, which has no `dbt docs generate` to give it catalog.json: with
DuckDB one query over `duckdb_columns()` covers every attached catalog (the same source as
dbt-duckdb's catalog); other adapters answer `get_columns_in_relation` per relation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from dbt_oml.artifacts import Catalog, Column, Manifest, Node

logger = logging.getLogger(__name__)

_DUCKDB_COLUMNS = """
select database_name, schema_name, table_name, column_name, data_type, comment
from duckdb_columns()
where not internal and lower(database_name) in ({catalogs})
order by database_name, schema_name, table_name, column_index
"""


def _key(database: object, schema: object, table: object) -> tuple[str, str, str]:
    return (str(database).lower(), str(schema).lower(), str(table).lower())


def keyed(nodes: Iterable[Node]) -> dict[tuple[str, str, str], Node]:
    """The relations among `nodes` by (database, schema, identifier), lower-case."""
    return {
        _key(n.database, n.schema, n.identifier): n
        for n in nodes
        if n.is_relation and n.database and n.schema and n.identifier
    }


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def live_catalog(manifest: Manifest, *, now: datetime) -> tuple[Catalog | None, str | None]:
    """Columns of every relation in the manifest, as a Catalog; or None and the reason."""
    from dbt.adapters.factory import FACTORY

    adapters = getattr(FACTORY, "adapters", {})
    if not adapters:
        return None, "no adapter registered: schema facets use the declared columns"
    adapter = next(iter(adapters.values()))
    relations = keyed(manifest.nodes.values())
    try:
        with adapter.connection_named("dbt_oml_columns"):
            if str(adapter.type()) == "duckdb":
                found = _duckdb_columns(adapter, relations)
            else:
                found = _adapter_columns(adapter, relations.values())
    except Exception as e:
        logger.debug("reading columns failed", exc_info=True)
        return None, (
            f"columns not read from the warehouse ({type(e).__name__}: {e}); "
            "schema facets use the declared columns"
        )
    return Catalog(path="adapter", generated_at=now, columns=found), None


def _duckdb_columns(
    adapter: Any, relations: dict[tuple[str, str, str], Node]
) -> dict[str, tuple[Column, ...]]:
    catalogs = sorted({db for db, _, _ in relations})
    if not catalogs:
        return {}
    sql = _DUCKDB_COLUMNS.format(catalogs=", ".join(_quote(c) for c in catalogs))
    return columns_by_node(cursor_rows(adapter, sql)[1], relations)


def cursor_rows(adapter: Any, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The column names and rows of `sql` as the cursor gives them, in the thread's connection:
    `execute(..., fetch=True)` would build an agate table of them first (0.67 s of plugin
    mode's 1.8 s of queries at 500 models). dbt still logs the query and turns its errors into
    its own."""
    _, cursor = adapter.connections.add_query(sql, auto_begin=False)
    return [column[0] for column in cursor.description], list(cursor.fetchall())


def columns_by_node(
    rows: Iterable[Sequence[Any]], relations: Mapping[tuple[str, str, str], Node]
) -> dict[str, tuple[Column, ...]]:
    """`duckdb_columns()` rows (database, schema, table, column, type, comment), in column
    order, as the columns of the nodes among `relations` (keyed by `_key`) they belong to."""
    columns: dict[str, list[Column]] = {}
    for db, schema, name, column, dtype, comment in rows:
        node = relations.get(_key(db, schema, name))
        if node is not None:
            columns.setdefault(node.unique_id, []).append(
                Column(name=str(column), type=str(dtype), description=comment or None)
            )
    return {uid: tuple(cols) for uid, cols in columns.items()}


def _adapter_columns(adapter: Any, nodes: Iterable[Node]) -> dict[str, tuple[Column, ...]]:
    out: dict[str, tuple[Column, ...]] = {}
    for node in nodes:
        relation = adapter.Relation.create(
            database=node.database, schema=node.schema, identifier=node.identifier
        )
        found = adapter.get_columns_in_relation(relation)
        if found:
            out[node.unique_id] = tuple(
                Column(name=str(c.name), type=str(getattr(c, "data_type", c.dtype))) for c in found
            )
    return out


_DUCKDB_RELATION_COLUMNS = """
select database_name, schema_name, table_name, column_name, data_type, comment
from duckdb_columns()
where not internal and lower(table_name) in ({names})
order by database_name, schema_name, table_name, column_index
"""


def relation_columns(adapter: Any, nodes: Iterable[Node]) -> dict[str, tuple[Column, ...]]:
    """The columns of a few relations now (plugin mode, as each node finishes): DuckDB, one
    `duckdb_columns()` query filtered to them; other adapters, one call per relation.

    Raises whatever the adapter raises (the caller keeps the node for the end of the run).
    """
    relations = keyed(nodes)
    if not relations:
        return {}
    with adapter.connection_named("dbt_oml_columns"):
        if str(adapter.type()) != "duckdb":
            return _adapter_columns(adapter, relations.values())
        _, rows = cursor_rows(adapter, relations_query(relations))
    return columns_by_node(rows, relations)


def relations_query(relations: Iterable[tuple[str, str, str]]) -> str:
    """The `duckdb_columns()` query for these (database, schema, table) keys, lower-case.

    It filters on the table's name alone, a set DuckDB looks each row up in; `columns_by_node`
    drops the same name in another schema or catalog. A disjunction per relation was evaluated
    for every column of every catalog: 0.4 s at 100 relations over 2,000 views, where this
    takes 0.05 s whatever the count (benchmarks/README.md 0h).
    """
    names = ", ".join(_quote(t) for t in sorted({t for _, _, t in relations}))
    return _DUCKDB_RELATION_COLUMNS.format(names=names)


def dbt_adapter() -> Any:
    """The adapter dbt registered for this command, or None."""
    from dbt.adapters.factory import FACTORY

    adapters = getattr(FACTORY, "adapters", {})
    return next(iter(adapters.values()), None)
