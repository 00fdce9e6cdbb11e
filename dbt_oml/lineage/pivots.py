"""PIVOT and UNPIVOT as the plain selects DuckDB evaluates them as, so the engine traces them like
any query: DuckDB's statements (`PIVOT t ON q IN (...) USING sum(v) GROUP BY r`, `UNPIVOT t ON
a, b INTO NAME n VALUE v`) and the standard forms (`FROM t PIVOT (sum(v) FOR q IN (...))`).

UNPIVOT is DuckDB's own rewrite: the other columns, `unnest(['a', 'b']) AS n` (names: no input
column) and `unnest([a, b]) AS v` (DIRECT from every unpivoted column). PIVOT is the first stage
of DuckDB's: `SELECT r, sum(v) AS "Q1", ... GROUP BY r, q`: each pivoted column aggregates `v`;
the ON and GROUP BY columns shape every row (INDIRECT). Columns that come from the data (`ON q`
with no IN list) are named by the model's own catalog columns: only the model's output has them.

Pure: builds the selects from the tree, the schema (`colsets.from_columns`) and own columns.
"""

from __future__ import annotations

from itertools import product

from sqlglot import exp

from dbt_oml.lineage.colsets import Available, Context, from_columns, select_columns
from dbt_oml.lineage.types import OpaqueError

#: A group of unpivoted columns: the NAME it gives, and one column per VALUE column.
_Group = tuple[str, list[exp.Expr]]


def rewrite_pivot(pivot: exp.Pivot, *, ctx: Context, output: exp.Expr) -> exp.Expr | None:
    """Replace `pivot` (a statement, or attached to the relation it reads) by its select.

    `output` is the relation whose columns are the model's (lineage.expand.output_relation).
    Returns the select when it replaces the root of the tree, else None (replaced in place).

    Raises:
        OpaqueError: columns that only the data or an unknown relation could name.
    """
    attached = pivot.arg_key == "pivots"
    is_output = output is (pivot.parent if attached else pivot)
    select = exp.Select()
    root = None
    if attached:
        source = pivot.parent
        if source is None or len(source.args.get("pivots") or []) != 1:
            raise OpaqueError("more than one PIVOT/UNPIVOT on one relation")
        alias = pivot.args.get("alias")
        name = alias.name if isinstance(alias, exp.TableAlias) else source.alias_or_name
        wrapper = exp.Subquery(
            this=select, alias=exp.TableAlias(this=exp.to_identifier(name or "_unnamed_pivot"))
        )
        source.replace(wrapper)
        source.set("pivots", None)
        select.set("from_", exp.From(this=source))
    else:
        if pivot.parent is None:
            root = select
        else:
            pivot.replace(select)
        if isinstance(pivot.args.get("with_"), exp.With):
            select.set("with_", pivot.args["with_"])
        select.set("from_", exp.From(this=pivot.this))
    build = _unpivot if pivot.args.get("unpivot") else _pivot
    build(select, pivot, ctx, output=is_output, standard=attached)
    return root


# -- UNPIVOT ------------------------------------------------------------------------------------


def _unpivot(
    select: exp.Select, pivot: exp.Pivot, ctx: Context, *, output: bool, standard: bool
) -> None:
    if standard:
        fields = pivot.args.get("fields") or []
        field = fields[0] if len(fields) == 1 else None
        if not isinstance(field, exp.In):
            raise OpaqueError("UNPIVOT without one `FOR name IN (...)`")
        name, entries = field.this.name, list(field.expressions)
        values = [
            i.name
            for v in pivot.expressions
            for i in (v.expressions if isinstance(v, exp.Tuple) else [v])
        ]
    else:
        into = pivot.args.get("into")
        name = into.this.name if isinstance(into, exp.UnpivotColumns) else "name"
        values = [v.name for v in into.expressions] if isinstance(into, exp.UnpivotColumns) else []
        values = values or ["value"]
        entries = list(pivot.expressions)
    available = from_columns(select, ctx)
    groups = [g for entry in entries for g in _groups(entry, available, ctx)]
    if any(len(refs) != len(values) for _, refs in groups):
        raise OpaqueError(f"UNPIVOT gives {len(values)} value column(s); an ON entry has another")
    unpivoted = {_ref_name(r) for _, refs in groups for r in refs}
    projections = _others(
        available, unpivoted, {name.lower(), *map(str.lower, values)}, ctx, output
    )
    projections.append(_unnest([exp.Literal.string(label) for label, _ in groups], ctx.name(name)))
    for k, value in enumerate(values):
        projections.append(_unnest([refs[k] for _, refs in groups], ctx.name(value)))
    select.set("expressions", projections)


