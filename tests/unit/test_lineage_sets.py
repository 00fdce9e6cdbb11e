"""PIVOT, UNPIVOT and COLUMNS(...) through a run's analysis (lineage.batch): the model's own
catalog columns reach a PIVOT whose columns come from the data, and a dbt-duckdb file source's
described columns expand COLUMNS(...). The per-construct edges are table-driven cases in
tests/fixtures/lineage_cases_pivot.json (test_lineage_cases)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dbt_oml.artifacts import read_artifacts
from dbt_oml.lineage.batch import analyse_models
from dbt_oml.lineage.model import wants_own_columns

STG_ORDERS = ("warehouse", "staging", "stg_orders")


def _add_model(target: Path, uid: str, sql: str, columns: list[str] | None) -> None:
    """A model as dbt compiles it, with a catalog entry of `columns` (None: no entry)."""
    doc = json.loads((target / "manifest.json").read_text())
    name = uid.rsplit(".", 1)[-1]
    doc["nodes"][uid] = {
        **doc["nodes"]["model.jaffle_oml.stg_customers"],
        "unique_id": uid,
        "name": name,
        "alias": name,
        "relation_name": f'"warehouse"."marts"."{name}"',
        "depends_on": {"nodes": ["model.jaffle_oml.stg_orders"]},
        "compiled_code": sql,
    }
    (target / "manifest.json").write_text(json.dumps(doc))
    if columns is None:
        return
    catalog = json.loads((target / "catalog.json").read_text())
    entry = json.loads(json.dumps(catalog["nodes"]["model.jaffle_oml.stg_orders"]))
    entry["metadata"].update({"name": name, "schema": "marts"})
    entry["columns"] = {
        c: {"comment": None, "index": i, "name": c, "type": "DOUBLE"}
        for i, c in enumerate(columns, 1)
    }
    entry["unique_id"] = uid
    catalog["nodes"][uid] = entry
    (target / "catalog.json").write_text(json.dumps(catalog))


def _edges(lineage: Any) -> dict[str, set[tuple[str, ...]]]:
    return {
        e.output: {(s.catalog, s.schema, s.table, s.column) for s, _ in e.inputs}
        for e in lineage.columns
    }


def test_a_data_defined_pivot_takes_its_columns_from_the_models_catalog(mini_target: Path) -> None:
    uid = "model.jaffle_oml.orders_by_status"
    sql = (
        'pivot "warehouse"."staging"."stg_orders" on status using sum(amount) group by customer_id'
    )
    _add_model(mini_target, uid, sql, ["customer_id", "open", "paid", "refund"])
    assert wants_own_columns(sql)  # no `*`, yet the catalog columns are passed
    report = analyse_models(read_artifacts(mini_target), wanted={uid}, dialect="duckdb")
    assert report.opaque == {}
    assert _edges(report.models[uid]) == {
        "customer_id": {(*STG_ORDERS, "customer_id")},
        "open": {(*STG_ORDERS, "amount")},
        "paid": {(*STG_ORDERS, "amount")},
        "refund": {(*STG_ORDERS, "amount")},
    }
    (paid,) = [e for e in report.models[uid].columns if e.output == "paid"]
    ((_, (transform,)),) = paid.inputs
    assert (transform.type, transform.subtype) == ("DIRECT", "AGGREGATION")
    dataset = {(s.column, t.subtype) for s, ts in report.models[uid].dataset for t in ts}
    assert dataset == {("customer_id", "GROUP_BY"), ("status", "GROUP_BY")}


def test_a_data_defined_pivot_without_a_catalog_entry_is_opaque_with_the_reason(
    mini_target: Path,
) -> None:
    uid = "model.jaffle_oml.orders_by_status"
    sql = (
        'pivot "warehouse"."staging"."stg_orders" on status using sum(amount) group by customer_id'
    )
    _add_model(mini_target, uid, sql, None)
    report = analyse_models(read_artifacts(mini_target), wanted={uid}, dialect="duckdb")
    assert uid not in report.models
    assert "its columns come from the data" in report.opaque[uid]


def _add_feed_source(target: Path, columns: list[str]) -> str:
    """A dbt-duckdb source with external_location whose columns are known (described), as
    dbt compiles it: `source()` renders to the file read."""
    doc = json.loads((target / "manifest.json").read_text())
    location = "read_json('data/feed/*.json')"
    doc["sources"]["source.jaffle_oml.api.feed"] = {
        "unique_id": "source.jaffle_oml.api.feed",
        "resource_type": "source",
        "name": "feed",
        "package_name": "jaffle_oml",
        "database": "warehouse",
        "schema": "api",
        "identifier": "feed",
        "relation_name": location,
        "meta": {"external_location": "read_json('data/{name}/*.json')"},
        "columns": {c: {"name": c, "data_type": None} for c in columns},
    }
    (target / "manifest.json").write_text(json.dumps(doc))
    return location


def _add_feed_model(target: Path, sql: str) -> str:
    uid = "model.jaffle_oml.stg_feed"
    doc = json.loads((target / "manifest.json").read_text())
    doc["nodes"][uid] = {
        **doc["nodes"]["model.jaffle_oml.stg_customers"],
        "unique_id": uid,
        "name": "stg_feed",
        "alias": "stg_feed",
        "relation_name": '"warehouse"."staging"."stg_feed"',
        "depends_on": {"nodes": ["source.jaffle_oml.api.feed"]},
        "compiled_code": sql,
    }
    (target / "manifest.json").write_text(json.dumps(doc))
    return uid


def test_columns_lambda_over_a_described_file_source_expands_to_its_columns(
    mini_target: Path,
) -> None:
    location = _add_feed_source(mini_target, ["id", "price_eur", "price_usd", "note"])
    uid = _add_feed_model(mini_target, f"select id, columns(c -> c like 'price%') from {location}")
    report = analyse_models(read_artifacts(mini_target), wanted={uid}, dialect="duckdb")
    feed = ("warehouse", "api", "feed")
    assert _edges(report.models[uid]) == {
        "id": {(*feed, "id")},
        "price_eur": {(*feed, "price_eur")},
        "price_usd": {(*feed, "price_usd")},
    }  # never a `_col_0` without inputs


def test_columns_over_an_undescribed_file_source_is_opaque_never_a_phantom(
    mini_target: Path,
) -> None:
    location = _add_feed_source(mini_target, [])
    uid = _add_feed_model(mini_target, f"select id, columns(c -> c like 'price%') from {location}")
    report = analyse_models(read_artifacts(mini_target), wanted={uid}, dialect="duckdb")
    assert uid not in report.models
    assert report.opaque[uid].endswith("over a relation whose columns are unknown")
