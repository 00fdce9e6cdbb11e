"""`dbt-oml lineage` for people: trees up and down, depth, direct-only, file leaves, errors with
close names, and the JSON document's shape (on the mini artifacts, analysed for real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbt_oml.artifacts import read_artifacts
from dbt_oml.errors import SelectionError
from dbt_oml.lineage.batch import analyse_models, known_columns
from dbt_oml.lineage.graph import build_graph
from dbt_oml.lineage.view import (
    Hop,
    LineageView,
    Query,
    TreeOptions,
    answer,
    as_text,
)
from tests.conftest import MINI

CUSTOMERS = "source.jaffle_oml.crm.customers"
STG_CUSTOMERS = "model.jaffle_oml.stg_customers"
CORE_CUSTOMERS = "model.jaffle_oml.core_customers"
SEED = "seed.jaffle_oml.country_codes"


@pytest.fixture(scope="module")
def view() -> LineageView:
    artifacts = read_artifacts(MINI)
    nodes = artifacts.manifest.nodes
    wanted = {u for u, n in nodes.items() if n.resource_type in {"model", "snapshot"}}
    result = analyse_models(artifacts, wanted=wanted, dialect="duckdb")
    graph = build_graph(
        artifacts.manifest,
        result.models,
        opaque=result.opaque,
        known=known_columns(artifacts),
    )
    return LineageView(graph)


def _flat(hops: tuple[Hop, ...], depth: int = 0) -> list[tuple[int, str, str]]:
    out = []
    for hop in hops:
        out.append((depth, hop.node, hop.column))
        out += _flat(hop.children, depth + 1)
    return out


def test_upstream_to_the_source_columns_as_the_catalog_spells_them(view: LineageView) -> None:
    hops = view.tree(CORE_CUSTOMERS, "customer_key", "upstream", TreeOptions())
    assert _flat(hops) == [
        (0, STG_CUSTOMERS, "customer_id"),
        (1, CUSTOMERS, "CustomerId"),
        (0, STG_CUSTOMERS, "email"),
        (1, CUSTOMERS, "Email"),
    ]
    masked = hops[0].transformations
    assert [(t.type, t.subtype, t.masking) for t in masked] == [("DIRECT", "TRANSFORMATION", True)]


def test_a_seed_ends_at_its_csv_file(view: LineageView) -> None:
    hops = view.tree(CORE_CUSTOMERS, "region", "upstream", TreeOptions())
    assert _flat(hops) == [
        (0, "model.jaffle_oml.stg_country_codes", "region"),
        (1, SEED, "region"),
        (2, "file:seeds/country_codes.csv", "region"),
    ]
    assert hops[0].children[0].children[0].kind == "file"


def test_a_model_reading_a_parquet_file_ends_at_the_file(view: LineageView) -> None:
    """stg_web_events reads `read_parquet('data/web_events.parquet')`: each column's one hop is
    the file's column, a leaf (kind file, nothing above it), and the file reads back down."""
    web_events = "model.jaffle_oml.stg_web_events"
    parquet = "file:data/web_events.parquet"
    for column, subtype in (("event_id", "IDENTITY"), ("event_at", "TRANSFORMATION")):
        (hop,) = view.tree(web_events, column, "upstream", TreeOptions())
        assert (hop.node, hop.column, hop.kind, hop.children) == (parquet, column, "file", ())
        assert [(t.type, t.subtype) for t in hop.transformations] == [("DIRECT", subtype)]
    assert view.graph.nodes[parquet].columns == ("event_id", "customer_id", "event_at", "page")
    (down,) = view.tree(parquet, "page", "downstream", TreeOptions())
    assert (down.node, down.column) == (web_events, "page")


def test_depth_limits_the_hops(view: LineageView) -> None:
    hops = view.tree(CORE_CUSTOMERS, "region", "upstream", TreeOptions(depth=1))
    assert _flat(hops) == [(0, "model.jaffle_oml.stg_country_codes", "region")]


def test_direct_only_drops_what_only_shapes_the_value(view: LineageView) -> None:
    state = "model.jaffle_oml.core_orders"
    everything = view.tree(state, "payment_state", "upstream", TreeOptions())
    assert {h.column for h in everything} == {"status", "amount", "amount_cents"}
    assert view.tree(state, "payment_state", "upstream", TreeOptions(direct_only=True)) == ()
    direct = view.tree(state, "order_amount", "upstream", TreeOptions(direct_only=True))
    assert _flat(direct)[0] == (0, "model.jaffle_oml.stg_orders", "amount")


def test_downstream_columns_and_the_models_whose_rows_it_shapes(view: LineageView) -> None:
    hops = view.tree(STG_CUSTOMERS, "customer_id", "downstream", TreeOptions())
    columns = {(h.node, h.column) for h in hops if not h.rows}
    assert (CORE_CUSTOMERS, "customer_key") in columns
    assert (CORE_CUSTOMERS, "customer_id") in columns
    assert ("snapshot.jaffle_oml.customers_snapshot", "customer_id") in columns
    below = next(h for h in hops if h.column == "customer_id" and h.node == CORE_CUSTOMERS)
    rows = {(h.node, h.transformations[0].subtype) for h in below.children if h.rows}
    assert ("model.jaffle_oml.revenue_by_country", "JOIN") in rows
    direct = view.tree(STG_CUSTOMERS, "customer_id", "downstream", TreeOptions(direct_only=True))
    assert not any(h.rows for h in direct)


