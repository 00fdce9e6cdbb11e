"""Column-level lineage of one compiled model: the engine's face, light to import.

The work is sqlglot's (lineage.engine): per model the SQL is parsed once, qualified once against
a MappingSchema (which expands `*`), scoped once, and every output column is traced in one walk
with per-model memoisation. Before sqlglot qualifies columns, lineage.resolve applies DuckDB's
own name resolution (struct paths, relations with unknown columns), and lineage.expand rewrites
PIVOT, UNPIVOT and COLUMNS(...) into the columns they name. The result is conservative:
SQL that does not parse, an output `*` over a relation whose columns are unknown, or a reference
that does not resolve or could belong to two relations raises LineageError and the caller keeps
the model's table-level lineage only. An edge never points at a CTE or alias.

This module imports no sqlglot: the engine (and compiled sqlglot, ~40 MiB) loads on the first
model that must actually be analysed, so a warm run, every model a cache hit, never loads it.
Pure: no I/O, no environment, no logging setup.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from dbt_oml.errors import LineageError
from dbt_oml.lineage.types import (
    DIRECT,
    INDIRECT,
    ColumnEdge,
    ModelLineage,
    SourceColumn,
    Transformation,
    compose,
)
from dbt_oml.lineage.version import ENGINE_VERSION

if TYPE_CHECKING:
    from sqlglot.schema import MappingSchema

__all__ = [
    "DIRECT",
    "ENGINE_VERSION",
    "INDIRECT",
    "ColumnEdge",
    "ModelLineage",
    "SourceColumn",
    "Transformation",
    "build_schema",
    "column_lineage",
    "compose",
    "schema_case",
    "wants_own_columns",
]

#: dbt's Python models define `def model(dbt, session)`; their compiled code is Python.
_PYTHON_MODEL: Final = re.compile(r"^\s*def\s+model\s*\(\s*dbt\s*,", re.MULTILINE)


def schema_case(schema: Mapping[str, object]) -> dict[str, str]:
    """lower-case -> original spelling of every catalog, schema, table and column name."""
    out: dict[str, str] = {}

    def walk(node: object) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                out.setdefault(str(key).lower(), str(key))
                if isinstance(value, Mapping):
                    walk(value)

    walk(schema)
    return out


def wants_own_columns(sql: str) -> bool:
    """Whether a model's SQL may need its own catalog columns: a `*` (over a file nobody else
    knows the columns of), a PIVOT (whose columns come from the data) or COLUMNS(...).

    >>> wants_own_columns("pivot t on q using sum(v)"), wants_own_columns("select a from t")
    (True, False)
    """
    if "*" in sql:
        return True
    lowered = sql.lower()
    return "pivot" in lowered or "columns" in lowered


def build_schema(tables: Mapping[str, object], *, dialect: str) -> MappingSchema:
    """A MappingSchema for sqlglot from {catalog: {schema: {table: {column: type}}}}; build once."""
    from sqlglot.schema import MappingSchema

    return MappingSchema(dict(tables), dialect=dialect)


def column_lineage(
    sql: str,
    *,
    schema: MappingSchema,
    dialect: str = "duckdb",
    unique_id: str = "<sql>",
    default_catalog: str | None = None,
    default_schema: str | None = None,
    case: Mapping[str, str] | None = None,
    own_columns: Sequence[str] = (),
) -> ModelLineage:
    """Trace every output column of `sql` to the source columns it reads.

    Args:
        sql: the compiled query of one model.
        schema: the columns of every relation the query may read (built once per run).
        dialect: the sqlglot dialect of the adapter.
        unique_id: names the model in errors.
        default_catalog: the catalog unqualified relations resolve to.
        default_schema: the schema unqualified relations resolve to.
        case: lower-case name -> original spelling, to give names back their case.
        own_columns: the model's columns as its catalog entry lists them: a `select *` over a
            file (whose columns nobody else knows) takes them, and so do a PIVOT's columns that
            come from the data (`PIVOT t ON q USING sum(v)`, no IN list).

    Raises:
        LineageError: the model is opaque (unparseable SQL, unknown `*`, an unresolved name).

    >>> s = build_schema({"w": {"m": {"t": {"id": "INT", "amount": "DOUBLE"}}}}, dialect="duckdb")
    >>> sql = "with s as (select * from w.m.t) select id, amount * 2 as a2 from s"
    >>> lin = column_lineage(sql, schema=s)
    >>> [(e.output, [i.column for i, _ in e.inputs]) for e in lin.columns]
    [('id', ['id']), ('a2', ['amount'])]
    """
    if _PYTHON_MODEL.search(sql):
        raise LineageError(unique_id=unique_id, reason="Python model (no SQL to analyse)")
    from dbt_oml.lineage import engine

    return engine.column_lineage(
        sql,
        schema=schema,
        dialect=dialect,
        unique_id=unique_id,
        default_catalog=default_catalog,
        default_schema=default_schema,
        case=case,
        own_columns=own_columns,
    )
