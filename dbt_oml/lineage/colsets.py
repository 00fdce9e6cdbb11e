"""DuckDB's column sets: the columns a FROM clause gives (`select *` over it, asked of sqlglot on
a small query), and which of them `COLUMNS('regex')`, `COLUMNS(c -> ...)`, `COLUMNS([...])`,
`COLUMNS(* EXCLUDE (...))`, `* LIKE 'p%'` or an UNPIVOT's ON list name.

Pure: reads the tree and copies parts of it; evaluates a COLUMNS lambda on column names only.
Never guesses: a lambda it cannot evaluate, or a relation whose columns are unknown, raises
OpaqueError (the model keeps its table-level lineage).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from dbt_oml.lineage.types import OpaqueError


class Col(NamedTuple):
    """A column a FROM clause gives: its output name (normalised), its expression (a column, or
    COALESCE of the joined columns of `using (...)`) and its relation ("" for the only one)."""

    name: str
    expression: exp.Expr
    table: str


Available = list[Col]


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What one model's rewrite asks of the run: the schema and the model's own columns."""

    schema: MappingSchema
    dialect: str
    catalog: str | None
    db: str | None
    case: Mapping[str, str]
    """lower-case name -> spelling (DuckDB matches regexes and lambdas on the spelling)."""
    own_columns: Sequence[str] = ()
    made: dict[str, str] = field(default_factory=dict)
    """lower-case -> spelling of the output names the rewrite gave (`"Q1"` of a PIVOT)."""

    written: dict[str, str] = field(default_factory=dict)
    """lower-case -> spelling of the names the SQL writes (`id AS MyId`), for names the
    schema does not spell."""

    def spelled(self, name: str) -> str:
        lowered = name.lower()
        return self.case.get(lowered) or self.written.get(lowered) or name

    def name(self, text: str) -> exp.Identifier:
        """An output name the rewrite gives, remembered with its spelling."""
        self.made.setdefault(text.lower(), text)
        return exp.to_identifier(text)


def from_columns(select: exp.Select, ctx: Context) -> Available | None:
    """The columns `select *` over `select`'s FROM and JOINs gives, in order; None when a
    relation's columns are unknown (a file nobody described). Unqualified for one relation."""
    from_ = select.args.get("from_")
    if not isinstance(from_, exp.From):
        return None
    joins = list(select.args.get("joins") or [])
    if joins:
        _name_sources([from_.this, *(j.this for j in joins)])
    mini = exp.Select(expressions=[exp.Star()])
    mini.set("from_", from_.copy())
    mini.set("joins", [j.copy() for j in joins] or None)
    ctes = _needed(visible_ctes(select), mini)
    if ctes:
        mini.set("with_", exp.With(expressions=[c.copy() for c in ctes]))
    try:
        qualified = qualify(
            mini,
            schema=ctx.schema,
            dialect=ctx.dialect,
            catalog=ctx.catalog,
            db=ctx.db,
            validate_qualify_columns=False,
            quote_identifiers=False,
            identify=False,
        )
    except SqlglotError:
        return None
    out: Available = []
    for projection in qualified.selects:
        bare = projection.unalias()
        if isinstance(bare, exp.Star) or any(
            isinstance(c.this, exp.Star) for c in bare.find_all(exp.Column)
        ):
            return None
        column = bare if isinstance(bare, exp.Column) else bare.find(exp.Column)
        table = column.table if joins and column is not None else ""
        if not joins and isinstance(bare, exp.Column):
            bare = exp.column(bare.this.copy())
        out.append(Col(projection.alias_or_name, bare, table))
    return out


def _name_sources(sources: list[exp.Expr]) -> None:
    """Give every joined relation an alias, so names qualified on a copy hold in the tree."""
    for number, source in enumerate(sources):
        if isinstance(source, exp.Table | exp.Subquery) and not source.alias:
            name = source.name if isinstance(source, exp.Table) else f"_dbt_oml_{number}"
            if name and not isinstance(source.this, exp.Func):
                source.set("alias", exp.TableAlias(this=exp.to_identifier(name)))


def visible_ctes(node: exp.Expr) -> list[exp.CTE]:
    """The CTEs a query at `node` can read, outermost first (an inner one shadows an outer one
    of the same name)."""
    levels: list[list[exp.CTE]] = []
    child: exp.Expr | None = None
    current: exp.Expr | None = node
    inside: exp.With | None = None
    while current is not None:
        if isinstance(current, exp.With):
            index = next((i for i, c in enumerate(current.expressions) if c is child), 0)
            levels.append(list(current.expressions[:index]))
            inside = current
        else:
            with_ = current.args.get("with_")
            if isinstance(with_, exp.With) and with_ is not inside:
                levels.append(list(with_.expressions))
        child, current = current, current.parent
    seen: dict[str, exp.CTE] = {}
    for level in reversed(levels):
        for cte in level:
            seen.pop(cte.alias_or_name.lower(), None)
            seen[cte.alias_or_name.lower()] = cte
    return list(seen.values())