def _groups(entry: exp.Expr, available: Available | None, ctx: Context) -> list[_Group]:
    """The NAME and value columns of one ON entry: a column, `2019`, `(a, b) AS ab`, COLUMNS."""
    if isinstance(entry, exp.Columns):
        if available is None:
            raise OpaqueError(
                f"UNPIVOT ON {entry.sql(dialect='duckdb')[:60]} over a relation whose columns "
                "are unknown"
            )
        return [
            (ctx.spelled(available[i].name), [available[i].expression.copy()])
            for i in select_columns(entry, available, ctx)
        ]
    label: str | None = None
    inner = entry
    if isinstance(entry, exp.Alias | exp.PivotAlias):
        alias = entry.args.get("alias")
        label = alias.this if isinstance(alias, exp.Literal) else entry.alias
        inner = entry.this
    refs = list(inner.expressions) if isinstance(inner, exp.Tuple) else [inner]
    resolved = [_resolve(r, available) for r in refs]
    if label is None:
        label = "_".join(ctx.spelled(_ref_name(r)) for r in resolved)
    return [(str(label), resolved)]


def _ref_name(ref: exp.Expr) -> str:
    if isinstance(ref, exp.Literal) and not ref.is_string:
        return str(ref.this)  # `ON 2019, 2020`: the columns named "2019" and "2020"
    if isinstance(ref, exp.Literal):
        return str(ref.this).lower()  # `ON '95-00'`: DuckDB takes a string as the column's name
    if isinstance(ref, exp.Column | exp.Identifier):
        return ref.name.lower()
    raise OpaqueError(f"UNPIVOT ON {ref.sql(dialect='duckdb')[:60]}: not a column")


def _resolve(ref: exp.Expr, available: Available | None) -> exp.Expr:
    name = _ref_name(ref)
    if available is None:
        return exp.column(exp.to_identifier(name))
    for column in available:
        if column.name.lower() == name:
            return column.expression.copy()
    raise OpaqueError(f"UNPIVOT ON {name!r}: no such column in the relation it reads")


def _others(
    available: Available | None, taken: set[str], made: set[str], ctx: Context, output: bool
) -> list[exp.Expr]:
    """The columns an UNPIVOT passes through: all but the unpivoted ones, in order."""
    if available is not None:
        return [
            exp.alias_(c.expression.copy(), ctx.name(ctx.spelled(c.name)))
            for c in available
            if c.name.lower() not in taken
        ]
    if not (output and ctx.own_columns):
        raise OpaqueError("UNPIVOT over a relation whose columns are unknown")
    return [exp.column(exp.to_identifier(c)) for c in ctx.own_columns if c.lower() not in made]


def _unnest(items: list[exp.Expr], name: exp.Identifier) -> exp.Expr:
    return exp.alias_(exp.Explode(this=exp.Array(expressions=items)), name)


# -- PIVOT --------------------------------------------------------------------------------------


def _pivot(
    select: exp.Select, pivot: exp.Pivot, ctx: Context, *, output: bool, standard: bool
) -> None:
    if _mixes_rows(select.args["from_"].this):
        raise OpaqueError(
            "PIVOT over an UNPIVOT, UNNEST or set operation: which source column reaches which"
            " pivoted column depends on the rows' labels"
        )
    aggregates = list(pivot.expressions if standard else pivot.args.get("using") or [])
    aggregates = aggregates or [exp.Count(this=exp.Star())]  # DuckDB's default: count(*)
    entries = list(pivot.args.get("fields") or [] if standard else pivot.expressions)
    ons = [e.this if isinstance(e, exp.In) else e for e in entries]
    labels = [_labels(e) for e in entries]
    names = _names(labels, aggregates)
    group = pivot.args.get("group")
    plain = True  # DuckDB takes bare column names only: a reader names a key by its name
    if isinstance(group, exp.Group):
        keys = [g.copy() for g in group.expressions]
        plain = all(isinstance(k, exp.Column) and not k.table for k in keys)
    else:
        keys = _implicit_keys(select, ons, aggregates, names, ctx, output=output)
    key_names = {k.alias_or_name.lower() for k in keys}
    rest = [c for c in ctx.own_columns if c.lower() not in key_names] if output else []
    if _fits(rest, key_names, aggregates, ctx) and (names is None or len(rest) == len(names)):
        names = rest  # the catalog's spelling of what the data or the IN list named
    if names is not None:
        pairs = [(name, aggregates[j % len(aggregates)]) for j, name in enumerate(names)]
    elif not output and plain and (read := _names_read(select)) is not None:
        pairs = _by_suffix([n for n in read if n.lower() not in key_names], aggregates)
    else:
        raise OpaqueError(_data_defined(ons, output=output, catalog=bool(ctx.own_columns)))
    pivoted = [exp.alias_(agg.unalias().copy(), ctx.name(name)) for name, agg in pairs]
    select.set("expressions", [*keys, *pivoted])
    by = [k.unalias().copy() for k in keys] + [o.copy() for o in ons]
    if by:
        select.set("group", exp.Group(expressions=by))


