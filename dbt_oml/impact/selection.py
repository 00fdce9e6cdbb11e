"""Column-aware slim CI: the models a change between two builds can affect, as a dbt selector.

Pure: works on a comparison and the current column graph; parses SQL with sqlglot, no I/O.

Conservative by construction (never fewer models than a change can affect):
- a changed model is affected whole (its rows and every column) unless its change is *column
  local* (`column_local`: the versions differ only in SELECT lists, in ways that keep the rows);
  then only its removed, renamed, changed and added columns are;
- a seed whose file changed, and an added model, are affected whole;
- a model whose rows an affected model's rows feed is affected whole (a filter, a join or a
  grouping of changed rows changes every column), and so is an opaque model reading one;
- otherwise a column is affected when one of its inputs is (its value or its CASE condition,
  window, ...), and a model's rows when a column shaping them (JOIN, WHERE, GROUP BY, DISTINCT,
  UNION: its rows edges) is. A `select *` reader of an added column reads it by the current
  lineage, which lists it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from dbt_oml.impact.findings import Build, Comparison
from dbt_oml.impact.sql import normalized_sql
from dbt_oml.lineage.graph import ColumnGraph, Key

_ROW_CLAUSES = ("where", "group", "having", "qualify")


@dataclass(frozen=True, slots=True)
class Change:
    """One changed model: both versions' relation-neutral SQL and the columns that differ."""

    uid: str
    before: str | None
    after: str | None
    columns: frozenset[str]
    """Lower-cased output names (either version's) whose definition, name or presence changed."""


def column_local(before: str, after: str, columns: Iterable[str], dialect: str = "duckdb") -> bool:
    """Whether the change from `before` to `after` can only change the values of columns
    (`columns`, the outputs compare found changed, and the SELECT-list items that differ in any
    scope), never which rows the model has.

    >>> column_local("select a, b + 1 as b from t where a > 0",
    ...              "select a, b + 2 as b from t where a > 0", {"b"})
    True
    >>> column_local("with r as (select a, b + 1 as b from t) select * from r",
    ...              "with r as (select a, b + 2 as b from t) select * from r", {"b"})
    True
    >>> column_local("select a, b from t", "select a, b from t where a > 0", {"b"})
    False
    >>> column_local("with r as (select a, b + 1 as b from t) select * from r where b > 0",
    ...              "with r as (select a, b + 2 as b from t) select * from r where b > 0", {"b"})
    False
    >>> column_local("select a from t", "select count(*) as a from t", {"a"})
    False
    >>> column_local("with r as (select a, b + 1 as b from t) select distinct a, b from r",
    ...              "with r as (select a, b + 2 as b from t) select distinct a, b from r", {"b"})
    False
    """
    try:
        old, new = (sqlglot.parse_one(s, read=dialect) for s in (before, after))
    except (SqlglotError, RecursionError, ValueError):
        return False
    if _blank(old) != _blank(new):
        return False  # something besides SELECT lists differs: FROM, JOIN, WHERE, ...
    changed = {c.lower() for c in columns}
    differs = False
    for mine, theirs in zip(old.find_all(exp.Select), new.find_all(exp.Select), strict=False):
        pairs = _items(mine, theirs)
        differ = [(a, b) for a, b in pairs if _sql(a) != _sql(b)]
        if not differ:
            continue
        if not _only_values(mine, theirs):
            return False
        differs = True
        changed |= {x.alias_or_name.lower() for pair in differ for x in pair if x is not None}
    if differs and any(_dedupes(q) for q in (old, new)):
        return False  # a DISTINCT over values that changed below it keeps other rows
    named = {c.name.lower() for q in (old, new) for c in _row_clause_columns(q)}
    return not (named & changed)


def _sql(item: exp.Expr | None) -> str | None:
    return None if item is None else item.sql(dialect="duckdb")


def _blank(tree: exp.Expr) -> str:
    """The SQL with every SELECT list replaced by `*`: what decides the rows."""
    bare = tree.copy()
    for select in bare.find_all(exp.Select):
        select.set("expressions", [exp.Star()])
    return bare.sql(dialect="duckdb")


def _items(a: exp.Select, b: exp.Select) -> list[tuple[exp.Expr | None, exp.Expr | None]]:
    left: list[exp.Expr | None] = list(a.expressions)
    right: list[exp.Expr | None] = list(b.expressions)
    size = max(len(left), len(right))
    left += [None] * (size - len(left))
    right += [None] * (size - len(right))
    return list(zip(left, right, strict=True))


def _only_values(a: exp.Select, b: exp.Select) -> bool:
    """Two SELECTs whose lists differ can still have the same rows: the same aggregation, no
    DISTINCT or GROUP BY ALL, no set-returning function or subquery in the lists (a DISTINCT
    or UNION above them: `_dedupes`)."""
    if _aggregated(a) != _aggregated(b) or _shapes_rows(a) or _shapes_rows(b):
        return False
    return not any(
        item.find(exp.Subquery, exp.Select) for select in (a, b) for item in select.expressions
    )


def _dedupes(tree: exp.Expr) -> bool:
    """A DISTINCT, or a UNION that removes duplicates, anywhere in the query."""
    if any(s.args.get("distinct") for s in tree.find_all(exp.Select)):
        return True
    return any(u.args.get("distinct") is not False for u in tree.find_all(exp.Union))


