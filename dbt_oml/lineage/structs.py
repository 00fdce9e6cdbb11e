"""STRUCT and LIST types in DuckDB's select lists: field types, `UNNEST(x[, recursive := true])`
and `struct.*` as the columns DuckDB gives for them.

Pure: works on sqlglot DataTypes (from the schema: catalog.json types such as
`STRUCT(params STRUCT(fixture BIGINT), "source" VARCHAR)`). Column types come from the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from sqlglot import exp

from dbt_oml.lineage.types import OpaqueError

#: A MAP type's parameters: key type, value type.
_MAP_PARAMS: Final = 2

#: The type of a column reference, as the caller resolves it; None when unknown.
ColumnType = Callable[[exp.Column], exp.DataType | None]


def type_of(node: exp.Expr, column_type: ColumnType) -> exp.DataType | None:
    """The type of a struct path over columns, where known: `c.a.b`, `c['a']`,
    `struct_extract(c, 'a')`, `c[1]`, `unnest(c)`, `cast(... as T)`.

    >>> t = exp.DataType.build("STRUCT(a STRUCT(b INT))[]", dialect="duckdb")
    >>> node = exp.Dot(this=exp.Explode(this=exp.column("c")), expression=exp.to_identifier("a"))
    >>> type_of(node, lambda column: t).sql("duckdb")
    'STRUCT(b INT)'
    """
    if isinstance(node, exp.Paren):
        return type_of(node.this, column_type)
    if isinstance(node, exp.Cast):
        return node.to
    if isinstance(node, exp.Column):
        return column_type(node)
    if isinstance(node, exp.Dot):
        return field_type(type_of(node.this, column_type), node.name)
    if isinstance(node, exp.StructExtract) and isinstance(node.expression, exp.Literal):
        return field_type(type_of(node.this, column_type), node.expression.name)
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        return _bracket_type(node, column_type)
    if isinstance(node, exp.Explode):
        return element_type(type_of(node.this, column_type))
    return None


def _bracket_type(node: exp.Bracket, column_type: ColumnType) -> exp.DataType | None:
    """`c['a']` (a field) or `c[1]` (an element)."""
    key = node.expressions[0]
    inner = type_of(node.this, column_type)
    if isinstance(key, exp.Literal) and key.is_string:
        return field_type(inner, key.name)
    return element_type(inner)


def fields(kind: exp.DataType) -> Iterator[tuple[exp.Identifier, exp.DataType]]:
    for column in kind.expressions:
        if isinstance(column, exp.ColumnDef) and isinstance(column.args.get("kind"), exp.DataType):
            yield exp.to_identifier(column.name), column.args["kind"]


def field_type(kind: exp.DataType | None, name: str) -> exp.DataType | None:
    """The type of field `name` of a STRUCT (a MAP's value; JSON stays JSON)."""
    if kind is None:
        return None
    if kind.is_type(exp.DType.JSON):
        return kind
    if kind.is_type(exp.DType.MAP) and len(kind.expressions) == _MAP_PARAMS:
        value = kind.expressions[1]
        return value if isinstance(value, exp.DataType) else None
    if not kind.is_type(exp.DType.STRUCT):
        return None
    lowered = name.lower()
    return next((t for n, t in fields(kind) if n.name.lower() == lowered), None)


def element_type(kind: exp.DataType | None) -> exp.DataType | None:
    if kind is None or not kind.is_type(exp.DType.ARRAY, exp.DType.LIST):
        return None
    inner = kind.expressions[0] if kind.expressions else None
    return inner if isinstance(inner, exp.DataType) else None


def unnest_columns(
    unnest: exp.Explode, kind: exp.DataType | None, *, aliased: bool
) -> list[exp.Expr] | None:
    """The columns `unnest(x)` gives in a select list, when not one column: a STRUCT's fields;
    with `recursive := true` (or `max_depth`), lists unnested and structs expanded to leaves.

    Raises:
        OpaqueError: the type of `x` is unknown and the columns depend on it (`recursive`, or no
            alias saying it is a list).
    """
    options = {
        e.this.name.lower(): e.expression
        for e in unnest.expressions
        if isinstance(e, exp.PropertyEQ) and isinstance(e.this, exp.Identifier)
    }
    flag = options.get("recursive")
    depth = options.get("max_depth")
    lists = int(depth.this) if isinstance(depth, exp.Literal) and depth.is_int else None
    recursive = (isinstance(flag, exp.Boolean) and bool(flag.this)) or lists is not None
    if kind is None:
        if recursive or not aliased:
            raise OpaqueError(
                f"UNNEST({unnest.this.sql(dialect='duckdb')}): its type is unknown, so are the "
                "columns it gives"
            )
        return None  # a list, as the alias says: one column
    if not recursive:
        if not kind.is_type(exp.DType.STRUCT):
            return None
        return _field_columns(unnest.this, kind)
    leaves = list(_leaves(unnest.this.copy(), kind, lists if lists is not None else 1 << 30))
    if not any(isinstance(expression, exp.Dot) for expression, _ in leaves):
        return None  # a list of scalars: one column, as without `recursive`
    return [exp.alias_(expression, _leaf_name(expression)) for expression, _ in leaves]


def struct_star_columns(struct: exp.Expr, kind: exp.DataType | None) -> list[exp.Expr]:
    """DuckDB's `s.*` on a STRUCT column: one column per field.

    Raises:
        OpaqueError: the struct's fields are unknown.
    """
    if kind is None or not kind.is_type(exp.DType.STRUCT):
        raise OpaqueError(f"{struct.sql(dialect='duckdb')}.*: the struct's fields are unknown")
    return _field_columns(struct, kind)


def _field_columns(struct: exp.Expr, kind: exp.DataType) -> list[exp.Expr]:
    return [
        exp.alias_(exp.Dot(this=struct.copy(), expression=name.copy()), name.copy())
        for name, _ in fields(kind)
    ]


def _leaves(
    expression: exp.Expr, kind: exp.DataType, lists: int
) -> Iterator[tuple[exp.Expr, exp.DataType]]:
    """What `unnest(x, recursive := true)` gives: lists unnested (up to `lists` levels), structs
    expanded into their fields, recursively."""
    if kind.is_type(exp.DType.ARRAY, exp.DType.LIST) and lists > 0:
        element = element_type(kind)
        if element is not None:
            yield from _leaves(exp.Explode(this=expression), element, lists - 1)
            return
    if kind.is_type(exp.DType.STRUCT):
        for name, inner in fields(kind):
            yield from _leaves(exp.Dot(this=expression.copy(), expression=name), inner, lists)
        return
    yield expression, kind


def _leaf_name(expression: exp.Expr) -> exp.Identifier:
    while isinstance(expression, exp.Explode):
        expression = expression.this
    if isinstance(expression, exp.Dot | exp.Column):
        return exp.to_identifier(expression.name)
    return exp.to_identifier("unnest")
