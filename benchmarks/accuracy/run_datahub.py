"""DataHub's SQL parser (`acryl-datahub[sql-parser]`): `datahub.sql_parsing.sqlglot_lineage.
sqlglot_lineage(sql, schema_resolver, default_db, default_schema, override_dialect="duckdb")`,
with an offline `SchemaResolver(platform="duckdb")` (no DataHub server: `graph=None`) holding
the case's tables and column types (`add_raw_schema_info`). Edges: `column_lineage` (downstream
column <- upstream URN + column); DataHub does not say DIRECT or INDIRECT. Its `joins` (JOIN
columns, `columns_involved`) are taken as its dataset-level inputs: it reports no WHERE /
GROUP BY columns. A `debug_info.error` (table or column lineage failed) marks the model failed."""

from __future__ import annotations

from typing import Any

import _runner


def _name(urn: str) -> str:
    """The dataset name of `urn:li:dataset:(urn:li:dataPlatform:duckdb,NAME,PROD)`."""
    inner = urn[urn.index("(") + 1 : urn.rindex(")")]
    return inner.split(",", 1)[1].rsplit(",", 1)[0]


def _ref(urn: str) -> list[str]:
    name = _name(urn)
    parts = name.split(".") if "/" not in name and "'" not in name else [name]
    parts = ["", "", *parts][-3:] if len(parts) <= 3 else ["", "", name]
    return _runner.table_ref(*parts, name)


def load() -> _runner.Analyse:
    from datahub.sql_parsing._models import _TableName
    from datahub.sql_parsing.schema_resolver import SchemaResolver
    from datahub.sql_parsing.sqlglot_lineage import sqlglot_lineage

    def analyse(case: dict[str, Any]) -> _runner.Answer:
        resolver = SchemaResolver(platform="duckdb")
        for catalog, schemas in case["schema"].items():
            for schema, tables in schemas.items():
                for table, cols in tables.items():
                    urn = resolver.get_urn_for_table(
                        _TableName(database=catalog, db_schema=schema, table=table)
                    )
                    resolver.add_raw_schema_info(urn, dict(cols))
        result = sqlglot_lineage(
            case["sql"],
            schema_resolver=resolver,
            default_db=case.get("default_catalog"),
            default_schema=case.get("default_schema"),
            override_dialect="duckdb",
        )
        columns = [
            [info.downstream.column, _ref(up.table), up.column, None]
            for info in result.column_lineage or ()
            for up in info.upstreams
        ]
        dataset = [
            [_ref(ref.table), ref.column]
            for join in result.joins or ()
            for ref in join.columns_involved
        ]
        error = result.debug_info.error
        if error is not None:
            raise _runner.PartialAnswerError(
                (columns, dataset), [f"{type(error).__name__}: {error}"]
            )
        return columns, dataset

    return analyse


if __name__ == "__main__":
    _runner.main("DataHub sqlglot_lineage", load, ("acryl-datahub", "sqlglot", "sqlglotc"))
