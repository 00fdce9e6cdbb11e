"""Plugin mode: a plain `dbt build` (no wrapper) emits what `dbt-oml build` emits.

Each plain run is a real `dbt` process that discovers dbt-oml as a dbt-core plugin. The events
are compared with the wrapper's after removing only what differs between any two runs: run ids,
times, dbt's invocation id and the project's directory.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    RUN_STG_ORDERS,
    CliRun,
    copy_project,
    free_port,
    run_cli,
    run_plain_dbt,
)
from tests.support.comparison import comparable

pytestmark = pytest.mark.integration
PARENT = "dbt-run-jaffle_oml"
AIRFLOW_RUN = "0195e0a2-7c1e-7000-8000-000000000001"


@pytest.fixture(scope="module")
def plugin_built(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    proj = copy_project(tmp_path_factory.mktemp("plugin") / "project")
    return run_plain_dbt(["build", "--profiles-dir", "."], cwd=proj, env={"DBT_OML_PLUGIN": "1"})


def test_plain_dbt_build_emits_what_the_wrapper_emits(built: CliRun, plugin_built: CliRun) -> None:
    assert plugin_built.returncode == 0, plugin_built.stderr[-2000:]
    assert built.returncode == 0
    plugin, wrapper = comparable(plugin_built), comparable(built)
    assert sorted(plugin) == sorted(wrapper)
    different = [key for key in wrapper if plugin[key] != wrapper[key]]
    assert different == []
    assert "dbt-oml: 90 events, 90 delivered" in plugin_built.stderr
    # where they go, said once as the command starts, as `dbt-oml build` says it
    (line,) = [
        x for x in plugin_built.stderr.splitlines() if x.startswith("dbt-oml: INFO: events ->")
    ]
    assert line.endswith("(the default: no transport is configured)"), line


def test_plugin_events_are_consistent_runs(plugin_built: CliRun) -> None:
    events = plugin_built.events
    parent = [e for e in events if e["job"]["name"] == PARENT]
    assert [e["eventType"] for e in parent] == ["START", "COMPLETE"]
    parent_id = parent[0]["run"]["runId"]
    by_run: dict[str, list[str]] = {}
    for event in events:
        by_run.setdefault(event["run"]["runId"], []).append(event["eventType"])
        if event["job"]["name"] != PARENT:
            assert event["run"]["facets"]["parent"]["run"]["runId"] == parent_id
    assert all(states[0] == "START" and len(states) == 2 for states in by_run.values())
    # the schema of a mart comes from the warehouse (no docs generate ran): real types
    mart = next(
        o
        for e in events
        if e["eventType"] == "COMPLETE"
        for o in e["outputs"]
        if o["name"] == "dw.marts.RevenueByCountry"
    )
    types = {f["name"]: f.get("type") for f in mart["facets"]["schema"]["fields"]}
    assert all(types.values()), types
    assert not (plugin_built.target / "catalog.json").exists()


def test_plugin_sends_each_nodes_end_as_the_node_finishes(plugin_built: CliRun) -> None:
    """A node's COMPLETE is queued at dbt's NodeFinished, before any child starts."""
    manifest = json.loads((plugin_built.target / "manifest.json").read_text())
    events = plugin_built.events
    job_of = {}
    for uid, node in manifest["nodes"].items():
        if node["resource_type"] in {"model", "seed", "snapshot"}:
            step = {"model": "run"}.get(node["resource_type"], node["resource_type"])
            name = uid.split(".", 1)[1]
            job_of[uid] = f"{node['database']}.{node['schema']}.{name}.build.{step}"
    index = {(e["eventType"], e["job"]["name"]): i for i, e in enumerate(events)}
    checked = 0
    for uid, node in manifest["nodes"].items():
        for parent in node.get("depends_on", {}).get("nodes", []):
            ran = ("START", job_of.get(uid)) in index and ("COMPLETE", job_of.get(parent)) in index
            if ran:  # ephemeral models have no run of their own
                assert index[("COMPLETE", job_of[parent])] < index[("START", job_of[uid])]
                checked += 1
    assert checked > 10
    last_node_end = max(
        i for (t, j), i in index.items() if t == "COMPLETE" and j in job_of.values()
    )
    assert last_node_end < index[("COMPLETE", PARENT)]


def test_plugin_by_dbt_var_on_a_failing_build_matches_the_wrapper(
    failed: CliRun, tmp_path: Path
) -> None:
    proj = copy_project(tmp_path / "project")
    run = run_plain_dbt(
        ["build", "--profiles-dir", ".", "--vars", "{fail_model: true, dbt_oml_plugin: true}"],
        cwd=proj,
    )
    assert run.returncode == failed.returncode == 1
    assert comparable(run) == comparable(failed)
    end = next(e for e in run.events if e["job"]["name"] == PARENT and e["eventType"] == "FAIL")
    message = end["run"]["facets"]["errorMessage"]["message"]
    assert message == "1 node(s) failed: model.jaffle_oml.core_order_audit (error)"


def test_plugin_switched_on_in_dbt_project_yml(project: Path) -> None:
    config = project / "dbt_project.yml"
    config.write_text(config.read_text().replace("vars:\n", "vars:\n  dbt_oml_plugin: true\n", 1))
    run = run_plain_dbt(["run", "--profiles-dir", ".", "-s", "stg_orders"], cwd=project)
    assert run.returncode == 0, run.stderr[-2000:]
    assert [e["eventType"] for e in run.events] == ["START", "START", "COMPLETE", "COMPLETE"]
    # the environment variable wins over the var
    (run.target / "openlineage" / "events.jsonl").unlink()
    off = run_plain_dbt(
        ["run", "--profiles-dir", ".", "-s", "stg_orders"], cwd=project, env={"DBT_OML_PLUGIN": "0"}
    )
    assert off.returncode == 0
    assert off.events == []


def test_plugin_off_emits_nothing(project: Path) -> None:
    run = run_plain_dbt(["run", "--profiles-dir", ".", "-s", "stg_orders"], cwd=project)
    assert run.returncode == 0
    assert run.events == []
    assert not (run.target / "dbt_oml").exists()
    assert "dbt-oml" not in run.stderr + run.stdout


def test_plugin_stays_inert_under_the_wrapper(project: Path) -> None:
    run = run_cli(RUN_STG_ORDERS, cwd=project, env={"DBT_OML_PLUGIN": "1"})
    assert run.returncode == 0
    counts = Counter((e["eventType"], e["job"]["name"], e["run"]["runId"]) for e in run.events)
    assert len(run.events) == 4  # the parent run and stg_orders' run, each once
    assert max(counts.values()) == 1
    assert "dbt-oml plugin" not in run.stderr


def test_plugin_with_bad_config_leaves_dbt_alone(project: Path) -> None:
    run = run_plain_dbt(
        ["run", "--profiles-dir", ".", "-s", "stg_orders"],
        cwd=project,
        env={"DBT_OML_PLUGIN": "1", "DBT_OML_JOB_NAMING": "by-magic"},
    )
    assert run.returncode == 0
    lines = [line for line in run.stderr.splitlines() if line.startswith("dbt-oml plugin:")]
    assert len(lines) == 1
    assert "DBT_OML_JOB_NAMING" in lines[0]
    assert "dbt runs without lineage" in lines[0]
    assert "Traceback" not in run.stderr
    assert run.events == []


def test_plugin_with_unreachable_backend_keeps_every_event(project: Path) -> None:
    run = run_plain_dbt(
        ["run", "--profiles-dir", ".", "-s", "stg_orders"],
        cwd=project,
        env={
            "DBT_OML_PLUGIN": "1",
            "OPENLINEAGE_URL": f"http://127.0.0.1:{free_port()}",
            "OPENLINEAGE_PARENT_ID": f"airflow/daily.dbt/{AIRFLOW_RUN}",
        },
    )
    assert run.returncode == 0
    outbox = list((run.target / "dbt_oml" / "outbox").glob("*.jsonl"))
    assert len(outbox) == 1
    kept = [json.loads(line) for line in outbox[0].read_text().splitlines()]
    assert [e["eventType"] for e in kept] == ["START", "START", "COMPLETE", "COMPLETE"]
    assert "NOT delivered" in run.stderr

    # the orchestrator's run is the invocation's parent and every run's root
    def ref(facet: dict[str, Any]) -> tuple[str, str, str]:
        return (facet["job"]["namespace"], facet["job"]["name"], facet["run"]["runId"])

    airflow = ("airflow", "daily.dbt", AIRFLOW_RUN)
    assert ref(kept[0]["run"]["facets"]["parent"]) == airflow
    node = next(e for e in kept if e["job"]["name"] != PARENT)
    assert ref(node["run"]["facets"]["parent"]["root"]) == airflow


@pytest.fixture(scope="module")
def tested(plugin_built: CliRun, tmp_path_factory: pytest.TempPathFactory) -> tuple[CliRun, CliRun]:
    """`dbt-oml test` and plugin-mode `dbt test` on the same built warehouse (no catalog.json).

    The warehouse is a copy of plugin_built's (a plain `dbt build`), without what the plugin
    wrote there (its events and state): as after the same build with the plugin off.
    """
    assert plugin_built.returncode == 0, plugin_built.stdout[-2000:]
    proj = tmp_path_factory.mktemp("tested") / "project"

    def plugin_output(directory: str, names: list[str]) -> set[str]:
        return (
            {"openlineage", "dbt_oml"} & set(names)
            if Path(directory) == plugin_built.target
            else set()
        )

    shutil.copytree(plugin_built.project, proj, ignore=plugin_output)
    assert not (proj / "target" / "catalog.json").exists()
    assert not (proj / "target" / "openlineage").exists()
    assert not (proj / "target" / "dbt_oml").exists()
    wrapper = run_cli(["test", "--profiles-dir", "."], cwd=proj)
    (proj / "target" / "openlineage" / "events.jsonl").unlink()
    plugin = run_plain_dbt(["test", "--profiles-dir", "."], cwd=proj, env={"DBT_OML_PLUGIN": "1"})
    return wrapper, plugin


def test_dbt_oml_test_emits_what_plugin_mode_dbt_test_emits(tested: tuple[CliRun, CliRun]) -> None:
    wrapper, plugin = tested
    assert wrapper.returncode == plugin.returncode == 0, wrapper.stderr[-2000:]
    assert len(wrapper.events) == len(plugin.events) > 50
    ours, theirs = comparable(wrapper), comparable(plugin)
    assert sorted(ours) == sorted(theirs)
    assert [key for key in ours if ours[key] != theirs[key]] == []
    # the schema facets carry the warehouse's types in both paths
    typed = [
        f.get("type")
        for e in wrapper.events
        for d in e["inputs"]
        for f in d["facets"].get("schema", {}).get("fields", [])
    ]
    assert typed
    assert all(typed)
