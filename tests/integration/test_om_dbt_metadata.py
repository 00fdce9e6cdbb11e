"""Issue 15 end to end: the bundled project's dbt layer in OpenMetadata as OM's dbt ingestion
shows it, with the scoped bot, on OM 1.12 and 2.0.

Per version: `dbt-oml build`, then `dbt-oml emit` of the same run (writes nothing), then the
failing build (`--vars '{fail_model: true}'`). For the failing build the copy of the project gets
three tests that exist only with that var: one on the model that fails (dbt skips it), one that
fails and one that warns.

Every build here is a real one with `dbt docs generate`; only dbt's parse of the (same) project
is shared: a build whose --vars a build before it already parsed starts from that build's
partial_parse.msgpack, so dbt parses only what differs instead of the whole project. The emits
run no dbt: they run in this process.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.om.metadata.quality import STATUS
from tests.conftest import CliRun, copy_project, run_cli, run_in_process
from tests.support.fakes.openmetadata import FakeOpenMetadata, serve, transport_env
from tests.support.parse_cache import SAVED, give_parse

pytestmark = pytest.mark.integration
BUILD = ["build", "--profiles-dir", "."]
FAILING_ONLY = {
    "om_audit_rows.sql": "{{ config(enabled=var('fail_model')) }}\n"
    "select * from {{ ref('core_order_audit') }} where open_amount < 0\n",
    "om_unpaid_orders.sql": "{{ config(enabled=var('fail_model')) }}\n"
    "select order_id from {{ ref('core_orders') }} where payment_state <> 'paid'\n",
    "om_refunds.sql": "{{ config(enabled=var('fail_model'), severity='warn') }}\n"
    "select order_id from {{ ref('core_orders') }} where payment_state = 'refund'\n",
}


@pytest.fixture(scope="module")
def parse_caches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dbt's parse caches of this module's builds, one per --vars (filled by _build)."""
    return tmp_path_factory.mktemp("parse-caches")


def _build(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None, caches: Path
) -> CliRun:
    """`dbt-oml <args>`, starting from the parse cache of an earlier build with the same --vars
    (dbt would discard the project's own: it parses the whole project when the vars change)."""
    kind = args[args.index("--vars") + 1] if "--vars" in args else ""
    saved = caches / f"{re.sub(r'[^a-z]+', '-', kind).strip('-') or 'no-vars'}.msgpack"
    cache = cwd / SAVED
    if saved.exists():
        give_parse(saved, cwd)
    run = run_cli(args, cwd=cwd, env=env)
    if not saved.exists() and cache.exists():
        shutil.copyfile(cache, saved)
    return run


@dataclass
class Runs:
    om: FakeOpenMetadata
    project: Path
    first: CliRun
    first_requests: int
    again: CliRun
    again_requests: list[Any]
    failing: CliRun


def _om(version: str) -> FakeOpenMetadata:
    om = FakeOpenMetadata.with_bot(version=version)  # IngestionBotRole + LineageBotRole
    om.add_person("jane.doe", "jane.doe@example.com")
    om.add_team("data-platform", email="data-platform@example.com")
    om.add_team("analytics", email="analytics@example.com")
    return om


@pytest.fixture(scope="module", params=["1.12", "2.0"])
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, parse_caches: Path
) -> Iterator[Runs]:
    om = _om(request.param)
    project = copy_project(tmp_path_factory.mktemp(f"om-dbt-{request.param}") / "project")
    for name, sql in FAILING_ONLY.items():
        (project / "tests" / name).write_text(sql)
    with serve(om) as url:
        env = transport_env(url, project)
        first = _build(BUILD, cwd=project, env=env, caches=parse_caches)
        first_requests = len(om.requests)
        again = run_in_process(["emit", "--profiles-dir", "."], cwd=project, env=env)
        again_requests = om.requests[first_requests:]
        failing = _build(
            [*BUILD, "--vars", "{fail_model: true}"], cwd=project, env=env, caches=parse_caches
        )
        yield Runs(om, project, first, first_requests, again, again_requests, failing)


