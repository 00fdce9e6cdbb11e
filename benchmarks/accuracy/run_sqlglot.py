"""sqlglot's own `sqlglot.lineage.lineage(column, sql, schema=...)`, once per output column (the
model's catalog columns), the naive way: the whole query is parsed and qualified again for each
column. Edges: the leaves of each column's lineage tree that are tables. sqlglot does not say
DIRECT or INDIRECT and reports no dataset-level inputs. The case's default catalog and schema
are passed to the qualifier (`catalog=`, `db=`)."""

from __future__ import annotations

from typing import Any

import _runner


def load() -> _runner.Analyse:
    from sqlglot import exp
    from sqlglot.lineage import lineage

    def analyse(case: dict[str, Any]) -> _runner.Answer:
        defaults = {
            k: v
            for k, v in (
                ("catalog", case.get("default_catalog")),
                ("db", case.get("default_schema")),
            )
            if v
        }
        columns: list[list[Any]] = []
        failures = []
        for output in case["columns"]:
            try:
                root = lineage(
                    output, case["sql"], schema=case["schema"], dialect="duckdb", **defaults
                )
            except Exception as e:  # noqa: BLE001 - one column's failure, the others go on
                failures.append(f"{output}: {type(e).__name__}: {e}")
                continue
            for node in root.walk():
                if node.downstream or not isinstance(node.source, exp.Table):
                    continue
                table = node.source
                ref = _runner.table_ref(table.catalog, table.db, table.name, table.sql("duckdb"))
                columns.append([output, ref, node.name.split(".")[-1], None])
        if failures:
            raise _runner.PartialAnswerError((columns, None), failures)
        return columns, None

    return analyse


if __name__ == "__main__":
    _runner.main("sqlglot.lineage", load, ("sqlglot", "sqlglotc"))
