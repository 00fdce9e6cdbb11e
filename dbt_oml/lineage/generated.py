"""Columns sqlglot's schema cannot give but DuckDB's rules or the model's catalog entry can:
table-generating functions (`generate_series`, `range`) and a model's own `select *` over files.

One rule for generated rows: a column a table function generates from constants has no input
column (like a date spine built from `select 0 union all select 1`); from columns (a lateral
`generate_series(1, t.n)`), those columns. A `select *` over a file takes its columns from the
model's own catalog entry: the file's columns are the model's, minus its other projections.

Pure: rewrites one model's table-qualified tree in place, before sqlglot qualifies its columns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

#: Anonymous spellings of DuckDB's table-generating functions (sqlglot parses the usual ones
#: into exp.GenerateSeries).
_GENERATORS = frozenset({"generate_series", "range"})


def generated_columns(table: exp.Table) -> list[str] | None:
    """The columns of a table-generating function in FROM (None: not one).

    DuckDB names the column after the function (`range` for range(), which excludes its end)
    unless the alias names it.

    >>> import sqlglot
    >>> def cols(sql):
    ...     return generated_columns(sqlglot.parse_one(sql, read="duckdb").find(exp.Table))
    >>> cols("select * from range(5)"), cols("select * from generate_series(1, 3) as g(d)")
    (['range'], ['d'])
    """
    target = table.this
    if isinstance(target, exp.GenerateSeries):
        default = "range" if target.args.get("is_end_exclusive") else "generate_series"
    elif isinstance(target, exp.Anonymous) and str(target.this).lower() in _GENERATORS:
        default = str(target.this).lower()
    else:
        return None
    alias = table.args.get("alias")
    named = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    return named[:1] or [default]


def is_generated(source: object) -> bool:
    return isinstance(source, exp.Table) and generated_columns(source) is not None


def expand_star(
    scope: Scope,
    *,
    own_columns: Sequence[str] = (),
    unknown: Callable[[exp.Table | Scope], bool],
) -> bool:
    """Replace the one `*` (or `x.*`) of a select over a single relation whose columns are
    generated, or (`own_columns`: the model's root select) unknown, by those columns.

    Returns whether the select was rewritten. Leaves it alone whenever it cannot be sure:
    several stars or relations, `* RENAME`, or an `own_columns` that lacks one of the select's
    other projections (a catalog entry that is not this SQL's).
    """
    select = scope.expression
    if not isinstance(select, exp.Select):
        return False
    stars = [p for p in select.expressions if _is_star(p)]
    if len(stars) != 1:
        return False
    star = stars[0]
    sources = scope.selected_sources
    if isinstance(star, exp.Star):
        if len(sources) != 1:
            return False
        ((alias, (_, source)),) = sources.items()
    elif star.table in sources:
        alias, source = star.table, sources[star.table][1]
    else:
        return False
    star_node = star if isinstance(star, exp.Star) else star.this
    if star_node.args.get("rename"):
        return False
    explicit = {p.alias_or_name.lower() for p in select.expressions if p is not star}
    columns = _star_columns(source, explicit, own_columns=own_columns, unknown=unknown)
    if columns is None:
        return False
    excluded = {e.name.lower() for e in star_node.args.get("except_") or []}
    replaced = {r.alias_or_name.lower(): r for r in star_node.args.get("replace") or []}
    expanded: list[exp.Expr] = []
    for name in columns:
        lowered = name.lower()
        if lowered in excluded:
            continue
        if lowered in replaced:
            expanded.append(replaced[lowered].copy())
            continue
        column = exp.column(exp.to_identifier(lowered), table=exp.to_identifier(alias))
        expanded.append(exp.alias_(column, exp.to_identifier(lowered)))
    index = select.expressions.index(star)
    select.set(
        "expressions", [*select.expressions[:index], *expanded, *select.expressions[index + 1 :]]
    )
    scope.clear_cache()
    return True


def _star_columns(
    source: exp.Table | Scope,
    explicit: set[str],
    *,
    own_columns: Sequence[str],
    unknown: Callable[[exp.Table | Scope], bool],
) -> list[str] | None:
    """The columns a `*` over `source` stands for: generated ones, or (`own_columns`, when the
    source is unknown and has every other projection) the rest of the model's own; else None."""
    generated = generated_columns(source) if isinstance(source, exp.Table) else None
    if generated is not None:
        return generated
    if own_columns and unknown(source):
        if not explicit <= {c.lower() for c in own_columns}:
            return None
        return [c for c in own_columns if c.lower() not in explicit]
    return None


def _is_star(projection: exp.Expr) -> bool:
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )
