"""DuckDB types -> OpenMetadata columns; every column validated against OM's own schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dbt_oml.errors import ConfigError
from dbt_oml.om.names import check_name, fqn
from dbt_oml.om.types import MAX_LENGTH, om_column
from tests.support.fakes.om_models import json_schema


@pytest.fixture(scope="module", params=["2.0", "1.12"])
def validate(request: pytest.FixtureRequest) -> Any:
    """OM's own Column schema (its generated model, tests/support/fakes/om_models), per version."""
    import jsonschema

    return jsonschema.Draft202012Validator(
        json_schema("entity/data/table.json#Column", request.param)
    ).validate


CASES = [
    ("INTEGER", {"dataType": "INT"}),
    ("BIGINT", {"dataType": "BIGINT"}),
    ("UBIGINT", {"dataType": "UINT"}),
    ("HUGEINT", {"dataType": "NUMBER"}),
    ("DOUBLE", {"dataType": "DOUBLE"}),
    ("BOOLEAN", {"dataType": "BOOLEAN"}),
    ("DATE", {"dataType": "DATE"}),
    ("TIMESTAMP WITH TIME ZONE", {"dataType": "TIMESTAMPZ"}),
    ("TIMESTAMP_NS", {"dataType": "TIMESTAMP"}),
    (
        "VARCHAR",
        {"dataType": "VARCHAR", "dataLength": MAX_LENGTH, "dataTypeDisplay": "VARCHAR(MAX)"},
    ),
    ("TEXT", {"dataType": "VARCHAR", "dataLength": MAX_LENGTH}),
    ("VARCHAR(50)", {"dataType": "VARCHAR", "dataLength": 50, "dataTypeDisplay": "VARCHAR(50)"}),
    ("CHAR(2)", {"dataType": "CHAR", "dataLength": 2}),
    ("DECIMAL(12,2)", {"dataType": "DECIMAL", "precision": 12, "scale": 2}),
    ("NUMERIC(10)", {"dataType": "DECIMAL", "precision": 10, "scale": 0}),
    ("DECIMAL", {"dataType": "DECIMAL", "precision": 18, "scale": 3}),
    ("BLOB", {"dataType": "BLOB"}),
    ("UUID", {"dataType": "UUID"}),
    ("JSON", {"dataType": "JSON"}),
    ("VARCHAR[]", {"dataType": "ARRAY", "arrayDataType": "VARCHAR"}),
    ("INTEGER[3]", {"dataType": "ARRAY", "arrayDataType": "INT"}),
    ("MAP(VARCHAR, INTEGER)", {"dataType": "MAP"}),
    ("POINT_2D", {"dataType": "UNKNOWN", "dataTypeDisplay": "POINT_2D"}),
    (None, {"dataType": "UNKNOWN"}),
]


@pytest.mark.parametrize(("duckdb", "expected"), CASES, ids=[str(c[0]) for c in CASES])
def test_types(validate: Any, duckdb: str | None, expected: dict[str, Any]) -> None:
    column = om_column("c", duckdb, "a description")
    for key, value in expected.items():
        assert column[key] == value, key
    assert column["description"] == "a description"
    validate(column)


def test_struct_children_are_columns(validate: Any) -> None:
    column = om_column(
        "payload", 'STRUCT(customer STRUCT(id INTEGER, tier VARCHAR), "Device Name" VARCHAR)'
    )
    assert column["dataType"] == "STRUCT"
    (customer, device) = column["children"]
    assert customer["name"] == "customer"
    assert [c["name"] for c in customer["children"]] == ["id", "tier"]
    assert device["name"] == "Device Name"
    assert device["dataLength"] == MAX_LENGTH
    validate(column)


@pytest.mark.parametrize(
    ("name", "reason"),
    [("", "empty"), ("a::b", "'::'"), ('say "hi"', "'\"'"), ("x" * 257, "257 characters")],
)
def test_names_om_rejects(name: str, reason: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_name(name, kind="table")
    assert reason in err.value.reason


def test_fqn_quotes_dotted_names() -> None:
    assert fqn("svc", "db", "sch", "a.b") == 'svc.db.sch."a.b"'
    assert Path(__file__).exists()
