"""The frozen views of dbt's artifacts: what dbt_oml reads from them, and nothing else.

Pure: dataclasses and small helpers over them; no I/O (the readers live beside this module).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Final

#: Where `dbt-oml build` keeps the build's artifacts while `dbt docs generate` runs (relative to
#: the target directory); they are put back afterwards, so target/ ends as the build left it.
KEPT_RUN_RESULTS = "dbt_oml/build/run_results.json"
KEPT_MANIFEST = "dbt_oml/build/manifest.json"
#: Where `dbt docs generate`'s own run_results.json and manifest.json are kept aside.
DOCS_GENERATE_DIR = "dbt_oml/docs_generate"


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """A column as dbt declares or the catalog reports it."""

    name: str
    type: str | None = None
    description: str | None = None
    index: int | None = None
    tags: tuple[str, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TestInfo:
    """What a data test checks (generic tests carry test_metadata; singular ones do not)."""

    assertion: str
    column: str | None
    severity: str
    kwargs: tuple[tuple[str, str], ...] = ()
    attached_node: str | None = None
    generic: bool = True
    """False for singular tests (a SQL file in tests/)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """A manifest node or source, reduced to what events need."""

    unique_id: str
    resource_type: str
    name: str
    package_name: str
    database: str | None
    schema: str | None
    identifier: str | None
    materialized: str | None = None
    compiled_code: str | None = None
    relation_name: str | None = None
    """What `ref()`/`source()` renders to; a file read for a dbt-duckdb `external_location`."""
    depends_on: tuple[str, ...] = ()
    description: str = ""
    columns: tuple[Column, ...] = ()
    tags: tuple[str, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()
    owners: tuple[str, ...] = ()
    original_file_path: str | None = None
    test: TestInfo | None = None
    config: tuple[tuple[str, str], ...] = ()
    raw_code: str | None = None
    group: str | None = None
    checksum: str | None = None
    """dbt's hash of the node's file (a seed's CSV: whether its rows changed)."""

    @property
    def is_relation(self) -> bool:
        """True for nodes that are (or will be) a table or view in a catalog."""
        return self.resource_type in {"model", "seed", "snapshot", "source"} and (
            self.materialized != "ephemeral"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    path: str
    dbt_version: str
    invocation_id: str | None
    adapter_type: str | None
    project_name: str | None
    nodes: Mapping[str, Node]
    groups: Mapping[str, str] = field(default_factory=dict)
    """dbt group name -> its owner (e-mail, else name)."""

    def get(self, unique_id: str) -> Node | None:
        return self.nodes.get(unique_id)

    def relations_read(self, node: Node) -> list[Node]:
        """The relations a node reads, in dependency order, looking through ephemeral models
        (inlined into their readers' SQL) to what they read."""
        found: dict[str, Node] = {}
        stack, seen = list(reversed(node.depends_on)), set()
        while stack:
            uid = stack.pop()
            if uid in seen:
                continue
            seen.add(uid)
            parent = self.nodes.get(uid)
            if parent is None:
                continue
            if parent.resource_type == "model" and parent.materialized == "ephemeral":
                stack.extend(reversed(parent.depends_on))
            elif parent.is_relation:
                found.setdefault(uid, parent)
        return list(found.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    name: str
    started_at: datetime | None
    completed_at: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeResult:
    unique_id: str
    status: str
    message: str | None
    timing: tuple[Timing, ...]
    rows_affected: int | None
    failures: int | None
    compiled_code: str | None = None

    @property
    def started_at(self) -> datetime | None:
        return next((t.started_at for t in self.timing if t.started_at), None)

    @property
    def completed_at(self) -> datetime | None:
        ends = [t.completed_at for t in self.timing if t.completed_at]
        return max(ends) if ends else None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResults:
    path: str
    dbt_version: str
    invocation_id: str | None
    invocation_started_at: datetime | None
    generated_at: datetime | None
    command: str | None
    args: Mapping[str, str] = field(default_factory=dict)
    selected: tuple[str, ...] = ()
    """The run's -s/--select values (`args.select`, a list)."""
    results: tuple[NodeResult, ...] = ()
    problems: tuple[str, ...] = ()
    """Results dbt-oml reads with a fallback (bad timing, unknown status): one line each."""


#: How many failed nodes the failure line names before `and N more`.
_FAILED_SHOWN: Final = 5


def failure_summary(results: Iterable[tuple[str, str]]) -> str:
    """One line naming the failed nodes of (unique_id, status) pairs.

    >>> failure_summary([("model.p.a", "success"), ("model.p.b", "error")])
    '1 node(s) failed: model.p.b (error)'
    """
    failed = [f"{uid} ({status})" for uid, status in results if status in {"error", "fail"}]
    if not failed:
        return "dbt reported failure"
    more = len(failed) - _FAILED_SHOWN
    shown = ", ".join(failed[:_FAILED_SHOWN]) + (f" and {more} more" if more > 0 else "")
    return f"{len(failed)} node(s) failed: {shown}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    path: str
    generated_at: datetime | None
    columns: Mapping[str, tuple[Column, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunArtifacts:
    """The artifacts of one dbt invocation; the catalog is optional."""

    manifest: Manifest
    run_results: RunResults | None
    catalog: Catalog | None = None
    problems: tuple[str, ...] = ()
    """What was read with a fallback (an unreadable catalog.json, odd results): warnings."""


def parse_time(value: object) -> datetime | None:
    """Parse dbt's timestamps (naive UTC, `Z` or offset) into aware UTC datetimes.

    >>> parse_time("2026-11-30T03:49:04.189079Z").isoformat()
    '2026-11-30T03:49:04.189079+00:00'
    >>> parse_time("2026-11-30T03:49:04") .tzinfo is not None
    True
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def relation_parts(node: Node) -> tuple[str, str, str]:
    """A relation's (database, schema, identifier); missing parts are "", the name stands in
    for a missing identifier.

    >>> relation_parts(Node(unique_id="seed.p.s", resource_type="seed", name="s",
    ...                     package_name="p", database="w", schema="m", identifier=None))
    ('w', 'm', 's')
    """
    return node.database or "", node.schema or "", node.identifier or node.name


RelationKey = tuple[str, str, str]
"""A relation's lower-cased (database, schema, identifier): how DuckDB matches names."""


def relation_key(database: str, schema: str, identifier: str) -> RelationKey:
    """The key of a relation as SQL names it (case-insensitive, as DuckDB matches)."""
    return database.lower(), schema.lower(), identifier.lower()


def relations_by_key(nodes: Iterable[Node]) -> dict[RelationKey, Node]:
    """The nodes that are relations, by `relation_key` of their (database, schema, identifier)."""
    return {relation_key(*relation_parts(n)): n for n in nodes if n.is_relation}
