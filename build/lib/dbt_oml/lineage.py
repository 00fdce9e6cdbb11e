"""Column-level lineage of one compiled model, with sqlglot.

Pure: no I/O, no environment, no logging setup. Per model the SQL is parsed once, qualified once
against a MappingSchema (which expands `*`), scoped once, and every output column is traced in one
walk with per-model memoisation. The result is conservative: SQL that does not parse, a `*` over a
relation whose columns are unknown, or a reference that does not resolve raises LineageError and
the caller keeps the model's table-level lineage only. An edge never points at a CTE or alias.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Final, NamedTuple

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.generator import Generator
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope, walk_in_scope
from sqlglot.schema import MappingSchema

from dbt_oml.errors import LineageError

#: Bumped whenever answers may change, so cached results are not reused across versions.
ENGINE_VERSION: Final = "2"

DIRECT, INDIRECT = "DIRECT", "INDIRECT"
_HASHES = frozenset({"md5", "sha1", "sha256", "sha2", "sha512", "hash", "md5_number"})
_DATASET_CLAUSES: Final = (
    ("joins", "JOIN"),
    ("where", "FILTER"),
    ("group", "GROUP_BY"),
    ("having", "FILTER"),
    ("qualify", "FILTER"),
    ("order", "SORT"),
    ("distinct", "GROUP_BY"),
)


class SourceColumn(NamedTuple):
    """A column of a real relation (or of a file: catalog "file", schema "", table = path).

    A NamedTuple rather than a dataclass: millions are built on large projects.
    """

    catalog: str
    schema: str
    table: str
    column: str

    @property
    def relation(self) -> tuple[str, str, str]:
        return (self.catalog, self.schema, self.table)


class Transformation(NamedTuple):
    """OpenLineage ColumnLineageDatasetFacet 1-2-0 transformation of one input field."""

    type: str
    subtype: str
    masking: bool = False


@dataclass(frozen=True, slots=True)
class ColumnEdge:
    """One output column and every source column its value or shape depends on."""

    output: str
    inputs: tuple[tuple[SourceColumn, tuple[Transformation, ...]], ...]
    expression: str = ""
    """The output's expression in the final SELECT (OpenMetadata shows it as the function)."""


@dataclass(frozen=True, slots=True)
class ModelLineage:
    """The column lineage of one model: per output column, plus dataset-level INDIRECT inputs."""

    columns: tuple[ColumnEdge, ...]
    dataset: tuple[tuple[SourceColumn, tuple[Transformation, ...]], ...] = ()

    def by_output(self) -> dict[str, ColumnEdge]:
        return {edge.output: edge for edge in self.columns}


_IDENTITY = Transformation(DIRECT, "IDENTITY")
_Inputs = dict[SourceColumn, set[Transformation]]


class _OpaqueError(Exception):
    """Raised inside the walk; turned into LineageError at the boundary."""


@cache
def compose(outer: Transformation, inner: Transformation) -> Transformation:
    """The transformation of an input seen through two hops (outer applied to inner).

    >>> compose(Transformation("DIRECT", "IDENTITY"), Transformation("DIRECT", "AGGREGATION"))
    Transformation(type='DIRECT', subtype='AGGREGATION', masking=False)
    >>> compose(Transformation("INDIRECT", "FILTER"), Transformation("DIRECT", "IDENTITY")).subtype
    'FILTER'
    """
    masking = outer.masking or inner.masking
    if outer.type == INDIRECT:
        return Transformation(INDIRECT, outer.subtype, masking)
    if inner.type == INDIRECT:
        return Transformation(INDIRECT, inner.subtype, masking)
    for subtype in ("AGGREGATION", "TRANSFORMATION"):
        if subtype in (outer.subtype, inner.subtype):
            return Transformation(DIRECT, subtype, masking)
    return Transformation(DIRECT, "IDENTITY", masking)


def _hash_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return node.sql_name().lower() if isinstance(node, exp.Func) else ""


def _context(column: exp.Expr, root: exp.Expr) -> Transformation:
    """How the value of `column` reaches the value of `root` (a projection)."""
    subtype, kind, masking = None, DIRECT, False
    child, node = column, column.parent
    while node is not None and child is not root:
        if isinstance(node, exp.Window) and child is not node.this:
            return Transformation(INDIRECT, "WINDOW", masking)
        if isinstance(node, exp.Filter) and child is node.expression:
            return Transformation(INDIRECT, "FILTER", masking)
        if isinstance(node, exp.If) and child is node.this:
            return Transformation(INDIRECT, "CONDITIONAL", masking)
        if isinstance(node, exp.Case) and child is node.this:
            return Transformation(INDIRECT, "CONDITIONAL", masking)
        if isinstance(node, exp.AggFunc):
            subtype = "AGGREGATION"
        if _hash_name(node) in _HASHES or isinstance(node, exp.MD5 | exp.SHA | exp.SHA2):
            masking = True
        child, node = node, node.parent
    if subtype is None:
        bare = root.this if isinstance(root, exp.Alias) else root
        subtype = "IDENTITY" if bare is column else "TRANSFORMATION"
    return Transformation(kind, subtype, masking)


