"""The sqlglot work behind lineage.model.column_lineage: parse, qualify, scope, trace.

Imported on the first model a run must actually analyse (lineage.model imports it lazily), so
a warm run, every model a cache hit, never loads sqlglot. Pure: no I/O, no environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.generator import Generator
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.qualify_columns import qualify_columns
from sqlglot.optimizer.scope import build_scope
from sqlglot.schema import MappingSchema

from dbt_oml.errors import LineageError
from dbt_oml.lineage.colsets import Context
from dbt_oml.lineage.expand import expand_sets, may_hold_sets
from dbt_oml.lineage.inline import inline_import_ctes
from dbt_oml.lineage.quiet import sqlglot_quiet
from dbt_oml.lineage.resolve import resolve_names
from dbt_oml.lineage.spelling import Spelling
from dbt_oml.lineage.survey import needs_resolution, survey, unqualify_file_scans
from dbt_oml.lineage.types import (
    ColumnEdge,
    ModelLineage,
    OpaqueError,
    SourceColumn,
    Transformation,
)
from dbt_oml.lineage.walk import Inputs, Tracer


def _unexpanded_star(projection: exp.Expr, *, sets: bool) -> bool:
    """A `*` or `x.*` left in an output column, or (`sets`) a COLUMNS(...): columns unknown."""
    bare = projection.unalias()
    if isinstance(bare, exp.Star) or (sets and bare.find(exp.Columns) is not None):
        return True
    return any(isinstance(c.this, exp.Star) for c in projection.find_all(exp.Column))


def _projections(expression: exp.Expr) -> list[exp.Expr]:
    """The output columns of a query; for UNION BY NAME, every branch's names in order."""
    if isinstance(expression, exp.SetOperation) and expression.args.get("by_name"):
        seen: dict[str, exp.Expr] = {}
        for branch in (expression.this, expression.expression):
            for projection in _projections(branch.unnest()):
                seen.setdefault(projection.alias_or_name, projection)
        return list(seen.values())
    while isinstance(expression, exp.SetOperation):
        expression = expression.this
        while isinstance(expression, exp.Subquery):
            expression = expression.this
    return list(expression.selects) if isinstance(expression, exp.Select) else []


def column_lineage(
    sql: str,
    *,
    schema: MappingSchema,
    dialect: str,
    unique_id: str,
    default_catalog: str | None,
    default_schema: str | None,
    case: Mapping[str, str] | None,
    own_columns: Sequence[str],
) -> ModelLineage:
    """lineage.model.column_lineage, done (arguments and errors as there)."""
    own = {c.lower(): c for c in own_columns}  # its own columns as the catalog spells them
    case = Spelling(case or {}, own) if own else case or {}
    lowered = sql.lower()
    with sqlglot_quiet():  # what the engine cannot do is the LineageError's reason, said once
        statement = _parse_one(sql, dialect=dialect, unique_id=unique_id)
        try:
            if may_hold_sets(lowered):  # PIVOT, UNPIVOT, COLUMNS(...): the columns they name
                context = Context(
                    schema=schema,
                    dialect=dialect,
                    catalog=default_catalog,
                    db=default_schema,
                    case=case,
                    own_columns=own_columns,
                )
                statement = expand_sets(statement, context)
                case = Spelling(context.case, context.made, own)
            statement = inline_import_ctes(statement, schema)
            original = [p.alias_or_name for p in _projections(statement)]
            qualified = _qualify(
                statement,
                schema=schema,
                dialect=dialect,
                default_catalog=default_catalog,
                default_schema=default_schema,
                own_columns=own_columns,
            )
            return _trace(qualified, original, case=case, dialect=dialect, lowered=lowered)
        except OpaqueError as e:
            raise LineageError(unique_id=unique_id, reason=str(e)) from None
        except SqlglotError as e:
            raise LineageError(unique_id=unique_id, reason=_first_line(e)) from e


def _parse_one(sql: str, *, dialect: str, unique_id: str) -> exp.Expr:
    """The one statement of a model's SQL (anything else is a LineageError)."""
    try:
        parsed = sqlglot.parse(sql, read=dialect)
    except SqlglotError as e:
        raise LineageError(
            unique_id=unique_id, reason=f"SQL does not parse: {_first_line(e)}"
        ) from e
    statements = [s for s in parsed if s is not None]
    if len(statements) != 1:
        raise LineageError(
            unique_id=unique_id, reason=f"{len(statements)} statements, expected one query"
        )
    return statements[0]