def _mixes_rows(source: exp.Expr) -> bool:
    """Whether the rows a PIVOT reads may carry different source columns in one column (an
    UNPIVOT's VALUE, an UNNEST of a list of columns, the branches of a UNION), following the CTEs
    it names. Such a PIVOT's column `Q1` aggregates only the rows labelled Q1, which need not
    read every column its argument traces to: the edge to the others would be false."""
    seen: set[int] = set()
    todo = [source]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.find(exp.Explode, exp.Unnest, exp.SetOperation) is not None or any(
            p.args.get("unpivot") for p in node.find_all(exp.Pivot)
        ):
            return True
        for table in node.find_all(exp.Table):
            if table.args.get("db"):
                continue
            name, scope = table.name.lower(), table.parent
            while scope is not None:
                with_ = scope.args.get("with_")
                if isinstance(with_, exp.With):
                    todo += [c.this for c in with_.expressions if c.alias_or_name.lower() == name]
                scope = scope.parent
    return False


def _fits(rest: list[str], keys: set[str], aggregates: list[exp.Expr], ctx: Context) -> bool:
    """Whether the model's catalog columns (less the keys) can be this PIVOT's: every key there,
    one column per aggregate per value, each aliased aggregate's name at its place (`Q1_rev`)."""
    own = {c.lower() for c in ctx.own_columns}
    if not rest or not keys <= own or len(rest) % len(aggregates):
        return False
    return all(
        not isinstance(aggregates[j % len(aggregates)], exp.Alias)
        or name.lower().endswith("_" + aggregates[j % len(aggregates)].alias.lower())
        for j, name in enumerate(rest)
    )


def _labels(entry: exp.Expr) -> list[str] | None:
    """The names an ON entry's IN list gives its columns; None when the data gives them."""
    if not isinstance(entry, exp.In) or entry.args.get("query") or not entry.expressions:
        return None
    out = []
    for value in entry.expressions:
        if isinstance(value, exp.Alias | exp.PivotAlias):
            out.append(value.alias)
        elif isinstance(value, exp.Literal):
            out.append(str(value.this))
        else:
            out.append(value.sql(dialect="duckdb"))
    return out


def _names(labels: list[list[str] | None], aggregates: list[exp.Expr]) -> list[str] | None:
    """DuckDB's names of the pivoted columns: each combination of ON values (`Q1_N`), with the
    aggregate's alias or text when there are several or it has an alias (`Q1_total`)."""
    if any(values is None for values in labels):
        return None
    suffixed = len(aggregates) > 1 or isinstance(aggregates[0], exp.Alias)
    out = []
    for combination in product(*(v for v in labels if v is not None)):
        for aggregate in aggregates:
            parts = (
                [*combination, _aggregate_name(aggregate)]
                if suffixed or not combination
                else list(combination)
            )
            out.append("_".join(parts))
    return out


def _aggregate_name(aggregate: exp.Expr) -> str:
    if isinstance(aggregate, exp.Alias):
        return aggregate.alias
    if isinstance(aggregate, exp.Count) and isinstance(aggregate.this, exp.Star):
        return "count_star()"
    return aggregate.sql(dialect="duckdb", normalize_functions="lower")


def _implicit_keys(
    select: exp.Select,
    ons: list[exp.Expr],
    aggregates: list[exp.Expr],
    names: list[str] | None,
    ctx: Context,
    *,
    output: bool,
) -> list[exp.Expr]:
    """No GROUP BY: DuckDB groups by every column the ON and USING parts do not read."""
    used = {c.name.lower() for node in [*ons, *aggregates] for c in node.find_all(exp.Column)}
    available = from_columns(select, ctx)
    if available is not None:
        return [
            exp.alias_(c.expression.copy(), ctx.name(ctx.spelled(c.name)))
            for c in available
            if c.name.lower() not in used
        ]
    if output and names is not None and ctx.own_columns:
        made = {n.lower() for n in names}
        return [exp.column(exp.to_identifier(c)) for c in ctx.own_columns if c.lower() not in made]
    raise OpaqueError("PIVOT without GROUP BY over a relation whose columns are unknown")