def _own_columns(node: exp.Expr, select: exp.Expr) -> Iterator[exp.Column]:
    """Columns of `node` that belong to `select` itself (not to a nested subquery)."""
    for column in node.find_all(exp.Column):
        if column.find_ancestor(exp.Select) is select and not isinstance(column.this, exp.Star):
            yield column


@dataclass
class _Tracer:
    """Traces the columns of one model's scopes; memoised per model (never across models)."""

    root: Scope
    memo: dict[tuple[int, str], _Inputs] = field(default_factory=dict)
    active: set[tuple[int, str]] = field(default_factory=set)
    _owned: dict[int, frozenset[int]] = field(default_factory=dict)

    def owned(self, scope: Scope) -> frozenset[int]:
        """ids of the columns that belong to `scope` itself (not to nested subqueries)."""
        found = self._owned.get(id(scope))
        if found is None:
            found = frozenset(
                id(n) for n in walk_in_scope(scope.expression) if isinstance(n, exp.Column)
            )
            self._owned[id(scope)] = found
        return found

    # -- resolution ----------------------------------------------------------------------

    def _source(self, scope: Scope, table: str) -> exp.Expr | Scope | None:
        current: Scope | None = scope
        while current is not None:
            found = current.sources.get(table)
            if found is not None:
                return found
            current = current.parent
        return None

    def _leaf(self, table: exp.Table, column: str) -> SourceColumn:
        target = table.this
        if isinstance(target, exp.Func):
            args = (
                [target.this, *target.expressions]
                if isinstance(target.this, exp.Expr)
                else list(target.expressions)
            )
            path = next((a.this for a in args if isinstance(a, exp.Literal) and a.is_string), None)
            if path is None:
                raise _OpaqueError(f"table function {target.sql_name()} reads no literal path")
            return SourceColumn("file", "", path, column)
        if not table.args.get("db") and (
            "/" in table.name or "://" in table.name or "." in table.name
        ):
            return SourceColumn("file", "", table.name, column)
        return SourceColumn(table.catalog, table.db, table.name, column)

    def column_inputs(self, scope: Scope, column: exp.Column) -> _Inputs:
        if not column.table:
            raise _OpaqueError(f"column {column.name!r} could not be attributed to a relation")
        source = self._source(scope, column.table)
        if isinstance(source, exp.Table):
            return {self._leaf(source, column.name): {_IDENTITY}}
        if isinstance(source, Scope):
            if isinstance(source.expression, exp.Unnest):
                return self._expression_inputs(source.parent or scope, source.expression)
            return self.output(source, column.name)
        raise _OpaqueError(f"{column.sql()} refers to an unknown relation {column.table!r}")

    # -- projections ---------------------------------------------------------------------

    def output(self, scope: Scope, name: str) -> _Inputs:
        key = (id(scope), name)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:
            raise _OpaqueError(f"recursive reference to {name!r}")
        self.active.add(key)
        try:
            result = self._output(scope, name)
        finally:
            self.active.discard(key)
        self.memo[key] = result
        return result

    def _output(self, scope: Scope, name: str) -> _Inputs:
        expression = scope.expression
        if isinstance(expression, exp.SetOperation):
            return self._set_output(scope, name)
        if not isinstance(expression, exp.Select):
            raise _OpaqueError(f"unsupported scope {type(expression).__name__}")
        for projection in expression.selects:
            if projection.alias_or_name == name:
                return self._expression_inputs(scope, projection)
        raise _OpaqueError(f"no column {name!r} in a subquery or CTE")

    def _set_output(self, scope: Scope, name: str) -> _Inputs:
        operation = scope.expression
        left, right = scope.set_operation_scopes
        left_names = _names(left)
        merged: _Inputs = {}
        if operation.args.get("by_name"):
            branches = [(b, name) for b in (left, right) if name in _names(b)]
        else:
            if name not in left_names:
                raise _OpaqueError(f"no column {name!r} in a set operation")
            position = left_names.index(name)
            right_names = _names(right)
            if position >= len(right_names):
                raise _OpaqueError("set operation branches differ in width")
            branches = [(left, name), (right, right_names[position])]
        for branch, branch_name in branches:
            _merge(merged, self.output(branch, branch_name))
        return merged

    def _expression_inputs(self, scope: Scope, projection: exp.Expr) -> _Inputs:
        select = scope.expression
        merged: _Inputs = {}
        found: list[tuple[exp.Expr, Transformation | None]] = []
        subqueries: list[exp.Subquery] = []
        for node in projection.walk():  # one pass: columns, named windows, scalar subqueries
            if isinstance(node, exp.Column):
                found.append((node, None))
            elif isinstance(node, exp.Window):
                spec = _named_window(select, node)  # WINDOW w AS (...) lives outside the select
                if spec is not None:
                    found += [
                        (c, Transformation(INDIRECT, "WINDOW")) for c in spec.find_all(exp.Column)
                    ]
            elif isinstance(node, exp.Subquery):
                subqueries.append(node)
        owned = self.owned(scope)
        for column, fixed in found:
            if isinstance(column.this, exp.Star) or id(column) not in owned:
                continue
            context = fixed or _context(column, projection)
            for source, transforms in self.column_inputs(scope, column).items():  # type: ignore[arg-type]
                merged.setdefault(source, set()).update(compose(context, t) for t in transforms)
        for subquery in subqueries:
            child = _child_scope(scope, subquery.this)
            if child is None or subquery.find_ancestor(exp.Select) is not select:
                continue
            context = _context(subquery, projection)
            for name in _names(child)[:1]:
                for source, transforms in self.output(child, name).items():
                    merged.setdefault(source, set()).update(compose(context, t) for t in transforms)
        return merged

    # -- dataset-level -------------------------------------------------------------------

    def dataset_inputs(self) -> _Inputs:
        merged: _Inputs = {}
        for scope in self.root.traverse():
            select = scope.expression
            if not isinstance(select, exp.Select):
                continue
            for clause, subtype in _DATASET_CLAUSES:
                value = select.args.get(clause)
                marker = Transformation(INDIRECT, subtype)
                for node in value if isinstance(value, list) else [value] if value else []:
                    found: _Inputs = {}
                    for column in _clause_columns(node, select):
                        _merge(found, self._clause_column(scope, column))
                    for subquery in node.find_all(exp.Select):  # IN (select ...), EXISTS (...)
                        child = _child_scope(scope, subquery)
                        if child is not None:
                            for name in _names(child):
                                _merge(found, self.output(child, name))
                    for source, transforms in found.items():
                        merged.setdefault(source, set()).update(
                            compose(marker, t) for t in transforms
                        )
        return merged

    def _clause_column(self, scope: Scope, column: exp.Column) -> _Inputs:
        if not column.table:  # ORDER BY / GROUP BY an output alias
            for projection in _selects(scope.expression):
                if projection.alias_or_name == column.name:
                    return self._expression_inputs(scope, projection)
        return self.column_inputs(scope, column)


