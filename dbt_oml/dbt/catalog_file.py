"""catalog.json written at the end of the build, from what dbt still holds, as `dbt docs generate
--no-compile` would write it (issue 31 item 2).

At the build's `CommandCompleted` dbt still has its adapter and, as the adapter's macro resolver,
the manifest it ran. The catalog is then dbt-docs' own path minus a second dbt invocation (which
loads the project and its saved parse again: about 3 s at 500 models): the adapter's
`get_filtered_catalog` queries over the same nodes and schemas (their rows taken as they come,
`catalog_rows`), dbt's `Catalog` and `CatalogArtifact`,
and docs' index.html and asset folders copied as docs generate copies them. Anything missing or
failing returns the reason, and `dbt docs generate` runs as before. What it wrote is also
given back as the Catalog that reading the file would give, so that the end of the build does
not read it again (0.07 s of JSON at 500 models, 0.27 s at 2,000).

That Catalog is made from the adapter's rows as they come in (`catalog_of_rows`), and handed out
`early`: the lineage workers start on it while dbt's catalog objects and the JSON are made
(0.1 s at 500 models, where the workers used to wait).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from itertools import chain
from pathlib import Path
from typing import Any

from dbt_oml.artifacts import Catalog, catalog_from_document
from dbt_oml.dbt.duckdb_catalog import duckdb_catalog_rows

logger = logging.getLogger(__name__)


def write_catalog(
    target_path: Path, *, early: Callable[[Catalog], None] | None = None
) -> Catalog | str:
    """Write target/catalog.json (and index.html, the asset folders): the catalog written, or
    why it was not. `early` hears that catalog as soon as the adapter's rows are in, before
    dbt's objects and the file are made (what it raises is logged and ignored)."""
    try:
        from dbt.adapters.factory import FACTORY

        adapters = list(getattr(FACTORY, "adapters", {}).values())
        if len(adapters) != 1:
            return "no single adapter registered"
        adapter = adapters[0]
        manifest = adapter.get_macro_resolver()
        if manifest is None or not hasattr(manifest, "get_used_schemas"):
            return "the adapter holds no manifest"
        return _write(adapter, manifest, target_path, early)
    except Exception as e:
        logger.debug("writing catalog.json in-process failed", exc_info=True)
        return f"{type(e).__name__}: {e}"


def _write(
    adapter: Any, manifest: Any, target_path: Path, early: Callable[[Catalog], None] | None
) -> Catalog:
    import dbt.utils
    from dbt.task.docs import DOCS_INDEX_FILE_PATH
    from dbt_common.utils.encoding import JSONEncoder

    config = adapter.config
    shutil.copyfile(DOCS_INDEX_FILE_PATH, target_path / "index.html")
    for asset in getattr(config, "asset_paths", None) or ():
        copy, source = target_path / asset, Path(config.project_root) / asset
        if copy.exists():
            shutil.rmtree(copy)
        if source.exists():
            shutil.copytree(source, copy)
    with adapter.connection_named("generate_catalog"):
        nodes = chain(
            [n for n in manifest.nodes.values() if n.is_relational and not n.is_ephemeral_model],
            manifest.sources.values(),
        )
        rows, exceptions = catalog_rows(adapter, nodes, manifest.get_used_schemas())
    coerce = dbt.utils._coerce_decimal  # type: ignore[attr-defined] # as docs generate does
    rows = [dict(zip(row, map(coerce, row.values()), strict=True)) for row in rows]
    generated_at = datetime.now(timezone.utc).replace(tzinfo=None)
    path = target_path / "catalog.json"
    held = _held(rows, manifest, generated_at, path)
    if held is not None and early is not None:
        try:
            early(held)
        except Exception:
            logger.debug("the catalog's early hearer failed", exc_info=True)
    document = catalog_document(rows, manifest, generated_at, exceptions)
    temporary = path.with_name(f".catalog.json.{os.getpid()}.tmp")
    # the bytes dbt's write_json gives (json.dump, its encoder), from json's C encoder: 4x faster
    temporary.write_text(json.dumps(document, cls=JSONEncoder), encoding="utf-8")
    os.replace(temporary, path)  # a reader never sees half a catalog
    try:
        from dbt.utils.artifact_upload import add_artifact_produced

        add_artifact_produced(str(path))
    except ImportError:  # an older dbt-core: nothing to tell
        pass
    return held if held is not None else catalog_from_document(document, path)


def catalog_document(
    rows: list[dict[str, Any]],
    manifest: Any,
    generated_at: datetime,
    exceptions: Iterable[Exception] = (),
) -> dict[str, Any]:
    """catalog.json's document, as dbt-docs makes it of the adapter's rows: its Catalog, mapped
    to the manifest's unique_ids, as a CatalogArtifact's dict (what its `.write()` writes)."""
    from dbt.artifacts.schemas.catalog import CatalogArtifact
    from dbt.task.docs.generate import Catalog as DocsCatalog

    found, sources = DocsCatalog(rows).make_unique_id_map(manifest, None)
    artifact = CatalogArtifact.from_results(
        generated_at=generated_at,
        nodes=found,
        sources=sources,
        compile_results=None,
        errors=[str(e) for e in exceptions] or None,
    )
    return artifact.to_dict(omit_none=False, context={"artifact": True})


