"""`dbt-oml impact` on the mini artifacts (analysed for real) and an edited copy of them: renamed,
removed and changed columns, readers with paths, tests, exposures, --fail-on, the three formats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.artifacts import read_artifacts
from dbt_oml.errors import SelectionError
from dbt_oml.impact.analysis import CHANGED, REMOVED, RENAMED, SELECTED, Report
from dbt_oml.impact.report import as_json, as_markdown, as_text
from dbt_oml.impact.sql import normalized_sql
from dbt_oml.lineage.graph import ColumnGraph
from dbt_oml.pipeline.impact import impact_of_artifacts
from tests.conftest import MINI

STG = "model.jaffle_oml.stg_customers"
CORE = "model.jaffle_oml.core_customers"
SNAPSHOT = "snapshot.jaffle_oml.customers_snapshot"
EXPOSURE = {
    "exposure.jaffle_oml.customer_kpis": {
        "name": "customer_kpis",
        "label": "Customer KPIs",
        "type": "dashboard",
        "owner": {"email": "bi@example.com"},
        "url": "https://bi.example.com/d/1",
        "depends_on": {"nodes": [CORE]},
    }
}


def _edited(dest: Path, old: str, new: str, *, exposures: bool = True) -> Path:
    """A copy of the mini target with `old` replaced by `new` in stg_customers' SQL."""
    shutil.copytree(MINI, dest)
    for name in ("manifest.json", "run_results.json"):
        doc = json.loads((dest / name).read_text())
        for item in [*doc.get("nodes", {}).values(), *doc.get("results", [])]:
            if item.get("unique_id") == STG and item.get("compiled_code"):
                assert old in item["compiled_code"]
                item["compiled_code"] = item["compiled_code"].replace(old, new)
        if name == "manifest.json" and exposures:
            doc["exposures"] = EXPOSURE
        (dest / name).write_text(json.dumps(doc))
    (dest / "catalog.json").unlink()  # a `dbt compile` of the change has no catalog
    return dest


def _run(current: Path, state: Path | None, *columns: str) -> tuple[Report, ColumnGraph]:
    return impact_of_artifacts(
        read_artifacts(current),
        read_artifacts(state) if state else None,
        columns=columns,
        project_dir=current,
    )


@pytest.fixture
def state(tmp_path: Path) -> Path:
    target = tmp_path / "state"
    shutil.copytree(MINI, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["exposures"] = EXPOSURE
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


def _readers(report: Report) -> dict[str, set[tuple[str, str | None]]]:
    return {
        f"{i.change.node}.{i.change.column}": {(r.node, r.column) for r in i.columns}
        for i in report.impacts
    }


def test_a_rename_lists_every_reader_with_its_path(tmp_path: Path, state: Path) -> None:
    current = _edited(
        tmp_path / "dev", 'lower("Email") as email', 'lower("Email") as email_address'
    )
    report, graph = _run(current, state)
    assert report.comparison is not None
    assert report.comparison.modified == [STG]
    (impact,) = report.impacts
    assert (impact.change.change, impact.change.column, impact.change.new_name) == (
        RENAMED,
        "email",
        "email_address",
    )
    assert {(r.node, r.column) for r in impact.columns} == {
        (CORE, "customer_key"),
        (CORE, "email"),
        (SNAPSHOT, "email_address"),  # follows the rename (select *)
    }
    key = next(r for r in impact.columns if r.column == "customer_key")
    assert key.path == ((STG, "email"), (CORE, "customer_key"))
    assert key.via_state  # core_customers still reads `email`: opaque now, production lineage
    assert key.transformations[0].masking
    assert impact.still_read
    assert [x.exposure.name for x in impact.exposures] == ["Customer KPIs"]
    assert report.failing("removed") == [impact]
    assert report.failing(None) == []
    assert graph.nodes[CORE].opaque


def test_a_changed_definition_and_its_tests(tmp_path: Path, state: Path) -> None:
    current = _edited(
        tmp_path / "dev", '"CustomerId" as customer_id', '"CustomerId" + 1 as customer_id'
    )
    report, _ = _run(current, state)
    (impact,) = report.impacts
    assert (impact.change.change, impact.change.column) == (CHANGED, "customer_id")
    assert '"CustomerId"' not in impact.change.after  # relation-neutral, normalised names
    assert "+ 1" in impact.change.after
    assert "+ 1" not in impact.change.before
    tests = {t.name for t in impact.tests}
    assert (
        "relationships_core_orders_customer_id__customer_id__ref_core_customers_" in tests
    )  # its `field`
    assert report.failing("removed") == []
    assert report.failing("changed") == [impact]


def test_a_removed_column(tmp_path: Path, state: Path) -> None:
    current = _edited(tmp_path / "dev", '"CountryCode" as country_code,', "")
    report, _ = _run(current, state)
    (impact,) = report.impacts
    assert (impact.change.change, impact.change.column) == (REMOVED, "country_code")
    assert (CORE, "country_code") in {(r.node, r.column) for r in impact.columns}
    assert CORE in {r.node for r in impact.rows}  # the join on country_code
    assert report.failing("removed") == [impact]


def test_an_unchanged_project_has_no_changes(tmp_path: Path, state: Path) -> None:
    current = _edited(tmp_path / "dev", "as email", "as email")
    report, graph = _run(current, state)
    assert report.impacts == ()
    assert report.comparison is not None
    assert report.comparison.modified == []
    assert as_text(report, graph)[-1] == "dbt-oml impact: no column changed"


def test_named_columns_and_a_singular_test(tmp_path: Path) -> None:
    report, _graph = _run(MINI, None, "core_orders.order_amount")
    (impact,) = report.impacts
    assert impact.change.change == SELECTED
    assert ("model.jaffle_oml.revenue_by_country", "Revenue") in {
        (r.node, r.column) for r in impact.columns
    }
    assert "assert_revenue_not_negative" in {t.name for t in impact.tests}  # WHERE "Revenue" < 0
    with pytest.raises(SelectionError) as bare:
        _run(MINI, None, "core_orders")
    assert "expected MODEL.COLUMN" in bare.value.reason
    with pytest.raises(SelectionError) as typo:
        _run(MINI, None, "core_orders.order_amout")
    assert "order_amount" in typo.value.suggestions


def test_formats(tmp_path: Path, state: Path) -> None:
    current = _edited(
        tmp_path / "dev", 'lower("Email") as email', 'lower("Email") as email_address'
    )
    report, graph = _run(current, state)
    doc: dict[str, Any] = as_json(report, graph)
    assert set(doc) == {"version", "state", "models", "notes", "uncompiled", "changes", "selected"}
    assert "model.jaffle_oml.stg_customers" in doc["selected"]  # keys are only ever added
    assert "model.jaffle_oml.core_customers" in doc["selected"]  # it reads the renamed column
    (change,) = doc["changes"]
    assert set(change) == {
        "node",
        "relation",
        "column",
        "change",
        "new_name",
        "before",
        "after",
        "still_read",
        "columns",
        "rows",
        "tests",
        "exposures",
        "may_read",
    }
    assert change["exposures"][0]["url"] == "https://bi.example.com/d/1"
    assert json.loads(json.dumps(doc)) == doc
    md = as_markdown(report, graph)
    assert "### `stg_customers.email`: renamed to `email_address`" in md
    assert "| `core_customers.customer_key` | column | DIRECT TRANSFORMATION masked |" in md
    assert "**Still read as `email`**" in md
    text = "\n".join(as_text(report, graph))
    assert "via stg_customers.email -> core_customers.customer_key" in text


def test_normalized_sql_ignores_the_target() -> None:
    artifacts = read_artifacts(MINI)
    node = artifacts.manifest.nodes[CORE]
    prod = (node.compiled_code or "").replace('"warehouse"."staging"', '"prod"."staging"')
    assert normalized_sql(node, artifacts.manifest) != normalized_sql(
        node, artifacts.manifest, prod
    )  # prod's relation names are not this manifest's
    assert "{{model.jaffle_oml.stg_customers}}" in normalized_sql(node, artifacts.manifest)


GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "artifacts"
PROFILE = "model.jaffle_oml.core_column_profile"  # `show select * from stg_orders`: opaque


def test_an_opaque_reader_is_listed_as_may_read_in_every_format() -> None:
    report, graph = _run(GOLDEN, None, "stg_orders.order_id")
    (impact,) = report.impacts
    assert [(o.node, o.path) for o in impact.may_read] == [
        (PROFILE, (("model.jaffle_oml.stg_orders", "order_id"),))
    ]
    assert impact.may_read[0].reason.startswith("SQL does not parse")
    assert PROFILE not in {r.node for r in (*impact.columns, *impact.rows)}
    text = as_text(report, graph)
    assert "may be read by 1 opaque model(s)" in text[2]
    assert any(
        x.startswith("    may read core_column_profile  (opaque: SQL does not") for x in text
    )
    (change,) = as_json(report, graph)["changes"]
    assert [m["node"] for m in change["may_read"]] == [PROFILE]
    assert change["may_read"][0]["relation"] == "warehouse.core.core_column_profile"
    assert "| `core_column_profile` | may read (opaque) | SQL does not parse" in as_markdown(
        report, graph
    )


def test_a_column_no_opaque_model_reaches_has_no_may_read() -> None:
    report, _ = _run(GOLDEN, None, "dim_customers.customer_key")
    assert report.impacts[0].may_read == ()


def test_the_uncompiled_models_an_answer_rests_on() -> None:
    from dbt_oml.impact.analysis import bearing_on

    _, graph = _run(GOLDEN, None)
    missing = ["model.jaffle_oml.core_orders", "model.jaffle_oml.stg_customers"]
    stg_orders = ["model.jaffle_oml.stg_orders"]
    assert bearing_on(graph, missing, stg_orders) == ("model.jaffle_oml.core_orders",)
    assert bearing_on(graph, missing, stg_orders, upstream=True, downstream=False) == ()
    assert bearing_on(graph, missing, None) == tuple(missing)