def _selects(expression: exp.Expr) -> list[exp.Expr]:
    return list(expression.selects) if isinstance(expression, exp.Query) else []


def _merge(into: _Inputs, other: Mapping[SourceColumn, set[Transformation]]) -> None:
    for source, transforms in other.items():
        into.setdefault(source, set()).update(transforms)


def _names(scope: Scope) -> list[str]:
    expression = scope.expression
    while isinstance(expression, exp.SetOperation):
        expression = expression.this
        while isinstance(expression, exp.Subquery):
            expression = expression.this
    return (
        [s.alias_or_name for s in expression.selects] if isinstance(expression, exp.Select) else []
    )


def _named_window(select: exp.Expr, window: exp.Window) -> exp.Expr | None:
    if window.args.get("partition_by") or window.args.get("order"):
        return None
    alias = window.args.get("alias")
    name = alias.name if isinstance(alias, exp.Identifier) else None
    for spec in select.args.get("windows") or []:
        if name is not None and spec.name == name:
            return spec  # type: ignore[no-any-return]
    return None


def _child_scope(scope: Scope, expression: exp.Expr) -> Scope | None:
    for child in scope.subquery_scopes:
        if child.expression is expression:
            return child
    return None


def _clause_columns(node: exp.Expr, select: exp.Expr) -> Iterable[exp.Column]:
    if isinstance(node, exp.Join):
        condition = node.args.get("on")
        return list(_own_columns(condition, select)) if condition is not None else []
    if isinstance(node, exp.Order) and any(
        isinstance(o.this, exp.Var) and o.this.name.upper() == "ALL" for o in node.expressions
    ):
        return [c for p in _selects(select) for c in _own_columns(p, select)]
    if isinstance(node, exp.Group) and node.args.get("all"):
        return [
            c for p in _selects(select) if not p.find(exp.AggFunc) for c in _own_columns(p, select)
        ]
    return list(_own_columns(node, select))


