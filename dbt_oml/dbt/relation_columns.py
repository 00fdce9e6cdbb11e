"""The real columns of a project's relations, read through the adapter dbt still holds.

I/O adapter for the dbt plugin, which has no `dbt docs generate` to give it catalog.json: with
DuckDB one query over `duckdb_columns()` covers every attached catalog (the same source as
dbt-duckdb's catalog); other adapters answer `get_columns_in_relation` per relation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
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


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def live_catalog(manifest: Manifest, *, now: datetime) -> tuple[Catalog | None, str | None]:
    """Columns of every relation in the manifest, as a Catalog; or None and the reason."""
    from dbt.adapters.factory import FACTORY

    adapters = getattr(FACTORY, "adapters", {})
    if not adapters:
        return None, "no adapter registered: schema facets use the declared columns"
    adapter = next(iter(adapters.values()))
    relations = {
        _key(n.database, n.schema, n.identifier): n
        for n in manifest.nodes.values()
        if n.is_relation and n.database and n.schema and n.identifier
    }
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
    _, table = adapter.execute(sql, fetch=True)
    columns: dict[str, list[Column]] = {}
    for db, schema, name, column, dtype, comment in table.rows:
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
where not internal and ({relations})
order by database_name, schema_name, table_name, column_index
"""


def relation_columns(adapter: Any, nodes: Iterable[Node]) -> dict[str, tuple[Column, ...]]:
    """The columns of a few relations now (plugin mode, as each node finishes): DuckDB, one
    `duckdb_columns()` query filtered to them; other adapters, one call per relation.

    Raises whatever the adapter raises (the caller keeps the node for the end of the run).
    """
    relations = {
        _key(n.database, n.schema, n.identifier): n
        for n in nodes
        if n.is_relation and n.database and n.schema and n.identifier
    }
    if not relations:
        return {}
    with adapter.connection_named("dbt_oml_columns"):
        if str(adapter.type()) != "duckdb":
            return _adapter_columns(adapter, relations.values())
        where = " or ".join(
            f"(lower(database_name) = {_quote(d)} and lower(schema_name) = {_quote(s)} "
            f"and lower(table_name) = {_quote(t)})"
            for d, s, t in sorted(relations)
        )
        _, table = adapter.execute(_DUCKDB_RELATION_COLUMNS.format(relations=where), fetch=True)
    columns: dict[str, list[Column]] = {}
    for db, schema, name, column, dtype, comment in table.rows:
        node = relations.get(_key(db, schema, name))
        if node is not None:
            columns.setdefault(node.unique_id, []).append(
                Column(name=str(column), type=str(dtype), description=comment or None)
            )
    return {uid: tuple(cols) for uid, cols in columns.items()}


def dbt_adapter() -> Any:
    """The adapter dbt registered for this command, or None."""
    from dbt.adapters.factory import FACTORY

    adapters = getattr(FACTORY, "adapters", {})
    return next(iter(adapters.values()), None)
