"""`dbt-oml impact --state` on the bundled project: one staging column renamed in a copy, compiled
with plain `dbt compile`, compared with the build's target (issue 14's done-when)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import CliRun, copy_project, run_cli, run_plain_dbt

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