def test_a_column_seen_before_is_not_expanded_again(view: LineageView) -> None:
    hops = view.tree("model.jaffle_oml.core_orders", "payment_state", "upstream", TreeOptions())
    amount = [h for h in hops if h.column == "amount"]
    assert len(amount) == 1
    lines = as_text("m", "c", hops, "upstream")
    assert len(lines) == len(set(lines))


def test_unknown_model_suggests_close_names(view: LineageView) -> None:
    with pytest.raises(SelectionError) as err:
        view.find_node("core_customer")
    assert err.value.what == "model 'core_customer'"
    assert "core_customers" in err.value.suggestions
    assert "not in the project" in err.value.reason
    assert "\n" not in str(err.value)


def test_unknown_column_suggests_close_names(view: LineageView) -> None:
    node = view.find_node("core_customers")
    with pytest.raises(SelectionError) as err:
        view.find_column(node, "custmer_key")
    assert "has no column 'custmer_key'" in err.value.reason
    assert "customer_key" in err.value.suggestions
    assert view.find_column(node, "CUSTOMER_KEY") == "customer_key"


def test_sources_by_source_and_table_name(view: LineageView) -> None:
    assert view.find_node("crm.customers").id == CUSTOMERS
    assert view.find_node(CUSTOMERS).id == CUSTOMERS
    assert view.find_node("country_codes").id == SEED


def test_opaque_model_upstream_is_an_error_naming_the_reason() -> None:
    artifacts = read_artifacts(MINI)
    audit = "model.jaffle_oml.core_order_audit"
    result = analyse_models(artifacts, wanted={audit}, dialect="duckdb")
    result.models.pop(audit, None)
    graph = build_graph(
        artifacts.manifest,
        result.models,
        opaque={audit: "SQL does not parse: Expecting )"},
        known=known_columns(artifacts),
    )
    opaque = LineageView(graph)
    with pytest.raises(
        SelectionError,
        match=r"^model.jaffle_oml.core_order_audit: has no column lineage: SQL does not parse",
    ):
        answer(opaque, Query("core_order_audit"))
    down = answer(opaque, Query("core_order_audit", "open_amount", upstream=False, downstream=True))
    assert down.upstream == {}
    assert down.document["graph"]["nodes"][0]["opaque"] == "SQL does not parse: Expecting )"


def test_document_shape_is_stable(view: LineageView) -> None:
    doc = answer(view, Query("core_customers", "region", upstream=True, downstream=True)).document
    assert set(doc) == {
        "version",
        "model",
        "column",
        "direction",
        "depth",
        "direct_only",
        "columns",
        "downstream",
        "graph",
    }
    assert (doc["version"], doc["model"], doc["direction"]) == (1, CORE_CUSTOMERS, "both")
    (hop,) = doc["columns"]["region"]
    assert set(hop) == {
        "node",
        "relation",
        "column",
        "kind",
        "opaque",
        "transformations",
        "repeated",
        "upstream",
    }
    assert hop["transformations"] == [{"type": "DIRECT", "subtype": "IDENTITY", "masking": False}]
    graph = doc["graph"]
    assert set(graph) == {"nodes", "edges", "rows"}
    ids = {n["id"] for n in graph["nodes"]}
    assert {CORE_CUSTOMERS, SEED, "file:seeds/country_codes.csv"} <= ids
    assert set(graph["nodes"][0]) == {
        "id",
        "kind",
        "name",
        "relation",
        "columns",
        "opaque",
        "path",
        "materialized",
        "depends_on",
    }
    assert {"from", "to", "transformations"} == set(graph["edges"][0])


def test_whole_project_document(view: LineageView) -> None:
    doc = answer(view, Query()).document
    assert doc["model"] is None
    assert doc["columns"] == {} == doc["downstream"]
    assert len(doc["graph"]["nodes"]) == len(view.graph.nodes)


def test_text_of_an_unread_column(view: LineageView) -> None:
    lines = as_text(SEED, "code", (), "downstream")
    assert lines == [f"{SEED}.code  (downstream)", "  (nothing downstream reads it)"]


def test_cli_lineage_help_depth_and_errors(
    tmp_path: Path,
    mini_target: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`dbt-oml lineage` in this process (it runs no dbt command)."""
    import subprocess

    from dbt_oml.cli import main
    from tests.conftest import PROJECT

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        code = main(["lineage", *args])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    project = ["--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    project += ["--target-path", str(mini_target)]
    helped = run("--help")
    assert helped.returncode == 0, helped.stderr
    for flag in ("--upstream", "--downstream", "--depth", "--direct-only", "--json", "--html"):
        assert flag in helped.stdout
    shallow = run("core_customers", "region", "--depth", "2", *project)
    assert shallow.returncode == 0, shallow.stderr
    assert shallow.stdout.splitlines() == [
        f"{CORE_CUSTOMERS}.region",
        "  <- warehouse.staging.stg_country_codes.region  [DIRECT IDENTITY]  (model)",
        "    <- warehouse.staging.country_codes.region  [DIRECT IDENTITY]  (seed)",
    ]
    wrong = run("core_customer", *project)
    assert wrong.returncode == 3
    assert wrong.stderr.strip().splitlines() == [
        "dbt-oml lineage: model 'core_customer': not in the project (no model, snapshot, seed "
        "or source of that name); did you mean core_customers, crm.customers, stg_customers?"
    ]
