"""Hostile SQL and hostile artifacts on the bundled project: the run's events always go out.

A model nested 2,000 parentheses deep, a stale corrupt catalog.json, a catalog whose `nodes` is
a list, run_results with unreadable timings and unknown statuses: each costs at most what it
touches (one model's column lineage, the catalog's types), with a warning, never the events.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRun, copy_of_built, run_cli, run_plain_dbt

pytestmark = pytest.mark.integration
PARENT = "dbt-run-jaffle_oml"
HOSTILE = "model.jaffle_oml.stg_hostile"
#: DuckDB runs it; sqlglot's parser recurses once per parenthesis. The quoted path makes the
#: file-reference scan parse it too.
HOSTILE_SQL = "select {{ '(' * 2000 }}1{{ ')' * 2000 }} as x, 'data/never_read.csv' as path_like\n"
CATALOG_V1 = "https://schemas.getdbt.com/dbt/catalog/v1.json"
BAD_CATALOGS = {
    "corrupt": "{not json",
    "nodes-list": json.dumps(
        {"metadata": {"dbt_schema_version": CATALOG_V1}, "nodes": [{"unique_id": "x"}]}
    ),
}


def _states(run: CliRun) -> Counter[str]:
    return Counter(e["eventType"] for e in run.events)


def _ends(run: CliRun) -> dict[str, dict[str, Any]]:
    return {e["job"]["name"]: e for e in run.events if e["eventType"] in {"COMPLETE", "FAIL"}}


@pytest.fixture
def built_project(built: CliRun, tmp_path: Path) -> Path:
    return copy_of_built(built, tmp_path / "project")


@pytest.mark.parametrize("mode", ["wrapper", "plugin"])
def test_hostile_sql_costs_only_its_model(built_project: Path, mode: str) -> None:
    project = built_project
    (project / "models" / "staging" / "stg_hostile.sql").write_text(HOSTILE_SQL)
    args = ["run", "--profiles-dir", ".", "-s", "stg_hostile", "stg_orders"]
    if mode == "wrapper":
        # no `dbt docs generate`: the warehouse's columns are read at the end, as the plugin does
        run = run_cli([*args, "--no-docs-generate"], cwd=project)
    else:
        run = run_plain_dbt(args, cwd=project, env={"DBT_OML_PLUGIN": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert _states(run) == {"START": 3, "COMPLETE": 3}
    ends = _ends(run)
    assert ends[PARENT]["eventType"] == "COMPLETE"
    hostile = ends["warehouse.staging.jaffle_oml.stg_hostile"]["outputs"][0]
    orders = ends["warehouse.staging.jaffle_oml.stg_orders"]["outputs"][0]
    assert "columnLineage" not in hostile["facets"]
    assert "columnLineage" in orders["facets"]
    assert f"{HOSTILE}: SQL nested too deeply to analyse (RecursionError)" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.fixture(scope="module")
def ran(built: CliRun, tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """`dbt-oml run` of two models without docs generate: the artifacts the tests damage.

    In a copy of the build without its catalog.json: the only catalogs the tests see are theirs.
    """
    proj = copy_of_built(built, tmp_path_factory.mktemp("hostile") / "project")
    (proj / "target" / "catalog.json").unlink()
    args = [
        "--no-docs-generate",
        "--allow-empty-column-lineage",
        "run",
        "--profiles-dir",
        ".",
        "-s",
        "stg_orders",
        "stg_customers",
    ]
    return run_cli(args, cwd=proj)


@pytest.fixture
def built_copy(ran: CliRun, tmp_path: Path) -> Path:
    assert ran.returncode == 0, ran.stderr[-3000:]
    proj = tmp_path / "project"
    shutil.copytree(ran.project, proj)
    (proj / "target" / "openlineage" / "events.jsonl").unlink()
    return proj


@pytest.mark.parametrize("damage", sorted(BAD_CATALOGS))
def test_a_stale_unreadable_catalog_is_a_warning(built_copy: Path, damage: str) -> None:
    catalog = built_copy / "target" / "catalog.json"
    catalog.write_text(BAD_CATALOGS[damage])
    args = [
        "--no-docs-generate",
        "--allow-empty-column-lineage",
        "run",
        "--profiles-dir",
        ".",
        "-s",
        "stg_orders",
    ]
    run = run_cli(args, cwd=built_copy)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _states(run) == {"START": 2, "COMPLETE": 2}
    assert f"WARNING: {catalog}: " in run.stderr
    assert "schema facets use the declared columns" in run.stderr
    assert "Traceback" not in run.stderr
    emit = run_cli(
        ["--dry-run", "--allow-empty-column-lineage", "emit", "--profiles-dir", "."], cwd=built_copy
    )
    assert emit.returncode == 0, emit.stderr[-3000:]
    assert len(json.loads(emit.stdout)["events"]) == len(run.events)
    assert f"WARNING: {catalog}: " in emit.stderr


def _output(run: CliRun, job: str) -> dict[str, Any]:
    return _ends(run)[f"warehouse.staging.jaffle_oml.{job}"]["outputs"][0]


def test_a_stale_valid_catalog_is_not_used(ran: CliRun, built_copy: Path) -> None:
    """A readable catalog.json from an earlier build, missing a column this run has and with
    other types: with --no-docs-generate it is not this run's, so the columns are the
    warehouse's as read at the end of the command (README, Failures), not the stale file's."""
    orders = "model.jaffle_oml.stg_orders"
    fresh = _output(ran, "stg_orders")["facets"]["schema"]["fields"]
    assert len(fresh) >= 2
    stale_columns = {
        f["name"]: {"name": f["name"], "index": i, "type": "STALE_TYPE", "comment": None}
        for i, f in enumerate(fresh[:-1], 1)
    }
    manifest = json.loads((built_copy / "target" / "manifest.json").read_text())
    node = manifest["nodes"][orders]
    stale = {
        "metadata": {
            "dbt_schema_version": CATALOG_V1,
            "dbt_version": manifest["metadata"]["dbt_version"],
            "generated_at": "2020-01-01T00:00:00.000000Z",
            "invocation_id": "00000000-0000-0000-0000-000000000000",
            "env": {},
        },
        "nodes": {
            orders: {
                "metadata": {
                    "type": "VIEW",
                    "schema": node["schema"],
                    "name": node["alias"],
                    "database": node["database"],
                    "comment": None,
                    "owner": None,
                },
                "columns": stale_columns,
                "stats": {},
                "unique_id": orders,
            }
        },
        "sources": {},
        "errors": None,
    }
    catalog = built_copy / "target" / "catalog.json"
    catalog.write_text(json.dumps(stale))
    args = ["--no-docs-generate", "--allow-empty-column-lineage", "run", "--profiles-dir", "."]
    run = run_cli([*args, "-s", "stg_orders"], cwd=built_copy)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _states(run) == {"START": 2, "COMPLETE": 2}
    output = _output(run, "stg_orders")["facets"]
    assert output["schema"]["fields"] == fresh  # the new column too, the warehouse's types
    assert "STALE_TYPE" not in json.dumps(run.events)
    assert output["dbt_oml_schema"]["complete"] is True
    assert sorted(output["columnLineage"]["fields"]) == sorted(f["name"] for f in fresh)
    assert str(catalog) not in run.stderr  # a valid file: no warning, just not this run's
    assert "Traceback" not in run.stderr


def test_bad_timings_and_statuses_keep_their_events(ran: CliRun, built_copy: Path) -> None:
    emit = ["--dry-run", "--allow-empty-column-lineage", "emit", "--profiles-dir", "."]
    path = built_copy / "target" / "run_results.json"
    doc = json.loads(path.read_text())
    first, second = (r for r in doc["results"] if r["unique_id"].startswith("model."))
    first["timing"] = [{"name": "execute", "started_at": "yesterday"}]
    second["status"] = "mystery"
    path.write_text(json.dumps(doc))
    damaged = run_cli(emit, cwd=built_copy)
    assert damaged.returncode == 0, damaged.stderr[-3000:]
    after = json.loads(damaged.stdout)["events"]
    # every run the command sent live is still there, with a START and an end each
    jobs = Counter(e["job"]["name"] for e in ran.events)
    assert len(jobs) == 3
    assert Counter(e["job"]["name"] for e in after) == jobs
    assert (
        f"WARNING: run_results.json: {first['unique_id']}: unreadable started_at='yesterday'"
        in (damaged.stderr)
    )
    assert (
        f"WARNING: run_results.json: {second['unique_id']}: unknown status 'mystery'"
        in damaged.stderr
    )
    assert Counter(e["eventType"] for e in after) == {"START": 3, "COMPLETE": 2, "FAIL": 1}
