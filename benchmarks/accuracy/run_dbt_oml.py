"""dbt-oml's engine on each case, in dbt-oml's own .venv: `dbt_oml.lineage.model.column_lineage`
with the case's schema, defaults and the model's own catalog columns where `dbt-oml emit` passes
them (`model.wants_own_columns(sql)` where the engine has it, else SQL with a `*`). Kinds: an input with a DIRECT transformation is DIRECT, else
INDIRECT; `ModelLineage.dataset` gives the dataset-level INDIRECT inputs."""

from __future__ import annotations

from typing import Any

import _runner


def load() -> _runner.Analyse:
    from dbt_oml.lineage import (
        engine,  # noqa: F401 - model.py loads it lazily: time it here
        model,
    )
    from dbt_oml.lineage.model import build_schema, column_lineage, schema_case

    wants_own = getattr(model, "wants_own_columns", lambda sql: "*" in sql)

    def analyse(case: dict[str, Any]) -> _runner.Answer:
        lineage = column_lineage(
            case["sql"],
            schema=build_schema(case["schema"], dialect="duckdb"),
            dialect="duckdb",
            unique_id=case["id"],
            default_catalog=case.get("default_catalog"),
            default_schema=case.get("default_schema"),
            case=schema_case(case["schema"]),
            own_columns=case["columns"] if wants_own(case["sql"]) else (),
        )
        columns = []
        for edge in lineage.columns:
            if not edge.inputs:  # an output with no inputs is still an answer: no edges
                continue
            for source, transformations in edge.inputs:
                kind = "DIRECT" if any(t.type == "DIRECT" for t in transformations) else "INDIRECT"
                ref = _runner.table_ref(source.catalog, source.schema, source.table, source.table)
                columns.append([edge.output, ref, source.column, kind])
        dataset = [
            [_runner.table_ref(s.catalog, s.schema, s.table, s.table), s.column]
            for s, _ in lineage.dataset
        ]
        return columns, dataset

    return analyse


if __name__ == "__main__":
    _runner.main("dbt-oml", load, ("dbt-oml", "sqlglot", "sqlglotc"))