def _schema_case(schema: Mapping[str, object]) -> dict[str, str]:
    out: dict[str, str] = {}

    def walk(node: object) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                out.setdefault(str(key).lower(), str(key))
                if isinstance(value, Mapping):
                    walk(value)

    walk(schema)
    return out


def build_schema(tables: Mapping[str, object], *, dialect: str) -> MappingSchema:
    """A MappingSchema for sqlglot from {catalog: {schema: {table: {column: type}}}}; build once."""
    return MappingSchema(dict(tables), dialect=dialect)


def _unexpanded_star(projection: exp.Expr) -> bool:
    bare = projection.unalias()
    if isinstance(bare, exp.Star | exp.Columns):
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


def _expand_columns(expression: exp.Expr, schema: MappingSchema) -> None:
    """DuckDB's COLUMNS('regex') over real tables, expanded in place with the schema."""
    for columns in list(expression.find_all(exp.Columns)):
        select = columns.find_ancestor(exp.Select)
        pattern = columns.this
        if select is None or not (isinstance(pattern, exp.Literal) and pattern.is_string):
            continue
        tables = [t for t in select.find_all(exp.Table) if t.find_ancestor(exp.Select) is select]
        regex = re.compile(pattern.this)
        replacement = [
            exp.column(name, table=table.alias_or_name)
            for table in tables
            for name in schema.column_names(table, dialect=schema.dialect)
            if regex.search(name)
        ]
        target = columns.parent if isinstance(columns.parent, exp.Alias) else columns
        if replacement and target.parent is select:
            index = select.expressions.index(target)
            select.set(
                "expressions",
                [*select.expressions[:index], *replacement, *select.expressions[index + 1 :]],
            )


def column_lineage(
    sql: str,
    *,
    schema: MappingSchema,
    dialect: str = "duckdb",
    unique_id: str = "<sql>",
    default_catalog: str | None = None,
    default_schema: str | None = None,
    case: Mapping[str, str] | None = None,
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

    Raises:
        LineageError: the model is opaque (unparseable SQL, unknown `*`, an unresolved name).

    >>> s = build_schema({"w": {"m": {"t": {"id": "INT", "amount": "DOUBLE"}}}}, dialect="duckdb")
    >>> sql = "with s as (select * from w.m.t) select id, amount * 2 as a2 from s"
    >>> lin = column_lineage(sql, schema=s)
    >>> [(e.output, [i.column for i, _ in e.inputs]) for e in lin.columns]
    [('id', ['id']), ('a2', ['amount'])]
    """
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
    original = [p.alias_or_name for p in _projections(statements[0])]
    try:
        qualified = qualify(
            statements[0],
            schema=schema,
            dialect=dialect,
            catalog=default_catalog,
            db=default_schema,
            validate_qualify_columns=False,
            quote_identifiers=False,  # names are normalised already; quoting costs half of qualify
            identify=False,
        )
        lowered = sql.lower()
        if "columns(" in lowered:
            _expand_columns(qualified, schema)
        root = build_scope(qualified)
        if root is None:
            raise _OpaqueError(f"{type(qualified).__name__} is not a query")
        projections = _projections(qualified)
        if "pivot" in lowered and qualified.find(exp.Pivot) is not None:
            raise _OpaqueError("PIVOT/UNPIVOT is not supported")
        if "*" in lowered and any(_unexpanded_star(p) for p in projections):
            raise _OpaqueError("`*` over a relation whose columns are unknown")
        tracer = _Tracer(root)
        names = _restore_case(original, [p.alias_or_name for p in projections], case or {})
        traced = [_freeze(tracer.output(root, p.alias_or_name), case or {}) for p in projections]
        dataset = _freeze(tracer.dataset_inputs(), case or {})
        generator = Dialect.get_or_raise(dialect).generator()
        edges = [
            ColumnEdge(output=name, inputs=inputs, expression=_text(projection, generator))
            for projection, name, inputs in zip(projections, names, traced, strict=True)
        ]
    except _OpaqueError as e:
        raise LineageError(unique_id=unique_id, reason=str(e)) from None
    except SqlglotError as e:
        raise LineageError(unique_id=unique_id, reason=_first_line(e)) from e
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


def _freeze(
    inputs: _Inputs, case: Mapping[str, str]
) -> tuple[tuple[SourceColumn, tuple[Transformation, ...]], ...]:
    def spelled(source: SourceColumn) -> SourceColumn:
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

    return tuple(sorted((spelled(s), tuple(sorted(t))) for s, t in inputs.items()))


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__


def schema_case(tables: Mapping[str, object]) -> dict[str, str]:
    """lower-case -> original spelling of every catalog, schema, table and column name."""
    return _schema_case(tables)
