"""`dbt-oml build` with the OpenMetadata transport, against the loopback OM stand-in."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    RUN_STG_ORDERS,
    CliRun,
    copy_project,
    free_port,
    run_cli,
    run_in_process,
    run_plain_dbt,
)
from tests.support.fakes.openmetadata import FakeOpenMetadata, serve, transport_env

pytestmark = pytest.mark.integration
SOURCE_NS = "mssql://source-sql:1433"
#: What dbt metadata reads (issue 15): test cases and definitions, tags, owners.
_DBT_READ = ("dataQuality/testCases", "dataQuality/testDefinitions", "tags", "classifications")
DBT_READS = tuple(f"/api/v1/{p}/" for p in (*_DBT_READ, "users", "teams"))
#: for runs where the catalog is not the point (the run reads its relations' columns itself)
NO_DOCS = "--no-docs-generate"


def _seed_source_server(om: FakeOpenMetadata) -> None:
    """The CRM as OM's own SQL Server connector ingested it (a service dbt-oml does not own)."""
    om.seed_table(
        "source_sql.crm.sales.Customers",
        "Mssql",
        {
            "description": "Ingested.",
            "columns": [
                {
                    "name": n,
                    "dataType": "INT" if n == "CustomerId" else "VARCHAR",
                    "dataLength": 100,
                    "description": f"ingested {n}",
                }
                for n in (
                    "CustomerId",
                    "FirstName",
                    "LastName",
                    "Email",
                    "CountryCode",
                    "SignupDate",
                )
            ],
        },
    )
    om.settings["namespaceToServiceMapping"] = {SOURCE_NS: "source_sql"}


#: Builds whose only inputs are local files (a seed's CSV, a Parquet file read by path), with
#: the file each reads
FILE_ONLY = {"country_codes": "country_codes.csv", "stg_web_events": "web_events.parquet"}


@dataclass
class OmRuns:
    om: FakeOpenMetadata
    first: CliRun
    second: CliRun
    #: the second run's requests
    requests: list[Any]
    #: what OM held after the second run
    held: dict[str, Any]
    #: `emit` after a good build, without catalog.json
    degraded: CliRun
    #: `build -s customers_snapshot --no-docs-generate` after the emit (catalog.json gone)
    snapshot: CliRun
    snapshot_before: dict[str, Any]
    #: the two runs of `build -s <FILE_ONLY>` in a pod of its own, each with what the outbox
    #: held after it
    file_only: list[tuple[CliRun, list[str]]]


@pytest.fixture(scope="module")
def om_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OmRuns]:
    om = FakeOpenMetadata.with_bot()
    _seed_source_server(om)
    proj = copy_project(tmp_path_factory.mktemp("om") / "project")
    with serve(om) as url:
        env = {
            **transport_env(url, proj),
            # a scoped bot cannot read OM's namespaceToServiceMapping: dbt-oml's own mapping
            "OPENLINEAGE__TRANSPORT__SERVICES": f"{SOURCE_NS}=source_sql",
        }
        args = [
            "build",
            "--profiles-dir",
            ".",
            "--namespace",
            f"crm={SOURCE_NS}",
            "--duckdb-namespace",
            "duckdb://pod/{alias}",
        ]
        first = run_cli(args, cwd=proj, env=env)
        before = len(om.requests)
        second = run_cli(args, cwd=proj, env=env)
        requests = om.requests[before:]  # the second run's
        held = _snapshot(om)
        (proj / "target" / "catalog.json").unlink()  # a degraded run: declared columns only
        degraded = run_in_process(["emit", "--profiles-dir", ".", *args[3:]], cwd=proj, env=env)
        snapshot_before = _snapshot(om)
        snapshot = run_cli([*args, "-s", "customers_snapshot", NO_DOCS], cwd=proj, env=env)
        # a pod that only loads files (same namespaces, so the same services in OM): the two
        # file-only models in one build, twice; what is left out of OM's copy is their inputs,
        # not the catalog
        pod = copy_project(proj.parent / "files")
        outbox = pod / "target" / "dbt_oml" / "outbox"
        file_only = [
            (run_cli([*args, "-s", *FILE_ONLY, NO_DOCS], cwd=pod, env=env), _listing(outbox))
            for _ in range(2)
        ]
        yield OmRuns(
            om, first, second, requests, held, degraded, snapshot, snapshot_before, file_only
        )


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*")) if folder.exists() else []


