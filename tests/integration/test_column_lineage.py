"""Column lineage end to end: every mart column traced, across events, to its source columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRun, copy_of_built, read_events, run_cli

pytestmark = pytest.mark.integration

Field = tuple[str, str]  # (dataset name, column)
CUSTOMERS, ORDERS, PAYMENTS = (
    "crm.sales.Customers",
    "crm.sales.order_lines_v2",
    "crm.sales.payments",
)
SEED = "warehouse.staging.country_codes"

EXPECTED: dict[str, dict[str, set[Field]]] = {
    "dw.marts.dim_customers": {
        "customer_key": {(CUSTOMERS, "CustomerId"), (CUSTOMERS, "Email")},
        "customer_id": {(CUSTOMERS, "CustomerId")},
        "full_name": {(CUSTOMERS, "FirstName"), (CUSTOMERS, "LastName")},
        "country_name": {(SEED, "country_name")},
        "region": {(SEED, "region")},
        "order_count": set(),  # count(*)
        "lifetime_value": {
            (ORDERS, "amount_cents"),
            (ORDERS, "status"),
            (PAYMENTS, "amount_cents"),
        },
        "value_rank": {(ORDERS, "amount_cents")},
    },
    "dw.marts.fct_orders": {
        "order_id": {(ORDERS, "id")},
        "customer_key": {(CUSTOMERS, "CustomerId"), (CUSTOMERS, "Email")},
        "order_date": {(ORDERS, "ordered_at")},
        "order_amount": {(ORDERS, "amount_cents")},
        "paid_amount": {(PAYMENTS, "amount_cents")},  # through the ephemeral stg_payments
        "payment_state": {(ORDERS, "status"), (ORDERS, "amount_cents"), (PAYMENTS, "amount_cents")},
        "customer_order_seq": {(ORDERS, "customer_id"), (ORDERS, "ordered_at")},
    },
    "dw.marts.RevenueByCountry": {
        "CountryName": {(SEED, "country_name")},
        "Region": {(SEED, "region")},
        "Revenue": {(ORDERS, "amount_cents")},
        "Customers": {(ORDERS, "customer_id")},
    },
}


def _graph(events: list[dict[str, Any]]) -> dict[Field, set[Field]]:
    """(dataset, column) -> the (dataset, column)s it is computed from, over all COMPLETE events."""
    graph: dict[Field, set[Field]] = {}
    for event in events:
        if event["eventType"] != "COMPLETE":
            continue
        for out in event["outputs"]:
            facet = out["facets"].get("columnLineage")
            for column, spec in (facet or {}).get("fields", {}).items():
                graph[(out["name"], column)] = {
                    (f["name"], f["field"]) for f in spec["inputFields"]
                }
    return graph


def _leaves(graph: dict[Field, set[Field]], start: Field) -> set[Field]:
    out, stack, seen = set(), list(graph.get(start, ())), set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in graph:
            stack.extend(graph[current])
        else:
            out.add(current)
    return out


@pytest.mark.parametrize("mart", sorted(EXPECTED))
def test_every_mart_column_traces_to_its_sources(built: CliRun, mart: str) -> None:
    graph = _graph(built.events)
    columns = {c for (name, c) in graph if name == mart}
    assert columns == set(EXPECTED[mart])
    for column, sources in EXPECTED[mart].items():
        assert _leaves(graph, (mart, column)) == sources, column


def test_inputs_of_column_lineage_are_event_inputs(built: CliRun) -> None:
    for event in built.events:
        names = {(d["namespace"], d["name"]) for d in event["inputs"]}
        for out in event["outputs"]:
            facet = out["facets"].get("columnLineage")
            if facet is None:
                continue
            # the file transport keeps one copy; OpenMetadata's copy also has it in outputFacets
            assert out.get("outputFacets", {}).get("columnLineage", facet) == facet
            used = [f for spec in facet["fields"].values() for f in spec["inputFields"]] + facet[
                "dataset"
            ]
            assert {(f["namespace"], f["name"]) for f in used} <= names


def test_surrogate_key_is_masked_transformation(built: CliRun) -> None:
    core = next(
        e
        for e in built.events
        if e["eventType"] == "COMPLETE"
        and e["outputs"]
        and e["outputs"][0]["name"] == "warehouse.core.core_customers"
    )
    spec = core["outputs"][0]["facets"]["columnLineage"]["fields"]["customer_key"]
    assert spec["transformationType"] == "MASKED"
    assert "MD5(" in spec["transformationDescription"].upper()
    for field in spec["inputFields"]:
        assert field["transformations"] == [
            {"type": "DIRECT", "subtype": "TRANSFORMATION", "masking": True}
        ]


def test_unparseable_model_is_opaque_and_the_rest_keeps_lineage(built: CliRun) -> None:
    profile = [
        e
        for e in built.events
        if e["eventType"] == "COMPLETE"
        and e["outputs"]
        and e["outputs"][0]["name"].endswith("core_column_profile")
    ]
    assert len(profile) == 1
    assert "columnLineage" not in profile[0]["outputs"][0]["facets"]
    assert [d["name"] for d in profile[0]["inputs"]] == [
        "warehouse.staging.stg_orders"
    ]  # table level kept
    assert (
        "no column lineage for model.jaffle_oml.core_column_profile: SQL does not parse"
        in built.stderr
    )
    with_lineage = {
        o["name"]
        for e in built.events
        if e["eventType"] == "COMPLETE"
        for o in e["outputs"]
        if "columnLineage" in o["facets"]
    }
    assert len(with_lineage) == 14  # the 13 other models and the snapshot


MATCHES = "warehouse.api.matches"  # the `api` source: JSON files landed by the on-run-start hook


def test_nested_json_from_a_file_source(built: CliRun) -> None:
    """stg_match_events reads a source with external_location (no catalog entry): a struct path
    three fields deep and an UNNEST of a list of structs, every edge to the source's dataset."""
    (event,) = [
        e
        for e in built.events
        if e["eventType"] == "COMPLETE"
        and e["outputs"]
        and e["outputs"][0]["name"] == "warehouse.staging.stg_match_events"
    ]
    source, files = event["inputs"]
    assert source["name"] == MATCHES  # the dataset the column edges name
    assert (files["namespace"], files["name"]) == ("file", f"{built.project}/data/matches/*/*.json")
    fields = event["outputs"][0]["facets"]["columnLineage"]["fields"]
    got = {
        column: [
            (f["name"], f["field"], [(t["type"], t["subtype"], t.get("description")) for t in ts])
            for f in spec["inputFields"]
            for ts in [f["transformations"]]
        ]
        for column, spec in fields.items()
    }
    extracted = ("DIRECT", "TRANSFORMATION")
    assert got == {
        "fixture_id": [(MATCHES, "_meta", [(*extracted, "field _meta.params.fixture")])],
        "home_team": [(MATCHES, "response", [(*extracted, "field response.teams.home.name")])],
        "season": [(MATCHES, "season", [("DIRECT", "IDENTITY", None)])],  # a hive partition
        "minute": [(MATCHES, "events", [(*extracted, "field events.minute")])],
        "event_kind": [(MATCHES, "events", [(*extracted, "field events.kind")])],
    }
    schema = event["outputs"][0]["facets"]["schema"]["fields"]
    assert sorted(f["name"] for f in schema) == sorted(got)  # the catalog's columns, all traced
    assert "column lineage for 14 model(s); 1 opaque" in built.stderr


