"""A lineage case (tests/fixtures/lineage_cases_*.json, ../shared/lineage-cases) analysed by the
engine as its schema, catalog, schema and own columns say."""

from __future__ import annotations

from typing import Any

from dbt_oml.lineage.model import ModelLineage, build_schema, column_lineage, schema_case


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
