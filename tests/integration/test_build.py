"""`dbt-oml build` end to end on the bundled project (local target: three DuckDB catalogs)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    CliRun,
    copy_of_built,
    copy_of_run,
    copy_project,
    read_events,
    run_cli,
    run_in_process,
    run_plain_dbt,
)

pytestmark = pytest.mark.integration
Z_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PARENT = "dbt-run-jaffle_oml"
#: `build -s stg_orders`: the parent run, the model's run, its tests' aggregated run and a run
#: for each of its two tests (tests run in parallel threads, so only the brackets are ordered)
SELECTED_RUNS = 5


def selected(events: list[dict[str, Any]]) -> bool:
    kinds = [e["eventType"] for e in events]
    brackets = [e["job"]["name"] for e in (events[0], events[-1])] == [PARENT, PARENT]
    return brackets and Counter(kinds) == {"START": SELECTED_RUNS, "COMPLETE": SELECTED_RUNS}


def _results(run: CliRun) -> dict[str, str]:
    doc = json.loads((run.target / "run_results.json").read_text())
    return {r["unique_id"]: r["status"] for r in doc["results"]}


def _node_runs(run: CliRun) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for event in run.events:
        if event["job"]["name"] != PARENT:
            runs.setdefault(event["job"]["name"], []).append(event)
    return runs


def _job(name: str) -> str:
    """dbt-ol's job name of a model of the bundled project, by model name."""
    layer = {"stg": "warehouse.staging", "cor": "warehouse.core"}.get(name[:3], "dw.marts")
    return f"{layer}.jaffle_oml.{name}.build.run"


def test_dbt_succeeds_and_its_code_passes_through(built: CliRun) -> None:
    assert built.returncode == 0, built.stderr[-3000:]
    assert "Completed successfully" in built.stdout
    assert re.search(r"dbt-oml: \d+ events, \d+ delivered to .*events\.jsonl", built.stderr)


def test_parent_run(built: CliRun) -> None:
    parent = [e for e in built.events if e["job"]["name"] == PARENT]
    assert [e["eventType"] for e in parent] == ["START", "COMPLETE"]
    assert built.events[0] == parent[0]
    assert built.events[-1] == parent[1]
    run_id = parent[0]["run"]["runId"]
    for event in built.events[1:-1]:
        assert event["run"]["facets"]["parent"]["run"]["runId"] == run_id


def test_start_and_terminal_for_every_executed_model_seed_snapshot(built: CliRun) -> None:
    runs = _node_runs(built)
    executed = [
        u for u, s in _results(built).items() if u.split(".")[0] in {"model", "seed", "snapshot"}
    ]
    assert len(executed) == 16  # 14 models (the ephemeral one is not executed) + seed + snapshot
    kinds = Counter(e["job"]["facets"]["jobType"]["jobType"] for r in runs.values() for e in r)
    assert kinds["SEED"] == 2
    assert kinds["SNAPSHOT"] == 2
    assert kinds["MODEL"] == 2 * 14
    for events in runs.values():
        assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
        assert events[0]["run"]["runId"] == events[1]["run"]["runId"]
        assert events[0]["eventTime"] <= events[1]["eventTime"]


def test_starts_are_sent_while_dbt_runs(built: CliRun) -> None:
    """Node STARTs are written before any terminal event: those wait for catalog.json."""
    kinds = [(e["eventType"], e["job"]["facets"]["jobType"]["jobType"]) for e in built.events[1:-1]]
    first_terminal = next(i for i, (k, _) in enumerate(kinds) if k != "START")
    node_starts = [i for i, (k, t) in enumerate(kinds) if k == "START" and t != "TEST"]
    assert max(node_starts) < first_terminal


def test_no_dataset_for_the_ephemeral_model(built: CliRun) -> None:
    names = {d["name"] for e in built.events for d in e["inputs"] + e["outputs"]}
    assert not any("stg_payments" in n for n in names)
    core_orders = _node_runs(built)[_job("core_orders")][1]
    assert {d["name"] for d in core_orders["inputs"]} == {
        "warehouse.staging.stg_orders",
        "crm.sales.payments",
    }


