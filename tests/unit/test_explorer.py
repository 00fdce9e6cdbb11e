"""The explorer page: one file, the lineage document inside it unchanged, nothing fetched (the
renderer alone, and `dbt-oml lineage --html` on the mini artifacts, without a browser); the
document's nodes placed on their catalog and namespace when those are known."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dbt_oml.cli import ExitCode, main
from dbt_oml.explorer import render
from dbt_oml.lineage.graph import ColumnGraph, GraphNode
from dbt_oml.lineage.graph_doc import graph_json
from dbt_oml.lineage.view import LineageView, Query, answer
from dbt_oml.namespaces import CatalogSpec, Namespaces, resolve_namespaces
from tests.conftest import PROJECT


def _doc() -> dict[str, object]:
    node = {
        "id": "model.p.m",
        "kind": "model",
        "name": "m</script><script>alert(1)</script>",
        "relation": "w.m.m",
        "columns": ["a"],
        "opaque": None,
        "path": None,
        "materialized": "view",
    }
    return {"version": 1, "model": None, "graph": {"nodes": [node], "edges": [], "rows": []}}


def test_the_page_holds_the_document_and_its_own_script() -> None:
    page = render(_doc())
    assert "__DATA__" not in page
    assert "__SCRIPT__" not in page
    (data,) = re.findall(r'<script type="application/json" id="lineage-data">(.*?)</script>', page)
    assert json.loads(data) == _doc()
    assert page.count("</script>") == 2  # the data's own text cannot close its element
    assert "function trace(" in page
    assert ".box" in page


def test_nothing_is_fetched() -> None:
    page = render(_doc())
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "default-src 'none'" in page
    assert "https://" not in page


def test_cli_html_is_self_contained_and_embeds_the_json_document(
    tmp_path: Path,
    mini_target: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`dbt-oml lineage --json --html FILE` on the mini artifacts (no dbt run, no browser): the
    page references nothing outside itself and carries exactly the document `--json` prints."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    page = tmp_path / "out" / "lineage.html"
    project = ["--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    line = ["lineage", "--json", "--html", str(page), *project, "--target-path", str(mini_target)]
    assert main(line) == ExitCode.SUCCESS
    out = capsys.readouterr()
    assert f"explorer written to {page}" in out.err
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text.replace('http-equiv="Content-Security-Policy"', "")
    assert "https://" not in text
    assert not re.search(r"""(src|href)\s*=""", text)  # no script, style or image by reference
    assert "<link" not in text
    assert "default-src 'none'" in text
    (data,) = re.findall(r'<script type="application/json" id="lineage-data">(.*?)</script>', text)
    embedded = json.loads(data)
    assert embedded == json.loads(out.out)
    ids = {n["id"] for n in embedded["graph"]["nodes"]}
    assert {"model.jaffle_oml.stg_web_events", "file:data/web_events.parquet"} <= ids


class TestWhereEachRelationLives:
    """The document's nodes carry their catalog and namespace when the view knows the
    namespaces (the explorer's boxes show both), and never a secret of the connection."""

    SECRET = "hunter2"

    @staticmethod
    def _graph() -> ColumnGraph:
        graph = ColumnGraph()
        for node in (
            GraphNode("source.p.crm.customers", "source", "customers", "crm.sales.customers", ()),
            GraphNode("model.p.dim", "model", "dim", "warehouse.marts.dim", ("a",)),
            GraphNode("relation:main.t", "relation", "t", "main.t", ()),
            GraphNode("file:data/e.parquet", "file", "data/e.parquet", "data/e.parquet", ()),
            GraphNode("file:s3://KEY:pw@lake/raw/e.parquet", "file", "e", "s3://lake/e", ()),
        ):
            graph.nodes[node.id] = node
        return graph

    def _namespaces(self) -> Namespaces:
        catalogs = [
            CatalogSpec(alias="warehouse", type="duckdb", path="/srv/dbt/warehouse.duckdb"),
            CatalogSpec(
                alias="crm",
                type="postgres",
                path=f"host=pg port=5433 user=u password={self.SECRET}",
            ),
        ]
        return resolve_namespaces(catalogs, overrides={}).namespaces

    def test_each_node_has_its_catalog_and_the_namespace_of_its_server(self) -> None:
        view = LineageView(self._graph(), namespaces=self._namespaces())
        nodes = {n["id"]: n for n in answer(view, Query()).document["graph"]["nodes"]}
        assert {i: (n["catalog"], n["namespace"]) for i, n in nodes.items()} == {
            "source.p.crm.customers": ("crm", "postgres://pg:5433"),
            "model.p.dim": ("warehouse", "duckdb:///srv/dbt/warehouse.duckdb"),
            # no database in the name: the connection's main catalog
            "relation:main.t": (None, "duckdb:///srv/dbt/warehouse.duckdb"),
            "file:data/e.parquet": (None, "file"),
            "file:s3://KEY:pw@lake/raw/e.parquet": (None, "s3://lake"),
        }

    def test_the_page_carries_them_and_no_secret(self) -> None:
        view = LineageView(self._graph(), namespaces=self._namespaces())
        page = render(answer(view, Query()).document)
        assert '"namespace":"postgres://pg:5433"' in page
        assert self.SECRET not in page

    def test_without_namespaces_the_nodes_have_neither_key(self) -> None:
        (node, *_) = graph_json(self._graph())["nodes"]
        assert "catalog" not in node
        assert "namespace" not in node


def test_boxes_have_no_fixed_width_and_the_neighbourhood_has_all() -> None:
    page = render(_doc())
    assert "width: 240px" not in page
    assert '<option value="all">all</option>' in page
    assert "function reveal(" in page