def _manifest(project: Path) -> dict[str, Any]:
    return json.loads((project / "target" / "manifest.json").read_text())


def _run_results(project: Path) -> dict[str, dict[str, Any]]:
    """The last build's results (the failing build's), by unique id."""
    doc = json.loads((project / "target" / "run_results.json").read_text())
    return {r["unique_id"]: r for r in doc["results"]}


def _breakdown(requests: list[Any]) -> dict[str, int]:
    """A run's requests to OM: reads, OpenLineage posts, and every other write."""
    lineage = [r for r in requests if r.method == "POST" and "/openlineage/" in r.path]
    reads = [r for r in requests if r.method == "GET"]
    return {
        "requests": len(requests),
        "GET": len(reads),
        "POST lineage": len(lineage),
        "other writes": len(requests) - len(reads) - len(lineage),
    }


def _tables(om: FakeOpenMetadata) -> dict[str, dict[str, Any]]:
    """Owned tables by name (the bundled project's names are unique across its databases)."""
    return {t["name"]: t for fqn, t in om.entities["table"].items() if fqn.startswith("duckdb_")}


def test_the_runs_deliver_and_say_what_they_wrote(runs: Runs) -> None:
    assert runs.first.returncode == 0, runs.first.stderr[-3000:]
    assert runs.again.returncode == 0, runs.again.stderr[-3000:]
    assert runs.failing.returncode == 1, runs.failing.stderr[-3000:]
    for run in (runs.first, runs.again, runs.failing):
        assert "NOT delivered" not in run.stderr, run.stderr[-3000:]
        assert "refused" not in run.stderr, run.stderr[-3000:]
    assert "test cases 19, results 19" in runs.first.stderr, runs.first.stderr[-2000:]
    summary = next(line for line in runs.first.stderr.splitlines() if "dbt metadata in" in line)
    print(f"first build: {runs.first_requests} requests; {summary}")  # noqa: T201
    assert "'platform@example.com' is no OpenMetadata user or Group team" in runs.first.stderr


def test_every_owned_table_has_description_tags_owner_and_the_dbt_tab(runs: Runs) -> None:
    tables = _tables(runs.om)
    nodes = [
        n
        for n in _manifest(runs.project)["nodes"].values()
        if n["resource_type"] in ("model", "seed", "snapshot")
        and n["config"].get("materialized") != "ephemeral"
    ]
    assert len(nodes) >= 14
    owners = {
        "jane.doe@example.com",
        "data-platform@example.com",
        "analytics",
        "analytics@example.com",
    }
    for node in nodes:
        table = tables[node["alias"]]
        model = table.get("dataModel") or {}
        assert model.get("modelType") == "DBT", node["unique_id"]
        assert model["path"] == node["original_file_path"]
        assert model["resourceType"] == node["resource_type"]
        if node["resource_type"] != "seed":
            assert model["rawSql"] == node["raw_code"]
            assert model["sql"], node["unique_id"]
        if node["description"]:
            assert table["description"] == node["description"], node["unique_id"]
        labels = {t["tagFQN"] for t in table.get("tags") or []}
        assert {f"dbtTags.{t}" for t in node["tags"]} <= labels, node["unique_id"]
        owner = node["config"]["meta"].get("owner")
        known = {owner} & owners if isinstance(owner, str) else set(owner or []) & owners
        assert bool(table.get("owners")) == bool(known), node["unique_id"]
    _check_columns(tables, nodes)
    email = next(c for c in tables["stg_customers"]["columns"] if c["name"] == "email")
    assert {t["tagFQN"] for t in email["tags"]} == {"dbtTags.pii", "PII.Sensitive"}
    assert "Tier.Tier1" in {t["tagFQN"] for t in tables["dim_customers"]["tags"]}
    assert tables["core_customers"]["dataModel"]["upstream"]  # the tables it reads, by FQN


