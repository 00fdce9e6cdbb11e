"""Small questions name resolution (`resolve`) asks of a sqlglot Scope and its columns: where a
name can bind, a scope's own columns and output names, dotted parts, stars.

Pure: reads the tree; `requalify` rewrites one column in place.
"""

from __future__ import annotations

from typing import TypeGuard

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

#: A relation a name can bind to: a table or a derived table's scope.
Source = exp.Table | Scope
#: The relations of one scope level, by alias.
Level = list[tuple[str, Source]]


def binding_levels(scope: Scope) -> list[Level]:
    """The relations a name can bind to, innermost first (outer ones for correlated scopes)."""
    levels: list[Level] = []
    current: Scope | None = scope
    while current is not None:
        levels.append([(alias, source) for alias, (_, source) in current.selected_sources.items()])
        current = current.parent if current.can_be_correlated else None
    return levels


def scope_columns(scope: Scope) -> list[exp.Column]:
    index = scope.column_index
    return [c for c in scope.columns if id(c) in index and not isinstance(c.this, exp.Star)]


def scope_output_names(scope: Scope) -> set[str]:
    expression = scope.expression
    if isinstance(expression, exp.Unnest):
        alias = expression.args.get("alias")
        return {c.name for c in alias.columns} if isinstance(alias, exp.TableAlias) else set()
    while isinstance(expression, exp.SetOperation):
        expression = expression.this
        while isinstance(expression, exp.Subquery):
            expression = expression.this
    if isinstance(expression, exp.Query):
        return set(expression.named_selects)
    return set()


def column_parts(column: exp.Column) -> list[exp.Identifier]:
    return [p for p in column.parts if isinstance(p, exp.Identifier)]


def requalify(
    column: exp.Column, alias: str, root: exp.Identifier, fields: list[exp.Identifier]
) -> None:
    """`root.f1.f2` of relation `alias` in sqlglot's form: Dot(Dot(alias.root, f1), f2)."""
    qualified = exp.column(root.copy(), table=exp.to_identifier(alias))
    column.replace(exp.Dot.build([qualified, *(f.copy() for f in fields)]) if fields else qualified)


def column_of(parts: list[exp.Identifier]) -> exp.Column:
    """A Column from its dotted parts (at most catalog.db.table.column)."""
    names = ("this", "table", "db", "catalog")
    return exp.Column(**{k: p.copy() for k, p in zip(names, reversed(parts[-4:]), strict=False)})


def is_star(projection: exp.Expr) -> bool:
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )


def is_struct_star(node: exp.Expr, scope: Scope) -> TypeGuard[exp.Column]:
    """`s.*` where `s` is a STRUCT column, not a relation (DuckDB expands it to the fields)."""
    if not (isinstance(node, exp.Column) and isinstance(node.this, exp.Star) and node.table):
        return False
    return all(node.table != alias for level in binding_levels(scope) for alias, _ in level)
