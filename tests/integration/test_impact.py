"""`dbt-oml impact --state` on the bundled project: one staging column renamed in a copy, compiled
with plain `dbt compile`, compared with the build's target (issue 14's done-when)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import CliRun, copy_of_built, copy_project, run_cli, run_plain_dbt

pytestmark = pytest.mark.integration

STG = "model.jaffle_oml.stg_customers"


def test_a_renamed_staging_column_lists_the_mart_columns_and_tests(
    built: CliRun, tmp_path: Path
) -> None:
    assert built.returncode == 0, built.stderr[-2000:]
    state = tmp_path / "prod-target"
    shutil.copytree(built.target, state)
    dev = copy_project(tmp_path / "dev")
    model = dev / "models" / "staging" / "stg_customers.sql"
    model.write_text(
        model.read_text().replace('lower("Email") as email,', 'lower("Email") as email_address,')
    )
    compiled = run_plain_dbt(["compile", "--profiles-dir", "."], cwd=dev)
    assert compiled.returncode == 0, compiled.stdout[-2000:]

    run = run_cli(
        ["impact", "--state", str(state), "--profiles-dir", ".", "--json", "--fail-on", "removed"],
        cwd=dev,
    )
    assert run.returncode == 1, run.stderr[-2000:]
    assert (
        "--fail-on removed: still read downstream: model.jaffle_oml.stg_customers.email"
        in run.stderr
    )
    doc = json.loads(run.stdout)
    assert doc["models"]["modified"] == [STG]
    (change,) = doc["changes"]
    assert (change["node"], change["column"], change["change"], change["new_name"]) == (
        STG,
        "email",
        "renamed",
        "email_address",
    )
    columns = {(c["relation"], c["column"]) for c in change["columns"]}
    marts = {c for c in columns if c[0].startswith("dw.marts.")}
    assert marts == {
        ("dw.marts.dim_customers", "customer_key"),
        ("dw.marts.fct_orders", "customer_key"),
    }
    assert columns - marts == {
        ("warehouse.core.core_customers", "customer_key"),
        ("warehouse.core.core_customers", "email"),
        ("warehouse.snapshots.customers_snapshot", "email_address"),
    }
    assert {t["name"] for t in change["tests"]} == {
        "not_null_core_customers_customer_key",
        "unique_core_customers_customer_key",
        "not_null_dim_customers_customer_key",
        "unique_dim_customers_customer_key",
    }
    assert change["rows"] == []
    assert change["exposures"] == []
    fct = next(c for c in change["columns"] if c["relation"] == "dw.marts.fct_orders")
    assert fct["path"] == [
        [STG, "email"],
        ["model.jaffle_oml.core_customers", "customer_key"],
        ["model.jaffle_oml.fct_orders", "customer_key"],
    ]

    markdown = run_cli(
        ["impact", "--state", str(state), "--profiles-dir", ".", "--format", "md"], cwd=dev
    )
    assert markdown.returncode == 0, markdown.stderr[-2000:]
    assert "| `dim_customers.customer_key` | column | DIRECT IDENTITY |" in markdown.stdout


def test_after_a_one_model_run_the_answers_are_the_whole_projects(
    built: CliRun, tmp_path: Path
) -> None:
    """`dbt-oml run -s stg_orders` leaves dbt's manifest with one model's compiled SQL; the docs
    generate it ran after compiled all of them, and impact/lineage use that."""
    project = copy_of_built(built, tmp_path / "project")
    ran = run_cli(["run", "-s", "stg_orders", "--profiles-dir", "."], cwd=project)
    assert ran.returncode == 0, ran.stderr[-2000:]
    nodes = json.loads((project / "target" / "manifest.json").read_text())["nodes"]
    compiled = [u for u, n in nodes.items() if n.get("compiled_code") and u.startswith("model.")]
    assert compiled == ["model.jaffle_oml.stg_orders"]  # dbt's own, as dbt left it
    ask = ["impact", "stg_orders.order_id", "--json", "--profiles-dir", "."]
    partial, full = run_cli(ask, cwd=project), run_cli(ask, cwd=built.project)
    assert partial.returncode == full.returncode == 0, partial.stderr[-2000:]
    assert json.loads(partial.stdout) == json.loads(full.stdout)
    assert json.loads(full.stdout)["changes"][0]["columns"]  # it is read downstream