def _names_read(select: exp.Select) -> list[str] | None:
    """The names the queries reading this PIVOT (a CTE or an aliased subquery, not the output)
    take from it, in order. DuckDB binds each to a column of the PIVOT or fails, so a model that
    built has them in its data. None when a reader takes `*` or COLUMNS(...) of it, or a name that
    another relation, an outer query or a select alias of the reader could hold as well, or when
    a column list renames the PIVOT's columns by position (`p(a, b) AS (PIVOT ...)`)."""
    holder = select.parent
    alias = holder.args.get("alias") if holder is not None else None
    if isinstance(alias, exp.TableAlias) and alias.columns:
        return None  # names read are the list's, not the PIVOT's: their places come from the data
    if isinstance(holder, exp.CTE) and isinstance(holder.parent, exp.With):
        name = holder.alias_or_name.lower()
        query = holder.parent.parent
        sources: list[exp.Expr] = [
            t
            for t in (query.find_all(exp.Table) if query is not None else [])
            if t.name.lower() == name and not t.args.get("db")
        ]
    elif isinstance(holder, exp.Subquery) and holder.alias:
        sources = [holder]
    else:
        return None
    out: dict[str, str] = {}
    for source in sources:
        reader = source.parent.parent if source.parent is not None else None
        if (
            not isinstance(reader, exp.Select)
            or not _closed(reader)
            or not _read_from(reader, source, out)
        ):
            return None
    return list(out.values())


def _closed(query: exp.Expr) -> bool:
    """Whether no outer query can lend `query` a column: it is the statement, a branch of a set
    operation, a CTE or a FROM subquery of a query that is closed itself. A subquery in an
    expression or a JOIN (DuckDB joins laterally when a name is not found inside) binds a name
    its own FROM lacks to the outer query's column, so what it names need not be the PIVOT's."""
    node = query
    while (parent := node.parent) is not None:
        if not isinstance(node, exp.With | exp.From) and not isinstance(
            parent, exp.SetOperation | exp.CTE | exp.With | exp.Subquery | exp.From
        ):
            return False
        node = parent
    return True


def _read_from(reader: exp.Select, source: exp.Expr, out: dict[str, str]) -> bool:
    """Add the names `reader` reads from `source` (in its FROM or a JOIN) to `out`; False when
    it cannot tell them all."""
    alias = source.alias_or_name.lower()
    alone = not reader.args.get("joins")
    aliases = {p.alias.lower() for p in reader.expressions if isinstance(p, exp.Alias)}
    for join in reader.args.get("joins") or []:
        for key in join.args.get("using") or []:
            out.setdefault(key.name.lower(), key.name)
    for node in reader.find_all(exp.Column, exp.Star, exp.Columns):
        if node.find_ancestor(exp.Select) is not reader:
            continue  # a subquery's own columns (a correlated one names this PIVOT: opaque later)
        name = _name_read(node, reader, alias=alias, alone=alone, aliases=aliases)
        if name is None:
            return False
        if name:
            out.setdefault(name.lower(), name)
    return True


def _name_read(
    node: exp.Expr, reader: exp.Select, *, alias: str, alone: bool, aliases: set[str]
) -> str | None:
    """The name `node` reads from the PIVOT aliased `alias`, "" for none, None when unsure."""
    if isinstance(node, exp.Star):
        return "" if isinstance(node.parent, exp.Column | exp.Count) else None  # t.*, count(*)
    if not isinstance(node, exp.Column) or (
        isinstance(node.this, exp.Star) and node.table.lower() == alias
    ):
        return None  # COLUMNS(...) or this PIVOT's `t.*`
    if (node.table and node.table.lower() != alias) or isinstance(node.this, exp.Star):
        return ""
    if not node.table and not alone:
        return None  # could be a column of another relation
    if node.name.lower() in aliases:
        order = node.find_ancestor(exp.Order)
        if (
            order is not None
            and order.parent is reader
            and isinstance(node.parent, exp.Ordered)
            and node.parent.parent is order
        ):
            return ""  # a bare ORDER BY item binds a select alias first (an expression: a column)
        own = node.find_ancestor(exp.Alias)
        if own is None or own.alias.lower() != node.name.lower() or own.parent is not reader:
            return None  # a select alias of the reader could be meant
    return str(node.name)


def _by_suffix(names: list[str], aggregates: list[exp.Expr]) -> list[tuple[str, exp.Expr]]:
    """Each read name with its aggregate: the one, or the one whose name ends it (`Q1_total`)."""
    if len(aggregates) == 1:
        return [(name, aggregates[0]) for name in names]
    out = []
    for name in names:
        fits = [a for a in aggregates if name.lower().endswith("_" + _aggregate_name(a).lower())]
        if len(fits) != 1:
            raise OpaqueError(f"PIVOT column {name!r}: not one of its aggregates' names")
        out.append((name, fits[0]))
    return out


def _data_defined(ons: list[exp.Expr], *, output: bool, catalog: bool) -> str:
    on = ", ".join(o.sql(dialect="duckdb") for o in ons)[:80]
    if not output:
        why = (
            "and what reads it takes `*` of it or names another relation could hold (a join's,"
            " an outer query's, a select alias's, a column list's)"
        )
    elif not catalog:
        why = "and the model has no catalog columns"
    else:
        why = "and the model's catalog columns do not fit it"
    return f"PIVOT ON {on}: its columns come from the data (no IN list), {why}"