def _held(
    rows: list[dict[str, Any]], manifest: Any, generated_at: datetime, path: Path
) -> Catalog | None:
    """`catalog_of_rows` over the manifest's unique_ids; None where it cannot say."""
    from dbt.task.docs.generate import get_unique_id_mapping

    try:
        return catalog_of_rows(rows, *get_unique_id_mapping(manifest), generated_at, path)
    except Exception:
        logger.debug("the catalog from the adapter's rows failed", exc_info=True)
        return None


def catalog_of_rows(
    rows: Iterable[Mapping[str, Any]],
    node_map: Mapping[Any, str],
    source_map: Mapping[Any, set[str]],
    generated_at: datetime,
    path: Path,
) -> Catalog | None:
    """The Catalog `catalog_from_document` gives for the document `_write` makes of `rows`,
    without dbt's objects: dbt-docs' Catalog (a table per (database, schema, name) as the rows
    spell them, its metadata from its first row, a column per name, the last row's) mapped to
    unique_ids by their lower-case key, nodes first, as `make_unique_id_map` maps it with
    `node_map` and `source_map` (dbt's `get_unique_id_mapping`). None where dbt would refuse:
    a source matched twice, a row it cannot read (dbt's path then says why)."""
    from dbt.artifacts.schemas.catalog import CatalogArtifact

    tables: dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[str, Any]]] = {}
    try:
        for row in rows:
            database, schema, name = row["table_database"], row["table_schema"], row["table_name"]
            spelled = (None if database is None else str(database), str(schema), str(name))
            if (table := tables.get(spelled)) is None:
                key = (None if database is None else database.lower(), schema.lower(), name.lower())
                table = tables[spelled] = (key, {})
            column = {
                "type": row["column_type"],
                "index": int(row["column_index"]),
                "name": row["column_name"],
                "comment": row.get("column_comment"),
            }
            table[1][column["name"]] = column
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    nodes: dict[str, Any] = {}
    sources: dict[str, Any] = {}
    for key, columns in tables.values():
        if key in node_map:
            nodes[node_map[key]] = {"columns": columns}
        for unique_id in source_map.get(key, set()):
            if unique_id in sources:
                return None  # dbt: AmbiguousCatalogMatchError
            sources[unique_id] = {"columns": columns}
    metadata = CatalogArtifact.from_results(
        generated_at=generated_at, nodes={}, sources={}, compile_results=None, errors=None
    ).to_dict(omit_none=False, context={"artifact": True})["metadata"]
    return catalog_from_document({"metadata": metadata, "nodes": nodes, "sources": sources}, path)


def catalog_rows(
    adapter: Any, nodes: Iterable[Any], used_schemas: Any
) -> tuple[list[dict[str, Any]], list[Exception]]:
    """The rows of `adapter.get_filtered_catalog(nodes, used_schemas, None)`, each a dict, and
    its exceptions: the same per-information-schema queries, the same values, without agate's
    merge of their tables, which rebuilds every row of tables whose column types differ
    through a lookup that copies the row per column (0.4 s of the catalog's 1.1 s at 500
    models). With dbt-duckdb's own macros, without agate at all (dbt.duckdb_catalog). An
    adapter with a catalog method of its own gets dbt's whole path.
    """
    from dbt.adapters.base.impl import BaseAdapter

    kind = type(adapter)
    if (
        kind.get_filtered_catalog is not BaseAdapter.get_filtered_catalog
        or kind.get_catalog is not BaseAdapter.get_catalog
    ):
        table, exceptions = adapter.get_filtered_catalog(nodes, used_schemas, None)
        return [dict(zip(table.column_names, row, strict=True)) for row in table], exceptions
    catalogs = [(i, s) for i, s in adapter._get_catalog_schemas(nodes).items() if s]
    manifest = adapter.get_macro_resolver()
    rows = duckdb_catalog_rows(adapter, manifest, catalogs, used_schemas)
    if rows is not None:
        return rows, []
    return _rows_by_dbt(adapter, catalogs, used_schemas)


def _rows_by_dbt(
    adapter: Any, catalogs: list[tuple[Any, Any]], used_schemas: Any
) -> tuple[list[dict[str, Any]], list[Exception]]:
    """BaseAdapter.get_catalog's queries, as it runs them, their tables' rows merged."""
    from concurrent.futures import as_completed

    from dbt.adapters.events.types import CatalogGenerationError
    from dbt_common.events.functions import warn_or_error
    from dbt_common.utils.executor import executor

    with executor(adapter.config) as pool:
        futures = [
            pool.submit_connected(  # type: ignore[no-untyped-call]
                adapter,
                f"{info.database}.information_schema",
                adapter._get_one_catalog,
                info,
                schemas,
                used_schemas,
            )
            for info, schemas in catalogs
        ]
    tables, exceptions = [], []
    for future in as_completed(futures):  # what catch_as_completed keeps, in its order
        error = future.exception()
        if error is None:
            if len(table := future.result()) > 0:
                tables.append(table)
        elif isinstance(error, KeyboardInterrupt) or not isinstance(error, Exception):
            raise error
        else:
            warn_or_error(CatalogGenerationError(exc=str(error)))
            exceptions.append(error)
    names = dict.fromkeys(name for table in tables for name in table.column_names)
    empty = dict.fromkeys(names)  # a column one table lacks is None in its rows, as merged
    rows = [empty | dict(zip(t.column_names, row, strict=True)) for t in tables for row in t]
    return rows, exceptions