def _needed(ctes: list[exp.CTE], query: exp.Expr) -> list[exp.CTE]:
    """The CTEs `query` reads, directly or through each other, in their order."""
    by_name = {c.alias_or_name.lower(): c for c in ctes}
    wanted: set[str] = set()
    stack = [query]
    while stack:
        for table in stack.pop().find_all(exp.Table):
            name = table.name.lower()
            if not table.args.get("db") and name in by_name and name not in wanted:
                wanted.add(name)
                stack.append(by_name[name].this)
    return [c for c in ctes if c.alias_or_name.lower() in wanted]


# -- which columns a column set names ---------------------------------------------------------


def select_columns(spec: exp.Expr, available: Available, ctx: Context) -> list[int]:
    """Indexes into `available` of the columns a COLUMNS(...) argument or a star filter names.

    Raises:
        OpaqueError: a form this does not evaluate (the model keeps table-level lineage).
    """
    names = [ctx.spelled(c.name) for c in available]
    if isinstance(spec, exp.Columns):
        return select_columns(spec.this, available, ctx)
    if isinstance(spec, exp.Literal) and spec.is_string:
        regex = _compile(spec.this)
        return [i for i, n in enumerate(names) if regex.search(n)]
    if isinstance(spec, exp.Lambda):
        params = [p.name for p in spec.expressions]
        if len(params) != 1:
            raise OpaqueError("COLUMNS(lambda) of more than one parameter")
        return [i for i, n in enumerate(names) if _truth(_evaluate(spec.this, params[0], n))]
    if isinstance(spec, exp.Array):
        lowered = [n.lower() for n in names]
        wanted = [_text(e).lower() for e in spec.expressions]
        missing = [w for w in wanted if w not in lowered]
        if missing:
            raise OpaqueError(f"COLUMNS([...]) names {missing[0]!r}, no column of the relation")
        return [lowered.index(w) for w in wanted]
    if isinstance(spec, exp.Star | exp.Column) and _is_star(spec):
        return _star(spec, available, names)
    matcher = _star_filter(spec)
    if matcher is not None:
        star = spec.this.this if isinstance(spec, exp.Not) else spec.this
        excluded = {e.name.lower() for e in star.args.get("except_") or []}
        return [
            i
            for i, n in enumerate(names)
            if matcher(n) and available[i].name.lower() not in excluded
        ]
    raise OpaqueError(f"COLUMNS({spec.sql(dialect='duckdb')[:80]}) is not supported")


def _is_star(node: exp.Expr) -> bool:
    return isinstance(node, exp.Star) or (
        isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
    )


def _star(spec: exp.Expr, available: Available, names: list[str]) -> list[int]:
    star = spec if isinstance(spec, exp.Star) else spec.this
    if star.args.get("replace") or star.args.get("rename"):
        raise OpaqueError("COLUMNS(* REPLACE/RENAME) is not supported")
    excluded = {e.name.lower() for e in star.args.get("except_") or []}
    table = spec.table if isinstance(spec, exp.Column) else ""
    like = star.args.get("ilike")
    pattern = _like(_text(like), ignore_case=True) if like is not None else None
    return [
        i
        for i, column in enumerate(available)
        if column.name.lower() not in excluded
        and (not table or not column.table or column.table.lower() == table.lower())
        and (pattern is None or pattern.fullmatch(names[i]))
    ]


def is_star_filter(node: exp.Expr) -> bool:
    """`* LIKE 'p%'`, `* NOT LIKE`, `* ILIKE`, `* GLOB`, `* SIMILAR TO` in a select list."""
    if isinstance(node, exp.Star):
        return node.args.get("ilike") is not None
    return _star_filter(node) is not None


def _star_filter(node: exp.Expr) -> Callable[[str], bool] | None:
    negate = False
    if isinstance(node, exp.Not):
        node, negate = node.this, True
    if not isinstance(node, exp.Like | exp.ILike | exp.Glob | exp.SimilarTo) or not isinstance(
        node.this, exp.Star
    ):
        return None
    pattern = _text(node.expression)
    if isinstance(node, exp.Glob):
        test: Callable[[str], bool] = lambda n: fnmatch.fnmatchcase(n, pattern)  # noqa: E731
    elif isinstance(node, exp.SimilarTo):
        regex = _compile(pattern)
        test = lambda n: regex.search(n) is not None  # noqa: E731 - DuckDB: a partial match
    else:
        like = _like(pattern, ignore_case=isinstance(node, exp.ILike))
        test = lambda n: like.fullmatch(n) is not None  # noqa: E731
    negate ^= bool(node.args.get("negate"))
    return (lambda n: not test(n)) if negate else test