def _snapshot(om: FakeOpenMetadata) -> dict[str, Any]:
    """What OM holds that a run could damage: columns, descriptions, column lineage per edge."""
    tables = {
        fqn: ([c["name"] for c in t.get("columns") or []], t.get("description"))
        for fqn, t in om.entities["table"].items()
    }
    names = {t["id"]: fqn for fqn, t in om.entities["table"].items()}
    edges = {
        (names[a], names[b]): len(d.get("columnsLineage") or []) for (a, b), d in om.edges.items()
    }
    return {"tables": tables, "edges": edges}


def test_both_runs_succeed_and_deliver_with_a_scoped_bot(om_runs: OmRuns) -> None:
    om, first = om_runs.om, om_runs.first
    for run in (first, om_runs.second):
        assert run.returncode == 0, run.stderr[-3000:]
        assert "NOT delivered" not in run.stderr, run.stderr[-3000:]
        assert "90 delivered" in run.stderr or "90 events" in run.stderr, run.stderr[-2000:]
    assert {r.status for r in om.requests if "system/settings" in r.path} == {403}
    assert list((first.project / "target" / "dbt_oml" / "outbox").glob("*")) == []


def test_a_degraded_emit_damages_nothing(om_runs: OmRuns) -> None:
    om, held, degraded = om_runs.om, om_runs.held, om_runs.degraded
    assert degraded.returncode in (0, 4), degraded.stderr[-3000:]
    now = _snapshot(om)
    for fqn, (columns, description) in held["tables"].items():
        assert now["tables"][fqn][0][: len(columns)] == columns, fqn
        assert now["tables"][fqn][1] == description, fqn
    for edge, count in held["edges"].items():
        assert now["edges"].get(edge, 0) >= count, edge
    assert "kept the column lineage OpenMetadata holds" in degraded.stderr


@pytest.mark.parametrize("selection", FILE_ONLY)
def test_runs_whose_only_inputs_are_files_keep_nothing(om_runs: OmRuns, selection: str) -> None:
    om = om_runs.om
    for run, outbox in om_runs.file_only:
        assert run.returncode == 0, run.stderr[-3000:]
        assert "NOT delivered" not in run.stderr, run.stderr[-3000:]
        assert outbox == [], run.stderr[-3000:]  # nothing kept, on the second run either
        left_out = [line for line in run.stderr.splitlines() if "resolves no local files" in line]
        assert len(left_out) == 1, run.stderr[-3000:]
        assert left_out[0].startswith("dbt-oml: INFO: "), left_out
        # one file input per model of the build, this model's among them
        assert f": {len(FILE_ONLY)} file input(s) left out" in left_out[0], left_out
        assert FILE_ONLY[selection] in left_out[0], left_out
    # what OM can resolve it got: the table dbt built, with dbt's metadata
    table = om.entity("table", f"duckdb_pod_warehouse.warehouse.staging.{selection}")
    assert table is not None
    assert [c["name"] for c in table["columns"]]
    if selection == "stg_web_events":
        assert table["description"] == "Web events read from a Parquet file."


def test_a_snapshot_without_a_catalog_shrinks_no_table(om_runs: OmRuns) -> None:
    run, before, now = om_runs.snapshot, om_runs.snapshot_before, _snapshot(om_runs.om)
    assert run.returncode in (0, 4), run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    for reference in (om_runs.held, before):  # after the full build, and just before this one
        for fqn, (columns, description) in reference["tables"].items():
            assert now["tables"][fqn][0][: len(columns)] == columns, fqn
            assert now["tables"][fqn][1] == description, fqn
    snapshot = "duckdb_pod_warehouse.warehouse.snapshots.customers_snapshot"
    assert len(now["tables"][snapshot][0]) == len(om_runs.held["tables"][snapshot][0]) > 0