def _check_columns(tables: dict[str, dict[str, Any]], nodes: list[dict[str, Any]]) -> None:
    """Every documented column has dbt's description in OM; every tagged one its dbt tags."""
    described = tagged = 0
    for node in nodes:
        held = {c["name"].lower(): c for c in tables[node["alias"]]["columns"]}
        for name, column in node["columns"].items():
            where = f"{node['unique_id']}.{name}"
            if not column.get("description") and not column.get("tags"):
                continue
            assert name.lower() in held, where
            om_column = held[name.lower()]
            if column.get("description"):
                assert om_column.get("description") == column["description"], where
                described += 1
            if column.get("tags"):
                labels = {t["tagFQN"] for t in om_column.get("tags") or []}
                assert {f"dbtTags.{t}" for t in column["tags"]} <= labels, where
                tagged += 1
    assert described >= 8  # the bundled project documents 8 columns of its owned tables
    assert tagged >= 1


def test_every_dbt_test_is_a_test_case_with_one_result_per_run(runs: Runs) -> None:
    om = runs.om
    results = [
        n
        for n in json.loads((runs.project / "target" / "run_results.json").read_text())["results"]
        if n["unique_id"].startswith("test.")
    ]
    assert len(results) == 22  # the failing build's: the 19 tests and the 3 failing-only ones
    cases = {c["name"]: fqn for fqn, c in om.entities["testCase"].items()}
    assert len(cases) == 22
    for name, fqn in cases.items():
        if name.startswith("om_"):
            continue
        # the first build and the failing build; the emit of the first added none
        assert len(om.results_of(fqn)) == 2, name
    assert {d["testPlatforms"][0] for d in om.entities["testDefinition"].values()} >= {"dbt"}


def test_the_failing_build_gives_failed_and_aborted_results(runs: Runs) -> None:
    om = runs.om
    cases = {c["name"]: fqn for fqn, c in om.entities["testCase"].items()}
    nodes = _manifest(runs.project)["nodes"]
    tests = {i: r for i, r in _run_results(runs.project).items() if i.startswith("test.")}
    assert len(tests) == len(cases) == 22
    statuses = set()
    for unique_id, result in tests.items():  # every test: its newest result is dbt's of this run
        name = nodes[unique_id]["name"]
        newest = om.results_of(cases[name])[-1]
        expected = STATUS.get(result["status"], "Aborted")
        assert newest["testCaseStatus"] == expected, (name, result["status"], newest)
        if result.get("failures") is not None and result["status"] != "skipped":
            assert newest.get("failedRows") == result["failures"], name
        statuses.add(expected)
    assert statuses == {"Success", "Failed", "Aborted"}
    (skipped,) = om.results_of(cases["om_audit_rows"])
    (failed,) = om.results_of(cases["om_unpaid_orders"])
    (warned,) = om.results_of(cases["om_refunds"])
    assert skipped["testCaseStatus"] == "Aborted"
    assert (failed["testCaseStatus"], failed["failedRows"]) == ("Failed", 2)
    assert "Got 2 results" in failed["result"]
    assert (warned["testCaseStatus"], warned["failedRows"]) == ("Aborted", 1)
    # shown in the table's data-quality tab: its basic suite counts the failure
    suite = next(
        s for fqn, s in om.entities["testSuite"].items() if fqn.endswith("core_orders.testSuite")
    )
    cases_in = [c for c in om.entities["testCase"].values() if c["testSuite"]["id"] == suite["id"]]
    assert "om_unpaid_orders" in {c["name"] for c in cases_in}


