"""A lineage case (tests/fixtures/lineage_cases_*.json, ../shared/lineage-cases) analysed by the
engine as its schema, catalog, schema and own columns say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dbt_oml.lineage.model import ModelLineage, build_schema, column_lineage, schema_case
from tests.conftest import SHARED

FIXTURES = Path(__file__).parent.parent / "fixtures"
#: The 51 hand-checked cases: third-party data, read from ../shared (skipped when absent).
SHARED_CASES = SHARED / "lineage-cases" / "cases.json"
#: Every case there is: the shared ones when present, and the repo's own.
CASES: list[dict[str, Any]] = [
    case
    for path in (
        SHARED_CASES,
        FIXTURES / "lineage_cases_nested.json",
        FIXTURES / "lineage_cases_generated.json",
        FIXTURES / "lineage_cases_pivot.json",
    )
    if path.exists()
    for case in json.loads(path.read_text())["cases"]
]


def analyse_case(case: dict[str, Any]) -> ModelLineage:
    """The engine's lineage of one case (raises LineageError when it is opaque)."""
    return column_lineage(
        case["sql"],
        schema=build_schema(case["schema"], dialect="duckdb"),
        unique_id=case["id"],
        default_catalog=case.get("default_catalog"),
        default_schema=case.get("default_schema"),
        case=schema_case(case["schema"]),
        own_columns=case.get("own_columns", ()),
    )