def test_om_variables_complete_an_openlineage_configured_transport(tmp_path: Path) -> None:
    om = FakeOpenMetadata.with_bot()
    proj = copy_project(tmp_path / "p")
    with serve(om) as url:
        env = {
            "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
            "OM_HOST": url,
            "OM_JWT_TOKEN": "bot-jwt",
        }
        run = run_cli([*RUN_STG_ORDERS, NO_DOCS], cwd=proj, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "4 events, 4 delivered" in run.stderr, run.stderr[-3000:]
    assert om.count("POST", "/api/v1/openlineage/lineage/batch") == 1


def test_a_transport_typo_stops_before_dbt_runs(tmp_path: Path) -> None:
    proj = copy_project(tmp_path / "p")
    run = run_cli(RUN_STG_ORDERS, cwd=proj, env={"OPENLINEAGE__TRANSPORT__TYPE": "openmetadata"})
    assert run.returncode == 3, run.stderr[-3000:]
    assert "transport.url" in run.stderr
    assert not (proj / "target" / "run_results.json").exists()  # dbt never started
    assert "Traceback" not in run.stderr


def test_the_plugin_keeps_every_event_when_the_transport_is_misconfigured(tmp_path: Path) -> None:
    proj = copy_project(tmp_path / "p")
    env = {"DBT_OML_PLUGIN": "1", "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata"}
    run = run_plain_dbt(["run", "--profiles-dir", ".", "-s", "stg_orders"], cwd=proj, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    errors = [line for line in (run.stdout + run.stderr).splitlines() if "transport.url" in line]
    assert len(errors) == 1, errors
    assert errors[0].startswith("dbt-oml: ERROR: "), errors  # not DEBUG, not a WARNING
    assert "events are kept in" in errors[0]
    kept = [
        line
        for f in (proj / "target" / "dbt_oml" / "outbox").glob("*.jsonl")
        for line in f.read_text().splitlines()
    ]
    assert len(kept) == 4  # the invocation's and the model's START and COMPLETE


def test_owned_entities_are_created_with_put(om_runs: OmRuns) -> None:
    om = om_runs.om
    for service in ("duckdb_pod_warehouse", "duckdb_pod_dw"):
        assert om.entity("databaseService", service)["serviceType"] == "CustomDatabase"
    table = om.entity("table", "duckdb_pod_warehouse.warehouse.staging.stg_customers")
    assert [c["name"] for c in table["columns"]][:2] == ["customer_id", "first_name"]
    assert om.entity("table", "duckdb_pod_dw.dw.marts.RevenueByCountry") is not None
    owned = [
        r
        for r in om.requests
        if r.path == "/api/v1/tables"
        and r.method in ("PUT", "POST")
        and r.body["databaseSchema"].startswith("duckdb_pod")
    ]
    assert owned
    assert {r.method for r in owned} == {"PUT"}


def test_foreign_entities_are_never_overwritten(om_runs: OmRuns) -> None:
    om = om_runs.om
    customers = om.entity("table", "source_sql.crm.sales.Customers")
    assert customers["description"] == "Ingested."
    assert customers["columns"][0]["description"] == "ingested CustomerId"
    assert customers["updatedBy"] == "ingestion"
    assert om.entity("databaseService", "source_sql")["serviceType"] == "Mssql"
    # the source's other tables did not exist: created under the foreign service with POST only
    assert om.entity("table", "source_sql.crm.sales.order_lines_v2") is not None
    puts = [
        r
        for r in om.requests
        if r.method == "PUT" and (r.body or {}).get("databaseSchema", "").startswith("source_sql")
    ]
    assert puts == []


def _edge(om: FakeOpenMetadata, src: str, dst: str) -> dict:
    a, b = om.entity("table", src), om.entity("table", dst)
    return om.edges[(a["id"], b["id"])]


def test_the_chain_from_source_to_mart_resolves_with_column_lineage(om_runs: OmRuns) -> None:
    om = om_runs.om
    chain = [
        "source_sql.crm.sales.Customers",
        "duckdb_pod_warehouse.warehouse.staging.stg_customers",
        "duckdb_pod_warehouse.warehouse.core.core_customers",
        "duckdb_pod_dw.dw.marts.dim_customers",
    ]
    for src, dst in itertools.pairwise(chain):
        edge = _edge(om, src, dst)
        assert edge["columnsLineage"], (src, dst)
        assert edge["pipeline"] is not None
    first_hop = {
        c["toColumn"].rsplit(".", 1)[1]: c["fromColumns"]
        for c in _edge(om, *chain[:2])["columnsLineage"]
    }
    assert first_hop["customer_id"] == ["source_sql.crm.sales.Customers.CustomerId"]
    key = {
        c["toColumn"].rsplit(".", 1)[1]: c for c in _edge(om, chain[1], chain[2])["columnsLineage"]
    }["customer_key"]
    assert key["function"].upper().startswith("MD5(")


def test_second_run_is_cheap_and_changes_nothing(om_runs: OmRuns) -> None:
    requests = om_runs.requests
    # a new dbt run: one new test result per test (issue 15), and the dbt tab of the incremental
    # model, whose compiled SQL differs on its second run; nothing else written
    results = [r for r in requests if "/testCaseResults/" in r.path]
    incremental = [
        r
        for r in requests
        if r.path.endswith("/dataModel") and r.body["path"] == "models/core/core_orders.sql"
    ]
    second_writes = [
        r
        for r in requests
        if r.method in ("PUT", "POST", "PATCH")
        and "openlineage" not in r.path
        and r not in results + incremental
    ]
    assert second_writes == []
    assert {r.status for r in results} == {201}
    gets = [r for r in requests if r.method == "GET"]
    posts = [r for r in requests if r.path.startswith("/api/v1/openlineage/")]
    assert [r.path for r in posts] == ["/api/v1/openlineage/lineage/batch"]  # one, none one by one
    # dbt metadata reads: each test case once; each definition, tag and classification once; a
    # user and a team lookup per owner spelling of the project (6)
    dbt_reads = [r for r in requests if r.method == "GET" and r.path.startswith(DBT_READS)]
    cases = [r for r in dbt_reads if r.path.startswith("/api/v1/dataQuality/testCases/")]
    assert len(cases) == len(results)
    owners = [r for r in dbt_reads if r.path.startswith(("/api/v1/users/", "/api/v1/teams/"))]
    assert len(owners) <= 2 * 6, [r.path for r in owners]
    named = [r.path for r in dbt_reads if r not in cases and r not in owners]
    assert len(named) == len(set(named)), named
    # the rest: the settings, one listing per parent (never per entity), the guard's lineage
    # read for the one opaque model, the columns of the one table dbt cannot introspect
    others = [(r.path, sorted(r.query.items())) for r in gets if r not in dbt_reads]
    assert len(others) == len({repr(o) for o in others}), others
    assert len(others) <= 18, others
    writes = [r for r in requests if r.method != "GET" and r not in posts]
    print(  # noqa: T201
        f"second run: {len(requests)} requests: {len(gets)} GETs ({len(dbt_reads)} dbt metadata "
        f"reads), {len(posts)} OpenLineage posts, {len(writes)} other writes ({len(results)} new "
        f"test results, {len(incremental)} dbt tab of the incremental model)"
    )


def _om_env(url: str, token_file: Path, **extra: str) -> dict[str, str]:
    env = {
        "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
        "OPENLINEAGE__TRANSPORT__URL": url,
        "OPENLINEAGE__TRANSPORT__JWT_TOKEN_FILE": str(token_file),
    }
    env.update({f"OPENLINEAGE__TRANSPORT__{k.upper()}": v for k, v in extra.items()})
    return env


def test_om_down_for_the_whole_run_then_flush(tmp_path: Path) -> None:
    proj = copy_project(tmp_path / "project")
    (proj / "token").write_text("bot-jwt\n")
    dead = f"http://127.0.0.1:{free_port()}"
    args = ["build", *RUN_STG_ORDERS[1:], NO_DOCS]
    down = run_cli(args, cwd=proj, env=_om_env(dead, proj / "token", retry_budget="1"))
    assert down.returncode == 0, down.stderr[-3000:]  # dbt's code: lineage never changes it
    outbox = proj / "target" / "dbt_oml" / "outbox" / "openmetadata.jsonl"
    kept = outbox.read_text().splitlines()
    assert len(kept) == 10  # every event of the run
    assert "NOT delivered" in down.stderr
    om = FakeOpenMetadata.with_bot()
    with serve(om) as url:
        flushed = run_in_process(["flush"], cwd=proj, env=_om_env(url, proj / "token"))
    assert flushed.returncode == 0, flushed.stderr[-3000:]
    assert list((proj / "target" / "dbt_oml" / "outbox").glob("*.jsonl*")) == [], flushed.stderr
    src = om.entity("table", "duckdb_pod_crm.crm.sales.order_lines_v2")
    dst = om.entity("table", "duckdb_pod_warehouse.warehouse.staging.stg_orders")
    assert om.edges[(src["id"], dst["id"])]["columnsLineage"]


def test_guard_keeps_oms_column_lineage(tmp_path: Path) -> None:
    om = FakeOpenMetadata.with_bot()
    token = tmp_path / "token"
    token.write_text("bot-jwt\n")
    # stg_customers: without catalog.json it is opaque (its source declares one column in YAML,
    # so its columns count as known, and the SQL reads others). The runs skip docs generate: a
    # run reads the columns from the warehouse itself, and the emit below is the one without
    # them
    args = ["stg_customers" if a == "stg_orders" else a for a in [*RUN_STG_ORDERS, NO_DOCS]]
    with serve(om) as url:
        good = run_cli(args, cwd=copy_project(tmp_path / "a"), env=_om_env(url, token))
        assert good.returncode == 0, good.stderr[-3000:]
        src = om.entity("table", "duckdb_pod_crm.crm.sales.Customers")
        dst = om.entity("table", "duckdb_pod_warehouse.warehouse.staging.stg_customers")
        before = om.edges[(src["id"], dst["id"])]
        assert before["columnsLineage"]
        # seed 000's accident: a fresh pod emitting artifacts without catalog.json (a run reads
        # the warehouse itself, an emit cannot) and a mistyped token path, so neither the
        # catalog nor OpenMetadata can tell the source's columns
        pod = copy_project(tmp_path / "b")
        assert run_cli(args, cwd=pod).returncode == 0  # artifacts only (the file transport)
        assert not (pod / "target" / "catalog.json").exists()
        emit = ["emit", "--profiles-dir", ".", "--duckdb-namespace", "duckdb://pod/{alias}"]
        degraded = run_in_process(emit, cwd=pod, env=_om_env(url, tmp_path / "tokn"))
        assert degraded.returncode == 4, degraded.stderr[-3000:]
        assert "events NOT sent" in degraded.stderr
        assert om.edges[(src["id"], dst["id"])] == before
        # the refused events, flushed later with a good token: the same per-edge rule holds
        flushed = run_in_process(["flush"], cwd=tmp_path / "b", env=_om_env(url, token))
        assert flushed.returncode == 0, flushed.stderr[-3000:]
        assert om.edges[(src["id"], dst["id"])]["columnsLineage"] == before["columnsLineage"]
        # a run told not to compute column lineage keeps OM's too
        off = run_cli([*args, "--no-column-lineage"], cwd=tmp_path / "a", env=_om_env(url, token))
        assert off.returncode == 0, off.stderr[-3000:]
        assert om.edges[(src["id"], dst["id"])]["columnsLineage"] == before["columnsLineage"]
        assert "kept the column lineage OpenMetadata holds" in off.stderr


def test_dry_run_prints_the_bootstrap_plan(tmp_path: Path) -> None:
    om = FakeOpenMetadata.with_bot()
    proj = copy_project(tmp_path / "p")
    with serve(om) as url:
        (proj / "dbt-oml.yml").write_text(
            f"transport: {{type: openmetadata, url: '{url}', jwt_token: bot-jwt}}\n"
        )
        run = run_cli(["seed", "--profiles-dir", ".", "--dry-run", NO_DOCS], cwd=proj)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "OpenMetadata bootstrap plan (nothing written)" in run.stderr
    assert "PUT /api/v1/tables duckdb_" in run.stderr
    # the dbt metadata writes are in the plan too: the seed's dbt tab and its dbt tag
    assert "PUT /api/v1/tables/{id}/dataModel duckdb_" in run.stderr
    assert "PUT /api/v1/tags dbtTags.seed" in run.stderr
    assert [r for r in om.requests if r.method in ("PUT", "POST", "PATCH")] == []