# -- a COLUMNS lambda, evaluated on a column name ----------------------------------------------

_COMPARE: Final[dict[type[exp.Expr], Callable[[object, object], bool]]] = {
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
    exp.GT: lambda a, b: a > b,  # type: ignore[operator]
    exp.GTE: lambda a, b: a >= b,  # type: ignore[operator]
    exp.LT: lambda a, b: a < b,  # type: ignore[operator]
    exp.LTE: lambda a, b: a <= b,  # type: ignore[operator]
}
_STRINGS: Final[dict[str, Callable[[str, str], bool]]] = {
    "startswith": str.startswith,
    "starts_with": str.startswith,
    "prefix": str.startswith,
    "endswith": str.endswith,
    "ends_with": str.endswith,
    "suffix": str.endswith,
    "contains": lambda a, b: b in a,
    "regexp_like": lambda a, b: _compile(b).search(a) is not None,
    "regexp_matches": lambda a, b: _compile(b).search(a) is not None,
}


def _evaluate(node: exp.Expr, param: str, value: str) -> object:  # noqa: PLR0911
    """The value of a lambda body over one column name (a small, exact subset of SQL)."""
    if node.name == param and (
        isinstance(node, exp.Identifier) or (isinstance(node, exp.Column) and not node.table)
    ):
        return value
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else float(node.this)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Paren):
        return _evaluate(node.this, param, value)
    if isinstance(node, exp.Not):
        return not _truth(_evaluate(node.this, param, value))
    if isinstance(node, exp.And | exp.Or):
        first = _truth(_evaluate(node.this, param, value))
        second = _truth(_evaluate(node.expression, param, value))
        return (first and second) if isinstance(node, exp.And) else (first or second)
    if type(node) in _COMPARE:
        left, right = _evaluate(node.this, param, value), _evaluate(node.expression, param, value)
        return _COMPARE[type(node)](left, right)
    if isinstance(node, exp.In):
        item = _evaluate(node.this, param, value)
        return item in [_evaluate(e, param, value) for e in node.expressions]
    if isinstance(node, exp.Like | exp.ILike):
        text, pattern = _evaluate(node.this, param, value), _evaluate(node.expression, param, value)
        found = _like(str(pattern), ignore_case=isinstance(node, exp.ILike)).fullmatch(str(text))
        return (found is None) if node.args.get("negate") else (found is not None)
    if isinstance(node, exp.Lower | exp.Upper):
        text = str(_evaluate(node.this, param, value))
        return text.lower() if isinstance(node, exp.Lower) else text.upper()
    if isinstance(node, exp.Length):
        return float(len(str(_evaluate(node.this, param, value))))
    return _string_function(node, param, value)


def _string_function(node: exp.Expr, param: str, value: str) -> bool:
    """`starts_with(c, 'x')`, `suffix(c, 'x')`, `contains(c, 'x')`, `regexp_matches(c, 'x')`."""
    if isinstance(node, exp.Anonymous):
        name, args = str(node.this).lower(), list(node.expressions)
    else:
        name = node.sql_name().lower() if isinstance(node, exp.Func) else ""
        args = [a for a in (node.args.get("this"), node.args.get("expression")) if a is not None]
    if name in _STRINGS and len(args) == 2:  # noqa: PLR2004 - (string, pattern)
        text, other = (str(_evaluate(a, param, value)) for a in args)
        return _STRINGS[name](text, other)
    raise OpaqueError(
        f"COLUMNS(lambda): {node.sql(dialect='duckdb')[:80]} is not evaluated on column names"
    )


def _truth(value: object) -> bool:
    return bool(value)


def _text(node: exp.Expr | None) -> str:
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Identifier | exp.Column):
        return node.name
    raise OpaqueError(f"{node.sql(dialect='duckdb') if node else 'nothing'}: not a name")


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise OpaqueError(f"regex {pattern!r} ({e})") from None


def _like(pattern: str, *, ignore_case: bool) -> re.Pattern[str]:
    parts = [".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern]
    return re.compile("".join(parts), (re.IGNORECASE | re.DOTALL) if ignore_case else re.DOTALL)