def _facets(run: CliRun) -> dict[str, Any]:
    """columnLineage facet per output dataset, the project's directory taken out."""
    text = json.dumps(run.events).replace(str(run.project), "<project>")
    return {
        o["name"]: o["facets"]["columnLineage"]
        for e in json.loads(text)
        if e["eventType"] == "COMPLETE"
        for o in e["outputs"]
        if "columnLineage" in o["facets"]
    }


def test_without_catalog_columns_learned_from_the_sql_give_the_same_lineage(
    built: CliRun, tmp_path: Path
) -> None:
    """No catalog.json: relations with unknown columns hold what only they can hold; every
    model that gets column lineage this way gets exactly what the catalog gives it.

    The shared build's artifacts emitted again without catalog.json (a later `emit` in a fresh
    pod: no warehouse, the catalog lost). A build with --no-docs-generate reads the warehouse's
    columns itself, the full result: test_no_docs_generate_gives_the_events_of_build
    (test_build.py).
    """
    project = copy_of_built(built, tmp_path / "project")
    (project / "target" / "catalog.json").unlink()
    emit = run_cli(["emit", "--profiles-dir", "."], cwd=project)  # no warehouse, no catalog
    assert emit.returncode == 0, emit.stderr[-3000:]
    assert "column lineage for 12 model(s); 3 opaque" in emit.stderr
    with_catalog, without = _facets(built), _facets(emit)
    assert len(without) == 12
    for name, facet in without.items():
        assert facet == with_catalog[name], name


