"""dbt-colibri: its library entry point, `DbtColumnLineageExtractor(manifest_path,
catalog_path, selected_models=[uid]).extract_project_lineage()`, which is what `colibri generate`
runs before it draws its report (the CLI itself also prints a banner and checks PyPI for a newer
version; neither is wanted here). It reads a dbt manifest.json and catalog.json, so each case
becomes a minimal pair in a temporary directory: one source per table of the case's schema (its
catalog entry carries the columns and types), and one model whose compiled_code (and raw_code)
is the case's SQL, depending on every source, whose catalog entry lists the model's own columns
(type "UNKNOWN": colibri reads only their names). Colibri traces each of those columns with
its modified copy of `sqlglot.lineage` (one qualify per model) and adds "structural" lineage,
the WHERE/HAVING/JOIN ON columns, under the keys `__colibri_filter__` and `__colibri_join__`:
taken here as its dataset-level inputs. Its per-column `lineage_type` (pass-through / rename /
transformation) is not DIRECT/INDIRECT. It logs per-column errors and goes on: a logged ERROR
marks the model failed. An edge to a relation outside the manifest comes back as
`_NOT_FOUND___<name>` or `_HARDCODED_REF___<name>`, and is kept with that name."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import _runner

MODEL_DB, MODEL_SCHEMA = "bench_models", "main"
PREFIXES = ("_NOT_FOUND___", "_HARDCODED_REF___")


def artifacts(case: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A minimal dbt-duckdb manifest.json and catalog.json for one case; the model's uid."""
    meta = {
        "adapter_type": "duckdb",
        "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json",
    }
    sources: dict[str, Any] = {}
    catalog_sources: dict[str, Any] = {}
    for catalog, schemas in case["schema"].items():
        for schema, tables in schemas.items():
            for table, cols in tables.items():
                uid = f"source.bench.{catalog}__{schema}.{table}"
                sources[uid] = {
                    "unique_id": uid,
                    "resource_type": "source",
                    "name": table,
                    "identifier": table,
                    "database": catalog,
                    "schema": schema,
                    "relation_name": f'"{catalog}"."{schema}"."{table}"',
                    "config": {},
                    "columns": {},
                }
                catalog_sources[uid] = {
                    "unique_id": uid,
                    "metadata": {
                        "type": "BASE TABLE",
                        "database": catalog,
                        "schema": schema,
                        "name": table,
                    },
                    "columns": {
                        c: {"name": c, "type": t, "index": i + 1}
                        for i, (c, t) in enumerate(cols.items())
                    },
                }
    name = "m_" + "".join(ch if ch.isalnum() else "_" for ch in case["id"])
    model_uid = f"model.bench.{name}"
    model = {
        "unique_id": model_uid,
        "resource_type": "model",
        "name": name,
        "alias": name,
        "database": MODEL_DB,
        "schema": MODEL_SCHEMA,
        "relation_name": f'"{MODEL_DB}"."{MODEL_SCHEMA}"."{name}"',
        "path": f"{name}.sql",
        "raw_code": case["sql"],
        "compiled_code": case["sql"],
        "depends_on": {"nodes": sorted(sources)},
        "config": {"materialized": "table"},
        "columns": {},
    }
    manifest = {
        "metadata": meta,
        "nodes": {model_uid: model},
        "sources": sources,
        "parent_map": {model_uid: sorted(sources)},
        "child_map": {uid: [model_uid] for uid in sources},
    }
    catalog = {
        "metadata": {},
        "nodes": {
            model_uid: {
                "unique_id": model_uid,
                "metadata": {
                    "type": "BASE TABLE",
                    "database": MODEL_DB,
                    "schema": MODEL_SCHEMA,
                    "name": name,
                },
                "columns": {
                    c: {"name": c, "type": "UNKNOWN", "index": i + 1}
                    for i, c in enumerate(case["columns"])
                },
            }
        },
        "sources": catalog_sources,
        "errors": None,
    }
    return manifest, catalog, model_uid


def _ref(dbt_node: str, sources: dict[str, Any]) -> list[str]:
    if dbt_node in sources:
        s = sources[dbt_node]
        return _runner.table_ref(s["database"], s["schema"], s["identifier"], dbt_node)
    name = dbt_node
    for prefix in PREFIXES:
        name = name.removeprefix(prefix)
    parts = ["", "", *name.split(".")][-3:]
    return _runner.table_ref(*parts, dbt_node)


def load() -> _runner.Analyse:
    from dbt_colibri.lineage_extractor.extractor import DbtColumnLineageExtractor

    def analyse(case: dict[str, Any]) -> _runner.Answer:
        manifest, catalog, uid = artifacts(case)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "manifest.json").write_text(json.dumps(manifest))
            (Path(tmp) / "catalog.json").write_text(json.dumps(catalog))
            extractor = DbtColumnLineageExtractor(
                str(Path(tmp) / "manifest.json"),
                str(Path(tmp) / "catalog.json"),
                selected_models=[uid],
            )
            result = extractor.extract_project_lineage()
        parents = result["lineage"]["parents"].get(uid, {})
        columns: list[list[Any]] = []
        dataset: list[list[Any]] = []
        for column, inputs in parents.items():
            for parent in inputs:
                ref = _ref(parent["dbt_node"], manifest["sources"])
                if column.startswith("__colibri_"):
                    dataset.append([ref, parent["column"]])
                else:
                    columns.append([column, ref, parent["column"], None])
        if result["errors"]:
            raise _runner.PartialAnswerError(
                (columns, dataset), [e["error_message"] for e in result["errors"]]
            )
        return columns, dataset

    return analyse


if __name__ == "__main__":
    _runner.main("dbt-colibri", load, ("dbt-colibri", "sqlglot", "sqlglotc"))