def _qualify(
    statement: exp.Expr,
    *,
    schema: MappingSchema,
    dialect: str,
    default_catalog: str | None,
    default_schema: str | None,
    own_columns: Sequence[str],
) -> exp.Expr:
    """The statement with every table and column qualified, as DuckDB resolves names."""
    found = survey(statement)
    if found.unscoped:
        raise OpaqueError(f"{found.unscoped} in a CTE or subquery is not a query to trace")
    qualified = qualify(
        statement,
        schema=schema,
        dialect=dialect,
        catalog=default_catalog,
        db=default_schema,
        qualify_columns=False,  # below, once DuckDB's own name resolution has been applied
        validate_qualify_columns=False,
        quote_identifiers=False,  # names are normalised already; quoting costs half of qualify
        identify=False,
    )
    unqualify_file_scans(found)
    if needs_resolution(found, schema):
        resolve_names(qualified, schema=schema, own_columns=own_columns)
    return qualify_columns(qualified, schema)


def _trace(
    qualified: exp.Expr,
    original: list[str],
    *,
    case: Mapping[str, str],
    dialect: str,
    lowered: str,
) -> ModelLineage:
    """Every output column of a qualified query traced to its sources (OpaqueError if not)."""
    root = build_scope(qualified)
    if root is None:
        raise OpaqueError(f"{type(qualified).__name__} is not a query")
    projections = _projections(qualified)
    if "pivot" in lowered and qualified.find(exp.Pivot) is not None:
        raise OpaqueError("this form of PIVOT/UNPIVOT is not supported")
    sets = "columns" in lowered
    if ("*" in lowered or sets) and any(_unexpanded_star(p, sets=sets) for p in projections):
        raise OpaqueError("`*` over a relation whose columns are unknown")
    tracer = Tracer(root)
    names = _restore_case(original, [p.alias_or_name for p in projections], case)
    freeze = _Freezer(case)
    traced = [freeze(tracer.output(root, p.alias_or_name)) for p in projections]
    dataset = freeze(tracer.dataset_inputs())
    generator = Dialect.get_or_raise(dialect).generator()
    edges = [
        ColumnEdge(output=name, inputs=inputs, expression=_text(projection, generator))
        for projection, name, inputs in zip(projections, names, traced, strict=True)
    ]
    return ModelLineage(columns=tuple(edges), dataset=dataset)


def _text(projection: exp.Expr, generator: Generator) -> str:
    """The projection's expression as SQL. Generated without a copy: the tree is not used again."""
    bare = projection.unalias()
    if isinstance(bare, exp.Column):
        return bare.name
    return generator.generate(bare, copy=False)[:500]


def _restore_case(original: list[str], qualified: list[str], case: Mapping[str, str]) -> list[str]:
    """Output names as the query or the schema spells them (OM names are case-sensitive)."""
    written = {n.lower(): n for n in original if n and n != "*"}
    return [written.get(n.lower()) or case.get(n.lower(), n) for n in qualified]


class _Freezer:
    """A model's traced inputs as sorted tuples, its sources spelled as the catalog spells them
    (each source spelled once per model: the same columns feed many outputs)."""

    def __init__(self, case: Mapping[str, str]) -> None:
        self.case = case
        self.spellings: dict[SourceColumn, SourceColumn] = {}

    def __call__(
        self, inputs: Inputs
    ) -> tuple[tuple[SourceColumn, tuple[Transformation, ...]], ...]:
        frozen = []
        for source, transforms in inputs.items():
            spelled = self.spellings.get(source)
            if spelled is None:
                spelled = self.spellings[source] = self._spelled(source)
            frozen.append((spelled, _described(spelled, transforms)))
        return tuple(sorted(frozen))

    def _spelled(self, source: SourceColumn) -> SourceColumn:
        case = self.case
        if source.catalog == "file":
            return SourceColumn(
                "file", "", source.table, case.get(source.column.lower(), source.column)
            )
        return SourceColumn(
            *(
                case.get(p.lower(), p)
                for p in (source.catalog, source.schema, source.table, source.column)
            )
        )


def _described(source: SourceColumn, transforms: set[Transformation]) -> tuple[Transformation, ...]:
    """A field path below the column becomes the description `field column.path`."""
    return tuple(
        sorted(
            t._replace(description=f"field {source.column}.{t.description}") if t.description else t
            for t in transforms
        )
    )


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__
