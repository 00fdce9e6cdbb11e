"""openlineage-sql (the Rust parser of OpenLineage, dbt-ol's engine): `openlineage_sql.parse(
[sql], dialect="duckdb", default_schema=...)`. It takes no schema (tables and columns are not
given to it: it cannot expand `*` or attribute an unqualified column in a join) and no default
catalog. Edges: `column_lineage` (descendant <- origin table + column); no DIRECT/INDIRECT, no
dataset-level inputs. A non-empty `errors` marks the model failed."""

from __future__ import annotations

from typing import Any

import _runner


def load() -> _runner.Analyse:
    import openlineage_sql

    def analyse(case: dict[str, Any]) -> _runner.Answer:
        meta = openlineage_sql.parse(
            [case["sql"]], dialect="duckdb", default_schema=case.get("default_schema")
        )
        columns = []
        for lineage in meta.column_lineage:
            for source in lineage.lineage:
                origin = source.origin
                ref = (
                    _runner.table_ref(origin.database, origin.schema, origin.name, origin.name)
                    if origin is not None
                    else _runner.table_ref("", "", "", "")
                )
                columns.append([lineage.descendant.name, ref, source.name, None])
        if meta.errors:
            raise _runner.PartialAnswerError((columns, None), [str(e) for e in meta.errors])
        return columns, None

    return analyse


if __name__ == "__main__":
    _runner.main("openlineage-sql", load, ("openlineage-sql",))