def test_three_catalogs_three_namespaces(built: CliRun) -> None:
    by_catalog: dict[str, set[str]] = {}
    for event in built.events:
        for d in event["inputs"] + event["outputs"]:
            if d["namespace"] != "file":
                by_catalog.setdefault(d["name"].split(".")[0], set()).add(d["namespace"])
    assert set(by_catalog) == {"warehouse", "crm", "dw"}
    assert all(len(ns) == 1 for ns in by_catalog.values())
    namespaces = {c: ns.pop() for c, ns in by_catalog.items()}
    assert len(set(namespaces.values())) == 3
    for catalog, namespace in namespaces.items():
        assert namespace == f"duckdb://{catalog}.duckdb"  # as profiles.yml writes the path


def test_original_case_and_source_identifier(built: CliRun) -> None:
    runs = _node_runs(built)
    stg = runs[_job("stg_customers")][1]
    assert [d["name"] for d in stg["inputs"]] == ["crm.sales.Customers"]
    stg_orders = runs[_job("stg_orders")][1]
    assert [d["name"] for d in stg_orders["inputs"]] == ["crm.sales.order_lines_v2"]
    mart = runs["dw.marts.jaffle_oml.revenue_by_country.build.run"][1]["outputs"][0]
    assert mart["name"] == "dw.marts.RevenueByCountry"
    assert [f["name"] for f in mart["facets"]["schema"]["fields"]] == [
        "CountryName",
        "Region",
        "Revenue",
        "Customers",
    ]
    source_cols = [f["name"] for f in stg["inputs"][0]["facets"]["schema"]["fields"]]
    assert source_cols[:2] == ["CustomerId", "FirstName"]


def test_schema_facets_carry_catalog_types(built: CliRun) -> None:
    out = _node_runs(built)[_job("core_orders")][1]["outputs"][0]
    fields = {f["name"]: f.get("type") for f in out["facets"]["schema"]["fields"]}
    assert fields["order_amount"] == "DECIMAL(12,2)"
    assert fields["order_date"] == "DATE"
    assert fields["payment_count"] == "BIGINT"


def test_file_source_is_its_own_dataset(built: CliRun) -> None:
    web = _node_runs(built)[_job("stg_web_events")][1]
    assert [(d["namespace"], d["name"]) for d in web["inputs"]] == [
        ("file", f"{built.project}/data/web_events.parquet")
    ]


def test_times_are_z(built: CliRun) -> None:
    assert all(Z_TIME.match(e["eventTime"]) for e in built.events)


def test_data_quality_assertions_from_tests(built: CliRun) -> None:
    tests = [e for e in built.events if e["job"]["name"].endswith(".build.test")]
    assertions = [
        a
        for e in tests
        if e["eventType"] != "START"
        for d in e["inputs"]
        for a in d["inputFacets"]["dataQualityAssertions"]["assertions"]
    ]
    assert len(assertions) == 19  # every data test of the project
    assert all(a["success"] for a in assertions)
    by_name = {a["name"]: a for a in assertions}
    assert (
        by_name["accepted_values_core_orders_payment_state__paid__open__refund"]["assertion"]
        == "accepted_values"
    )
    assert by_name["source_not_null_crm_customers_CustomerId"]["column"] == "CustomerId"


def test_emit_twice_gives_identical_run_ids(built: CliRun) -> None:
    first = run_cli(["--dry-run", "emit", "--profiles-dir", "."], cwd=built.project)
    # in this process, not a child of the fork server: another hash seed, so an order that
    # came from iterating a set of strings would differ here
    second = run_in_process(["--dry-run", "emit", "--profiles-dir", "."], cwd=built.project)
    assert first.returncode == 0, first.stderr
    a, b = json.loads(first.stdout)["events"], json.loads(second.stdout)["events"]
    assert [e["run"]["runId"] for e in a] == [e["run"]["runId"] for e in b]
    # the same runs `dbt-oml build` sent live: emit reuses the observed start times
    assert {e["run"]["runId"] for e in a} == {e["run"]["runId"] for e in built.events}


def test_the_fail_path(failed: CliRun) -> None:
    assert failed.returncode == 1, failed.stderr[-2000:]
    runs = _node_runs(failed)
    audit = runs[_job("core_order_audit")]
    assert [e["eventType"] for e in audit] == ["START", "FAIL"]
    assert "this_column_does_not_exist" in audit[1]["run"]["facets"]["errorMessage"]["message"]
    # dbt fires NodeStart before deciding to skip: the live START is ended with ABORT, never COMPLETE
    assert [e["eventType"] for e in runs[_job("core_open_balances")]] == ["START", "ABORT"]
    parent = [e for e in failed.events if e["job"]["name"] == PARENT]
    assert parent[-1]["eventType"] == "FAIL"
    assert "core_order_audit" in parent[-1]["run"]["facets"]["errorMessage"]["message"]


