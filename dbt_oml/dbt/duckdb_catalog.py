"""dbt-duckdb's catalog rows without agate: its own query, its own filter, the cursor's values.

`dbt docs generate` asks dbt-duckdb's `duckdb__get_catalog` macro for each catalog's columns.
The macro runs its query through `run_query`, which turns the rows into an agate table; dbt then
builds a second table to force every column but `column_index` to text, and filters it by the
schemas the project uses. At 500 models that is 0.3 s of the catalog's 0.4 s, for values that
come out as the cursor gave them: every column but `column_index` holds strings from the first
table on (dbt_common's `table_from_data_flat` keeps a column with any string as text, and its
text type nulls nothing), an all-NULL column stays NULL, and `column_index` stays an int.

So when the macros are dbt-duckdb's own (each name defined once, the composing macro's text the
one this module mirrors), the query here is the macro's, composed from the same sub-macros, and
its rows are filtered by dbt's own schema filter. Anything else (an override, a newer
dbt-duckdb that composes it otherwise, a value that is not a string, an int or NULL, an error)
returns None, and the caller takes dbt's path.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from typing import Any, Final

from dbt_oml.dbt.relation_columns import cursor_rows

logger = logging.getLogger(__name__)

#: sha256 (its start) of `duckdb__get_catalog`'s text in dbt-duckdb 1.11: what `_query` composes.
_COMPOSED: Final = "147e5a35fada4ba5"
_MACROS: Final = (
    "get_catalog",
    "duckdb__get_catalog",
    "duckdb__get_catalog_tables_sql",
    "duckdb__get_catalog_columns_sql",
    "duckdb__get_catalog_schemas_where_clause_sql",
    "duckdb__get_catalog_results_sql",
)
_PLAIN: Final = (str, int, type(None))


def duckdb_catalog_rows(
    adapter: Any, manifest: Any, catalogs: Iterable[tuple[Any, Any]], used_schemas: Any
) -> list[dict[str, Any]] | None:
    """The rows `get_filtered_catalog` gives for `catalogs` ((information schema, schemas), as
    `_get_catalog_schemas` gives them), in the caller's connection; None: take dbt's path."""
    from dbt.adapters.base.impl import _catalog_filter_schemas

    if not _stock_adapter(adapter) or not _stock_macros(manifest):
        return None
    keep = _catalog_filter_schemas(used_schemas)
    rows: list[dict[str, Any]] = []
    try:
        for information_schema, schemas in catalogs:
            if not schemas:
                continue
            names, found = cursor_rows(adapter, _query(adapter, information_schema, schemas))
            for values in found:
                if any(type(v) not in _PLAIN for v in values):
                    return None
                row = dict(zip(names, values, strict=True))
                if keep(row):
                    rows.append(row)
    except Exception:  # dbt's path runs the same query and reports its failure as dbt does
        logger.debug("the catalog query failed; dbt's path again", exc_info=True)
        return None
    return rows


def _stock_adapter(adapter: Any) -> bool:
    """DuckDB, whose catalog methods are BaseAdapter's (dbt-duckdb's own, 1.11)."""
    from dbt.adapters.base.impl import BaseAdapter

    def function(cls: type, name: str) -> Any:  # a classmethod's is bound anew at each access
        found = getattr(cls, name)
        return getattr(found, "__func__", found)

    kind = type(adapter)
    return str(adapter.type()) == "duckdb" and all(
        function(kind, name) is function(BaseAdapter, name)
        for name in ("_get_one_catalog", "_catalog_filter_table", "get_catalog")
    )


def _stock_macros(manifest: Any) -> bool:
    """Each catalog macro defined once, by dbt or dbt-duckdb, the composing one as mirrored."""
    found: dict[str, list[Any]] = {name: [] for name in _MACROS}
    for macro in getattr(manifest, "macros", {}).values():
        if macro.name in found:
            found[macro.name].append(macro)
    if any(len(macros) != 1 for macros in found.values()):
        return False
    if any(m[0].package_name not in ("dbt", "dbt_duckdb") for m in found.values()):
        return False
    text = found["duckdb__get_catalog"][0].macro_sql
    return hashlib.sha256(text.encode()).hexdigest()[:16] == _COMPOSED


def _query(adapter: Any, information_schema: Any, schemas: Any) -> str:
    """`duckdb__get_catalog`'s query, as the macro composes it from its sub-macros."""

    def sql(name: str, **kwargs: Any) -> str:
        return str(adapter.execute_macro(name, kwargs=kwargs))

    where = sql("duckdb__get_catalog_schemas_where_clause_sql", schemas=schemas)
    tables = sql("duckdb__get_catalog_tables_sql", information_schema=information_schema)
    columns = sql("duckdb__get_catalog_columns_sql", information_schema=information_schema)
    return (
        f"with tables as (\n{tables}\n{where}\n),\ncolumns as (\n{columns}\n{where}\n)\n"
        f"{sql('duckdb__get_catalog_results_sql')}"
    )
