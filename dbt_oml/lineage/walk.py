"""The walk over one model's sqlglot scopes: output columns and row-shaping columns to sources.

Pure: works on a qualified, scoped tree; memoised per model (never across models, whose trees
are garbage-collected). Raises OpaqueError when a reference cannot be resolved.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, find_all_in_scope

from dbt_oml.lineage.generated import is_generated
from dbt_oml.lineage.types import (
    DIRECT,
    IDENTITY,
    INDIRECT,
    OpaqueError,
    SourceColumn,
    Transformation,
    compose,
)

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
Inputs = dict[SourceColumn, set[Transformation]]


def _hash_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return node.sql_name().lower() if isinstance(node, exp.Func) else ""


def _context(column: exp.Expr, root: exp.Expr) -> Transformation:
    """How the value of `column` reaches the value of `root` (a projection)."""
    if column is root or (column.parent is root and type(root) is exp.Alias):
        return IDENTITY  # `a.x` or `a.x as y`: most projections
    subtype, kind, masking = None, DIRECT, False
    path = ".".join(_field_path(column))
    child, node = column, column.parent
    while node is not None and child is not root:
        if isinstance(node, exp.Window) and child is not node.this:
            return Transformation(INDIRECT, "WINDOW", masking, path)
        if isinstance(node, exp.Filter) and child is node.expression:
            return Transformation(INDIRECT, "FILTER", masking, path)
        if isinstance(node, exp.If) and child is node.this:
            return Transformation(INDIRECT, "CONDITIONAL", masking, path)
        if isinstance(node, exp.Case) and child is node.this:
            return Transformation(INDIRECT, "CONDITIONAL", masking, path)
        if isinstance(node, exp.AggFunc):
            subtype = "AGGREGATION"
        if _hash_name(node) in _HASHES or isinstance(node, exp.MD5 | exp.SHA | exp.SHA2):
            masking = True
        child, node = node, node.parent
    if subtype is None:
        bare = root.this if isinstance(root, exp.Alias) else root
        # `unnest([a, b])` (an UNPIVOT's value column): each value is one of the columns, as is
        unnested = isinstance(bare, exp.Explode) and column.parent is bare.this
        subtype = "IDENTITY" if bare is column or unnested else "TRANSFORMATION"
    return Transformation(kind, subtype, masking, path)


def _field_path(column: exp.Expr) -> list[str]:
    """The struct fields / JSON keys extracted right above a column: `_meta.params.fixture`,
    `_meta['params']`, `struct_extract(_meta, 'params')`, `j->'$.a.b'`, `j->>'a'`."""
    parts: list[str] = []
    child, node = column, column.parent
    while node is not None and child is node.this:
        if isinstance(node, exp.Dot):
            parts.append(node.name)
        elif isinstance(node, exp.Bracket | exp.StructExtract):
            keys = node.expressions if isinstance(node, exp.Bracket) else [node.expression]
            if len(keys) != 1 or not (isinstance(keys[0], exp.Literal) and keys[0].is_string):
                break
            parts.append(keys[0].name)
        elif isinstance(node, exp.JSONExtract | exp.JSONExtractScalar):
            json_keys = _json_keys(node.expression)
            if json_keys is None:
                break
            parts += json_keys
        elif not isinstance(node, exp.Explode):
            break
        child, node = node, node.parent
    return parts


def _json_keys(path: exp.Expr | None) -> list[str] | None:
    if not isinstance(path, exp.JSONPath):
        return None
    keys: list[str] = []
    for part in path.expressions:
        if isinstance(part, exp.JSONPathKey) and isinstance(part.this, str):
            keys.append(part.this)
        elif isinstance(part, exp.JSONPathSubscript):
            keys.append(f"[{part.this}]")
        elif not isinstance(part, exp.JSONPathRoot):
            return None
    return keys


def _own_columns(node: exp.Expr, select: exp.Expr) -> Iterator[exp.Column]:
    """Columns of `node` that belong to `select` itself (not to a nested subquery)."""
    for column in node.find_all(exp.Column):
        if column.find_ancestor(exp.Select) is select and not isinstance(column.this, exp.Star):
            yield column


@dataclass
class Tracer:
    """Traces the columns of one model's scopes; memoised per model (never across models)."""

    root: Scope
    memo: dict[tuple[int, str], Inputs] = field(default_factory=dict)
    active: set[tuple[int, str]] = field(default_factory=set)
    _owned: dict[int, frozenset[int]] = field(default_factory=dict)

    def owned(self, scope: Scope) -> frozenset[int]:
        """ids of the columns that belong to `scope` itself (not to nested subqueries)."""
        found = self._owned.get(id(scope))
        if found is None:
            found = frozenset(map(id, find_all_in_scope(scope.expression, exp.Column)))
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
                raise OpaqueError(f"table function {target.sql_name()} reads no literal path")
            return SourceColumn("file", "", path, column)
        if not table.args.get("db") and (
            "/" in table.name or "://" in table.name or "." in table.name
        ):
            return SourceColumn("file", "", table.name, column)
        return SourceColumn(table.catalog, table.db, table.name, column)

    def column_inputs(self, scope: Scope, column: exp.Column) -> Inputs:
        if not column.table:
            raise OpaqueError(f"column {column.name!r} could not be attributed to a relation")
        source = self._source(scope, column.table)
        if isinstance(source, exp.Table):
            if is_generated(source):
                return self._generated(scope, source)
            return {self._leaf(source, column.name): {IDENTITY}}
        if isinstance(source, Scope):
            if isinstance(source.expression, exp.Unnest):
                return self._expression_inputs(source.parent or scope, source.expression)
            return self.output(source, column.name)
        raise OpaqueError(f"{column.sql()} refers to an unknown relation {column.table!r}")

    def _generated(self, scope: Scope, table: exp.Table) -> Inputs:
        """A generated column derives from the columns in the function's arguments (none for
        constants: `generate_series(1, 10)`, a date spine)."""
        merged: Inputs = {}
        derived = Transformation(DIRECT, "TRANSFORMATION")
        for column in table.this.find_all(exp.Column):
            for source, transforms in self.column_inputs(scope, column).items():
                merged.setdefault(source, set()).update(compose(derived, t) for t in transforms)
        return merged

    # -- projections ---------------------------------------------------------------------

    def output(self, scope: Scope, name: str) -> Inputs:
        key = (id(scope), name)
        if key in self.memo:
            return self.memo[key]
        if key in self.active:
            raise OpaqueError(f"recursive reference to {name!r}")
        self.active.add(key)
        try:
            result = self._output(scope, name)
        finally:
            self.active.discard(key)
        self.memo[key] = result
        return result

    def _output(self, scope: Scope, name: str) -> Inputs:
        expression = scope.expression
        if isinstance(expression, exp.SetOperation):
            return self._set_output(scope, name)
        if not isinstance(expression, exp.Select):
            raise OpaqueError(f"unsupported scope {type(expression).__name__}")
        for projection in expression.selects:
            if projection.alias_or_name == name:
                return self._expression_inputs(scope, projection)
        raise OpaqueError(f"no column {name!r} in a subquery or CTE")

    def _set_output(self, scope: Scope, name: str) -> Inputs:
        operation = scope.expression
        left, right = scope.set_operation_scopes
        left_names = output_names(left)
        merged: Inputs = {}
        if operation.args.get("by_name"):
            branches = [(b, name) for b in (left, right) if name in output_names(b)]
        else:
            if name not in left_names:
                raise OpaqueError(f"no column {name!r} in a set operation")
            position = left_names.index(name)
            right_names = output_names(right)
            if position >= len(right_names):
                raise OpaqueError("set operation branches differ in width")
            branches = [(left, name), (right, right_names[position])]
        for branch, branch_name in branches:
            merge(merged, self.output(branch, branch_name))
        return merged

    def _expression_inputs(self, scope: Scope, projection: exp.Expr) -> Inputs:
        select = scope.expression
        merged: Inputs = {}
        found, subqueries = _projection_parts(select, projection)
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
            for name in output_names(child)[:1]:
                for source, transforms in self.output(child, name).items():
                    merged.setdefault(source, set()).update(compose(context, t) for t in transforms)
        return merged

    # -- dataset-level -------------------------------------------------------------------

    def dataset_inputs(self) -> Inputs:
        merged: Inputs = {}
        for scope in self.root.traverse():
            select = scope.expression
            if not isinstance(select, exp.Select):
                continue
            for clause, subtype in _DATASET_CLAUSES:
                value = select.args.get(clause)
                marker = Transformation(INDIRECT, subtype)
                for node in value if isinstance(value, list) else [value] if value else []:
                    found: Inputs = {}
                    for column in _clause_columns(node, select):
                        merge(found, self._clause_column(scope, column))
                    for subquery in node.find_all(exp.Select):  # IN (select ...), EXISTS (...)
                        child = _child_scope(scope, subquery)
                        if child is not None:
                            for name in output_names(child):
                                merge(found, self.output(child, name))
                    for source, transforms in found.items():
                        merged.setdefault(source, set()).update(
                            compose(marker, t) for t in transforms
                        )
        return merged

    def _clause_column(self, scope: Scope, column: exp.Column) -> Inputs:
        if not column.table:  # ORDER BY / GROUP BY an output alias
            for projection in selects(scope.expression):
                if projection.alias_or_name == column.name:
                    return self._expression_inputs(scope, projection)
        return self.column_inputs(scope, column)


