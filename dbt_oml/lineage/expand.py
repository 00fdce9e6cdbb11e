"""DuckDB's column sets rewritten into the columns they stand for, before sqlglot qualifies the
query: PIVOT/UNPIVOT become the selects DuckDB evaluates them as (`lineage.pivots`), and
COLUMNS(...) and `* LIKE 'p%'` the columns they name (`lineage.colsets`). Innermost first, and a
CTE before the queries that read it, so each rewrite sees the columns of what it reads.

Pure: rewrites one model's parsed tree; the columns of a FROM clause come from the schema (or,
for the model's own output over a relation nobody described, its catalog columns).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from sqlglot import exp

from dbt_oml.lineage.colsets import (
    Available,
    Col,
    Context,
    from_columns,
    is_star_filter,
    select_columns,
    visible_ctes,
)
from dbt_oml.lineage.pivots import rewrite_pivot
from dbt_oml.lineage.types import OpaqueError

#: The text of SQL that may hold a column set (checked before any tree walk).
_MAY_HOLD: Final = re.compile(
    r"pivot|columns\s*\(|\*(?:\s*exclude\s*(?:\([^)]*\)|\w+))?\s*(?:not\s+)?(?:i?like|glob|similar)\b"
)
#: Clauses whose COLUMNS(...) DuckDB expands into one condition per column, joined with AND.
_CONDITIONS: Final = ("where", "having", "qualify")


def may_hold_sets(lowered: str) -> bool:
    """Whether lower-cased SQL may hold PIVOT, UNPIVOT, COLUMNS(...) or a `*` filter."""
    return _MAY_HOLD.search(lowered) is not None


def expand_sets(tree: exp.Expr, ctx: Context) -> exp.Expr:
    """`tree` with every PIVOT, UNPIVOT, COLUMNS(...) and `* LIKE` rewritten; the new root.

    Raises:
        OpaqueError: a set whose columns are unknown, or a form DuckDB allows and this does not
            evaluate (the model keeps its table-level lineage).
    """
    root = tree
    for identifier in tree.find_all(exp.Identifier):
        ctx.written.setdefault(identifier.name.lower(), identifier.name)
    for node in _targets(tree):
        if node.root() is not root:
            continue  # replaced by an earlier rewrite
        if isinstance(node, exp.Pivot):
            replaced = rewrite_pivot(node, ctx=ctx, output=output_relation(root))
            root = replaced if replaced is not None else root
        else:
            _expand_select(node, ctx, output=output_relation(root) is node)
    return root


def output_relation(tree: exp.Expr) -> exp.Expr:
    """The relation whose columns are the model's: the root, or what its `select *` (through
    `select *` CTEs and subqueries) reads; a PIVOT's source table when a PIVOT is attached.
    `* REPLACE (...)` passes the same names on, in the same order, so it counts as a `*`."""
    node = tree
    while isinstance(node, exp.Select) and _plain_star(node):
        source = node.args["from_"].this
        if source.args.get("pivots"):
            return source  # type: ignore[no-any-return]
        if isinstance(source, exp.Subquery):
            node = source.this
        elif isinstance(source, exp.Table) and not source.args.get("db"):
            named = {c.alias_or_name.lower(): c for c in visible_ctes(node)}
            cte = named.get(source.name.lower())
            if cte is None:
                break
            node = cte.this
        else:
            break
    return node


def _plain_star(select: exp.Select) -> bool:
    projections = select.expressions
    return (
        len(projections) == 1
        and isinstance(projections[0], exp.Star)
        and not any(v for k, v in projections[0].args.items() if k != "replace")
        and isinstance(select.args.get("from_"), exp.From)
        and not select.args.get("joins")
        and not select.args.get("group")
    )


def _targets(tree: exp.Expr) -> list[exp.Pivot | exp.Select]:
    """The pivots, and the selects that own a COLUMNS(...) or a `*` filter, children before
    parents and a WITH before the query it belongs to (each rewrite sees what it reads done)."""
    out: list[exp.Expr] = []
    owners: set[int] = set()
    stack: list[tuple[exp.Expr, bool]] = [(tree, False)]
    while stack:
        node, done = stack.pop()
        if done:
            out.append(node)
            continue
        if isinstance(node, exp.Columns):
            owners.add(id(node.find_ancestor(exp.Select, exp.Pivot)))
        elif isinstance(node, exp.Select) and any(is_star_filter(p) for p in node.expressions):
            owners.add(id(node))
        elif isinstance(node, exp.Star) and any(
            not isinstance(e, exp.Column) for e in node.args.get("except_") or []
        ):  # `* EXCLUDE x LIKE 'p'`: sqlglot reads the LIKE into the EXCLUDE list
            raise OpaqueError("`* EXCLUDE x LIKE ...` without parentheses is misread by the parser")
        stack.append((node, True))
        children = list(node.iter_expressions())
        with_ = node.args.get("with_")
        if isinstance(with_, exp.With):
            children = [with_, *(c for c in children if c is not with_)]
        stack.extend((c, False) for c in reversed(children))
    return [
        n
        for n in out
        if isinstance(n, exp.Pivot) or (isinstance(n, exp.Select) and id(n) in owners)
    ]


# -- COLUMNS(...) and `* LIKE` in one select ---------------------------------------------------


def _owned_sets(node: exp.Expr, select: exp.Select) -> Iterator[exp.Columns]:
    for found in node.find_all(exp.Columns):
        if found.find_ancestor(exp.Select, exp.Pivot) is select:
            yield found


def _expand_select(select: exp.Select, ctx: Context, *, output: bool) -> None:
    owned = list(_owned_sets(select, select))
    filters = [p for p in select.expressions if is_star_filter(p)]
    if not owned and not filters:
        return
    available = from_columns(select, ctx)
    if available is None:
        available = _own_available(select, ctx, output=output)
    projections: list[exp.Expr] = []
    for projection in select.expressions:
        if is_star_filter(projection):
            for i in select_columns(projection, available, ctx):
                column = available[i]
                projections.append(
                    exp.alias_(column.expression, ctx.name(ctx.spelled(column.name)))
                )
            continue
        sets = list(_owned_sets(projection, select))
        projections += _expand(projection, sets, available, ctx) if sets else [projection]
    select.set("expressions", projections)
    for key in _CONDITIONS:
        clause = select.args.get(key)
        if not isinstance(clause, exp.Expr):
            continue
        sets = list(_owned_sets(clause, select))
        if sets:
            clause.set("this", exp.and_(*_expand(clause.this, sets, available, ctx, named=False)))
    left = next(_owned_sets(select, select), None)
    if left is not None:
        raise OpaqueError(f"{left.sql(dialect='duckdb')[:80]} in this clause is not supported")


def _own_available(select: exp.Select, ctx: Context, *, output: bool) -> Available:
    """A model's only projection `COLUMNS(...)` over one relation nobody described: the model's
    catalog columns are the ones it named (each checked against it below)."""
    projections = select.expressions
    single = len(projections) == 1 and not select.args.get("joins")
    spec = projections[0] if single else None
    if spec is None or not output or not ctx.own_columns:
        shown = next(iter(select.find_all(exp.Columns)), spec)
        what = shown.sql(dialect="duckdb")[:80] if shown is not None else "COLUMNS(...)"
        raise OpaqueError(f"{what} over a relation whose columns are unknown")
    available = [
        Col(c.lower(), exp.column(exp.to_identifier(c.lower())), "") for c in ctx.own_columns
    ]
    if len(select_columns(spec, available, ctx)) != len(available):
        raise OpaqueError("the model's catalog columns are not the ones its COLUMNS(...) names")
    return available


def _expand(
    node: exp.Expr,
    sets: list[exp.Columns],
    available: Available,
    ctx: Context,
    *,
    named: bool = True,
) -> list[exp.Expr]:
    """One expression per column a COLUMNS(...) names (several COLUMNS in one expression go in
    step); `*COLUMNS(...)` becomes the named columns as arguments, in place."""
    for unpack in [s for s in sets if s.args.get("unpack")]:
        _unpack(unpack, [available[i].expression for i in select_columns(unpack, available, ctx)])
    sets = [s for s in sets if not s.args.get("unpack")]
    if not sets:
        return [node]
    matches = [select_columns(s, available, ctx) for s in sets]
    widths = {len(m) for m in matches}
    if len(widths) != 1 or 0 in widths:
        why = "names no column" if 0 in widths else "and another COLUMNS(...) name different counts"
        raise OpaqueError(f"{sets[0].sql(dialect='duckdb')[:80]} {why}")
    positions = [i for i, n in enumerate(node.find_all(exp.Columns)) if n in sets]
    out: list[exp.Expr] = []
    for row in range(widths.pop()):
        copy = node.copy()
        found = list(copy.find_all(exp.Columns))
        for k, position in enumerate(positions):
            column = available[matches[k][row]].expression.copy()
            if found[position] is copy:
                copy = column
            else:
                found[position].replace(column)
        if not named:
            out.append(copy)
            continue
        first = available[matches[0][row]]
        name = ctx.spelled(first.name)
        if isinstance(copy, exp.Alias):
            name = _alias(copy.alias, sets[0], name)
            copy = copy.this
        out.append(exp.alias_(copy, ctx.name(name)))
    return out


def _unpack(node: exp.Columns, columns: list[exp.Expr]) -> None:
    """`f(*COLUMNS(...))`: the columns as the function's arguments, where the set stood."""
    parent, key = node.parent, node.arg_key
    if parent is None or not columns:
        raise OpaqueError("*COLUMNS(...) names no column")
    copies = [c.copy() for c in columns]
    rest = parent.args.get("expressions")
    if key == "this" and isinstance(rest, list):
        parent.set("this", copies[0])
        parent.set("expressions", [*copies[1:], *rest])
    elif key == "expressions" and isinstance(rest, list):
        index = next(i for i, e in enumerate(rest) if e is node)
        parent.set("expressions", [*rest[:index], *copies, *rest[index + 1 :]])
    else:
        raise OpaqueError(f"*COLUMNS(...) as an argument of {parent.key} is not supported")


def _alias(alias: str, spec: exp.Columns, name: str) -> str:
    """`COLUMNS('(\\w+)_x') AS '\\1'`: the alias with the regex's groups put in."""
    pattern = spec.this
    if "\\" not in alias or not (isinstance(pattern, exp.Literal) and pattern.is_string):
        return alias
    found = re.search(pattern.this, name)
    if found is None:
        return alias
    try:
        return found.expand(re.sub(r"\\0", r"\\g<0>", alias))
    except (re.error, IndexError) as e:
        raise OpaqueError(f"alias {alias!r} of {spec.sql(dialect='duckdb')[:60]} ({e})") from None