@pytest.mark.parametrize("tool", ["dbt", "dbt-oml"])
def test_retry_after_a_failed_build_reruns_what_failed(
    failed: CliRun, tmp_path: Path, tool: str
) -> None:
    """target/ holds the failed build's run_results.json, not docs generate's: `dbt retry` and
    `dbt-oml retry` re-run the failed model and its skipped child, and nothing else."""
    project = copy_of_run(failed, tmp_path / "project")
    before = json.loads((project / "target" / "run_results.json").read_text())["metadata"]
    run = (run_plain_dbt if tool == "dbt" else run_cli)(
        ["retry", "--profiles-dir", "."], cwd=project
    )
    assert run.returncode == 1, run.stderr[-3000:]  # the model still fails (the build's vars)
    assert "Traceback" not in run.stdout + run.stderr
    doc = json.loads((project / "target" / "run_results.json").read_text())
    assert doc["metadata"]["invocation_id"] != before["invocation_id"]  # the retry's own
    statuses = {r["unique_id"].split(".")[-1]: r["status"] for r in doc["results"]}
    assert statuses["core_order_audit"] == "error"
    assert "stg_orders" not in statuses  # it passed in the build: not re-run
    if tool == "dbt-oml":
        audit = [e for e in run.events if e["job"]["name"] == _job("core_order_audit")]
        assert [e["eventType"] for e in audit] == ["START", "FAIL"]