def selects(expression: exp.Expr) -> list[exp.Expr]:
    return list(expression.selects) if isinstance(expression, exp.Query) else []


def merge(into: Inputs, other: Mapping[SourceColumn, set[Transformation]]) -> None:
    for source, transforms in other.items():
        into.setdefault(source, set()).update(transforms)


def output_names(scope: Scope) -> list[str]:
    expression = scope.expression
    while isinstance(expression, exp.SetOperation):
        expression = expression.this
        while isinstance(expression, exp.Subquery):
            expression = expression.this
    return (
        [s.alias_or_name for s in expression.selects] if isinstance(expression, exp.Select) else []
    )


def _projection_parts(
    select: exp.Expr, projection: exp.Expr
) -> tuple[list[tuple[exp.Expr, Transformation | None]], list[exp.Subquery]]:
    """In one pass over a projection: its columns (a named window's as INDIRECT WINDOW, the
    rest with no fixed transformation) and its scalar subqueries."""
    bare = projection.this if isinstance(projection, exp.Alias) else projection
    if isinstance(bare, exp.Column):  # most projections: nothing below a column but its name
        return [(bare, None)], []
    found: list[tuple[exp.Expr, Transformation | None]] = []
    subqueries: list[exp.Subquery] = []
    for node in projection.find_all(exp.Column, exp.Window, exp.Subquery):  # in walk order
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
    return found, subqueries


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
        return [c for p in selects(select) for c in _own_columns(p, select)]
    if isinstance(node, exp.Group) and node.args.get("all"):
        return [
            c for p in selects(select) if not p.find(exp.AggFunc) for c in _own_columns(p, select)
        ]
    return list(_own_columns(node, select))
