"""The columns of a few relations from one `duckdb_columns()` query (plugin mode, and a build's
lineage while dbt runs), over a real DuckDB database."""

from __future__ import annotations

import duckdb
import pytest

from dbt_oml.artifacts import Column, Node
from dbt_oml.dbt.relation_columns import columns_by_node, keyed, relations_query


def _node(uid: str, database: str, schema: str, identifier: str) -> Node:
    return Node(
        unique_id=uid,
        resource_type="model",
        name=identifier,
        package_name="p",
        database=database,
        schema=schema,
        identifier=identifier,
        materialized="view",
    )


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("attach ':memory:' as other")
    for catalog in ("memory", "other"):
        for schema in ("main", "Sales"):
            con.execute(f'create schema if not exists {catalog}."{schema}"')
            con.execute(
                f'create table {catalog}."{schema}"."Orders" (id integer, "Amount" decimal(18, 2))'
            )
    con.execute(
        """create view memory.main."it's" as select id as "Order Id" from memory.main."Orders" """
    )
    con.execute("comment on column memory.main.\"Orders\".id is 'the key'")
    return con


def _read(con: duckdb.DuckDBPyConnection, nodes: list[Node]) -> dict[str, tuple[Column, ...]]:
    relations = keyed(nodes)
    return columns_by_node(con.execute(relations_query(relations)).fetchall(), relations)


def test_only_the_relations_asked_for_whatever_their_case(con: duckdb.DuckDBPyConnection) -> None:
    got = _read(
        con,
        [
            _node("model.p.a", "memory", "sales", "orders"),
            _node("model.p.q", "memory", "main", "it's"),
        ],
    )
    assert got == {
        "model.p.a": (
            Column(name="id", type="INTEGER"),
            Column(name="Amount", type="DECIMAL(18,2)"),
        ),
        "model.p.q": (Column(name="Order Id", type="INTEGER"),),
    }


def test_the_same_name_in_another_catalog_is_another_relation(
    con: duckdb.DuckDBPyConnection,
) -> None:
    got = _read(
        con,
        [
            _node("model.p.a", "memory", "main", "Orders"),
            _node("model.p.b", "other", "Sales", "Orders"),
        ],
    )
    assert set(got) == {"model.p.a", "model.p.b"}
    assert got["model.p.a"][0] == Column(name="id", type="INTEGER", description="the key")
    assert got["model.p.b"][0] == Column(name="id", type="INTEGER")


def test_a_relation_not_there_has_no_columns(con: duckdb.DuckDBPyConnection) -> None:
    assert _read(con, [_node("model.p.gone", "memory", "main", "gone")]) == {}


def test_many_relations_in_one_query(con: duckdb.DuckDBPyConnection) -> None:
    for i in range(300):
        con.execute(f"create view memory.main.v{i} as select {i} as c{i}")
    nodes = [_node(f"model.p.v{i}", "memory", "main", f"V{i}") for i in range(300)]
    got = _read(con, nodes)
    assert len(got) == 300
    assert got["model.p.v299"] == (Column(name="c299", type="INTEGER"),)
