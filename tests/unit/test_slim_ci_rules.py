"""The selection rules of `impact --selector` (dbt_oml.impact.selection) on a hand-made graph:
which readers a change reaches, rule by rule; tests/integration/test_slim_ci.py holds them
against a real warehouse."""

from __future__ import annotations

from dbt_oml.impact.selection import Change, affected_models
from dbt_oml.lineage.graph import ColumnGraph, Edge, GraphNode, RowsEdge
from dbt_oml.lineage.types import DIRECT, IDENTITY, INDIRECT, Transformation

VALUE = (Transformation(DIRECT, IDENTITY),)
FILTER = (Transformation(INDIRECT, "FILTER"),)
LOCAL = ("select x + 1 as x, z from a", "select x + 2 as x, z from a")


def _graph() -> ColumnGraph:
    """a(x, z) -> b.y reads a.x -> c.w reads b.y; d filters on a.x; e is opaque over a;
    f reads only a.z; g reads a's rows by count(*) only (no column edge)."""
    graph = ColumnGraph()
    for uid, columns, parents, opaque in [
        ("a", ("x", "z"), (), None),
        ("b", ("y",), ("a",), None),
        ("c", ("w",), ("b",), None),
        ("d", ("z",), ("a",), None),
        ("e", ("q",), ("a",), "SQL does not parse"),
        ("f", ("z",), ("a",), None),
        ("g", ("n",), ("a",), None),
    ]:
        graph.nodes[uid] = GraphNode(
            uid, "model", uid, f"w.s.{uid}", columns, opaque=opaque, depends_on=parents
        )
    for source, column, target, out in [
        ("a", "x", "b", "y"),
        ("b", "y", "c", "w"),
        ("a", "z", "d", "z"),
        ("a", "z", "f", "z"),
    ]:
        edge = Edge(source, column, target, out, VALUE)
        graph.downstream.setdefault((source, column), []).append(edge)
        graph.upstream.setdefault((target, out), []).append(edge)
    graph.rows.setdefault(("a", "x"), []).append(RowsEdge("a", "x", "d", FILTER))
    return graph


def test_a_column_local_change_reaches_its_readers_only() -> None:
    selected = affected_models(_graph(), [Change("a", *LOCAL, frozenset({"x"}))])
    # b and c by value, d by its rows (a filter on a.x), e because it is opaque;
    # f reads a.z only, g counts a's rows, which did not change
    assert selected == {"a", "b", "c", "d", "e"}


def test_a_change_of_rows_reaches_every_descendant() -> None:
    rows = ("select x, z from a", "select x, z from a where z > 0")
    selected = affected_models(_graph(), [Change("a", *rows, frozenset())])
    assert selected == {"a", "b", "c", "d", "e", "f", "g"}


def test_a_model_without_sql_on_one_side_is_affected_whole() -> None:
    selected = affected_models(_graph(), [Change("a", None, LOCAL[1], frozenset({"x"}))])
    assert "g" in selected


def test_seeds_and_added_models_are_affected_whole() -> None:
    assert affected_models(_graph(), [], whole=["a"]) == {"a", "b", "c", "d", "e", "f", "g"}


def test_nothing_changed_selects_nothing() -> None:
    assert affected_models(_graph(), []) == set()
