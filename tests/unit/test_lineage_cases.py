"""The 51 hand-checked DuckDB column-lineage cases (read from ../shared/lineage-cases/, third-party
data: skipped when absent, never copied in), and the repo's own cases in the same format
(tests/fixtures/lineage_cases_nested.json: nested data, unknown columns;
tests/fixtures/lineage_cases_generated.json: table-generating functions, `select *` over files
with the model's catalog columns, Python models; tests/fixtures/lineage_cases_pivot.json: PIVOT,
UNPIVOT, COLUMNS(...) and `* LIKE`/`* EXCLUDE` over described file sources)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dbt_oml.errors import LineageError
from dbt_oml.lineage.model import build_schema, column_lineage, schema_case
from tests.support.lineage_cases import CASES, SHARED_CASES, analyse_case

Key = tuple[str, str, str, str]


def _low(parts: Any) -> Key:
    return tuple(str(p).lower() for p in parts)  # type: ignore[return-value]


def _params() -> list[Any]:
    return [pytest.param(case, id=case["id"]) for case in CASES]


def test_the_shared_cases_are_there_or_skipped_with_the_reason() -> None:
    if not SHARED_CASES.exists():
        pytest.skip(f"{SHARED_CASES} is absent: the 51 shared lineage cases are not run")
    assert len([c for c in CASES if c["id"] in {x["id"] for x in _shared()}]) == 51


def _shared() -> list[dict[str, Any]]:
    return list(json.loads(SHARED_CASES.read_text())["cases"])


@pytest.mark.parametrize("case", _params())
def test_case(case: dict[str, Any]) -> None:
    if case.get("opaque"):
        with pytest.raises(LineageError, match=case["opaque"]):
            analyse_case(case)
        return
    lineage = analyse_case(case)
    got = {
        e.output.lower(): {_low((s.catalog, s.schema, s.table, s.column)) for s, _ in e.inputs}
        for e in lineage.columns
    }
    expected = {k.lower(): {_low(x) for x in v} for k, v in case["expected"].items()}
    alternatives = {
        k.lower(): {_low(x) for x in v} for k, v in (case.get("alternatives") or {}).items()
    }
    assert set(got) == set(expected)
    for name, want in expected.items():
        assert got[name] in (want, alternatives.get(name)), name
    indirect = {_low((s.catalog, s.schema, s.table, s.column)) for s, _ in lineage.dataset}
    assert indirect == {_low(x) for x in case["indirect"]}
    by_name = {e.output.lower(): e for e in lineage.columns}
    for name, want_direct in (case.get("expected_direct") or {}).items():
        direct = {
            _low((s.catalog, s.schema, s.table, s.column))
            for s, ts in by_name[name.lower()].inputs
            if any(t.type == "DIRECT" for t in ts)
        }
        assert direct == {_low(x) for x in want_direct}, name
    for name, fields in (case.get("transformations") or {}).items():
        edge = by_name[name.lower()]
        got_tx = {
            ".".join((s.catalog, s.schema, s.table, s.column)).lower(): sorted(
                [t.type, t.subtype, t.masking, t.description] for t in ts
            )
            for s, ts in edge.inputs
        }
        for field, want in fields.items():
            # [type, subtype, masking] (the shared format), or with the description as a 4th item
            widths = {len(w) for w in want} or {3}
            assert len(widths) == 1, f"{name} <- {field}: mixed widths"
            (width,) = widths
            got_items = sorted(g[:width] for g in got_tx[field.lower()])
            assert got_items == sorted(want), f"{name} <- {field}"
    for name, fields in (case.get("descriptions") or {}).items():
        edge = by_name[name.lower()]
        got_text = {
            ".".join((s.catalog, s.schema, s.table, s.column)).lower(): sorted(
                t.description for t in ts
            )
            for s, ts in edge.inputs
        }
        for field, want in fields.items():
            assert got_text[field.lower()] == sorted(want), f"{name} <- {field}"


def test_output_names_keep_their_case() -> None:
    schema = {"crm": {"dbo": {"Customer": {"CustomerID": "INTEGER", "FullName": "VARCHAR"}}}}
    lineage = column_lineage(
        'with c as (select * from "crm"."dbo"."Customer") select "CustomerID" as "Key", FullName from c',
        schema=build_schema(schema, dialect="duckdb"),
        case=schema_case(schema),
    )
    assert [e.output for e in lineage.columns] == ["Key", "FullName"]
    ((source, _),) = lineage.by_output()["Key"].inputs
    assert (source.catalog, source.schema, source.table, source.column) == (
        "crm",
        "dbo",
        "Customer",
        "CustomerID",
    )


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("select * from (((", "does not parse"),
        ("select * from w.m.unknown_table", "unknown"),
        ("select a from w.m.t join w.m.u on true", "attributed"),
        ("select 1; select 2", "statements"),
    ],
)
def test_opaque_models_raise(sql: str, reason: str) -> None:
    schema = build_schema({"w": {"m": {"t": {"a": "INT"}, "u": {"a": "INT"}}}}, dialect="duckdb")
    with pytest.raises(LineageError, match=reason) as err:
        column_lineage(sql, schema=schema, unique_id="model.p.x")
    assert err.value.unique_id == "model.p.x"


def test_never_an_edge_to_a_cte_name() -> None:
    schema = build_schema({"w": {"m": {"orders": {"id": "INT"}}}}, dialect="duckdb")
    sql = (
        "with orders as (select id from w.m.orders), o2 as (select * from orders) select id from o2"
    )
    (edge,) = column_lineage(sql, schema=schema).columns
    assert [(s.catalog, s.table) for s, _ in edge.inputs] == [("w", "orders")]
