"""Import CTEs read as the relations they name: `with a as (select * from t) ... from a` is
traced as `... from t as a`.

dbt's style guide opens a model with such CTEs, one per relation it reads. Each costs the
engine a scope whose `*` is expanded into every column of the relation and a level that every
traced column passes through as IDENTITY, which changes no edge: the relation read as the CTE's
name is the same relation, its columns the same columns in the same order. Pure.

Only a CTE that is exactly `select * from <catalog>.<schema>.<relation>` (as dbt compiles a
ref or a source) is read this way, where the relation's columns are known (a `*` over unknown
columns stays what it was); it is read so where the CTE is visible (the main query and the CTEs
after it), and the statement stays as it was when a nested WITH defines the same name again or
a reference renames the CTE's columns (`from a as x(c1, c2)`), or when any relation the statement
reads has unknown columns: names are then resolved by lineage.resolve, which weighs a CTE's
columns otherwise than a relation's (a correlated `max(order_date)` over `{{ this }}` in an
incremental model: opaque as a relation, resolved as a CTE).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.schema import MappingSchema

#: A SELECT's arguments that make it more than `select * from <relation>`.
_SHAPING = frozenset(
    {
        "joins",
        "where",
        "group",
        "having",
        "qualify",
        "order",
        "limit",
        "offset",
        "distinct",
        "laterals",
        "windows",
        "pivots",
        "with_",
        "with",
        "sample",
        "kind",
        "hint",
        "into",
        "settings",
        "connect",
        "prewhere",
        "match",
        "locks",
        "options",
        "cluster",
        "distribute",
        "sort",
        "exclude",
        "operation_modifiers",
    }
)
#: A table reference's arguments beyond its name (a sample, a pivot, time travel, ...).
_PLAIN_TABLE = frozenset({"this", "db", "catalog", "alias"})


def inline_import_ctes(statement: exp.Expr, schema: MappingSchema) -> exp.Expr:
    """`statement` with its import CTEs read as the relations they name (see the module); the
    statement itself, changed in place, or unchanged."""
    with_ = _with_of(statement)
    if with_ is None or with_.args.get("recursive"):
        return statement
    ctes = list(with_.expressions)
    imports = {
        cte.alias_or_name.lower(): (position, table)
        for position, cte in enumerate(ctes)
        if (table := _imported(cte)) is not None
    }
    if not imports:
        return statement
    found = list(statement.find_all(exp.Table, exp.With))  # one walk for the three questions
    tables = [node for node in found if isinstance(node, exp.Table)]
    nested = [node for node in found if isinstance(node, exp.With) and node is not with_]
    if _shadowed(nested, set(imports)):
        return statement
    if not _all_known(tables, {cte.alias_or_name.lower() for cte in ctes}, schema):
        return statement
    readers = [
        (reference, imports[reference.name.lower()])
        for reference in tables
        if _bare(reference) and reference.name.lower() in imports
    ]
    if any(_renames_columns(reference) for reference, _ in readers):
        return statement
    for reference, (position, table) in readers:
        if _visible(reference, ctes, position):
            alias = reference.alias or ctes[position].alias_or_name
            reference.replace(exp.alias_(table.copy(), alias, table=True))
    for position, _ in imports.values():
        ctes[position].pop()  # a reference it does not reach names another relation
    if not with_.expressions:
        with_.pop()
    return statement


def _with_of(statement: exp.Expr) -> exp.With | None:
    found = statement.args.get("with_") or statement.args.get("with")
    return found if isinstance(found, exp.With) else None


def _imported(cte: exp.CTE) -> exp.Table | None:
    """The relation an import CTE reads, or None for any other CTE."""
    alias = cte.args.get("alias")
    if alias is None or alias.columns or set(_set_args(cte)) - {"this", "alias"}:
        return None
    body = cte.this
    if type(body) is not exp.Select or set(_set_args(body)) & _SHAPING:
        return None
    projections = body.expressions
    if len(projections) != 1 or type(projections[0]) is not exp.Star or _set_args(projections[0]):
        return None
    source = body.args.get("from_") or body.args.get("from")
    table = source.this if isinstance(source, exp.From) else None
    if type(table) is not exp.Table or set(_set_args(table)) - _PLAIN_TABLE:
        return None
    if not all(type(table.args.get(part)) is exp.Identifier for part in ("this", "db", "catalog")):
        return None  # not catalog.schema.relation (never a CTE's name): qualify resolves it
    return table  # its columns known or not, `_all_known` decides for the whole statement


def _all_known(tables: list[exp.Table], ctes: set[str], schema: MappingSchema) -> bool:
    """Whether every relation of `tables` (the statement's, but the CTEs) has known columns."""
    for table in tables:
        if _bare(table) and table.name.lower() in ctes:
            continue
        if not isinstance(table.this, exp.Identifier) or not _found(table, schema):
            return False
    return True


def _found(table: exp.Table, schema: MappingSchema) -> bool:
    named = normalize_identifiers(table.copy(), dialect=schema.dialect)
    return bool(schema.find(named, raise_on_missing=False))


def _shadowed(nested: list[exp.With], inlined: set[str]) -> bool:
    """Whether a nested WITH defines one of the inlined names again."""
    return any(c.alias_or_name.lower() in inlined for w in nested for c in w.expressions)


def _visible(reference: exp.Table, ctes: list[exp.CTE], position: int) -> bool:
    """Whether the CTE at `position` is what `reference` names: in the main query, or in a
    CTE after it (an earlier one, or the CTE itself, reads a relation of that name)."""
    node: exp.Expr | None = reference
    while node is not None and not (isinstance(node, exp.CTE) and any(node is c for c in ctes)):
        node = node.parent
    return node is None or next(i for i, c in enumerate(ctes) if c is node) > position


def _renames_columns(reference: exp.Table) -> bool:
    alias = reference.args.get("alias")
    return bool(alias is not None and alias.columns)


def _bare(reference: exp.Table) -> bool:
    return (
        not reference.args.get("db")
        and not reference.args.get("catalog")
        and isinstance(reference.this, exp.Identifier)
    )


def _set_args(node: exp.Expr) -> list[str]:
    return [key for key, value in node.args.items() if value]
