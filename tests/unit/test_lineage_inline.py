"""Import CTEs (`with a as (select * from catalog.schema.relation)`) are traced as the relation
they name (lineage.inline): the same lineage, less work. What is not exactly such a CTE, or
where reading it so could name another relation, stays as written."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.schema import MappingSchema

from dbt_oml.artifacts import read_artifacts
from dbt_oml.errors import LineageError
from dbt_oml.lineage import engine
from dbt_oml.lineage.batch import analyse_models
from dbt_oml.lineage.inline import inline_import_ctes
from dbt_oml.lineage.model import build_schema
from tests.support.lineage_cases import CASES, analyse_case

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = build_schema(
    {"w": {"s": {"t": {"id": "INT", "v": "INT"}, "u": {"id": "INT", "x": "INT"}}}},
    dialect="duckdb",
)


def _inlined(sql: str) -> str:
    statement = sqlglot.parse_one(sql, read="duckdb")
    return inline_import_ctes(statement, SCHEMA).sql(dialect="duckdb")


def test_an_import_cte_is_read_as_its_relation_and_the_others_stay() -> None:
    sql = (
        "with a as (select * from w.s.t), b as (select id from w.s.u where x > 0) "
        "select a.v, b.id from a join b on a.id = b.id"
    )
    assert _inlined(sql) == (
        "WITH b AS (SELECT id FROM w.s.u WHERE x > 0) "
        "SELECT a.v, b.id FROM w.s.t AS a JOIN b ON a.id = b.id"
    )


def test_every_reference_keeps_its_own_alias_and_the_with_goes_when_empty() -> None:
    sql = "with a as (select * from w.s.t) select x.v, a.id from a as x join a on x.id = a.id"
    assert _inlined(sql) == "SELECT x.v, a.id FROM w.s.t AS x JOIN w.s.t AS a ON x.id = a.id"


def test_a_later_cte_reads_it_an_earlier_one_reads_a_relation_of_that_name() -> None:
    sql = "with b as (select * from a), a as (select * from w.s.t) select b.id, a.v from b, a"
    assert _inlined(sql) == ("WITH b AS (SELECT * FROM a) SELECT b.id, a.v FROM b, w.s.t AS a")


@pytest.mark.parametrize(
    "sql",
    [
        "with a as (select * from w.s.t where id > 1) select id from a",  # it shapes rows
        "with a as (select * exclude (v) from w.s.t) select id from a",  # it drops a column
        "with a as (select id, v from w.s.t) select id from a",  # not a `*`
        "with a as (select * from w.s.nowhere) select id from a",  # columns unknown
        "with a as (select * from s.t) select id from a",  # resolved by qualify, not here
        "with a as (select * from w.s.t, w.s.u) select id from a",  # two relations
        "with a(i, j) as (select * from w.s.t) select i from a",  # renamed columns
        "with a as (select * from w.s.t) select i from a as x(i, j)",  # renamed where read
        "with recursive a as (select * from w.s.t) select id from a",
        "with a as (select * from w.s.t) "
        "select id from (with a as (select 1 as id) select id from a)",  # a nested WITH's a
        # another relation's columns are unknown (an incremental model's {{ this }}): names are
        # resolved then, and a CTE's columns weigh otherwise there than a relation's
        "with a as (select * from w.s.t) select a.id from a where a.v > "
        "(select max(v) from w.s.this_model)",
    ],
)
def test_anything_else_stays_as_written(sql: str) -> None:
    written = sqlglot.parse_one(sql, read="duckdb").sql(dialect="duckdb")
    assert _inlined(sql) == written


def _outcome(case: dict[str, Any]) -> object:
    try:
        return analyse_case(case)
    except LineageError as e:
        return e.reason


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES])
def test_every_lineage_case_is_the_same_with_and_without_it(
    case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with_it = _outcome(case)
    monkeypatch.setattr(engine, "inline_import_ctes", lambda statement, _schema: statement)
    assert _outcome(case) == with_it


def test_a_generated_project_in_dbts_style_is_the_same_with_and_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark's generator writes dbt-style models (import CTEs over refs, joins,
    windows, CASE): every model's lineage is the same either way, and every one was inlined."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from lineage_gen import generate  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    artifacts = read_artifacts(generate(tmp_path / "target", 80, seed=11))
    wanted = {u for u, n in artifacts.manifest.nodes.items() if n.resource_type == "model"}
    calls: list[bool] = []
    real = engine.inline_import_ctes

    def counted(statement: exp.Expr, schema: MappingSchema) -> exp.Expr:
        before = statement.sql()
        after = real(statement, schema)
        calls.append(after.sql() != before)
        return after

    monkeypatch.setattr(engine, "inline_import_ctes", counted)
    with_it = analyse_models(artifacts, wanted=wanted, dialect="duckdb")
    monkeypatch.setattr(engine, "inline_import_ctes", lambda statement, _schema: statement)
    without = analyse_models(artifacts, wanted=wanted, dialect="duckdb")
    assert with_it.opaque == without.opaque == {}
    assert with_it.models == without.models
    assert len(with_it.models) == len(wanted) == 80
    assert sum(calls) >= 60, sum(calls)  # most models open with import CTEs