def test_a_second_identical_emit_writes_nothing(
    runs: Runs, record_property: pytest.RecordProperty
) -> None:
    writes = [
        (r.method, r.path, r.status)
        for r in runs.again_requests
        if r.method != "GET" and "/openlineage/" not in r.path
    ]
    assert writes == []  # reads and OpenLineage posts only
    assert "descriptions 0, tags 0, owners 0, data models 0, test cases 0, results 0" in (
        runs.again.stderr
    )
    first = _breakdown(runs.om.requests[: runs.first_requests])
    again = _breakdown(runs.again_requests)
    assert again["GET"] + again["POST lineage"] == again["requests"] > 0
    assert first["other writes"] > 0  # the first build wrote the dbt metadata
    record_property("om_version", runs.om.version)
    record_property("first_build_requests", first)
    record_property("identical_emit_requests", again)
    print(  # noqa: T201 - the numbers the README gives
        f"\nOM {runs.om.version}: first build {first}; identical emit {again}"
    )


def test_foreign_and_oms_own_entities_stay_as_they_were(runs: Runs) -> None:
    om = runs.om
    for name in ("PII", "Tier"):
        assert om.entity("classification", name)["provider"] == "system"  # type: ignore[index]
    audit = {(who, outcome) for who, _m, _fqn, outcome in om.audit}
    assert ("ingestion-bot", "denied") not in audit


# -- item 8: the relay gives OM the same state -------------------------------------------------


def _state(om: FakeOpenMetadata) -> dict[str, Any]:
    """What dbt metadata left in OM, without ids and times (they differ between two OMs)."""
    tables = {
        fqn: {
            "description": t.get("description"),
            "columns": [(c["name"], c.get("description"), _labels(c)) for c in t["columns"]],
            "tags": _labels(t),
            "owners": sorted(o["name"] for o in t.get("owners") or []),
            "dataModel": {k: v for k, v in (t.get("dataModel") or {}).items() if k != "owners"},
        }
        for fqn, t in om.entities["table"].items()
    }
    cases = {
        fqn: (c["testDefinition"]["name"], c["entityLink"], c.get("parameterValues"))
        for fqn, c in om.entities["testCase"].items()
    }
    results = sorted(
        (r["testCaseFQN"], r["timestamp"], r["testCaseStatus"], r.get("result"))
        for r in om.test_case_results
    )
    return {"tables": tables, "cases": cases, "results": results}


def _labels(entity: dict[str, Any]) -> list[str]:
    return sorted(t["tagFQN"] for t in entity.get("tags") or [])


@pytest.mark.nats
def test_a_run_relayed_from_jetstream_gives_om_the_same_state(
    tmp_path: Path, parse_caches: Path
) -> None:
    pytest.importorskip("nats", reason="needs dbt-oml[nats]")
    from tests.support.nats_server import NatsServer

    server = NatsServer(tmp_path / "nats").start()
    direct, relayed = _om("2.0"), _om("2.0")
    project = copy_project(tmp_path / "project")
    (project / "token").write_text("bot-jwt\n")
    try:
        with serve(relayed) as relay_url, serve(direct) as direct_url:
            stream = {"servers": [server.url], "subject": "ol.issue15", "stream": "ISSUE15"}
            relay = {"openmetadata": {"url": relay_url, "jwt_token_file": str(project / "token")}}
            doc = {"transport": {"type": "jetstream", **stream}, "relay": relay}
            (project / "dbt-oml.yml").write_text(json.dumps(doc))
            built = _build(BUILD, cwd=project, caches=parse_caches)
            assert built.returncode == 0, built.stderr[-3000:]
            relay_run = run_cli(["relay", "--once"], cwd=project)
            assert relay_run.returncode == 0, relay_run.stderr[-3000:]
            (project / "dbt-oml.yml").unlink()
            env = {
                "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
                "OPENLINEAGE__TRANSPORT__URL": direct_url,
                "OPENLINEAGE__TRANSPORT__JWT_TOKEN_FILE": str(project / "token"),
            }
            emitted = run_in_process(["emit", "--profiles-dir", "."], cwd=project, env=env)
            assert emitted.returncode == 0, emitted.stderr[-3000:]
    finally:
        server.stop()
    state = _state(direct)
    assert len(state["cases"]) == 19
    assert len(state["results"]) == 19
    assert _state(relayed) == state
