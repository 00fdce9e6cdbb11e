"""DuckDB's name resolution where sqlglot needs help: relations whose columns are unknown, dotted
paths of any depth into STRUCT columns, `struct.*` and UNNEST of structs.

Pure: rewrites one model's table-qualified tree in place, before sqlglot qualifies its columns.
Never guesses: a name that a relation with unknown columns and another relation in scope could
both hold raises OpaqueError.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.schema import MappingSchema

from dbt_oml.lineage.generated import expand_star, generated_columns, is_generated
from dbt_oml.lineage.scopes import (
    Level,
    Source,
    binding_levels,
    column_of,
    column_parts,
    is_star,
    is_struct_star,
    requalify,
    scope_columns,
    scope_output_names,
)
from dbt_oml.lineage.structs import (
    element_type,
    field_type,
    struct_star_columns,
    type_of,
    unnest_columns,
)
from dbt_oml.lineage.survey import FILE_SCAN, column_names
from dbt_oml.lineage.types import OpaqueError

#: `alias.column`: more parts than this after an alias are struct fields.
_ALIAS_COLUMN_PARTS: Final = 2


def resolve_names(
    tree: exp.Expr, *, schema: MappingSchema, own_columns: Sequence[str] = ()
) -> None:
    """Rewrite `tree` (tables qualified, columns not yet) so sqlglot can qualify its columns.

    Producers first, every `UNNEST(struct)` and `struct.*` in a select list becomes the struct's
    fields (their types come from the schema, through CTEs and subqueries). Then readers first,
    a dotted name binds the way DuckDB binds it (relation, then column, then struct fields), a
    name that only a relation with unknown columns can hold is qualified with that relation, and
    a `*` over such a relation in a CTE or subquery becomes the columns its readers read from it.

    A `*` over a table-generating function becomes its columns, and the root select's `*` over
    one relation with unknown columns (a file) the model's `own_columns` (its catalog entry)
    less its other projections (lineage.generated).

    Raises:
        OpaqueError: a name could belong to two relations, one with unknown columns; or an
            UNNEST/`struct.*` whose fields are unknown.
    """
    root = build_scope(tree)
    if root is None:
        return
    scopes = list(root.traverse())
    resolver = _Resolver(schema)
    for scope in scopes:
        resolver.expand_structs(scope)
        mine = own_columns if scope is root else ()
        if expand_star(scope, own_columns=mine, unknown=resolver.unknown):
            resolver._open.pop(id(scope), None)
    for scope in reversed(scopes):
        resolver.attribute(scope)
        if scope is not root:
            resolver.learn_star(scope)


@dataclass
class _Resolver:
    schema: MappingSchema
    _columns: dict[int, frozenset[str]] = field(default_factory=dict)
    _open: dict[int, bool] = field(default_factory=dict)
    _types: dict[tuple[int, str], exp.DataType | None] = field(default_factory=dict)
    _needed: dict[int, dict[str, exp.Identifier]] = field(default_factory=dict)

    # -- what a relation holds ---------------------------------------------------------------

    def table_columns(self, table: exp.Table) -> frozenset[str]:
        found = self._columns.get(id(table))
        if found is None:
            generated = generated_columns(table)
            unknown = isinstance(table.this, exp.Func) or table.meta.get(FILE_SCAN)
            if generated is not None:
                found = frozenset(generated)
            else:
                found = frozenset() if unknown else frozenset(column_names(self.schema, table))
            self._columns[id(table)] = found
        return found

    def unknown(self, source: Source) -> bool:
        """Whether the relation's columns are unknown (any name may be one of them)."""
        if isinstance(source, exp.Table):
            return not self.table_columns(source)
        return self.is_open(source)

    def is_open(self, scope: Scope) -> bool:
        """A CTE or subquery whose `*` reads a relation with unknown columns."""
        key = id(scope)
        if key not in self._open:
            self._open[key] = False  # a recursive CTE reading itself is not open through itself
            self._open[key] = self._compute_open(scope)
        return self._open[key]

    def _compute_open(self, scope: Scope) -> bool:
        expression = scope.expression
        if isinstance(expression, exp.SetOperation):
            return any(self.is_open(branch) for branch in scope.set_operation_scopes)
        if not isinstance(expression, exp.Select):
            return False
        sources = scope.selected_sources
        for projection in expression.expressions:
            if isinstance(projection, exp.Star):
                if any(self.unknown(s) for _, s in sources.values()):
                    return True
            elif isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
                target = sources.get(projection.table)
                if target is None or self.unknown(target[1]):
                    return True
        return False

    def holds(self, source: Source, name: str) -> bool:
        """Whether the relation can hold a column `name` (always, if its columns are unknown)."""
        if self.unknown(source):
            return True
        if isinstance(source, exp.Table):
            return name in self.table_columns(source)
        return name in scope_output_names(source)

    # -- binding -----------------------------------------------------------------------------

    def bind(self, scope: Scope, parts: list[exp.Identifier]) -> tuple[str, Source, int] | None:
        """The relation a dotted name starts with, DuckDB's way: the longest prefix that names a
        relation in scope (catalog.schema.table, schema.table, then alias); None for a column."""
        names = [p.name for p in parts]
        for level in binding_levels(scope):
            for size in (3, 2):
                if len(names) <= size:
                    continue
                for alias, source in level:
                    if (
                        isinstance(source, exp.Table)
                        and source.alias_or_name == source.name
                        and [source.catalog, source.db, source.name][3 - size :] == names[:size]
                    ):
                        return alias, source, size
            if len(names) > 1:
                for alias, source in level:
                    if alias == names[0]:
                        return alias, source, 1
        return None

    def need(self, source: Source, identifier: exp.Identifier) -> None:
        if isinstance(source, Scope) and self.is_open(source):
            self._needed.setdefault(id(source), {}).setdefault(identifier.name, identifier)

    # -- readers first: attribution and learned stars ----------------------------------------

    def attribute(self, scope: Scope) -> None:
        levels = binding_levels(scope)
        any_unknown = any(self.unknown(s) or is_generated(s) for level in levels for _, s in level)
        for column in scope_columns(scope):
            parts = column_parts(column)
            bound = self.bind(scope, parts)
            if bound is not None:
                alias, source, size = bound
                self.need(source, parts[size])
                if size > 1 or len(parts) > _ALIAS_COLUMN_PARTS:
                    requalify(column, alias, parts[size], parts[size + 1 :])
                continue
            if any_unknown:
                self._attribute_name(scope, column, parts, levels)
        scope.clear_cache()
        for join in scope.expression.args.get("joins") or []:
            for identifier in join.args.get("using") or []:
                for _, source in scope.selected_sources.values():
                    if isinstance(identifier, exp.Identifier):
                        self.need(source, identifier)

    def _attribute_name(
        self, scope: Scope, column: exp.Column, parts: list[exp.Identifier], levels: list[Level]
    ) -> None:
        """A name whose first part is not a relation: a column of exactly one relation."""
        name = parts[0].name
        joins = scope.expression.args.get("joins") or []
        if any(i.name == name for join in joins for i in join.args.get("using") or []):
            return  # `join ... using (x)`: `x` is the joined relations' merged column
        if any(alias == name for level in levels for alias, _ in level):
            raise OpaqueError(
                f"{name!r} names a relation and may also be a column of a relation "
                "whose columns are unknown"
            )
        holders: list[tuple[str, Source]] = []
        for depth, level in enumerate(levels):
            found = [(a, s) for a, s in level if self.holds(s, name)]
            if depth == 0 and found:
                holders = found
                if len(found) == 1 and not self.unknown(found[0][1]):
                    if is_generated(found[0][1]):  # sqlglot does not know a function's columns
                        requalify(column, found[0][0], parts[0], parts[1:])
                    return  # a column of a known relation: sqlglot binds it
            elif found:
                holders += found
        unknown = [h for h in holders if self.unknown(h[1])]
        if not unknown:
            return
        if len(holders) > 1:
            others = ", ".join(sorted(a for a, _ in holders))
            raise OpaqueError(
                f"column {name!r} could belong to any of {others} (some columns are unknown)"
            )
        alias, source = holders[0]
        if alias not in scope.selected_sources:
            return  # an outer relation: sqlglot refuses to correlate through unknown columns
        self._check_select_alias(scope, column, name, alias)
        self.need(source, parts[0])
        requalify(column, alias, parts[0], parts[1:])

    def _check_select_alias(self, scope: Scope, column: exp.Column, name: str, alias: str) -> None:
        """DuckDB binds a relation's column before a select alias of the same name; with the
        relation's columns unknown that is only safe when both readings trace the same column."""
        select = scope.expression
        if not isinstance(select, exp.Select):
            return
        for projection in select.expressions:
            if not isinstance(projection, exp.Alias) or projection.alias != name:
                continue
            if column.find_ancestor(exp.Alias) is projection:
                return  # `f(x) as x`: an alias never refers to itself
            same = all(
                c.parts[0].name == name or (c.table == alias and c.name == name)
                for c in projection.find_all(exp.Column)
            )
            if not same:
                raise OpaqueError(
                    f"{name!r} may be a column of {alias!r} (its columns are unknown) or the "
                    "select alias of the same name"
                )

    def learn_star(self, scope: Scope) -> None:
        """`select *` over a relation with unknown columns, in a CTE or subquery: the columns
        are those its readers read (DuckDB would refuse a name both the `*` and another
        projection give)."""
        select = scope.expression
        if (
            not isinstance(select, exp.Select)
            or (scope.parent is not None and isinstance(scope.parent.expression, exp.SetOperation))
            or not self.is_open(scope)
        ):
            return
        stars = [p for p in select.expressions if is_star(p)]
        if len(stars) != 1:
            return
        star = stars[0]
        star_node = star if isinstance(star, exp.Star) else star.this
        sources = scope.selected_sources
        if isinstance(star, exp.Star):
            if len(sources) != 1:
                return
            ((alias, (_, source)),) = sources.items()
        elif star.table in sources:
            alias, source = star.table, sources[star.table][1]
        else:
            return
        if star_node.args.get("rename") or not self.unknown(source):
            return
        explicit = {p.alias_or_name for p in select.expressions if p is not star}
        excluded = {e.name for e in star_node.args.get("except_") or []}
        replaced = {r.alias_or_name: r for r in star_node.args.get("replace") or []}
        learned: list[exp.Expr] = []
        for name, identifier in self._needed.get(id(scope), {}).items():
            if name in explicit or name in excluded:
                continue
            if name in replaced:
                learned.append(replaced[name].copy())
                continue
            self.need(source, identifier)
            learned.append(
                exp.alias_(
                    exp.column(identifier.copy(), table=exp.to_identifier(alias)),
                    identifier.copy(),
                )
            )
        if not learned and not explicit:
            return
        index = select.expressions.index(star)
        select.set(
            "expressions",
            [*select.expressions[:index], *learned, *select.expressions[index + 1 :]],
        )
        scope.clear_cache()
        self._open[id(scope)] = False

    # -- producers first: struct fields in select lists --------------------------------------

    def expand_structs(self, scope: Scope) -> None:
        select = scope.expression
        if not isinstance(select, exp.Select):
            return
        projections: list[exp.Expr] = []
        changed = False
        for projection in select.expressions:
            bare = projection.unalias()
            expanded: list[exp.Expr] | None = None
            if isinstance(bare, exp.Explode):
                kind = self.type_of(scope, bare.this)
                expanded = unnest_columns(bare, kind, aliased=bare is not projection)
            elif is_struct_star(bare, scope):
                struct = column_of([p for p in bare.parts if isinstance(p, exp.Identifier)])
                expanded = struct_star_columns(struct, self.type_of(scope, struct))
            if expanded is None:
                projections.append(projection)
            else:
                projections += expanded
                changed = True
        if changed:
            select.set("expressions", projections)
            scope.clear_cache()

    # -- types ------------------------------------------------------------------------------

    def type_of(self, scope: Scope, node: exp.Expr) -> exp.DataType | None:
        """The type of an expression over the scope's relations, where known (STRUCT paths)."""
        return type_of(node, lambda column: self._column_type(scope, column_parts(column)))

    def _column_type(self, scope: Scope, parts: list[exp.Identifier]) -> exp.DataType | None:
        bound = self.bind(scope, parts)
        if bound is not None:
            _, source, size = bound
        else:
            size = 0
            holders = [s for level in binding_levels(scope)[:1] for _, s in level]
            known = [s for s in holders if not self.unknown(s) and self.holds(s, parts[0].name)]
            if len(known) != 1 or any(self.unknown(s) for s in holders):
                return None
            source = known[0]
        kind = self._source_type(source, parts[size].name)
        for part in parts[size + 1 :]:
            kind = field_type(kind, part.name)
        return kind

    def _source_type(self, source: Source, name: str) -> exp.DataType | None:
        key = (id(source), name)
        if key in self._types:
            return self._types[key]
        self._types[key] = None
        kind: exp.DataType | None = None
        if isinstance(source, exp.Table):
            if name in self.table_columns(source):
                try:
                    kind = self.schema.get_column_type(source, name, normalize=False)
                except SqlglotError:
                    kind = None
        else:
            kind = self._scope_type(source, name)
        if kind is not None and kind.is_type(exp.DType.UNKNOWN):
            kind = None
        self._types[key] = kind
        return kind

    def _scope_type(self, scope: Scope, name: str) -> exp.DataType | None:
        expression = scope.expression
        if isinstance(expression, exp.SetOperation):
            return (
                self._scope_type(scope.set_operation_scopes[0], name)
                if scope.set_operation_scopes
                else None
            )
        if isinstance(expression, exp.Unnest) and scope.parent is not None:
            alias = expression.args.get("alias")
            columns = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
            if name in columns and columns.index(name) < len(expression.expressions):
                arg = expression.expressions[columns.index(name)]
                return element_type(self.type_of(scope.parent, arg))
            return None
        if isinstance(expression, exp.Select):
            for projection in expression.expressions:
                if projection.alias_or_name == name:
                    return self.type_of(scope, projection.unalias())
        return None