def test_lineage_command_text_and_json(built: CliRun) -> None:
    text = run_cli(
        ["lineage", "dim_customers", "customer_key", "--profiles-dir", "."], cwd=built.project
    )
    assert text.returncode == 0, text.stderr
    assert "<- crm.sales.Customers.CustomerId" in text.stdout
    assert "masked" in text.stdout
    as_json = run_cli(["lineage", "fct_orders", "--json", "--profiles-dir", "."], cwd=built.project)
    doc = json.loads(as_json.stdout)
    assert set(doc["columns"]) == set(EXPECTED["dw.marts.fct_orders"])
    missing = run_cli(["lineage", "core_column_profile", "--profiles-dir", "."], cwd=built.project)
    assert missing.returncode == 3
    assert "SQL does not parse" in missing.stderr
    # each command takes the other's form too: lineage MODEL.COLUMN, impact MODEL COLUMN
    dotted = run_cli(
        ["lineage", "dim_customers.customer_key", "--profiles-dir", "."], cwd=built.project
    )
    assert dotted.returncode == 0, dotted.stderr
    assert dotted.stdout == text.stdout
    spaced, joined = (
        run_cli(["impact", *form, "--profiles-dir", ".", "--json"], cwd=built.project)
        for form in (["stg_orders", "order_id"], ["stg_orders.order_id"])
    )
    assert spaced.returncode == 0, spaced.stderr
    assert json.loads(spaced.stdout) == json.loads(joined.stdout)


def test_guard_refuses_to_send_no_column_lineage_at_all(built: CliRun, tmp_path: Path) -> None:
    # Without catalog.json stg_customers is opaque: its source declares one column in YAML (so
    # its columns count as known) and the SQL reads others. (stg_orders, whose source declares
    # none, would get lineage: one relation with unknown columns holds every name it reads.)
    # (A run reads the warehouse's columns itself, so the degraded case is a later `emit` of its
    # artifacts in a fresh pod: no warehouse, and catalog.json lost.)
    # In a copy of the build (dbt parses partially), without docs generate: the catalog.json
    # there is the build's, lost below all the same.
    project = copy_of_built(built, tmp_path / "project")
    args = ["run", "--profiles-dir", ".", "-s", "stg_customers", "--no-docs-generate"]
    ran = run_cli(args, cwd=project)
    assert ran.returncode == 0, ran.stderr[-2000:]
    (project / "target" / "catalog.json").unlink()
    events_file = project / "target" / "openlineage" / "events.jsonl"
    events_file.unlink()
    # the guard is for transports that may reach OpenMetadata (which would replace what it holds)
    http = {
        "OPENLINEAGE__TRANSPORT__TYPE": "http",
        "OPENLINEAGE__TRANSPORT__URL": "http://127.0.0.1:9",
    }
    refused = run_cli(["emit", "--profiles-dir", "."], cwd=project, env=http)
    assert refused.returncode == 4, refused.stderr[-2000:]
    assert "events NOT sent" in refused.stderr
    assert "--allow-empty-column-lineage" in refused.stderr
    (outbox,) = (project / "target" / "dbt_oml" / "outbox").glob("*.jsonl")
    kept = [e["eventType"] for e in read_events(outbox)]
    assert sorted(kept) == ["COMPLETE", "COMPLETE", "START", "START"]  # all kept, none sent
    allowed = run_cli(
        ["--dry-run", "--allow-empty-column-lineage", "emit", "--profiles-dir", "."],
        cwd=project,
        env=http,
    )
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    # a file replaces nothing: written whole, no refusal, exit 0
    written = run_cli(["emit", "--profiles-dir", "."], cwd=project)
    assert written.returncode == 0, written.stderr[-2000:]
    assert "events NOT sent" not in written.stderr
    assert sorted(e["eventType"] for e in read_events(events_file)) == sorted(kept)


def test_no_column_lineage_to_a_file_keeps_dbts_exit_code(built: CliRun, tmp_path: Path) -> None:
    """`dbt-oml run -s core_column_profile` (an opaque `select *` reader: no column lineage) with
    the file transport: dbt's exit code, and every START has its end in the file."""
    project = copy_of_built(built, tmp_path / "project")
    run = run_cli(["run", "--profiles-dir", ".", "-s", "core_column_profile"], cwd=project)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "events NOT sent" not in run.stderr
    assert not list((project / "target" / "dbt_oml" / "outbox").glob("*.jsonl"))
    ends: dict[str, list[str]] = {}
    for event in run.events:
        ends.setdefault(event["run"]["runId"], []).append(event["eventType"])
    assert len(ends) == 2  # the invocation and the model
    assert all(kinds == ["START", "COMPLETE"] for kinds in ends.values()), ends