def test_dbt_ols_extended_job_name(built: CliRun, tmp_path: Path) -> None:
    """OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME=true names the invocation's job as dbt-ol does:
    dbt-run-<project>-<profile>-<selection>; `emit` of the same run names it the same."""
    project = copy_of_built(built, tmp_path / "project")
    env = {"OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME": "true"}
    args = ["run", "-s", "stg_orders", "tag:nothing+", "--profiles-dir", ".", "--no-docs-generate"]
    run = run_cli(args, cwd=project, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    name = "dbt-run-jaffle_oml-jaffle_oml-stg_orders-tag_nothing_"
    assert run.events[0]["job"]["name"] == name
    assert run.events[-1]["job"]["name"] == name
    emitted = run_in_process(["--dry-run", "emit", "--profiles-dir", "."], cwd=project, env=env)
    assert json.loads(emitted.stdout)["events"][0]["job"]["name"] == name


@pytest.mark.parametrize("command", [["ls"], ["compile", "-s", "stg_orders"]])
def test_commands_that_run_no_nodes_are_plain_dbt(
    built: CliRun, tmp_path: Path, command: list[str]
) -> None:
    """As dbt-ol: no events and no lines of dbt-oml's for ls, compile, debug, ..."""
    project = copy_of_built(built, tmp_path / "project")
    run = run_cli([*command, "--profiles-dir", "."], cwd=project)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.events == []
    assert "dbt-oml:" not in run.stdout + run.stderr
    assert not (project / "target" / "dbt_oml" / "outbox").exists()


def test_dbt_usage_error_passes_through(project: Path) -> None:
    run = run_cli(["build", "--profiles-dir", ".", "--no-such-dbt-flag"], cwd=project)
    assert run.returncode == 2
    assert "no-such-dbt-flag" in run.stderr
    assert run.events == []


def test_a_run_per_test_at_its_real_times(built: CliRun) -> None:
    doc = json.loads((built.target / "run_results.json").read_text())
    tests = [r for r in doc["results"] if r["unique_id"].startswith("test.")]
    assert len(tests) == 19
    for result in tests:
        runs = [e for e in built.events if e["job"]["name"] == result["unique_id"]]
        assert [e["eventType"] for e in runs] == ["START", "COMPLETE"], result["unique_id"]
        started = min(t["started_at"] for t in result["timing"])
        completed = max(t["completed_at"] for t in result["timing"])
        assert runs[0]["eventTime"] == started[:23] + "Z"
        assert runs[1]["eventTime"] == completed[:23] + "Z"
        (execution,) = runs[1]["run"]["facets"]["test"]["tests"]
        assert execution["status"] == "pass"
        assert runs[1]["inputs"], result["unique_id"]


def test_job_names_are_dbt_ols_for_every_run(built: CliRun) -> None:
    """dbt-ol's default job names per run kind (docs/reference/dbt-ol.md section 7)."""
    nodes = json.loads((built.target / "manifest.json").read_text())["nodes"]
    suffix = {"model": "build.run", "snapshot": "build.snapshot", "seed": "build.seed"}
    expected = {PARENT}
    for uid, kind in ((u, u.split(".")[0]) for u in _results(built)):
        node = nodes[uid]
        if kind in suffix:
            expected.add(
                f"{node['database']}.{node['schema']}.{node['package_name']}.{node['name']}"
                f".{suffix[kind]}"
            )
        elif kind == "test":  # its own run (and its dataset's aggregated run, below)
            expected.add(uid)
    tested = {n for n in (e["job"]["name"] for e in built.events) if n.endswith(".build.test")}
    assert {e["job"]["name"] for e in built.events} == expected | tested
    assert "warehouse.core.jaffle_oml.core_orders.build.test" in tested
    assert "crm.sales.source.jaffle_oml.crm.customers.build.test" in tested


@pytest.fixture(scope="module")
def stg_orders_runs(
    built: CliRun, tmp_path_factory: pytest.TempPathFactory
) -> tuple[CliRun, CliRun]:
    """In a copy of the build: `run -s stg_orders`, then `build --dry-run -s stg_orders`.

    Both with --job-naming unique_id and --no-docs-generate: job names and what goes to stdout
    are the point here, not the catalog. The events file is removed before each, so the dry
    run's check that it writes none sees only its own.
    """
    proj = copy_of_built(built, tmp_path_factory.mktemp("stg_orders") / "project")
    flags = ["--profiles-dir", ".", "-s", "stg_orders", "--no-docs-generate"]
    flags += ["--job-naming", "unique_id"]
    ran = run_cli(["run", *flags], cwd=proj)
    (proj / "target" / "openlineage" / "events.jsonl").unlink(missing_ok=True)
    dry = run_cli(["build", *flags, "--dry-run"], cwd=proj)
    return ran, dry


def test_unique_id_job_naming_is_command_independent(
    stg_orders_runs: tuple[CliRun, CliRun],
) -> None:
    ran, built_dry = stg_orders_runs
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert built_dry.returncode == 0, built_dry.stderr[-2000:]
    run_names = {e["job"]["name"] for e in ran.events if e["eventType"] == "START"}
    build_events = json.loads(built_dry.stdout)["events"]
    build_names = {e["job"]["name"] for e in build_events if e["eventType"] == "START"}
    assert run_names == {PARENT, "model.jaffle_oml.stg_orders"}
    assert run_names < build_names  # build adds the tests' runs, the model keeps its name


def test_dry_run_build_prints_only_json_on_stdout(stg_orders_runs: tuple[CliRun, CliRun]) -> None:
    _, run = stg_orders_runs
    assert run.returncode == 0, run.stderr[-2000:]
    events = json.loads(run.stdout)["events"]
    assert selected(events)
    assert "Completed successfully" in run.stderr  # dbt's own output moved to stderr
    assert read_events(run.project / "target" / "openlineage" / "events.jsonl") == []


def test_unreachable_backend_loses_nothing_and_keeps_dbt_code(project: Path) -> None:
    env = {
        "OPENLINEAGE__TRANSPORT__TYPE": "http",
        "OPENLINEAGE__TRANSPORT__URL": "http://127.0.0.1:9",
        "OPENLINEAGE__TRANSPORT__RETRY": '{"total": 0}',
    }
    args = [
        "build",
        "--profiles-dir",
        ".",
        "-s",
        "stg_orders",
        "--no-docs-generate",
        "--allow-empty-column-lineage",
    ]
    run = run_cli(args, cwd=project, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    outbox = list((project / "target" / "dbt_oml" / "outbox").glob("*.jsonl"))
    assert len(outbox) == 1
    kept = read_events(outbox[0])
    assert selected(kept)
    assert f"dbt-oml replay {outbox[0]}" in run.stderr
    strict = run_cli([*args, "--fail-on-emit-error"], cwd=project, env=env)
    assert strict.returncode == 4
    replay = run_cli(["replay", str(outbox[0])], cwd=project)
    assert replay.returncode == 0, replay.stderr
    assert [e["run"]["runId"] for e in replay.events] == [e["run"]["runId"] for e in kept]
    assert not outbox[0].exists()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """`dbt-oml seed` in a fresh copy with a DuckDB namespace from dbt-oml.yml, another from
    --namespace, and --target-path elsewhere: one run, its two subjects asserted apart below.
    Without `dbt docs generate`: the catalog is the subject of neither."""
    proj = copy_project(tmp_path_factory.mktemp("seeded") / "project", parsed=False)
    (proj / "dbt-oml.yml").write_text("duckdb_namespace: duckdb://pod/{alias}\n")
    args = ["seed", "--profiles-dir", ".", "--namespace", "dw=mssql://target-sql:1433"]
    return run_cli([*args, "--target-path", "elsewhere", "--no-docs-generate"], cwd=proj)


def test_namespace_overrides_from_flags_and_config(seeded: CliRun) -> None:
    assert seeded.returncode == 0, seeded.stderr[-2000:]
    assert "warehouse -> duckdb://pod/warehouse" in seeded.stderr
    assert "dw -> mssql://target-sql:1433" in seeded.stderr
    events = read_events(seeded.project / "elsewhere" / "openlineage" / "events.jsonl")
    seed = [e for e in events if e["job"]["name"].endswith("country_codes.seed")]
    assert seed[-1]["outputs"][0]["namespace"] == "duckdb://pod/warehouse"


def test_dbt_project_dir_env_is_honoured(built: CliRun, tmp_path: Path) -> None:
    proj = copy_of_built(built, tmp_path / "elsewhere")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    env = {"DBT_PROJECT_DIR": str(proj), "DBT_PROFILES_DIR": str(proj)}
    # the catalog is not the point: no `dbt docs generate` after the seed
    run = run_cli(["seed", "--no-docs-generate"], cwd=elsewhere, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    events = read_events(proj / "target" / "openlineage" / "events.jsonl")
    assert [e["eventType"] for e in events] == ["START", "START", "COMPLETE", "COMPLETE"]


def test_parse_error_fails_the_parent_run_with_the_message(built: CliRun, tmp_path: Path) -> None:
    # in a copy of the build: its run_results.json is there, and is not this invocation's
    project = copy_of_built(built, tmp_path / "project")
    (project / "models" / "staging" / "broken.sql").write_text(
        "select * from {{ ref('no_such_model') }}\n"
    )
    run = run_cli(["build", "--profiles-dir", "."], cwd=project)
    assert run.returncode == 2, run.stderr[-2000:]
    assert [(e["job"]["name"], e["eventType"]) for e in run.events] == [
        (PARENT, "START"),
        (PARENT, "FAIL"),
    ]
    message = run.events[-1]["run"]["facets"]["errorMessage"]["message"]
    assert "no_such_model" in message


def test_target_path_flag_is_honoured(seeded: CliRun) -> None:
    assert seeded.returncode == 0, seeded.stderr[-2000:]
    elsewhere = seeded.project / "elsewhere"
    events = read_events(elsewhere / "openlineage" / "events.jsonl")
    assert [e["eventType"] for e in events] == ["START", "START", "COMPLETE", "COMPLETE"]
    assert json.loads((elsewhere / "run_results.json").read_text())["args"]["which"] == "seed"
    assert not (elsewhere / "dbt_oml" / "build").exists()  # no docs generate: nothing kept aside
    assert (elsewhere / "dbt_oml" / "node_starts.json").exists()
    # nothing under target/: not the events, nor the kept artifacts, nor dbt-oml's state
    assert not (seeded.project / "target").exists()


def test_no_docs_generate_gives_the_events_of_build(built: CliRun, tmp_path: Path) -> None:
    """Without `dbt docs generate`, the warehouse's columns are read through dbt's adapter at the
    end of the build: the same schema facets and column lineage as with catalog.json."""
    from tests.support.comparison import comparable

    proj = copy_project(tmp_path / "project")
    quick = run_cli(["build", "--profiles-dir", ".", "--no-docs-generate"], cwd=proj)
    assert quick.returncode == built.returncode == 0, quick.stderr[-2000:]
    assert not (proj / "target" / "catalog.json").exists()
    # without docs generate the wrapper reads the warehouse's columns: the full result
    assert "column lineage for 14 model(s); 1 opaque" in quick.stderr
    ours, theirs = comparable(quick), comparable(built)
    assert sorted(ours) == sorted(theirs)
    assert [key for key in ours if ours[key] != theirs[key]] == []
    lineage = [o for e in quick.events for o in e["outputs"] if "columnLineage" in o["facets"]]
    assert len(lineage) >= 8