def _aggregated(select: exp.Select) -> bool:
    """An aggregate in the SELECT list outside a window: one row per group (or one row)."""
    return any(
        agg.find_ancestor(exp.Window) is None
        for item in select.expressions
        for agg in item.find_all(exp.AggFunc)
    )


def _shapes_rows(select: exp.Select) -> bool:
    """DISTINCT, GROUP BY ALL, or a set-returning function in the list (UNNEST, ...)."""
    group = select.args.get("group")
    if select.args.get("distinct") or (group is not None and group.args.get("all")):
        return True
    return any(item.find(exp.Unnest, exp.Explode) is not None for item in select.expressions)


def _row_clause_columns(tree: exp.Expr) -> Iterable[exp.Column]:
    """Columns named where rows are decided, in every scope: WHERE, GROUP BY, HAVING, QUALIFY,
    JOIN conditions (ON, USING), ORDER BY under a LIMIT."""
    for select in tree.find_all(exp.Select):
        for clause in _ROW_CLAUSES:
            node = select.args.get(clause)
            if node is not None:
                yield from node.find_all(exp.Column)
        order = select.args.get("order")
        if order is not None and (select.args.get("limit") or select.args.get("offset")):
            yield from order.find_all(exp.Column)  # which rows a LIMIT keeps
        for join in select.args.get("joins") or []:
            on = join.args.get("on")
            if on is not None:
                yield from on.find_all(exp.Column)
            for part in join.args.get("using") or []:
                yield exp.column(part.name)


def affected_models(
    graph: ColumnGraph,
    changes: Iterable[Change],
    *,
    whole: Iterable[str] = (),
    dialect: str = "duckdb",
) -> set[str]:
    """Every node of `graph` a change can affect: the changed ones and their affected readers."""
    readers: dict[str, list[str]] = {}
    for node in graph.nodes.values():
        for parent in node.depends_on:
            readers.setdefault(parent, []).append(node.id)
    spread = _Spread(graph, readers)
    for uid in whole:
        spread.whole(uid)
    for change in changes:
        local = (
            change.before is not None
            and change.after is not None
            and column_local(change.before, change.after, change.columns, dialect)
        )
        if not local:
            spread.whole(change.uid)
            continue
        spread.selected.add(change.uid)
        for column in change.columns:
            spread.column((change.uid, column))
    spread.run()
    return spread.selected


class _Spread:
    """The walk: affected (node, column)s and nodes affected whole, downstream."""

    def __init__(self, graph: ColumnGraph, readers: Mapping[str, list[str]]) -> None:
        self.graph, self.readers = graph, readers
        self.selected: set[str] = set()
        self.wholes: set[str] = set()
        self.columns: set[Key] = set()
        self.queue: deque[Key] = deque()

    def whole(self, uid: str) -> None:
        if uid in self.wholes:
            return
        self.wholes.add(uid)
        self.selected.add(uid)
        node = self.graph.nodes.get(uid)
        for name in node.columns if node else ():
            self.column((uid, name.lower()))
        for reader in self.readers.get(uid, ()):
            self.whole(reader)  # its rows come from changed rows

    def column(self, key: Key) -> None:
        if key in self.columns:
            return
        self.columns.add(key)
        self.selected.add(key[0])
        self.queue.append(key)

    def run(self) -> None:
        while self.queue:
            key = self.queue.popleft()
            for edge in self.graph.downstream.get(key, ()):
                self.column((edge.target, edge.target_column.lower()))
            for rows in self.graph.rows.get(key, ()):
                self.whole(rows.target)
            for reader in self.readers.get(key[0], ()):
                target = self.graph.nodes.get(reader)
                if target is not None and target.opaque:
                    self.whole(reader)


def changes_between(
    state: Build, current: Build, comparison: Comparison
) -> tuple[list[Change], set[str]]:
    """The changed models of two builds with their changed columns, and the nodes affected
    whole from the start: added models and snapshots, and seeds whose file changed."""
    changes = []
    for uid in comparison.modified:
        columns = {c.column.lower() for c in comparison.changes if c.node == uid}
        columns |= {c.new_name.lower() for c in comparison.changes if c.node == uid and c.new_name}
        columns |= _names(current, uid) ^ _names(state, uid)  # added (and removed) ones
        changes.append(
            Change(uid, _parseable(state, uid), _parseable(current, uid), frozenset(columns))
        )
    seeds = {
        uid
        for uid, node in current.manifest.nodes.items()
        if node.resource_type == "seed"
        and (
            (old := state.manifest.get(uid)) is None
            or old.checksum != node.checksum
            or node.checksum is None
        )
    }
    return changes, set(comparison.added) | seeds


def _names(build: Build, uid: str) -> set[str]:
    node = build.graph.nodes.get(uid)
    return {c.lower() for c in node.columns} if node else set()


def _parseable(build: Build, uid: str) -> str | None:
    """The node's compiled SQL with each relation named by its unique_id (as a quoted name, so
    two builds of other databases compare equal and it still parses); None without SQL."""
    node = build.manifest.get(uid)
    sql = build.sql.get(uid) or (node.compiled_code if node else None)
    if node is None or not sql:
        return None
    text = normalized_sql(node, build.manifest, sql)
    return text.replace("{{", '"').replace("}}", '"')
