"""DuckDB's name resolution where sqlglot needs help: relations whose columns are unknown, dotted
paths of any depth into STRUCT columns, `struct.*` and UNNEST of structs.

Pure: rewrites one model's table-qualified tree in place, before sqlglot qualifies its columns.
Never guesses: a name that a relation with unknown columns and another relation in scope could
both hold raises OpaqueError.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, TypeGuard

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.schema import MappingSchema

from dbt_oml.lineage.generated import expand_star, generated_columns, is_generated
from dbt_oml.lineage.structs import (
    element_type,
    field_type,
    struct_star_columns,
    type_of,
    unnest_columns,
)
from dbt_oml.lineage.types import OpaqueError

#: Marks a `from 'path'` table (DuckDB's replacement scan) before sqlglot qualifies tables.
FILE_SCAN: Final = "dbt_oml_file_scan"
Source = exp.Table | Scope
Level = list[tuple[str, Source]]


def is_file_name(name: str) -> bool:
    """Whether a one-part table name is a path DuckDB reads as a file (a replacement scan)."""
    return "/" in name or "://" in name or "." in name


@dataclass(frozen=True, slots=True)
class Survey:
    """What one walk over a parsed query found, before sqlglot qualifies its tables."""

    tables: list[exp.Table]
    file_scans: list[exp.Table]
    ctes: frozenset[str]
    struct_syntax: bool
    """Deep dotted names, `x.*` on a non-relation, or UNNEST: sqlglot needs help with those."""


def survey(tree: exp.Expr) -> Survey:
    """One walk: tables, file scans (`from 'data/x.parquet'`, marked and given DuckDB's alias,
    the file's stem) and struct syntax."""
    tables: list[exp.Table] = []
    files: list[exp.Table] = []
    ctes: set[str] = set()
    aliases: set[str] = set()
    suspects: list[exp.Column] = []
    explode = False
    for node in tree.walk():
        if isinstance(node, exp.Table):
            tables.append(node)
            aliases.add(node.alias_or_name)
            if (
                isinstance(node.this, exp.Identifier)
                and not node.args.get("db")
                and is_file_name(node.name)
            ):
                files.append(node)
                node.meta[FILE_SCAN] = True
                if not node.alias:
                    stem = posixpath.basename(node.name.rstrip("/")).split(".")[0] or node.name
                    node.set("alias", exp.TableAlias(this=exp.to_identifier(stem)))
                    aliases.add(stem)
        elif isinstance(node, exp.CTE | exp.Subquery):
            ctes.add(node.alias_or_name)
        elif isinstance(node, exp.Explode):
            explode = True
        elif isinstance(node, exp.Column) and (
            node.args.get("db") or (isinstance(node.this, exp.Star) and node.table)
        ):
            suspects.append(node)
    deep = any(c.table not in aliases and c.table not in ctes for c in suspects)
    return Survey(tables, files, frozenset(ctes), explode or deep)


def unqualify_file_scans(found: Survey) -> None:
    """Undo the default catalog and schema sqlglot gives every table, for file scans."""
    for table in found.file_scans:
        table.set("db", None)
        table.set("catalog", None)


def needs_resolution(found: Survey, schema: MappingSchema) -> bool:
    """Does the query read a relation with unknown columns, or use struct syntax sqlglot does
    not resolve by itself?"""
    if found.struct_syntax or found.file_scans:
        return True
    for table in found.tables:
        if isinstance(table.this, exp.Func):
            return True
        if not table.args.get("db") and table.name in found.ctes:
            continue
        if not _names(schema, table):
            return True
    return False


def _names(schema: MappingSchema, table: exp.Table) -> list[str]:
    try:
        return schema.column_names(table)
    except SqlglotError:
        return []


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
                found = frozenset() if unknown else frozenset(_names(self.schema, table))
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
        return name in _output_names(source)

    # -- binding -----------------------------------------------------------------------------

    def bind(self, scope: Scope, parts: list[exp.Identifier]) -> tuple[str, Source, int] | None:
        """The relation a dotted name starts with, DuckDB's way: the longest prefix that names a
        relation in scope (catalog.schema.table, schema.table, then alias); None for a column."""
        names = [p.name for p in parts]
        for level in _levels(scope):
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
        levels = _levels(scope)
        any_unknown = any(self.unknown(s) or is_generated(s) for level in levels for _, s in level)
        for column in _own_columns(scope):
            parts = _parts(column)
            bound = self.bind(scope, parts)
            if bound is not None:
                alias, source, size = bound
                self.need(source, parts[size])
                if size > 1 or len(parts) > 2:
                    _requalify(column, alias, parts[size], parts[size + 1 :])
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
                        _requalify(column, found[0][0], parts[0], parts[1:])
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
        _requalify(column, alias, parts[0], parts[1:])

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
        stars = [p for p in select.expressions if _is_star(p)]
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
            elif _is_struct_star(bare, scope):
                struct = _column_of([p for p in bare.parts if isinstance(p, exp.Identifier)])
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
        return type_of(node, lambda column: self._column_type(scope, _parts(column)))

    def _column_type(self, scope: Scope, parts: list[exp.Identifier]) -> exp.DataType | None:
        bound = self.bind(scope, parts)
        if bound is not None:
            _, source, size = bound
        else:
            size = 0
            holders = [s for level in _levels(scope)[:1] for _, s in level]
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


def _levels(scope: Scope) -> list[Level]:
    """The relations a name can bind to, innermost first (outer ones for correlated scopes)."""
    levels: list[Level] = []
    current: Scope | None = scope
    while current is not None:
        levels.append([(alias, source) for alias, (_, source) in current.selected_sources.items()])
        current = current.parent if current.can_be_correlated else None
    return levels


def _own_columns(scope: Scope) -> list[exp.Column]:
    index = scope.column_index
    return [c for c in scope.columns if id(c) in index and not isinstance(c.this, exp.Star)]


def _output_names(scope: Scope) -> set[str]:
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


def _parts(column: exp.Column) -> list[exp.Identifier]:
    return [p for p in column.parts if isinstance(p, exp.Identifier)]


def _requalify(
    column: exp.Column, alias: str, root: exp.Identifier, fields: list[exp.Identifier]
) -> None:
    """`root.f1.f2` of relation `alias` in sqlglot's form: Dot(Dot(alias.root, f1), f2)."""
    qualified = exp.column(root.copy(), table=exp.to_identifier(alias))
    column.replace(exp.Dot.build([qualified, *(f.copy() for f in fields)]) if fields else qualified)


def _column_of(parts: list[exp.Identifier]) -> exp.Column:
    """A Column from its dotted parts (at most catalog.db.table.column)."""
    names = ("this", "table", "db", "catalog")
    return exp.Column(**{k: p.copy() for k, p in zip(names, reversed(parts[-4:]), strict=False)})


def _is_star(projection: exp.Expr) -> bool:
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )


def _is_struct_star(node: exp.Expr, scope: Scope) -> TypeGuard[exp.Column]:
    """`s.*` where `s` is a STRUCT column, not a relation (DuckDB expands it to the fields)."""
    if not (isinstance(node, exp.Column) and isinstance(node.this, exp.Star) and node.table):
        return False
    return all(node.table != alias for level in _levels(scope) for alias, _ in level)
