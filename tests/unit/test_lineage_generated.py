"""A model's `select *` over a file takes its own catalog columns, through the batch (serially
and in worker processes), and a stale catalog never yields an edge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbt_oml.artifacts import read_artifacts
from dbt_oml.lineage import batch as lineage_batch
from dbt_oml.lineage.batch import analyse_models

WEB = "model.jaffle_oml.stg_web_events"
PARQUET = "data/web_events.parquet"


def _star_over_file(target: Path, sql: str) -> None:
    for name in ("manifest.json", "run_results.json"):
        doc = json.loads((target / name).read_text())
        for item in [*doc.get("nodes", {}).values(), *doc.get("results", [])]:
            if item.get("unique_id") == WEB:
                item["compiled_code"] = sql
        (target / name).write_text(json.dumps(doc))


@pytest.mark.parametrize("workers", [1, 2], ids=["serial", "worker processes"])
def test_file_star_takes_the_catalog_columns(
    mini_target: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    monkeypatch.setattr(lineage_batch, "PARALLEL_THRESHOLD", 1)
    _star_over_file(mini_target, f"select * from read_parquet('{PARQUET}')")
    report = analyse_models(
        read_artifacts(mini_target), wanted={WEB}, dialect="duckdb", workers=workers
    )
    edges = {
        e.output: [(s.catalog, s.table, s.column) for s, _ in e.inputs]
        for e in report.models[WEB].columns
    }
    assert edges == {
        c: [("file", PARQUET, c)] for c in ("event_id", "customer_id", "event_at", "page")
    }


def test_a_catalog_of_other_sql_is_not_used(mini_target: Path) -> None:
    _star_over_file(mini_target, f"select *, 1 as extra from read_parquet('{PARQUET}')")
    report = analyse_models(read_artifacts(mini_target), wanted={WEB}, dialect="duckdb")
    assert report.opaque[WEB] == "`*` over a relation whose columns are unknown"
